"""tests/python/test_hooks.py (ctest python.hooks): SessionRunHooks in a
MonitoredTrainingSession of real processes on loopback (1 ps task and 1
or 2 workers running tests/python/hooks_job.py, a tiny softmax model),
against TensorFlow 1.x's monitored_session.py:

- the order of the calls: begin of every hook (in list order) before the
  session is created (before the worker connected to the ps task, by the
  ps task's log; a hook may still add an op to the graph there and fetch
  it), then after_create_session of every hook, then per run every
  hook's before_run in list order, the run, every after_run in list
  order, and end of every hook when the session closes; chief_only_hooks
  only on the chief, before MonitoredTrainingSession's
  CheckpointSaverHook, which comes before the caller's hooks (the
  chief-only hook's after_create_session and end see no checkpoint the
  saver writes then, the caller's hooks see it);
- SessionRunArgs fetch structures (a tensor; a dict holding a tuple and a
  list) come back in run_values.results with the same structure, dtypes
  and values as the caller's own fetches of the same run; global_step
  rises by exactly 1 per run on one worker;
- run_context.request_stop() in the third after_run: should_stop() after
  that run, three runs in all;
- an exception raised in a hook's after_run (and in a before_run) comes
  out of mon_sess.run as that same exception object (type and message),
  and the session trains on to its last step;
- StopAtStepHook(last_step=N) on one worker: N runs, the chief's last
  global_step is N, and the final checkpoint is model.ckpt-N;
- NanTensorHook on a NaN loss raises tf.train.NanLossDuringTrainingError
  from that run, and the session then closes normally.
Every task exits 0 (the ps task's join() returns when the chief closes)."""

# ctest-timeout: 120

import datetime
import json
import math
import re

HOOK_METHODS = ("begin", "after_create_session", "before_run",
                "after_run", "end")


def run_job(cluster, python, source_dir, free_ports, case, workers=1,
            args=()):
    """hooks_job.py --case=case with 1 ps task and `workers` workers: the
    workers' RESULT records, once every task exited 0."""
    ports = free_ports(1 + workers)
    flags = [f"--ps_hosts=127.0.0.1:{ports[0]}",
             "--worker_hosts=" + ",".join(f"127.0.0.1:{p}"
                                          for p in ports[1:]),
             f"--case={case}"] + list(args)
    job = [python, source_dir / "tests/python/hooks_job.py"] + flags
    tasks = {"ps0": job + ["--job_name=ps", "--task_index=0"]}
    for i in range(workers):
        tasks[f"worker{i}"] = job + ["--job_name=worker", f"--task_index={i}"]
    cluster.start(tasks, env={"RF_FABRIC": "sock", "RF_LOG_LEVEL": "info"})
    cluster.wait(90, check=True)
    assert "ps 0: joined" in cluster.output("ps0")
    results = []
    for i in range(workers):
        m = cluster.wait_for_output(f"worker{i}", r"^RESULT (.*)$", 0)
        results.append(json.loads(m.group(1)))
    return results


def calls(events, who=None):
    """The hook calls among events, as (hook, method) pairs."""
    return [(e[0], e[1]) for e in events
            if e[1] in HOOK_METHODS and (who is None or e[0] == who)]


def runs_of(events):
    """The events of each run: those between a run_call and its
    run_return (the loop's own), with the run_return last."""
    runs, current = [], None
    for e in events:
        if e[:2] == ["loop", "run_call"]:
            assert current is None, "run_call inside a run"
            current = []
        elif current is not None:
            current.append(e)
            if e[:2] == ["loop", "run_return"]:
                runs.append(current)
                current = None
    assert current is None, "a run without its return"
    return runs


def connect_time(ps_log, client, near):
    """When (time.time()) the ps task logged client's connection (its info
    line "HH:MM:SS.ffffff info ... client N connected", local time), on
    the day of the time `near`."""
    m = re.search(r"^(\d\d):(\d\d):(\d\d\.\d+) info .* client %d "
                  r"(?:\(chief\) )?connected from" % client, ps_log,
                  re.MULTILINE)
    assert m, f"the ps task logged no connection of client {client}"
    h, mi, s = int(m.group(1)), int(m.group(2)), float(m.group(3))
    midnight = datetime.datetime.fromtimestamp(near).replace(
        hour=0, minute=0, second=0, microsecond=0)
    return midnight.timestamp() + h * 3600 + mi * 60 + s


def scalar(d, dtype):
    assert d is not None and "scalar" in d and d["dtype"] == dtype, d
    return d["scalar"]


def check_order(result, hooks):
    """result's calls are TensorFlow's order for hooks (names, in the
    order MonitoredTrainingSession runs them)."""
    ev = result["events"]
    n = len(hooks)
    hook_calls = calls(ev)
    # creation: every begin, then every after_create_session
    assert hook_calls[:2 * n] == [(h, "begin") for h in hooks] + [
        (h, "after_create_session") for h in hooks]
    created = ev.index(["loop", "created"])
    assert calls(ev[:created]) == hook_calls[:2 * n]
    # the session: each hook's after_create_session got it
    for e in ev:
        if e[1] == "after_create_session":
            assert e[3] is True, e
    # the runs
    runs = runs_of(ev)
    assert len(runs) == result["runs"] and runs, result["runs"]
    want = ([(h, "before_run") for h in hooks]
            + [(h, "after_run") for h in hooks])
    for i, run in enumerate(runs):
        assert calls(run) == want, f"run {i + 1}: {calls(run)}"
    # the end: every hook's end once, after the last run, before close
    last_return = max(i for i, e in enumerate(ev)
                      if e[:2] == ["loop", "run_return"])
    assert ev[-1][:2] == ["loop", "closed"]
    assert calls(ev[last_return:]) == [(h, "end") for h in hooks]
    assert len(hook_calls) == 2 * n + 2 * n * len(runs) + n
    return runs


def test_call_order_and_fetches(cluster, python, source_dir, free_ports,
                                tmp_path):
    ckpt = tmp_path / "ckpt"
    chief, other = run_job(cluster, python, source_dir, free_ports, "order",
                           workers=2, args=[f"--checkpoint_dir={ckpt}",
                                            "--last_step=60"])
    # chief_only_hooks=[C] first, then hooks=[A, StopAtStepHook, B]
    chief_runs = check_order(chief, ["C", "A", "B"])
    other_runs = check_order(other, ["A", "B"])
    assert not [e for e in other["events"] if e[0] == "C"]
    # CheckpointSaverHook sits between C and the caller's hooks: it saves
    # model.ckpt-0 in its after_create_session and the last checkpoint in
    # its end
    acs = {e[0]: e[2] for e in chief["events"]
           if e[1] == "after_create_session"}
    assert acs == {"C": [], "A": ["model.ckpt-0.safetensors"],
                   "B": ["model.ckpt-0.safetensors"]}
    begins = [e[2] for e in chief["events"] if e[1] == "begin"]
    assert begins == [[], [], []]
    # each worker's session was created (it connected to the ps task)
    # after every begin and before every after_create_session
    # (the ps task logs a connection before it answers the client's first
    # request, which the session's creation waits for)
    for i, r in enumerate((chief, other)):
        times = {"begin": [], "after_create_session": []}
        for e in r["events"]:
            if e[1] in times:
                times[e[1]].append(e[-1])
        connected = connect_time(cluster.output("ps0"), i,
                                 times["begin"][0])
        assert max(times["begin"]) < connected, (times, connected)
        assert connected < min(times["after_create_session"]), (
            times, connected)
    ends = {e[0]: e[2] for e in chief["events"] if e[1] == "end"}
    assert ends["C"] == ["model.ckpt-0.safetensors"]
    assert ends["A"] == ends["B"]
    (final,) = set(ends["A"]) - set(ends["C"])
    # the job's last global_step (the other worker's last step may be
    # after the chief's)
    assert int(final[len("model.ckpt-"):-len(".safetensors")]) >= max(
        chief["global_step"], other["global_step"])
    # the fetches: A's global_step, B's {"gs", "pair": (copy, loss),
    # "list": [loss]} against the loop's [train_op, global_step, loss]
    for runs in (chief_runs, other_runs):
        steps = []
        for run in runs:
            after = {e[0]: e[2] for e in run if e[1] == "after_run"}
            loop = run[-1][2]["list"]
            assert loop[0] is None  # the train op's value
            gs = scalar(loop[1], "int64")
            loss = scalar(loop[2], "float32")
            assert scalar(after["A"], "int64") == gs
            b = after["B"]["dict"]
            assert sorted(b) == ["gs", "list", "pair"]
            assert scalar(b["gs"], "int64") == gs
            pair = b["pair"]["tuple"]
            assert len(pair) == 2
            # an op made in begin (an Identity of global_step) fetched;
            # its value is this worker's last global_step, which lags the
            # cluster's when another worker stepped meanwhile
            assert 0 <= scalar(pair[0], "int64") < gs
            assert scalar(pair[1], "float32") == loss
            assert [scalar(v, "float32") for v in b["list"]["list"]] == [
                loss]
            if "C" in after:
                assert after["C"] is None  # asked for nothing
            steps.append(gs)
        assert steps == sorted(set(steps)), steps  # rising
    # two workers shared the steps
    assert chief["runs"] + other["runs"] >= 60
    assert chief["global_step"] >= 60


def test_request_stop(cluster, python, source_dir, free_ports):
    (r,) = run_job(cluster, python, source_dir, free_ports, "request_stop")
    assert r["runs"] == 3 and r["global_step"] == 3
    ran = [e for e in r["events"] if e[:2] == ["loop", "ran"]]
    # should_stop() after each run: only after the third
    assert [e[2:] for e in ran] == [[1, False], [2, False], [3, True]]
    assert ["S", "requested_stop", True] in r["events"]
    assert calls(r["events"])[-1] == ("S", "end")
    assert calls(r["events"]).count(("S", "after_run")) == 3


def test_hook_exception_propagates(cluster, python, source_dir,
                                   free_ports):
    (r,) = run_job(cluster, python, source_dir, free_ports, "raise",
                   args=["--last_step=10"])
    raised = [e[2:] for e in r["events"] if e[:2] == ["loop", "raised"]]
    assert raised == [
        [2, "__main__.HookError", "boom from after_run at run 2", True],
        [4, "builtins.KeyError", "'boom from before_run at run 4'", True]]
    # the session trains on after each: global_step rises, to the end
    ran = [e[2:] for e in r["events"] if e[:2] == ["loop", "ran"]]
    assert [run for run, _ in ran] == [1, 3] + list(range(5, r["runs"] + 1))
    steps = [gs for _, gs in ran]
    assert steps == sorted(set(steps))
    assert steps[-1] == r["global_step"] == 10
    # before_run's exception came before run 4's step (TensorFlow's order):
    # no step, so run 5 makes global_step 4, not 5
    assert dict(ran)[5] == 4
    # the raising hook's after_run: no call after its exception in that
    # run's remaining hooks (K comes after R)
    ev = r["events"]
    i = ev.index(["R", "raising", "after_run"])
    assert ev[i + 1][:2] == ["loop", "raised"]


def test_stop_at_step(cluster, python, source_dir, free_ports, tmp_path):
    ckpt = tmp_path / "ckpt"
    (r,) = run_job(cluster, python, source_dir, free_ports, "stop_at_step",
                   args=["--last_step=25", f"--checkpoint_dir={ckpt}"])
    assert r["runs"] == 25
    assert r["global_step"] == 25 and r["last_fetched"] == 25
    # one worker: global_step rises by exactly 1 per run
    steps = [scalar(e[2], "int64") for e in r["events"]
             if e[:2] == ["A", "after_run"]]
    assert steps == list(range(1, 26))
    assert "model.ckpt-25.safetensors" in [p.name for p in ckpt.iterdir()]
    assert not list(ckpt.glob("model.ckpt-2[6-9]*"))


def test_nan_tensor_hook(cluster, python, source_dir, free_ports):
    (r,) = run_job(cluster, python, source_dir, free_ports, "nan")
    ev = [e[2:] for e in r["events"] if e[0] == "loop"]
    assert [e[0] for e in ev] == [1, 2, 3]
    assert all(math.isfinite(loss) for _, loss in ev[:2])
    run, name, message = ev[2]
    assert name == "NanLossDuringTrainingError"
    assert "NaN loss" in message
    assert r["runs"] == 3

"""tests/python/test_global_step.py: a run that reads global_step sees the
cluster's value (ps task 0's word), as a TensorFlow run reads the
variable, not the value this worker last saw: 1 ps + 2 workers, worker 1
trains 50 steps after the chief's first, then the chief reads."""

import json
import re

HERE = __file__.rsplit("/", 1)[0]


def test_reads_see_the_cluster_global_step(cluster, free_ports, python,
                                           tmp_path):
    ps, w0, w1 = free_ports(3)
    hosts = ["--ps_hosts=127.0.0.1:%d" % ps,
             "--worker_hosts=127.0.0.1:%d,127.0.0.1:%d" % (w0, w1),
             "--dir=%s" % tmp_path]
    job = [python, HERE + "/global_step_job.py"] + hosts
    cluster.start({
        "ps0": job + ["--job_name=ps", "--task_index=0"],
        "worker0": job + ["--job_name=worker", "--task_index=0"],
        "worker1": job + ["--job_name=worker", "--task_index=1"],
    })
    codes = cluster.wait(120, check=True)
    assert codes == {"ps0": 0, "worker0": 0, "worker1": 0}
    m = re.search(r"^RESULT (.*)$", cluster.output("worker0"), re.M)
    assert m, cluster.tail("worker0")
    result = json.loads(m.group(1))
    # 1 chief step + 50 of worker 1; the read and the op computed from it
    # both see 51 (before the fix: this worker's own last value, 1)
    assert result["read"] == [51, 51]
    assert result["train"] == 52

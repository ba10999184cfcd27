"""tf.train.ClusterSpec and tf.train.Server. A ClusterSpec is handed to
the C library as the TF_CONFIG it would read (cluster and task), so a
Python task resolves its cluster exactly as rf-trainer does; a Server is
rdmaflow's server of that task (a ps task serves its arena and waits in
join() until the chief ends the job)."""

import json
import os

from rdmaflow import _rdmaflow as _rf

# The fabric a Server opens, by TensorFlow's protocol names too: "grpc"
# (TensorFlow's default) is rdmaflow's automatic choice, "grpc+verbs"
# (TensorFlow's contrib verbs transport) its verbs provider.
_PROTOCOLS = {None: None, "grpc": "auto", "auto": "auto", "sock": "sock",
              "shm": "shm", "verbs": "verbs", "grpc+verbs": "verbs"}

_servers = {}  # target -> Server (MonitoredTrainingSession's master)


class ClusterSpec:
    """tf.train.ClusterSpec: job name -> task addresses, from a dict of
    lists, a dict of dicts (task index -> address), a ClusterSpec or a
    cluster resolver."""

    def __init__(self, cluster):
        if isinstance(cluster, ClusterSpec):
            self._jobs = {j: dict(t) for j, t in cluster._jobs.items()}
            return
        if hasattr(cluster, "cluster_spec") and not isinstance(cluster,
                                                               dict):
            cluster = cluster.cluster_spec().as_dict()
        if not isinstance(cluster, dict):
            raise TypeError("`cluster` must be a dictionary mapping one or "
                            "more job names to lists of network addresses, "
                            "or a `ClusterSpec`.")
        self._jobs = {}
        for job, tasks in cluster.items():
            if not isinstance(job, str):
                raise TypeError("Job name %r must be a string" % (job,))
            if isinstance(tasks, (list, tuple)):
                addresses = dict(enumerate(tasks))
            elif isinstance(tasks, dict):
                addresses = {}
                for index, address in tasks.items():
                    if not isinstance(index, int):
                        raise TypeError("Task index %r of job %s must be an "
                                        "integer" % (index, job))
                    addresses[index] = address
            else:
                raise TypeError("The tasks for job %r must be a list or a "
                                "dictionary from integers to strings." % job)
            for index, address in addresses.items():
                if not isinstance(address, str):
                    raise TypeError("Task %d of job %s: address %r is not a "
                                    "string" % (index, job, address))
            self._jobs[job] = addresses

    def __bool__(self):
        return bool(self._jobs)

    def __eq__(self, other):
        return isinstance(other, ClusterSpec) and self._jobs == other._jobs

    def __ne__(self, other):
        return not self == other

    def __repr__(self):
        return "ClusterSpec(%r)" % (self.as_dict(),)

    @property
    def jobs(self):
        return sorted(self._jobs)

    def as_dict(self):
        out = {}
        for job, tasks in self._jobs.items():
            indices = sorted(tasks)
            if indices == list(range(len(indices))):
                out[job] = [tasks[i] for i in indices]
            else:
                out[job] = dict(tasks)
        return out

    def num_tasks(self, job_name):
        return len(self._tasks(job_name))

    def task_indices(self, job_name):
        return sorted(self._tasks(job_name))

    def task_address(self, job_name, task_index):
        tasks = self._tasks(job_name)
        if task_index not in tasks:
            raise ValueError("No task with index %r in job %r"
                             % (task_index, job_name))
        return tasks[task_index]

    def job_tasks(self, job_name):
        tasks = self._tasks(job_name)
        if not tasks:
            return []
        return [tasks.get(i) for i in range(max(tasks) + 1)]

    def _tasks(self, job_name):
        if job_name not in self._jobs:
            raise ValueError("No such job in cluster: %r" % (job_name,))
        return self._jobs[job_name]

    def to_tf_config(self, job_name, task_index):
        """The TF_CONFIG text of task (job_name, task_index) of this
        cluster."""
        cluster = {}
        for job, tasks in self._jobs.items():
            indices = sorted(tasks)
            if indices != list(range(len(indices))):
                raise ValueError(
                    "job %r has tasks %s: rdmaflow needs every task of a "
                    "job, 0..N-1" % (job, indices))
            cluster[job] = [tasks[i] for i in indices]
        return json.dumps({"cluster": cluster,
                           "task": {"type": job_name,
                                    "index": int(task_index)}})


# The most seconds a Server argument takes (rf-trainer's bound for a ps's
# --ps_idle_exit_secs: 23 days).
_MAX_SECS = 2000000


def _seconds(name, value):
    """value as a whole number of seconds from 0 to _MAX_SECS: an int, or
    a float that is one; else TypeError or ValueError naming the
    argument."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError("Server: %s must be a number of seconds, got %r"
                        % (name, value))
    if value != value or not 0 <= value <= _MAX_SECS or value != int(value):
        raise ValueError("Server: %s=%r is not a whole number of seconds "
                         "from 0 to %d" % (name, value, _MAX_SECS))
    return int(value)


def _set_fabric(protocol):
    if protocol not in _PROTOCOLS:
        raise ValueError("protocol %r: rdmaflow has 'grpc' (its automatic "
                         "choice), 'auto', 'sock', 'shm', 'verbs' and "
                         "'grpc+verbs'" % (protocol,))
    fabric = _PROTOCOLS[protocol]
    if fabric is not None:
        os.environ["RF_FABRIC"] = fabric


class Server:
    """tf.train.Server(cluster, job_name, task_index, protocol): this
    task's rdmaflow server. A ps task's join() returns when the chief
    shuts the cluster down at the end of the job (TensorFlow's never
    returns). rdmaflow's own arguments: cluster_secret_file (else
    RF_CLUSTER_SECRET_FILE), bind_addr (else RF_BIND_ADDR),
    resolve_wait_secs (how long host names that do not resolve yet are
    retried), and a ps task's life without its chief, as rf-trainer's
    flags of the same names: once a chief has connected, join() raises
    DeadlineExceededError (tf.app.run exits 138) when no chief connection
    has been open for max_wait_secs (default 7200, MonitoredTrainingSession's;
    0: never); ps_idle_exit_secs > 0 does the same that long after the
    start if no chief ever came (default 0: a hand-started ps waits for
    its chief however late it starts)."""

    def __init__(self, server_or_cluster_def, job_name=None, task_index=None,
                 protocol=None, config=None, start=True,
                 cluster_secret_file=None, bind_addr=None,
                 resolve_wait_secs=0, max_wait_secs=7200,
                 ps_idle_exit_secs=0):
        secs = [_seconds(n, v) for n, v in (
            ("resolve_wait_secs", resolve_wait_secs),
            ("max_wait_secs", max_wait_secs),
            ("ps_idle_exit_secs", ps_idle_exit_secs))]
        if not start:
            raise ValueError("tf.train.Server(start=False): an rdmaflow "
                             "server starts when it is made")
        spec = ClusterSpec(server_or_cluster_def)
        if job_name is None:
            if len(spec.jobs) != 1:
                raise ValueError("Must specify an explicit `job_name`.")
            job_name = spec.jobs[0]
        if task_index is None:
            if spec.num_tasks(job_name) != 1:
                raise ValueError("Must specify an explicit `task_index`.")
            task_index = spec.task_indices(job_name)[0]
        if job_name not in spec.jobs:
            raise ValueError("job_name %r is not a job of the cluster (%s)"
                             % (job_name, ", ".join(spec.jobs)))
        if task_index not in spec.task_indices(job_name):
            raise ValueError("task_index %r is not a task of job %r (it has "
                             "%d)" % (task_index, job_name,
                                      spec.num_tasks(job_name)))
        _set_fabric(protocol)
        self._spec = spec
        self._job = job_name
        self._index = int(task_index)
        self._cluster = _rf.cluster_resolve(
            tf_config=spec.to_tf_config(job_name, task_index))
        self._server = _rf.Server(self._cluster, cluster_secret_file,
                                  bind_addr, *secs)
        self._target = "rdmaflow://%s/job:%s/task:%d" % (
            spec.task_address(job_name, task_index), job_name,
            self._index)
        _servers[self._target] = self

    @property
    def target(self):
        """What MonitoredTrainingSession(master=...) takes."""
        return self._target

    @property
    def server_def(self):
        return {"cluster": self._spec.as_dict(), "job_name": self._job,
                "task_index": self._index}

    @property
    def cluster_spec(self):
        return self._spec

    @property
    def job_name(self):
        return self._job

    @property
    def task_index(self):
        return self._index

    @property
    def is_chief(self):
        return bool(self._cluster.task["is_chief"])

    def start(self):
        """Nothing to do: the server started when it was made."""

    def join(self):
        """A ps task: serves until the chief ends the job (Ctrl-C raises
        KeyboardInterrupt within a second)."""
        self._server.join()

    def stop(self):
        _servers.pop(self._target, None)
        self._server.stop()

    @staticmethod
    def create_local_server(config=None, start=True):
        raise NotImplementedError(
            "tf.train.Server.create_local_server: rdmaflow has no in-process "
            "master; use tf.Session() for local runs")


def server_for(master):
    """The Server a MonitoredTrainingSession's master names."""
    if isinstance(master, Server):
        return master
    server = _servers.get(master)
    if server is None:
        raise ValueError(
            "master %r is not the target of a tf.train.Server of this "
            "process (pass master=server.target)" % (master,))
    return server

/* tools/launch/launch.h: types shared by rf-launch's parts. rf-launch runs a
 * whole ps/worker cluster on this machine, or over ssh on the hosts of a
 * hostfile (hostfile.c, remote.c) (see main.c for the behaviour);
 * opts.c parses its command line, ports.c reserves loopback ports,
 * cluster.c builds each task's argv and environment, task.c starts a task
 * (rdmaflow/spawn.h), output.c prefixes their output lines, supervise.c
 * watches the tasks, restarts them (--restart_on_failure) and stops them,
 * trace_merge.c merges their Chrome traces, secret.c makes the job's
 * cluster secret, control.c serves (and sends) the control socket's
 * requests and elastic.c adds and removes an elastic job's workers. */
#ifndef RF_LAUNCH_H
#define RF_LAUNCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Exit statuses of rf-launch: success; a task failed (or rf-launch itself
 * could not work); malformed command line; --timeout expired (as with
 * timeout(1)). A signal S that stopped the launch gives 128 + S, as a shell
 * reports it. */
#define LT_EXIT_OK      0
#define LT_EXIT_FAILED  1
#define LT_EXIT_USAGE   2
#define LT_EXIT_TIMEOUT 124

#define LT_MAX_TASKS_PER_JOB 64
/* An elastic job (the program's arguments have --elastic): workers added
 * by rf-launch --add_worker over the job's life, at most this many. */
#define LT_MAX_ADDED_WORKERS 64

/* --restart_on_failure: restarts per task without --max_restarts, and the
 * largest --max_restarts. */
#define LT_DEFAULT_MAX_RESTARTS 3
#define LT_MAX_RESTARTS_LIMIT   1000
/* Backoff before a task's k-th restart: LT_RESTART_BACKOFF_MS * 2^(k-1),
 * at most LT_RESTART_BACKOFF_MAX_MS. */
#define LT_RESTART_BACKOFF_MS     1000
#define LT_RESTART_BACKOFF_MAX_MS 30000

typedef struct lt_opts {
    int ps, workers;   /* --ps, --workers */
    bool chief;        /* --chief: a separate "chief" task (TF_CONFIG only) */
    bool tf_config;    /* --tf_config, or implied by --chief */
    const char *host;  /* --host (default 127.0.0.1) */
    const char *trace; /* --trace FILE, or NULL */
    /* --metrics_dir DIR: each task gets --metrics_out=DIR/<task>.jsonl;
     * --plot DIR: rf-plot draws them into DIR at the end (the metrics go
     * to DIR too unless --metrics_dir says where) */
    const char *metrics_dir, *plot_dir;
    double timeout_s;  /* --timeout, 0 = none */
    double grace_s;    /* --grace: SIGTERM to SIGKILL */
    double ps_grace_s; /* --ps_grace: ps wait after every worker succeeded */
    bool restart_on_failure; /* --restart_on_failure */
    int max_restarts;        /* --max_restarts: per task */
    /* --hostfile FILE: the tasks run over ssh on its hosts (--ssh CMD,
     * default "ssh -o BatchMode=yes"); --port_base P: task k (in start
     * order) listens on P + k, else on a port free on this machine */
    const char *hostfile;
    const char *ssh;
    int port_base;
    bool keep_secret; /* --keep_secret: leave the job's own secret */
    bool elastic;     /* the program's arguments have --elastic */
    char **prog;      /* PROGRAM ARGS... (NULL-terminated, in argv) */
    int prog_argc;
    bool help;
    bool version;
} lt_opts;

typedef enum lt_job { LT_JOB_PS, LT_JOB_CHIEF, LT_JOB_WORKER } lt_job;

/* Accumulates one output stream of a task and writes it out line by line,
 * each line prefixed with the task name, in one write per line. */
typedef struct lt_lines {
    int in_fd;          /* read end of the task's pipe, -1 once closed */
    int out_fd;         /* rf-launch's stdout or stderr */
    const char *prefix; /* "[worker1] " */
    char *buf;
    size_t len, cap;
} lt_lines;

typedef struct lt_task {
    char name[32];   /* "ps0", "chief", "worker1" */
    char prefix[40]; /* "[ps0] " */
    lt_job job;
    int index;
    int port;
    int port_fd;               /* reservation socket, -1 once released */
    const char *host;          /* where it runs and listens (o->host or a
                                  --hostfile host, owned by the table) */
    bool remote;               /* started over ssh (--hostfile) */
    int stdin_fd;              /* remote: ssh's stdin, held open; else -1 */
    struct lt_hostfile *hosts; /* the hostfile (task 0 owns it) or NULL */
    /* the job's own cluster secret (secret.h; owned by main), or NULL
     * when the user gave one */
    const struct lt_secret *secret;
    char **argv;        /* owned, NULL-terminated */
    char *tf_config;    /* owned TF_CONFIG JSON, or NULL (flags mode) */
    char *trace_path;   /* owned, or NULL */
    char *metrics_path; /* owned, or NULL */
    pid_t pid;          /* also the task's process group; 0: not started */
    bool running;       /* started and not yet reaped */
    int wstatus;        /* waitpid status once reaped */
    int restarts;       /* times restarted so far (--restart_on_failure) */
    int64_t restart_at; /* rf_now_ms when a pending restart is due; 0: none */
    bool removed;       /* --remove_worker: SIGTERM sent; its end is the
                           worker leaving the job, never a failure */
    lt_lines out, err;
} lt_task;

/* Writes "rf-launch: <message>\n" to stderr in one write. */
void lt_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Describes a waitpid status: "exited with status 3", "was killed by signal
 * 9 (SIGKILL)". */
void lt_describe_status(int wstatus, char *buf, size_t len);

#endif

/* tools/launch/secret.h: the job's cluster secret. Unless the user gives
 * one (RF_CLUSTER_SECRET_FILE in rf-launch's environment, or
 * --cluster_secret_file among the program's arguments), rf-launch makes a
 * fresh one per launch, in a run folder of its own ($TMPDIR or /tmp,
 * rf-launch.XXXXXX, mode 0700; the file "secret", mode 0600), gives it to
 * every task (a local task: RF_CLUSTER_SECRET_FILE in its environment; a
 * --hostfile task: the secret's text on ssh's standard input, which the
 * remote watcher writes to a private file of that host, remote.c), and
 * removes the folder at the end unless --keep_secret. */
#ifndef RF_LAUNCH_SECRET_H
#define RF_LAUNCH_SECRET_H

#include <stdbool.h>
#include <stddef.h>

#include "launch.h"

/* The run folder is made too (without a secret in it) when the user gave
 * the secret but the job is elastic: it holds the control socket. */
typedef struct lt_secret {
    char *dir;  /* the run folder (malloc'd), NULL if none made */
    char *path; /* dir/secret */
    char *text; /* the file's bytes, for --hostfile tasks */
    size_t len; /* of text (a newline-terminated line) */
} lt_secret;

/* Makes the job's secret into *s unless the user gave one (then *s stays
 * empty: s->path NULL). Returns 0, or -1 with err saying what failed. */
int lt_secret_prepare(const lt_opts *o, lt_secret *s, char *err, size_t errlen);

/* The job's task-token seed (ps/ps_token.c): unless rf-launch's own
 * environment has RF_JOB_TOKEN, sets RF_JOB_TOKEN to 32 random hex
 * characters in rf-launch's environment, which every task it starts or
 * restarts inherits (a --hostfile task on ssh's standard input after the
 * secret s, remote.c; so a --hostfile job whose secret the user gave, s
 * empty, gets none: it would travel on a command line): each task
 * presents the same token on every restart, the ps tasks check every id
 * against it, and no task keeps a token file in RF_TOKEN_DIR (a launch on
 * free ports would leave new ones each time). Returns 0, -2 when a given
 * RF_JOB_TOKEN that must travel as a line holds a newline or is longer
 * than LT_JOB_TOKEN_MAX (a usage error), or -1; err says what failed. */
#define LT_JOB_TOKEN_MAX 1024
int lt_job_token_prepare(const lt_opts *o, const lt_secret *s, char *err,
                         size_t errlen);

/* At the end of the launch: removes the run folder, or with keep says
 * where the secret is kept; wipes and frees *s. Nothing for an empty s. */
void lt_secret_finish(lt_secret *s, bool keep);

#endif

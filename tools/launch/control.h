/* tools/launch/control.h: the control socket of a running launch, through
 * which a second rf-launch (--add_worker, --remove_worker) changes an
 * elastic job's workers. An AF_UNIX stream socket "control" in the job's
 * run folder (mode 0700, secret.h), itself mode 0600; each connection
 * carries one request line and one reply line, and is accepted only from
 * a process of the launcher's own user (SO_PEERCRED). Requests (at most
 * LT_CONTROL_REQ_MAX bytes with the newline):
 *   "add N"            start N new workers
 *   "remove N"         stop the N highest-numbered workers (not the chief)
 *   "remove JOB:K"     stop that task
 * replies "ok TEXT" or "error TEXT" (at most LT_CONTROL_REPLY_MAX bytes).
 * The run folder also holds "pid", the launcher's pid, so that the job can
 * be named by its id (that pid) as well as by the folder. */
#ifndef RF_LAUNCH_CONTROL_H
#define RF_LAUNCH_CONTROL_H

#include <stddef.h>

#define LT_CONTROL_REQ_MAX   128
#define LT_CONTROL_REPLY_MAX 1024

/* Answers one request (a NUL-terminated line without its newline) into
 * reply: "ok ..." or "error ...". */
typedef void (*lt_control_fn)(void *ctx, const char *req, char *reply,
                              size_t len);

/* Listens on DIR/control (non-blocking, mode 0600) and writes DIR/pid.
 * Returns the listening fd, or -1 with err set. */
int lt_control_open(const char *dir, char *err, size_t errlen);

/* Accepts the pending connections of lfd and answers each through fn. A
 * connection from another user is closed unanswered (and said); a request
 * that does not arrive within a second, or is longer than
 * LT_CONTROL_REQ_MAX, gets an error. */
void lt_control_serve(int lfd, lt_control_fn fn, void *ctx);

/* Closes lfd and removes DIR/control and DIR/pid (before the folder). */
void lt_control_close(int lfd, const char *dir);

/* rf-launch --add_worker [N] JOB | --remove_worker [N | --task JOB:K] JOB
 * (JOB: the run folder or the job id rf-launch printed): sends the request
 * and prints the reply. Returns the exit status: 0 done, 1 refused or no
 * job there, 2 a malformed command line. */
int lt_control_client(int argc, char **argv);

#endif

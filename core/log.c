/* core/log.c: the logger behind core/log.h. One line per message:
 * "<time> <level> <pid>:<tid> <file>:<line> <message>". */
#include "core/log.h"

#include <errno.h>

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "rdmaflow/clock.h"
#include "rdmaflow/env.h"
#include "rdmaflow/escape.h"
#include "rdmaflow/status.h"

static const char *const level_names[] = {"error", "warn", "info", "debug",
                                          "trace"};

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static _Atomic int threshold = RF_LOG_WARN;
/* RF_LOG_FILE's stream; NULL: stderr, read at each write, so a program
 * that replaces stderr (rf-trainer's task prefix) has the log follow it */
static FILE *log_stream;
static pthread_mutex_t log_mutex = PTHREAD_MUTEX_INITIALIZER;

int rf_log_parse_level(const char *name, rf_log_level *out)
{
    for (int i = 0; i <= RF_LOG_TRACE; i++) {
        if (strcmp(name, level_names[i]) == 0) {
            *out = (rf_log_level)i;
            return 0;
        }
    }
    return -1;
}

/* What was wrong with RF_LOG_LEVEL / RF_LOG_FILE at first use, for
 * rf_log_env_check ("" when nothing). */
static rf_status env_status = RF_OK;
static char env_error[400];

static void log_init(void)
{
    const char *level = getenv("RF_LOG_LEVEL");
    rf_log_level parsed;
    if (level && *level) {
        if (rf_log_parse_level(level, &parsed) == 0) {
            atomic_store(&threshold, (int)parsed);
        } else {
            env_status = RF_ERR_INVALID_ARG;
            snprintf(env_error, sizeof env_error,
                     "RF_LOG_LEVEL=%s is not one of "
                     "error|warn|info|debug|trace",
                     RF_ECHO(level));
        }
    }
    const char *path = getenv("RF_LOG_FILE");
    if (path && *path) {
        FILE *f = fopen(path, "a");
        if (f) {
            setvbuf(f, NULL, _IOLBF, 0);
            log_stream = f;
        } else if (env_status == RF_OK) {
            env_status = RF_ERR_IO;
            snprintf(env_error, sizeof env_error,
                     "RF_LOG_FILE=%s: cannot open it for appending: %s",
                     RF_ECHO(path), strerror(errno));
        }
    }
}

rf_status rf_log_env_check(void)
{
    pthread_once(&log_once, log_init);
    if (env_status != RF_OK)
        return rf_error_set(env_status, "%s", env_error);
    return RF_OK;
}

rf_log_level rf_log_threshold(void)
{
    pthread_once(&log_once, log_init);
    return (rf_log_level)atomic_load_explicit(&threshold, memory_order_relaxed);
}

void rf_log_set_threshold(rf_log_level level)
{
    pthread_once(&log_once, log_init);
    atomic_store(&threshold, (int)level);
}

__attribute__((format(printf, 5, 0))) static void
log_vwrite(rf_log_level level, const char *file, int line, unsigned suppressed,
           const char *fmt, va_list ap)
{
    pthread_once(&log_once, log_init);
    char raw[1024], msg[1024];
    vsnprintf(raw, sizeof raw, fmt, ap);
    /* one line, whatever a name from a file or a peer in it holds */
    rf_escape(msg, sizeof msg, raw, strlen(raw), RF_ESCAPE_CONTROLS);
    char tail[64] = "";
    if (suppressed)
        snprintf(tail, sizeof tail, " [%u similar lines suppressed]",
                 suppressed);

    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;

    FILE *out = log_stream ? log_stream : stderr;
    pthread_mutex_lock(&log_mutex);
    fprintf(out, "%02d:%02d:%02d.%06ld %-5s %d:%ld %s:%d %s%s\n", tm.tm_hour,
            tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000, level_names[level],
            (int)getpid(), (long)syscall(SYS_gettid), base, line, msg, tail);
    pthread_mutex_unlock(&log_mutex);
}

void rf_log_write(rf_log_level level, const char *file, int line,
                  const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vwrite(level, file, line, 0, fmt, ap);
    va_end(ap);
}

void rf_log_write_suppressed(rf_log_level level, const char *file, int line,
                             unsigned suppressed, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vwrite(level, file, line, suppressed, fmt, ap);
    va_end(ap);
}

int rf_log_limit_pass(rf_log_limit *limit, unsigned *suppressed)
{
    unsigned long long now = rf_now_ns();
    unsigned long long next =
        atomic_load_explicit(&limit->next_ns, memory_order_relaxed);
    if (now >= next &&
        atomic_compare_exchange_strong(&limit->next_ns, &next,
                                       now + RF_LOG_LIMIT_INTERVAL_NS)) {
        *suppressed = atomic_exchange(&limit->suppressed, 0);
        return 1;
    }
    atomic_fetch_add_explicit(&limit->suppressed, 1, memory_order_relaxed);
    return 0;
}

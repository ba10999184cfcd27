/* core/log.c: the logger behind core/log.h. One line per message:
 * "<time> <level> <pid>:<tid> <file>:<line> <message>". */
#include "core/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static const char *const level_names[] = {"error", "warn", "info", "debug",
                                          "trace"};

static pthread_once_t log_once = PTHREAD_ONCE_INIT;
static _Atomic int threshold = RF_LOG_WARN;
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

static void log_init(void)
{
    const char *level = getenv("RF_LOG_LEVEL");
    rf_log_level parsed;
    log_stream = stderr;
    if (level && *level) {
        if (rf_log_parse_level(level, &parsed) == 0)
            atomic_store(&threshold, (int)parsed);
        else
            fprintf(stderr,
                    "rdmaflow: RF_LOG_LEVEL=%s is not one of "
                    "error|warn|info|debug|trace; using warn\n",
                    level);
    }
    const char *path = getenv("RF_LOG_FILE");
    if (path && *path) {
        FILE *f = fopen(path, "a");
        if (f) {
            setvbuf(f, NULL, _IOLBF, 0);
            log_stream = f;
        } else {
            fprintf(stderr,
                    "rdmaflow: cannot open RF_LOG_FILE=%s; using stderr\n",
                    path);
        }
    }
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

void rf_log_write(rf_log_level level, const char *file, int line,
                  const char *fmt, ...)
{
    pthread_once(&log_once, log_init);
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);

    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;

    pthread_mutex_lock(&log_mutex);
    fprintf(log_stream, "%02d:%02d:%02d.%06ld %-5s %d:%ld %s:%d %s\n",
            tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000,
            level_names[level], (int)getpid(), (long)syscall(SYS_gettid), base,
            line, msg);
    pthread_mutex_unlock(&log_mutex);
}

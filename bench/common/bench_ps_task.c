/* bench/common/bench_ps_task.c: a benchmark's ps task body, its reaping and
 * its /proc figures (bench_ps_task.h). */
#include "bench_ps_task.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rdmaflow/fabric.h"

int bench_ps_task_serve(const char *prog, const char *provider,
                        const char *host, int ps_index, int ready_fd,
                        bench_ps_started_fn started, void *arg)
{
    rf_fabric_attr attr = {.bind_addr = host};
    rf_fabric *f = NULL;
    rf_ps_server *s = NULL;
    rf_status st = rf_fabric_open(provider, &attr, &f);
    if (st == RF_OK) {
        rf_ps_server_options so = {.task_index = ps_index};
        st = rf_ps_server_start(f, host, 0, &so, &s);
    }
    if (st != RF_OK) {
        fprintf(stderr, "%s: ps task %d: %s\n", prog, ps_index,
                rf_error_message());
        if (f)
            rf_fabric_close(f);
        return 1;
    }
    char line[32];
    int len = snprintf(line, sizeof line, "port %u\n", rf_ps_server_port(s));
    int rc = 0;
    if (write(ready_fd, line, (size_t)len) != len) {
        fprintf(stderr, "%s: ps task %d: telling the port: %s\n", prog,
                ps_index, strerror(errno));
        rc = 1;
    }
    if (rc == 0 && started)
        rc = started(s, arg);
    if (rc == 0) {
        st = rf_ps_server_join(s);
        if (st != RF_OK) {
            fprintf(stderr, "%s: ps task %d: %s\n", prog, ps_index,
                    rf_error_message());
            rc = 1;
        }
    }
    rf_ps_server_stop(s);
    rf_fabric_close(f);
    return rc;
}

int bench_ps_task_reap(const char *prog, rf_child *child, bool terminate,
                       int timeout_s)
{
    int status = 0;
    bool killed = false;
    rf_child_close(child);
    rf_status st = rf_child_stop(child, terminate ? SIGTERM : 0,
                                 (int64_t)timeout_s * 1000, &status, &killed);
    if (st != RF_OK) {
        fprintf(stderr, "%s: %s\n", prog, rf_error_message());
        return -1;
    }
    if (killed)
        fprintf(stderr, "%s: a ps task did not exit; killed it\n", prog);
    return !killed && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The sum of the first field of /proc/PID/task/<tid>/schedstat (ns on a
 * CPU, every thread alive now; a thread that exited is not counted, and a
 * ps's threads live as long as it): 0 when there is none. */
static uint64_t schedstat_ns(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d)
        return 0;
    uint64_t sum = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char p[320];
        snprintf(p, sizeof p, "/proc/%d/task/%s/schedstat", (int)pid,
                 e->d_name);
        FILE *f = fopen(p, "r");
        unsigned long long ns = 0;
        if (f && fscanf(f, "%llu", &ns) == 1)
            sum += ns;
        if (f)
            fclose(f);
    }
    closedir(d);
    return sum;
}

/* /proc/PID/stat into buf; returns the fields after the command's closing
 * parenthesis (field 3, the state, first), or NULL. */
static const char *proc_stat_fields(pid_t pid, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p + 2 : NULL;
}

uint64_t bench_proc_cpu_us(pid_t pid)
{
    uint64_t ns = schedstat_ns(pid);
    if (ns)
        return ns / 1000;
    char buf[1024];
    const char *p = proc_stat_fields(pid, buf, sizeof buf);
    /* 3 state ... 14 utime 15 stime (clock ticks) */
    unsigned long long ut = 0, stt = 0;
    if (!p || sscanf(p, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
                     &ut, &stt) != 2)
        return 0;
    long hz = sysconf(_SC_CLK_TCK);
    return hz > 0 ? (ut + stt) * 1000000ull / (unsigned long long)hz : 0;
}

uint64_t bench_proc_minflt(pid_t pid)
{
    char buf[1024];
    const char *p = proc_stat_fields(pid, buf, sizeof buf);
    /* 3 state ... 10 minflt */
    unsigned long long minflt = 0;
    if (!p || sscanf(p, "%*c %*d %*d %*d %*d %*d %*u %llu", &minflt) != 1)
        return 0;
    return minflt;
}

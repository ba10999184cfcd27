/* tools/fabric-demo/main.c: rf-fabric-demo command line.
 *
 *   rf-fabric-demo [--provider NAME] [--host ADDR]   both sides on loopback
 *   rf-fabric-demo [--provider NAME] --serve [HOST:]PORT    target only
 *   rf-fabric-demo [--provider NAME] --connect HOST:PORT    initiator only
 *
 * Without --serve/--connect the program re-executes itself (rf_spawn of
 * /proc/self/exe: fork + exec, so fork-unsafe providers work) as the
 * target, learns its port through a pipe and runs the initiator. Exit status 0
 * when every step checked out on both sides, 1 otherwise, 2 for a malformed
 * command line. */
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "demo.h"
#include "rdmaflow/env.h"
#include "rdmaflow/spawn.h"
#include "rdmaflow/version.h"

#define EXIT_USAGE 2
#define WATCHDOG_S 120

static rf_child target; /* loopback mode: the target child */

static void usage(FILE *to)
{
    fprintf(to, "usage: rf-fabric-demo [--provider NAME] [--host ADDR]\n"
                "       rf-fabric-demo [--provider NAME] --serve [HOST:]PORT\n"
                "       rf-fabric-demo [--provider NAME] --connect HOST:PORT\n"
                "  --provider NAME  fabric provider (default: $RF_FABRIC, else "
                "auto)\n"
                "  --host ADDR      loopback mode: address of both sides "
                "(default 127.0.0.1)\n"
                "  --serve          run only the target: serves one initiator, "
                "then exits\n"
                "                   (PORT 0: any free port, printed)\n"
                "  --connect        run only the initiator against a target\n"
                "  --help           this message\n"
                "  --version        print the version and exit\n");
}

__attribute__((format(printf, 1, 2))) static int bad_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rf-fabric-demo: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    usage(stderr);
    return EXIT_USAGE;
}

/* Splits "[HOST:]PORT" (HOST may be "[v6addr]"). Returns 0 or -1. */
static int parse_endpoint(char *text, int need_host, const char **host,
                          uint16_t *port, int min_port)
{
    char *colon = strrchr(text, ':');
    const char *p = text;
    if (colon) {
        *colon = '\0';
        p = colon + 1;
        char *h = text;
        size_t n = strlen(h);
        if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
            h[n - 1] = '\0';
            h++;
        } else if (strpbrk(h, "[]")) {
            return -1; /* "[::1" or "a]": a bracket without its pair */
        }
        if (!*h)
            return -1;
        *host = h;
    } else if (need_host) {
        return -1;
    }
    int64_t v;
    if (rf_parse_int(p, min_port, 65535, "port", &v) != RF_OK)
        return -1;
    *port = (uint16_t)v;
    return 0;
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "rf-fabric-demo: watchdog: no result within "
                              "120 s; giving up\n";
    (void)!write(2, msg, sizeof msg - 1);
    if (target.pid > 0 && !target.reaped)
        kill(target.pid, SIGKILL);
    _exit(1);
}

/* Starts the target as a child (dying with this process) that writes
 * "port N" on its fd 3; returns the port, or 0 on failure. */
static uint16_t spawn_target(const demo_opts *o)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        perror("rf-fabric-demo: pipe2");
        return 0;
    }
    const char *argv[12];
    int n = 0;
    argv[n++] = "rf-fabric-demo";
    argv[n++] = "--role";
    argv[n++] = "target";
    argv[n++] = "--port-fd";
    argv[n++] = "3";
    argv[n++] = "--host";
    argv[n++] = o->host;
    if (o->provider) {
        argv[n++] = "--provider";
        argv[n++] = o->provider;
    }
    argv[n] = NULL;
    fflush(NULL);
    rf_spawn_opts so = {.argv = argv,
                        .path = RF_SPAWN_SELF,
                        .die_with_parent = true,
                        .keep = &(rf_spawn_fd){fds[1], 3},
                        .nkeep = 1};
    rf_status st = rf_spawn(&so, &target);
    close(fds[1]); /* the target holds the only write end now */
    if (st != RF_OK) {
        fprintf(stderr, "rf-fabric-demo: %s\n", rf_error_message());
        close(fds[0]);
        return 0;
    }
    uint16_t port = 0;
    st = rf_spawn_read_port(fds[0], "port ", DEMO_TIMEOUT_MS, &port);
    close(fds[0]);
    if (st != RF_OK) {
        fprintf(stderr, "rf-fabric-demo: the target did not start\n");
        return 0;
    }
    return port;
}

/* Waits for the target child (killing it after DEMO_TIMEOUT_MS); returns 0
 * if it exited with status 0. */
static int reap_target(void)
{
    int status = 0;
    bool killed = false;
    rf_status st = rf_child_stop(&target, 0, DEMO_TIMEOUT_MS, &status, &killed);
    if (killed) {
        fprintf(stderr, "rf-fabric-demo: target did not exit; killing it\n");
        return 1;
    }
    if (st != RF_OK)
        return 1;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    fprintf(stderr, "rf-fabric-demo: target %s %d\n",
            WIFEXITED(status) ? "exited with status" : "killed by signal",
            WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    return 1;
}

int main(int argc, char **argv)
{
    /* A malformed RF_LOG_LEVEL (or an RF_LOG_FILE that cannot be opened)
     * is a usage error, before anything runs. */
    if (rf_log_env_check() != RF_OK) {
        fprintf(stderr, "rf-fabric-demo: %s\n", rf_error_message());
        return 2;
    }
    demo_opts o = {.provider = NULL, .host = "127.0.0.1", .port_fd = -1};
    char *serve = NULL, *connect_to = NULL;
    const char *role = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(a, "--version") == 0) {
            printf("rf-fabric-demo (rdmaflow) %s\n", rf_version());
            return 0;
        }
        if (strcmp(a, "--provider") && strcmp(a, "--host") &&
            strcmp(a, "--serve") && strcmp(a, "--connect") &&
            strcmp(a, "--role") && strcmp(a, "--port-fd"))
            return bad_usage("unknown option '%s'", RF_ECHO(a));
        if (i + 1 >= argc || argv[i + 1][0] == '\0')
            return bad_usage("%s needs a value", a);
        char *v = argv[++i];
        if (strcmp(a, "--provider") == 0) {
            o.provider = v;
        } else if (strcmp(a, "--host") == 0) {
            o.host = v;
        } else if (strcmp(a, "--serve") == 0) {
            serve = v;
        } else if (strcmp(a, "--connect") == 0) {
            connect_to = v;
        } else if (strcmp(a, "--role") == 0) {
            role = v;
        } else {
            int64_t fd;
            if (rf_parse_int(v, 3, 1024, "--port-fd", &fd) != RF_OK)
                return bad_usage("--port-fd: '%s' is not a descriptor",
                                 RF_ECHO(v));
            o.port_fd = (int)fd;
        }
    }
    if (o.provider && strcmp(o.provider, "auto") != 0) {
        int known = 0;
        for (const char *const *p = rf_fabric_providers(); *p; p++)
            known |= strcmp(*p, o.provider) == 0;
        if (!known) {
            char list[128] = "";
            for (const char *const *p = rf_fabric_providers(); *p; p++) {
                if (*list)
                    strncat(list, "|", sizeof list - strlen(list) - 1);
                strncat(list, *p, sizeof list - strlen(list) - 1);
            }
            return bad_usage("--provider: unknown provider '%s' (%s)",
                             RF_ECHO(o.provider), list);
        }
    }
    if (serve && connect_to)
        return bad_usage("%s", "--serve and --connect exclude each other");
    if (role && (serve || connect_to || strcmp(role, "target") != 0))
        return bad_usage("--role '%s' is internal (only 'target', alone)",
                         RF_ECHO(role));
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);

    if (role)
        return demo_target(&o);
    /* the endpoint is parsed in a copy; a longer one is refused, not cut
     * (a cut "[HOST:]PORT" could name another port) */
    char copy[256];
    if (serve) {
        if (strlen(serve) >= sizeof copy)
            return bad_usage("--serve: '%s' is too long", RF_ECHO(serve));
        snprintf(copy, sizeof copy, "%s", serve);
        if (parse_endpoint(copy, 0, &o.host, &o.port, 0) != 0)
            return bad_usage("--serve: '%s' is not [HOST:]PORT",
                             RF_ECHO(serve));
        return demo_target(&o);
    }
    if (connect_to) {
        if (strlen(connect_to) >= sizeof copy)
            return bad_usage("--connect: '%s' is too long",
                             RF_ECHO(connect_to));
        snprintf(copy, sizeof copy, "%s", connect_to);
        if (parse_endpoint(copy, 1, &o.host, &o.port, 1) != 0)
            return bad_usage("--connect: '%s' is not HOST:PORT (port 1..65535)",
                             RF_ECHO(connect_to));
        return demo_initiator(&o);
    }
    /* Loopback: target child + initiator here. */
    signal(SIGALRM, on_alarm);
    alarm(WATCHDOG_S);
    o.port = spawn_target(&o);
    if (o.port == 0) {
        if (target.pid > 0)
            reap_target();
        return 1;
    }
    int rc = demo_initiator(&o);
    int trc = reap_target();
    if (rc == 0 && trc == 0) {
        printf("rf-fabric-demo: OK, both sides checked out\n");
        return 0;
    }
    printf("rf-fabric-demo: FAILED (initiator %s, target %s)\n",
           rc ? "failed" : "ok", trc ? "failed" : "ok");
    return 1;
}

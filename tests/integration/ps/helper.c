/* tests/integration/ps/helper.c: rf_ps_helper, the processes the ps tests
 * start (fork + exec). Roles:
 *   ps --index I --port P [--chunk-kb K] [--max-workers M]
 *      [--secret FILE] [--workers N --chief C] [--member-ms M]
 *                                  a ps task: prints "READY <port> <incarn.>"
 *                                  then serves until SHUTDOWN; exit 0 then
 *   push --ps A[,B] --id N --steps S --mode ps|worker --locking 0|1
 *        [--n N] [--go G [--overlap K]]
 *                                  a non-chief worker: looks up "counter" (N
 *                                  floats) on every ps, waits for the init
 *                                  flags, prints "STARTED", waits until
 *                                  global_step reaches G (the chief's start
 *                                  signal, so that workers push at the same
 *                                  time; 0: no wait), then S times pushes -1
 *                                  to each and adds 1 to global_step; with
 *                                  --overlap, goes on pushing until the
 *                                  other workers have pushed K times (from
 *                                  global_step - G), so that the pushes of
 *                                  two workers overlap for K of them even
 *                                  when the host ran one worker alone at
 *                                  first; prints "DONE <its pushes>"
 *   wait-init --ps A --id N --timeout MS
 *                                  looks up "w" on ps 0 and waits for its init
 *                                  flag; prints "INIT-OK <sum>" or
 *                                  "INIT-FAIL <status> <message>"
 *   done --ps A[,B] --id N         a worker that finished: connects and
 *                                  announces it (rf_ps_worker_done); prints
 *                                  "DONE"
 *   hold --ps A --id N --ms T [--secret FILE] [--leave 1]
 *                                  a worker that stays connected for T ms,
 *                                  reading global_step every 20 ms (each
 *                                  read must succeed); prints "CONNECTED"
 *                                  then "HELD <reads>"; with --leave, sends
 *                                  LEAVE (rf_ps_leave) before it closes and
 *                                  prints "LEFT"
 * --secret FILE: the cluster secret (ps: authenticate every client; a
 * client: authenticate); --workers/--chief: the ps binds roles.
 * Every failure is a CHECK (message on stderr, exit 1). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/ps/fixture.h"
#include "tests/integration/ps/specs.h"

static const char *arg(int argc, char **argv, const char *name, const char *def)
{
    for (int i = 2; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return argv[i + 1];
    CHECK(def, "missing %s", name);
    return def;
}

static size_t split(char *list, const char **out, size_t cap)
{
    size_t n = 0;
    for (char *s = strtok(list, ","); s && n < cap; s = strtok(NULL, ","))
        out[n++] = s;
    return n;
}

static int role_ps(int argc, char **argv)
{
    rft_set_who("ps");
    rf_fabric *f = pt_fabric();
    rf_ps_server_options o = {
        .task_index = atoi(arg(argc, argv, "--index", "0")),
        .chunk_bytes = (size_t)atoi(arg(argc, argv, "--chunk-kb", "1024"))
                       << 10,
        .max_workers = atoi(arg(argc, argv, "--max-workers", "0")),
        .member_timeout_ms = atoi(arg(argc, argv, "--member-ms", "0"))};
    rf_cluster_secret *secret = NULL;
    const char *sf = arg(argc, argv, "--secret", "");
    if (sf[0])
        CHECK_OK(rf_secret_load(sf, &secret));
    o.secret = secret;
    int workers = atoi(arg(argc, argv, "--workers", "0"));
    if (workers > 0) {
        o.bind_roles = true;
        o.num_workers = (uint32_t)workers;
        o.chief_id = (uint32_t)atoi(arg(argc, argv, "--chief", "0"));
    }
    rf_ps_server *s = NULL;
    CHECK_OK(rf_ps_server_start(
        f, pt_host(), (uint16_t)atoi(arg(argc, argv, "--port", "0")), &o, &s));
    printf("READY %u %llx\n", rf_ps_server_port(s),
           (unsigned long long)rf_ps_server_incarnation(s));
    fflush(stdout);
    rf_status st = rf_ps_server_join(s);
    rf_ps_server_counters k;
    rf_ps_server_get_counters(s, &k);
    printf(
        "COUNTERS auth=%llu busy=%llu full=%llu duplicate=%llu idle=%llu "
        "protocol=%llu sparse=%llu sparse_rows=%llu sparse_refused=%llu "
        "gather=%llu gather_rows=%llu gather_refused=%llu\n",
        (unsigned long long)k.refused_auth, (unsigned long long)k.refused_busy,
        (unsigned long long)k.refused_full,
        (unsigned long long)k.refused_duplicate,
        (unsigned long long)k.dropped_idle,
        (unsigned long long)k.dropped_protocol,
        (unsigned long long)k.sparse_applies, (unsigned long long)k.sparse_rows,
        (unsigned long long)k.sparse_refused,
        (unsigned long long)k.gather_requests,
        (unsigned long long)k.gather_rows,
        (unsigned long long)k.gather_refused);
    printf("EXIT %s\n", rf_status_string(st));
    fflush(stdout);
    rf_ps_server_stop(s);
    rf_fabric_close(f);
    rf_secret_free(secret);
    return st == RF_OK ? 0 : 1;
}

static int role_hold(int argc, char **argv)
{
    rft_set_who("hold-worker");
    const char *addrs[1] = {arg(argc, argv, "--ps", NULL)};
    uint32_t id = (uint32_t)atoi(arg(argc, argv, "--id", "1"));
    long long ms = atoll(arg(argc, argv, "--ms", "1000"));
    rf_cluster_secret *secret = NULL;
    const char *sf = arg(argc, argv, "--secret", "");
    if (sf[0])
        CHECK_OK(rf_secret_load(sf, &secret));
    rf_fabric *f = pt_fabric();
    rf_ps_client_options o = {.client_id = id,
                              .secret = secret,
                              .connect_timeout_ms = rft_ms(20000),
                              .op_timeout_ms = rft_ms(20000)};
    rf_ps_client *c = NULL;
    CHECK_OK(rf_ps_client_connect(f, addrs, 1, &o, &c));
    printf("CONNECTED\n");
    fflush(stdout);
    long long end = rf_now_ms() + ms, reads = 0;
    while (rf_now_ms() < end) {
        int64_t v;
        CHECK_OK(rf_ps_global_step_read(c, &v));
        reads++;
        rf_sleep_ms(20);
    }
    printf("HELD %lld\n", reads);
    fflush(stdout);
    if (atoi(arg(argc, argv, "--leave", "0"))) {
        CHECK_OK(rf_ps_leave(c));
        printf("LEFT\n");
        fflush(stdout);
    }
    rf_ps_client_close(c);
    rf_fabric_close(f);
    rf_secret_free(secret);
    return 0;
}

static int role_push(int argc, char **argv)
{
    rft_set_who("push-worker");
    char list[1024];
    snprintf(list, sizeof list, "%s", arg(argc, argv, "--ps", NULL));
    const char *addrs[8];
    size_t nps = split(list, addrs, 8);
    uint32_t id = (uint32_t)atoi(arg(argc, argv, "--id", "1"));
    int steps = atoi(arg(argc, argv, "--steps", "100"));
    bool worker_mode = strcmp(arg(argc, argv, "--mode", "ps"), "worker") == 0;
    bool locking = atoi(arg(argc, argv, "--locking", "0")) != 0;
    int64_t n = atoi(arg(argc, argv, "--n", "16"));
    rf_fabric *f = pt_fabric();
    rf_ps_client *c = pt_client(f, addrs, nps, id, false);
    rf_ps_var *vars[8];
    rf_ps_xfer grads[8];
    pt_buf g;
    pt_buf_alloc(c, &g, (size_t)n);
    for (int64_t i = 0; i < n; i++)
        g.p[i] = -1.0f;
    for (size_t p = 0; p < nps; p++) {
        rf_ps_shard_spec s = pt_counter_spec("counter", n);
        CHECK_OK(rf_ps_lookup(c, p, &s, &vars[p]));
        grads[p] = (rf_ps_xfer){.var = vars[p],
                                .field = RF_PS_FIELD_VALUES,
                                .buf = g.p,
                                .len = (size_t)n * 4,
                                .mr = g.mr};
    }
    CHECK_OK(rf_ps_wait_initialized(c, vars, nps, 20, rft_ms(20000)));
    printf("STARTED\n");
    fflush(stdout);
    int64_t go = atoll(arg(argc, argv, "--go", "0")), gs = 0;
    long long go_by = rf_now_ms() + rft_ms(20000);
    while (go > 0 && gs < go) {
        CHECK_OK(rf_ps_global_step_read(c, &gs));
        CHECK(rf_now_ms() < go_by, "global_step %lld, no start signal (%lld)",
              (long long)gs, (long long)go);
    }
    int64_t overlap = atoll(arg(argc, argv, "--overlap", "0")), done = 0;
    CHECK(overlap == 0 || go > 0, "--overlap needs --go");
    for (;;) {
        CHECK_OK(pt_push(c, grads, nps,
                         worker_mode ? RF_PS_APPLY_WORKER : RF_PS_APPLY_PS,
                         locking));
        int64_t old;
        CHECK_OK(rf_ps_global_step_add(c, 1, &old));
        done++;
        int64_t others = old + 1 - go - done;
        if (done >= steps && others >= overlap)
            break;
        CHECK(rf_now_ms() < go_by + rft_ms(20000),
              "%lld pushes, the other workers only %lld of the %lld to "
              "overlap",
              (long long)done, (long long)others, (long long)overlap);
    }
    CHECK_OK(rf_ps_push_wait(c));
    printf("DONE %lld\n", (long long)done);
    fflush(stdout);
    rf_ps_client_close(c);
    rf_fabric_close(f);
    return 0;
}

static int role_wait_init(int argc, char **argv)
{
    rft_set_who("wait-init");
    const char *addrs[1] = {arg(argc, argv, "--ps", NULL)};
    uint32_t id = (uint32_t)atoi(arg(argc, argv, "--id", "1"));
    int timeout = atoi(arg(argc, argv, "--timeout", "10000"));
    rf_fabric *f = pt_fabric();
    rf_ps_client *c = pt_client(f, addrs, 1, id, false);
    rf_ps_shard_spec s = pt_w_spec();
    rf_ps_var *v;
    CHECK_OK(rf_ps_lookup(c, 0, &s, &v));
    printf("WAITING\n");
    fflush(stdout);
    rf_status st = rf_ps_wait_initialized(c, &v, 1, 20, timeout);
    if (st != RF_OK) {
        printf("INIT-FAIL %s %s\n", rf_status_string(st), rf_error_message());
    } else {
        pt_buf b;
        pt_buf_alloc(c, &b, 12);
        rf_ps_xfer x = {.var = v,
                        .field = RF_PS_FIELD_VALUES,
                        .buf = b.p,
                        .len = 48,
                        .mr = b.mr};
        CHECK_OK(rf_ps_read(c, &x, 1));
        double sum = 0;
        for (int i = 0; i < 12; i++)
            sum += b.p[i];
        printf("INIT-OK %.6f\n", sum);
    }
    fflush(stdout);
    rf_ps_client_close(c);
    rf_fabric_close(f);
    return 0;
}

static int role_done(int argc, char **argv)
{
    rft_set_who("done-worker");
    char list[1024];
    snprintf(list, sizeof list, "%s", arg(argc, argv, "--ps", NULL));
    const char *addrs[8];
    size_t nps = split(list, addrs, 8);
    uint32_t id = (uint32_t)atoi(arg(argc, argv, "--id", "1"));
    rf_fabric *f = pt_fabric();
    rf_ps_client *c = pt_client(f, addrs, nps, id, false);
    CHECK_OK(rf_ps_worker_done(c));
    /* only the chief writes other workers' bits */
    const uint64_t other[RF_PS_DONE_WORDS] = {1ull << 9};
    CHECK_ST(rf_ps_workers_done_merge(c, other), RF_ERR_INVALID_ARG);
    printf("DONE\n");
    fflush(stdout);
    rf_ps_client_close(c);
    rf_fabric_close(f);
    return 0;
}

int main(int argc, char **argv)
{
    rft_proc_init(true);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        fprintf(stderr, "usage: rf_ps_helper ps|push|wait-init|done ...\n");
        return 2;
    }
    int rc = 2;
    if (strcmp(argv[1], "ps") == 0)
        rc = role_ps(argc, argv);
    else if (strcmp(argv[1], "push") == 0)
        rc = role_push(argc, argv);
    else if (strcmp(argv[1], "wait-init") == 0)
        rc = role_wait_init(argc, argv);
    else if (strcmp(argv[1], "done") == 0)
        rc = role_done(argc, argv);
    else if (strcmp(argv[1], "hold") == 0)
        rc = role_hold(argc, argv);
    else
        fprintf(stderr, "rf_ps_helper: unknown role %s\n", argv[1]);
    pt_buf_release_all();
    return rc;
}

/* bench/bench_opts.h: rf-bench's tests (with perftest's defaults) and its
 * command line. */
#ifndef RF_BENCH_OPTS_H
#define RF_BENCH_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmaflow/fabric.h>

typedef enum bench_test {
    BENCH_READ_LAT = 0,
    BENCH_WRITE_LAT,
    BENCH_WRITE_IMM_LAT,
    BENCH_FETCH_ADD_LAT,
    BENCH_CMP_SWAP_LAT,
    BENCH_READ_BW,
    BENCH_WRITE_BW,
    BENCH_WRITE_IMM_BW,
    BENCH_FETCH_ADD_BW,
    BENCH_CMP_SWAP_BW,
    BENCH_TEST_COUNT
} bench_test;

typedef enum bench_verb {
    BENCH_VERB_READ,
    BENCH_VERB_WRITE,
    BENCH_VERB_WRITE_IMM,
    BENCH_VERB_FETCH_ADD,
    BENCH_VERB_CMP_SWAP,
} bench_verb;

typedef struct bench_test_info {
    const char *name;  /* command-line name, e.g. "read_lat" */
    const char *title; /* banner, e.g. "RDMA_Read Latency" */
    bench_verb verb;
    bool bw;       /* bandwidth test; else latency */
    bool atomic;   /* 8-byte fetch_add / cmp_swap */
    bool pingpong; /* latency by ping-pong: both sides post */
    int rtt_factor;
    uint32_t default_iters;
} bench_test_info;

const bench_test_info *bench_test_get(bench_test t);
/* Index of the test called name, or -1. */
int bench_test_find(const char *name);

typedef enum bench_mode {
    BENCH_MODE_NONE = 0,
    BENCH_MODE_SERVE,
    BENCH_MODE_CONNECT,
    BENCH_MODE_LOOPBACK,
} bench_mode;

#define BENCH_DEFAULT_PORT     18515 /* perftest's default port */
#define BENCH_DEFAULT_LAT_SIZE 2     /* perftest DEF_SIZE_LAT */
#define BENCH_DEFAULT_BW_SIZE  65536 /* perftest DEF_SIZE_BW */
#define BENCH_DEFAULT_TX_DEPTH 128   /* perftest DEF_TX_BW */
#define BENCH_DEFAULT_CQ_MOD   100   /* perftest DEF_CQ_MOD */
#define BENCH_CQ_MOD_SIZE_LIMIT                                                \
    8192 /* perftest MSG_SIZE_CQ_MOD_LIMIT: above it, cq_mod 1 unless -Q */
#define BENCH_DEFAULT_INLINE 220 /* perftest DEF_INLINE_WRITE */
#define BENCH_MAX_SIZE       (1u << 30)
#define BENCH_MAX_TX_DEPTH   16384
#define BENCH_MAX_SIZES      32
#define BENCH_MAX_QPS        1024 /* -q and --max-qps at most */
#define BENCH_DEFAULT_MAX_QPS                                                  \
    16 /* --serve: endpoints a client may open per run, unless --max-qps */

typedef struct bench_opts {
    bench_mode mode;
    bench_test test;
    const char *provider; /* NULL or "auto": RF_FABRIC, else the first */
    char host[256];       /* peer (connect), bind (serve), both (loopback) */
    uint16_t port;
    uint64_t size;
    bool size_set;
    bool all_sizes;
    uint32_t iters;
    bool iters_set;
    uint32_t tx_depth;
    uint32_t cq_mod;
    bool cq_mod_set;
    uint32_t inline_size;
    bool inline_set;
    bool no_peak;
    /* --poll: busy = rf_cq_poll in a loop (perftest's way); wait (the
     * default) = rf_cq_wait, which spins RF_CQ_SPIN_US then blocks; events
     * (-e) = rf_cq_wait with no spin */
    const char *poll;
    bool events; /* rf_cq_wait (wait or events), not rf_cq_poll */
    /* --progress: the fabric's rf_fabric_attr.progress (auto, the default,
     * or manual: the ping-pong's memory spin polls the send queue, and
     * passive phases poll without sleeping, as ucx_perftest) */
    rf_progress progress;
    int spin_us; /* the CQs' spin: -1 = the library's (RF_CQ_SPIN_US) */
    bool json;
    bool forever;
    int timeout_s;
    bool timer_tsc; /* --timer: tsc (default where there is one) or clock */
    int ready_fd;   /* internal (--ready-fd): loopback child reports its port */
    /* perftest's device flags, passed to the verbs provider as
     * RF_VERBS_DEVICE / RF_VERBS_PORT / RF_VERBS_GID_INDEX (the flag wins
     * over the environment; bench_opts_apply_env) */
    const char *ib_dev;  /* -d; NULL: unset */
    int ib_port;         /* -i; 0: unset */
    int gid_index;       /* -x; -1: unset */
    uint32_t duration_s; /* -D: run this long instead of -n iterations */
    uint32_t margin_s;   /* -f: not measured at either end of -D (2) */
    uint32_t qps;        /* -q: endpoints (QPs) of a bandwidth test */
    uint32_t max_qps;    /* --serve --max-qps: bound on a client's -q */
    bool report_gbits;   /* --report_gbits: bandwidth in Gb/s (10^9 bit) */
} bench_opts;

#define BENCH_DEFAULT_MARGIN 2 /* perftest DEF_MARGIN, seconds */

/* Parses the command line. Returns 0 to run, 1 after printing help (exit
 * 0), 2 after printing a usage error to stderr (exit 2). */
int bench_opts_parse(int argc, char **argv, bench_opts *o);

/* Sets RF_VERBS_DEVICE, RF_VERBS_PORT and RF_VERBS_GID_INDEX from -d, -i
 * and -x (so the loopback server child gets them too). */
void bench_opts_apply_env(const bench_opts *o);
/* With -d/-i/-x: 0 if fab uses an RDMA device, else -1 after a message
 * (an auto fabric whose verbs provider did not open would otherwise fall
 * back to sock, ignoring them). */
int bench_opts_check_device(const bench_opts *o, rf_fabric *fab,
                            const char *who);
/* " (RF_VERBS_* set by -d/-i/-x)" when any of them was given, else "": for
 * a failure to open the fabric, which names the variable. */
const char *bench_opts_env_note(const bench_opts *o);

/* The message sizes to run, in order (perftest's -a: 2 .. 2^23). */
size_t bench_opts_sizes(const bench_opts *o, uint64_t sizes[BENCH_MAX_SIZES]);

/* Iterations for the chosen test (-n, else the test's default). */
uint32_t bench_opts_iters(const bench_opts *o);

/* Inline hint threshold for the chosen test (-I, else perftest's default:
 * 220 for write latency tests, 0 otherwise). */
uint32_t bench_opts_inline(const bench_opts *o);

#endif

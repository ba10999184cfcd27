/* fabric/verbs/ref/verbs_ref.c: rf-bench-verbs-ref, the raw-verbs baseline
 * of rdmaflow's per-operation cost (bench/verbs-opcount). In one process on
 * one device it connects two RC QPs to each other twice, once with raw
 * libibverbs + librdmacm and once through rdmaflow's verbs provider, and
 * runs the same 8-byte read, write, write_imm, fetch_add and cmp_swap on
 * each: one signaled work request per post (ibv_post_send / rf_post, as
 * rf-bench posts), then polling one completion (ibv_poll_cq / rf_cq_poll
 * with max 1, as rf-bench polls), no inline data.
 *
 * It is meant to run under `valgrind --tool=callgrind --collect-atstart=no`:
 * only the post and poll calls are collected (CALLGRIND_TOGGLE_COLLECT
 * around each call) and every phase ends with a dump named
 * "SIDE OP post|poll N=ITERS calls=C", so each dump's total is the
 * user-space instructions of ITERS posts or polls, rdma-core's and the
 * provider's included. Before a completion is polled the program sleeps
 * 1 ms outside the collection, so the poll phase counts polls that find a
 * completion (calls = ITERS when none was empty); a last phase per side,
 * "SIDE - empty_poll", polls an empty CQ. The raw phases run twice:
 * "raw" before rdmaflow's fabric (and its event thread) exists, as a
 * single-threaded verbs program, and "raw_mt" beside it. Without valgrind the
 * requests do nothing and the program checks that every operation did its work.
 *
 * It lives under fabric/verbs/ because only that folder may include
 * libibverbs' headers (tests/layers/check-layers); it is not part of the
 * library (bench/CMakeLists.txt builds it).
 *
 * Usage: rf-bench-verbs-ref [--host ADDR] [-n ITERS]
 *   --host ADDR  local address of the RDMA device (default 10.77.0.1, the
 *                rxe guest's)
 *   -n ITERS     operations per phase (default 200, 1 .. 1000000)
 * Exit: 0 all checks passed, 1 a step or a check failed, 2 usage. */
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <valgrind/callgrind.h>

#include "rdmaflow/env.h"
#include "rdmaflow/status.h"
#include "verbs_ref.h"

const char *const vref_op_name[NOPS] = {"read", "write", "write_imm",
                                        "fetch_add", "cmp_swap"};
int vref_failed;

void vref_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("rf-bench-verbs-ref: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    vref_failed = 1;
}

/* Ends a phase: a dump of what was collected since the last one, and the
 * same line on stdout. */
void vref_end_phase(const char *side, const char *op, const char *what,
                    int iters, long calls)
{
    char name[128];
    snprintf(name, sizeof name, "%s %s %s N=%d calls=%ld", side, op, what,
             iters, calls);
    CALLGRIND_DUMP_STATS_AT(name);
    printf("phase %s\n", name);
}

/* --- the checks and the phases ------------------------------------------- */

/* What the operations must have left in memory: the read pattern, the
 * written bytes, and a cmp_swap word that counted every cmp_swap. */
static void check_memory(const char *side, const unsigned char *cbuf,
                         const unsigned char *sbuf, uint64_t seq_end)
{
    uint64_t v;
    memcpy(&v, cbuf + LOCAL_OFF(OP_READ), 8);
    if (v != READ_PATTERN)
        vref_fail("%s: read returned %#llx, expected %#llx", side,
                  (unsigned long long)v, (unsigned long long)READ_PATTERN);
    memcpy(&v, sbuf + REMOTE_OFF(OP_WRITE), 8);
    if (v != 0x5757575757575757ull)
        vref_fail("%s: write did not reach the target", side);
    memcpy(&v, sbuf + REMOTE_OFF(OP_CMP_SWAP), 8);
    if (v != seq_end)
        vref_fail("%s: cmp_swap word %llu, expected %llu", side,
                  (unsigned long long)v, (unsigned long long)seq_end);
}

static void reset_buffers(unsigned char *cbuf, unsigned char *sbuf)
{
    uint64_t pattern = READ_PATTERN;
    memset(cbuf, 0, BUF_SIZE);
    memset(sbuf, 0, BUF_SIZE);
    memcpy(sbuf + REMOTE_OFF(OP_READ), &pattern, 8);
    memset(cbuf + LOCAL_OFF(OP_WRITE), 0x57, 8);
    memset(cbuf + LOCAL_OFF(OP_WRITE_IMM), 0x57, 8);
}

typedef long (*loop_fn)(void *side, int op, int iters, int count,
                        uint64_t *seq);

static long raw_loop_v(void *r, int op, int iters, int count, uint64_t *seq)
{
    return vref_raw_loop(r, op, iters, count, seq);
}
static long rfs_loop_v(void *s, int op, int iters, int count, uint64_t *seq)
{
    return vref_rf_loop(s, op, iters, count, seq);
}

/* Warm-up, posts counted, polls counted, for every operation; cmp_swap
 * compares with its own sequence number, so seq must start at the
 * target word's value (0). */
static int run_side(const char *name, void *side, loop_fn loop, int iters,
                    unsigned char *cbuf, unsigned char *sbuf)
{
    reset_buffers(cbuf, sbuf);
    uint64_t seq_op[NOPS] = {0};
    for (int op = 0; op < NOPS; op++) {
        uint64_t *seq = &seq_op[op];
        if (loop(side, op, WARMUP, 0, seq) < 0)
            return -1;
        CALLGRIND_ZERO_STATS;
        long polls = loop(side, op, iters, 1, seq);
        if (polls < 0)
            return -1;
        vref_end_phase(name, vref_op_name[op], "post", iters, iters);
        polls = loop(side, op, iters, 2, seq);
        if (polls < 0)
            return -1;
        vref_end_phase(name, vref_op_name[op], "poll", iters, polls);
    }
    uint64_t fa;
    memcpy(&fa, cbuf + LOCAL_OFF(OP_FETCH_ADD), 8);
    /* the last fetch_add returned the count before it */
    if (fa != seq_op[OP_FETCH_ADD] - 1)
        vref_fail("%s: fetch_add returned %llu, expected %llu", name,
                  (unsigned long long)fa,
                  (unsigned long long)(seq_op[OP_FETCH_ADD] - 1));
    check_memory(name, cbuf, sbuf, seq_op[OP_CMP_SWAP]);
    return vref_failed ? -1 : 0;
}

static int usage_error(const char *what)
{
    fprintf(stderr,
            "rf-bench-verbs-ref: %s\n"
            "usage: rf-bench-verbs-ref [--host ADDR] [-n ITERS]\n",
            what);
    return 2;
}

int main(int argc, char **argv)
{
    const char *host = "10.77.0.1";
    int iters = 200;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--host") && i + 1 < argc) {
            host = argv[++i];
        } else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
            int64_t v;
            if (rf_parse_int(argv[++i], 1, 1000000, "-n", &v) != RF_OK)
                return usage_error(rf_error_message());
            iters = (int)v;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: rf-bench-verbs-ref [--host ADDR] [-n ITERS]\n");
            return 0;
        } else {
            fprintf(stderr,
                    "rf-bench-verbs-ref: unknown or incomplete "
                    "argument '%s'\n",
                    argv[i]);
            return usage_error("see --help");
        }
    }
    struct addrinfo hints = {.ai_family = AF_INET, .ai_flags = AI_NUMERICHOST},
                    *ai;
    if (getaddrinfo(host, NULL, &hints, &ai))
        return usage_error("--host: not a numeric IPv4 address");

    unsigned char *bufs = aligned_alloc(4096, 4 * BUF_SIZE);
    if (!bufs) {
        freeaddrinfo(ai);
        vref_fail("out of memory");
        return 1;
    }
    raw r = {.cbuf = bufs, .sbuf = bufs + BUF_SIZE};
    rfs s = {.cbuf = bufs + 2 * BUF_SIZE, .sbuf = bufs + 3 * BUF_SIZE};
    long found = 0;
    if (vref_raw_open(&r, ai->ai_addr) == 0 &&
        run_side("raw", &r, raw_loop_v, iters, r.cbuf, r.sbuf) == 0) {
        CALLGRIND_ZERO_STATS;
        found = vref_raw_empty(&r, iters);
        vref_end_phase("raw", "-", "empty_poll", iters, iters);
    }
    /* rdmaflow's fabric has an event thread, and libc's write() (rxe's
     * doorbell) costs more in a process with threads (cancellation
     * bookkeeping): "raw_mt" repeats the raw phases with the fabric open,
     * so that raw_mt and rdmaflow differ only in the post and poll
     * paths. */
    if (!vref_failed && vref_rf_open(&s, host) == 0 &&
        run_side("raw_mt", &r, raw_loop_v, iters, r.cbuf, r.sbuf) == 0) {
        CALLGRIND_ZERO_STATS;
        found += vref_raw_empty(&r, iters);
        vref_end_phase("raw_mt", "-", "empty_poll", iters, iters);
    }
    vref_raw_close(&r);
    if (!vref_failed &&
        run_side("rdmaflow", &s, rfs_loop_v, iters, s.cbuf, s.sbuf) == 0) {
        CALLGRIND_ZERO_STATS;
        found += vref_rf_empty(&s, iters);
        vref_end_phase("rdmaflow", "-", "empty_poll", iters, iters);
    }
    vref_rf_close(&s);
    if (found)
        vref_fail("%ld completions found by polls of an empty CQ", found);
    free(bufs);
    freeaddrinfo(ai);
    if (!vref_failed)
        printf("rf-bench-verbs-ref: all operations checked\n");
    return vref_failed ? 1 : 0;
}

/* bench/emblookup/el_opts.h: the command line of rf-bench-emb (the
 * measuring worker, and the --serve-ps role it re-executes itself in for
 * each of its two ps tasks). */
#ifndef RF_BENCH_EL_OPTS_H
#define RF_BENCH_EL_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#define EL_PS_TASKS 2

typedef struct el_opts {
    const char *provider; /* sock, shm, verbs or auto (children get it) */
    char host[256];       /* address of the ps tasks (127.0.0.1) */
    int64_t rows;         /* table rows R, over both ps */
    uint32_t dim;         /* floats per row D */
    uint32_t batch;       /* examples per step B */
    uint32_t features;    /* categorical ids per example F */
    double zipf;          /* the ids' Zipf exponent */
    uint64_t seed;
    int steps, warmup;  /* measured steps, steps run first */
    int dense_steps;    /* measured steps of the whole-shard READs */
    uint64_t dense_cap; /* largest whole-shard READ buffer (bytes) */
    bool push;          /* also a sparse push apply=ps per step */
    const char *json;   /* NULL, or the file for the JSON figures */
    int timeout_s;
    /* --inject-stale-row: after writing the pattern, one more push to a
     * row the first measured step reads, which the check is not told of,
     * so the run must fail its check (the smoke test's proof it can). */
    bool inject_stale_row;
    /* --serve-ps role */
    bool serve_ps;
    int ps_index;
} el_opts;

/* Parses argv. 0, 1 after --help (printed), 2 after a usage error (said
 * on stderr). */
int el_opts_parse(int argc, char **argv, el_opts *o);

#endif

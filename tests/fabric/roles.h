/* tests/fabric/roles.h: the child roles other than the target (initiator
 * workers started by multi-process cases) and the arguments they take. */
#ifndef RF_TESTS_FABRIC_ROLES_H
#define RF_TESTS_FABRIC_ROLES_H

#include <stdbool.h>
#include <stdint.h>

typedef struct rt_role_args {
    uint16_t port;     /* --port: the target's listener */
    uint64_t addr;     /* --addr: remote address */
    uint32_t rkey;     /* --rkey */
    uint64_t len;      /* --len: remote region length */
    int threads;       /* --threads */
    long iters;        /* --iters */
    int id;            /* --id: worker number */
    const char *out;   /* --out: result file */
    const char *token; /* --token: connect private data */
    int start;         /* --start: threads to wait for before starting */
} rt_role_args;

extern rt_role_args rt_role;

/* With --start N, the fadd and lock workers' threads first meet at a
 * barrier: each adds 1 to the word at --addr + 128 and waits until it reads
 * N there (the driver zeroes it before starting them). */
/* fetch_add worker: --threads endpoints each doing --iters fetch_add(1) on
 * the word at --addr; writes every fetched value (uint64, native order) to
 * --out. */
int rt_role_fadd(void);
/* cmp_swap lock worker: --threads endpoints each doing --iters critical
 * sections (lock word at --addr, counter at --addr + 64: READ, +1, WRITE);
 * with locked false the same READ, +1, WRITE without the lock (the control
 * that must lose updates). With --out, writes how many acquisitions found
 * the lock held by another thread (one decimal number). */
int rt_role_lock(bool locked);
/* Streams 1 MiB writes to --addr forever (token --token), printing
 * "streaming" once the first completed; used to be killed. */
int rt_role_stream(void);

#endif

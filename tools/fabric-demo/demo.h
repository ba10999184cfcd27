/* tools/fabric-demo/demo.h: rf-fabric-demo, the interim main job. A target
 * registers a buffer and listens; an initiator connects, reads the buffer,
 * writes it, increments a word with fetch_add and cmp_swap and finishes with
 * a write_imm whose immediate the target prints; the target then checks its
 * memory and reports the verdict to the initiator with a send. Both print
 * every step (op, bytes, remote address, rkey, values, time in µs). */
#ifndef RF_TOOLS_FABRIC_DEMO_H
#define RF_TOOLS_FABRIC_DEMO_H

#include <stddef.h>
#include <stdint.h>

#include "rdmaflow/fabric.h"

/* Layout of the target's region. */
#define DEMO_REGION_LEN   4096
#define DEMO_DATA_LEN     1024 /* [0, 1024): read, then overwritten */
#define DEMO_COUNTER_OFF  1024 /* the word fetch_add/cmp_swap work on */
#define DEMO_COUNTER_INIT 41
#define DEMO_SWAP_TO      1000 /* cmp_swap: (INIT + 1) -> SWAP_TO */
#define DEMO_IMM_OFF      2048 /* write_imm payload lands here */
#define DEMO_IMM_VALUE    0x00c0ffeeu
#define DEMO_IMM_PAYLOAD  "rdmaflow write_imm payload"
#define DEMO_REPORT_LEN   128   /* the target's verdict message */
#define DEMO_TIMEOUT_MS   30000 /* every wait */

typedef struct demo_opts {
    const char *provider; /* NULL: RF_FABRIC or auto */
    const char *host;
    uint16_t port;
    int port_fd; /* --role target: where to write "port N" (-1: none) */
} demo_opts;

/* The bytes the target puts in [0, DEMO_DATA_LEN) (which = 0) and the bytes
 * the initiator overwrites them with (which = 1). */
void demo_content(unsigned char *out, size_t len, int which);
/* Index of the first byte differing from demo_content, or len if none. */
size_t demo_mismatch(const unsigned char *p, size_t len, int which);

/* Waits for one completion; returns its status (RF_ERR_TIMEOUT if none). */
rf_status demo_wait(rf_cq *cq, rf_completion *out);
/* printf to stdout, prefixed with the role, flushed. */
void demo_say(const char *role, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Return the process exit status: 0 when everything checked out. */
int demo_target(const demo_opts *o);
int demo_initiator(const demo_opts *o);

#endif

/* fabric/verbs/ref/verbs_ref.h: what the files of rf-bench-verbs-ref share
 * (verbs_ref.c: phases, checks, main; verbs_ref_raw.c: the raw libibverbs
 * side; verbs_ref_rf.c: the rdmaflow side): buffer layout, the two sides'
 * connections and loops. */
#ifndef RF_FABRIC_VERBS_REF_H
#define RF_FABRIC_VERBS_REF_H

#include <stdint.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "rdmaflow/fabric.h"

#define BUF_SIZE 4096
#define WARMUP   16
#define QDEPTH   16

enum { OP_READ, OP_WRITE, OP_WRITE_IMM, OP_FETCH_ADD, OP_CMP_SWAP, NOPS };
extern const char *const vref_op_name[NOPS];
/* Offsets of each operation's local and remote 8 bytes. */
#define LOCAL_OFF(op)  ((size_t)(op)*128)
#define REMOTE_OFF(op) ((size_t)(op)*128 + 64)
#define READ_PATTERN   0x0123456789abcdefull

/* Reports a failure (stderr) and sets vref_failed. */
void vref_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern int vref_failed;
/* Ends a phase: a callgrind dump named "SIDE OP WHAT N=ITERS calls=C"
 * and the same line on stdout. */
void vref_end_phase(const char *side, const char *op, const char *what,
                    int iters, long calls);

/* The loops: count 0 collects nothing, 1 the posts, 2 the polls; each
 * returns the polls made, or -1 after a failure (reported). seq numbers
 * the operations (cmp_swap compares with it). */

/* Raw libibverbs + librdmacm: a listener, a connector and the accepted id
 * on one device, one PD, a CQ per side. */
typedef struct raw {
    struct rdma_event_channel *ch;
    struct rdma_cm_id *lid, *cli, *srv;
    struct ibv_pd *pd;
    struct ibv_cq *ccq, *scq;
    struct ibv_mr *cmr, *smr;
    unsigned char *cbuf, *sbuf;
    int connected;
} raw;
int vref_raw_open(raw *r, const struct sockaddr *addr);
void vref_raw_close(raw *r);
long vref_raw_loop(raw *r, int op, int iters, int count, uint64_t *seq);
long vref_raw_empty(raw *r, int iters);

/* rdmaflow's verbs provider: the same through the fabric API. */
typedef struct rfs {
    rf_fabric *fab;
    rf_cq *ccq, *scq;
    rf_mr *cmr, *smr;
    rf_listener *l;
    rf_ep *cli, *srv;
    unsigned char *cbuf, *sbuf;
    rf_status accept_st;
    char accept_msg[256];
} rfs;
int vref_rf_open(rfs *s, const char *host);
void vref_rf_close(rfs *s);
long vref_rf_loop(rfs *s, int op, int iters, int count, uint64_t *seq);
long vref_rf_empty(rfs *s, int iters);

#endif

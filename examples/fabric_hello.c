/* examples/fabric_hello.c: the smallest complete program on rdmaflow's
 * fabric API (rdmaflow/fabric.h), using only the public headers. One
 * process plays both sides over loopback: a target thread listens,
 * registers a region and accepts with the region's descriptor as the
 * accept's private data; the main thread connects, WRITEs a message into
 * the target's region, READs it back, runs a FETCH_AND_ADD on a counter
 * word there and SENDs "bye", which the target receives before it closes.
 * Every result is checked and printed; exit 0 when all match, 1 otherwise.
 *
 *   rf-example-fabric-hello [PROVIDER]     (default sock; RF_FABRIC is not
 *                                           read, the argument is)
 *
 * It is also what tests/install builds out of tree against an installed
 * librdmaflow (pkg-config and find_package(rdmaflow)). */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/fabric.h"
#include "rdmaflow/status.h"
#include "rdmaflow/version.h"

#define PROG       "rf-example-fabric-hello"
#define TIMEOUT_MS 10000
#define REGION     4096
#define COUNTER    512 /* offset of the 8-byte counter in the region */

static const char message[] = "hello from rdmaflow's fabric";

typedef struct target {
    rf_fabric *fabric;
    rf_listener *listener;
    unsigned char *region;
    rf_mr *mr;
    rf_cq *cq;
    int ok; /* 1 once "bye" arrived */
} target;

static int fail(const char *what, rf_status st)
{
    fprintf(stderr, PROG ": %s: %s (%s)\n", what, rf_status_string(st),
            rf_error_message());
    return 1;
}

/* One completion of cq, which must be RF_OK; 1 otherwise. */
static int wait_one(rf_cq *cq, const char *what)
{
    rf_completion c;
    int n = rf_cq_wait(cq, &c, 1, TIMEOUT_MS);
    if (n < 0)
        return fail(what, (rf_status)n);
    if (c.status != RF_OK)
        return fail(what, c.status);
    return 0;
}

/* The target: accepts one peer, then waits for its "bye". */
static void *target_main(void *arg)
{
    target *t = arg;
    rf_conn_req *req;
    rf_ep *ep;
    rf_status st = rf_listener_get_request(t->listener, TIMEOUT_MS, &req);
    if (st != RF_OK) {
        fail("target: rf_listener_get_request", st);
        return NULL;
    }
    rf_mr_desc desc;
    unsigned char packed[RF_MR_DESC_PACKED_SIZE];
    rf_mr_describe(t->mr, &desc);
    rf_mr_desc_pack(&desc, packed);
    char bye[16] = {0};
    rf_ep_attr ea = {.send_cq = t->cq};
    if ((st = rf_accept(req, &ea, packed, sizeof packed, &ep)) != RF_OK) {
        fail("target: rf_accept", st);
        return NULL;
    }
    /* "bye" lands in the region's tail, which the peer never writes */
    if ((st = rf_post_recv(ep, t->region + REGION - sizeof bye, sizeof bye,
                           t->mr, NULL)) != RF_OK)
        fail("target: rf_post_recv", st);
    else if (wait_one(t->cq, "target: receive") == 0 &&
             memcmp(t->region + REGION - sizeof bye, "bye", 4) == 0)
        t->ok = 1;
    rf_ep_close(ep);
    return NULL;
}

/* The initiator's work on a connected endpoint; 0 when every check holds. */
static int initiator(rf_ep *ep, rf_cq *cq, rf_mr *mr, unsigned char *buf,
                     const rf_mr_desc *d)
{
    rf_status st;
    memcpy(buf, message, sizeof message);
    if ((st = rf_write(ep, buf, sizeof message, mr, d->addr, d->rkey, NULL)))
        return fail("rf_write", st);
    if (wait_one(cq, "write"))
        return 1;
    unsigned char *back = buf + 1024;
    if ((st = rf_read(ep, back, sizeof message, mr, d->addr, d->rkey, NULL)))
        return fail("rf_read", st);
    if (wait_one(cq, "read"))
        return 1;
    if (memcmp(back, message, sizeof message) != 0) {
        fprintf(stderr, PROG ": read back '%.*s', wrote '%s'\n",
                (int)sizeof message, (const char *)back, message);
        return 1;
    }
    printf("wrote %zu B into the target's region and read them back: "
           "\"%s\"\n",
           sizeof message, (const char *)back);

    uint64_t *old = (uint64_t *)(buf + 2048);
    *old = 0;
    if ((st = rf_fetch_add(ep, old, mr, d->addr + COUNTER, d->rkey, 1, NULL)))
        return fail("rf_fetch_add", st);
    if (wait_one(cq, "fetch_add"))
        return 1;
    uint64_t *after = (uint64_t *)(buf + 2056);
    if ((st = rf_read(ep, after, 8, mr, d->addr + COUNTER, d->rkey, NULL)))
        return fail("rf_read (counter)", st);
    if (wait_one(cq, "read (counter)"))
        return 1;
    if (*old != 41 || *after != 42) {
        fprintf(stderr,
                PROG ": fetch_add on 41 returned %" PRIu64 " and left %" PRIu64
                     ", want 41 and 42\n",
                *old, *after);
        return 1;
    }
    printf("fetch_add(+1) on the counter: returned %" PRIu64 ", now %" PRIu64
           "\n",
           *old, *after);

    memcpy(buf + 3072, "bye", 4);
    if ((st = rf_send(ep, buf + 3072, 4, mr, NULL)))
        return fail("rf_send", st);
    return wait_one(cq, "send");
}

int main(int argc, char **argv)
{
    const char *provider = argc > 1 ? argv[1] : "sock";
    if (argc > 2 || provider[0] == '-') {
        if (argc == 2 && strcmp(provider, "--version") == 0) {
            printf(PROG " (rdmaflow) %s\n", rf_version());
            return 0;
        }
        fprintf(stderr, "usage: " PROG " [PROVIDER] (default sock)\n");
        return argc == 2 && strcmp(provider, "--help") == 0 ? 0 : 2;
    }
    int rc = 1;
    rf_status st;
    rf_fabric *f = NULL;
    rf_fabric_attr attr = {.bind_addr = "127.0.0.1"};
    if ((st = rf_fabric_open(provider, &attr, &f)) != RF_OK)
        return fail("rf_fabric_open", st);

    /* the target's side, set up before its thread starts */
    target t = {.fabric = f};
    unsigned char *buf = NULL;
    rf_mr *mr = NULL;
    rf_cq *cq = NULL;
    rf_ep *ep = NULL;
    pthread_t thread;
    int started = 0;
    t.region = aligned_alloc(4096, REGION);
    buf = aligned_alloc(4096, REGION);
    if (!t.region || !buf) {
        fprintf(stderr, PROG ": out of memory\n");
        goto out;
    }
    memset(t.region, 0, REGION);
    memset(buf, 0, REGION);
    uint64_t start = 41;
    memcpy(t.region + COUNTER, &start, sizeof start);
    if ((st = rf_mr_reg(f, t.region, REGION, RF_ACCESS_ALL, &t.mr)) ||
        (st = rf_cq_create(f, 16, &t.cq)) ||
        (st = rf_listen(f, "127.0.0.1", 0, &t.listener))) {
        fail("target set-up", st);
        goto out;
    }
    if (pthread_create(&thread, NULL, target_main, &t) != 0) {
        fprintf(stderr, PROG ": pthread_create failed\n");
        goto out;
    }
    started = 1;

    /* the initiator's side */
    if ((st = rf_mr_reg(f, buf, REGION, RF_ACCESS_LOCAL_WRITE, &mr)) ||
        (st = rf_cq_create(f, 16, &cq))) {
        fail("initiator set-up", st);
        goto out;
    }
    rf_ep_attr ea = {.send_cq = cq};
    uint16_t port = rf_listener_port(t.listener);
    if ((st = rf_connect(f, "127.0.0.1", port, &ea, NULL, 0, TIMEOUT_MS,
                         &ep)) != RF_OK) {
        fail("rf_connect", st);
        goto out;
    }
    size_t plen = 0;
    const void *priv = rf_ep_peer_private_data(ep, &plen);
    if (!priv || plen < RF_MR_DESC_PACKED_SIZE) {
        fprintf(stderr, PROG ": the accept carried %zu B, not a descriptor\n",
                plen);
        goto out;
    }
    rf_mr_desc d;
    rf_mr_desc_unpack(priv, &d);
    printf("provider %s: connected to 127.0.0.1:%u, target region %" PRIu64
           " B, rkey 0x%08x\n",
           rf_ep_provider(ep), (unsigned)port, d.len, d.rkey);
    rc = initiator(ep, cq, mr, buf, &d);

out:
    if (started)
        pthread_join(thread, NULL);
    if (rc == 0 && !t.ok) {
        fprintf(stderr, PROG ": the target did not receive \"bye\"\n");
        rc = 1;
    }
    if (ep)
        rf_ep_close(ep);
    if (t.listener)
        rf_listener_close(t.listener);
    if (cq)
        rf_cq_destroy(cq);
    if (t.cq)
        rf_cq_destroy(t.cq);
    if (mr)
        rf_mr_dereg(mr);
    if (t.mr)
        rf_mr_dereg(t.mr);
    rf_fabric_close(f);
    free(buf);
    free(t.region);
    printf("%s\n", rc == 0 ? "fabric_hello: ok" : "fabric_hello: FAILED");
    return rc;
}

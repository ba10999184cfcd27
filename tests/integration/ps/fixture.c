/* tests/integration/ps/fixture.c: fabric, ps helper, client and data
 * helpers of the ps integration tests (see fixture.h). */
#include "tests/integration/ps/fixture.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/common/net.h"

const char *pt_provider(void)
{
    const char *p = getenv("RF_FABRIC");
    return p && *p ? p : "sock";
}

const char *pt_host(void)
{
    const char *h = getenv("RF_TEST_HOST");
    return h && *h ? h : "127.0.0.1";
}

rf_fabric *pt_fabric(void)
{
    rf_fabric_attr attr = {.bind_addr = pt_host()};
    rf_fabric *f = NULL;
    CHECK_OK(rf_fabric_open(pt_provider(), &attr, &f));
    return f;
}

uint16_t pt_free_port(void)
{
    return rft_free_port(pt_host());
}

const char *pt_addr(uint16_t port)
{
    static char ring[16][300];
    static unsigned next;
    char *b = ring[next++ % 16];
    snprintf(b, 300, "%s:%u", pt_host(), port);
    return b;
}

typedef struct peer_probe {
    rf_fabric *f;
    uint16_t port;
} peer_probe;

static void *probe_connect(void *arg)
{
    peer_probe *p = arg;
    rf_cq *cq = NULL;
    CHECK_OK(rf_cq_create(p->f, 4, &cq));
    rf_ep_attr attr = {.send_cq = cq, .max_send_wr = 1, .max_recv_wr = 1};
    rf_ep *ep = NULL;
    rf_status st =
        rf_connect(p->f, pt_host(), p->port, &attr, NULL, 0, rft_ms(5000), &ep);
    CHECK(st == RF_ERR_UNAVAILABLE, "probe connection: %s, not rejected",
          rf_status_string(st));
    rf_cq_destroy(cq);
    return NULL;
}

const char *pt_peer_addr(void)
{
    static char addr[128];
    if (addr[0])
        return addr;
    peer_probe p = {.f = pt_fabric()};
    rf_listener *l = NULL;
    CHECK_OK(rf_listen(p.f, pt_host(), 0, &l));
    p.port = rf_listener_port(l);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, probe_connect, &p) == 0,
          "pthread_create failed");
    rf_conn_req *req = NULL;
    CHECK_OK(rf_listener_get_request(l, rft_ms(5000), &req));
    const char *peer = rf_conn_req_peer(req);
    const char *colon = strrchr(peer, ':');
    CHECK(colon && colon > peer && (size_t)(colon - peer) < sizeof addr,
          "peer '%s' is not shaped address:port", peer);
    memcpy(addr, peer, (size_t)(colon - peer));
    addr[colon - peer] = '\0';
    rf_reject(req, NULL, 0);
    pthread_join(t, NULL);
    rf_listener_close(l);
    rf_fabric_close(p.f);
    return addr;
}

bool pt_reads_need_target_cpu(void)
{
    const char *p = pt_provider();
    if (!strcmp(p, "sock"))
        return true;
    if (!strcmp(p, "verbs") || !strcmp(p, "shm"))
        return false;
    CHECK(false,
          "provider '%s': pt_reads_need_target_cpu does not know whether "
          "its one-sided reads need the target's CPU",
          p);
    return true;
}

void pt_spawn(rft_child *c, const char *name, const char *const *args)
{
    const char *helper = getenv("RF_PS_HELPER");
    rft_spawn(c, name, helper && *helper ? helper : "rf_ps_helper", args,
              RFT_STDIN_NULL);
}

void pt_ps_start(pt_ps *ps, int index, uint16_t port)
{
    char idx[16], prt[16], name[32];
    snprintf(idx, sizeof idx, "%d", index);
    snprintf(prt, sizeof prt, "%u", port);
    snprintf(name, sizeof name, "ps%d", index);
    const char *args[] = {"ps", "--index", idx, "--port", prt, NULL};
    pt_spawn(&ps->child, name, args);
    char rest[256];
    rft_expect(&ps->child, "READY ", rest, sizeof rest, rft_ms(15000));
    unsigned p = 0;
    unsigned long long inc = 0;
    CHECK(sscanf(rest, "%u %llx", &p, &inc) == 2, "bad READY line: %s", rest);
    ps->port = (uint16_t)p;
    ps->incarnation = inc;
}

/* ---- data ---- */

float pt_rand(uint64_t seed, uint64_t i)
{
    uint64_t z = seed * 0x9e3779b97f4a7c15ull + i + 1;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)((double)(z >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

void pt_fill(float *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = pt_rand(seed, i);
}

/* Every test buffer, freed at the end (after the clients are closed). */
static void **bufs;
static size_t nbufs, capbufs;

void pt_buf_release_all(void)
{
    for (size_t i = 0; i < nbufs; i++)
        free(bufs[i]);
    free(bufs);
    bufs = NULL;
    nbufs = capbufs = 0;
}

void pt_buf_alloc(rf_ps_client *c, pt_buf *b, size_t n)
{
    size_t bytes = (n ? n : 1) * sizeof(float);
    bytes = (bytes + 63) / 64 * 64;
    b->p = aligned_alloc(64, bytes);
    CHECK(b->p, "out of memory");
    memset(b->p, 0, bytes);
    if (nbufs == capbufs) {
        capbufs = capbufs ? 2 * capbufs : 64;
        bufs = realloc(bufs, capbufs * sizeof *bufs);
        CHECK(bufs, "out of memory");
    }
    bufs[nbufs++] = b->p;
    b->n = n;
    CHECK_OK(rf_ps_client_register(c, b->p, bytes, &b->mr));
}

rf_ps_client *pt_client(rf_fabric *f, const char *const *addrs, size_t n,
                        uint32_t id, bool chief)
{
    rf_ps_client_options o = {.client_id = id,
                              .is_chief = chief,
                              .connect_timeout_ms = rft_ms(20000),
                              .op_timeout_ms = rft_ms(20000),
                              .lock_timeout_ms = rft_ms(20000),
                              .lookup_timeout_ms = rft_ms(20000)};
    rf_ps_client *c = NULL;
    CHECK_OK(rf_ps_client_connect(f, addrs, n, &o, &c));
    return c;
}

rf_status pt_push(rf_ps_client *c, const rf_ps_xfer *grads, size_t n,
                  rf_ps_apply_mode mode, bool locking)
{
    if (mode == RF_PS_APPLY_PS)
        return rf_ps_push_inbox(c, grads, n);
    return locking ? rf_ps_update_rmw_locked(c, grads, n)
                   : rf_ps_update_rmw(c, grads, n);
}

rf_status pt_push_sparse(rf_ps_client *c, rf_ps_var *v, const int64_t *rows,
                         size_t n, const float *grad, rf_mr *mr,
                         rf_ps_apply_mode mode, bool locking)
{
    if (mode == RF_PS_APPLY_PS)
        return rf_ps_push_sparse_inbox(c, v, rows, n, grad, mr);
    return locking ? rf_ps_update_sparse_rmw_locked(c, v, rows, n, grad, mr)
                   : rf_ps_update_sparse_rmw(c, v, rows, n, grad, mr);
}

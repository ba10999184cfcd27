/* tests/fuzz/fuzz_sock_stream.c: libFuzzer target that feeds arbitrary bytes
 * to a live sock endpoint, as a hostile peer would after a valid handshake.
 * The endpoint sits on one end of a socketpair; the input is written to the
 * other end, then that end is closed. Valid request headers in the input get
 * their rkey/address steered onto two registered regions (so accesses
 * succeed as well as fail), and a few reads/writes/atomics are posted so
 * reply frames in the input can match. ASan/UBSan catch any memory error in
 * the receive path, the target-side execution or the error handling. */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fabric/sock/sock.h"

#define REGION  (64 * 1024)
#define RO_SIZE 4096
#define MAX_IN  (256 * 1024)

static rf_fabric *fab;
static rf_cq *cq;
static unsigned char *region, *ro, *loc;
static rf_mr *mr, *ro_mr, *loc_mr;

static void setup(void)
{
    setenv("RF_RNR_TIMEOUT_MS", "1", 1);
    setenv("RF_LOG_FILE", "/dev/null", 1);
    if (rf_fabric_open("sock", NULL, &fab) != RF_OK ||
        rf_cq_create(fab, 4096, &cq) != RF_OK)
        abort();
    region = aligned_alloc(4096, REGION);
    ro = aligned_alloc(4096, RO_SIZE);
    loc = aligned_alloc(4096, REGION);
    if (!region || !ro || !loc)
        abort();
    memset(region, 0, REGION);
    memset(ro, 0, RO_SIZE);
    memset(loc, 0, REGION);
    if (rf_mr_reg(fab, region, REGION, RF_ACCESS_ALL, &mr) != RF_OK ||
        rf_mr_reg(fab, ro, RO_SIZE, RF_ACCESS_REMOTE_READ, &ro_mr) != RF_OK ||
        rf_mr_reg(fab, loc, REGION, RF_ACCESS_ALL, &loc_mr) != RF_OK)
        abort();
}

/* Points valid request headers at the registered regions. */
static void steer(unsigned char *b, size_t n)
{
    size_t off = 0;
    while (n - off >= RF_SOCK_HDR_SIZE) {
        rf_sock_hdr h;
        if (rf_sock_hdr_decode(b + off, n - off, &h) != RF_SOCK_PARSE_OK)
            return;
        if (rf_sock_op_is_request(h.op) && h.op != RF_SOCK_SEND_REQ &&
            (h.key & 3) != 3) {
            const rf_mr *m = (h.key & 3) == 1 ? ro_mr : mr;
            uint64_t span = m->len + 16;
            h.key = m->rkey;
            h.addr = m->remote_addr + h.addr % span;
            if (h.op == RF_SOCK_READ_REQ)
                h.aux = (uint32_t)(h.aux % span);
            rf_sock_hdr_encode(&h, b + off);
        }
        off += RF_SOCK_HDR_SIZE;
        if (h.len > n - off)
            return;
        off += h.len;
    }
}

/* Writes what the endpoint accepts within a short time, discarding what it
 * sends back. */
static void feed(int fd, const unsigned char *b, size_t n)
{
    static unsigned char sink[64 * 1024];
    while (n > 0) {
        struct pollfd p = {.fd = fd, .events = POLLIN | POLLOUT};
        if (poll(&p, 1, 50) <= 0)
            return; /* endpoint stopped reading (RNR wait): give up */
        if (p.revents & POLLIN)
            while (recv(fd, sink, sizeof sink, MSG_DONTWAIT) > 0)
                ;
        if (p.revents & (POLLERR | POLLHUP))
            return;
        if (p.revents & POLLOUT) {
            ssize_t k = send(fd, b, n, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (k < 0 && errno != EAGAIN && errno != EINTR)
                return;
            if (k > 0) {
                b += k;
                n -= (size_t)k;
            }
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!fab)
        setup();
    if (size > MAX_IN)
        size = MAX_IN;
    static unsigned char buf[MAX_IN];
    size_t skip = size > 0 ? 1 : 0;
    unsigned mode = size > 0 ? data[0] : 0;
    memcpy(buf, data + skip, size - skip);
    size -= skip;
    steer(buf, size);

    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) <
        0)
        abort();
    rf_ep_attr at = {.send_cq = cq, .max_send_wr = 16, .max_recv_wr = 8};
    sock_ep *ep;
    if (sock_ep_create(SOCK_FAB(fab), sv[0], &at, NULL, 0, 8, 8, &ep) != RF_OK)
        abort();
    /* Receives for sends and write_imms in the input. */
    for (unsigned i = 0; i < (mode & 3); i++)
        rf_post_recv(&ep->base, loc + 32768 + 4096 * i, (size_t)16 << (4 * i),
                     loc_mr, NULL);
    /* Outstanding work, so reply frames in the input can match. */
    static const rf_op ops[] = {RF_OP_READ,     RF_OP_WRITE, RF_OP_FETCH_ADD,
                                RF_OP_CMP_SWAP, RF_OP_SEND,  RF_OP_WRITE_IMM};
    for (unsigned i = 0; i < ((mode >> 2) & 3); i++) {
        rf_op op = ops[((mode >> 4) + i) % 6];
        rf_wr w = {.op = op,
                   .local = loc + 64 * i,
                   .len = (op == RF_OP_FETCH_ADD || op == RF_OP_CMP_SWAP)
                              ? 8
                              : (size_t)16 << i,
                   .local_mr = loc_mr,
                   .remote_addr = 0x1000,
                   .rkey = 1};
        rf_post(&ep->base, &w, 1, NULL);
    }
    feed(sv[1], buf, size);
    close(sv[1]);
    for (int i = 0; i < 2000 && rf_ep_state(&ep->base) == RF_OK; i++)
        usleep(100);
    rf_ep_close(&ep->base);
    rf_completion c[64];
    while (rf_cq_poll(cq, c, 64) > 0)
        ;
    return 0;
}

/* bench/bench_proto.c: encoding and decoding of rf-bench's hello, welcome
 * and control messages (layouts in bench_proto.h). */
#include "bench_proto.h"

#include <string.h>

#define MAGIC_HELLO   0x31424652u /* "RFB1" */
#define MAGIC_WELCOME 0x32424652u /* "RFB2" */
#define MAGIC_MSG     0x33424652u /* "RFB3" */

static void put(unsigned char *p, uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

void bench_hello_pack(const bench_hello *h, unsigned char out[BENCH_HELLO_SIZE])
{
    memset(out, 0, BENCH_HELLO_SIZE);
    put(out, MAGIC_HELLO, 4);
    out[4] = BENCH_PROTO_VERSION;
    out[5] = h->test;
    put(out + 8, h->iters, 4);
    put(out + 12, h->tx_depth, 4);
    put(out + 16, h->max_size, 8);
    rf_mr_desc_pack(&h->region, out + 24);
}

int bench_hello_unpack(const void *in, size_t len, bench_hello *h)
{
    const unsigned char *p = in;
    if (!p || len < BENCH_HELLO_SIZE || get(p, 4) != MAGIC_HELLO ||
        p[4] != BENCH_PROTO_VERSION)
        return -1;
    h->test = p[5];
    h->iters = (uint32_t)get(p + 8, 4);
    h->tx_depth = (uint32_t)get(p + 12, 4);
    h->max_size = get(p + 16, 8);
    rf_mr_desc_unpack(p + 24, &h->region);
    return 0;
}

void bench_welcome_pack(const bench_welcome *w,
                        unsigned char out[BENCH_WELCOME_SIZE])
{
    memset(out, 0, BENCH_WELCOME_SIZE);
    put(out, MAGIC_WELCOME, 4);
    out[4] = BENCH_PROTO_VERSION;
    out[5] = w->status;
    rf_mr_desc_pack(&w->region, out + 8);
}

int bench_welcome_unpack(const void *in, size_t len, bench_welcome *w)
{
    const unsigned char *p = in;
    if (!p || len < BENCH_WELCOME_SIZE || get(p, 4) != MAGIC_WELCOME ||
        p[4] != BENCH_PROTO_VERSION)
        return -1;
    w->status = p[5];
    rf_mr_desc_unpack(p + 8, &w->region);
    return 0;
}

void bench_msg_pack(const bench_msg *m, unsigned char out[BENCH_MSG_SIZE])
{
    memset(out, 0, BENCH_MSG_SIZE);
    put(out, MAGIC_MSG, 4);
    out[4] = m->type;
    out[5] = m->status;
    put(out + 8, m->iters, 4);
    put(out + 16, m->size, 8);
    put(out + 24, m->value, 8);
}

int bench_msg_unpack(const void *in, size_t len, bench_msg *m)
{
    const unsigned char *p = in;
    if (!p || len < BENCH_MSG_SIZE || get(p, 4) != MAGIC_MSG || p[4] == 0 ||
        p[4] > BENCH_MSG_BYE)
        return -1;
    m->type = p[4];
    m->status = p[5];
    m->iters = (uint32_t)get(p + 8, 4);
    m->size = get(p + 16, 8);
    m->value = get(p + 24, 8);
    return 0;
}

const char *bench_msg_name(uint8_t type)
{
    static const char *const names[] = {"?",    "RUN",    "READY",
                                        "DONE", "RESULT", "BYE"};
    return type <= BENCH_MSG_BYE ? names[type] : "?";
}

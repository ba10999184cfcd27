/* bench/bench_proto.c: encoding and decoding of rf-bench's hello, welcome
 * and control messages (layouts in bench_proto.h). */
#include "bench_proto.h"

#include <string.h>

#include "rdmaflow/byteorder.h"

#define MAGIC_HELLO   0x31424652u /* "RFB1" */
#define MAGIC_WELCOME 0x32424652u /* "RFB2" */
#define MAGIC_MSG     0x33424652u /* "RFB3" */

void bench_hello_pack(const bench_hello *h, unsigned char out[BENCH_HELLO_SIZE])
{
    memset(out, 0, BENCH_HELLO_SIZE);
    rf_put_le32(out, MAGIC_HELLO);
    out[4] = BENCH_PROTO_VERSION;
    out[5] = h->test;
    rf_put_le32(out + 8, h->iters);
    rf_put_le32(out + 12, h->tx_depth);
    rf_put_le64(out + 16, h->max_size);
    rf_mr_desc_pack(&h->region, out + 24);
    rf_put_le16(out + 44, h->qps);
    rf_put_le16(out + 46, h->qp_index);
    rf_put_le32(out + 48, h->token);
}

int bench_hello_unpack(const void *in, size_t len, bench_hello *h)
{
    const unsigned char *p = in;
    if (!p || len < BENCH_HELLO_SIZE || rf_get_le32(p) != MAGIC_HELLO ||
        p[4] != BENCH_PROTO_VERSION)
        return -1;
    h->test = p[5];
    h->iters = rf_get_le32(p + 8);
    h->tx_depth = rf_get_le32(p + 12);
    h->max_size = rf_get_le64(p + 16);
    rf_mr_desc_unpack(p + 24, &h->region);
    h->qps = rf_get_le16(p + 44);
    h->qp_index = rf_get_le16(p + 46);
    h->token = rf_get_le32(p + 48);
    return 0;
}

void bench_welcome_pack(const bench_welcome *w,
                        unsigned char out[BENCH_WELCOME_SIZE])
{
    memset(out, 0, BENCH_WELCOME_SIZE);
    rf_put_le32(out, MAGIC_WELCOME);
    out[4] = BENCH_PROTO_VERSION;
    out[5] = w->status;
    rf_mr_desc_pack(&w->region, out + 8);
    rf_put_le32(out + 28, w->max_qps);
}

int bench_welcome_unpack(const void *in, size_t len, bench_welcome *w)
{
    const unsigned char *p = in;
    if (!p || len < BENCH_WELCOME_SIZE || rf_get_le32(p) != MAGIC_WELCOME ||
        p[4] != BENCH_PROTO_VERSION)
        return -1;
    w->status = p[5];
    rf_mr_desc_unpack(p + 8, &w->region);
    w->max_qps = rf_get_le32(p + 28);
    return 0;
}

void bench_msg_pack(const bench_msg *m, unsigned char out[BENCH_MSG_SIZE])
{
    memset(out, 0, BENCH_MSG_SIZE);
    rf_put_le32(out, MAGIC_MSG);
    out[4] = m->type;
    out[5] = m->status;
    rf_put_le32(out + 8, m->iters);
    rf_put_le64(out + 16, m->size);
    rf_put_le64(out + 24, m->value);
}

int bench_msg_unpack(const void *in, size_t len, bench_msg *m)
{
    const unsigned char *p = in;
    if (!p || len < BENCH_MSG_SIZE || rf_get_le32(p) != MAGIC_MSG ||
        p[4] == 0 || p[4] > BENCH_MSG_BYE)
        return -1;
    m->type = p[4];
    m->status = p[5];
    m->iters = rf_get_le32(p + 8);
    m->size = rf_get_le64(p + 16);
    m->value = rf_get_le64(p + 24);
    return 0;
}

const char *bench_msg_name(uint8_t type)
{
    static const char *const names[] = {"?",    "RUN",    "READY",
                                        "DONE", "RESULT", "BYE"};
    return type <= BENCH_MSG_BYE ? names[type] : "?";
}

/* fabric/sock/sock_frame.c: encoding, decoding and validation of the sock
 * provider's frame header and handshake (layout in sock_frame.h). Pure: no
 * I/O, no allocation, no global state, so it can be fuzzed directly. */
#include "fabric/sock/sock_frame.h"

#include <string.h>

#include "rdmaflow/byteorder.h"
#include "rdmaflow/status.h"

int rf_sock_op_is_request(uint8_t op)
{
    return op >= RF_SOCK_READ_REQ && op <= RF_SOCK_CSWAP_REQ;
}

int rf_sock_op_has_payload(uint8_t op)
{
    return op == RF_SOCK_WRITE_REQ || op == RF_SOCK_WRITE_IMM_REQ ||
           op == RF_SOCK_SEND_REQ || op == RF_SOCK_READ_RESP;
}

const char *rf_sock_op_name(uint8_t op)
{
    switch (op) {
    case RF_SOCK_READ_REQ:
        return "READ_REQ";
    case RF_SOCK_WRITE_REQ:
        return "WRITE_REQ";
    case RF_SOCK_WRITE_IMM_REQ:
        return "WRITE_IMM_REQ";
    case RF_SOCK_SEND_REQ:
        return "SEND_REQ";
    case RF_SOCK_FADD_REQ:
        return "FADD_REQ";
    case RF_SOCK_CSWAP_REQ:
        return "CSWAP_REQ";
    case RF_SOCK_READ_RESP:
        return "READ_RESP";
    case RF_SOCK_ACK:
        return "ACK";
    case RF_SOCK_ATOMIC_RESP:
        return "ATOMIC_RESP";
    case RF_SOCK_ERROR:
        return "ERROR";
    default:
        return "unknown";
    }
}

const char *rf_sock_parse_string(rf_sock_parse p)
{
    switch (p) {
    case RF_SOCK_PARSE_OK:
        return "ok";
    case RF_SOCK_PARSE_SHORT:
        return "truncated";
    case RF_SOCK_PARSE_MAGIC:
        return "bad magic";
    case RF_SOCK_PARSE_VERSION:
        return "unsupported protocol version";
    case RF_SOCK_PARSE_OPCODE:
        return "unknown opcode";
    case RF_SOCK_PARSE_LENGTH:
        return "length out of range";
    case RF_SOCK_PARSE_RESERVED:
        return "non-zero reserved field";
    case RF_SOCK_PARSE_STATUS:
        return "invalid status";
    }
    return "unknown parse error";
}

void rf_sock_hdr_encode(const rf_sock_hdr *h,
                        unsigned char out[RF_SOCK_HDR_SIZE])
{
    rf_put_le16(out, RF_SOCK_MAGIC);
    out[2] = RF_SOCK_VERSION;
    out[3] = h->op;
    rf_put_le32(out + 4, h->len);
    rf_put_le32(out + 8, h->key);
    rf_put_le32(out + 12, h->aux);
    rf_put_le64(out + 16, h->addr);
    rf_put_le64(out + 24, h->arg0);
    rf_put_le64(out + 32, h->arg1);
}

/* A status a peer may report: RF_OK or one of the RF_ERR_* codes. */
static int status_valid(int32_t s)
{
    return s == RF_OK || (s <= RF_ERR_INVALID_ARG && s >= RF_ERR_AUTH);
}

/* Which fields each opcode uses; the others must be zero. */
enum {
    F_KEY = 1 << 0,
    F_AUX = 1 << 1,
    F_ADDR = 1 << 2,
    F_ARG0 = 1 << 3,
    F_ARG1 = 1 << 4,
    F_LEN = 1 << 5,
    F_STATUS = 1 << 6, /* key holds a status */
};

static int op_fields(uint8_t op)
{
    switch (op) {
    case RF_SOCK_READ_REQ:
        return F_KEY | F_AUX | F_ADDR;
    case RF_SOCK_WRITE_REQ:
        return F_KEY | F_ADDR | F_LEN;
    case RF_SOCK_WRITE_IMM_REQ:
        return F_KEY | F_AUX | F_ADDR | F_LEN;
    case RF_SOCK_SEND_REQ:
        return F_LEN;
    case RF_SOCK_FADD_REQ:
        return F_KEY | F_ADDR | F_ARG0;
    case RF_SOCK_CSWAP_REQ:
        return F_KEY | F_ADDR | F_ARG0 | F_ARG1;
    case RF_SOCK_READ_RESP:
        return F_STATUS | F_LEN;
    case RF_SOCK_ACK:
        return F_STATUS;
    case RF_SOCK_ATOMIC_RESP:
        return F_STATUS | F_ADDR;
    case RF_SOCK_ERROR:
        return F_STATUS;
    default:
        return -1;
    }
}

rf_sock_parse rf_sock_hdr_decode(const unsigned char *in, size_t avail,
                                 rf_sock_hdr *out)
{
    memset(out, 0, sizeof *out);
    if (!in || avail < RF_SOCK_HDR_SIZE)
        return RF_SOCK_PARSE_SHORT;
    if (rf_get_le16(in) != RF_SOCK_MAGIC)
        return RF_SOCK_PARSE_MAGIC;
    if (in[2] != RF_SOCK_VERSION)
        return RF_SOCK_PARSE_VERSION;
    out->op = in[3];
    out->len = rf_get_le32(in + 4);
    out->key = rf_get_le32(in + 8);
    out->aux = rf_get_le32(in + 12);
    out->addr = rf_get_le64(in + 16);
    out->arg0 = rf_get_le64(in + 24);
    out->arg1 = rf_get_le64(in + 32);

    int f = op_fields(out->op);
    if (f < 0)
        return RF_SOCK_PARSE_OPCODE;
    if (!(f & F_LEN) && out->len != 0)
        return RF_SOCK_PARSE_LENGTH;
    if ((!(f & (F_KEY | F_STATUS)) && out->key) || (!(f & F_AUX) && out->aux) ||
        (!(f & F_ADDR) && out->addr) || (!(f & F_ARG0) && out->arg0) ||
        (!(f & F_ARG1) && out->arg1))
        return RF_SOCK_PARSE_RESERVED;
    if (f & F_STATUS) {
        int32_t s = rf_sock_hdr_status(out);
        if (!status_valid(s))
            return RF_SOCK_PARSE_STATUS;
        if (out->op == RF_SOCK_ERROR && s == RF_OK)
            return RF_SOCK_PARSE_STATUS;
        /* A failed read carries no data, a failed atomic no value. */
        if (s != RF_OK && (out->len != 0 || out->addr != 0))
            return RF_SOCK_PARSE_LENGTH;
    }
    return RF_SOCK_PARSE_OK;
}

void rf_sock_hs_encode(const rf_sock_hs *hs, unsigned char out[RF_SOCK_HS_SIZE])
{
    size_t n = hs->priv_len <= RF_SOCK_HS_PRIV ? hs->priv_len : 0;
    memset(out, 0, RF_SOCK_HS_SIZE);
    rf_put_le32(out, RF_SOCK_HS_MAGIC);
    out[4] = RF_SOCK_HS_VERSION;
    out[5] = hs->type;
    out[6] = (unsigned char)n;
    rf_put_le32(out + 8, hs->max_send_wr);
    rf_put_le32(out + 12, hs->serve_max);
    if (n)
        memcpy(out + 16, hs->priv, n);
}

rf_sock_parse rf_sock_hs_decode(const unsigned char *in, size_t avail,
                                rf_sock_hs *out)
{
    memset(out, 0, sizeof *out);
    if (!in || avail < RF_SOCK_HS_SIZE)
        return RF_SOCK_PARSE_SHORT;
    if (rf_get_le32(in) != RF_SOCK_HS_MAGIC)
        return RF_SOCK_PARSE_MAGIC;
    out->version = in[4];
    if (in[4] != RF_SOCK_HS_VERSION)
        return RF_SOCK_PARSE_VERSION;
    out->type = in[5];
    if (out->type < RF_SOCK_HS_CONNECT || out->type > RF_SOCK_HS_REJECT)
        return RF_SOCK_PARSE_OPCODE;
    if (in[6] > RF_SOCK_HS_PRIV)
        return RF_SOCK_PARSE_LENGTH;
    out->priv_len = in[6];
    if (in[7] != 0)
        return RF_SOCK_PARSE_RESERVED;
    for (size_t i = 16 + out->priv_len; i < RF_SOCK_HS_SIZE; i++)
        if (in[i] != 0)
            return RF_SOCK_PARSE_RESERVED;
    out->max_send_wr = rf_get_le32(in + 8);
    out->serve_max = rf_get_le32(in + 12);
    if (out->type == RF_SOCK_HS_REJECT) {
        if (out->max_send_wr != 0 || out->serve_max != 0)
            return RF_SOCK_PARSE_RESERVED;
    } else if (out->max_send_wr == 0 || out->max_send_wr > RF_SOCK_MAX_QUEUE ||
               out->serve_max == 0 || out->serve_max > RF_SOCK_MAX_QUEUE) {
        return RF_SOCK_PARSE_LENGTH;
    }
    memcpy(out->priv, in + 16, out->priv_len);
    return RF_SOCK_PARSE_OK;
}

int rf_sock_access_ok(uint64_t base, uint64_t size, uint32_t access,
                      uint64_t addr, uint64_t len, uint32_t need)
{
    if ((access & need) != need)
        return 0;
    return addr >= base && len <= size && addr - base <= size - len;
}

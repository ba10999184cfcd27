/* ps/proto_codec.c: pure encoders and strict decoders of the ps
 * control-plane messages (layouts in proto.h; the field order is the order
 * of the put/get calls below). No I/O and no allocation: the fuzzer
 * (tests/fuzz/fuzz_ps_proto.c) drives the decoders directly. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "ps/proto.h"
#include "ps/ps_layout.h"
#include "rdmaflow/byteorder.h"
#include "rdmaflow/status.h"

/* ---- cursors ------------------------------------------------------------ */

typedef struct wcur {
    unsigned char *p;
    size_t cap, len;
    bool full;
} wcur;

static void w_bytes(wcur *w, const void *src, size_t n)
{
    if (w->full || n > w->cap - w->len) {
        w->full = true;
        return;
    }
    memcpy(w->p + w->len, src, n);
    w->len += n;
}
static void w_u8(wcur *w, uint8_t v)
{
    w_bytes(w, &v, 1);
}
static void w_u16(wcur *w, uint16_t v)
{
    unsigned char b[2];
    rf_put_le16(b, v);
    w_bytes(w, b, 2);
}
static void w_u32(wcur *w, uint32_t v)
{
    unsigned char b[4];
    rf_put_le32(b, v);
    w_bytes(w, b, 4);
}
static void w_u64(wcur *w, uint64_t v)
{
    unsigned char b[8];
    rf_put_le64(b, v);
    w_bytes(w, b, 8);
}
static void w_f32(wcur *w, float f)
{
    uint32_t v;
    memcpy(&v, &f, 4);
    w_u32(w, v);
}

typedef struct rcur {
    const unsigned char *p;
    size_t len, off;
    const char *bad; /* first field that did not fit */
} rcur;

static bool r_take(rcur *r, size_t n, const char *what,
                   const unsigned char **at)
{
    if (r->bad)
        return false;
    if (n > r->len - r->off) {
        r->bad = what;
        return false;
    }
    *at = r->p + r->off;
    r->off += n;
    return true;
}
static uint8_t r_u8(rcur *r, const char *what)
{
    const unsigned char *p;
    return r_take(r, 1, what, &p) ? p[0] : 0;
}
static uint16_t r_u16(rcur *r, const char *what)
{
    const unsigned char *p;
    return r_take(r, 2, what, &p) ? rf_get_le16(p) : 0;
}
static uint32_t r_u32(rcur *r, const char *what)
{
    const unsigned char *p;
    return r_take(r, 4, what, &p) ? rf_get_le32(p) : 0;
}
static uint64_t r_u64(rcur *r, const char *what)
{
    const unsigned char *p;
    return r_take(r, 8, what, &p) ? rf_get_le64(p) : 0;
}
static float r_f32(rcur *r, const char *what)
{
    uint32_t v = r_u32(r, what);
    float f;
    memcpy(&f, &v, 4);
    return f;
}

static rf_status truncated(const rcur *r, const char *msg)
{
    return rf_error_set(RF_ERR_CORRUPT, "%s: truncated at %s (%zu bytes)", msg,
                        r->bad, r->len);
}

#define CORRUPT(...) rf_error_set(RF_ERR_CORRUPT, __VA_ARGS__)

/* ---- header ------------------------------------------------------------- */

static const char *const type_names[PS_MSG_TYPE_END] = {
    [PS_MSG_HELLO] = "HELLO",
    [PS_MSG_HELLO_REPLY] = "HELLO_REPLY",
    [PS_MSG_REGIONS_REQ] = "REGIONS_REQ",
    [PS_MSG_REGIONS_REPLY] = "REGIONS_REPLY",
    [PS_MSG_DIR_REQ] = "DIR_REQ",
    [PS_MSG_DIR_REPLY] = "DIR_REPLY",
    [PS_MSG_CREATE_REQ] = "CREATE_REQ",
    [PS_MSG_CREATE_REPLY] = "CREATE_REPLY",
    [PS_MSG_SHUTDOWN_REQ] = "SHUTDOWN_REQ",
    [PS_MSG_SHUTDOWN_REPLY] = "SHUTDOWN_REPLY",
    [PS_MSG_ERROR_REPLY] = "ERROR_REPLY",
    [PS_MSG_AUTH_REQ] = "AUTH_REQ",
    [PS_MSG_AUTH_CHALLENGE] = "AUTH_CHALLENGE",
    [PS_MSG_AUTH_PROOF] = "AUTH_PROOF",
    [PS_MSG_AUTH_OK] = "AUTH_OK",
    [PS_MSG_LEAVE_REQ] = "LEAVE_REQ",
    [PS_MSG_LEAVE_REPLY] = "LEAVE_REPLY",
    [PS_MSG_SHARD_REQ] = "SHARD_REQ",
    [PS_MSG_SHARD_REPLY] = "SHARD_REPLY",
    [PS_MSG_LEDGER_REQ] = "LEDGER_REQ",
    [PS_MSG_LEDGER_REPLY] = "LEDGER_REPLY",
};

const char *ps_msg_type_name(uint32_t type)
{
    if (type == 0 || type >= PS_MSG_TYPE_END || !type_names[type])
        return "unknown";
    return type_names[type];
}

static void w_begin(wcur *w, void *buf, size_t cap, uint16_t type,
                    uint32_t req_id)
{
    *w = (wcur){.p = buf, .cap = cap};
    w_u32(w, PS_PROTO_MAGIC);
    w_u16(w, PS_PROTO_VERSION);
    w_u16(w, type);
    w_u32(w, 0); /* length, patched by w_end */
    w_u32(w, req_id);
}

static rf_status w_end(wcur *w, size_t *len)
{
    if (w->full || w->len > PS_MSG_MAX)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "ps message does not fit in %zu bytes",
                            w->cap < PS_MSG_MAX ? w->cap : (size_t)PS_MSG_MAX);
    rf_put_le32(w->p + 8, (uint32_t)(w->len - PS_MSG_HDR_SIZE));
    *len = w->len;
    return RF_OK;
}

rf_status ps_dec_hdr(const void *buf, size_t len, ps_msg_hdr *h)
{
    const unsigned char *p = buf;
    if (len < PS_MSG_HDR_SIZE)
        return CORRUPT("ps message of %zu bytes is shorter than its "
                       "%u-byte header",
                       len, PS_MSG_HDR_SIZE);
    if (len > PS_MSG_MAX)
        return CORRUPT("ps message of %zu bytes exceeds %u", len, PS_MSG_MAX);
    uint32_t magic = rf_get_le32(p);
    if (magic != PS_PROTO_MAGIC)
        return CORRUPT("ps message: bad magic 0x%08x", magic);
    uint16_t version = rf_get_le16(p + 4);
    if (version != PS_PROTO_VERSION)
        return CORRUPT("ps message: protocol version %u, expected %u", version,
                       PS_PROTO_VERSION);
    h->type = rf_get_le16(p + 6);
    if (h->type == 0 || h->type >= PS_MSG_TYPE_END || !type_names[h->type])
        return CORRUPT("ps message: unknown type %u", h->type);
    h->len = rf_get_le32(p + 8);
    if ((uint64_t)h->len + PS_MSG_HDR_SIZE != len)
        return CORRUPT("ps %s: payload length %u but %zu bytes received",
                       ps_msg_type_name(h->type), h->len,
                       len - PS_MSG_HDR_SIZE);
    h->req_id = rf_get_le32(p + 12);
    return RF_OK;
}

/* Checks the header again and positions a cursor on the payload. */
static rf_status r_begin(rcur *r, const void *buf, size_t len, uint16_t type)
{
    ps_msg_hdr h = {0};
    rf_status st = ps_dec_hdr(buf, len, &h);
    if (st != RF_OK)
        return st;
    if (h.type != type)
        return CORRUPT("ps message: got %s, expected %s",
                       ps_msg_type_name(h.type), ps_msg_type_name(type));
    *r = (rcur){.p = buf, .len = len, .off = PS_MSG_HDR_SIZE};
    return RF_OK;
}

static rf_status r_end(const rcur *r, uint16_t type)
{
    if (r->bad)
        return truncated(r, ps_msg_type_name(type));
    if (r->off != r->len)
        return CORRUPT("ps %s: %zu trailing bytes", ps_msg_type_name(type),
                       r->len - r->off);
    return RF_OK;
}

/* ---- connection private data -------------------------------------------- */

size_t ps_conn_hello_size(const ps_conn_hello *h)
{
    return h->flags & PS_CONN_FLAG_TOKEN ? PS_CONN_HELLO_MAX
                                         : PS_CONN_HELLO_SIZE;
}

void ps_conn_hello_encode(const ps_conn_hello *h, unsigned char *out)
{
    rf_put_le32(out, PS_PROTO_MAGIC);
    rf_put_le16(out + 4, PS_PROTO_VERSION);
    rf_put_le16(out + 6, 0);
    rf_put_le32(out + 8, h->client_id);
    rf_put_le32(out + 12, h->flags);
    if (h->flags & PS_CONN_FLAG_TOKEN)
        memcpy(out + PS_CONN_HELLO_SIZE, h->token, PS_TOKEN_LEN);
}

static rf_status check_conn_magic(const unsigned char *p, size_t len,
                                  size_t want, const char *what)
{
    if (len < 8 || rf_get_le32(p) != PS_PROTO_MAGIC)
        return CORRUPT("%s: not an rdmaflow ps peer (%zu bytes of private "
                       "data without the RFPS magic)",
                       what, len);
    uint16_t version = rf_get_le16(p + 4);
    if (version != PS_PROTO_VERSION)
        return rf_error_set(RF_ERR_UNSUPPORTED,
                            "%s: peer speaks ps protocol version %u, this "
                            "side version %u",
                            what, version, PS_PROTO_VERSION);
    if (len != want || rf_get_le16(p + 6) != 0)
        return CORRUPT("%s: %zu bytes of private data, expected %zu", what, len,
                       want);
    return RF_OK;
}

rf_status ps_conn_hello_decode(const void *data, size_t len, ps_conn_hello *h)
{
    const unsigned char *p = data;
    /* the flags say the length: read them once the magic and version are
     * known to be ours */
    uint32_t flags = len >= PS_CONN_HELLO_SIZE ? rf_get_le32(p + 12) : 0;
    size_t want =
        flags & PS_CONN_FLAG_TOKEN ? PS_CONN_HELLO_MAX : PS_CONN_HELLO_SIZE;
    rf_status st = check_conn_magic(p, len, want, "ps hello");
    if (st != RF_OK)
        return st;
    memset(h, 0, sizeof *h);
    h->client_id = rf_get_le32(p + 8);
    h->flags = flags;
    if (h->flags &
        ~(PS_CONN_FLAG_CHIEF | PS_CONN_FLAG_AUTH | PS_CONN_FLAG_TOKEN))
        return CORRUPT("ps hello: unknown flags 0x%x", h->flags);
    if (h->flags & PS_CONN_FLAG_TOKEN)
        memcpy(h->token, p + PS_CONN_HELLO_SIZE, PS_TOKEN_LEN);
    return RF_OK;
}

void ps_conn_welcome_encode(const ps_conn_welcome *w,
                            unsigned char out[PS_CONN_WELCOME_SIZE])
{
    rf_put_le32(out, PS_PROTO_MAGIC);
    rf_put_le16(out + 4, PS_PROTO_VERSION);
    rf_put_le16(out + 6, 0);
    rf_put_le32(out + 8, (uint32_t)w->ps_index);
    rf_put_le64(out + 12, w->incarnation);
}

rf_status ps_conn_welcome_decode(const void *data, size_t len,
                                 ps_conn_welcome *w)
{
    const unsigned char *p = data;
    rf_status st = check_conn_magic(p, len, PS_CONN_WELCOME_SIZE, "ps welcome");
    if (st != RF_OK)
        return st;
    w->ps_index = (int32_t)rf_get_le32(p + 8);
    w->incarnation = rf_get_le64(p + 12);
    if (w->ps_index < 0 || w->incarnation == 0)
        return CORRUPT("ps welcome: ps index %d, incarnation 0x%llx",
                       (int)w->ps_index, (unsigned long long)w->incarnation);
    return RF_OK;
}

/* ---- memory descriptors and locations ------------------------------------ */

static void w_desc(wcur *w, const rf_mr_desc *d)
{
    w_u64(w, d->addr);
    w_u64(w, d->len);
    w_u32(w, d->rkey);
}

static rf_status r_desc(rcur *r, rf_mr_desc *d, const char *what)
{
    d->addr = r_u64(r, what);
    d->len = r_u64(r, what);
    d->rkey = r_u32(r, what);
    if (r->bad)
        return RF_OK; /* reported by r_end */
    if (d->len == 0 || d->addr + d->len < d->addr)
        return CORRUPT("ps message: %s: bad region [0x%llx, +%llu)", what,
                       (unsigned long long)d->addr, (unsigned long long)d->len);
    return RF_OK;
}

/* ---- HELLO --------------------------------------------------------------- */

#define MAX_DEPTH 4096u

rf_status ps_enc_hello(void *buf, size_t cap, uint32_t req_id,
                       const ps_hello *m, size_t *len)
{
    wcur w;
    w_begin(&w, buf, cap, PS_MSG_HELLO, req_id);
    w_u32(&w, m->client_id);
    w_u32(&w, m->flags);
    w_u32(&w, m->recv_depth);
    w_u32(&w, m->ring_slots);
    w_desc(&w, &m->ring);
    return w_end(&w, len);
}

rf_status ps_dec_hello(const void *buf, size_t len, ps_hello *m)
{
    rcur r = {0};
    rf_status st = r_begin(&r, buf, len, PS_MSG_HELLO);
    if (st != RF_OK)
        return st;
    m->client_id = r_u32(&r, "client_id");
    m->flags = r_u32(&r, "flags");
    m->recv_depth = r_u32(&r, "recv_depth");
    m->ring_slots = r_u32(&r, "ring_slots");
    if ((st = r_desc(&r, &m->ring, "ack ring")) != RF_OK)
        return st;
    if ((st = r_end(&r, PS_MSG_HELLO)) != RF_OK)
        return st;
    if (m->flags & ~PS_CONN_FLAG_CHIEF)
        return CORRUPT("ps HELLO: unknown flags 0x%x", m->flags);
    if (m->recv_depth == 0 || m->recv_depth > MAX_DEPTH)
        return CORRUPT("ps HELLO: recv_depth %u not in [1, %u]", m->recv_depth,
                       MAX_DEPTH);
    if (m->ring_slots < m->recv_depth || m->ring_slots > 65536u)
        return CORRUPT("ps HELLO: %u ack ring slots for %u receives",
                       m->ring_slots, m->recv_depth);
    if (m->ring.addr % 8 || m->ring.len < (uint64_t)m->ring_slots * 8)
        return CORRUPT("ps HELLO: ack ring at 0x%llx of %llu bytes cannot "
                       "hold %u aligned words",
                       (unsigned long long)m->ring.addr,
                       (unsigned long long)m->ring.len, m->ring_slots);
    return RF_OK;
}

rf_status ps_enc_hello_reply(void *buf, size_t cap, uint32_t req_id,
                             const ps_hello_reply *m, size_t *len)
{
    wcur w;
    w_begin(&w, buf, cap, PS_MSG_HELLO_REPLY, req_id);
    w_u32(&w, (uint32_t)m->ps_index);
    w_u64(&w, m->incarnation);
    w_u32(&w, m->recv_depth);
    w_u32(&w, m->num_regions);
    w_u32(&w, m->num_shards);
    w_u32(&w, m->globals.region);
    w_u64(&w, m->globals.offset);
    return w_end(&w, len);
}

rf_status ps_dec_hello_reply(const void *buf, size_t len, ps_hello_reply *m)
{
    rcur r = {0};
    rf_status st = r_begin(&r, buf, len, PS_MSG_HELLO_REPLY);
    if (st != RF_OK)
        return st;
    m->ps_index = (int32_t)r_u32(&r, "ps_index");
    m->incarnation = r_u64(&r, "incarnation");
    m->recv_depth = r_u32(&r, "recv_depth");
    m->num_regions = r_u32(&r, "num_regions");
    m->num_shards = r_u32(&r, "num_shards");
    m->globals.region = r_u32(&r, "globals.region");
    m->globals.offset = r_u64(&r, "globals.offset");
    if ((st = r_end(&r, PS_MSG_HELLO_REPLY)) != RF_OK)
        return st;
    if (m->ps_index < 0 || m->incarnation == 0)
        return CORRUPT("ps HELLO_REPLY: ps index %d, incarnation 0x%llx",
                       (int)m->ps_index, (unsigned long long)m->incarnation);
    if (m->recv_depth == 0 || m->recv_depth > MAX_DEPTH)
        return CORRUPT("ps HELLO_REPLY: recv_depth %u not in [1, %u]",
                       m->recv_depth, MAX_DEPTH);
    if (m->num_regions == 0 || m->num_regions > PS_MAX_REGIONS ||
        m->num_shards > PS_MAX_SHARDS)
        return CORRUPT("ps HELLO_REPLY: %u regions (1..%u allowed), %u shards "
                       "(at most %u)",
                       m->num_regions, PS_MAX_REGIONS, m->num_shards,
                       PS_MAX_SHARDS);
    if (m->globals.region >= m->num_regions || m->globals.offset % 64)
        return CORRUPT("ps HELLO_REPLY: globals at region %u offset %llu",
                       m->globals.region,
                       (unsigned long long)m->globals.offset);
    return RF_OK;
}

/* ---- REGIONS_REQ / DIR_REQ ------------------------------------------------
 */

rf_status ps_enc_range_req(void *buf, size_t cap, uint16_t type,
                           uint32_t req_id, const ps_range_req *m, size_t *len)
{
    wcur w;
    w_begin(&w, buf, cap, type, req_id);
    w_u32(&w, m->start);
    return w_end(&w, len);
}

rf_status ps_dec_range_req(const void *buf, size_t len, uint16_t type,
                           ps_range_req *m)
{
    if (type != PS_MSG_REGIONS_REQ && type != PS_MSG_DIR_REQ)
        return CORRUPT("ps message: %s is not a range request",
                       ps_msg_type_name(type));
    rcur r = {0};
    rf_status st = r_begin(&r, buf, len, type);
    if (st != RF_OK)
        return st;
    m->start = r_u32(&r, "start");
    return r_end(&r, type);
}

/* ---- REGIONS_REPLY --------------------------------------------------------
 */

static rf_status check_range(const char *what, uint32_t total, uint32_t start,
                             uint32_t count, uint32_t per_msg, uint32_t max)
{
    if (total > max || start > total || count > per_msg ||
        count > total - start || (count == 0 && start != total))
        return CORRUPT("ps %s: entries [%u, +%u) of %u (at most %u per "
                       "message, %u in all)",
                       what, start, count, total, per_msg, max);
    return RF_OK;
}

rf_status ps_enc_regions_reply(void *buf, size_t cap, uint32_t req_id,
                               const ps_regions_reply *m, size_t *len)
{
    if (m->count > PS_REGIONS_PER_MSG)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "%u regions in one reply, above the limit of %u",
                            m->count, (unsigned)PS_REGIONS_PER_MSG);
    wcur w;
    w_begin(&w, buf, cap, PS_MSG_REGIONS_REPLY, req_id);
    w_u32(&w, m->total);
    w_u32(&w, m->start);
    w_u32(&w, m->count);
    for (uint32_t i = 0; i < m->count; i++)
        w_desc(&w, &m->regions[i]);
    return w_end(&w, len);
}

rf_status ps_dec_regions_reply(const void *buf, size_t len, ps_regions_reply *m)
{
    rcur r = {0};
    rf_status st = r_begin(&r, buf, len, PS_MSG_REGIONS_REPLY);
    if (st != RF_OK)
        return st;
    m->total = r_u32(&r, "total");
    m->start = r_u32(&r, "start");
    m->count = r_u32(&r, "count");
    if (r.bad)
        return truncated(&r, "ps REGIONS_REPLY");
    st = check_range("REGIONS_REPLY", m->total, m->start, m->count,
                     PS_REGIONS_PER_MSG, PS_MAX_REGIONS);
    if (st != RF_OK)
        return st;
    for (uint32_t i = 0; i < m->count; i++)
        if ((st = r_desc(&r, &m->regions[i], "region")) != RF_OK)
            return st;
    return r_end(&r, PS_MSG_REGIONS_REPLY);
}

/* ---- shard spec ------------------------------------------------------------
 */

rf_status ps_spec_check(const ps_spec *s)
{
    size_t n = strnlen(s->name, sizeof s->name);
    if (n == 0 || n > RF_PS_MAX_NAME)
        return CORRUPT("ps shard: name of %zu bytes (1..%d allowed)", n,
                       RF_PS_MAX_NAME);
    if (rf_dtype_size(s->dtype) == 0)
        return CORRUPT("ps shard '%s': unknown dtype %d", s->name,
                       (int)s->dtype);
    if (s->shape.rank < 0 || s->shape.rank > RF_MAX_RANK)
        return CORRUPT("ps shard '%s': rank %d (0..%d allowed)", s->name,
                       s->shape.rank, RF_MAX_RANK);
    int64_t numel = ps_shape_numel(&s->shape);
    if (numel < 0)
        return CORRUPT("ps shard '%s': shape has a negative dimension or "
                       "more than %lld elements",
                       s->name, (long long)INT64_MAX);
    if ((uint64_t)numel * rf_dtype_size(s->dtype) > PS_MAX_SHARD_BYTES)
        return CORRUPT("ps shard '%s': larger than %llu bytes", s->name,
                       (unsigned long long)PS_MAX_SHARD_BYTES);
    if (s->trainable) {
        if (s->dtype != RF_F32)
            return CORRUPT("ps shard '%s': trainable but %s (optimizers "
                           "update float32 only)",
                           s->name, rf_dtype_name(s->dtype));
        if (rf_optim_num_slots(s->optim.kind, s->optim.centered) == UINT_MAX)
            return CORRUPT("ps shard '%s': unknown optimizer kind %d", s->name,
                           (int)s->optim.kind);
    }
    bool async = s->sync_n == 0 && s->sync_m == 0;
    if (!async && (!s->trainable || s->sync_n < 1 || s->sync_n > s->sync_m ||
                   s->sync_m > PS_SYNC_MAX_REPLICAS))
        return CORRUPT("ps shard '%s': sync replicas %u of %u%s (1 <= "
                       "replicas_to_aggregate <= total_num_replicas <= %u, "
                       "or both 0)",
                       s->name, s->sync_n, s->sync_m,
                       s->trainable ? "" : " on a shard that is not trainable",
                       PS_SYNC_MAX_REPLICAS);
    if (s->max_push_rows) {
        uint64_t d0 = s->shape.rank >= 1 ? (uint64_t)s->shape.dims[0] : 0;
        if (!s->trainable || s->shape.rank < 1 || d0 == 0 ||
            (uint64_t)numel / d0 == 0 || s->max_push_rows > PS_MAX_PUSH_ROWS)
            return CORRUPT("ps shard '%s': an embedding table (max_push_rows "
                           "%u, at most %u) must be trainable, of rank "
                           ">= 1 with rows of >= 1 element",
                           s->name, s->max_push_rows, PS_MAX_PUSH_ROWS);
    }
    return RF_OK;
}

/* The optimizer's hyper-parameters in a shard spec, in this order:
 * learning_rate, momentum, initial_accumulator_value, beta1, beta2, epsilon,
 * decay, then (since version 3) learning_rate_power and the l1, l2 and l2
 * shrinkage regularization strengths. */
#define PS_SPEC_OPTIM_FLOATS 11

static void w_spec(wcur *w, const ps_spec *s)
{
    size_t n = strnlen(s->name, sizeof s->name);
    w_u16(w, (uint16_t)n);
    w_bytes(w, s->name, n);
    w_u32(w, s->part);
    w_u8(w, (uint8_t)s->dtype);
    w_u8(w, (uint8_t)s->shape.rank);
    w_u8(w, s->trainable ? 1 : 0);
    w_u8(w, 0);
    for (int i = 0; i < s->shape.rank && i < RF_MAX_RANK; i++)
        w_u64(w, (uint64_t)s->shape.dims[i]);
    const rf_optim_config *o = &s->optim;
    if (!s->trainable) {
        unsigned char zero[4 + 4 * PS_SPEC_OPTIM_FLOATS] = {0};
        w_bytes(w, zero, sizeof zero);
    } else {
        w_u8(w, (uint8_t)o->kind);
        w_u8(w, o->use_nesterov ? 1 : 0);
        w_u8(w, o->centered ? 1 : 0);
        w_u8(w, 0);
        w_f32(w, o->learning_rate);
        w_f32(w, o->momentum);
        w_f32(w, o->initial_accumulator_value);
        w_f32(w, o->beta1);
        w_f32(w, o->beta2);
        w_f32(w, o->epsilon);
        w_f32(w, o->decay);
        /* version 3: FTRL's */
        w_f32(w, o->learning_rate_power);
        w_f32(w, o->l1_regularization_strength);
        w_f32(w, o->l2_regularization_strength);
        w_f32(w, o->l2_shrinkage_regularization_strength);
    }
    w_u32(w, s->sync_n);
    w_u32(w, s->sync_m);
    w_u32(w, s->max_push_rows); /* version 4 */
}

static rf_status r_spec(rcur *r, ps_spec *s)
{
    memset(s, 0, sizeof *s);
    uint16_t n = r_u16(r, "name length");
    const unsigned char *name;
    if (r->bad)
        return RF_OK;
    if (n == 0 || n > RF_PS_MAX_NAME)
        return CORRUPT("ps shard: name of %u bytes (1..%d allowed)", n,
                       RF_PS_MAX_NAME);
    if (!r_take(r, n, "name", &name))
        return RF_OK;
    if (memchr(name, 0, n))
        return CORRUPT("ps shard: name contains a NUL byte");
    memcpy(s->name, name, n);
    s->part = r_u32(r, "part");
    uint8_t dtype = r_u8(r, "dtype");
    uint8_t rank = r_u8(r, "rank");
    uint8_t trainable = r_u8(r, "trainable");
    uint8_t reserved = r_u8(r, "reserved");
    if (r->bad)
        return RF_OK;
    if (dtype >= RF_DTYPE_COUNT || rank > RF_MAX_RANK || trainable > 1 ||
        reserved)
        return CORRUPT("ps shard '%s': dtype %u, rank %u, trainable %u, "
                       "reserved %u",
                       s->name, dtype, rank, trainable, reserved);
    s->dtype = (rf_dtype)dtype;
    s->shape.rank = rank;
    s->trainable = trainable;
    for (int i = 0; i < rank; i++)
        s->shape.dims[i] = (int64_t)r_u64(r, "dims");
    uint8_t kind = r_u8(r, "optimizer kind");
    uint8_t nesterov = r_u8(r, "use_nesterov");
    uint8_t centered = r_u8(r, "centered");
    reserved = r_u8(r, "reserved");
    float f[PS_SPEC_OPTIM_FLOATS];
    uint32_t bits_or = 0;
    for (int i = 0; i < PS_SPEC_OPTIM_FLOATS; i++) {
        f[i] = r_f32(r, "optimizer hyper-parameter");
        uint32_t b;
        memcpy(&b, &f[i], 4);
        bits_or |= b;
    }
    s->sync_n = r_u32(r, "replicas_to_aggregate");
    s->sync_m = r_u32(r, "total_num_replicas");
    s->max_push_rows = r_u32(r, "max_push_rows");
    if (r->bad)
        return RF_OK;
    if (!trainable) {
        if (kind || nesterov || centered || reserved || bits_or)
            return CORRUPT("ps shard '%s': not trainable but an optimizer "
                           "is given",
                           s->name);
    } else {
        if (kind >= RF_OPTIM_KIND_COUNT || nesterov > 1 || centered > 1 ||
            reserved)
            return CORRUPT("ps shard '%s': optimizer kind %u, use_nesterov "
                           "%u, centered %u, reserved %u",
                           s->name, kind, nesterov, centered, reserved);
        rf_optim_config *o = &s->optim;
        o->kind = (rf_optimizer_kind)kind;
        o->use_nesterov = nesterov;
        o->centered = centered;
        o->learning_rate = f[0];
        o->momentum = f[1];
        o->initial_accumulator_value = f[2];
        o->beta1 = f[3];
        o->beta2 = f[4];
        o->epsilon = f[5];
        o->decay = f[6];
        o->learning_rate_power = f[7];
        o->l1_regularization_strength = f[8];
        o->l2_regularization_strength = f[9];
        o->l2_shrinkage_regularization_strength = f[10];
    }
    return ps_spec_check(s);
}

rf_status ps_enc_create_req(void *buf, size_t cap, uint32_t req_id,
                            const ps_spec *m, size_t *len)
{
    if (ps_spec_check(m) != RF_OK)
        return RF_ERR_INVALID_ARG; /* the message names what is wrong */
    wcur w;
    w_begin(&w, buf, cap, PS_MSG_CREATE_REQ, req_id);
    w_spec(&w, m);
    return w_end(&w, len);
}

rf_status ps_dec_create_req(const void *buf, size_t len, ps_spec *m)
{
    rcur r = {0};
    rf_status st = r_begin(&r, buf, len, PS_MSG_CREATE_REQ);
    if (st != RF_OK)
        return st;
    if ((st = r_spec(&r, m)) != RF_OK)
        return st;
    return r_end(&r, PS_MSG_CREATE_REQ);
}

/* ---- directory entries ------------------------------------------------------
 */

rf_status ps_entry_check(const ps_entry *e)
{
    rf_status st = ps_spec_check(&e->spec);
    if (st != RF_OK)
        return st;
    const char *name = e->spec.name;
    if (e->shard_id >= PS_MAX_SHARDS)
        return CORRUPT("ps entry '%s': shard id %u (below %u allowed)", name,
                       e->shard_id, PS_MAX_SHARDS);
    uint64_t numel = (uint64_t)ps_shape_numel(&e->spec.shape);
    uint64_t bytes = numel * rf_dtype_size(e->spec.dtype);
    uint32_t slots =
        e->spec.trainable
            ? rf_optim_num_slots(e->spec.optim.kind, e->spec.optim.centered)
            : 0;
    ps_layout l;
    if (ps_layout_full(bytes, slots,
                       e->spec.shape.rank >= 1 ? (uint64_t)e->spec.shape.dims[0]
                                               : 0,
                       e->spec.max_push_rows, e->spec.sync_n > 0, &l) != RF_OK)
        return CORRUPT("ps entry '%s': too large", name);
    if (e->values_bytes != bytes || e->num_slots != slots ||
        e->values_off != l.values_off || e->record_bytes != l.record_bytes)
        return CORRUPT("ps entry '%s': %llu value bytes at %u, %u slots, "
                       "record %llu bytes; the spec implies %llu at %u, %u, "
                       "%llu",
                       name, (unsigned long long)e->values_bytes, e->values_off,
                       e->num_slots, (unsigned long long)e->record_bytes,
                       (unsigned long long)bytes, l.values_off, slots,
                       (unsigned long long)l.record_bytes);
    if (e->init_off != PS_REC_INIT_OFF ||
        e->version_off != PS_REC_VERSION_OFF ||
        e->lock_off != PS_REC_LOCK_OFF ||
        e->scalars_off != PS_REC_SCALARS_OFF ||
        e->sync_step_off != PS_REC_SYNC_STEP_OFF ||
        e->sync_stale_off != PS_REC_SYNC_STALE_OFF)
        return CORRUPT("ps entry '%s': header words at %u/%u/%u/%u/%u/%u, "
                       "this side uses %u/%u/%u/%u/%u/%u",
                       name, e->init_off, e->version_off, e->lock_off,
                       e->scalars_off, e->sync_step_off, e->sync_stale_off,
                       PS_REC_INIT_OFF, PS_REC_VERSION_OFF, PS_REC_LOCK_OFF,
                       PS_REC_SCALARS_OFF, PS_REC_SYNC_STEP_OFF,
                       PS_REC_SYNC_STALE_OFF);
    for (uint32_t i = 0; i < slots; i++)
        if (e->slot_off[i] != l.slot_off[i])
            return CORRUPT("ps entry '%s': slot %u at %llu, expected %llu",
                           name, i, (unsigned long long)e->slot_off[i],
                           (unsigned long long)l.slot_off[i]);
    if (e->record.region == PS_NO_REGION || e->record.offset % PS_ALIGN ||
        e->record.offset + e->record_bytes < e->record.offset)
        return CORRUPT("ps entry '%s': record at region %u offset %llu", name,
                       e->record.region, (unsigned long long)e->record.offset);
    if (e->inbox.region == PS_NO_REGION) {
        if (e->inbox.offset)
            return CORRUPT("ps entry '%s': inbox offset without region", name);
    } else if (!e->spec.trainable || e->inbox.offset % PS_ALIGN ||
               e->inbox.offset + l.inbox_bytes < e->inbox.offset) {
        return CORRUPT("ps entry '%s': inbox at region %u offset %llu", name,
                       e->inbox.region, (unsigned long long)e->inbox.offset);
    }
    return RF_OK;
}

static void w_entry(wcur *w, const ps_entry *e)
{
    w_u32(w, e->shard_id);
    w_spec(w, &e->spec);
    w_u32(w, e->record.region);
    w_u64(w, e->record.offset);
    w_u64(w, e->record_bytes);
    w_u64(w, e->values_bytes);
    w_u32(w, e->values_off);
    w_u8(w, (uint8_t)e->num_slots);
    w_u8(w, 0);
    w_u8(w, 0);
    w_u8(w, 0);
    for (uint32_t i = 0; i < e->num_slots && i < RF_OPTIM_MAX_SLOTS; i++)
        w_u64(w, e->slot_off[i]);
    w_u16(w, e->init_off);
    w_u16(w, e->version_off);
    w_u16(w, e->lock_off);
    w_u16(w, e->scalars_off);
    w_u16(w, e->sync_step_off);
    w_u16(w, e->sync_stale_off);
    w_u32(w, e->inbox.region);
    w_u64(w, e->inbox.offset);
}

static rf_status r_entry(rcur *r, ps_entry *e)
{
    memset(e, 0, sizeof *e);
    e->shard_id = r_u32(r, "shard_id");
    rf_status st = r_spec(r, &e->spec);
    if (st != RF_OK || r->bad)
        return st;
    e->record.region = r_u32(r, "record.region");
    e->record.offset = r_u64(r, "record.offset");
    e->record_bytes = r_u64(r, "record_bytes");
    e->values_bytes = r_u64(r, "values_bytes");
    e->values_off = r_u32(r, "values_off");
    e->num_slots = r_u8(r, "num_slots");
    uint8_t res[3] = {r_u8(r, "reserved"), r_u8(r, "reserved"),
                      r_u8(r, "reserved")};
    if (r->bad)
        return RF_OK;
    if (e->num_slots > RF_OPTIM_MAX_SLOTS || res[0] || res[1] || res[2])
        return CORRUPT("ps entry '%s': %u slots, reserved %u %u %u",
                       e->spec.name, e->num_slots, res[0], res[1], res[2]);
    for (uint32_t i = 0; i < e->num_slots; i++)
        e->slot_off[i] = r_u64(r, "slot offset");
    e->init_off = r_u16(r, "init_off");
    e->version_off = r_u16(r, "version_off");
    e->lock_off = r_u16(r, "lock_off");
    e->scalars_off = r_u16(r, "scalars_off");
    e->sync_step_off = r_u16(r, "sync_step_off");
    e->sync_stale_off = r_u16(r, "sync_stale_off");
    e->inbox.region = r_u32(r, "inbox.region");
    e->inbox.offset = r_u64(r, "inbox.offset");
    if (r->bad)
        return RF_OK;
    return ps_entry_check(e);
}

size_t ps_entry_size(const ps_entry *e)
{
    unsigned char tmp[PS_ENTRY_MAX];
    wcur w = {.p = tmp, .cap = sizeof tmp};
    w_entry(&w, e);
    return w.full ? SIZE_MAX : w.len;
}

/* ---- DIR_REPLY
 * ---------------------------------------------------------------- */

#define DIR_COUNT_OFF (PS_MSG_HDR_SIZE + 16)

void ps_dir_begin(ps_dir_writer *dw, void *buf, size_t cap, uint32_t req_id,
                  uint64_t incarnation, uint32_t total, uint32_t start)
{
    wcur w;
    w_begin(&w, buf, cap, PS_MSG_DIR_REPLY, req_id);
    w_u64(&w, incarnation);
    w_u32(&w, total);
    w_u32(&w, start);
    w_u32(&w, 0); /* count, patched */
    *dw = (ps_dir_writer){.buf = buf, .cap = w.full ? 0 : cap, .len = w.len};
}

bool ps_dir_add(ps_dir_writer *dw, const ps_entry *e)
{
    size_t cap = dw->cap < PS_MSG_MAX ? dw->cap : PS_MSG_MAX;
    wcur w = {.p = dw->buf, .cap = cap, .len = dw->len};
    w_entry(&w, e);
    if (w.full)
        return false;
    dw->len = w.len;
    dw->count++;
    return true;
}

size_t ps_dir_finish(ps_dir_writer *dw)
{
    rf_put_le32(dw->buf + 8, (uint32_t)(dw->len - PS_MSG_HDR_SIZE));
    rf_put_le32(dw->buf + DIR_COUNT_OFF, dw->count);
    return dw->len;
}

rf_status ps_dec_dir_reply(const void *buf, size_t len, ps_dir_reply *m,
                           rf_status (*each)(void *ctx, const ps_entry *e),
                           void *ctx)
{
    rcur r = {0};
    rf_status st = r_begin(&r, buf, len, PS_MSG_DIR_REPLY);
    if (st != RF_OK)
        return st;
    m->incarnation = r_u64(&r, "incarnation");
    m->total = r_u32(&r, "total");
    m->start = r_u32(&r, "start");
    m->count = r_u32(&r, "count");
    if (r.bad)
        return truncated(&r, "ps DIR_REPLY");
    if (m->incarnation == 0)
        return CORRUPT("ps DIR_REPLY: incarnation 0");
    st = check_range("DIR_REPLY", m->total, m->start, m->count, PS_MSG_MAX / 40,
                     PS_MAX_SHARDS);
    if (st != RF_OK)
        return st;
    for (uint32_t i = 0; i < m->count; i++) {
        ps_entry e;
        if ((st = r_entry(&r, &e)) != RF_OK)
            return st;
        if (r.bad)
            return truncated(&r, "ps DIR_REPLY");
        if (e.shard_id != m->start + i)
            return CORRUPT("ps DIR_REPLY: entry %u has shard id %u",
                           m->start + i, e.shard_id);
        if (each && (st = each(ctx, &e)) != RF_OK)
            return st;
    }
    return r_end(&r, PS_MSG_DIR_REPLY);
}

/* ---- CREATE_REPLY, ERROR_REPLY, empty messages
 * --------------------------------- */

rf_status ps_enc_create_reply(void *buf, size_t cap, uint32_t req_id,
                              const ps_create_reply *m, size_t *len)
{
    wcur w;
    w_begin(&w, buf, cap, PS_MSG_CREATE_REPLY, req_id);
    w_u8(&w, m->created ? 1 : 0);
    w_u8(&w, 0);
    w_u8(&w, 0);
    w_u8(&w, 0);
    w_entry(&w, &m->entry);
    return w_end(&w, len);
}

rf_status ps_dec_create_reply(const void *buf, size_t len, ps_create_reply *m)
{
    rcur r = {0};
    rf_status st = r_begin(&r, buf, len, PS_MSG_CREATE_REPLY);
    if (st != RF_OK)
        return st;
    uint8_t created = r_u8(&r, "created");
    uint8_t res[3] = {r_u8(&r, "reserved"), r_u8(&r, "reserved"),
                      r_u8(&r, "reserved")};
    if (r.bad)
        return truncated(&r, "ps CREATE_REPLY");
    if (created > 1 || res[0] || res[1] || res[2])
        return CORRUPT("ps CREATE_REPLY: created %u, reserved %u %u %u",
                       created, res[0], res[1], res[2]);
    m->created = created;
    if ((st = r_entry(&r, &m->entry)) != RF_OK)
        return st;
    return r_end(&r, PS_MSG_CREATE_REPLY);
}

rf_status ps_enc_empty(void *buf, size_t cap, uint16_t type, uint32_t req_id,
                       size_t *len)
{
    wcur w;
    w_begin(&w, buf, cap, type, req_id);
    return w_end(&w, len);
}

rf_status ps_dec_empty(const void *buf, size_t len, uint16_t type)
{
    rcur r = {0};
    rf_status st = r_begin(&r, buf, len, type);
    if (st != RF_OK)
        return st;
    return r_end(&r, type);
}

/* ---- SHARD_REQ / SHARD_REPLY (the shard ledger) ------------------------
 * REQ: num_examples u64, batch_size u32, shard_batches u32, seed u64,
 * flags u32 (bit 0: progress follows; the rest zero), epoch u32, shard
 * u32, batch u32 (all three zero without progress). REPLY: epoch, shard,
 * batch, shard_len, num_shards, epochs_done, flags (bit 0: stale) u32. */

rf_status ps_enc_shard_req(void *buf, size_t cap, uint32_t req_id,
                           const ps_shard_req *m, size_t *len)
{
    wcur w;
    w_begin(&w, buf, cap, PS_MSG_SHARD_REQ, req_id);
    w_u64(&w, m->geom.num_examples);
    w_u32(&w, m->geom.batch_size);
    w_u32(&w, m->geom.shard_batches);
    w_u64(&w, m->geom.seed);
    w_u32(&w, m->has_done ? 1u : 0u);
    w_u32(&w, m->has_done ? m->done.epoch : 0u);
    w_u32(&w, m->has_done ? m->done.shard : 0u);
    w_u32(&w, m->has_done ? m->done.batch : 0u);
    return w_end(&w, len);
}

rf_status ps_dec_shard_req(const void *buf, size_t len, ps_shard_req *m)
{
    rcur r = {0};
    rf_status st = r_begin(&r, buf, len, PS_MSG_SHARD_REQ);
    if (st != RF_OK)
        return st;
    *m = (ps_shard_req){0};
    m->geom.num_examples = r_u64(&r, "num_examples");
    m->geom.batch_size = r_u32(&r, "batch_size");
    m->geom.shard_batches = r_u32(&r, "shard_batches");
    m->geom.seed = r_u64(&r, "seed");
    uint32_t flags = r_u32(&r, "flags");
    m->done.epoch = r_u32(&r, "epoch");
    m->done.shard = r_u32(&r, "shard");
    m->done.batch = r_u32(&r, "batch");
    if ((st = r_end(&r, PS_MSG_SHARD_REQ)) != RF_OK)
        return st;
    if (flags > 1u)
        return CORRUPT("ps SHARD_REQ: reserved flags 0x%x", flags);
    m->has_done = flags == 1u;
    if (!m->has_done && (m->done.epoch || m->done.shard || m->done.batch))
        return CORRUPT("ps SHARD_REQ: progress fields without the flag");
    if (!m->geom.batch_size || !m->geom.shard_batches)
        return CORRUPT("ps SHARD_REQ: batch_size %u, shard_batches %u",
                       m->geom.batch_size, m->geom.shard_batches);
    return RF_OK;
}

rf_status ps_enc_shard_reply(void *buf, size_t cap, uint32_t req_id,
                             const ps_shard_reply *m, size_t *len)
{
    wcur w;
    w_begin(&w, buf, cap, PS_MSG_SHARD_REPLY, req_id);
    w_u32(&w, m->next.epoch);
    w_u32(&w, m->next.shard);
    w_u32(&w, m->next.batch);
    w_u32(&w, m->next.shard_len);
    w_u32(&w, m->next.num_shards);
    w_u32(&w, m->next.epochs_done);
    w_u32(&w, m->stale ? 1u : 0u);
    return w_end(&w, len);
}

rf_status ps_dec_shard_reply(const void *buf, size_t len, ps_shard_reply *m,
                             uint32_t batch_size, uint32_t shard_batches)
{
    rcur r = {0};
    rf_status st = r_begin(&r, buf, len, PS_MSG_SHARD_REPLY);
    if (st != RF_OK)
        return st;
    *m = (ps_shard_reply){0};
    rf_ps_shard_grant *g = &m->next;
    g->epoch = r_u32(&r, "epoch");
    g->shard = r_u32(&r, "shard");
    g->batch = r_u32(&r, "batch");
    g->shard_len = r_u32(&r, "shard_len");
    g->num_shards = r_u32(&r, "num_shards");
    g->epochs_done = r_u32(&r, "epochs_done");
    uint32_t flags = r_u32(&r, "flags");
    if ((st = r_end(&r, PS_MSG_SHARD_REPLY)) != RF_OK)
        return st;
    if (flags > 1u)
        return CORRUPT("ps SHARD_REPLY: reserved flags 0x%x", flags);
    m->stale = flags == 1u;
    if (!g->shard_len || g->shard_len > shard_batches ||
        g->batch >= g->shard_len || g->shard >= g->num_shards ||
        g->epochs_done > g->epoch)
        return CORRUPT("ps SHARD_REPLY: batch %u of %u in shard %u of %u, "
                       "epoch %u with %u done (%u batches per shard)",
                       g->batch, g->shard_len, g->shard, g->num_shards,
                       g->epoch, g->epochs_done, shard_batches);
    g->first_example =
        ((uint64_t)g->shard * shard_batches + g->batch) * batch_size;
    return RF_OK;
}

/* ---- LEDGER_REQ / LEDGER_REPLY (the ledger in checkpoints) ------------
 * REQ: op, offset, total, count u32, then count bytes. REPLY: total,
 * offset, count, flags (bit 0: loaded) u32, then count bytes. */

rf_status ps_enc_ledger_req(void *buf, size_t cap, uint32_t req_id,
                            const ps_ledger_req *m, size_t *len)
{
    wcur w;
    w_begin(&w, buf, cap, PS_MSG_LEDGER_REQ, req_id);
    w_u32(&w, m->op);
    w_u32(&w, m->offset);
    w_u32(&w, m->total);
    w_u32(&w, m->count);
    if (m->count)
        w_bytes(&w, m->data, m->count);
    return w_end(&w, len);
}

rf_status ps_dec_ledger_req(const void *buf, size_t len, ps_ledger_req *m)
{
    rcur r = {0};
    rf_status st = r_begin(&r, buf, len, PS_MSG_LEDGER_REQ);
    if (st != RF_OK)
        return st;
    *m = (ps_ledger_req){0};
    m->op = r_u32(&r, "op");
    m->offset = r_u32(&r, "offset");
    m->total = r_u32(&r, "total");
    m->count = r_u32(&r, "count");
    const unsigned char *data = NULL;
    r_take(&r, m->count, "page", &data);
    if ((st = r_end(&r, PS_MSG_LEDGER_REQ)) != RF_OK)
        return st;
    m->data = data;
    if (m->op == PS_LEDGER_OP_READ) {
        if (m->total || m->count)
            return CORRUPT("ps LEDGER_REQ: a read with total %u, count %u",
                           m->total, m->count);
        return RF_OK;
    }
    if (m->op != PS_LEDGER_OP_LOAD)
        return CORRUPT("ps LEDGER_REQ: op %u", m->op);
    if (!m->count || m->count > PS_LEDGER_LOAD_PAGE || m->offset > m->total ||
        m->count > m->total - m->offset)
        return CORRUPT("ps LEDGER_REQ: a load page of %u bytes at %u of %u "
                       "(pages of 1-%u bytes)",
                       m->count, m->offset, m->total, PS_LEDGER_LOAD_PAGE);
    return RF_OK;
}

rf_status ps_enc_ledger_reply(void *buf, size_t cap, uint32_t req_id,
                              const ps_ledger_reply *m, size_t *len)
{
    wcur w;
    w_begin(&w, buf, cap, PS_MSG_LEDGER_REPLY, req_id);
    w_u32(&w, m->total);
    w_u32(&w, m->offset);
    w_u32(&w, m->count);
    w_u32(&w, m->loaded ? 1u : 0u);
    if (m->count)
        w_bytes(&w, m->data, m->count);
    return w_end(&w, len);
}

rf_status ps_dec_ledger_reply(const void *buf, size_t len, ps_ledger_reply *m)
{
    rcur r = {0};
    rf_status st = r_begin(&r, buf, len, PS_MSG_LEDGER_REPLY);
    if (st != RF_OK)
        return st;
    *m = (ps_ledger_reply){0};
    m->total = r_u32(&r, "total");
    m->offset = r_u32(&r, "offset");
    m->count = r_u32(&r, "count");
    uint32_t flags = r_u32(&r, "flags");
    const unsigned char *data = NULL;
    r_take(&r, m->count, "page", &data);
    if ((st = r_end(&r, PS_MSG_LEDGER_REPLY)) != RF_OK)
        return st;
    m->data = data;
    if (flags > 1u)
        return CORRUPT("ps LEDGER_REPLY: reserved flags 0x%x", flags);
    m->loaded = flags == 1u;
    if (m->count > PS_LEDGER_READ_PAGE || m->offset > m->total ||
        m->count > m->total - m->offset)
        return CORRUPT("ps LEDGER_REPLY: a page of %u bytes at %u of %u",
                       m->count, m->offset, m->total);
    return RF_OK;
}

rf_status ps_enc_error_reply(void *buf, size_t cap, uint32_t req_id,
                             int32_t status, const char *text, size_t *len)
{
    size_t n = text ? strnlen(text, PS_ERR_TEXT_MAX) : 0;
    wcur w;
    w_begin(&w, buf, cap, PS_MSG_ERROR_REPLY, req_id);
    w_u32(&w, (uint32_t)status);
    w_u16(&w, (uint16_t)n);
    w_bytes(&w, text, n);
    return w_end(&w, len);
}

rf_status ps_dec_error_reply(const void *buf, size_t len, ps_error_reply *m)
{
    rcur r = {0};
    rf_status st = r_begin(&r, buf, len, PS_MSG_ERROR_REPLY);
    if (st != RF_OK)
        return st;
    m->status = (int32_t)r_u32(&r, "status");
    uint16_t n = r_u16(&r, "text length");
    const unsigned char *text = NULL;
    if (!r.bad && n > PS_ERR_TEXT_MAX)
        return CORRUPT("ps ERROR_REPLY: text of %u bytes", n);
    if (r_take(&r, n, "text", &text)) {
        if (memchr(text, 0, n))
            return CORRUPT("ps ERROR_REPLY: text contains a NUL byte");
        memcpy(m->text, text, n);
        m->text[n] = '\0';
    }
    if ((st = r_end(&r, PS_MSG_ERROR_REPLY)) != RF_OK)
        return st;
    if (m->status >= 0 || m->status <= -RF_STATUS_COUNT)
        return CORRUPT("ps ERROR_REPLY: status %d is not an error",
                       (int)m->status);
    return RF_OK;
}

/* ---- authentication -------------------------------------------------------
 * AUTH_REQ       nonce[32] client_id u32 flags u32
 * AUTH_CHALLENGE nonce[32] ps_index i32 incarnation u64 mac[32]
 * AUTH_PROOF     mac[32]
 * AUTH_OK        (empty) */

static rf_status check_auth_flags(uint32_t flags, const char *what)
{
    if (flags & ~(PS_CONN_FLAG_CHIEF | PS_CONN_FLAG_AUTH))
        return CORRUPT("ps %s: unknown flags 0x%x", what, flags);
    if (!(flags & PS_CONN_FLAG_AUTH))
        return CORRUPT("ps %s: flags 0x%x lack the authentication flag", what,
                       flags);
    return RF_OK;
}

rf_status ps_enc_auth_req(void *buf, size_t cap, uint32_t req_id,
                          const ps_auth_req *m, size_t *len)
{
    rf_status st = check_auth_flags(m->flags, "AUTH_REQ");
    if (st != RF_OK)
        return rf_error_set(RF_ERR_INVALID_ARG, "%s", rf_error_message());
    wcur w;
    w_begin(&w, buf, cap, PS_MSG_AUTH_REQ, req_id);
    w_bytes(&w, m->nonce, PS_AUTH_NONCE);
    w_u32(&w, m->client_id);
    w_u32(&w, m->flags);
    return w_end(&w, len);
}

rf_status ps_dec_auth_req(const void *buf, size_t len, ps_auth_req *m)
{
    rcur r = {0};
    rf_status st = r_begin(&r, buf, len, PS_MSG_AUTH_REQ);
    if (st != RF_OK)
        return st;
    const unsigned char *at;
    if (r_take(&r, PS_AUTH_NONCE, "nonce", &at))
        memcpy(m->nonce, at, PS_AUTH_NONCE);
    m->client_id = r_u32(&r, "client_id");
    m->flags = r_u32(&r, "flags");
    if ((st = r_end(&r, PS_MSG_AUTH_REQ)) != RF_OK)
        return st;
    return check_auth_flags(m->flags, "AUTH_REQ");
}

rf_status ps_enc_auth_challenge(void *buf, size_t cap, uint32_t req_id,
                                const ps_auth_challenge *m, size_t *len)
{
    if (m->ps_index < 0 || m->incarnation == 0)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "AUTH_CHALLENGE: ps index %d, incarnation 0",
                            (int)m->ps_index);
    wcur w;
    w_begin(&w, buf, cap, PS_MSG_AUTH_CHALLENGE, req_id);
    w_bytes(&w, m->nonce, PS_AUTH_NONCE);
    w_u32(&w, (uint32_t)m->ps_index);
    w_u64(&w, m->incarnation);
    w_bytes(&w, m->mac, PS_AUTH_MAC);
    return w_end(&w, len);
}

rf_status ps_dec_auth_challenge(const void *buf, size_t len,
                                ps_auth_challenge *m)
{
    rcur r = {0};
    rf_status st = r_begin(&r, buf, len, PS_MSG_AUTH_CHALLENGE);
    if (st != RF_OK)
        return st;
    const unsigned char *at;
    if (r_take(&r, PS_AUTH_NONCE, "nonce", &at))
        memcpy(m->nonce, at, PS_AUTH_NONCE);
    m->ps_index = (int32_t)r_u32(&r, "ps_index");
    m->incarnation = r_u64(&r, "incarnation");
    if (r_take(&r, PS_AUTH_MAC, "mac", &at))
        memcpy(m->mac, at, PS_AUTH_MAC);
    if ((st = r_end(&r, PS_MSG_AUTH_CHALLENGE)) != RF_OK)
        return st;
    if (m->ps_index < 0 || m->incarnation == 0)
        return CORRUPT("ps AUTH_CHALLENGE: ps index %d, incarnation 0x%llx",
                       (int)m->ps_index, (unsigned long long)m->incarnation);
    return RF_OK;
}

rf_status ps_enc_auth_proof(void *buf, size_t cap, uint32_t req_id,
                            const ps_auth_proof *m, size_t *len)
{
    wcur w;
    w_begin(&w, buf, cap, PS_MSG_AUTH_PROOF, req_id);
    w_bytes(&w, m->mac, PS_AUTH_MAC);
    return w_end(&w, len);
}

rf_status ps_dec_auth_proof(const void *buf, size_t len, ps_auth_proof *m)
{
    rcur r = {0};
    rf_status st = r_begin(&r, buf, len, PS_MSG_AUTH_PROOF);
    if (st != RF_OK)
        return st;
    const unsigned char *at;
    if (r_take(&r, PS_AUTH_MAC, "mac", &at))
        memcpy(m->mac, at, PS_AUTH_MAC);
    return r_end(&r, PS_MSG_AUTH_PROOF);
}

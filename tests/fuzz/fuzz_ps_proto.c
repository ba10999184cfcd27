/* tests/fuzz/fuzz_ps_proto.c: libFuzzer target for the ps control-plane
 * codec (ps/proto_codec.c). The input is either decoded as it is by
 * every decoder, or (first byte odd) used to mutate a valid message built by
 * the encoders (so the fuzzer reaches deep fields without a corpus). Every
 * message that decodes must re-encode to exactly the same bytes and pass the
 * consistency checks the decoders promise; a directory reply's callback that
 * refuses an entry stops its decoder with the callback's status. Seeds in
 * corpus/ps_proto: bytes 0x01 K, the valid message of kind K (0..7). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "ps/proto.h"
#include "ps/ps_layout.h"

static unsigned char out[PS_MSG_MAX];

/* len is read here, after the encoder (the call that is st) wrote it: a
 * size_t argument beside that call could be evaluated before it (C leaves
 * the order unspecified; gcc does so). */
static void same(const uint8_t *data, size_t size, rf_status st,
                 const size_t *len)
{
    REQUIRE(st == RF_OK);
    REQUIRE(*len == size && memcmp(out, data, size) == 0);
}

static ps_entry dir_entries[PS_MSG_MAX / 40];
static uint32_t dir_n;

static rf_status keep(void *ctx, const ps_entry *e)
{
    (void)ctx;
    REQUIRE(ps_entry_check(e) == RF_OK);
    REQUIRE(dir_n < sizeof dir_entries / sizeof dir_entries[0]);
    dir_entries[dir_n++] = *e;
    return RF_OK;
}

static uint32_t refuse_at;

static rf_status refuse(void *ctx, const ps_entry *e)
{
    (void)ctx;
    REQUIRE(e->shard_id == dir_entries[dir_n].shard_id);
    if (dir_n == refuse_at)
        return RF_ERR_ABORTED;
    dir_n++;
    return RF_OK;
}

static void decode_all(const uint8_t *data, size_t size)
{
    ps_conn_hello ch;
    if (ps_conn_hello_decode(data, size, &ch) == RF_OK) {
        unsigned char b[PS_CONN_HELLO_MAX];
        ps_conn_hello_encode(&ch, b);
        REQUIRE(size == ps_conn_hello_size(&ch) && memcmp(b, data, size) == 0);
    }
    ps_conn_welcome cw;
    if (ps_conn_welcome_decode(data, size, &cw) == RF_OK) {
        unsigned char b[PS_CONN_WELCOME_SIZE];
        ps_conn_welcome_encode(&cw, b);
        REQUIRE(size == sizeof b && memcmp(b, data, size) == 0);
    }
    ps_msg_hdr h;
    if (ps_dec_hdr(data, size, &h) != RF_OK)
        return;
    REQUIRE(h.len + PS_MSG_HDR_SIZE == size);
    size_t len = 0;
    static ps_hello hello;
    static ps_hello_reply hr;
    static ps_range_req rq;
    static ps_regions_reply rr;
    static ps_spec spec;
    static ps_create_reply cr;
    static ps_error_reply er;
    ps_auth_req aq;
    ps_auth_challenge ac;
    ps_auth_proof ap;
    ps_dir_reply dr;
    switch (h.type) {
    case PS_MSG_HELLO:
        if (ps_dec_hello(data, size, &hello) == RF_OK)
            same(data, size,
                 ps_enc_hello(out, sizeof out, h.req_id, &hello, &len), &len);
        break;
    case PS_MSG_HELLO_REPLY:
        if (ps_dec_hello_reply(data, size, &hr) == RF_OK)
            same(data, size,
                 ps_enc_hello_reply(out, sizeof out, h.req_id, &hr, &len),
                 &len);
        break;
    case PS_MSG_REGIONS_REQ:
    case PS_MSG_DIR_REQ:
        if (ps_dec_range_req(data, size, h.type, &rq) == RF_OK)
            same(data, size,
                 ps_enc_range_req(out, sizeof out, h.type, h.req_id, &rq, &len),
                 &len);
        break;
    case PS_MSG_REGIONS_REPLY:
        if (ps_dec_regions_reply(data, size, &rr) == RF_OK)
            same(data, size,
                 ps_enc_regions_reply(out, sizeof out, h.req_id, &rr, &len),
                 &len);
        break;
    case PS_MSG_CREATE_REQ:
        if (ps_dec_create_req(data, size, &spec) == RF_OK) {
            REQUIRE(ps_spec_check(&spec) == RF_OK);
            same(data, size,
                 ps_enc_create_req(out, sizeof out, h.req_id, &spec, &len),
                 &len);
        }
        break;
    case PS_MSG_CREATE_REPLY:
        if (ps_dec_create_reply(data, size, &cr) == RF_OK) {
            REQUIRE(ps_entry_check(&cr.entry) == RF_OK);
            REQUIRE(ps_entry_size(&cr.entry) <= PS_ENTRY_MAX);
            same(data, size,
                 ps_enc_create_reply(out, sizeof out, h.req_id, &cr, &len),
                 &len);
        }
        break;
    case PS_MSG_DIR_REPLY:
        dir_n = 0;
        if (ps_dec_dir_reply(data, size, &dr, keep, NULL) == RF_OK) {
            REQUIRE(dir_n == dr.count);
            ps_dir_writer w;
            ps_dir_begin(&w, out, sizeof out, h.req_id, dr.incarnation,
                         dr.total, dr.start);
            for (uint32_t i = 0; i < dir_n; i++)
                REQUIRE(ps_dir_add(&w, &dir_entries[i]));
            size_t n = ps_dir_finish(&w);
            REQUIRE(n == size && memcmp(out, data, size) == 0);
            /* A callback that refuses the last entry stops the decoder with
             * its own status, after every entry before it. */
            if (dir_n > 0) {
                uint32_t all = dir_n;
                refuse_at = all - 1;
                dir_n = 0;
                REQUIRE(ps_dec_dir_reply(data, size, &dr, refuse, NULL) ==
                        RF_ERR_ABORTED);
                REQUIRE(dir_n == all - 1);
            }
        }
        break;
    case PS_MSG_AUTH_REQ:
        if (ps_dec_auth_req(data, size, &aq) == RF_OK)
            same(data, size,
                 ps_enc_auth_req(out, sizeof out, h.req_id, &aq, &len), &len);
        break;
    case PS_MSG_AUTH_CHALLENGE:
        if (ps_dec_auth_challenge(data, size, &ac) == RF_OK)
            same(data, size,
                 ps_enc_auth_challenge(out, sizeof out, h.req_id, &ac, &len),
                 &len);
        break;
    case PS_MSG_AUTH_PROOF:
        if (ps_dec_auth_proof(data, size, &ap) == RF_OK)
            same(data, size,
                 ps_enc_auth_proof(out, sizeof out, h.req_id, &ap, &len), &len);
        break;
    case PS_MSG_SHUTDOWN_REQ:
    case PS_MSG_SHUTDOWN_REPLY:
    case PS_MSG_AUTH_OK:
    case PS_MSG_LEAVE_REQ:
    case PS_MSG_LEAVE_REPLY:
        if (ps_dec_empty(data, size, h.type) == RF_OK)
            same(data, size,
                 ps_enc_empty(out, sizeof out, h.type, h.req_id, &len), &len);
        break;
    case PS_MSG_SHARD_REQ: {
        ps_shard_req sq;
        if (ps_dec_shard_req(data, size, &sq) == RF_OK)
            same(data, size,
                 ps_enc_shard_req(out, sizeof out, h.req_id, &sq, &len), &len);
        break;
    }
    case PS_MSG_SHARD_REPLY: {
        ps_shard_reply sr;
        if (ps_dec_shard_reply(data, size, &sr, 1, UINT32_MAX) == RF_OK)
            same(data, size,
                 ps_enc_shard_reply(out, sizeof out, h.req_id, &sr, &len),
                 &len);
        break;
    }
    case PS_MSG_LEDGER_REQ: {
        ps_ledger_req lq;
        if (ps_dec_ledger_req(data, size, &lq) == RF_OK)
            same(data, size,
                 ps_enc_ledger_req(out, sizeof out, h.req_id, &lq, &len), &len);
        break;
    }
    case PS_MSG_LEDGER_REPLY: {
        ps_ledger_reply lr;
        if (ps_dec_ledger_reply(data, size, &lr) == RF_OK)
            same(data, size,
                 ps_enc_ledger_reply(out, sizeof out, h.req_id, &lr, &len),
                 &len);
        break;
    }
    case PS_MSG_ERROR_REPLY:
        if (ps_dec_error_reply(data, size, &er) == RF_OK) {
            REQUIRE(er.status < 0);
            same(data, size,
                 ps_enc_error_reply(out, sizeof out, h.req_id, er.status,
                                    er.text, &len),
                 &len);
        }
        break;
    default:
        abort(); /* ps_dec_hdr accepted an unknown type */
    }
}

/* A valid message of kind k (0..12) in buf; returns its size. */
static size_t build(unsigned k, unsigned char *buf, size_t cap)
{
    static ps_spec s;
    memset(&s, 0, sizeof s);
    strcpy(s.name, "layer/kernel");
    s.part = 3;
    s.dtype = RF_F32;
    s.shape.rank = 2;
    s.shape.dims[0] = 7;
    s.shape.dims[1] = 5;
    s.trainable = true;
    s.optim = (rf_optim_config){.kind = RF_OPTIM_ADAM,
                                .learning_rate = 0.001f,
                                .beta1 = 0.9f,
                                .beta2 = 0.999f,
                                .epsilon = 1e-8f};
    s.sync_n = 2; /* a sync-replicas shard: 2 of 3 replicas */
    s.sync_m = 3;
    static ps_entry e;
    memset(&e, 0, sizeof e);
    e.shard_id = 0;
    e.spec = s;
    ps_layout l;
    ps_layout_compute(140, 2, &l);
    e.record = (ps_loc){.region = 1, .offset = 4096};
    e.record_bytes = l.record_bytes;
    e.values_bytes = l.values_bytes;
    e.values_off = l.values_off;
    e.num_slots = 2;
    e.slot_off[0] = l.slot_off[0];
    e.slot_off[1] = l.slot_off[1];
    e.init_off = PS_REC_INIT_OFF;
    e.version_off = PS_REC_VERSION_OFF;
    e.lock_off = PS_REC_LOCK_OFF;
    e.scalars_off = PS_REC_SCALARS_OFF;
    e.sync_step_off = PS_REC_SYNC_STEP_OFF;
    e.sync_stale_off = PS_REC_SYNC_STALE_OFF;
    e.inbox = (ps_loc){.region = 0, .offset = 128};
    size_t len = 0;
    switch (k % 15) {
    case 0: {
        ps_hello h = {.client_id = 2,
                      .flags = PS_CONN_FLAG_CHIEF,
                      .recv_depth = 64,
                      .ring_slots = 64,
                      .ring = {.addr = 0x10000, .len = 512, .rkey = 9}};
        ps_enc_hello(buf, cap, 1, &h, &len);
        break;
    }
    case 1: {
        ps_hello_reply r = {.ps_index = 1,
                            .incarnation = 0x1234,
                            .recv_depth = 64,
                            .num_regions = 2,
                            .num_shards = 1,
                            .globals = {0, 0}};
        ps_enc_hello_reply(buf, cap, 1, &r, &len);
        break;
    }
    case 2: {
        static ps_regions_reply r;
        r.total = 2;
        r.start = 0;
        r.count = 2;
        r.regions[0] = (rf_mr_desc){.addr = 0x1000, .len = 1 << 20, .rkey = 1};
        r.regions[1] = (rf_mr_desc){.addr = 0x9000, .len = 1 << 20, .rkey = 2};
        ps_enc_regions_reply(buf, cap, 2, &r, &len);
        break;
    }
    case 3:
        ps_enc_create_req(buf, cap, 3, &s, &len);
        break;
    case 4: {
        static ps_create_reply r;
        r.created = true;
        r.entry = e;
        ps_enc_create_reply(buf, cap, 3, &r, &len);
        break;
    }
    case 5: {
        ps_dir_writer w;
        ps_dir_begin(&w, buf, cap, 4, 0x77, 2, 0);
        ps_dir_add(&w, &e);
        e.shard_id = 1;
        e.spec.trainable = false;
        e.spec.sync_n = e.spec.sync_m = 0;
        e.spec.dtype = RF_I64;
        e.num_slots = 0;
        ps_layout_compute(280, 0, &l);
        e.record_bytes = l.record_bytes;
        e.values_bytes = 280;
        e.inbox = (ps_loc){.region = PS_NO_REGION, .offset = 0};
        ps_dir_add(&w, &e);
        len = ps_dir_finish(&w);
        break;
    }
    case 6:
        ps_enc_error_reply(buf, cap, 5, RF_ERR_INVALID_ARG, "exists", &len);
        break;
    case 8: {
        ps_auth_req q = {.client_id = 1,
                         .flags = PS_CONN_FLAG_AUTH | PS_CONN_FLAG_CHIEF};
        memset(q.nonce, 0x3c, sizeof q.nonce);
        ps_enc_auth_req(buf, cap, 7, &q, &len);
        break;
    }
    case 9: {
        ps_auth_challenge c = {.ps_index = 1, .incarnation = 0x77};
        memset(c.nonce, 0x5a, sizeof c.nonce);
        memset(c.mac, 0xa5, sizeof c.mac);
        ps_enc_auth_challenge(buf, cap, 7, &c, &len);
        break;
    }
    case 10: {
        ps_auth_proof p;
        memset(p.mac, 0x96, sizeof p.mac);
        ps_enc_auth_proof(buf, cap, 8, &p, &len);
        break;
    }
    case 11: {
        ps_shard_req q = {.geom = {.num_examples = 60000,
                                   .batch_size = 100,
                                   .shard_batches = 16,
                                   .seed = 42},
                          .has_done = true,
                          .done = {.epoch = 2, .shard = 7, .batch = 3}};
        ps_enc_shard_req(buf, cap, 9, &q, &len);
        break;
    }
    case 12: {
        ps_shard_reply r = {.next = {.epoch = 2,
                                     .shard = 7,
                                     .batch = 4,
                                     .shard_len = 16,
                                     .num_shards = 38,
                                     .epochs_done = 1}};
        ps_enc_shard_reply(buf, cap, 9, &r, &len);
        break;
    }
    case 13: {
        static const unsigned char page[40] = {0x52, 0x46, 0x4c, 0x47, 1};
        ps_ledger_req q = {.op = PS_LEDGER_OP_LOAD,
                           .offset = 960,
                           .total = 1000,
                           .count = 40,
                           .data = page};
        ps_enc_ledger_req(buf, cap, 10, &q, &len);
        break;
    }
    case 14: {
        static const unsigned char page[72] = {0x52, 0x46, 0x4c, 0x47, 1};
        ps_ledger_reply r = {.total = 72, .count = 72, .data = page};
        ps_enc_ledger_reply(buf, cap, 10, &r, &len);
        break;
    }
    default: {
        ps_range_req q = {.start = 1};
        ps_enc_range_req(buf, cap, PS_MSG_DIR_REQ, 6, &q, &len);
        break;
    }
    }
    return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (!(data[0] & 1)) {
        decode_all(data + 1, size - 1);
        return 0;
    }
    static unsigned char msg[PS_MSG_MAX];
    size_t len = build(size > 1 ? data[1] : 0, msg, sizeof msg);
    REQUIRE(len >= PS_MSG_HDR_SIZE);
    decode_all(msg, len); /* the valid message itself round-trips */
    /* Then mutate: byte pairs (position, xor), the last byte a truncation. */
    for (size_t i = 2; i + 1 < size; i += 2)
        msg[data[i] % len] ^= data[i + 1];
    if (size % 2 == 1 && size > 2)
        len -= data[size - 1] % (len + 1);
    decode_all(msg, len);
    return 0;
}

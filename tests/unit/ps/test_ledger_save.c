/* tests/unit/ps/test_ledger_save.c: the shard ledger's saved form
 * (ps/ps_ledger_save.c), what the chief's checkpoint keeps: a save/load
 * round trip (held shards come back returned at their recorded batch), a
 * loaded ledger deals exactly what the saved one would have dealt once
 * its clients were gone, through an epoch's end; every truncation and
 * every flipped byte refused; inconsistent forms with a good CRC refused
 * naming what; a load into a set ledger refused; rf_ps_ledger_check;
 * rf_ckpt_verify on a checkpoint holding a ledger (described) and one
 * whose ledger does not check (refused though its CRC32Cs match); and the
 * LEDGER_REQ / LEDGER_REPLY codec and its refusals. */
#include <isa-l/crc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ps/proto.h"
#include "ps/ps_ledger.h"
#include "rdmaflow/byteorder.h"
#include "rdmaflow/checkpoint.h"
#include "tests/common/check.h"

/* 1055 examples of batch 10: 105 batches, 27 shards of 4 (the last 1) */
static const rf_ps_shard_geometry G = {
    .num_examples = 1055, .batch_size = 10, .shard_batches = 4, .seed = 7};

static rf_ps_shard_grant ask(ps_ledger *l, uint32_t client,
                             const rf_ps_shard_grant *done)
{
    rf_ps_shard_grant g;
    bool stale;
    CHECK_OK(ps_ledger_request(l, client, &G, done, &g, &stale));
    CHECK(!stale, "client %u stale", client);
    return g;
}

/* A ledger in the middle of epoch 1: clients 1-3 trained shards for a
 * while, client 2 left holding one, 1 and 3 hold one each. */
static void busy(ps_ledger *l)
{
    ps_ledger_init(l);
    rf_ps_shard_grant h[4];
    for (uint32_t c = 1; c <= 3; c++)
        h[c] = ask(l, c, NULL);
    for (unsigned i = 0; i < 150; i++) {
        uint32_t c = 1 + i % 3;
        rf_ps_shard_grant done = h[c];
        done.batch++;
        h[c] = ask(l, c, &done);
    }
    ps_ledger_release(l, 2);
    CHECK(l->epoch == 1 && l->ntasks == 3, "epoch %u, %u tasks", l->epoch,
          l->ntasks);
}

static void save(const ps_ledger *l, unsigned char **buf, size_t *len)
{
    CHECK_OK(ps_ledger_save(l, buf, len));
    CHECK(*len == PS_LEDGER_SAVE_HDR + l->ntasks * PS_LEDGER_SAVE_TASK + 4,
          "%zu bytes for %u tasks", *len, l->ntasks);
}

static void test_round_trip(void)
{
    ps_ledger a, b;
    busy(&a);
    unsigned char *buf, *again;
    size_t len, len2;
    save(&a, &buf, &len);
    ps_ledger_init(&b);
    CHECK_OK(ps_ledger_load(&b, buf, len));
    CHECK(b.set && b.epoch == a.epoch && b.cursor == a.cursor &&
              b.ntasks == a.ntasks && b.num_shards == a.num_shards &&
              b.batches_done == a.batches_done &&
              b.shards_done == a.shards_done && b.returned == a.returned,
          "loaded: epoch %u cursor %u tasks %u", b.epoch, b.cursor, b.ntasks);
    CHECK(!memcmp(a.order, b.order, a.num_shards * sizeof *a.order),
          "the loaded epoch's deal order differs");
    for (uint32_t i = 0; i < b.ntasks; i++) {
        CHECK(b.tasks[i].owner == -1, "task %u owned by %d", i,
              b.tasks[i].owner);
        CHECK(b.tasks[i].epoch == a.tasks[i].epoch &&
                  b.tasks[i].shard == a.tasks[i].shard &&
                  b.tasks[i].next == a.tasks[i].next &&
                  b.tasks[i].len == a.tasks[i].len,
              "task %u differs", i);
    }
    save(&b, &again, &len2);
    CHECK(len2 == len && !memcmp(buf, again, len),
          "saving the loaded ledger gives other bytes");
    /* a set ledger takes no load, and stays as it was */
    CHECK_ST(ps_ledger_load(&b, buf, len), RF_ERR_INVALID_ARG);
    CHECK_MSG("set already");
    CHECK(b.set && b.epoch == a.epoch, "the refused load changed it");
    char desc[200];
    CHECK_OK(rf_ps_ledger_check(buf, len, desc, sizeof desc));
    CHECK(strstr(desc, "epoch 1 (") != NULL, "desc '%s'", desc);
    free(buf);
    free(again);
    ps_ledger_free(&a);
    ps_ledger_free(&b);
    /* an unset ledger has nothing to save */
    ps_ledger_init(&a);
    CHECK_ST(ps_ledger_save(&a, &buf, &len), RF_ERR_INVALID_ARG);
}

/* The loaded ledger deals what the saved one deals once its clients are
 * gone (their shards returned), request for request, into epoch 3. */
static void test_deals_alike(void)
{
    ps_ledger a, b;
    busy(&a);
    unsigned char *buf;
    size_t len;
    save(&a, &buf, &len);
    ps_ledger_init(&b);
    CHECK_OK(ps_ledger_load(&b, buf, len));
    free(buf);
    for (uint32_t c = 1; c <= 3; c++)
        ps_ledger_release(&a, c);
    rf_ps_shard_grant ha[8] = {{0}}, hb[8] = {{0}};
    bool has[8] = {0};
    unsigned seed = 99;
    for (unsigned i = 0; i < 2000; i++) {
        seed = seed * 1103515245u + 12345u;
        uint32_t c = 4 + (seed >> 16) % 4;
        rf_ps_shard_grant da = ha[c], db = hb[c];
        da.batch++;
        db.batch++;
        ha[c] = ask(&a, c, has[c] ? &da : NULL);
        hb[c] = ask(&b, c, has[c] ? &db : NULL);
        has[c] = true;
        CHECK(ha[c].epoch == hb[c].epoch && ha[c].shard == hb[c].shard &&
                  ha[c].batch == hb[c].batch &&
                  ha[c].epochs_done == hb[c].epochs_done,
              "request %u of client %u: saved deals epoch %u shard %u "
              "batch %u, loaded epoch %u shard %u batch %u",
              i, c, ha[c].epoch, ha[c].shard, ha[c].batch, hb[c].epoch,
              hb[c].shard, hb[c].batch);
    }
    CHECK(ps_ledger_epochs_done(&b) >= 3, "%u epochs done",
          ps_ledger_epochs_done(&b));
    ps_ledger_free(&a);
    ps_ledger_free(&b);
}

/* Every truncation and every flipped byte is refused, the ledger unset. */
static void test_damage(void)
{
    ps_ledger a, b;
    busy(&a);
    unsigned char *buf;
    size_t len;
    save(&a, &buf, &len);
    ps_ledger_init(&b);
    for (size_t n = 0; n < len; n++) {
        CHECK_ST(ps_ledger_load(&b, buf, n), RF_ERR_CORRUPT);
        CHECK(!b.set && !b.tasks && !b.order, "a %zu-byte load left state", n);
    }
    for (size_t i = 0; i < len; i++) {
        buf[i] ^= 0x10;
        CHECK_ST(ps_ledger_load(&b, buf, len), RF_ERR_CORRUPT);
        CHECK(!b.set, "byte %zu flipped: loaded", i);
        buf[i] ^= 0x10;
    }
    CHECK_ST(rf_ps_ledger_check(buf, len - 4, NULL, 0), RF_ERR_CORRUPT);
    CHECK_OK(ps_ledger_load(&b, buf, len));
    free(buf);
    ps_ledger_free(&a);
    ps_ledger_free(&b);
}

/* a u32 at off changed, the CRC made right: only the consistency checks
 * stand between it and a load */
static void patch(unsigned char *buf, size_t len, size_t off, uint32_t v)
{
    rf_put_le32(buf + off, v);
    rf_put_le32(buf + len - 4, crc32_iscsi(buf, (int)(len - 4), 0));
}

static void refused(const unsigned char *orig, size_t len, size_t off,
                    uint32_t v, const char *needle)
{
    unsigned char *buf = malloc(len);
    memcpy(buf, orig, len);
    patch(buf, len, off, v);
    ps_ledger l;
    ps_ledger_init(&l);
    CHECK_ST(ps_ledger_load(&l, buf, len), RF_ERR_CORRUPT);
    CHECK_MSG(needle);
    CHECK(!l.set, "loaded with %u at %zu", v, off);
    free(buf);
}

static void test_inconsistent(void)
{
    ps_ledger a;
    busy(&a);
    unsigned char *buf;
    size_t len;
    save(&a, &buf, &len);
    const size_t t0 = PS_LEDGER_SAVE_HDR; /* task 0: epoch, shard, next */
    refused(buf, len, 0, 0x12345678, "magic");
    refused(buf, len, 4, 2, "format 2");
    refused(buf, len, 16, 0, "not one whole batch");    /* batch_size */
    refused(buf, len, 36, 28, "cursor 28 past");        /* cursor */
    refused(buf, len, 64, a.ntasks + 1, "bytes for");   /* ntasks */
    refused(buf, len, t0 + 4, 27, "outside 27 shards"); /* shard */
    refused(buf, len, t0, 2, "outside");                /* epoch 2 > 1 */
    refused(buf, len, t0 + 8, a.tasks[0].len, "a finished shard");
    /* task 1 made a copy of task 0 */
    unsigned char *dup = malloc(len);
    memcpy(dup, buf, len);
    memcpy(dup + t0 + 12, dup + t0, 12);
    rf_put_le32(dup + len - 4, crc32_iscsi(dup, (int)(len - 4), 0));
    ps_ledger l;
    ps_ledger_init(&l);
    CHECK_ST(ps_ledger_load(&l, dup, len), RF_ERR_CORRUPT);
    CHECK_MSG("saved twice");
    /* a shard of the epoch being dealt that its cursor has not dealt */
    uint32_t undealt = a.order[a.num_shards - 1];
    memcpy(dup, buf, len);
    rf_put_le32(dup + t0, a.epoch);
    rf_put_le32(dup + t0 + 4, undealt);
    rf_put_le32(dup + t0 + 8, 0);
    rf_put_le32(dup + len - 4, crc32_iscsi(dup, (int)(len - 4), 0));
    bool other = false; /* unless a task already holds it */
    for (uint32_t i = 1; i < a.ntasks; i++)
        other |= a.tasks[i].epoch == a.epoch && a.tasks[i].shard == undealt;
    if (!other && a.cursor < a.num_shards) {
        CHECK_ST(ps_ledger_load(&l, dup, len), RF_ERR_CORRUPT);
        CHECK_MSG("has not dealt");
    }
    free(dup);
    free(buf);
    ps_ledger_free(&a);
}

/* A checkpoint file with a ledger tensor: verify describes a good one and
 * refuses one that does not check, though every CRC32C matches. */
static void test_verify(void)
{
    ps_ledger a;
    busy(&a);
    unsigned char *buf;
    size_t len;
    save(&a, &buf, &len);
    char dir[] = "/tmp/rf_test_ledger_XXXXXX", path[64];
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    snprintf(path, sizeof path, "%s/model.ckpt-1.safetensors", dir);
    int64_t step = 1;
    rf_ckpt_tensor t[] = {
        {"global_step", RF_I64, RF_SCALAR, &step, sizeof step},
        {RF_CKPT_SHARD_LEDGER, RF_I32, RF_SHAPE((int64_t)len / 4), buf, len},
    };
    rf_ckpt_verify_report r;
    CHECK_OK(rf_ckpt_write(path, t, 2, NULL));
    CHECK_OK(rf_ckpt_verify(path, NULL, &r));
    CHECK(strstr(r.shard_ledger, "epoch 1 (") != NULL, "report '%s'",
          r.shard_ledger);
    rf_put_le32(buf + 36, a.num_shards + 1); /* the cursor, CRC left */
    CHECK_OK(rf_ckpt_write(path, t, 2, NULL));
    CHECK_ST(rf_ckpt_verify(path, NULL, &r), RF_ERR_CORRUPT);
    CHECK_MSG(RF_CKPT_SHARD_LEDGER);
    CHECK_MSG("CRC32C");
    unlink(path);
    rmdir(dir);
    free(buf);
    ps_ledger_free(&a);
}

static void test_codec(void)
{
    unsigned char buf[PS_MSG_MAX], page[PS_LEDGER_LOAD_PAGE + 1];
    for (unsigned i = 0; i < sizeof page; i++)
        page[i] = (unsigned char)i;
    size_t len;
    ps_ledger_req q = {.op = PS_LEDGER_OP_LOAD,
                       .offset = 960,
                       .total = 2000,
                       .count = 960,
                       .data = page},
                  q2;
    CHECK_OK(ps_enc_ledger_req(buf, PS_REQ_MAX, 5, &q, &len));
    CHECK(len <= PS_REQ_MAX, "a load page is %zu bytes", len);
    CHECK_OK(ps_dec_ledger_req(buf, len, &q2));
    CHECK(q2.op == q.op && q2.offset == 960 && q2.total == 2000 &&
              q2.count == 960 && !memcmp(q2.data, page, 960),
          "LEDGER_REQ round trip");
    CHECK_ST(ps_dec_ledger_req(buf, len - 1, &q2), RF_ERR_CORRUPT);
    q.count = PS_LEDGER_LOAD_PAGE + 1;
    q.total = 5000;
    CHECK_OK(ps_enc_ledger_req(buf, sizeof buf, 5, &q, &len));
    CHECK_ST(ps_dec_ledger_req(buf, len, &q2), RF_ERR_CORRUPT); /* page */
    q = (ps_ledger_req){.op = PS_LEDGER_OP_LOAD,
                        .offset = 1500,
                        .total = 2000,
                        .count = 600,
                        .data = page};
    CHECK_OK(ps_enc_ledger_req(buf, sizeof buf, 5, &q, &len));
    CHECK_ST(ps_dec_ledger_req(buf, len, &q2), RF_ERR_CORRUPT); /* past */
    q = (ps_ledger_req){.op = PS_LEDGER_OP_READ, .count = 1, .data = page};
    CHECK_OK(ps_enc_ledger_req(buf, sizeof buf, 5, &q, &len));
    CHECK_ST(ps_dec_ledger_req(buf, len, &q2), RF_ERR_CORRUPT); /* read */
    q = (ps_ledger_req){.op = 3};
    CHECK_OK(ps_enc_ledger_req(buf, sizeof buf, 5, &q, &len));
    CHECK_ST(ps_dec_ledger_req(buf, len, &q2), RF_ERR_CORRUPT); /* op */
    static unsigned char big[PS_LEDGER_READ_PAGE];
    ps_ledger_reply r = {.total = 9000,
                         .offset = 8000,
                         .count = 1000,
                         .loaded = true,
                         .data = big},
                    r2;
    CHECK_OK(ps_enc_ledger_reply(buf, sizeof buf, 6, &r, &len));
    CHECK_OK(ps_dec_ledger_reply(buf, len, &r2));
    CHECK(r2.total == 9000 && r2.offset == 8000 && r2.count == 1000 &&
              r2.loaded,
          "LEDGER_REPLY round trip");
    r.count = PS_LEDGER_READ_PAGE;
    r.offset = 0;
    CHECK_OK(ps_enc_ledger_reply(buf, sizeof buf, 6, &r, &len));
    CHECK(len <= PS_MSG_MAX, "a read page is %zu bytes", len);
    r.offset = 2000; /* past total */
    CHECK_OK(ps_enc_ledger_reply(buf, sizeof buf, 6, &r, &len));
    CHECK_ST(ps_dec_ledger_reply(buf, len, &r2), RF_ERR_CORRUPT);
    CHECK(!strcmp(ps_msg_type_name(PS_MSG_LEDGER_REQ), "LEDGER_REQ") &&
              !strcmp(ps_msg_type_name(PS_MSG_LEDGER_REPLY), "LEDGER_REPLY"),
          "type names");
}

int main(int argc, char **argv)
{
    static const rft_group groups[] = {
        {"round_trip", test_round_trip}, {"deals_alike", test_deals_alike},
        {"damage", test_damage},         {"inconsistent", test_inconsistent},
        {"verify", test_verify},         {"codec", test_codec},
    };
    return rft_groups_run(groups, sizeof groups / sizeof *groups, argc, argv);
}

/* tests/unit/ps/test_spec.c: the shard spec of a CREATE request carries
 * every optimizer's hyper-parameters: each kind (FTRL's learning_rate_power
 * and regularization strengths included, protocol version 3) round-trips
 * bit for bit, ps_spec_same tells configs apart by each field of their kind,
 * and the decoder keeps refusing an unknown kind and hyper-parameters on a
 * shard that is not trainable; an embedding table's max_push_rows (version
 * 4) round-trips and is refused where a table cannot be. */
#include <stdio.h>
#include <string.h>

#include "ps/proto.h"
#include "ps/ps_spec.h"
#include "tests/common/check.h"

static ps_spec base_spec(const rf_optim_config *cfg)
{
    ps_spec s;
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "emb/part_0");
    s.dtype = RF_F32;
    s.shape.rank = 2;
    s.shape.dims[0] = 100;
    s.shape.dims[1] = 8;
    s.trainable = cfg != NULL;
    if (cfg)
        s.optim = *cfg;
    return s;
}

static rf_optim_config ftrl_config(void)
{
    rf_optim_config c;
    CHECK_OK(rf_optim_defaults(RF_OPTIM_FTRL, &c));
    c.learning_rate = 3.0f;
    c.learning_rate_power = -0.7f;
    c.initial_accumulator_value = 0.25f;
    c.l1_regularization_strength = 0.001f;
    c.l2_regularization_strength = 2.0f;
    c.l2_shrinkage_regularization_strength = 0.1f;
    return c;
}

/* Every member bit for bit (not memcmp of the structs: their padding
 * bytes after the bools are indeterminate, and differed in the
 * ThreadSanitizer build). */
static bool same_bits(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}
static bool same_optim(const rf_optim_config *a, const rf_optim_config *b)
{
    return a->kind == b->kind && a->use_nesterov == b->use_nesterov &&
           a->centered == b->centered &&
           same_bits(a->learning_rate, b->learning_rate) &&
           same_bits(a->momentum, b->momentum) &&
           same_bits(a->initial_accumulator_value,
                     b->initial_accumulator_value) &&
           same_bits(a->beta1, b->beta1) && same_bits(a->beta2, b->beta2) &&
           same_bits(a->epsilon, b->epsilon) && same_bits(a->decay, b->decay) &&
           same_bits(a->learning_rate_power, b->learning_rate_power) &&
           same_bits(a->l1_regularization_strength,
                     b->l1_regularization_strength) &&
           same_bits(a->l2_regularization_strength,
                     b->l2_regularization_strength) &&
           same_bits(a->l2_shrinkage_regularization_strength,
                     b->l2_shrinkage_regularization_strength);
}

static size_t encode(const ps_spec *s, unsigned char *buf)
{
    size_t len = 0;
    CHECK_OK(ps_enc_create_req(buf, PS_MSG_MAX, 7, s, &len));
    return len;
}

static void test_roundtrip_every_kind(void)
{
    for (int k = 0; k < RF_OPTIM_KIND_COUNT; k++) {
        rf_optim_config c;
        CHECK_OK(rf_optim_defaults((rf_optimizer_kind)k, &c));
        c.learning_rate = 0.5f;
        if (k == RF_OPTIM_MOMENTUM)
            c.momentum = 0.9f;
        if (k == RF_OPTIM_FTRL)
            c = ftrl_config();
        ps_spec in = base_spec(&c), out;
        ps_spec_canonical_optim(&in.optim);
        unsigned char buf[PS_MSG_MAX];
        size_t len = encode(&in, buf);
        CHECK_OK(ps_dec_create_req(buf, len, &out));
        CHECK(same_optim(&in.optim, &out.optim),
              "%s: the optimizer config changed on the wire",
              rf_optim_kind_name((rf_optimizer_kind)k));
        CHECK_TRUE(ps_spec_same(&in, &out));
    }
}

static void test_ftrl_fields(void)
{
    const rf_optim_config c = ftrl_config();
    ps_spec a = base_spec(&c);
    unsigned char buf[PS_MSG_MAX];
    ps_spec out;
    size_t len = encode(&a, buf);
    CHECK_OK(ps_dec_create_req(buf, len, &out));
    CHECK(out.optim.kind == RF_OPTIM_FTRL && out.optim.learning_rate == 3.0f &&
              out.optim.learning_rate_power == -0.7f &&
              out.optim.initial_accumulator_value == 0.25f &&
              out.optim.l1_regularization_strength == 0.001f &&
              out.optim.l2_regularization_strength == 2.0f &&
              out.optim.l2_shrinkage_regularization_strength == 0.1f,
          "ftrl fields after the wire");
    CHECK_OK(rf_optim_validate(&out.optim));
    /* each FTRL field makes a different spec */
    for (int f = 0; f < 5; f++) {
        ps_spec b = a;
        float *field[] = {&b.optim.learning_rate_power,
                          &b.optim.initial_accumulator_value,
                          &b.optim.l1_regularization_strength,
                          &b.optim.l2_regularization_strength,
                          &b.optim.l2_shrinkage_regularization_strength};
        *field[f] *= 0.5f;
        CHECK(!ps_spec_same(&a, &b), "field %d ignored by ps_spec_same", f);
    }
}

/* The optimizer block is the 48 bytes before sync_n, sync_m and
 * max_push_rows (the last 12 bytes): kind, use_nesterov, centered,
 * reserved, then 11 floats. */
static void test_refusals(void)
{
    const rf_optim_config c = ftrl_config();
    ps_spec a = base_spec(&c), out;
    unsigned char buf[PS_MSG_MAX];
    size_t len = encode(&a, buf);
    CHECK(buf[len - 12 - 48] == RF_OPTIM_FTRL, "kind byte at %zu: %u",
          len - 12 - 48, buf[len - 12 - 48]);
    buf[len - 12 - 48] = RF_OPTIM_KIND_COUNT;
    CHECK_ST(ps_dec_create_req(buf, len, &out), RF_ERR_CORRUPT);
    CHECK_MSG("optimizer kind");

    ps_spec n = base_spec(NULL);
    len = encode(&n, buf);
    CHECK_OK(ps_dec_create_req(buf, len, &out));
    buf[len - 12 - 1] = 0x3f; /* l2_shrinkage's top byte: 0.5 or so */
    CHECK_ST(ps_dec_create_req(buf, len, &out), RF_ERR_CORRUPT);
    CHECK_MSG("not trainable but an optimizer");
}

/* Embedding tables (version 4): max_push_rows is the spec's last u32; it
 * round-trips, tells specs apart, and a table that is not trainable, is a
 * sync shard, has rank 0 or more than PS_MAX_PUSH_ROWS rows per push is
 * refused by the decoder. */
static void test_max_push_rows(void)
{
    rf_optim_config c;
    CHECK_OK(rf_optim_defaults(RF_OPTIM_ADAGRAD, &c));
    ps_spec a = base_spec(&c), out;
    ps_spec_canonical_optim(&a.optim);
    a.max_push_rows = 77;
    unsigned char buf[PS_MSG_MAX];
    size_t len = encode(&a, buf);
    CHECK(buf[len - 4] == 77 && buf[len - 3] == 0, "max_push_rows bytes");
    CHECK_OK(ps_dec_create_req(buf, len, &out));
    CHECK_EQ_U64(out.max_push_rows, 77);
    CHECK_TRUE(ps_spec_same(&a, &out));
    ps_spec b = a;
    b.max_push_rows = 78;
    CHECK(!ps_spec_same(&a, &b), "max_push_rows ignored by ps_spec_same");
    /* the same bytes with the count past the bound */
    buf[len - 1] = 0x7f;
    CHECK_ST(ps_dec_create_req(buf, len, &out), RF_ERR_CORRUPT);
    CHECK_MSG("embedding table");
    /* a table that is not trainable: encoded as a dense one, then the
     * count patched in */
    ps_spec n = base_spec(NULL);
    len = encode(&n, buf);
    buf[len - 4] = 5;
    CHECK_ST(ps_dec_create_req(buf, len, &out), RF_ERR_CORRUPT);
    CHECK_MSG("embedding table");
    /* the encoder refuses what the decoder would */
    ps_spec r0 = a;
    r0.shape.rank = 0;
    CHECK_ST(ps_enc_create_req(buf, PS_MSG_MAX, 7, &r0, &len),
             RF_ERR_INVALID_ARG);
    /* a sync-replicas table crosses the wire (protocol 6) */
    ps_spec sy = a;
    sy.sync_n = 1;
    sy.sync_m = 2;
    CHECK_OK(ps_enc_create_req(buf, PS_MSG_MAX, 7, &sy, &len));
    CHECK_OK(ps_dec_create_req(buf, len, &out));
    CHECK(out.sync_n == 1 && out.sync_m == 2 && out.max_push_rows == 77,
          "sync table: sync %u of %u, max_push_rows %u", out.sync_n, out.sync_m,
          out.max_push_rows);
}

int main(void)
{
    test_roundtrip_every_kind();
    test_ftrl_fields();
    test_refusals();
    test_max_push_rows();
    printf("unit.ps.spec: all checks passed\n");
    return 0;
}

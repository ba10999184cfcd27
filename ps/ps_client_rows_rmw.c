/* ps/ps_client_rows_rmw.c: apply=worker sparse pushes to an embedding
 * table (rf_ps_push_sparse; checked by ps_client_rows.c). The rows are
 * made unique (a repeated sgd index is one row updated twice, in order),
 * then, with use_locking, the shard's lock word is taken (CMP_AND_SWP,
 * jittered backoff until lock_timeout_ms) as a dense push takes it; one list
 * READs the unique rows of the values and of every slot into a gathered
 * registered buffer; rf_optim_apply_sparse runs on the gathered rows
 * (local indices); one list writes each row back inside its seqlock:
 * FETCH_AND_ADD of its version word (+1: odd), the WRITEs of its value and
 * slot rows, FETCH_AND_ADD (+1: even), the connection executing them in
 * order; with use_locking a fenced WRITE of 0 releases the lock after
 * them. Completes before returning. Without use_locking two workers writing
 * one row at once race (TensorFlow's use_locking=False: a reader may then
 * see a mixed row); a single writer per row, or use_locking, keeps every
 * row a reader accepts whole. Scratch (the gathered rows, the unique-row
 * table, the lists) is the client's, kept between calls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ps/ps_client_internal.h"
#include "rdmaflow/status.h"

static rf_status grow(void **p, size_t *cap, size_t want, size_t size)
{
    if (want <= *cap)
        return RF_OK;
    void *n = realloc(*p, want * size);
    if (!n)
        return rf_error_set(RF_ERR_NO_MEMORY, "ps client: out of memory");
    *p = n;
    *cap = want;
    return RF_OK;
}

/* The registered buffer of the gathered rows: at least bytes. */
static rf_status gather_buf(rf_ps_client *c, size_t bytes)
{
    if (bytes <= c->rmw_cap)
        return RF_OK;
    size_t cap = bytes < 4096 ? 4096 : bytes;
    void *p = NULL;
    if (posix_memalign(&p, 64, cap) != 0)
        return rf_error_set(RF_ERR_NO_MEMORY, "ps client: out of memory");
    rf_mr *mr;
    rf_status st = rf_mr_reg(c->fabric, p, cap, RF_ACCESS_LOCAL_WRITE, &mr);
    if (st != RF_OK) {
        free(p);
        return st;
    }
    if (c->rmw_mr)
        rf_mr_dereg(c->rmw_mr);
    free(c->rmw_buf);
    c->rmw_buf = p;
    c->rmw_mr = mr;
    c->rmw_cap = cap;
    return RF_OK;
}

/* Unique rows of rows[0..n) in order of first appearance into c->rmw_rows
 * (*m of them) and each position's index among them into c->rmw_local. */
static rf_status unique_rows(rf_ps_client *c, const int64_t *rows, size_t n,
                             size_t *m)
{
    size_t hcap = 16;
    while (hcap < 2 * n)
        hcap *= 2;
    rf_status st = grow((void **)&c->rmw_hash, &c->rmw_hash_cap, hcap,
                        sizeof *c->rmw_hash);
    /* rmw_rows and rmw_local share rmw_rows_cap */
    size_t cap = c->rmw_rows_cap;
    if (st == RF_OK)
        st = grow((void **)&c->rmw_rows, &cap, n, sizeof *c->rmw_rows);
    if (st == RF_OK)
        st = grow((void **)&c->rmw_local, &c->rmw_rows_cap, n,
                  sizeof *c->rmw_local);
    if (st != RF_OK)
        return st;
    memset(c->rmw_hash, 0, hcap * sizeof *c->rmw_hash);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t h = (uint64_t)rows[i] * 0x9e3779b97f4a7c15ull;
        size_t b = (size_t)(h >> 20) & (hcap - 1);
        while (c->rmw_hash[b] && c->rmw_rows[c->rmw_hash[b] - 1] != rows[i])
            b = (b + 1) & (hcap - 1);
        if (!c->rmw_hash[b]) {
            c->rmw_rows[k] = rows[i];
            c->rmw_hash[b] = ++k;
        }
        c->rmw_local[i] = (int64_t)(c->rmw_hash[b] - 1);
    }
    *m = k;
    return RF_OK;
}

static void sleep_us(uint32_t us)
{
    struct timespec ts = {.tv_sec = us / 1000000,
                          .tv_nsec = (long)(us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static uint32_t jitter(uint32_t us)
{
    static __thread uint64_t s = 0x2545f4914f6cdd1dull;
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return us / 2 + (uint32_t)(s % (us / 2 + 1));
}

/* Posts wrs[0..n) to v's ps as one list and waits. */
static rf_status run_list(rf_ps_client *c, rf_ps_var *v, rf_wr *wrs, size_t n,
                          const char *what)
{
    ps_cli_conn *p = &c->conns[v->ps];
    cli_group g = {0};
    c->rs_ops[v->ps] =
        (cli_op){.kind = CLI_OP_GROUP, .group = &g, .var = v, .conn = p};
    for (size_t i = 0; i < n; i++)
        wrs[i].context = &c->rs_ops[v->ps];
    cli_post_group(p, &g, wrs, n);
    return cli_group_wait(c, &g, what);
}

/* Takes the shard's lock word (words[0] gets the holder seen). */
static rf_status lock_shard(rf_ps_client *c, rf_ps_var *v, uint64_t *word)
{
    long long deadline = rf_now_ms() + c->opt.lock_timeout_ms;
    uint32_t backoff = 20;
    for (;;) {
        *word = 0;
        rf_wr w = {.op = RF_OP_CMP_SWAP,
                   .local = word,
                   .len = 8,
                   .local_mr = c->words_mr,
                   .remote_addr = v->rec_addr + PS_REC_LOCK_OFF,
                   .rkey = v->rkey,
                   .compare_add = 0,
                   .swap = c->lock_token};
        rf_status st = run_list(c, v, &w, 1, "rf_ps_push_sparse (lock)");
        if (st != RF_OK)
            return st;
        if (*word == 0)
            return RF_OK;
        if (rf_now_ms() >= deadline) {
            char name[340];
            return rf_error_set(
                RF_ERR_TIMEOUT,
                "rf_ps_push_sparse: the lock of '%s' part %u on %s is still "
                "held by client %u after %d ms (a worker that died holding "
                "it?)",
                v->spec.name, v->spec.part,
                cli_ps_name(&c->conns[v->ps], name, sizeof name),
                (unsigned)(*word & 0xffffffffu), c->opt.lock_timeout_ms);
        }
        sleep_us(jitter(backoff));
        backoff = backoff * 2 > 2000 ? 2000 : backoff * 2;
    }
}

rf_status cli_rows_rmw(rf_ps_client *c, rf_ps_var *v, const int64_t *rows,
                       size_t n, const float *grad, bool use_locking)
{
    const char *what = "rf_ps_push_sparse (apply=worker)";
    size_t m = 0;
    rf_status st = unique_rows(c, rows, n, &m);
    if (st != RF_OK || m == 0)
        return st; /* n = 0: nothing moves (Adam is refused) */
    const ps_layout *l = &v->lay;
    size_t rb = (size_t)l->row_bytes, nf = 1 + l->num_slots;
    /* per row: READs of its nf fields; then FETCH_AND_ADD, nf WRITEs,
     * FETCH_AND_ADD; and the unlock */
    if ((st = gather_buf(c, nf * m * rb)) != RF_OK ||
        (st = cli_words(c, 2 * m + 2)) != RF_OK ||
        (st = cli_rows_scratch(c, (nf + 2) * m + 1, 0)) != RF_OK)
        return st;
    uint64_t *words = (uint64_t *)(void *)c->words;
    if (use_locking && (st = lock_shard(c, v, &words[0])) != RF_OK)
        return st;
    uint64_t off[1 + RF_OPTIM_MAX_SLOTS];
    float *field[1 + RF_OPTIM_MAX_SLOTS];
    for (size_t f = 0; f < nf; f++) {
        off[f] = f == 0 ? l->values_off : l->slot_off[f - 1];
        field[f] = (float *)(void *)(c->rmw_buf + f * m * rb);
    }
    rf_wr base = {.len = rb, .local_mr = c->rmw_mr, .rkey = v->rkey};
    size_t k = 0;
    for (size_t j = 0; j < m; j++)
        for (size_t f = 0; f < nf; f++) {
            rf_wr w = base;
            w.op = RF_OP_READ;
            w.local = (unsigned char *)field[f] + j * rb;
            w.remote_addr =
                v->rec_addr + off[f] + (uint64_t)c->rmw_rows[j] * l->row_bytes;
            c->rs_wrs[k++] = w;
        }
    st = run_list(c, v, c->rs_wrs, k, what);
    rf_status applied = RF_ERR_ABORTED;
    char err[400] = "";
    if (st == RF_OK) {
        rf_optim_scalars sc = {0};
        applied = rf_optim_apply_sparse(&v->spec.optim, field[0], field + 1, m,
                                        rb / sizeof(float), c->rmw_local, n,
                                        grad, &sc);
        if (applied != RF_OK)
            snprintf(err, sizeof err, "%s", rf_error_message());
    }
    k = 0;
    for (size_t j = 0; st == RF_OK && applied == RF_OK && j < m; j++) {
        uint64_t r = (uint64_t)c->rmw_rows[j];
        rf_wr faa = {.op = RF_OP_FETCH_ADD,
                     .len = 8,
                     .local_mr = c->words_mr,
                     .remote_addr = v->rec_addr + l->rowver_off + 8 * r,
                     .rkey = v->rkey,
                     .compare_add = 1};
        faa.local = &words[2 + 2 * j];
        c->rs_wrs[k++] = faa;
        for (size_t f = 0; f < nf; f++) {
            rf_wr w = base;
            w.op = RF_OP_WRITE;
            w.local = (unsigned char *)field[f] + j * rb;
            w.remote_addr = v->rec_addr + off[f] + r * l->row_bytes;
            c->rs_wrs[k++] = w;
        }
        faa.local = &words[3 + 2 * j];
        c->rs_wrs[k++] = faa;
    }
    if (use_locking) {
        words[1] = 0;
        c->rs_wrs[k++] = (rf_wr){.op = RF_OP_WRITE,
                                 .flags = RF_WR_FENCE,
                                 .local = &words[1],
                                 .len = 8,
                                 .local_mr = c->words_mr,
                                 .remote_addr = v->rec_addr + PS_REC_LOCK_OFF,
                                 .rkey = v->rkey};
    }
    if (k) {
        rf_status wst = run_list(c, v, c->rs_wrs, k, what);
        if (st == RF_OK)
            st = wst;
    }
    if (st == RF_OK && applied != RF_OK)
        return rf_error_set(applied, "%s: '%s' part %u: %s", what, v->spec.name,
                            v->spec.part, err);
    return st;
}

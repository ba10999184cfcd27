/* ps/ps_client_data.c: one-sided reads and writes of shard fields
 * (pull = READ straight into the caller's registered buffers, all of one ps
 * in one rf_post, one batch per ps, then one wait for all), the chief's
 * initialisation (values, then each init flag, ordered on the same
 * connection), the non-chief's bounded poll of the init flags, global_step
 * (FETCH_AND_ADD / READ / WRITE of ps 0's word), the workers-done count
 * (FETCH_AND_ADD by each finished worker, polled by the chief) and
 * SHUTDOWN. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "ps/ps_client_internal.h"
#include "rdmaflow/status.h"

rf_status cli_check_xfer(rf_ps_client *c, const rf_ps_xfer *x, bool write,
                         uint64_t *remote)
{
    (void)write;
    rf_ps_var *v = x->var;
    if (!v || v->client != c)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "ps transfer: no variable or one of another "
                            "client");
    char name[340];
    ps_cli_conn *p = &c->conns[v->ps];
    if (v->stale)
        return rf_error_set(RF_ERR_ABORTED,
                            "'%s' part %u is gone: %s restarted; the chief "
                            "must recreate and restore it (rf_ps_create / "
                            "rf_ps_lookup refresh the handle)",
                            v->spec.name, v->spec.part,
                            cli_ps_name(p, name, sizeof name));
    rf_status st = cli_conn_check(p);
    if (st != RF_OK)
        return st;
    uint64_t off, size = v->e.values_bytes;
    if (x->field == RF_PS_FIELD_VALUES) {
        off = v->e.values_off;
    } else if ((int)x->field >= RF_PS_FIELD_SLOT0 &&
               (int)x->field < RF_PS_FIELD_SLOT0 + (int)v->e.num_slots) {
        off = v->e.slot_off[(int)x->field - RF_PS_FIELD_SLOT0];
    } else if (x->field == RF_PS_FIELD_SCALARS && v->spec.trainable) {
        off = PS_REC_SCALARS_OFF;
        size = 8;
    } else {
        return rf_error_set(
            RF_ERR_INVALID_ARG, "'%s' part %u has no field %d (%u slots)",
            v->spec.name, v->spec.part, (int)x->field, v->e.num_slots);
    }
    if (x->len != size)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "'%s' part %u field %d: %zu bytes given, the "
                            "field has %llu",
                            v->spec.name, v->spec.part, (int)x->field, x->len,
                            (unsigned long long)size);
    if (size) {
        const unsigned char *b = x->buf,
                            *base = x->mr ? rf_mr_addr(x->mr) : NULL;
        if (!b || !base || b < base || (size_t)(b - base) > rf_mr_len(x->mr) ||
            size > rf_mr_len(x->mr) - (size_t)(b - base))
            return rf_error_set(RF_ERR_INVALID_ARG,
                                "'%s' part %u: buffer %p+%llu is not inside "
                                "its registered region",
                                v->spec.name, v->spec.part, x->buf,
                                (unsigned long long)size);
    }
    *remote = v->rec_addr + off;
    return RF_OK;
}

/* An embedding table's values or slot: its rows are row records
 * (ps_layout.h), not one array. */
static bool table_field(const rf_ps_xfer *x)
{
    return x->var && x->var->lay.max_push_rows &&
           x->field != RF_PS_FIELD_SCALARS;
}

/* Rows of a table per row-set write of a whole field. */
#define TABLE_WRITE_ROWS 8192u

/* A whole field of a table: READ as row ranges (each row checked), the
 * chief's initial values as range writes (before the flag, which follows),
 * any other WRITE as row updates (rf_ps_write_rows). */
static rf_status table_transfer(rf_ps_client *c, const rf_ps_xfer *x, rf_op op,
                                bool flags, const char *what)
{
    rf_ps_var *v = x->var;
    uint64_t off = 0;
    rf_status st = cli_table_check(c, v, what);
    if (st == RF_OK)
        st = cli_field_off(v, x->field, &off, what);
    if (st != RF_OK)
        return st;
    if (x->len != v->e.values_bytes)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "'%s' part %u field %d: %zu bytes given, the "
                            "field has %llu",
                            v->spec.name, v->spec.part, (int)x->field, x->len,
                            (unsigned long long)v->e.values_bytes);
    size_t rows = (size_t)v->lay.rows, rb = (size_t)v->lay.row_bytes;
    if ((st = cli_rows_in_mr(v, x->buf, rows, rb, x->mr, what, "the buffer")) !=
        RF_OK)
        return st;
    if (op == RF_OP_READ)
        return cli_rows_read_range(c, v, x->field, 0, rows, x->buf, x->mr);
    if (flags) {
        st = cli_rows_write_range(c, v, x->field, 0, rows, x->buf, x->mr);
        if (st == RF_OK && (st = cli_words(c, 1)) == RF_OK) {
            *(uint64_t *)(void *)c->words = PS_INIT_DONE;
            st = cli_record_words(c, &v, 1, RF_OP_WRITE, PS_REC_INIT_OFF, 8, 0,
                                  0, what);
        }
        return st;
    }
    int64_t *idx = malloc(TABLE_WRITE_ROWS * sizeof *idx);
    if (!idx)
        return rf_error_set(RF_ERR_NO_MEMORY, "ps client: out of memory");
    for (size_t r0 = 0; r0 < rows && st == RF_OK; r0 += TABLE_WRITE_ROWS) {
        size_t m = rows - r0 < TABLE_WRITE_ROWS ? rows - r0 : TABLE_WRITE_ROWS;
        for (size_t i = 0; i < m; i++)
            idx[i] = (int64_t)(r0 + i);
        rf_ps_rows set = {.var = v,
                          .field = x->field,
                          .rows = idx,
                          .n = m,
                          .buf = (unsigned char *)x->buf + r0 * rb,
                          .mr = x->mr};
        size_t f = x->field == RF_PS_FIELD_VALUES
                       ? 0
                       : 1 + (size_t)(x->field - RF_PS_FIELD_SLOT0);
        st = cli_rows_write_field(c, &set, f);
    }
    free(idx);
    return st;
}

rf_status cli_batch_reserve(rf_ps_client *c, size_t n)
{
    if (n <= c->batch_cap)
        return RF_OK;
    if (n > SIZE_MAX / sizeof(rf_wr) || n > SIZE_MAX / sizeof(cli_op))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "ps client: %zu transfers in one call", n);
    rf_wr *wrs = realloc(c->batch_wrs, n * sizeof *wrs);
    if (wrs)
        c->batch_wrs = wrs;
    cli_op *ops = realloc(c->batch_ops, n * sizeof *ops);
    if (ops)
        c->batch_ops = ops;
    uint64_t *remote = realloc(c->batch_remote, n * sizeof *remote);
    if (remote)
        c->batch_remote = remote;
    if (!wrs || !ops || !remote)
        return rf_error_set(RF_ERR_NO_MEMORY, "ps client: out of memory");
    c->batch_cap = n;
    return RF_OK;
}

/* Posts one request per transfer (plus, with flags, a write of each init
 * flag after the values), one batch per ps, and waits for all; a table's
 * fields go through table_transfer first, one by one. */
static rf_status transfer(rf_ps_client *c, const rf_ps_xfer *x, size_t n,
                          rf_op op, bool flags, const char *what)
{
    size_t tables = 0;
    for (size_t i = 0; i < n; i++)
        tables += table_field(&x[i]);
    if (tables) {
        rf_ps_xfer *rest = calloc(n, sizeof *rest);
        if (!rest)
            return rf_error_set(RF_ERR_NO_MEMORY, "ps client: out of memory");
        size_t k = 0;
        rf_status st = RF_OK;
        for (size_t i = 0; i < n && st == RF_OK; i++) {
            if (!table_field(&x[i]))
                rest[k++] = x[i];
            else if (flags && x[i].field != RF_PS_FIELD_VALUES)
                st = rf_error_set(RF_ERR_INVALID_ARG,
                                  "rf_ps_init_values: '%s' part %u: initial "
                                  "values go to field VALUES",
                                  x[i].var->spec.name, x[i].var->spec.part);
            else
                st = table_transfer(c, &x[i], op, flags, what);
        }
        if (st == RF_OK && k)
            st = transfer(c, rest, k, op, flags, what);
        free(rest);
        return st;
    }
    /* a value write and a flag write per transfer, at most */
    rf_status st = n > SIZE_MAX / 4
                       ? rf_error_set(RF_ERR_INVALID_ARG,
                                      "%s: %zu transfers in one call", what, n)
                       : cli_batch_reserve(c, 2 * n + 1);
    uint64_t *remote = c->batch_remote;
    rf_wr *wrs = c->batch_wrs;
    cli_op *ops = c->batch_ops;
    for (size_t i = 0; st == RF_OK && i < n; i++) {
        st = cli_check_xfer(c, &x[i], op == RF_OP_WRITE, &remote[i]);
        if (st == RF_OK && flags && x[i].field != RF_PS_FIELD_VALUES)
            st = rf_error_set(RF_ERR_INVALID_ARG,
                              "rf_ps_init_values: '%s' part %u: initial "
                              "values go to field VALUES",
                              x[i].var->spec.name, x[i].var->spec.part);
    }
    if (st == RF_OK && flags)
        st = cli_words(c, 1);
    if (st != RF_OK)
        return st;
    uint64_t *one = (uint64_t *)(void *)c->words;
    if (flags)
        *one = PS_INIT_DONE;
    cli_group g = {0};
    size_t used = 0;
    for (size_t ps = 0; ps < c->num_ps; ps++) {
        ps_cli_conn *p = &c->conns[ps];
        size_t first = used;
        for (int pass = 0; pass < (flags ? 2 : 1); pass++) {
            for (size_t i = 0; i < n; i++) {
                rf_ps_var *v = x[i].var;
                if (v->ps != ps || (pass == 0 && x[i].len == 0))
                    continue;
                ops[used] = (cli_op){
                    .kind = CLI_OP_GROUP, .group = &g, .var = v, .conn = p};
                if (pass == 0)
                    wrs[used] = (rf_wr){.op = op,
                                        .context = &ops[used],
                                        .local = x[i].buf,
                                        .len = x[i].len,
                                        .local_mr = x[i].mr,
                                        .remote_addr = remote[i],
                                        .rkey = v->rkey};
                else
                    wrs[used] =
                        (rf_wr){.op = RF_OP_WRITE,
                                .context = &ops[used],
                                .local = one,
                                .len = 8,
                                .local_mr = c->words_mr,
                                .remote_addr = v->rec_addr + PS_REC_INIT_OFF,
                                .rkey = v->rkey};
                used++;
            }
        }
        if (used > first)
            cli_post_group(p, &g, wrs + first, used - first);
    }
    return cli_group_wait(c, &g, what);
}

rf_status rf_ps_read(rf_ps_client *c, const rf_ps_xfer *x, size_t n)
{
    if (!c || (n && !x))
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_ps_read: NULL argument");
    cli_lock(c);
    rf_status st = transfer(c, x, n, RF_OP_READ, false, "rf_ps_read");
    cli_unlock(c);
    return st;
}

rf_status rf_ps_write(rf_ps_client *c, const rf_ps_xfer *x, size_t n)
{
    if (!c || (n && !x))
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_ps_write: NULL argument");
    cli_lock(c);
    rf_status st = transfer(c, x, n, RF_OP_WRITE, false, "rf_ps_write");
    cli_unlock(c);
    return st;
}

rf_status rf_ps_init_values(rf_ps_client *c, const rf_ps_xfer *x, size_t n)
{
    if (!c || (n && !x))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_init_values: NULL argument");
    if (!c->opt.is_chief)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_init_values: only the chief initialises "
                            "variables");
    cli_lock(c);
    rf_status st = transfer(c, x, n, RF_OP_WRITE, true, "rf_ps_init_values");
    cli_unlock(c);
    return st;
}

rf_status cli_record_words(rf_ps_client *c, rf_ps_var *const *vars, size_t n,
                           rf_op op, uint64_t off, size_t len, size_t first,
                           size_t stride, const char *what)
{
    rf_status st = cli_batch_reserve(c, n + 1);
    if (st != RF_OK)
        return st;
    rf_wr *wrs = c->batch_wrs;
    cli_op *ops = c->batch_ops;
    uint64_t *words = (uint64_t *)(void *)c->words;
    cli_group g = {0};
    size_t used = 0;
    for (size_t ps = 0; ps < c->num_ps; ps++) {
        size_t from = used;
        for (size_t i = 0; i < n; i++) {
            rf_ps_var *v = vars[i];
            if (v->ps != ps)
                continue;
            uint64_t *local = &words[first + stride * i];
            if (op == RF_OP_READ)
                memset(local, 0, len);
            ops[used] = (cli_op){.kind = CLI_OP_GROUP,
                                 .group = &g,
                                 .var = v,
                                 .conn = &c->conns[ps]};
            wrs[used] = (rf_wr){.op = op,
                                .context = &ops[used],
                                .local = local,
                                .len = len,
                                .local_mr = c->words_mr,
                                .remote_addr = v->rec_addr + off,
                                .rkey = v->rkey};
            used++;
        }
        if (used > from)
            cli_post_group(&c->conns[ps], &g, wrs + from, used - from);
    }
    return cli_group_wait(c, &g, what);
}

/* Every var is this client's, not stale, and its ps connection is up
 * (under c->mu). */
rf_status cli_vars_usable(rf_ps_client *c, rf_ps_var *const *vars, size_t n,
                          const char *what)
{
    rf_status st = RF_OK;
    for (size_t i = 0; i < n && st == RF_OK; i++) {
        rf_ps_var *v = vars[i];
        char name[340];
        if (!v || v->client != c)
            st = rf_error_set(RF_ERR_INVALID_ARG, "%s: bad variable %zu", what,
                              i);
        else if (v->stale)
            st = rf_error_set(RF_ERR_ABORTED,
                              "'%s' part %u is gone: %s restarted",
                              v->spec.name, v->spec.part,
                              cli_ps_name(&c->conns[v->ps], name, sizeof name));
        else
            st = cli_conn_check(&c->conns[v->ps]);
    }
    return st;
}

rf_status rf_ps_wait_initialized(rf_ps_client *c, rf_ps_var *const *vars,
                                 size_t n, int poll_ms, int timeout_ms)
{
    if (!c || (n && !vars))
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_wait_initialized: NULL argument");
    if (poll_ms <= 0)
        poll_ms = 50;
    cli_lock(c);
    rf_status st = cli_vars_usable(c, vars, n, "rf_ps_wait_initialized");
    if (st == RF_OK)
        st = cli_words(c, n + 1);
    long long deadline = rf_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    while (st == RF_OK) {
        /* every var's init flag into c->words[1 + i] */
        if ((st = cli_record_words(c, vars, n, RF_OP_READ, PS_REC_INIT_OFF, 8,
                                   1, 1, "reading init flags")) != RF_OK)
            break;
        const uint64_t *words = (const uint64_t *)(const void *)c->words;
        size_t missing = 0;
        for (size_t i = 0; i < n; i++)
            missing += words[1 + i] != PS_INIT_DONE;
        if (!missing)
            break;
        long long left = deadline - rf_now_ms();
        if (left <= 0) {
            char list[900] = "";
            size_t shown = 0;
            for (size_t i = 0; i < n; i++) {
                if (words[1 + i] == PS_INIT_DONE)
                    continue;
                size_t used = strlen(list);
                if (shown == 8) {
                    snprintf(list + used, sizeof list - used, " and %zu more",
                             missing - shown);
                    break;
                }
                snprintf(list + used, sizeof list - used,
                         "%s'%s' part %u (ps task %zu)", shown ? ", " : "",
                         vars[i]->spec.name, vars[i]->spec.part, vars[i]->ps);
                shown++;
            }
            st = rf_error_set(RF_ERR_TIMEOUT,
                              "%zu variable%s not initialised by the chief "
                              "within %g s: %s",
                              missing, missing == 1 ? "" : "s",
                              timeout_ms / 1000.0, list);
            break;
        }
        long long nap = poll_ms < left ? poll_ms : left;
        cli_unlock(c);
        rf_sleep_ms(nap);
        cli_lock(c);
    }
    cli_unlock(c);
    return st;
}

/* ---- globals: global_step, workers done ---------------------------------- */

/* One atomic, read or write of the word at offset `word` of ps 0's globals
 * block: arg is the written value, the addend or the compare value, swap
 * cmp_swap's new value; *result (may be NULL) the word before. */
static rf_status globals_rmw(rf_ps_client *c, uint32_t word, rf_op op,
                             uint64_t arg, uint64_t swap, uint64_t *result,
                             const char *what)
{
    cli_lock(c);
    ps_cli_conn *p = &c->conns[0];
    rf_status st = cli_conn_check(p);
    if (st == RF_OK)
        st = cli_words(c, 1);
    if (st != RF_OK) {
        cli_unlock(c);
        return st;
    }
    const rf_mr_desc *r = &p->regions[p->globals.region];
    uint64_t *w = (uint64_t *)(void *)c->words;
    *w = op == RF_OP_WRITE ? arg : 0;
    cli_group g = {0};
    cli_op o = {.kind = CLI_OP_GROUP, .group = &g, .conn = p};
    rf_wr wr = {.op = op,
                .context = &o,
                .local = w,
                .len = 8,
                .local_mr = c->words_mr,
                .remote_addr = r->addr + p->globals.offset + word,
                .rkey = r->rkey,
                .compare_add =
                    op == RF_OP_FETCH_ADD || op == RF_OP_CMP_SWAP ? arg : 0,
                .swap = op == RF_OP_CMP_SWAP ? swap : 0};
    cli_post_group(p, &g, &wr, 1);
    st = cli_group_wait(c, &g, what);
    if (st == RF_OK && result)
        *result = *w;
    cli_unlock(c);
    return st;
}

static rf_status globals_op(rf_ps_client *c, uint32_t word, rf_op op,
                            uint64_t arg, uint64_t *result, const char *what)
{
    return globals_rmw(c, word, op, arg, 0, result, what);
}

rf_status cli_globals_read(rf_ps_client *c, uint32_t off, uint64_t *out,
                           const char *what)
{
    return globals_op(c, off, RF_OP_READ, 0, out, what);
}

rf_status cli_globals_fetch_add(rf_ps_client *c, uint32_t off, uint64_t add,
                                uint64_t *old, const char *what)
{
    return globals_op(c, off, RF_OP_FETCH_ADD, add, old, what);
}

static rf_status step_op(rf_ps_client *c, rf_op op, uint64_t arg,
                         uint64_t *result, const char *what)
{
    return globals_op(c, PS_GLOBAL_STEP_OFF, op, arg, result, what);
}

rf_status rf_ps_global_step_add(rf_ps_client *c, int64_t add, int64_t *old)
{
    if (!c)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_ps_global_step_add: NULL");
    uint64_t v = 0;
    rf_status st = step_op(c, RF_OP_FETCH_ADD, (uint64_t)add, &v,
                           "global_step FETCH_AND_ADD on ps task 0");
    if (st == RF_OK && old)
        *old = (int64_t)v;
    return st;
}

rf_status rf_ps_global_step_read(rf_ps_client *c, int64_t *value)
{
    if (!c || !value)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_ps_global_step_read: NULL");
    uint64_t v = 0;
    rf_status st =
        step_op(c, RF_OP_READ, 0, &v, "global_step READ on ps task 0");
    if (st == RF_OK)
        *value = (int64_t)v;
    return st;
}

rf_status rf_ps_global_step_write(rf_ps_client *c, int64_t value)
{
    if (!c)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_global_step_write: NULL");
    return step_op(c, RF_OP_WRITE, (uint64_t)value, NULL,
                   "global_step WRITE on ps task 0");
}

rf_status rf_ps_global_step_cas(rf_ps_client *c, int64_t expected,
                                int64_t desired, int64_t *old)
{
    if (!c)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_ps_global_step_cas: NULL");
    uint64_t v = 0;
    rf_status st = globals_rmw(c, PS_GLOBAL_STEP_OFF, RF_OP_CMP_SWAP,
                               (uint64_t)expected, (uint64_t)desired, &v,
                               "global_step CMP_AND_SWP on ps task 0");
    if (st == RF_OK && old)
        *old = (int64_t)v;
    return st;
}

/* ---- stale synchronous parallel clocks ---------------------------------- */

rf_status rf_ps_clock_advance(rf_ps_client *c, int64_t add, int64_t *old)
{
    if (!c)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_ps_clock_advance: NULL");
    uint32_t id = c->opt.client_id;
    if (id >= RF_PS_MAX_CLOCKS)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_clock_advance: client id %u; ps task 0 "
                            "holds the clocks of ids below %u",
                            id, RF_PS_MAX_CLOCKS);
    uint64_t v = 0;
    rf_status st =
        globals_op(c, PS_CLOCKS_OFF + 8u * id, RF_OP_FETCH_ADD, (uint64_t)add,
                   &v, "clock FETCH_AND_ADD on ps task 0");
    if (st == RF_OK && old)
        *old = (int64_t)v;
    return st;
}

rf_status rf_ps_clocks_read(rf_ps_client *c, uint32_t first_id, size_t n,
                            int64_t *clocks)
{
    if (!c || (n && !clocks))
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_ps_clocks_read: NULL");
    if (first_id > RF_PS_MAX_CLOCKS || n > RF_PS_MAX_CLOCKS - first_id)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_clocks_read: client ids [%u, %u + %zu) "
                            "are not all below %u, the clocks ps task 0 "
                            "holds",
                            first_id, first_id, n, RF_PS_MAX_CLOCKS);
    if (n == 0)
        return RF_OK;
    cli_lock(c);
    ps_cli_conn *p = &c->conns[0];
    rf_status st = cli_conn_check(p);
    if (st == RF_OK)
        st = cli_words(c, n);
    if (st != RF_OK) {
        cli_unlock(c);
        return st;
    }
    const rf_mr_desc *r = &p->regions[p->globals.region];
    cli_group g = {0};
    cli_op o = {.kind = CLI_OP_GROUP, .group = &g, .conn = p};
    rf_wr wr = {.op = RF_OP_READ,
                .context = &o,
                .local = c->words,
                .len = 8 * n,
                .local_mr = c->words_mr,
                .remote_addr = r->addr + p->globals.offset + PS_CLOCKS_OFF +
                               8ull * first_id,
                .rkey = r->rkey};
    cli_post_group(p, &g, &wr, 1);
    st = cli_group_wait(c, &g, "clocks READ on ps task 0");
    if (st == RF_OK) /* atomics' words: host order, as global_step's */
        memcpy(clocks, c->words, 8 * n);
    cli_unlock(c);
    return st;
}

/* The workers-done bitmap: RF_PS_DONE_WORDS words from PS_WORKERS_DONE_OFF,
 * bit id % 64 of word id / 64 for client id. */
static uint32_t done_word_off(uint32_t id)
{
    return PS_WORKERS_DONE_OFF + 8u * (id / 64u);
}

/* ORs bit into the bitmap word at off: CMP_AND_SWP until it is in (other
 * workers set theirs too). */
static rf_status done_word_or(rf_ps_client *c, uint32_t off, uint64_t bits)
{
    uint64_t seen = 0;
    rf_status st = globals_op(c, off, RF_OP_READ, 0, &seen,
                              "workers-done READ on ps task 0");
    while (st == RF_OK && (seen & bits) != bits) {
        uint64_t before = 0;
        st = globals_rmw(c, off, RF_OP_CMP_SWAP, seen, seen | bits, &before,
                         "workers-done CMP_AND_SWP on ps task 0");
        seen = before == seen ? seen | bits : before;
    }
    return st;
}

rf_status rf_ps_worker_done(rf_ps_client *c)
{
    if (!c)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_ps_worker_done: NULL");
    uint32_t id = c->opt.client_id;
    if (id >= RF_PS_MAX_DONE_WORKERS)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_worker_done: client id %u; the workers-done "
                            "bitmap holds ids below %u",
                            id, RF_PS_MAX_DONE_WORKERS);
    return done_word_or(c, done_word_off(id), 1ull << (id % 64u));
}

rf_status rf_ps_workers_done_merge(rf_ps_client *c,
                                   const uint64_t bits[RF_PS_DONE_WORDS])
{
    if (!c || !bits)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_workers_done_merge: NULL");
    if (!c->opt.is_chief)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_workers_done_merge: only the chief sets "
                            "other workers' bits");
    for (uint32_t w = 0; w < RF_PS_DONE_WORDS; w++) {
        rf_status st =
            bits[w] ? done_word_or(c, done_word_off(64u * w), bits[w]) : RF_OK;
        if (st != RF_OK)
            return st;
    }
    return RF_OK;
}

rf_status rf_ps_workers_done_read(rf_ps_client *c,
                                  uint64_t bits[RF_PS_DONE_WORDS])
{
    if (!c || !bits)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_workers_done_read: NULL");
    for (uint32_t w = 0; w < RF_PS_DONE_WORDS; w++) {
        rf_status st = globals_op(c, done_word_off(64u * w), RF_OP_READ, 0,
                                  &bits[w], "workers-done READ on ps task 0");
        if (st != RF_OK)
            return st;
    }
    return RF_OK;
}

bool rf_ps_worker_is_done(const uint64_t bits[RF_PS_DONE_WORDS], uint32_t id)
{
    return id < RF_PS_MAX_DONE_WORKERS &&
           (bits[id / 64u] >> (id % 64u) & 1u) != 0;
}

rf_status rf_ps_wait_workers_done(rf_ps_client *c, const uint32_t *ids,
                                  size_t n, int poll_ms, int timeout_ms,
                                  uint64_t bits[RF_PS_DONE_WORDS])
{
    if (!c || (n && !ids) || !bits)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_wait_workers_done: NULL");
    if (poll_ms <= 0)
        poll_ms = 50;
    long long deadline = rf_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
    for (;;) {
        rf_status st = rf_ps_workers_done_read(c, bits);
        if (st != RF_OK)
            return st;
        size_t missing = 0;
        for (size_t i = 0; i < n; i++)
            missing += !rf_ps_worker_is_done(bits, ids[i]);
        if (missing == 0)
            return RF_OK;
        long long left = deadline - rf_now_ms();
        if (left <= 0) {
            char list[512] = "";
            for (size_t i = 0, k = 0; i < n; i++) {
                size_t used = strlen(list);
                if (!rf_ps_worker_is_done(bits, ids[i]) && used < sizeof list)
                    snprintf(list + used, sizeof list - used, "%s%u",
                             k++ ? ", " : "", ids[i]);
            }
            return rf_error_set(RF_ERR_TIMEOUT,
                                "%zu of %zu workers announced they finished "
                                "(rf_ps_worker_done) within %g s; missing "
                                "client id%s %s",
                                n - missing, n,
                                (timeout_ms > 0 ? timeout_ms : 0) / 1000.0,
                                missing == 1 ? "" : "s", list);
        }
        rf_sleep_ms(poll_ms < left ? poll_ms : left);
    }
}

/* ---- shutdown ---------------------------------------------------------- */

rf_status rf_ps_shutdown(rf_ps_client *c)
{
    if (!c)
        return rf_error_set(RF_ERR_INVALID_ARG, "rf_ps_shutdown: NULL");
    if (!c->opt.is_chief)
        return rf_error_set(RF_ERR_INVALID_ARG,
                            "rf_ps_shutdown: only the chief shuts the ps "
                            "tasks down");
    cli_lock(c);
    rf_status first = RF_OK;
    char err[600] = "";
    for (size_t i = 0; i < c->num_ps; i++) {
        ps_cli_conn *p = &c->conns[i];
        size_t len;
        const unsigned char *reply;
        size_t rlen;
        rf_status st =
            ps_enc_empty(cli_req_buf(p), PS_REQ_MAX, PS_MSG_SHUTDOWN_REQ,
                         cli_next_req_id(p), &len);
        if (st == RF_OK)
            st = cli_rpc(p, len, PS_MSG_SHUTDOWN_REPLY, &reply, &rlen);
        if (st == RF_OK) {
            st = ps_dec_empty(reply, rlen, PS_MSG_SHUTDOWN_REPLY);
            cli_rpc_done(p);
        }
        if (st == RF_OK) {
            cli_conn_set_state(p, CLI_CONN_DOWN, "shut down by the chief");
            snprintf(p->why, sizeof p->why, "shut down by the chief");
        } else if (first == RF_OK) {
            first = st;
            snprintf(err, sizeof err, "%s", rf_error_message());
        }
    }
    cli_unlock(c);
    if (first != RF_OK)
        return rf_error_set(first, "rf_ps_shutdown: %s", err);
    return RF_OK;
}

/* tools/trainer/explain_only.c: --explain_only, TensorFlow's classic
 * question "what does each of these processes do?" answered from the flags
 * alone: for every task of the cluster, what that process is and does
 * (a ps task: what it listens on, the shard records it will hold and their
 * bytes, its threads, what it does each step in each apply mode; a worker:
 * its placement, its part of the data, the operations of one step in
 * order; the chief: what it does beyond the others), without opening a
 * fabric or connecting to anything. The workers' parts come from offline
 * sessions (rf_session_create_offline: the same step description a live
 * session executes), the ps tasks' from the shards those sessions place.
 * In local mode, this process's variables and ops. Text, or one JSON
 * document with --explain=json. --model=wide_deep's workers build its
 * graph (the tables partitioned over the ps tasks as its workers do) and
 * its part of the synthetic click-through data; the ps tasks then list
 * the tables' shards with their rows. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dist.h"
#include "report.h"
#include "wide_deep.h"

static void add_str(json_object *o, const char *k, const char *v)
{
    json_object_object_add(o, k, json_object_new_string(v ? v : ""));
}

static void add_int(json_object *o, const char *k, int64_t v)
{
    json_object_object_add(o, k, json_object_new_int64(v));
}

static json_object *strings(const char *const *v, size_t n)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; i < n; i++)
        json_object_array_add(a, json_object_new_string(v[i]));
    return a;
}

static void print_list(FILE *out, json_object *a)
{
    for (size_t i = 0; i < json_object_array_length(a); i++)
        fprintf(out, "  %2zu. %s\n", i + 1,
                json_object_get_string(json_object_array_get_idx(a, i)));
}

/* ---- a ps task ----------------------------------------------------------
 */

/* What the ps task's threads and each step's apply look like, for the
 * apply mode of this run and the others. */
static json_object *ps_each_step(const tr_flags *f)
{
    json_object *o = json_object_new_object();
    char buf[512], optim[128];
    if (f->model.kind == TR_MODEL_WIDE_DEEP && !f->optimizer_given)
        snprintf(optim, sizeof optim,
                 "%s (the wide part's linear/... shards) or %s (the deep "
                 "part's dnn/...)",
                 rf_optim_kind_name(f->optim.kind),
                 rf_optim_kind_name(f->optim_deep.kind));
    else
        snprintf(optim, sizeof optim, "%s", rf_optim_kind_name(f->optim.kind));
    snprintf(buf, sizeof buf,
             "each worker WRITE_WITH_IMMs every gradient of this task's "
             "shards into its inbox; the service thread applies %s to the "
             "record (values and slots) and answers with an 8-byte "
             "acknowledgement",
             optim);
    add_str(o, "ps", buf);
    add_str(o, "worker",
            "no CPU work here: each worker READs the record (beta powers, "
            "values, slots), applies the optimizer itself and WRITEs it "
            "back, advancing the record's version word (with use_locking "
            "holding its lock word by CMP_AND_SWP); the fabric serves "
            "those one-sided operations (the NIC on verbs, the progress "
            "thread on sock, the initiator itself on shm)");
    add_str(o, "sync",
            "each shard's accumulator takes the gradients tagged with the "
            "shard's current step, the service thread applies their mean "
            "once replicas_to_aggregate have arrived and advances the "
            "shard's step word; stale gradients are dropped and counted");
    add_str(o, "global_step",
            "ps task 0 only: every worker's FETCH_AND_ADD (sync: "
            "CMP_AND_SWP) on the globals block's word 0, served by the "
            "fabric like a READ");
    if (f->staleness >= 0)
        add_str(o, "ssp_clocks",
                "ps task 0 only: stale synchronous parallel's clock words, "
                "one int64 per training worker beside global_step in the "
                "globals block; each worker READs all of them before a "
                "step (again while it waits) and FETCH_AND_ADDs its own "
                "after it, served by the fabric: no ps CPU");
    if (f->model.kind == TR_MODEL_WIDE_DEEP)
        add_str(o, "tables",
                "embedding table shards (wide_deep): each worker READs only "
                "the rows its batch looks up, one posted list per ps, no ps "
                "CPU; it pushes the sparse gradient's rows (apply=ps: the "
                "service thread applies them row by row; apply=worker: the "
                "worker READs those rows and their slots, applies them and "
                "WRITEs them back; sync: averaged per row)");
    add_str(o, "this_run", f->sync_replicas ? "sync" : f->apply);
    return o;
}

static json_object *ps_json(const tr_flags *f, const rf_cluster *c, int p,
                            const rf_session_desc *d)
{
    const rf_cluster_task *t = rf_cluster_task_at(c, "ps", p);
    json_object *o = json_object_new_object();
    json_object *task = json_object_new_object();
    add_str(task, "job", "ps");
    add_int(task, "index", p);
    json_object_object_add(o, "task", task);
    add_str(o, "address", t ? t->address : "");
    add_str(o, "role",
            "parameter server: holds shards in registered memory and "
            "serves them until the chief's shutdown");
    json_object *recs = json_object_new_array();
    int64_t total = 0;
    for (size_t i = 0; i < d->num_vars; i++) {
        const rf_session_var_desc *v = &d->vars[i];
        if ((int)v->ps_task != p)
            continue;
        json_object *r = json_object_new_object();
        add_str(r, "name", v->name);
        add_int(r, "bytes", (int64_t)v->bytes);
        if (v->where[0]) {
            add_str(r, "where", v->where);
        } else {
            add_int(r, "record_bytes", (int64_t)v->record_bytes);
            json_object_object_add(r, "slots", strings(v->slots, v->num_slots));
            if (v->max_push_rows > 0) { /* an embedding table shard */
                json_object *tb = json_object_new_object();
                add_int(tb, "rows", (int64_t)v->rows);
                add_int(tb, "row_bytes", (int64_t)v->row_bytes);
                json_object_object_add(r, "table", tb);
            }
            total += (int64_t)v->record_bytes;
        }
        json_object_array_add(recs, r);
    }
    json_object_object_add(o, "records", recs);
    add_int(o, "record_bytes", total);
    static const char *const threads[] = {
        "listener: accepts a connection only after its hello authenticates "
        "(the cluster secret's handshake when RF_CLUSTER_SECRET_FILE or "
        "--cluster_secret_file is set) and within the task's limits",
        "service: bound to the NUMA node nearest the address's NIC; adopts "
        "connections, answers control messages (create, lookup, init, "
        "finish, shutdown) and applies pushed gradients",
        "fabric progress: sock and shm progress thread, verbs event thread",
    };
    json_object_object_add(o, "threads", strings(threads, 3));
    json_object_object_add(o, "each_step", ps_each_step(f));
    return o;
}

static void ps_text(json_object *o, FILE *out)
{
    json_object *task = json_object_object_get(o, "task");
    int p = (int)json_object_get_int64(json_object_object_get(task, "index"));
    fprintf(out, "explain: /job:ps/task:%d at %s: %s\n", p,
            json_object_get_string(json_object_object_get(o, "address")),
            json_object_get_string(json_object_object_get(o, "role")));
    fprintf(out,
            "explain: [ps %d] listens on %s; holds (the chief creates "
            "and initialises them):\n",
            p, json_object_get_string(json_object_object_get(o, "address")));
    json_object *recs = json_object_object_get(o, "records");
    for (size_t i = 0; i < json_object_array_length(recs); i++) {
        json_object *r = json_object_array_get_idx(recs, i);
        json_object *where = json_object_object_get(r, "where");
        if (where) {
            fprintf(out, "  %-24s %10lld B  (%s)\n",
                    json_object_get_string(json_object_object_get(r, "name")),
                    (long long)json_object_get_int64(
                        json_object_object_get(r, "bytes")),
                    json_object_get_string(where));
            continue;
        }
        fprintf(out, "  %-24s record %10lld B",
                json_object_get_string(json_object_object_get(r, "name")),
                (long long)json_object_get_int64(
                    json_object_object_get(r, "record_bytes")));
        json_object *slots = json_object_object_get(r, "slots");
        for (size_t k = 0; k < json_object_array_length(slots); k++)
            fprintf(
                out, "%s%s", k ? ", " : " with slots ",
                json_object_get_string(json_object_array_get_idx(slots, k)));
        json_object *tb = json_object_object_get(r, "table");
        if (tb)
            fprintf(out, "; embedding table: %lld rows of %lld B",
                    (long long)json_object_get_int64(
                        json_object_object_get(tb, "rows")),
                    (long long)json_object_get_int64(
                        json_object_object_get(tb, "row_bytes")));
        fputc('\n', out);
    }
    fprintf(out, "  in all %lld B of shard records\n",
            (long long)json_object_get_int64(
                json_object_object_get(o, "record_bytes")));
    fprintf(out, "explain: [ps %d] threads:\n", p);
    print_list(out, json_object_object_get(o, "threads"));
    json_object *each = json_object_object_get(o, "each_step");
    const char *run =
        json_object_get_string(json_object_object_get(each, "this_run"));
    fprintf(out, "explain: [ps %d] each step, apply=%s (this run):\n  %s\n", p,
            run, json_object_get_string(json_object_object_get(each, run)));
    static const char *const modes[] = {"ps", "worker", "sync"};
    for (int m = 0; m < 3; m++)
        if (strcmp(modes[m], run) != 0)
            fprintf(
                out, "explain: [ps %d] with apply=%s instead:\n  %s\n", p,
                modes[m],
                json_object_get_string(json_object_object_get(each, modes[m])));
    if (p == 0)
        fprintf(out, "explain: [ps 0] %s\n",
                json_object_get_string(
                    json_object_object_get(each, "global_step")));
    json_object *clocks = NULL;
    if (p == 0 && json_object_object_get_ex(each, "ssp_clocks", &clocks))
        fprintf(out, "explain: [ps 0] %s\n", json_object_get_string(clocks));
    json_object *tables = NULL;
    if (json_object_object_get_ex(each, "tables", &tables))
        fprintf(out, "explain: [ps %d] %s\n", p,
                json_object_get_string(tables));
}

/* ---- a worker or the chief ----------------------------------------------
 */

/* What the chief does beyond the others, in the order it does it. */
static json_object *chief_duties(const tr_flags *f, int num_workers)
{
    json_object *a = json_object_new_array();
    char buf[512];
    if (f->checkpoint_dir)
        snprintf(buf, sizeof buf,
                 "restores the newest checkpoint of %s that verifies into "
                 "every shard, or without one creates and initialises every "
                 "shard (the other workers wait for that, at most "
                 "--max_wait_secs=%lld)",
                 f->checkpoint_dir, (long long)f->max_wait_secs);
    else
        snprintf(buf, sizeof buf,
                 "creates and initialises every shard on its ps task (the "
                 "other workers wait for that, at most --max_wait_secs=%lld)",
                 (long long)f->max_wait_secs);
    json_object_array_add(a, json_object_new_string(buf));
    snprintf(buf, sizeof buf,
             "StepCounterHook: logs global_step/sec every %lld steps",
             (long long)f->log_step_count_steps);
    json_object_array_add(a, json_object_new_string(buf));
    if (f->checkpoint_dir) {
        if (f->save_checkpoint_steps > 0)
            snprintf(buf, sizeof buf,
                     "CheckpointSaverHook: saves every %lld steps into %s "
                     "(keeps %lld)",
                     (long long)f->save_checkpoint_steps, f->checkpoint_dir,
                     (long long)f->max_to_keep);
        else
            snprintf(buf, sizeof buf,
                     "CheckpointSaverHook: saves every %g s into %s (keeps "
                     "%lld)",
                     f->save_checkpoint_secs, f->checkpoint_dir,
                     (long long)f->max_to_keep);
        json_object_array_add(a, json_object_new_string(buf));
    }
    snprintf(buf, sizeof buf,
             "at the end: waits at most --stop_grace_secs=%lld for %s to "
             "finish, pulls every variable with its "
             "slots back%s, evaluates the test %s%s and shuts the ps "
             "tasks down",
             (long long)f->stop_grace_secs,
             num_workers == 1   ? "no other worker (there is none)"
             : num_workers == 2 ? "the other worker"
                                : "the other workers",
             f->checkpoint_dir ? ", saves the last checkpoint" : "",
             f->model.kind == TR_MODEL_WIDE_DEEP ? "AUC and log loss"
                                                 : "accuracy",
             f->variables_out ? ", writes --variables_out" : "");
    json_object_array_add(a, json_object_new_string(buf));
    return a;
}

typedef struct explain_data {
    rf_dataset *train, *test; /* NULL for wide_deep (no files) */
} explain_data;

/* The worker task's part of the training data, as dist_worker.c selects
 * it: everything with one worker, else shard worker_id of W; wide_deep's
 * (dist_wide_deep.c): shard worker_id of W of the click-through split,
 * the examples whose index is worker_id mod W (rf_ctr_batch). */
static json_object *data_json(const tr_flags *f, const rf_cluster *c,
                              const rf_cluster_task *t, const explain_data *dd,
                              char *err, size_t errlen)
{
    json_object *o = json_object_new_object();
    int w = rf_cluster_num_workers(c);
    bool ctr = f->model.kind == TR_MODEL_WIDE_DEEP;
    size_t all = ctr ? (size_t)f->ctr_spec.train_size
                     : rf_dataset_size(dd->train),
           mine = all;
    if (ctr)
        mine = (all + (size_t)w - 1 - (size_t)t->worker_id) / (size_t)w;
    else if (w > 1) {
        rf_dataset *shard = NULL;
        if (rf_dataset_shard(dd->train, (uint32_t)w, (uint32_t)t->worker_id,
                             f->seed, &shard) != RF_OK) {
            snprintf(err, errlen, "data shard %d of %d: %s", t->worker_id, w,
                     rf_error_message());
            json_object_put(o);
            return NULL;
        }
        mine = rf_dataset_size(shard);
        rf_dataset_free(shard);
    }
    add_int(o, "shard", t->worker_id);
    add_int(o, "of", w);
    add_int(o, "examples", (int64_t)mine);
    add_int(o, "all_examples", (int64_t)all);
    add_int(o, "batch_size", f->batch_size);
    return o;
}

/* One task's model as its worker builds it: the image models' graph or
 * wide_deep's, and the feeds of its training step. */
typedef struct explain_model {
    tr_session ts;
    tr_wd_session wd;
    tr_session *base; /* &ts or &wd.base */
    rf_node *feeds[RF_CTR_MAX_CAT + 2];
    size_t nfeeds;
} explain_model;

static int model_create(const tr_flags *f, const rf_cluster *c,
                        rf_replica_device_setter *setter,
                        const explain_data *dd, explain_model *m, char *err,
                        size_t errlen)
{
    memset(m, 0, sizeof *m);
    if (f->model.kind == TR_MODEL_WIDE_DEEP) {
        if (tr_wd_session_create(f, setter,
                                 tr_wd_partitions(f, rf_cluster_num_ps(c)),
                                 &m->wd, err, errlen) != 0)
            return -1;
        m->base = &m->wd.base;
        m->nfeeds = tr_wd_feed_nodes(&m->wd, m->feeds);
        return 0;
    }
    if (tr_session_create(f, (int)rf_dataset_rows(dd->train),
                          (int)rf_dataset_cols(dd->train),
                          (int)rf_dataset_num_classes(dd->train), setter,
                          &m->ts, err, errlen) != 0)
        return -1;
    m->base = &m->ts;
    m->feeds[0] = m->ts.x;
    m->feeds[1] = m->ts.y;
    m->nfeeds = 2;
    return 0;
}

static void model_destroy(explain_model *m)
{
    tr_wd_session_destroy(&m->wd);
    tr_session_destroy(&m->ts);
}

/* One chief or worker task's JSON into tasks, and its text on text (NULL
 * in JSON mode); the first one also describes every ps task into
 * ps_tasks, from the shards its session placed (every worker places the
 * same), while its graph (which names them) is alive. */
static int worker_part(const tr_flags *f, const rf_cluster *c,
                       const rf_cluster_task *t, const explain_data *dd,
                       json_object *tasks, json_object *ps_tasks, FILE *text,
                       char *err, size_t errlen)
{
    rf_replica_device_setter *setter = NULL;
    explain_model m;
    memset(&m, 0, sizeof m);
    rf_session *s = NULL;
    int rc = -1;
    if (tr_make_setter(f, c, t, &setter, err, errlen) != 0 ||
        model_create(f, c, setter, dd, &m, err, errlen) != 0)
        goto out;
    tr_session *ts = m.base;
    rf_session_options o;
    rf_session_options_init(&o);
    tr_session_options_fill(f, ts, &o);
    if (f->model.kind == TR_MODEL_WIDE_DEEP)
        o.max_lookup_ids = f->batch_size; /* as dist_wide_deep.c's */
    const rf_session_desc *d = NULL;
    rf_node *fetches[] = {ts->loss, ts->train_op};
    if (rf_session_create_offline(c, t, ts->g, ts->ex, &o, &s) != RF_OK ||
        rf_session_describe(s, m.feeds, m.nfeeds, fetches, 2, &d) != RF_OK) {
        snprintf(err, errlen, "/job:%s/task:%d: %s", t->job, t->index,
                 rf_error_message());
        goto out;
    }
    json_object *ex = tr_explain_worker_json(f, c, t, NULL, d);
    json_object *data = ex ? data_json(f, c, t, dd, err, errlen) : NULL;
    if (!ex || !data) {
        if (!ex)
            snprintf(err, errlen, "out of memory");
        json_object_put(ex);
        goto out;
    }
    json_object_object_add(ex, "data", data);
    int w = rf_cluster_num_workers(c);
    if (t->is_chief)
        json_object_object_add(ex, "chief", chief_duties(f, w));
    json_object_array_add(tasks, ex);
    if (json_object_array_length(ps_tasks) == 0)
        for (int p = 0; p < rf_cluster_num_ps(c); p++)
            json_object_array_add(ps_tasks, ps_json(f, c, p, d));
    if (text) {
        char pfx[64];
        snprintf(pfx, sizeof pfx, "explain: [%s %d] ", t->job, t->index);
        fprintf(text, "explain: /job:%s/task:%d at %s: worker %d of %d%s\n",
                t->job, t->index, t->address, t->worker_id, w,
                t->is_chief ? ", the chief" : "");
        tr_explain_worker_text(f, c, t, NULL, d, ex, pfx, text);
        bool ctr = f->model.kind == TR_MODEL_WIDE_DEEP;
        fprintf(text,
                "%sdata: %lld of the %lld %straining examples (%s), batches "
                "of %lld\n",
                pfx,
                (long long)json_object_get_int64(
                    json_object_object_get(data, "examples")),
                (long long)json_object_get_int64(
                    json_object_object_get(data, "all_examples")),
                ctr ? "synthetic click-through " : "",
                w == 1 ? "all of them"
                : ctr  ? "its shard: every example whose index is its "
                         "worker id mod the workers"
                       : "its shard of a seeded permutation",
                (long long)f->batch_size);
        if (t->is_chief) {
            fprintf(text, "%sas the chief, beyond the others:\n", pfx);
            print_list(text, json_object_object_get(ex, "chief"));
        }
    }
    rc = 0;
out:
    rf_session_destroy(s);
    model_destroy(&m);
    rf_replica_device_setter_destroy(setter);
    return rc;
}

/* Every chief and worker task (chief job first, as TF_CONFIG lists it),
 * then what the ps tasks and the rest of the cluster do. */
static int explain_cluster(const tr_flags *f, const rf_cluster *c,
                           const explain_data *dd, FILE *out, char *err,
                           size_t errlen)
{
    bool text = f->explain != TR_EXPLAIN_JSON;
    char *wbuf = NULL;
    size_t wlen = 0;
    FILE *wout = text ? open_memstream(&wbuf, &wlen) : NULL;
    json_object *root = json_object_new_object();
    json_object *ex = json_object_new_object();
    json_object *tasks = json_object_new_array();
    json_object *ps_tasks = json_object_new_array();
    int rc = -1;
    if ((text && !wout) || !root || !ex || !tasks || !ps_tasks) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    static const char *const jobs[] = {"chief", "worker"};
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < rf_cluster_num_tasks(c, jobs[j]); i++)
            if (worker_part(f, c, rf_cluster_task_at(c, jobs[j], i), dd, tasks,
                            ps_tasks, wout, err, errlen) != 0)
                goto out;
    char *cj = rf_cluster_to_json(c, false);
    json_object *cl = cj ? json_tokener_parse(cj) : NULL;
    free(cj);
    json_object *member = NULL;
    if (cl && json_object_object_get_ex(cl, "cluster", &member))
        json_object_object_add(ex, "cluster", json_object_get(member));
    if (cl && json_object_object_get_ex(cl, "source", &member))
        json_object_object_add(ex, "source", json_object_get(member));
    json_object_put(cl);
    add_str(ex, "apply", f->sync_replicas ? "sync" : f->apply);
    json_object_object_add(ex, "ps_tasks", ps_tasks);
    json_object_object_add(ex, "worker_tasks", tasks);
    ps_tasks = tasks = NULL;
    int evaluators = rf_cluster_num_tasks(c, "evaluator");
    add_int(ex, "evaluators", evaluators);
    json_object_object_add(root, "explain_only", ex);
    ex = NULL;
    if (!text) {
        fprintf(
            out, "%s\n",
            json_object_to_json_string_ext(
                root, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    } else {
        fclose(wout);
        wout = NULL;
        const char *src = "";
        json_object *e0 = json_object_object_get(root, "explain_only");
        json_object *so = json_object_object_get(e0, "source");
        json_object *sc = so ? json_object_object_get(so, "cluster") : NULL;
        if (sc)
            src = json_object_get_string(sc);
        fprintf(out, "explain: cluster%s%s:\n", src[0] ? " from " : "", src);
        static const char *const all[] = {"chief", "ps", "worker", "evaluator"};
        for (int j = 0; j < 4; j++)
            for (int i = 0; i < rf_cluster_num_tasks(c, all[j]); i++) {
                const rf_cluster_task *t = rf_cluster_task_at(c, all[j], i);
                fprintf(out, "  /job:%s/task:%d  %s%s\n", t->job, t->index,
                        t->address ? t->address : "(not listed)",
                        t->is_chief ? "  chief" : "");
            }
        fprintf(out,
                "explain: --explain_only: from the flags alone, nothing "
                "opened or connected; %d ps, %d training workers%s\n",
                rf_cluster_num_ps(c), rf_cluster_num_workers(c),
                evaluators ? ", and an evaluator (it evaluates the chief's "
                             "checkpoints as they appear, training nothing)"
                           : "");
        json_object *e = json_object_object_get(root, "explain_only");
        json_object *ps = json_object_object_get(e, "ps_tasks");
        for (size_t p = 0; p < json_object_array_length(ps); p++)
            ps_text(json_object_array_get_idx(ps, p), out);
        fwrite(wbuf, 1, wlen, out);
    }
    fflush(out);
    rc = 0;
out:
    if (wout)
        fclose(wout);
    free(wbuf);
    json_object_put(tasks);
    json_object_put(ps_tasks);
    json_object_put(ex);
    json_object_put(root);
    return rc;
}

/* Local mode: this process's variables and ops. */
static int explain_local(const tr_flags *f, const explain_data *dd, FILE *out,
                         char *err, size_t errlen)
{
    tr_session ts = {0};
    if (tr_session_create(f, (int)rf_dataset_rows(dd->train),
                          (int)rf_dataset_cols(dd->train),
                          (int)rf_dataset_num_classes(dd->train), NULL, &ts,
                          err, errlen) != 0)
        return -1;
    int rc = tr_explain_local(f, &ts, out, err, errlen);
    tr_session_destroy(&ts);
    return rc;
}

int tr_explain_only(const tr_flags *f, const rf_cluster *c, FILE *out)
{
    char err[2048];
    explain_data dd = {0};
    double t_load = 0;
    int rc = 1;
    if (c && (f->elastic || rf_cluster_is_sparse(c))) {
        fprintf(stderr, "rf-trainer: --explain_only: not with elastic "
                        "workers (--elastic or a TF_CONFIG sparseCluster): "
                        "the workers are not known in advance\n");
        return 2;
    }
    /* wide_deep's data is made from its spec: nothing to load */
    if (f->model.kind != TR_MODEL_WIDE_DEEP &&
        tr_load_data(f, &dd.train, &dd.test, &t_load, err, sizeof err) != 0) {
        fprintf(stderr, "rf-trainer: data: %s\n", err);
        goto out;
    }
    if ((c ? explain_cluster(f, c, &dd, out, err, sizeof err)
           : explain_local(f, &dd, out, err, sizeof err)) != 0) {
        fprintf(stderr, "rf-trainer: --explain_only: %s\n", err);
        goto out;
    }
    rc = 0;
out:
    rf_dataset_free(dd.train);
    rf_dataset_free(dd.test);
    return rc;
}

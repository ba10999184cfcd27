/* tests/integration/trainer_dist/tdist_check.c: the JSON and safetensors
 * checks of trainer_dist_test.sh, with json-c (no python3 or jq needed, so
 * the same checks run in the rxe guest). Every subcommand prints what it
 * found and one "FAIL: ..." line per failed check; exit 0 if all passed, 1
 * if one failed, 2 on a usage error.
 *
 *   tdist_check explain FILE KEY=VALUE...
 *       FILE holds one --explain=json document (the '{"explain":' line).
 *       The "step" list may hold WAIT_* entries (no var) between COMPUTE
 *       and the FETCH_AND_ADD.
 *       num_ps=N            ps tasks
 *       vars=NAME:DIMS,...  the model's variables in creation order (after
 *                           global_step), DIMS like 784x32 ("" = scalar)
 *       slots=A,B           slot suffixes of every trainable variable
 *                           ("Adam,Adam_1"; "" for none)
 *       apply=ps|worker     locking=0|1   provider=sock|verbs
 *       ps=H:P,...          the ps addresses (from "serving on" lines)
 *       workers=N           number of workers in the cluster
 *       placement=round_robin|greedy  how the variables' ps tasks were
 *                           chosen (greedy: least bytes so far, lowest
 *                           task on a tie; global_step counts 8 bytes)
 *   tdist_check trace FILE num_ps=N tasks=ps0,worker0
 *                   ops=READ,WRITE_WITH_IMM,FETCH_AND_ADD read_bytes=B
 *       FILE is rf-launch's merged trace. Every task of tasks is in
 *       otherData.rf_launch.pids and has complete events ("ph":"X");
 *       worker0's cat "fabric" events are "OP VAR" operations (OP one of
 *       ops, each present, with integer args bytes > 0 and 0 <= ps_task <
 *       num_ps) or waits ("wait ..."); the READ bytes of each traced step
 *       add up to B (the model's values). An operation whose args carry
 *       "rows" (an embedding table's "READ_ROWS <lookup>") has rows > 0
 *       and bytes > 0 and no ps_task (a lookup reads every part). Optional:
 *       lookups=N           each traced step has N READ_ROWS spans
 *       explain=JSON        a --explain=json document of the same flags
 *                           (a live worker's, or --explain_only's: its
 *                           first worker task): every step operation on
 *                           a variable (but READ_ROWS, traced per lookup)
 *                           is a span "OP VAR" of worker0, and with
 *                           apply=ps each ps task has an "apply VAR" span
 *                           (cat "ps") for every variable the
 *                           explanation places on it
 *   tdist_check same_explain LIVE OFFLINE
 *       LIVE holds a live worker 0's --explain=json document, OFFLINE the
 *       --explain_only --explain=json document of the same flags: its
 *       worker task 0 says the same as the live one in every member but
 *       the fabric (nothing is opened offline) and the cluster's
 *       addresses, its fabric names no provider per peer, it adds the
 *       data and (the chief) its duties, and its ps tasks' records add
 *       up to the placement's bytes per ps task.
 *   tdist_check st FILE
 *       prints "KEY DTYPE SHAPE" per tensor of a safetensors file (sorted
 *       keys, offsets inside the file, contiguous) and "global_step=N".
 */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Header-only; this program links no rdmaflow library, so only the
 * repository root (tests/CMakeLists.txt) is on its include path. */
#include "include/rdmaflow/byteorder.h"

static int failures;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    failures++;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        char *nb = realloc(buf, 2 * cap + 1);
        if (!nb) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = nb;
        cap *= 2;
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        *len = n;
    }
    return buf;
}

static json_object *parse_file(const char *path)
{
    size_t len = 0;
    char *buf = slurp(path, &len);
    if (!buf) {
        fail("cannot read %s", path);
        return NULL;
    }
    json_tokener *tok = json_tokener_new();
    json_object *root = json_tokener_parse_ex(tok, buf, (int)len);
    if (!root)
        fail("%s is not JSON: %s at byte %zu", path,
             json_tokener_error_desc(json_tokener_get_error(tok)),
             json_tokener_get_parse_end(tok));
    json_tokener_free(tok);
    free(buf);
    return root;
}

/* KEY=VALUE arguments */
static const char *arg(int argc, char **argv, const char *key)
{
    size_t k = strlen(key);
    for (int i = 0; i < argc; i++)
        if (!strncmp(argv[i], key, k) && argv[i][k] == '=')
            return argv[i] + k + 1;
    fprintf(stderr, "tdist_check: missing %s=\n", key);
    exit(2);
}

/* Splits s at sep into a NULL-terminated malloc'd array (s is modified);
 * an empty s gives no items. */
static char **split(char *s, char sep, int *n)
{
    int cap = 1;
    for (char *p = s; *p; p++)
        cap += *p == sep;
    char **v = calloc((size_t)cap + 1, sizeof *v);
    *n = 0;
    if (!*s)
        return v;
    for (char *p = s;;) {
        v[(*n)++] = p;
        char *q = strchr(p, sep);
        if (!q)
            break;
        *q = '\0';
        p = q + 1;
    }
    return v;
}

static json_object *get(json_object *o, const char *key)
{
    json_object *v = NULL;
    if (!o || !json_object_is_type(o, json_type_object) ||
        !json_object_object_get_ex(o, key, &v))
        return NULL;
    return v;
}

static const char *get_str(json_object *o, const char *key)
{
    json_object *v = get(o, key);
    return v && json_object_is_type(v, json_type_string)
               ? json_object_get_string(v)
               : NULL;
}

/* integer member, or -1 (with a failure) if absent or not an integer */
static int64_t get_int(json_object *o, const char *key, const char *where)
{
    json_object *v = get(o, key);
    if (!v || !json_object_is_type(v, json_type_int)) {
        fail("%s: \"%s\" is not an integer", where, key);
        return -1;
    }
    return json_object_get_int64(v);
}

static bool str_is(const char *a, const char *b)
{
    return a && !strcmp(a, b);
}

/* ------------------------------------------------------------- explain */
typedef struct var {
    char name[128];
    bool trainable;
    int rank;
    int64_t dims[8];
    int64_t bytes;
    int ps_task;
} var;

static int cmd_explain(const char *path, int argc, char **argv)
{
    int num_ps = atoi(arg(argc, argv, "num_ps"));
    int nworkers = atoi(arg(argc, argv, "workers"));
    const char *apply = arg(argc, argv, "apply");
    bool locking = atoi(arg(argc, argv, "locking")) != 0;
    const char *provider = arg(argc, argv, "provider");
    char *vars_s = strdup(arg(argc, argv, "vars"));
    char *slots_s = strdup(arg(argc, argv, "slots"));
    char *ps_s = strdup(arg(argc, argv, "ps"));
    int nv = 0, nslots = 0, nps = 0;
    char **vs = split(vars_s, ',', &nv);
    char **slots = split(slots_s, ',', &nslots);
    char **ps = split(ps_s, ',', &nps);
    if (num_ps < 1 || nps != num_ps) {
        fprintf(stderr, "tdist_check: num_ps=%d but %d ps addresses\n", num_ps,
                nps);
        return 2;
    }
    /* expected variables: global_step, then the model's */
    int n = nv + 1;
    var *want = calloc((size_t)n, sizeof *want);
    snprintf(want[0].name, sizeof want[0].name, "global_step");
    want[0].bytes = 8;
    for (int i = 0; i < nv; i++) {
        var *w = &want[i + 1];
        char *colon = strchr(vs[i], ':');
        if (!colon) {
            fprintf(stderr, "tdist_check: vars: '%s' has no ':'\n", vs[i]);
            return 2;
        }
        *colon = '\0';
        snprintf(w->name, sizeof w->name, "%s", vs[i]);
        w->trainable = true;
        w->bytes = 4;
        int nd = 0;
        char **ds = split(colon + 1, 'x', &nd);
        for (int d = 0; d < nd && d < 8; d++) {
            w->dims[d] = atoll(ds[d]);
            w->bytes *= w->dims[d];
        }
        w->rank = nd;
        free(ds);
    }
    /* placement=round_robin: variable i on task i mod P; greedy: each on
     * the task with the fewest bytes placed so far, the lowest on a tie
     * (GreedyLoadBalancingStrategy with byte_size_load_fn) */
    bool greedy = !strcmp(arg(argc, argv, "placement"), "greedy");
    int64_t *load = calloc((size_t)num_ps, sizeof *load);
    for (int i = 0; i < n; i++) {
        int t = i % num_ps;
        if (greedy) {
            t = 0;
            for (int k = 1; k < num_ps; k++)
                if (load[k] < load[t])
                    t = k;
        }
        want[i].ps_task = t;
        load[t] += want[i].bytes;
    }
    free(load);

    json_object *root = parse_file(path);
    if (!root)
        return 1;
    json_object *ex = get(root, "explain");
    if (!ex || !json_object_is_type(ex, json_type_object)) {
        fail("no \"explain\" object");
        return 1;
    }
    /* cluster */
    json_object *cl = get(ex, "cluster");
    json_object *cps = get(cl, "ps"), *cw = get(cl, "worker");
    if (!cps || !json_object_is_type(cps, json_type_array) ||
        (int)json_object_array_length(cps) != num_ps)
        fail("cluster.ps is not an array of %d: %s", num_ps,
             cps ? json_object_to_json_string(cps) : "absent");
    else
        for (int i = 0; i < num_ps; i++) {
            const char *a =
                json_object_get_string(json_object_array_get_idx(cps, i));
            if (!str_is(a, ps[i]))
                fail("cluster.ps[%d] is '%s', the ps task %d serves on '%s'", i,
                     a ? a : "?", i, ps[i]);
        }
    if (!cw || !json_object_is_type(cw, json_type_array) ||
        (int)json_object_array_length(cw) != nworkers)
        fail("cluster.worker is not an array of %d: %s", nworkers,
             cw ? json_object_to_json_string(cw) : "absent");
    /* task, fabric, apply */
    json_object *task = get(ex, "task");
    json_object *chief = get(task, "chief");
    if (!str_is(get_str(task, "job"), "worker") ||
        get_int(task, "index", "task") != 0 || !chief ||
        !json_object_is_type(chief, json_type_boolean) ||
        !json_object_get_boolean(chief))
        fail("task is not {job worker, index 0, chief true}: %s",
             task ? json_object_to_json_string(task) : "absent");
    json_object *fab = get(ex, "fabric");
    if (!str_is(get_str(fab, "provider"), provider))
        fail("fabric.provider is not '%s': %s", provider,
             fab ? json_object_to_json_string(fab) : "absent");
    json_object *numa = get(fab, "numa_node");
    if (!numa || !json_object_is_type(numa, json_type_int))
        fail("fabric.numa_node is not an integer: %s",
             fab ? json_object_to_json_string(fab) : "absent");
    if (!str_is(get_str(ex, "apply"), apply))
        fail("apply is not '%s'", apply);
    json_object *ul = get(ex, "use_locking");
    if (!ul || !json_object_is_type(ul, json_type_boolean) ||
        json_object_get_boolean(ul) != locking)
        fail("use_locking is not %s", locking ? "true" : "false");

    /* variables */
    json_object *jv = get(ex, "variables");
    if (!jv || !json_object_is_type(jv, json_type_array)) {
        fail("no \"variables\" array");
        return 1;
    }
    int got_n = (int)json_object_array_length(jv);
    printf("variables (%d):", got_n);
    for (int i = 0; i < got_n; i++)
        printf(
            " %s@%" PRId64,
            get_str(json_object_array_get_idx(jv, i), "name")
                ? get_str(json_object_array_get_idx(jv, i), "name")
                : "?",
            get_int(json_object_array_get_idx(jv, i), "ps_task", "variable"));
    printf("\n");
    if (got_n != n)
        fail("%d variables, want %d (global_step + %d)", got_n, n, nv);
    for (int i = 0; i < n && i < got_n; i++) {
        json_object *o = json_object_array_get_idx(jv, i);
        const var *w = &want[i];
        char where[200], dev[64];
        snprintf(where, sizeof where, "variables[%d]", i);
        const char *name = get_str(o, "name");
        if (!str_is(name, w->name)) {
            fail("%s is '%s', want '%s' (creation order)", where,
                 name ? name : "?", w->name);
            continue;
        }
        snprintf(where, sizeof where, "variable %s", w->name);
        int64_t t = get_int(o, "ps_task", where);
        if (t != w->ps_task)
            fail("%s: ps_task %" PRId64 ", want %d (%s)", where, t, w->ps_task,
                 greedy ? "greedy by bytes" : "round-robin");
        snprintf(dev, sizeof dev, "/job:ps/task:%d", w->ps_task);
        if (!str_is(get_str(o, "device"), dev))
            fail("%s: device '%s', want '%s'", where,
                 get_str(o, "device") ? get_str(o, "device") : "?", dev);
        const char *dt = w->trainable ? "float32" : "int64";
        if (!str_is(get_str(o, "dtype"), dt))
            fail("%s: dtype '%s', want %s", where,
                 get_str(o, "dtype") ? get_str(o, "dtype") : "?", dt);
        json_object *sh = get(o, "shape");
        bool shape_ok = sh && json_object_is_type(sh, json_type_array) &&
                        (int)json_object_array_length(sh) == w->rank;
        for (int d = 0; shape_ok && d < w->rank; d++)
            shape_ok = json_object_get_int64(json_object_array_get_idx(
                           sh, (size_t)d)) == w->dims[d];
        if (!shape_ok)
            fail("%s: shape %s, want rank %d", where,
                 sh ? json_object_to_json_string(sh) : "absent", w->rank);
        int64_t b = get_int(o, "bytes", where);
        if (b != w->bytes)
            fail("%s: bytes %" PRId64 ", want %" PRId64, where, b, w->bytes);
        if (w->trainable) {
            json_object *js = get(o, "slots");
            int ns = js && json_object_is_type(js, json_type_array)
                         ? (int)json_object_array_length(js)
                         : (nslots ? -1 : 0);
            if (ns != nslots)
                fail("%s: slots %s, want %d", where,
                     js ? json_object_to_json_string(js) : "absent", nslots);
            for (int s = 0; s < ns && s < nslots; s++) {
                char sn[300];
                snprintf(sn, sizeof sn, "%s/%s", w->name, slots[s]);
                const char *g =
                    json_object_get_string(json_object_array_get_idx(js, s));
                if (!str_is(g, sn))
                    fail("%s: slot %d is '%s', want '%s'", where, s,
                         g ? g : "?", sn);
            }
            int64_t rb = get_int(o, "record_bytes", where);
            if (rb < w->bytes * (1 + nslots))
                fail("%s: record_bytes %" PRId64 " < values + slots %" PRId64,
                     where, rb, w->bytes * (1 + nslots));
        }
    }

    /* step: READ per variable but global_step, COMPUTE, one push per
     * trainable variable, one FETCH_AND_ADD on global_step */
    json_object *js = get(ex, "step");
    if (!js || !json_object_is_type(js, json_type_array)) {
        fail("no \"step\" array");
        return 1;
    }
    int ns = (int)json_object_array_length(js);
    const char *push = str_is(apply, "ps") ? "WRITE_WITH_IMM" : "APPLY_WORKER";
    int *reads = calloc((size_t)n, sizeof *reads),
        *pushes = calloc((size_t)n, sizeof *pushes);
    int faa = 0, compute = 0, compute_at = -1, last_read = -1, first_push = ns,
        faa_at = -1;
    printf("step (%d):", ns);
    for (int k = 0; k < ns; k++) {
        json_object *o = json_object_array_get_idx(js, k);
        const char *op = get_str(o, "op"), *vn = get_str(o, "var");
        printf(" %s%s%s", op ? op : "?", vn ? ":" : "", vn ? vn : "");
        char where[200];
        snprintf(where, sizeof where, "step[%d] %s %s", k, op ? op : "?",
                 vn ? vn : "");
        if (str_is(op, "COMPUTE")) {
            compute++;
            compute_at = k;
            continue;
        }
        /* WAIT_ACKS / WAIT_APPLIES: where the step waits for its pushes,
         * after COMPUTE and before the FETCH_AND_ADD */
        if (op && !strncmp(op, "WAIT_", 5) && !vn) {
            if (compute_at < 0 || faa_at >= 0)
                fail("%s: a wait outside COMPUTE .. FETCH_AND_ADD", where);
            continue;
        }
        int vi = -1;
        for (int i = 0; i < n; i++)
            if (str_is(vn, want[i].name))
                vi = i;
        if (vi < 0) {
            fail("%s: not a variable of the model", where);
            continue;
        }
        int64_t t = get_int(o, "ps_task", where),
                b = get_int(o, "bytes", where);
        if (t != want[vi].ps_task)
            fail("%s: ps_task %" PRId64 ", the variable is on %d", where, t,
                 want[vi].ps_task);
        if (b != want[vi].bytes)
            fail("%s: bytes %" PRId64 ", the variable has %" PRId64, where, b,
                 want[vi].bytes);
        if (str_is(op, "READ")) {
            reads[vi]++;
            last_read = k;
        } else if (str_is(op, push)) {
            pushes[vi]++;
            if (k < first_push)
                first_push = k;
            if (!str_is(apply, "ps")) {
                json_object *l = get(o, "locking");
                if (!l || !json_object_is_type(l, json_type_boolean) ||
                    json_object_get_boolean(l) != locking)
                    fail("%s: locking is not %s", where,
                         locking ? "true" : "false");
            }
        } else if (str_is(op, "FETCH_AND_ADD")) {
            if (vi != 0)
                fail("%s: FETCH_AND_ADD on a variable other than global_step",
                     where);
            faa++;
            faa_at = k;
        } else {
            fail("%s: unexpected op (apply=%s pushes with %s)", where, apply,
                 push);
        }
    }
    printf("\n");
    for (int i = 0; i < n; i++) {
        int want_r = i == 0 ? 0 : 1, want_p = i == 0 ? 0 : 1;
        if (reads[i] != want_r)
            fail("step: %d READs of %s, want %d", reads[i], want[i].name,
                 want_r);
        if (pushes[i] != want_p)
            fail("step: %d %s of %s, want %d", pushes[i], push, want[i].name,
                 want_p);
    }
    if (faa != 1)
        fail("step: %d FETCH_AND_ADD on global_step, want 1", faa);
    if (compute != 1)
        fail("step: %d COMPUTE entries, want 1", compute);
    else if (!(last_read < compute_at && compute_at < first_push))
        fail("step: COMPUTE (at %d) is not between the READs (last %d) and "
             "the pushes (first %d)",
             compute_at, last_read, first_push);
    if (faa == 1 && faa_at != ns - 1)
        fail("step: FETCH_AND_ADD is at %d, not last (%d entries)", faa_at, ns);
    json_object_put(root);
    free(reads);
    free(pushes);
    free(want);
    free(vs);
    free(slots);
    free(ps);
    free(vars_s);
    free(slots_s);
    free(ps_s);
    return failures ? 1 : 0;
}

/* --------------------------------------------------------------- trace */

/* KEY=VALUE or NULL */
static const char *opt_arg(int argc, char **argv, const char *key)
{
    size_t k = strlen(key);
    for (int i = 0; i < argc; i++)
        if (!strncmp(argv[i], key, k) && argv[i][k] == '=')
            return argv[i] + k + 1;
    return NULL;
}

/* a complete event of pid named name (of category cat unless NULL) */
static bool has_span(json_object *ev, int pid, const char *cat,
                     const char *name)
{
    for (size_t i = 0; i < json_object_array_length(ev); i++) {
        json_object *e = json_object_array_get_idx(ev, i);
        json_object *p = get(e, "pid");
        if (p && json_object_get_int(p) == pid &&
            str_is(get_str(e, "ph"), "X") && str_is(get_str(e, "name"), name) &&
            (!cat || str_is(get_str(e, "cat"), cat)))
            return true;
    }
    return false;
}

/* explain=FILE: the trace has the spans the explanation's step and
 * placement name */
static void trace_vs_explain(json_object *ev, json_object *pids, int wpid,
                             const char *path)
{
    json_object *root = parse_file(path);
    json_object *ex = get(root, "explain");
    json_object *tasks = get(get(root, "explain_only"), "worker_tasks");
    if (!ex && tasks && json_object_is_type(tasks, json_type_array) &&
        json_object_array_length(tasks) > 0)
        ex = json_object_array_get_idx(tasks, 0);
    json_object *step = get(ex, "step"), *vars = get(ex, "variables");
    if (!step || !vars) {
        fail("%s: no explain.step or explain.variables", path);
        json_object_put(root);
        return;
    }
    size_t nspan = 0, napply = 0;
    char name[512];
    for (size_t i = 0; i < json_object_array_length(step); i++) {
        json_object *o = json_object_array_get_idx(step, i);
        const char *op = get_str(o, "op"), *vname = get_str(o, "var");
        if (!op || !vname || str_is(op, "READ_ROWS"))
            continue;
        snprintf(name, sizeof name, "%s %s", op, vname);
        if (has_span(ev, wpid, "fabric", name))
            nspan++;
        else
            fail("worker0 has no span '%s' (step operation %zu of %s)", name,
                 i + 1, path);
    }
    bool ps_applies = str_is(get_str(ex, "apply"), "ps");
    for (size_t i = 0; ps_applies && i < json_object_array_length(vars); i++) {
        json_object *v = get(json_object_array_get_idx(vars, i), "name");
        json_object *t = get(json_object_array_get_idx(vars, i), "ps_task");
        json_object *rb =
            get(json_object_array_get_idx(vars, i), "record_bytes");
        if (!v || !t || !rb) /* global_step: no record, no apply */
            continue;
        char task[32];
        snprintf(task, sizeof task, "ps%d", json_object_get_int(t));
        json_object *jp = get(pids, task);
        snprintf(name, sizeof name, "apply %s", json_object_get_string(v));
        if (jp && has_span(ev, json_object_get_int(jp), "ps", name))
            napply++;
        else
            fail("%s has no span '%s' (the explanation places %s there)", task,
                 name, json_object_get_string(v));
    }
    printf("explain %s: worker0 has the %zu spans of its step operations; "
           "the ps tasks the %zu apply spans of their variables\n",
           path, nspan, napply);
    json_object_put(root);
}

static int cmd_trace(const char *path, int argc, char **argv)
{
    int num_ps = atoi(arg(argc, argv, "num_ps"));
    char *ops_s = strdup(arg(argc, argv, "ops"));
    char *tasks_s = strdup(arg(argc, argv, "tasks"));
    int64_t read_bytes = atoll(arg(argc, argv, "read_bytes"));
    int nops = 0, ntasks = 0;
    char **ops = split(ops_s, ',', &nops);
    char **tasks = split(tasks_s, ',', &ntasks);
    json_object *root = parse_file(path);
    if (!root)
        return 1;
    json_object *ev = get(root, "traceEvents");
    json_object *pids = get(get(get(root, "otherData"), "rf_launch"), "pids");
    if (!ev || !json_object_is_type(ev, json_type_array) || !pids) {
        fail("no traceEvents array or otherData.rf_launch.pids");
        return 1;
    }
    for (int k = 0; k < ntasks; k++)
        if (!get(pids, tasks[k]))
            fail("no trace of %s in the merged file (otherData.rf_launch.pids "
                 "%s)",
                 tasks[k], json_object_to_json_string(pids));
    json_object *w0 = get(pids, "worker0");
    int wpid = w0 ? json_object_get_int(w0) : -1;
    if (wpid < 0)
        fail("no worker0 in otherData.rf_launch.pids: %s",
             json_object_to_json_string(pids));
    /* complete events per task */
    size_t nev = json_object_array_length(ev);
    json_object_object_foreach(pids, task, jpid)
    {
        int pid = json_object_get_int(jpid);
        size_t cnt = 0;
        for (size_t i = 0; i < nev; i++) {
            json_object *e = json_object_array_get_idx(ev, i);
            json_object *p = get(e, "pid");
            if (str_is(get_str(e, "ph"), "X") && p &&
                json_object_get_int(p) == pid)
                cnt++;
        }
        printf("%s (pid %d): %zu complete events\n", task, pid, cnt);
        if (cnt == 0)
            fail("no complete (\"ph\":\"X\") events from %s", task);
    }
    /* the worker's fabric events */
    int *per_op = calloc((size_t)nops, sizeof *per_op);
    enum { MAXSTEP = 64 };
    int64_t step_read[MAXSTEP] = {0}, step_lookups[MAXSTEP] = {0};
    int64_t max_step = -1;
    size_t nfab = 0, nwait = 0;
    for (size_t i = 0; i < nev; i++) {
        json_object *e = json_object_array_get_idx(ev, i);
        json_object *p = get(e, "pid");
        if (!p || json_object_get_int(p) != wpid ||
            !str_is(get_str(e, "ph"), "X") ||
            !str_is(get_str(e, "cat"), "fabric"))
            continue;
        nfab++;
        const char *name = get_str(e, "name");
        json_object *a = get(e, "args");
        char where[160];
        snprintf(where, sizeof where, "fabric event '%s' (#%zu)",
                 name ? name : "?", i);
        /* "OP VAR" (an operation: bytes and ps_task) or "wait ..." */
        int op = -1;
        for (int k = 0; k < nops && name; k++) {
            size_t l = strlen(ops[k]);
            if (!strncmp(name, ops[k], l) && (!name[l] || name[l] == ' '))
                op = k;
        }
        if (op < 0) {
            if (!name || strncmp(name, "wait ", 5))
                fail("%s: neither an operation (%s) nor a wait", where,
                     arg(argc, argv, "ops"));
            else
                nwait++;
            continue;
        }
        per_op[op]++;
        json_object *st = get(a, "step");
        if (get(a, "rows")) { /* a table lookup's rows, from every part */
            int64_t r = get_int(a, "rows", where),
                    b = get_int(a, "bytes", where);
            if (r <= 0 || b <= 0)
                fail("%s: rows %" PRId64 ", bytes %" PRId64, where, r, b);
            if (st && json_object_is_type(st, json_type_int)) {
                int64_t s = json_object_get_int64(st);
                if (s >= 0 && s < MAXSTEP) {
                    step_lookups[s]++;
                    if (s > max_step)
                        max_step = s;
                }
            }
            continue;
        }
        int64_t b = get_int(a, "bytes", where),
                t = get_int(a, "ps_task", where);
        if (b <= 0)
            fail("%s: bytes %" PRId64, where, b);
        if (t < 0 || t >= num_ps)
            fail("%s: ps_task %" PRId64 " not in [0, %d)", where, t, num_ps);
        if (!strcmp(ops[op], "READ") && st &&
            json_object_is_type(st, json_type_int)) {
            int64_t s = json_object_get_int64(st);
            if (s >= 0 && s < MAXSTEP) {
                step_read[s] += b > 0 ? b : 0;
                if (s > max_step)
                    max_step = s;
            }
        }
    }
    printf("worker0: %zu fabric events:", nfab);
    for (int k = 0; k < nops; k++)
        printf(" %s %d", ops[k], per_op[k]);
    printf(", waits %zu\n", nwait);
    for (int k = 0; k < nops; k++)
        if (per_op[k] == 0)
            fail("worker0 has no fabric event named %s", ops[k]);
    int steps_seen = 0;
    const char *lk = opt_arg(argc, argv, "lookups");
    int64_t lookups = lk ? atoll(lk) : -1;
    for (int64_t s = 0; s <= max_step; s++) {
        if (!step_read[s])
            continue;
        steps_seen++;
        printf("step %" PRId64 ": READ %" PRId64 " bytes", s, step_read[s]);
        if (lookups >= 0)
            printf(", READ_ROWS of %" PRId64 " lookups", step_lookups[s]);
        printf("\n");
        if (step_read[s] != read_bytes)
            fail("step %" PRId64 ": READ events sum to %" PRId64
                 " bytes, the model's values are %" PRId64,
                 s, step_read[s], read_bytes);
        if (lookups >= 0 && step_lookups[s] != lookups)
            fail("step %" PRId64 ": %" PRId64 " READ_ROWS spans, the model "
                 "has %" PRId64 " lookups",
                 s, step_lookups[s], lookups);
    }
    if (!steps_seen)
        fail("no READ event carries a step");
    const char *exp = opt_arg(argc, argv, "explain");
    if (exp)
        trace_vs_explain(ev, pids, wpid, exp);
    json_object_put(root);
    free(per_op);
    free(ops);
    free(tasks);
    free(ops_s);
    free(tasks_s);
    return failures ? 1 : 0;
}

/* ----------------------------------------------------------- safetensors */
static int cmd_st(const char *path)
{
    size_t len = 0;
    char *buf = slurp(path, &len);
    if (!buf) {
        fail("cannot read %s", path);
        return 1;
    }
    if (len < 8) {
        fail("%s: %zu bytes, no header", path, len);
        return 1;
    }
    uint64_t hl = rf_get_le64((const unsigned char *)buf);
    if (hl > len - 8) {
        fail("%s: header length %" PRIu64 " > file", path, hl);
        return 1;
    }
    json_tokener *tok = json_tokener_new();
    json_object *h = json_tokener_parse_ex(tok, buf + 8, (int)hl);
    json_tokener_free(tok);
    if (!h || !json_object_is_type(h, json_type_object)) {
        fail("%s: the header is not a JSON object", path);
        return 1;
    }
    const char *data = buf + 8 + hl;
    size_t dlen = len - 8 - hl;
    const char *prev = NULL;
    int64_t expect_off = 0, gs = -1;
    int ntens = 0;
    /* json-c keeps insertion order: the file's order */
    json_object_object_foreach(h, key, t)
    {
        if (!strcmp(key, "__metadata__"))
            continue;
        ntens++;
        if (prev && strcmp(prev, key) >= 0)
            fail("%s: keys not sorted: '%s' after '%s'", path, key, prev);
        prev = key;
        const char *dt = get_str(t, "dtype");
        json_object *sh = get(t, "shape"), *off = get(t, "data_offsets");
        if (!dt || !sh || !off || json_object_array_length(off) != 2) {
            fail("%s: %s: no dtype, shape or data_offsets", path, key);
            continue;
        }
        int64_t b = json_object_get_int64(json_object_array_get_idx(off, 0)),
                e = json_object_get_int64(json_object_array_get_idx(off, 1));
        int64_t elems = 1;
        printf("%s %s [", key, dt);
        for (size_t d = 0; d < json_object_array_length(sh); d++) {
            int64_t v = json_object_get_int64(json_object_array_get_idx(sh, d));
            printf("%s%" PRId64, d ? "," : "", v);
            elems *= v;
        }
        printf("]\n");
        int64_t esz = !strcmp(dt, "I64") ? 8 : !strcmp(dt, "F32") ? 4 : 0;
        if (!esz)
            fail("%s: %s: dtype %s (want F32 or I64)", path, key, dt);
        if (b < 0 || e < b || (uint64_t)e > dlen ||
            (esz && e - b != elems * esz))
            fail("%s: %s: data_offsets [%" PRId64 ", %" PRId64
                 "] do not fit %" PRId64 " elements in %zu data bytes",
                 path, key, b, e, elems, dlen);
        expect_off = e > expect_off ? e : expect_off;
        if (!strcmp(key, "global_step") && esz == 8 && e - b == 8 &&
            (uint64_t)e <= dlen) {
            gs = (int64_t)rf_get_le64((const unsigned char *)data + b);
        }
    }
    if ((size_t)expect_off != dlen)
        fail("%s: %zu data bytes, tensors end at %" PRId64, path, dlen,
             expect_off);
    if (gs < 0)
        fail("%s: no int64 scalar global_step", path);
    printf("tensors=%d\nglobal_step=%" PRId64 "\n", ntens, gs);
    json_object_put(h);
    free(buf);
    return failures ? 1 : 0;
}

static int cmd_same_explain(const char *live_path, const char *off_path)
{
    json_object *live = parse_file(live_path), *off = parse_file(off_path);
    json_object *lex = live ? get(live, "explain") : NULL;
    json_object *oex = off ? get(off, "explain_only") : NULL;
    json_object *workers = oex ? get(oex, "worker_tasks") : NULL;
    json_object *w0 = workers && json_object_array_length(workers) > 0
                          ? json_object_array_get_idx(workers, 0)
                          : NULL;
    if (!lex || !w0) {
        fail("no explain document in %s or no worker task in %s", live_path,
             off_path);
        goto out;
    }
    json_object_object_foreach(lex, key, lval)
    {
        if (!strcmp(key, "fabric") || !strcmp(key, "cluster") ||
            !strcmp(key, "source"))
            continue;
        json_object *oval = get(w0, key);
        if (!oval || !json_object_equal(lval, oval))
            fail("member %s differs: live %.300s, offline %.300s", key,
                 json_object_to_json_string(lval),
                 oval ? json_object_to_json_string(oval) : "(missing)");
        else
            printf("same %s\n", key);
    }
    json_object *peers = get(get(w0, "fabric"), "peers");
    for (size_t i = 0; peers && i < json_object_array_length(peers); i++)
        if (!str_is(get_str(json_object_array_get_idx(peers, i), "provider"),
                    ""))
            fail("offline peer %zu names a provider", i);
    if (!get(w0, "data") || get_int(get(w0, "data"), "examples", "data") <= 0)
        fail("offline worker 0 has no data member");
    if (!get(w0, "chief"))
        fail("offline worker 0 (the chief) lists no chief duties");
    json_object *ps = get(oex, "ps_tasks");
    json_object *per_ps = get(get(lex, "placement"), "ps_record_bytes");
    size_t nps = ps ? json_object_array_length(ps) : 0;
    if (!per_ps || nps != json_object_array_length(per_ps))
        fail("offline describes %zu ps tasks, the placement %zu", nps,
             per_ps ? json_object_array_length(per_ps) : 0);
    for (size_t p = 0;
         per_ps && p < nps && p < json_object_array_length(per_ps); p++) {
        json_object *t = json_object_array_get_idx(ps, p);
        int64_t want =
            json_object_get_int64(json_object_array_get_idx(per_ps, p));
        int64_t got = get_int(t, "record_bytes", "ps task");
        json_object *recs = get(t, "records");
        int64_t sum = 0;
        for (size_t r = 0; recs && r < json_object_array_length(recs); r++) {
            json_object *rec = json_object_array_get_idx(recs, r);
            if (get(rec, "record_bytes"))
                sum += get_int(rec, "record_bytes", "record");
        }
        if (got != want || sum != want)
            fail("ps task %zu: records %" PRId64 " (sum %" PRId64
                 "), placement %" PRId64,
                 p, got, sum, want);
        else
            printf("ps task %zu holds %" PRId64 " B\n", p, got);
    }
out:
    json_object_put(live);
    json_object_put(off);
    return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr,
                "usage: tdist_check explain|trace|st FILE [KEY=VALUE...] | "
                "same_explain LIVE OFFLINE\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(argv[1], "explain"))
        return cmd_explain(argv[2], argc - 3, argv + 3);
    if (!strcmp(argv[1], "trace"))
        return cmd_trace(argv[2], argc - 3, argv + 3);
    if (!strcmp(argv[1], "st"))
        return cmd_st(argv[2]);
    if (!strcmp(argv[1], "same_explain") && argc == 4)
        return cmd_same_explain(argv[2], argv[3]);
    fprintf(stderr, "tdist_check: unknown command %s\n", argv[1]);
    return 2;
}

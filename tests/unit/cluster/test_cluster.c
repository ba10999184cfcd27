/* tests/unit/cluster/test_cluster.c: the cluster spec (rdmaflow/cluster.h)
 * from the classic trainer flags and from TF_CONFIG, checked against
 * TensorFlow's semantics (server_lib.ClusterSpec, TFConfigClusterResolver,
 * multi_worker_util, Estimator RunConfig and its docstring examples, the
 * TFJob operator's TF_CONFIG), the precedence of flags over TF_CONFIG, and
 * the exact message of every error.
 * Usage: rf_test_cluster [addr|flags|tfconfig|precedence|errors|format|
 * sparse]. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rdmaflow/cluster.h"
#include "rdmaflow/device.h"
#include "tests/common/check.h"

static const char *nz(const char *s)
{
    return s ? s : "(null)";
}

/* The classic flags; NULL = not given. */
static rf_cluster_flags F(const char *ps, const char *workers, const char *job,
                          const char *index)
{
    return (rf_cluster_flags){.ps_hosts = ps,
                              .worker_hosts = workers,
                              .job_name = job,
                              .task_index = index};
}

static const rf_cluster_flags NOFLAGS = {0};

/* Resolves and requires success with a cluster. */
static rf_cluster *ok_at(int line, rf_cluster_flags f, const char *tf)
{
    rf_cluster *c = NULL;
    rf_status st = rf_cluster_resolve(&f, tf, &c);
    CHECK(st == RF_OK && c, "line %d: resolve: %s", line, rf_status_string(st));
    return c;
}
#define OK(f, tf) ok_at(__LINE__, f, tf)

/* Resolves and requires a local run (RF_OK, no cluster). */
static void local_at(int line, rf_cluster_flags f, const char *tf)
{
    rf_cluster *c = (rf_cluster *)1;
    rf_status st = rf_cluster_resolve(&f, tf, &c);
    CHECK(st == RF_OK && !c, "line %d: tf %s: %s, cluster %p", line, nz(tf),
          rf_status_string(st), (void *)c);
    if (c != (rf_cluster *)1)
        rf_cluster_destroy(c);
}
#define LOCAL(f, tf) local_at(__LINE__, f, tf)

/* Resolves and requires RF_ERR_INVALID_ARG with exactly msg. */
static void err_at(int line, rf_cluster_flags f, const char *tf,
                   const char *msg)
{
    rf_cluster *c = (rf_cluster *)1;
    rf_status st = rf_cluster_resolve(&f, tf, &c);
    CHECK(st == RF_ERR_INVALID_ARG && !c &&
              strcmp(rf_error_message(), msg) == 0,
          "line %d: %s, message\n  got  %s\n  want %s", line,
          rf_status_string(st), rf_error_message(), msg);
    if (c != (rf_cluster *)1)
        rf_cluster_destroy(c);
}
#define ERR(f, tf, msg) err_at(__LINE__, f, tf, msg)

/* The own task is job/index at addr with the given role. */
static void self_at(int line, const rf_cluster *c, const char *job, int index,
                    const char *addr, int is_chief, int worker_id)
{
    const rf_cluster_task *t = rf_cluster_self(c);
    if (!t) {
        CHECK(t, "line %d: no self", line);
        return;
    }
    CHECK(strcmp(t->job, job) == 0 && t->index == index &&
              (addr ? t->address && strcmp(t->address, addr) == 0
                    : !t->address) &&
              t->is_chief == (is_chief != 0) && t->worker_id == worker_id,
          "line %d: self %s %d %s chief %d id %d, want %s %d %s %d %d", line,
          t->job, t->index, nz(t->address), t->is_chief, t->worker_id, job,
          index, nz(addr), is_chief, worker_id);
}
#define SELF(c, job, index, addr, chief, id)                                   \
    self_at(__LINE__, c, job, index, addr, chief, id)

/* ---- addresses -------------------------------------------------------- */

static void host_ok_at(int line, const char *text, const char *host,
                       unsigned port)
{
    char h[RF_HOST_MAX];
    uint16_t p = 0;
    rf_status st = rf_parse_host_port(text, "--x", h, &p);
    CHECK(st == RF_OK && strcmp(h, host) == 0 && p == port,
          "line %d: \"%s\" -> %s \"%s\" %u, want \"%s\" %u", line, text,
          rf_status_string(st), h, p, host, port);
}
#define HOST_OK(text, host, port) host_ok_at(__LINE__, text, host, port)

static void host_err_at(int line, const char *text, const char *msg)
{
    char h[RF_HOST_MAX];
    uint16_t p = 0;
    rf_status st = rf_parse_host_port(text, "--x", h, &p);
    CHECK(st == RF_ERR_INVALID_ARG && strcmp(rf_error_message(), msg) == 0 &&
              h[0] == '\0',
          "line %d: \"%s\": %s, message\n  got  %s\n  want %s", line, text,
          rf_status_string(st), rf_error_message(), msg);
}
#define HOST_ERR(text, msg) host_err_at(__LINE__, text, msg)

static void test_addr(void)
{
    HOST_OK("ps0:2222", "ps0", 2222);
    HOST_OK("127.0.0.1:1", "127.0.0.1", 1);
    HOST_OK("localhost:65535", "localhost", 65535);
    HOST_OK("mnist-ps-0.kubeflow.svc:2222", "mnist-ps-0.kubeflow.svc", 2222);
    HOST_OK("my_service:80", "my_service", 80);
    HOST_OK("host.example.com.:80", "host.example.com.", 80);
    HOST_OK("Host-1:0080", "Host-1", 80);
    HOST_OK("[::1]:2222", "::1", 2222);
    HOST_OK("[2001:db8::7]:9", "2001:db8::7", 9);
    HOST_OK("[::ffff:10.0.0.1]:9", "::ffff:10.0.0.1", 9);
    HOST_OK("[fe80::1%eth0]:2222", "fe80::1%eth0", 2222);

    HOST_ERR("", "--x is empty");
    HOST_ERR(NULL, "--x is empty");
    HOST_ERR("ps0", "--x \"ps0\" has no port (expected HOST:PORT)");
    HOST_ERR("ps0:", "--x \"ps0:\" has an empty port (expected HOST:PORT)");
    HOST_ERR(":2222", "--x \":2222\" has an empty host");
    HOST_ERR("ps0:http",
             "--x \"ps0:http\" has a bad port \"http\" (not a decimal number)");
    HOST_ERR("ps0:+22",
             "--x \"ps0:+22\" has a bad port \"+22\" (not a decimal number)");
    HOST_ERR("ps0:-1",
             "--x \"ps0:-1\" has a bad port \"-1\" (not a decimal number)");
    HOST_ERR("ps0:22 ",
             "--x \"ps0:22 \" has a bad port \"22 \" (not a decimal number)");
    HOST_ERR("ps0:0", "--x \"ps0:0\" has a bad port \"0\" (must be 1-65535)");
    HOST_ERR("ps0:65536",
             "--x \"ps0:65536\" has a bad port \"65536\" (must be 1-65535)");
    HOST_ERR("ps0:99999999999999999999",
             "--x \"ps0:99999999999999999999\" has a bad port "
             "\"99999999999999999999\" (must be 1-65535)");
    HOST_ERR("p s:1", "--x \"p s:1\" has a bad host: character ' ' at offset "
                      "1 is not allowed in a host name");
    HOST_ERR("ps\t0:1",
             "--x \"ps\\t0:1\" has a bad host: byte 0x09 at offset 2 "
             "is not allowed in a host name");
    HOST_ERR("a..b:1",
             "--x \"a..b:1\" has a bad host: empty label at offset 2 in host "
             "name");
    HOST_ERR(".a:1", "--x \".a:1\" has a bad host: empty label at offset 0 in "
                     "host name");
    HOST_ERR("-ps:1", "--x \"-ps:1\" has a bad host: label \"-ps\" begins or "
                      "ends with '-'");
    HOST_ERR("1.2.3.256:1", "--x \"1.2.3.256:1\" has a bad host: \"1.2.3.256\" "
                            "is not a valid IPv4 address");
    HOST_ERR("10.0.1:1", "--x \"10.0.1:1\" has a bad host: \"10.0.1\" is not a "
                         "valid IPv4 address");
    HOST_ERR("::1:2222", "--x \"::1:2222\" has more than one ':' (an IPv6 "
                         "address goes in brackets: [::1]:2222)");
    HOST_ERR("[::1]", "--x \"[::1]\" has no port (expected [IPV6]:PORT)");
    HOST_ERR("[::1:2222",
             "--x \"[::1:2222\" has no ']' after the IPv6 address");
    HOST_ERR("[::1]2222",
             "--x \"[::1]2222\" has '2' after ']' (expected [IPV6]:PORT)");
    HOST_ERR("[::g]:1", "--x \"[::g]:1\" has a bad host: \"::g\" is not a "
                        "valid IPv6 address");
    HOST_ERR("[ps0]:1", "--x \"[ps0]:1\" has a bad host: \"ps0\" is not a "
                        "valid IPv6 address");
    HOST_ERR("[fe80::1%]:1", "--x \"[fe80::1%]:1\" has a bad host: "
                             "\"fe80::1%\" is not a valid IPv6 address");
    HOST_ERR("[]:1", "--x \"[]:1\" has an empty host");

    /* Length limits: 63-character labels, 253-character names. */
    char label[70], name[300], text[320], want[400];
    memset(label, 'a', 63);
    strcpy(label + 63, ":1");
    HOST_OK(label,
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            1);
    memset(label, 'a', 64);
    strcpy(label + 64, ":1");
    HOST_ERR(label,
             "--x \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
             "aaaaaa...\" has a bad host: label at offset 0 is 64 "
             "characters long (at most 63)");
    for (int i = 0; i < 254; i++)
        name[i] = i % 2 ? '.' : 'a'; /* a.a.a...a. */
    name[253] = '\0';                /* 253 characters: a.a....a */
    snprintf(text, sizeof text, "%s:7", name);
    HOST_OK(text, name, 7);
    snprintf(text, sizeof text, "%s.b:7", name);
    snprintf(want, sizeof want,
             "--x \"%.61s...\" has a bad host: host is 255 "
             "characters long (at most 253)",
             text);
    HOST_ERR(text, want);

    /* Formatting. */
    char buf[64];
    CHECK(rf_format_host_port("::1", 2222, buf, sizeof buf) == RF_OK &&
              strcmp(buf, "[::1]:2222") == 0,
          "%s", buf);
    CHECK(rf_format_host_port("127.0.0.1", 80, buf, sizeof buf) == RF_OK &&
              strcmp(buf, "127.0.0.1:80") == 0,
          "%s", buf);
    CHECK(rf_format_host_port("127.0.0.1", 80, buf, 12) == RF_ERR_INVALID_ARG &&
              buf[0] == '\0',
          "short buffer");
    CHECK(rf_format_host_port("", 80, buf, sizeof buf) == RF_ERR_INVALID_ARG,
          "empty host");
}

/* ---- the classic flags ------------------------------------------------ */

static void test_flags(void)
{
    const char *ps = "ps0:2222,ps1:2222", *w = "w0:2222,w1:2222";

    /* The four command lines of the classic example (mnist_replica.py:
     * is_chief = task_index == 0 for a worker). */
    rf_cluster *c = OK(F(ps, w, "ps", "0"), NULL);
    SELF(c, "ps", 0, "ps0:2222", 0, -1);
    rf_cluster_destroy(c);
    c = OK(F(ps, w, "ps", "1"), NULL);
    SELF(c, "ps", 1, "ps1:2222", 0, -1);
    rf_cluster_destroy(c);
    c = OK(F(ps, w, "worker", "0"), NULL);
    SELF(c, "worker", 0, "w0:2222", 1, 0);
    rf_cluster_destroy(c);
    c = OK(F(ps, w, "worker", "1"), NULL);
    SELF(c, "worker", 1, "w1:2222", 0, 1);
    if (!c)
        return;
    const rf_cluster_task *t = rf_cluster_self(c);
    CHECK(strcmp(t->host, "w1") == 0 && t->port == 2222, "%s %u", t->host,
          t->port);
    CHECK(rf_cluster_num_ps(c) == 2 && rf_cluster_num_workers(c) == 2,
          "%d ps %d workers", rf_cluster_num_ps(c), rf_cluster_num_workers(c));
    CHECK(rf_cluster_num_tasks(c, "ps") == 2 &&
              rf_cluster_num_tasks(c, "worker") == 2 &&
              rf_cluster_num_tasks(c, "chief") == 0 &&
              rf_cluster_num_tasks(c, "evaluator") == 0 &&
              rf_cluster_num_tasks(c, "bogus") == 0 &&
              rf_cluster_num_tasks(c, NULL) == 0,
          "num_tasks");
    CHECK(strcmp(nz(rf_cluster_task_address(c, "ps", 1)), "ps1:2222") == 0,
          "ps 1");
    CHECK(!rf_cluster_task_address(c, "ps", 2) &&
              !rf_cluster_task_address(c, "ps", -1) &&
              !rf_cluster_task_address(c, "chief", 0),
          "absent tasks");
    CHECK(t == rf_cluster_task_at(c, "worker", 1), "self is the listed task");
    const rf_cluster_task *w0 = rf_cluster_task_at(c, "worker", 0);
    CHECK(w0 && w0 == rf_cluster_chief(c) && w0->is_chief &&
              w0->worker_id == 0 && strcmp(w0->job, "worker") == 0,
          "chief is worker 0");
    const rf_cluster_task *p1 = rf_cluster_task_at(c, "ps", 1);
    CHECK(p1 && !p1->is_chief && p1->worker_id == -1 && p1->index == 1 &&
              strcmp(p1->host, "ps1") == 0,
          "ps 1 task");
    CHECK(strcmp(rf_cluster_source(c),
                 "cluster from --ps_hosts/--worker_hosts"
                 ", task from --job_name/--task_index") == 0,
          "%s", rf_cluster_source(c));

    /* The device.h description drives replica_device_setter. */
    rf_cluster_desc desc;
    rf_cluster_device_desc(c, &desc);
    CHECK(desc.num_jobs == 2 && strcmp(desc.jobs[0].name, "ps") == 0 &&
              desc.jobs[0].num_tasks == 2 &&
              strcmp(desc.jobs[1].name, "worker") == 0 &&
              desc.jobs[1].num_tasks == 2,
          "desc");
    rf_replica_device_setter_options o;
    rf_replica_device_setter_options_init(&o);
    o.cluster = &desc;
    rf_replica_device_setter *setter = NULL;
    CHECK(rf_replica_device_setter_create(&o, &setter) == RF_OK && setter &&
              rf_replica_device_setter_ps_tasks(setter) == 2,
          "setter");
    if (setter) {
        char dev[RF_DEVICE_STRING_MAX];
        rf_op_desc op = {"VariableV2", "w", "", 0};
        CHECK(rf_replica_device_setter_fn(setter, &op, dev, sizeof dev) ==
                      RF_OK &&
                  strcmp(dev, "/job:ps/task:0") == 0,
              "%s", dev);
        CHECK(rf_replica_device_setter_fn(setter, &op, dev, sizeof dev) ==
                      RF_OK &&
                  strcmp(dev, "/job:ps/task:1") == 0,
              "%s", dev);
    }
    rf_replica_device_setter_destroy(setter);
    rf_cluster_destroy(c);

    /* One of each, IPv6 and IPv4 loopback mixed. */
    c = OK(F("[::1]:2222", "127.0.0.1:2223,[::1]:2224", "worker", "1"), NULL);
    SELF(c, "worker", 1, "[::1]:2224", 0, 1);
    if (c) {
        CHECK(strcmp(rf_cluster_self(c)->host, "::1") == 0 &&
                  rf_cluster_self(c)->port == 2224,
              "ipv6 self");
        CHECK(strcmp(rf_cluster_task_at(c, "ps", 0)->host, "::1") == 0,
              "ipv6 ps");
    }
    rf_cluster_destroy(c);

    /* The same host on different ports is fine (the local launcher). */
    c = OK(F("127.0.0.1:5000,127.0.0.1:5001", "127.0.0.1:5002", "worker", "0"),
           NULL);
    SELF(c, "worker", 0, "127.0.0.1:5002", 1, 0);
    rf_cluster_destroy(c);

    /* A NULL flags pointer is "no flags". */
    rf_cluster *none = (rf_cluster *)1;
    CHECK(rf_cluster_resolve(NULL, NULL, &none) == RF_OK && !none, "no flags");
    CHECK(rf_cluster_resolve(&NOFLAGS, "", &none) == RF_OK && !none,
          "empty TF_CONFIG");
}

/* ---- TF_CONFIG -------------------------------------------------------- */

/* Estimator RunConfig's docstring cluster. */
#define RC_CLUSTER                                                             \
    "{\"chief\": [\"host0:2222\"], \"ps\": [\"host1:2222\", \"host2:2222\"], " \
    "\"worker\": [\"host3:2222\", \"host4:2222\", \"host5:2222\"]}"

static void test_tfconfig(void)
{
    /* RunConfig "Example of non-chief node": master host4:2222, task_id 1,
     * num_ps_replicas 2, num_worker_replicas 4 (chief + workers), not
     * chief; id_in_cluster = 1 + 1 chief. */
    rf_cluster *c = OK(NOFLAGS, "{\"cluster\": " RC_CLUSTER
                                ", \"task\": {\"type\": \"worker\", "
                                "\"index\": 1}}");
    SELF(c, "worker", 1, "host4:2222", 0, 2);
    CHECK(rf_cluster_num_ps(c) == 2 && rf_cluster_num_workers(c) == 4, "%d %d",
          rf_cluster_num_ps(c), rf_cluster_num_workers(c));
    const rf_cluster_task *chief = rf_cluster_chief(c);
    CHECK(chief && strcmp(chief->job, "chief") == 0 && chief->index == 0 &&
              chief->worker_id == 0 && chief->is_chief,
          "chief");
    const rf_cluster_task *w0 = rf_cluster_task_at(c, "worker", 0);
    CHECK(w0 && !w0->is_chief && w0->worker_id == 1,
          "worker 0 is not the chief when there is a chief job");
    CHECK(strcmp(rf_cluster_source(c),
                 "cluster from TF_CONFIG, task from TF_CONFIG") == 0,
          "%s", rf_cluster_source(c));
    rf_cluster_desc desc;
    rf_cluster_device_desc(c, &desc);
    CHECK(desc.num_jobs == 3 && strcmp(desc.jobs[0].name, "chief") == 0 &&
              desc.jobs[0].num_tasks == 1 &&
              strcmp(desc.jobs[1].name, "ps") == 0 &&
              strcmp(desc.jobs[2].name, "worker") == 0 &&
              desc.jobs[2].num_tasks == 3,
          "desc");
    rf_cluster_destroy(c);

    /* "Example of chief node". */
    c = OK(NOFLAGS, "{\"cluster\": " RC_CLUSTER
                    ", \"task\": {\"type\": \"chief\", \"index\": 0}}");
    SELF(c, "chief", 0, "host0:2222", 1, 0);
    rf_cluster_destroy(c);

    /* "Example of evaluator node": the evaluator is not part of the training
     * cluster (TFJob leaves it out of "cluster"); any index. */
    c = OK(NOFLAGS, "{\"cluster\": " RC_CLUSTER
                    ", \"task\": {\"type\": \"evaluator\", \"index\": 3}}");
    SELF(c, "evaluator", 3, NULL, 0, -1);
    if (c)
        CHECK(rf_cluster_self(c)->host == NULL && rf_cluster_self(c)->port == 0,
              "evaluator outside the cluster has no address");
    rf_cluster_destroy(c);

    /* An evaluator listed in the cluster (TF's distribute guide). */
    c = OK(NOFLAGS, "{\"cluster\": {\"ps\": [\"p:1\"], \"worker\": [\"w:1\"], "
                    "\"evaluator\": [\"e:1\"]}, \"task\": {\"type\": "
                    "\"evaluator\", \"index\": 0}}");
    SELF(c, "evaluator", 0, "e:1", 0, -1);
    if (c)
        CHECK(rf_cluster_num_workers(c) == 1 &&
                  rf_cluster_num_tasks(c, "evaluator") == 1,
              "the evaluator does not train");
    rf_cluster_destroy(c);

    /* TFJob (Kubeflow training-operator genTFConfigJSONStr): service names,
     * "environment": "cloud". */
    c = OK(NOFLAGS, "{\"cluster\":{\"ps\":[\"mnist-ps-0.kubeflow.svc:2222\"],"
                    "\"worker\":[\"mnist-worker-0.kubeflow.svc:2222\","
                    "\"mnist-worker-1.kubeflow.svc:2222\"]},"
                    "\"task\":{\"type\":\"worker\",\"index\":1},"
                    "\"environment\":\"cloud\"}");
    SELF(c, "worker", 1, "mnist-worker-1.kubeflow.svc:2222", 0, 1);
    rf_cluster_destroy(c);

    /* TFJob with a chief replica and a ps task's view. */
    c = OK(NOFLAGS,
           "{\"cluster\":{\"chief\":[\"j-chief-0.ns.svc:2222\"],"
           "\"ps\":[\"j-ps-0.ns.svc:2222\",\"j-ps-1.ns.svc:2222\"],"
           "\"worker\":[\"j-worker-0.ns.svc:2222\"]},"
           "\"task\":{\"type\":\"ps\",\"index\":1},\"environment\":\"cloud\"}");
    SELF(c, "ps", 1, "j-ps-1.ns.svc:2222", 0, -1);
    if (c)
        CHECK(rf_cluster_num_workers(c) == 2, "chief + worker");
    rf_cluster_destroy(c);

    /* Other keys are ignored, as TF does (rpc_layer, session_master, extra
     * task keys); the index may be a string (TF: int(task['index'])). */
    c = OK(NOFLAGS, "{\"cluster\": {\"ps\": [\"p:1\"], \"worker\": [\"w:1\", "
                    "\"w:2\"]}, \"task\": {\"type\": \"worker\", \"index\": "
                    "\"1\", \"trial\": \"7\"}, \"rpc_layer\": \"grpc\", "
                    "\"session_master\": \"\"}");
    SELF(c, "worker", 1, "w:2", 0, 1);
    rf_cluster_destroy(c);

    /* IPv6, whitespace and a trailing newline around the JSON. */
    c = OK(NOFLAGS, "\n  {\"cluster\": {\"ps\": [\"[::1]:2222\"], \"worker\": "
                    "[\"[::1]:2223\"]},\n \"task\": {\"type\": \"ps\", "
                    "\"index\": 0}}\n");
    SELF(c, "ps", 0, "[::1]:2222", 0, -1);
    rf_cluster_destroy(c);

    /* Estimator's local mode: no cluster, task absent or worker 0. */
    LOCAL(NOFLAGS, "{}");
    LOCAL(NOFLAGS, "{\"cluster\": {}}");
    LOCAL(NOFLAGS, "{\"task\": {\"type\": \"worker\", \"index\": 0}}");
    LOCAL(NOFLAGS, "{\"environment\": \"cloud\"}");
}

/* ---- precedence ------------------------------------------------------- */

static void test_precedence(void)
{
    const char *tf = "{\"cluster\": {\"ps\": [\"tp:1\"], \"worker\": "
                     "[\"tw0:1\", \"tw1:1\", \"tw2:1\"]}, \"task\": "
                     "{\"type\": \"worker\", \"index\": 2}}";

    /* Host flags replace TF_CONFIG's cluster whole (no job mixing). */
    rf_cluster *c = OK(F("fp:1", "fw0:1,fw1:1", "worker", "1"), tf);
    SELF(c, "worker", 1, "fw1:1", 0, 1);
    if (c)
        CHECK(rf_cluster_num_workers(c) == 2 &&
                  !rf_cluster_task_address(c, "worker", 2),
              "flag cluster");
    rf_cluster_destroy(c);

    /* With a chief in TF_CONFIG, the flag cluster has none: worker 0 is the
     * chief again. */
    c = OK(F("fp:1", "fw0:1", "worker", "0"),
           "{\"cluster\": {\"chief\": [\"tc:1\"], \"ps\": [\"tp:1\"]}, "
           "\"task\": {\"type\": \"chief\", \"index\": 0}}");
    SELF(c, "worker", 0, "fw0:1", 1, 0);
    if (c)
        CHECK(rf_cluster_num_tasks(c, "chief") == 0, "no chief");
    rf_cluster_destroy(c);

    /* Task flags override TF_CONFIG's task on TF_CONFIG's cluster. */
    c = OK(F(NULL, NULL, "ps", "0"), tf);
    SELF(c, "ps", 0, "tp:1", 0, -1);
    if (c)
        CHECK(strcmp(rf_cluster_source(c), "cluster from TF_CONFIG, task from "
                                           "--job_name/--task_index") == 0,
              "%s", rf_cluster_source(c));
    rf_cluster_destroy(c);

    /* Field by field: only the index. */
    c = OK(F(NULL, NULL, NULL, "0"), tf);
    SELF(c, "worker", 0, "tw0:1", 1, 0);
    if (c)
        CHECK(strcmp(rf_cluster_source(c),
                     "cluster from TF_CONFIG, task from TF_CONFIG: task.type "
                     "and --task_index") == 0,
              "%s", rf_cluster_source(c));
    rf_cluster_destroy(c);

    /* Only the job: TF_CONFIG's index 2 is out of range for ps. */
    ERR(F(NULL, NULL, "ps", NULL), tf,
        "TF_CONFIG: task.index: 2 is out of range for job \"ps\" (TF_CONFIG: "
        "cluster.ps has 1 task: 0-0)");

    /* Flag cluster, task from TF_CONFIG. */
    c = OK(F("fp:1", "fw0:1,fw1:1,fw2:1", NULL, NULL), tf);
    SELF(c, "worker", 2, "fw2:1", 0, 2);
    if (c)
        CHECK(strcmp(rf_cluster_source(c),
                     "cluster from --ps_hosts/--worker_hosts, task from "
                     "TF_CONFIG") == 0,
              "%s", rf_cluster_source(c));
    rf_cluster_destroy(c);

    /* A set TF_CONFIG is checked even when flags override all of it. */
    ERR(F("fp:1", "fw0:1", "worker", "0"), "{\"cluster\": ",
        "TF_CONFIG: invalid JSON at offset 12 (line 1, column 13): unexpected "
        "end of input (is a brace, bracket or quote not closed?)");
    ERR(F("fp:1", "fw0:1", "worker", "0"), "{\"cluster\": {\"ps\": [\"p\"]}}",
        "TF_CONFIG: cluster.ps[0] \"p\" has no port (expected HOST:PORT)");
    ERR(F("fp:1", "fw0:1", "worker", "0"), "{\"task\": {\"type\": \"master\"}}",
        "TF_CONFIG: task.type: unknown job \"master\" (expected ps, worker, "
        "chief or evaluator; the legacy \"master\" job is called \"chief\" "
        "now)");

    /* Task flags need a cluster from somewhere. */
    ERR(F(NULL, NULL, "worker", "0"), NULL,
        "--job_name: given without a cluster (give --ps_hosts and "
        "--worker_hosts, or a TF_CONFIG with a \"cluster\")");
    ERR(F(NULL, NULL, NULL, "0"), "{}",
        "--task_index: given without a cluster (give --ps_hosts and "
        "--worker_hosts, or a TF_CONFIG with a \"cluster\")");
}

/* ---- errors ----------------------------------------------------------- */

static void test_errors_flags(void)
{
    const char *ps = "ps0:2222,ps1:2222", *w = "w0:2222,w1:2222";

    ERR(F("", w, "ps", "0"), NULL,
        "--ps_hosts: empty list (expected HOST:PORT[,HOST:PORT...])");
    ERR(F(ps, "", "ps", "0"), NULL,
        "--worker_hosts: empty list (expected HOST:PORT[,HOST:PORT...])");
    ERR(F("ps0:2222,,ps1:2222", w, "ps", "0"), NULL,
        "--ps_hosts: task 1 is empty (stray comma?)");
    ERR(F(ps, "w0:2222,", "ps", "0"), NULL,
        "--worker_hosts: task 1 is empty (stray comma?)");
    ERR(F(",ps0:1", w, "ps", "0"), NULL,
        "--ps_hosts: task 0 is empty (stray comma?)");
    ERR(F("ps0:2222,ps1", w, "ps", "0"), NULL,
        "--ps_hosts: task 1 \"ps1\" has no port (expected HOST:PORT)");
    ERR(F(ps, "w0:2222,w1:x", "ps", "0"), NULL,
        "--worker_hosts: task 1 \"w1:x\" has a bad port \"x\" (not a decimal "
        "number)");
    ERR(F("ps0:0", w, "ps", "0"), NULL,
        "--ps_hosts: task 0 \"ps0:0\" has a bad port \"0\" (must be 1-65535)");
    ERR(F("ps0:70000", w, "ps", "0"), NULL,
        "--ps_hosts: task 0 \"ps0:70000\" has a bad port \"70000\" (must be "
        "1-65535)");
    ERR(F(":2222", w, "ps", "0"), NULL,
        "--ps_hosts: task 0 \":2222\" has an empty host");
    ERR(F("ps0:2222, ps1:2222", w, "ps", "0"), NULL,
        "--ps_hosts: task 1 \" ps1:2222\" has a bad host: character ' ' at "
        "offset 0 is not allowed in a host name");
    ERR(F("::1:2222", w, "ps", "0"), NULL,
        "--ps_hosts: task 0 \"::1:2222\" has more than one ':' (an IPv6 "
        "address goes in brackets: [::1]:2222)");

    /* Duplicates within and across jobs, IPv6 by value, names by case. */
    ERR(F("ps0:2222,ps0:2222", w, "ps", "0"), NULL,
        "--ps_hosts: task 1 \"ps0:2222\" is the same address as ps task 0 "
        "(\"ps0:2222\")");
    ERR(F(ps, "w0:2222,PS1:2222", "ps", "0"), NULL,
        "--worker_hosts: task 1 \"PS1:2222\" is the same address as ps task 1 "
        "(\"ps1:2222\")");
    ERR(F("[::1]:5", "[0:0::1]:5", "ps", "0"), NULL,
        "--worker_hosts: task 0 \"[0:0::1]:5\" is the same address as ps task "
        "0 (\"[::1]:5\")");
    ERR(F("h.example.:5", "H.Example:5", "ps", "0"), NULL,
        "--worker_hosts: task 0 \"H.Example:5\" is the same address as ps task "
        "0 (\"h.example.:5\")");

    /* Both host lists together. */
    ERR(F(ps, NULL, "ps", "0"), NULL,
        "--worker_hosts: missing (required with --ps_hosts)");
    ERR(F(NULL, w, "worker", "0"), NULL,
        "--ps_hosts: missing (required with --worker_hosts)");

    /* The task. */
    ERR(F(ps, w, NULL, "0"), NULL,
        "--job_name: missing (required with --ps_hosts and --worker_hosts)");
    ERR(F(ps, w, "worker", NULL), NULL,
        "--task_index: missing (required with --job_name)");
    ERR(F(ps, w, "", "0"), NULL, "--job_name is empty");
    ERR(F(ps, w, "master", "0"), NULL,
        "--job_name: unknown job \"master\" (expected ps, worker, chief or "
        "evaluator; the legacy \"master\" job is called \"chief\" now)");
    ERR(F(ps, w, "Worker", "0"), NULL,
        "--job_name: unknown job \"Worker\" (expected ps, worker, chief or "
        "evaluator)");
    ERR(F(ps, w, "chief", "0"), NULL,
        "--job_name: job \"chief\" is not in the cluster (jobs in "
        "--ps_hosts/--worker_hosts: ps, worker)");
    ERR(F(ps, w, "worker", "-1"), NULL,
        "--task_index: -1 is negative (task indices start at 0)");
    ERR(F(ps, w, "worker", "x"), NULL,
        "--task_index: \"x\" is not a task index (a non-negative integer)");
    ERR(F(ps, w, "worker", "1x"), NULL,
        "--task_index: \"1x\" is not a task index (a non-negative integer)");
    ERR(F(ps, w, "worker", " 1"), NULL,
        "--task_index: \" 1\" is not a task index (a non-negative integer)");
    ERR(F(ps, w, "worker", "+1"), NULL,
        "--task_index: \"+1\" is not a task index (a non-negative integer)");
    ERR(F(ps, w, "worker", ""), NULL, "--task_index is empty");
    ERR(F(ps, w, "worker", "3000000000"), NULL,
        "--task_index: 3000000000 is above the limit of 2147483647");
    ERR(F(ps, w, "worker", "2"), NULL,
        "--task_index: 2 is out of range for job \"worker\" (--worker_hosts "
        "has 2 tasks: 0-1)");
    ERR(F("p:1", w, "ps", "1"), NULL,
        "--task_index: 1 is out of range for job \"ps\" (--ps_hosts has 1 "
        "task: 0-0)");
}

static void test_errors_tfconfig(void)
{
    const char *task = ", \"task\": {\"type\": \"worker\", \"index\": 0}}";
    char buf[512];
#define TFC(cluster)                                                           \
    (snprintf(buf, sizeof buf, "{\"cluster\": %s%s", cluster, task), buf)

    /* Invalid JSON: json-c's error and the position. */
    ERR(NOFLAGS, "{\"cluster\": {\"ps\": [\"p:1\",]}}",
        "TF_CONFIG: invalid JSON at offset 26 (line 1, column 27): unexpected "
        "character; text there: \"]}}\"");
    ERR(NOFLAGS, "{\"cluster\":\n {\"ps\": [\"p:1\"] x}}",
        "TF_CONFIG: invalid JSON at offset 28 (line 2, column 17): object "
        "value "
        "separator ',' expected; text there: \"x}}\"");
    ERR(NOFLAGS, "{\"task\": {\"type\": worker}}",
        "TF_CONFIG: invalid JSON at offset 18 (line 1, column 19): unexpected "
        "character; text there: \"worker}}\"");
    ERR(NOFLAGS, "{} {}",
        "TF_CONFIG: invalid JSON at offset 3 (line 1, column 4): text after "
        "the end of the JSON value; text there: \"{}\"");
    ERR(NOFLAGS,
        "{\"cluster\": {\"ps\": [\"p:1\"]}, \"task\": {\"type\": "
        "\"ps\", \"index\": 0}} trailing garbage after the end",
        "TF_CONFIG: invalid JSON at offset 65 (line 1, column 66): text after "
        "the end of the JSON value; text there: \"trailing garbage aft...\"");
    ERR(NOFLAGS, "{\"task\": {\"type\": \"w",
        "TF_CONFIG: invalid JSON at offset 20 (line 1, column 21): unexpected "
        "end of input (is a brace, bracket or quote not closed?)");
    ERR(NOFLAGS, " ",
        "TF_CONFIG: invalid JSON at offset 1 (line 1, column 2): unexpected "
        "end of input (is a brace, bracket or quote not closed?)");
    ERR(NOFLAGS, "{\"task\": \"\xff\"}",
        "TF_CONFIG: invalid JSON at offset 10 (line 1, column 11): invalid "
        "utf-8 string; text there: \"\\xff\\\"}\"");

    /* Wrong JSON types, with the path. */
    ERR(NOFLAGS, "[1, 2]",
        "TF_CONFIG: must be a JSON object ({\"cluster\": ..., \"task\": ...}), "
        "not a list");
    ERR(NOFLAGS, "null",
        "TF_CONFIG: must be a JSON object ({\"cluster\": ..., \"task\": ...}), "
        "not null");
    ERR(NOFLAGS, TFC("[\"p:1\"]"),
        "TF_CONFIG: cluster must be an object (job name -> list of "
        "\"host:port\"), not a list");
    ERR(NOFLAGS, TFC("{\"ps\": \"p:1\", \"worker\": [\"w:1\"]}"),
        "TF_CONFIG: cluster.ps must be a list of \"host:port\" strings, not "
        "the "
        "string \"p:1\"");
    ERR(NOFLAGS, TFC("{\"ps\": [\"p:1\"], \"worker\": {\"1\": \"w:1\"}}"),
        "TF_CONFIG: cluster.worker must be a list of \"host:port\" strings, "
        "not "
        "an object (sparse task maps are not supported)");
    ERR(NOFLAGS, TFC("{\"ps\": [\"p:1\", 2222], \"worker\": [\"w:1\"]}"),
        "TF_CONFIG: cluster.ps[1] must be a \"host:port\" string, not the "
        "integer 2222");
    ERR(NOFLAGS, TFC("{\"ps\": [\"p:1\"], \"worker\": [null]}"),
        "TF_CONFIG: cluster.worker[0] must be a \"host:port\" string, not "
        "null");
    ERR(NOFLAGS,
        "{\"cluster\": {\"ps\": [\"p:1\"], \"worker\": [\"w:1\"]}, "
        "\"task\": [\"worker\", 0]}",
        "TF_CONFIG: task must be an object ({\"type\": ..., \"index\": ...}), "
        "not a list");
    ERR(NOFLAGS,
        "{\"cluster\": {\"ps\": [\"p:1\"], \"worker\": [\"w:1\"]}, "
        "\"task\": {\"type\": 1, \"index\": 0}}",
        "TF_CONFIG: task.type must be a string, not the integer 1");
    ERR(NOFLAGS,
        "{\"cluster\": {\"ps\": [\"p:1\"], \"worker\": [\"w:1\"]}, "
        "\"task\": {\"type\": \"\", \"index\": 0}}",
        "TF_CONFIG: task.type is empty");
    ERR(NOFLAGS,
        "{\"cluster\": {\"ps\": [\"p:1\"], \"worker\": [\"w:1\"]}, "
        "\"task\": {\"type\": \"worker\", \"index\": 1.5}}",
        "TF_CONFIG: task.index must be an integer, not the number 1.5");
    ERR(NOFLAGS,
        "{\"cluster\": {\"ps\": [\"p:1\"], \"worker\": [\"w:1\"]}, "
        "\"task\": {\"type\": \"worker\", \"index\": true}}",
        "TF_CONFIG: task.index must be an integer, not the boolean true");
    ERR(NOFLAGS,
        "{\"cluster\": {\"ps\": [\"p:1\"], \"worker\": [\"w:1\"]}, "
        "\"task\": {\"type\": \"worker\", \"index\": \"one\"}}",
        "TF_CONFIG: task.index: \"one\" is not a task index (a non-negative "
        "integer)");
    ERR(NOFLAGS,
        "{\"cluster\": {\"ps\": [\"p:1\"], \"worker\": [\"w:1\"]}, "
        "\"task\": {\"type\": \"worker\", \"index\": -1}}",
        "TF_CONFIG: task.index: -1 is negative (task indices start at 0)");
    ERR(NOFLAGS,
        "{\"cluster\": {\"ps\": [\"p:1\"], \"worker\": [\"w:1\"]}, "
        "\"task\": {\"type\": \"worker\", \"index\": "
        "99999999999999999999}}",
        /* json-c would clamp it to 18446744073709551615: refused before
         * (core/json_check.c) */
        "TF_CONFIG: the number 99999999999999999999 is out of range (at "
        "byte 84)");
    ERR(NOFLAGS,
        "{\"cluster\": {\"ps\": [\"p:1\"], \"worker\": [\"w:1\"]}, "
        "\"task\": {\"type\": \"worker\", \"index\": "
        "9223372036854775807}}",
        "TF_CONFIG: task.index: 9223372036854775807 is above the limit of "
        "2147483647");

    /* Entries. */
    ERR(NOFLAGS, TFC("{\"ps\": [], \"worker\": [\"w:1\"]}"),
        "TF_CONFIG: cluster.ps is an empty list");
    ERR(NOFLAGS, TFC("{\"ps\": [\"p:1\", \"\"], \"worker\": [\"w:1\"]}"),
        "TF_CONFIG: cluster.ps[1] is empty");
    ERR(NOFLAGS, TFC("{\"ps\": [\"p:1\", \"host\"], \"worker\": [\"w:1\"]}"),
        "TF_CONFIG: cluster.ps[1] \"host\" has no port (expected HOST:PORT)");
    ERR(NOFLAGS, TFC("{\"ps\": [\"p:1\"], \"worker\": [\"w:1\", \"w:99999\"]}"),
        "TF_CONFIG: cluster.worker[1] \"w:99999\" has a bad port \"99999\" "
        "(must be 1-65535)");
    ERR(NOFLAGS, TFC("{\"ps\": [\"p:1\"], \"worker\": [\"p:1\"]}"),
        "TF_CONFIG: cluster.worker[0] \"p:1\" is the same address as "
        "cluster.ps[0] (\"p:1\")");
    /* read two ways: json-c would keep the last of two keys (issue 25) */
    ERR(NOFLAGS,
        TFC("{\"ps\": [\"p:1\"], \"worker\": [\"w:1\"], "
            "\"w\\u006frker\": [\"x:1\"]}"),
        "TF_CONFIG: the key \"worker\" is in one object twice, at bytes 28 "
        "and 47");
    ERR(NOFLAGS, TFC("{\"ps\": [\"p:1\"], \"worker\": [\"w\\u0000:1\"]}"),
        "TF_CONFIG: a NUL (\\u0000) in a string (at byte 47)");

    /* Jobs. */
    ERR(NOFLAGS, TFC("{\"ps\": [\"p:1\"], \"master\": [\"m:1\"]}"),
        "TF_CONFIG: cluster: unknown job \"master\" (expected ps, worker, "
        "chief or evaluator; the legacy \"master\" job is called \"chief\" "
        "now)");
    ERR(NOFLAGS,
        TFC("{\"ps\": [\"p:1\"], \"worker\": [\"w:1\"], \"chief\": "
            "[\"c:1\", \"c:2\"]}"),
        "TF_CONFIG: cluster.chief has 2 tasks; there must be at most one "
        "chief");
    ERR(NOFLAGS,
        TFC("{\"ps\": [\"p:1\"], \"worker\": [\"w:1\"], "
            "\"evaluator\": [\"e:1\", \"e:2\"]}"),
        "TF_CONFIG: cluster.evaluator has 2 tasks; there must be at most one "
        "evaluator");
    /* TFConfigClusterResolver's docstring cluster has no ps. */
    ERR(NOFLAGS,
        TFC("{\"worker\": [\"localhost:12345\", "
            "\"localhost:23456\"]}"),
        "TF_CONFIG: cluster has no \"ps\" job (rdmaflow trains with parameter "
        "servers: at least one ps task)");
    ERR(NOFLAGS, TFC("{\"ps\": [\"p:1\"], \"evaluator\": [\"e:1\"]}"),
        "TF_CONFIG: cluster has no \"worker\" or \"chief\" job (nothing would "
        "train)");

    /* The task against the cluster. */
    const char *cl = "{\"cluster\": {\"ps\": [\"p:1\"], \"worker\": "
                     "[\"w:1\", \"w:2\"]}";
    snprintf(buf, sizeof buf, "%s}", cl);
    ERR(NOFLAGS, buf,
        "TF_CONFIG: no \"task\" section (and no --job_name): which task is "
        "this process?");
    snprintf(buf, sizeof buf, "%s, \"task\": {\"index\": 0}}", cl);
    ERR(NOFLAGS, buf, "TF_CONFIG: task has no \"type\" (and no --job_name)");
    snprintf(buf, sizeof buf, "%s, \"task\": {\"type\": \"ps\"}}", cl);
    ERR(NOFLAGS, buf, "TF_CONFIG: task has no \"index\" (and no --task_index)");
    snprintf(buf, sizeof buf,
             "%s, \"task\": {\"type\": \"worker\", \"index\": 2}}", cl);
    ERR(NOFLAGS, buf,
        "TF_CONFIG: task.index: 2 is out of range for job \"worker\" "
        "(TF_CONFIG: cluster.worker has 2 tasks: 0-1)");
    snprintf(buf, sizeof buf,
             "%s, \"task\": {\"type\": \"chief\", \"index\": 0}}", cl);
    ERR(NOFLAGS, buf,
        "TF_CONFIG: task.type: job \"chief\" is not in the cluster (jobs in "
        "TF_CONFIG: ps, worker)");
    snprintf(buf, sizeof buf,
             "{\"cluster\": {\"ps\": [\"p:1\"], \"worker\": [\"w:1\"], "
             "\"evaluator\": [\"e:1\"]}, \"task\": {\"type\": \"evaluator\", "
             "\"index\": 1}}");
    ERR(NOFLAGS, buf,
        "TF_CONFIG: task.index: 1 is out of range for job \"evaluator\" "
        "(TF_CONFIG: cluster.evaluator has 1 task: 0-0)");
    snprintf(buf, sizeof buf,
             "%s, \"task\": {\"type\": \"boss\", \"index\": 0}}", cl);
    ERR(NOFLAGS, buf,
        "TF_CONFIG: task.type: unknown job \"boss\" (expected ps, worker, "
        "chief or evaluator)");

    /* A task without a cluster: only Estimator's local worker 0. */
    ERR(NOFLAGS, "{\"task\": {\"type\": \"ps\", \"index\": 0}}",
        "TF_CONFIG: task is ps 0 but there is no cluster (give --ps_hosts and "
        "--worker_hosts, or a TF_CONFIG with a \"cluster\"; a local run allows "
        "only the task {\"type\": \"worker\", \"index\": 0})");
    ERR(NOFLAGS,
        "{\"cluster\": {}, \"task\": {\"type\": \"worker\", "
        "\"index\": 1}}",
        "TF_CONFIG: task is worker 1 but there is no cluster (give --ps_hosts "
        "and --worker_hosts, or a TF_CONFIG with a \"cluster\"; a local run "
        "allows only the task {\"type\": \"worker\", \"index\": 0})");
#undef TFC
}

static void test_errors(void)
{
    test_errors_flags();
    test_errors_tfconfig();
}

/* ---- printing --------------------------------------------------------- */

static void expect_round_trip(const rf_cluster *c)
{
    char *json = rf_cluster_to_json(c, true);
    rf_cluster *c2 = OK(NOFLAGS, json);
    char *json2 = c2 ? rf_cluster_to_json(c2, true) : NULL;
    /* Only the source differs (TF_CONFIG now). */
    const rf_cluster_task *a = rf_cluster_self(c), *b = rf_cluster_self(c2);
    CHECK(a && b && strcmp(a->job, b->job) == 0 && a->index == b->index &&
              strcmp(nz(a->address), nz(b->address)) == 0 &&
              a->is_chief == b->is_chief && a->worker_id == b->worker_id,
          "round trip of\n%s\ngave\n%s", nz(json), nz(json2));
    const char *s1 = json ? strstr(json, "\"source\"") : NULL;
    const char *s2 = json2 ? strstr(json2, "\"source\"") : NULL;
    CHECK(s1 && s2 && s1 - json == s2 - json2 &&
              strncmp(json, json2, (size_t)(s1 - json)) == 0,
          "round trip differs\n%s\n%s", nz(json), nz(json2));
    free(json);
    free(json2);
    rf_cluster_destroy(c2);
}

static void test_format(void)
{
    rf_cluster *c =
        OK(F("ps0:2222,ps1:2222", "w0:2222,[::1]:2222", "worker", "1"), NULL);
    if (!c)
        return;
    char *text = rf_cluster_format(c);
    const char *want =
        "cluster: 2 ps, 2 training workers; chief /job:worker/task:0 (no "
        "chief job: worker 0)\n"
        "  /job:ps/task:0      ps0:2222\n"
        "  /job:ps/task:1      ps1:2222\n"
        "  /job:worker/task:0  w0:2222     chief\n"
        "  /job:worker/task:1  [::1]:2222  this task\n"
        "this task: /job:worker/task:1 ([::1]:2222); cluster from "
        "--ps_hosts/--worker_hosts, task from --job_name/--task_index\n";
    CHECK(text && strcmp(text, want) == 0, "format\n%s\nwant\n%s", nz(text),
          want);
    free(text);

    char *json = rf_cluster_to_json(c, false);
    const char *wjson =
        "{\"cluster\":{\"ps\":[\"ps0:2222\",\"ps1:2222\"],\"worker\":"
        "[\"w0:2222\",\"[::1]:2222\"]},\"task\":{\"type\":\"worker\","
        "\"index\":1,\"address\":\"[::1]:2222\",\"is_chief\":false,"
        "\"worker_id\":1},\"chief\":{\"type\":\"worker\",\"index\":0},"
        "\"num_ps\":2,\"num_workers\":2,\"source\":\"cluster from "
        "--ps_hosts/--worker_hosts, task from --job_name/--task_index\"}";
    CHECK(json && strcmp(json, wjson) == 0, "json\n%s\nwant\n%s", nz(json),
          wjson);
    free(json);
    expect_round_trip(c);
    rf_cluster_destroy(c);

    /* With a chief, an evaluator and this task the chief. */
    c = OK(NOFLAGS, "{\"cluster\": {\"worker\": [\"w0:1\"], \"evaluator\": "
                    "[\"e0:1\"], \"ps\": [\"p0:1\"], \"chief\": [\"c0:1\"]}, "
                    "\"task\": {\"type\": \"chief\", \"index\": 0}}");
    if (!c)
        return;
    text = rf_cluster_format(c);
    want = "cluster: 1 ps, 2 training workers; chief /job:chief/task:0\n"
           "  /job:chief/task:0      c0:1  chief, this task\n"
           "  /job:evaluator/task:0  e0:1  not training\n"
           "  /job:ps/task:0         p0:1\n"
           "  /job:worker/task:0     w0:1\n"
           "this task: /job:chief/task:0 (c0:1), the chief; cluster from "
           "TF_CONFIG, task from TF_CONFIG\n";
    CHECK(text && strcmp(text, want) == 0, "format\n%s\nwant\n%s", nz(text),
          want);
    free(text);
    json = rf_cluster_to_json(c, false);
    CHECK(json && strncmp(json,
                          "{\"cluster\":{\"chief\":[\"c0:1\"],\"evaluator\":"
                          "[\"e0:1\"],\"ps\":[\"p0:1\"],\"worker\":"
                          "[\"w0:1\"]},",
                          77) == 0,
          "jobs in name order: %s", nz(json));
    free(json);
    expect_round_trip(c);
    rf_cluster_destroy(c);

    /* An evaluator outside the cluster. */
    c = OK(NOFLAGS, "{\"cluster\": {\"ps\": [\"p0:1\"], \"worker\": "
                    "[\"w0:1\"]}, \"task\": {\"type\": \"evaluator\", "
                    "\"index\": 0}}");
    if (!c)
        return;
    text = rf_cluster_format(c);
    want = "cluster: 1 ps, 1 training worker; chief /job:worker/task:0 (no "
           "chief job: worker 0)\n"
           "  /job:ps/task:0      p0:1\n"
           "  /job:worker/task:0  w0:1  chief\n"
           "this task: /job:evaluator/task:0 (not listed in the cluster: not "
           "part of training); cluster from TF_CONFIG, task from TF_CONFIG\n";
    CHECK(text && strcmp(text, want) == 0, "format\n%s\nwant\n%s", nz(text),
          want);
    free(text);
    json = rf_cluster_to_json(c, false);
    CHECK(json && strstr(json, "\"task\":{\"type\":\"evaluator\",\"index\":0,"
                               "\"address\":null,\"is_chief\":false,"
                               "\"worker_id\":-1}"),
          "%s", nz(json));
    free(json);
    expect_round_trip(c);
    rf_cluster_destroy(c);

    CHECK(!rf_cluster_format(NULL) && !rf_cluster_to_json(NULL, false),
          "NULL cluster");
}

/* ---- TFJob's sparseCluster (enableDynamicWorker) ----------------------- */

/* What training-operator's genTFConfigJSONStr writes with
 * enableDynamicWorker (convertClusterSpecToSparseClusterSpec): a worker
 * gets every ps and itself, a ps only itself, a chief nothing. */
static void test_sparse(void)
{
    /* worker 3, joining: the ps tasks and itself */
    rf_cluster *c = OK(NOFLAGS, "{\"sparseCluster\": {\"ps\": [\"p0:1\", "
                                "\"p1:1\"], \"worker\": {\"3\": \"w3:1\"}}, "
                                "\"task\": {\"type\": \"worker\", \"index\": "
                                "3}}");
    if (c) {
        SELF(c, "worker", 3, "w3:1", 0, 3);
        CHECK(rf_cluster_is_sparse(c), "sparse");
        CHECK(rf_cluster_num_workers(c) == -1, "num_workers %d, want -1",
              rf_cluster_num_workers(c));
        CHECK(rf_cluster_num_ps(c) == 2, "num_ps %d", rf_cluster_num_ps(c));
        CHECK(rf_cluster_num_tasks(c, "worker") == 4, "worker slots %d",
              rf_cluster_num_tasks(c, "worker"));
        CHECK(!rf_cluster_task_at(c, "worker", 0) &&
                  !rf_cluster_task_at(c, "worker", 2) &&
                  rf_cluster_task_at(c, "worker", 3) == rf_cluster_self(c),
              "unknown workers are NULL, worker 3 is self");
        const rf_cluster_task *ch = rf_cluster_chief(c);
        CHECK(ch && strcmp(ch->job, "worker") == 0 && ch->index == 0 &&
                  !ch->address && ch->is_chief && ch->worker_id == 0,
              "the chief is worker 0 at an unknown address");
        CHECK(strcmp(rf_cluster_task_address(c, "ps", 1), "p1:1") == 0,
              "ps 1's address");
        char *j = rf_cluster_to_json(c, false);
        CHECK(j && strstr(j, "\"sparseCluster\":{\"ps\":[\"p0:1\",\"p1:1\"],"
                             "\"worker\":{\"3\":\"w3:1\"}}"),
              "json: %s", nz(j));
        /* the JSON is a TF_CONFIG for the same task */
        rf_cluster *c2 = j ? OK(NOFLAGS, j) : NULL;
        if (c2)
            SELF(c2, "worker", 3, "w3:1", 0, 3);
        rf_cluster_destroy(c2);
        free(j);
        char *text = rf_cluster_format(c);
        CHECK(text && strstr(text, "sparse cluster (TFJob "
                                   "enableDynamicWorker): 2 ps tasks known"),
              "format: %s", nz(text));
        free(text);
        rf_cluster_destroy(c);
    }
    /* worker 0 of a sparse job is the chief; the index may be a string */
    c = OK(NOFLAGS, "{\"sparseCluster\": {\"ps\": [\"p0:1\"], \"worker\": "
                    "{\"0\": \"w0:1\"}}, \"task\": {\"type\": \"worker\", "
                    "\"index\": \"0\"}}");
    if (c) {
        SELF(c, "worker", 0, "w0:1", 1, 0);
        CHECK(rf_cluster_chief(c) == rf_cluster_self(c), "self is the chief");
        rf_cluster_destroy(c);
    }
    /* ps 1 knows only itself: its one-entry list at its own index */
    c = OK(NOFLAGS, "{\"sparseCluster\": {\"ps\": [\"p1:1\"], \"worker\": "
                    "{}}, \"task\": {\"type\": \"ps\", \"index\": 1}}");
    if (c) {
        SELF(c, "ps", 1, "p1:1", 0, -1);
        CHECK(rf_cluster_num_ps(c) == -1 && rf_cluster_num_workers(c) == -1,
              "a sparse ps knows no counts: %d %d", rf_cluster_num_ps(c),
              rf_cluster_num_workers(c));
        CHECK(!rf_cluster_task_at(c, "ps", 0), "ps 0 unknown");
        rf_cluster_destroy(c);
    }

    /* errors, each named */
    ERR(NOFLAGS,
        "{\"cluster\": {\"ps\": [\"p:1\"], \"worker\": [\"w:1\"]}, "
        "\"sparseCluster\": {\"ps\": [\"p:1\"]}, \"task\": {\"type\": "
        "\"ps\", \"index\": 0}}",
        "TF_CONFIG: has both \"cluster\" and \"sparseCluster\" (TFJob "
        "enableDynamicWorker writes only \"sparseCluster\"): give one");
    /* what the operator gives a chief: no ps addresses */
    ERR(NOFLAGS,
        "{\"sparseCluster\": {\"ps\": [], \"worker\": {}}, \"task\": "
        "{\"type\": \"chief\", \"index\": 0}}",
        "TF_CONFIG: task type \"chief\" with a sparseCluster: TFJob's "
        "enableDynamicWorker gives only ps and worker tasks a usable one (a "
        "chief gets no ps addresses); use worker 0 as the chief");
    ERR(NOFLAGS,
        "{\"sparseCluster\": {\"ps\": [], \"worker\": {\"1\": \"w:1\"}}, "
        "\"task\": {\"type\": \"worker\", \"index\": 1}}",
        "TF_CONFIG: sparseCluster.ps is empty: a worker task needs every ps "
        "task's address");
    ERR(NOFLAGS,
        "{\"sparseCluster\": {\"ps\": [\"p:1\"], \"worker\": {\"1\": "
        "\"w:1\"}}, \"task\": {\"type\": \"worker\", \"index\": 2}}",
        "TF_CONFIG: task.index: 2 is not in TF_CONFIG: sparseCluster.worker (a "
        "sparseCluster names the task itself)");
    ERR(NOFLAGS,
        "{\"sparseCluster\": {\"ps\": [\"p:1\"], \"worker\": [\"w:1\"]}, "
        "\"task\": {\"type\": \"worker\", \"index\": 0}}",
        "TF_CONFIG: sparseCluster.worker must be an object {\"<task index>\": "
        "\"host:port\"}, not a list");
    ERR(NOFLAGS,
        "{\"sparseCluster\": {\"ps\": [\"p:1\"], \"worker\": {\"x\": "
        "\"w:1\"}}, \"task\": {\"type\": \"worker\", \"index\": 0}}",
        "TF_CONFIG: sparseCluster.worker key \"x\": \"x\" is not a task index "
        "(a non-negative integer)");
    ERR(NOFLAGS,
        "{\"sparseCluster\": {\"ps\": [\"p:1\"], \"worker\": {\"70000\": "
        "\"w:1\"}}, \"task\": {\"type\": \"worker\", \"index\": 0}}",
        "TF_CONFIG: sparseCluster.worker key \"70000\": task index 70000 is "
        "above the limit of 65535");
    ERR(NOFLAGS,
        "{\"sparseCluster\": {\"ps\": [\"p:1\"], \"worker\": {\"1\": "
        "\"w:1\", \"01\": \"w:2\"}}, \"task\": {\"type\": \"worker\", "
        "\"index\": 1}}",
        "TF_CONFIG: sparseCluster.worker key \"01\": task 1 is given twice");
    ERR(NOFLAGS,
        "{\"sparseCluster\": {\"ps\": [\"p:1\"], \"worker\": {\"1\": "
        "\"p:1\"}}, \"task\": {\"type\": \"worker\", \"index\": 1}}",
        "TF_CONFIG: sparseCluster.worker[\"1\"] \"p:1\" is the same address "
        "as sparseCluster.ps[0] (\"p:1\")");
    ERR(NOFLAGS,
        "{\"sparseCluster\": {\"ps\": [\"p:1\"], \"worker\": {\"1\": "
        "\"w\"}}, \"task\": {\"type\": \"worker\", \"index\": 1}}",
        "TF_CONFIG: sparseCluster.worker[\"1\"] \"w\" has no port (expected "
        "HOST:PORT)");
    ERR(NOFLAGS,
        "{\"sparseCluster\": {\"ps\": [\"p:1\"], \"chief\": [\"c:1\"]}, "
        "\"task\": {\"type\": \"worker\", \"index\": 0}}",
        "TF_CONFIG: sparseCluster.chief: only \"ps\" and \"worker\" are "
        "allowed in a sparseCluster (TFJob enableDynamicWorker has no chief "
        "or evaluator replicas here; worker 0 is the chief)");
    ERR(NOFLAGS,
        "{\"sparseCluster\": {\"worker\": {\"1\": \"w:1\"}}, \"task\": "
        "{\"type\": \"worker\", \"index\": 1}}",
        "TF_CONFIG: sparseCluster has no \"ps\" list");
    ERR(NOFLAGS, "{\"sparseCluster\": 3}",
        "TF_CONFIG: sparseCluster must be an object ({\"ps\": [...], "
        "\"worker\": {\"<index>\": \"host:port\"}}), not the integer 3");
    /* flags win over a sparseCluster as over a cluster: not sparse then */
    c = OK(F("p:1", "w:1", "worker", "0"),
           "{\"sparseCluster\": {\"ps\": [\"q:1\"], \"worker\": {\"0\": "
           "\"x:1\"}}, \"task\": {\"type\": \"worker\", \"index\": 0}}");
    if (c) {
        CHECK(!rf_cluster_is_sparse(c) && rf_cluster_num_workers(c) == 1,
              "flags override the sparseCluster");
        rf_cluster_destroy(c);
    }
}

int main(int argc, char **argv)
{
    static const rft_group groups[] = {
        {"addr", test_addr},         {"flags", test_flags},
        {"tfconfig", test_tfconfig}, {"precedence", test_precedence},
        {"errors", test_errors},     {"format", test_format},
        {"sparse", test_sparse},
    };
    return rft_groups_run(groups, sizeof groups / sizeof groups[0], argc, argv);
}

/* tests/unit/device/test_device_graph.c: device scopes and
 * replica_device_setter on a real rdmaflow graph (rdmaflow/graph.h device
 * functions), reproducing device_setter_test.py testCPUOverride and
 * contrib's GreedyLoadBalancingStrategyTest.testByteSizeLoadFn with the byte
 * sizes taken from the nodes' static shapes. */
#include <stdio.h>
#include <string.h>

#include "rdmaflow/device.h"
#include "rdmaflow/graph.h"
#include "tests/common/check.h"

static void expect_dev(const rf_node *n, const char *want)
{
    const char *got = n ? rf_node_requested_device(n) : "(no node)";
    CHECK(n && strcmp(got, want) == 0, "%s: got \"%s\", want \"%s\"",
          n ? rf_node_name(n) : "?", got, want);
}

static const rf_cluster_job jobs[] = {{"ps", 2}, {"worker", 3}};
static const rf_cluster_desc cluster = {jobs, 2};

/* device_setter_test.py testCPUOverride. */
static void test_cpu_override(void)
{
    rf_graph *g = NULL;
    CHECK(rf_graph_create(&g) == RF_OK, "graph");
    rf_replica_device_setter_options o;
    rf_replica_device_setter_options_init(&o);
    o.cluster = &cluster;
    rf_replica_device_setter *s = NULL;
    CHECK(rf_replica_device_setter_create(&o, &s) == RF_OK && s, "setter");
    rf_graph_push_replica_device_setter(g, s);
    rf_device_spec cpu;
    CHECK(rf_graph_push_device(g, "/cpu:0", &cpu) == RF_OK, "push");
    rf_node *v = rf_variable(g, RF_F32, RF_SHAPE(2), rf_init_zeros(), "v");
    rf_device_fn_pop(g);
    rf_node *w = rf_variable(g, RF_F32, RF_SHAPE(2), rf_init_zeros(), "w");
    rf_graph_push_device(g, "/cpu:0", &cpu);
    rf_node *a = rf_add(g, v, w, "a");
    rf_device_fn_pop(g);
    rf_device_fn_pop(g);
    CHECK(rf_graph_status(g) == RF_OK, "graph status");
    expect_dev(v, "/job:ps/task:0/device:CPU:0");
    expect_dev(w, "/job:ps/task:1");
    expect_dev(a, "/job:worker/device:CPU:0");
    rf_replica_device_setter_destroy(s);
    rf_graph_destroy(g);
}

/* GreedyLoadBalancingStrategyTest.testByteSizeLoadFn. */
static void test_greedy_bytes(void)
{
    rf_graph *g = NULL;
    rf_graph_create(&g);
    rf_replica_device_setter_options o;
    rf_replica_device_setter_options_init(&o);
    o.cluster = &cluster;
    o.strategy = RF_PS_GREEDY;
    rf_replica_device_setter *s = NULL;
    rf_replica_device_setter_create(&o, &s);
    rf_graph_push_replica_device_setter(g, s);
    rf_node *u = rf_variable(g, RF_F32, RF_SHAPE(2, 2), rf_init_zeros(), "u");
    rf_node *v = rf_variable(g, RF_F32, RF_SHAPE(2, 1), rf_init_zeros(), "v");
    rf_node *w = rf_variable(g, RF_F32, RF_SHAPE(2, 2), rf_init_zeros(), "w");
    rf_node *x = rf_variable(g, RF_F32, RF_SHAPE(1, 3), rf_init_zeros(), "x");
    rf_node *a = rf_add(g, v, v, "a");
    rf_device_fn_pop(g);
    CHECK(rf_graph_status(g) == RF_OK, "graph status");
    expect_dev(u, "/job:ps/task:0");
    expect_dev(v, "/job:ps/task:1");
    expect_dev(w, "/job:ps/task:1");
    expect_dev(x, "/job:ps/task:0");
    expect_dev(a, "/job:worker");
    CHECK(rf_replica_device_setter_load(s, 0) == 28.0 &&
              rf_replica_device_setter_load(s, 1) == 24.0,
          "loads %g %g", rf_replica_device_setter_load(s, 0),
          rf_replica_device_setter_load(s, 1));
    rf_replica_device_setter_destroy(s);

    /* A None setter is tf.device(None): the outer scope is ignored. */
    rf_device_spec outer;
    rf_graph_push_device(g, "/job:worker/task:2", &outer);
    rf_graph_push_replica_device_setter(g, NULL);
    rf_node *b = rf_const_f32(g, 1.0f, "b");
    rf_device_fn_pop(g);
    rf_node *c = rf_const_f32(g, 1.0f, "c");
    rf_device_fn_pop(g);
    expect_dev(b, "");
    expect_dev(c, "/job:worker/task:2");
    CHECK(rf_graph_push_device(g, "/job:ps/tsk:1", &outer) ==
              RF_ERR_INVALID_ARG,
          "malformed scope");
    rf_graph_destroy(g);
}

int main(void)
{
    test_cpu_override();
    test_greedy_bytes();
    printf("device graph tests: all checks passed\n");
    return 0;
}

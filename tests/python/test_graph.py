"""tests/python/test_graph.py (ctest python.graph): building graphs as
TensorFlow 1.x does, in this process (no cluster): the tutorial's MLP
(names, shapes, dtypes, the loss's name scope, the train op and its
slots), placement under tf.device(tf.train.replica_device_setter(...))
(round-robin in creation order, slots with their variable, the other ops
on the worker, GreedyLoadBalancingStrategy by bytes, a Python
ps_strategy, no ps task -> None, nesting with tf.device and inner
precedence, tf.device(None)), global_step's placement on ps 0 without
advancing the round-robin, name_scope and variable_scope (reuse errors,
AUTO_REUSE, partitioners making <name>/part_<i>), and the errors graph
construction raises, the graph staying usable after each."""

# ctest-timeout: 60

import numpy as np
import pytest

import rdmaflow as tf

# Addresses are never connected to: placement only reads the job sizes.
CLUSTER = {"ps": ["127.0.0.1:2222", "127.0.0.1:2223"],
           "worker": ["127.0.0.1:2224", "127.0.0.1:2225"]}
PS0, PS1 = "/job:ps/task:0", "/job:ps/task:1"


@pytest.fixture(autouse=True)
def graph():
    """Every test builds in a graph of its own."""
    g = tf.Graph()
    with g.as_default():
        yield g


def build_mlp(hidden_units=128):
    """The tutorial's model: 784 -> 128 relu -> 10, mean sparse softmax
    cross-entropy."""
    x = tf.placeholder(tf.float32, [None, 784], name="x")
    y = tf.placeholder(tf.int32, [None], name="y")
    hidden = tf.layers.dense(x, hidden_units, activation=tf.nn.relu)
    logits = tf.layers.dense(hidden, 10)
    loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    return x, y, hidden, logits, loss


def var_summary(variables):
    return [(v.name, v.shape.as_list(), v.dtype) for v in variables]


def devices_of(variables):
    return {v.op.name: v.device for v in variables}


def runs(graph):
    """Proves the graph still builds and runs: y = x @ w + 1 evaluated by
    a local session against numpy."""
    x = tf.placeholder(tf.float32, [None, 3], name="probe_x")
    w = tf.constant(np.arange(6, dtype=np.float32).reshape(3, 2))
    y = tf.matmul(x, w) + 1.0
    feed = np.array([[1, 2, 3], [-1, 0, 2]], np.float32)
    with tf.Session(graph=graph) as sess:
        got = sess.run(y, {x: feed})
    np.testing.assert_array_equal(
        got, feed @ np.arange(6, dtype=np.float32).reshape(3, 2) + 1)


# ---- the tutorial's model ------------------------------------------------


def test_mlp_names_shapes_dtypes(graph):
    x, y, hidden, logits, loss = build_mlp()
    assert (x.name, x.shape.as_list(), x.dtype) == \
        ("x:0", [None, 784], tf.float32)
    assert (y.name, y.shape.as_list(), y.dtype) == ("y:0", [None], tf.int32)
    # tf.layers.dense: dense/kernel, dense/bias; the second dense_1/...
    expected = [("dense/kernel:0", [784, 128], tf.float32),
                ("dense/bias:0", [128], tf.float32),
                ("dense_1/kernel:0", [128, 10], tf.float32),
                ("dense_1/bias:0", [10], tf.float32)]
    assert var_summary(tf.global_variables()) == expected
    assert var_summary(tf.trainable_variables()) == expected
    assert hidden.name == "dense/Relu:0"
    assert hidden.shape.as_list() == [None, 128]
    assert logits.name == "dense_1/BiasAdd:0"
    assert logits.shape.as_list() == [None, 10]
    assert logits.dtype == tf.float32
    types = {op.name: op.type for op in graph.get_operations()}
    assert types["dense/kernel"] == "VariableV2"
    assert types["dense/MatMul"] == "MatMul"
    assert types["dense/BiasAdd"] == "BiasAdd"
    assert types["dense/Relu"] == "Relu"
    assert "dense_1/Relu" not in types  # no activation given
    # tf.losses: a scalar under the scope sparse_softmax_cross_entropy_loss
    assert loss.name.startswith("sparse_softmax_cross_entropy_loss/")
    assert loss.shape.as_list() == []
    assert loss.dtype == tf.float32
    assert loss in tf.get_collection(tf.GraphKeys.LOSSES)
    # the tutorial's accuracy
    pred = tf.argmax(logits, 1)
    assert pred.dtype == tf.int64  # TF's default output_type
    pred32 = tf.argmax(logits, 1, output_type=tf.int32)
    assert pred32.dtype == tf.int32 and pred32.shape.as_list() == [None]
    correct = tf.equal(pred32, y)
    assert correct.dtype == tf.bool and correct.shape.as_list() == [None]
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
    assert accuracy.dtype == tf.float32 and accuracy.shape.as_list() == []


def test_train_op_global_step_and_slots(graph):
    *_, loss = build_mlp()
    gs = tf.train.get_or_create_global_step()
    assert (gs.name, gs.shape.as_list(), gs.dtype) == \
        ("global_step:0", [], tf.int64)
    assert tf.train.get_global_step() is gs
    assert tf.train.get_or_create_global_step() is gs
    assert tf.contrib.framework.get_or_create_global_step() is gs
    opt = tf.train.AdagradOptimizer(0.01)
    train_op = opt.minimize(loss, global_step=gs)
    assert isinstance(train_op, tf.Operation)
    assert train_op.name == "Adagrad"  # the optimizer's name
    assert opt.get_slot_names() == ["accumulator"]
    for v in tf.trainable_variables():
        slot = opt.get_slot(v, "accumulator")
        assert slot.name == v.op.name + "/Adagrad:0"
        assert slot.shape.as_list() == v.shape.as_list()
        assert slot.dtype == v.dtype
    names = [v.name for v in tf.global_variables()]
    assert names[:5] == ["dense/kernel:0", "dense/bias:0", "dense_1/kernel:0",
                         "dense_1/bias:0", "global_step:0"]
    assert sorted(names[5:]) == sorted(
        n[:-2] + "/Adagrad:0" for n in names[:4])
    assert "global_step:0" not in [v.name for v in tf.trainable_variables()]


def test_layers_dense_named():
    x = tf.placeholder(tf.float32, [None, 5])
    out = tf.layers.dense(x, 3, activation=tf.nn.tanh, name="hidden")
    assert out.name == "hidden/Tanh:0"
    assert var_summary(tf.global_variables()) == [
        ("hidden/kernel:0", [5, 3], tf.float32),
        ("hidden/bias:0", [3], tf.float32)]


# ---- placement -----------------------------------------------------------


def test_replica_device_setter_tutorial_placement(graph):
    cluster = tf.train.ClusterSpec(CLUSTER)
    with tf.device(tf.train.replica_device_setter(cluster=cluster)):
        x, y, hidden, logits, loss = build_mlp()
        gs = tf.train.get_or_create_global_step()
        opt = tf.train.AdagradOptimizer(0.01)
        train_op = opt.minimize(loss, global_step=gs)
    dev = devices_of(tf.global_variables())
    # round-robin over the ps tasks in creation order
    assert dev["dense/kernel"] == PS0
    assert dev["dense/bias"] == PS1
    assert dev["dense_1/kernel"] == PS0
    assert dev["dense_1/bias"] == PS1
    assert dev["global_step"] == PS0
    # each slot with its variable
    for v in tf.trainable_variables():
        assert opt.get_slot(v, "accumulator").device == v.device
    # each update with its variable, global_step's increment with it
    for v in tf.trainable_variables():
        update = graph.get_operation_by_name(
            "Adagrad/update_%s/ApplyAdagrad" % v.op.name)
        assert update.device == v.device
    assert train_op.device == PS0
    # everything else on the worker
    for op in graph.get_operations():
        if op.name.startswith(("x", "y", "dense", "sparse_softmax",
                               "gradients/")) and op.type != "VariableV2":
            assert op.device == "/job:worker", (op.name, op.device)
    assert hidden.device == logits.device == loss.device == "/job:worker"


def test_replica_device_setter_worker_device_and_ps_tasks():
    with tf.device(tf.train.replica_device_setter(
            ps_tasks=3, worker_device="/job:worker/task:1")):
        vs = [tf.Variable(np.zeros(2, np.float32), name="v%d" % i)
              for i in range(5)]
        c = tf.constant(1.0, name="c")
        s = tf.add(vs[0], c)
    assert [v.device for v in vs] == ["/job:ps/task:%d" % (i % 3)
                                      for i in range(5)]
    assert c.device == s.device == "/job:worker/task:1"


def test_replica_device_setter_none_without_ps():
    assert tf.train.replica_device_setter(ps_tasks=0) is None
    assert tf.train.replica_device_setter(
        cluster={"worker": ["127.0.0.1:2224"]}) is None
    # tf.device(None) takes it (and places nothing)
    with tf.device(tf.train.replica_device_setter(ps_tasks=0)):
        v = tf.Variable(1.0, name="v")
    assert v.device == ""
    cluster = tf.train.ClusterSpec({"ps": ["a:1", "b:2", "c:3"],
                                    "worker": ["d:4"]})
    assert tf.train.replica_device_setter(cluster=cluster).ps_tasks == 3


def test_greedy_load_balancing_by_bytes():
    strategy = tf.contrib.training.GreedyLoadBalancingStrategy(
        2, tf.contrib.training.byte_size_load_fn)
    sizes = [1000, 10, 10, 2000, 5, 300]
    with tf.device(tf.train.replica_device_setter(ps_tasks=2,
                                                  ps_strategy=strategy)):
        vs = [tf.get_variable("v%d" % i, [n]) for i, n in enumerate(sizes)]
    # TF's greedy choice: the least loaded task so far (lowest on a tie),
    # a variable's load its bytes
    loads, expected = [0, 0], []
    for n in sizes:
        task = loads.index(min(loads))
        expected.append("/job:ps/task:%d" % task)
        loads[task] += 4 * n
    assert [v.device for v in vs] == expected
    assert expected != ["/job:ps/task:%d" % (i % 2)
                        for i in range(len(sizes))]  # not round-robin


def test_python_ps_strategy(graph):
    calls = []

    def strategy(op):
        calls.append((op.name, op.type))
        return 1 if op.name.endswith("kernel") else 0

    with tf.device(tf.train.replica_device_setter(ps_tasks=2,
                                                  ps_strategy=strategy)):
        *_, loss = build_mlp(16)
        gs = tf.train.get_or_create_global_step()
        opt = tf.train.AdagradOptimizer(0.1)
        opt.minimize(loss, global_step=gs)
    # called for the variables it places, in creation order: not for the
    # other ops, the slots (with their variable) or global_step (ps 0)
    assert calls == [("dense/kernel", "VariableV2"),
                     ("dense/bias", "VariableV2"),
                     ("dense_1/kernel", "VariableV2"),
                     ("dense_1/bias", "VariableV2")]
    dev = devices_of(tf.global_variables())
    assert dev["dense/kernel"] == dev["dense_1/kernel"] == PS1
    assert dev["dense/bias"] == dev["dense_1/bias"] == PS0
    assert dev["global_step"] == PS0
    for v in tf.trainable_variables():
        assert opt.get_slot(v, "accumulator").device == v.device


def test_nested_device_scopes_inner_precedence():
    with tf.device("/job:worker/task:1"):
        a = tf.constant(1.0, name="a")
        with tf.device("/job:ps"):
            b = tf.constant(1.0, name="b")  # merged: ps, task 1
            with tf.device("/task:3"):
                c = tf.constant(1.0, name="c")
                with tf.device(None):  # clears the outer scopes
                    d = tf.constant(1.0, name="d")
                    with tf.device("/cpu:0"):
                        e = tf.constant(1.0, name="e")
                f = tf.constant(1.0, name="f")
            with tf.device(lambda op: "/job:x/task:7"):
                g = tf.constant(1.0, name="g")
            with tf.device(tf.DeviceSpec(job="y")):
                h = tf.constant(1.0, name="h")
        i = tf.constant(1.0, name="i")
    assert a.device == "/job:worker/task:1"
    assert b.device == "/job:ps/task:1"
    assert c.device == "/job:ps/task:3"
    assert d.device == ""
    assert e.device == "/device:CPU:0"
    assert f.device == "/job:ps/task:3"
    assert g.device == "/job:x/task:7"
    assert h.device == "/job:y/task:1"
    assert i.device == "/job:worker/task:1"
    j = tf.constant(1.0, name="j")
    assert j.device == ""


def test_device_function_sees_the_op():
    seen = []

    def fn(op):
        seen.append((op.name, op.type))
        return "/job:worker/task:2" if op.type == "MatMul" else None

    x = tf.placeholder(tf.float32, [2, 2], name="x")
    with tf.device(fn):
        m = tf.matmul(x, x, name="m")
        r = tf.nn.relu(m, name="r")
    assert seen == [("m", "MatMul"), ("r", "Relu")]
    assert m.device == "/job:worker/task:2"
    assert r.device == ""


def test_setter_nested_with_device_strings():
    # a setter inside a worker scope still places variables on the ps tasks
    with tf.device("/job:worker"):
        with tf.device(tf.train.replica_device_setter(
                ps_tasks=2, worker_device="/job:worker/task:1")):
            v = tf.Variable(1.0, name="v")
            k = tf.constant(1.0, name="k")
    assert v.device == PS0
    assert k.device == "/job:worker/task:1"
    # an inner scope naming another job wins over the setter, and the
    # round-robin does not advance for that variable
    with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
        a = tf.Variable(1.0, name="a")
        with tf.device("/job:worker/task:2"):
            w = tf.Variable(1.0, name="w")
        b = tf.Variable(1.0, name="b")
        with tf.device(None):
            n = tf.Variable(1.0, name="n")
        c = tf.Variable(1.0, name="c")
    assert a.device == PS0
    assert w.device == "/job:worker/task:2"
    assert b.device == PS1
    assert n.device == ""
    assert c.device == PS0


def test_global_step_on_ps0_without_advancing_round_robin():
    with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
        a = tf.Variable(1.0, name="a")  # ps 0
        gs = tf.train.get_or_create_global_step()  # TF: ps 1; here ps 0
        b = tf.Variable(1.0, name="b")  # ps 1: the round-robin did not move
        c = tf.Variable(1.0, name="c")
    assert [a.device, gs.device, b.device, c.device] == [PS0, PS0, PS1, PS0]


def test_global_step_created_first():
    with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
        gs = tf.train.get_or_create_global_step()
        a = tf.Variable(1.0, name="a")
        b = tf.Variable(1.0, name="b")
    assert [gs.device, a.device, b.device] == [PS0, PS0, PS1]
    with pytest.raises(ValueError, match="global_step"):
        tf.train.create_global_step()


# ---- scopes --------------------------------------------------------------


def test_name_scope():
    with tf.name_scope("outer") as scope:
        assert scope == "outer/"
        a = tf.constant(1.0, name="a")
        a2 = tf.constant(1.0, name="a")
        with tf.name_scope("inner") as inner:
            assert inner == "outer/inner/"
            b = tf.constant(1.0, name="b")
        with tf.name_scope("inner") as inner2:
            assert inner2 == "outer/inner_1/"
        v = tf.Variable(1.0, name="v")
        gv = tf.get_variable("gv", [2])  # get_variable ignores name scopes
        m = tf.matmul(tf.ones([2, 2]), tf.ones([2, 2]))
    with tf.name_scope(None, default_name="outer") as again:
        assert again == "outer_1/"
    assert [a.name, a2.name, b.name, v.name, gv.name] == [
        "outer/a:0", "outer/a_1:0", "outer/inner/b:0", "outer/v:0", "gv:0"]
    assert m.name == "outer/MatMul:0"
    assert tf.get_default_graph().get_name_scope() == ""


def test_variable_scope_reuse():
    with tf.variable_scope("vs") as vs:
        assert vs.name == "vs"
        w = tf.get_variable("w", [2, 3])
        with pytest.raises(ValueError, match="vs/w already exists"):
            tf.get_variable("w", [2, 3])
        with tf.variable_scope("sub"):
            x = tf.get_variable("x", [1])
    assert w.name == "vs/w:0" and x.name == "vs/sub/x:0"
    with tf.variable_scope("vs", reuse=True):
        assert tf.get_variable("w") is w
        assert tf.get_variable("w", [2, 3]) is w
        with pytest.raises(ValueError, match="vs/nope does not exist"):
            tf.get_variable("nope", [1])
        with tf.variable_scope("sub"):  # reuse is inherited
            assert tf.get_variable("x") is x
    with tf.variable_scope(vs, reuse=tf.AUTO_REUSE):
        assert tf.get_variable("w", [2, 3]) is w
        n = tf.get_variable("new", [4])
        assert n.name == "vs/new:0"
        assert tf.get_variable("new", [4]) is n
    with tf.variable_scope("vs") as scope:
        scope.reuse_variables()
        assert tf.get_variable("w") is w
    assert [v.name for v in tf.global_variables()] == [
        "vs/w:0", "vs/sub/x:0", "vs/new:0"]


def test_variable_scope_initializer_and_integer_default():
    with tf.variable_scope("s", initializer=tf.constant_initializer(3.0)):
        a = tf.get_variable("a", [2])
        b = tf.get_variable("b", [2], initializer=tf.ones_initializer())
    # TF's default initializer for an integer variable is zeros
    i = tf.get_variable("i", [3], dtype=tf.int64)
    assert i.dtype == tf.int64
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        va, vb, vi = sess.run([a, b, i])
    np.testing.assert_array_equal(va, [3.0, 3.0])
    np.testing.assert_array_equal(vb, [1.0, 1.0])
    np.testing.assert_array_equal(vi, [0, 0, 0])


def test_partitioners_name_parts(graph):
    with tf.variable_scope("p", partitioner=tf.fixed_size_partitioner(3)):
        emb = tf.get_variable("emb", [10, 4],
                              initializer=tf.ones_initializer())
    parts = list(emb)
    assert len(emb) == 3
    # TF: the first parts take the extra rows
    assert var_summary(parts) == [("p/emb/part_0:0", [4, 4], tf.float32),
                                  ("p/emb/part_1:0", [3, 4], tf.float32),
                                  ("p/emb/part_2:0", [3, 4], tf.float32)]
    assert emb.shape.as_list() == [10, 4]  # as a tensor: the whole
    with tf.variable_scope("p", reuse=True):
        assert tf.get_variable("emb") is emb
    cols = tf.get_variable("cols", [10, 4],
                           partitioner=tf.fixed_size_partitioner(2, axis=1))
    assert var_summary(cols) == [("cols/part_0:0", [10, 2], tf.float32),
                                 ("cols/part_1:0", [10, 2], tf.float32)]
    with tf.variable_scope("mm", partitioner=tf.min_max_variable_partitioner(
            max_partitions=4, min_slice_size=64)):
        mm = tf.get_variable("m", [100, 4])  # 1600 bytes: 4 parts of 25
        small = tf.get_variable("s", [2, 4])  # 32 bytes: one part
        scalar = tf.get_variable("k", [])  # never partitioned
    assert [p.name for p in mm] == ["mm/m/part_%d:0" % i for i in range(4)]
    assert [p.shape.as_list() for p in mm] == [[25, 4]] * 4
    # TF: a partitioned variable of one part, still named part_0
    assert len(small) == 1 and [p.name for p in small] == ["mm/s/part_0:0"]
    assert small.shape.as_list() == [2, 4]
    assert isinstance(scalar, tf.Variable) and scalar.name == "mm/k:0"
    vas = tf.get_variable("vas", [100, 4],
                          partitioner=tf.variable_axis_size_partitioner(
                              max_shard_bytes=400))
    assert [p.shape.as_list() for p in vas] == [[25, 4]] * 4
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(emb), np.ones((10, 4)))


def test_partitioned_variable_placement():
    with tf.device(tf.train.replica_device_setter(ps_tasks=3)):
        emb = tf.get_variable("emb", [9, 4],
                              partitioner=tf.fixed_size_partitioner(3))
        after = tf.get_variable("after", [1])
    # each part placed on its own, in order; the round-robin moves per part
    assert [(p.name, p.device) for p in emb] == [
        ("emb/part_0:0", "/job:ps/task:0"), ("emb/part_1:0", "/job:ps/task:1"),
        ("emb/part_2:0", "/job:ps/task:2")]
    assert after.device == "/job:ps/task:0"


# ---- graph-construction errors -------------------------------------------


def test_matmul_shape_mismatch(graph):
    a = tf.placeholder(tf.float32, [None, 3], name="a")
    b = tf.placeholder(tf.float32, [4, 5], name="b")
    before = len(graph.get_operations())
    with pytest.raises(ValueError) as e:
        tf.matmul(a, b)
    assert "[?,3]" in str(e.value) and "[4,5]" in str(e.value)
    with pytest.raises(ValueError, match=r"\[\?,3\].*\[4,5\]"):
        tf.add(a, b)
    assert len(graph.get_operations()) == before  # nothing half-made
    ok = tf.matmul(a, b, transpose_a=True)
    assert ok.shape.as_list() == [3, 5]
    runs(graph)


@pytest.mark.parametrize("build", [
    lambda: tf.placeholder(tf.float64, [2]),
    lambda: tf.placeholder(tf.string, [2]),
    lambda: tf.constant([1.0, 2.0], dtype=tf.float16),
    lambda: tf.constant(np.zeros(3, np.complex64)),
    lambda: tf.cast(tf.placeholder(tf.float32, [2]), tf.float64),
    lambda: tf.Variable(np.zeros(3, np.float64), dtype=tf.float64),
    lambda: tf.get_variable("d", [2], dtype=tf.float64),
], ids=["placeholder-float64", "placeholder-string", "constant-float16",
        "constant-complex64", "cast-float64", "variable-float64",
        "get_variable-float64"])
def test_unsupported_dtype_is_type_error(graph, build):
    with pytest.raises(TypeError, match="float64|string|float16|complex"):
        build()
    runs(graph)


@pytest.mark.parametrize("build", [
    lambda x: tf.matmul(x, object()),
    lambda x: tf.matmul(x, "hello"),
    lambda x: tf.add(x, "a"),
    lambda x: x * "a",
    lambda x: tf.nn.relu(object()),
    lambda x: tf.reduce_sum({"a": x}),
    lambda x: tf.layers.dense(object(), 3),
    lambda x: tf.matmul(x, tf.no_op()),
], ids=["matmul-object", "matmul-str", "add-str", "mul-str", "relu-object",
        "reduce_sum-dict", "dense-object", "matmul-operation"])
def test_non_tensor_argument_is_type_error(graph, build):
    x = tf.placeholder(tf.float32, [2, 2], name="x")
    with pytest.raises(TypeError):
        build(x)
    runs(graph)


def test_none_operand_is_value_error(graph):
    # TF: "None values not supported." (never a NaN constant)
    x = tf.placeholder(tf.float32, [2], name="x")
    for build in (lambda: tf.add(x, None), lambda: x + None,
                  lambda: tf.constant(None), lambda: tf.multiply(None, x)):
        with pytest.raises(ValueError, match="None values not supported"):
            build()
    runs(graph)


def test_placeholder_without_shape(graph):
    with pytest.raises(ValueError, match="shape"):
        tf.placeholder(tf.float32)
    with pytest.raises(ValueError, match="'p'.*shape"):
        tf.placeholder(tf.float32, None, name="p")
    p = tf.placeholder(tf.float32, [], name="p")  # a scalar is a shape
    assert p.name == "p:0" and p.shape.as_list() == []
    runs(graph)


def test_other_construction_errors(graph):
    a = tf.placeholder(tf.float32, [4, 5], name="a")
    with pytest.raises(ValueError, match="reshape"):
        tf.reshape(a, [7, -1])
    with pytest.raises(ValueError):
        tf.concat([a, tf.placeholder(tf.float32, [4, 6])], 0)
    with pytest.raises(ValueError, match="dtype"):
        tf.matmul(a, tf.placeholder(tf.int32, [5, 2]))
    with pytest.raises(TypeError):
        bool(a)  # no tensor as a Python bool in graph mode
    runs(graph)


def test_scalar_constants_are_scalars():
    # tf.constant(2.0) is 0-d, and so is what it makes with a 0-d tensor
    c = tf.constant(2.0)
    assert c.shape.as_list() == []
    assert tf.constant(3).dtype == tf.int32 and tf.constant(3).shape == []
    assert tf.constant(True).dtype == tf.bool
    assert tf.Variable(1.0).shape.as_list() == []
    assert tf.zeros([]).shape.as_list() == []
    s = tf.reduce_sum(tf.placeholder(tf.float32, [None, 3]))
    assert (s * 2.0).shape.as_list() == []
    assert (s + c).shape.as_list() == []


def test_finalized_graph_refuses_ops(graph):
    x = tf.placeholder(tf.float32, [2], name="x")
    graph.finalize()
    with pytest.raises(RuntimeError, match="finalized"):
        tf.nn.relu(x)
    with pytest.raises(RuntimeError, match="finalized"):
        tf.get_variable("v", [2])


def test_composed_dense_names_as_tf():
    """A dense layer composed in Python (a non-default initializer) names
    its ops and variables as the C one and TensorFlow do: dense, dense_1."""
    g = tf.Graph()
    with g.as_default():
        x = tf.placeholder(tf.float32, [None, 4])
        y = tf.layers.dense(x, 3, activation=tf.nn.relu,
                            kernel_initializer=tf.zeros_initializer())
        z = tf.layers.dense(y, 2)
        assert y.name == "dense/Relu:0"
        assert z.op.name.startswith("dense_1/")
        assert [v.name for v in tf.trainable_variables()] == [
            "dense/kernel:0", "dense/bias:0", "dense_1/kernel:0",
            "dense_1/bias:0"]

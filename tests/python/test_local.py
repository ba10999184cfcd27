"""tests/python/test_local.py (ctest python.local): tf.Session() in this
process, as TensorFlow 1.x's: fetch structures (a tensor, an op -> None,
a name, lists, tuples, namedtuples, dicts, nested; numpy scalars for 0-d
values); feeds (a numpy array of the placeholder's dtype; a wrong dtype,
a wrong shape or a non-contiguous array refused with InvalidArgumentError
naming the placeholder and the expected and given dtype and shape;
Python values converted); unknown feed keys and fetches not in the graph;
a closed session; the session still right after each error. Training:
a softmax regression converges with every optimizer; each optimizer's
steps equal TensorFlow 1.x's update rule computed in numpy (its defaults
and other settings); gradients of the ops against finite differences;
feeds used without a copy (peak RSS) and read at run time."""

# ctest-timeout: 120

import collections
import subprocess
import textwrap

import numpy as np
import pytest

import rdmaflow as tf


@pytest.fixture(autouse=True)
def graph():
    """Every test builds in a graph of its own."""
    g = tf.Graph()
    with g.as_default():
        yield g


@pytest.fixture
def model(graph):
    """x [?,3] float32 -> y = 2x, s = sum(y); an op; an int32 feed."""
    m = collections.namedtuple("Model", "x y s c op i sess")
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    c = tf.constant(2.0, name="c")
    y = tf.multiply(x, c, name="y")
    s = tf.reduce_sum(y, name="s")
    op = tf.no_op(name="op")
    i = tf.placeholder(tf.int32, [2], name="i")
    with tf.Session() as sess:
        yield m(x, y, s, c, op, i, sess)


X = np.arange(6, dtype=np.float32).reshape(2, 3)


def still_runs(m):
    """The session gives the right values after an error."""
    np.testing.assert_array_equal(m.sess.run(m.y, {m.x: X}), 2 * X)
    assert m.sess.run(m.s, {m.x: X}) == 30.0


# ---- fetches ---------------------------------------------------------------


def test_fetch_one_tensor_op_and_names(model):
    m = model
    y = m.sess.run(m.y, {m.x: X})
    assert isinstance(y, np.ndarray) and y.dtype == np.float32
    np.testing.assert_array_equal(y, 2 * X)
    s = m.sess.run(m.s, {m.x: X})
    assert isinstance(s, np.float32) and not isinstance(s, np.ndarray)
    assert s == 30.0  # a 0-d value is a numpy scalar
    c = m.sess.run(m.c)
    assert isinstance(c, np.float32) and c == 2.0
    assert m.sess.run(m.op) is None
    np.testing.assert_array_equal(m.sess.run("y:0", {"x:0": X}), 2 * X)
    assert m.sess.run("op") is None  # an operation's name
    assert m.sess.run("s", {m.x: X}) is None  # a name without :0 is an op
    assert m.sess.run(m.s.op, {m.x: X}) is None
    np.testing.assert_array_equal(m.y.eval({m.x: X}, session=m.sess), 2 * X)


def test_fetch_structures(model):
    m = model
    f = {m.x: X}
    out = m.sess.run([m.s, m.op, m.y, m.s], f)
    assert isinstance(out, list) and len(out) == 4
    assert out[0] == out[3] == 30.0 and out[1] is None
    np.testing.assert_array_equal(out[2], 2 * X)
    out = m.sess.run((m.s, m.c), f)
    assert isinstance(out, tuple) and out == (30.0, 2.0)
    Pair = collections.namedtuple("Pair", "total scale")
    out = m.sess.run(Pair(m.s, m.c), f)
    assert isinstance(out, Pair) and out.total == 30.0 and out.scale == 2.0
    out = m.sess.run({"s": m.s, "nested": [m.c, (m.op, "s:0")],
                      "d": {"y": m.y, "pair": Pair(m.c, m.op)}}, f)
    assert set(out) == {"s", "nested", "d"}
    assert out["s"] == 30.0
    assert isinstance(out["nested"], list)
    assert out["nested"][0] == 2.0
    assert out["nested"][1] == (None, 30.0)
    np.testing.assert_array_equal(out["d"]["y"], 2 * X)
    assert out["d"]["pair"] == Pair(2.0, None)
    od = collections.OrderedDict([("z", m.s), ("a", m.c)])
    out = m.sess.run(od, f)
    assert isinstance(out, collections.OrderedDict)
    assert list(out.items()) == [("z", 30.0), ("a", 2.0)]
    assert m.sess.run([], f) == [] and m.sess.run({}, f) == {}
    # a fetched array is the caller's: the next run does not change it
    y1 = m.sess.run(m.y, {m.x: X})
    m.sess.run(m.y, {m.x: X + 1})
    np.testing.assert_array_equal(y1, 2 * X)


def test_fetch_dtypes(graph):
    f = tf.placeholder(tf.float32, [3], name="f")
    am = tf.argmax(tf.reshape(f, [1, 3]), 1)
    eq = tf.equal(f, tf.constant([1.0, 0.0, 3.0]))
    n = tf.cast(f, tf.int32)
    with tf.Session() as sess:
        a, e, i = sess.run([am, eq, n], {f: [1.0, 5.0, 3.0]})
    assert a.dtype == np.int64 and a.tolist() == [1]
    assert e.dtype == np.bool_ and e.tolist() == [True, False, True]
    assert i.dtype == np.int32 and i.tolist() == [1, 5, 3]


# ---- feeds -----------------------------------------------------------------


def test_feed_numpy_arrays(graph):
    f = tf.placeholder(tf.float32, [None, 2], name="f")
    i = tf.placeholder(tf.int32, [2], name="i")
    j = tf.placeholder(tf.int64, [], name="j")
    b = tf.placeholder(tf.bool, [2], name="b")
    with tf.Session() as sess:
        out = sess.run([tf.identity(f), i + 1, j * 2, tf.identity(b)],
                       {f: np.ones((5, 2), np.float32),
                        i: np.array([1, 2], np.int32),
                        j: np.array(7, np.int64),
                        b: np.array([True, False])})
    np.testing.assert_array_equal(out[0], np.ones((5, 2)))
    assert out[1].tolist() == [2, 3] and out[1].dtype == np.int32
    assert out[2] == 14 and out[2].dtype == np.int64
    assert out[3].tolist() == [True, False]


def check_feed_error(e, name, *parts):
    msg = str(e.value)
    assert isinstance(e.value, tf.errors.OpError)
    assert e.value.error_code == tf.errors.INVALID_ARGUMENT
    assert "'%s'" % name in msg, msg
    for p in parts:
        assert p in msg, (p, msg)


def test_feed_wrong_dtype(model):
    m = model
    for bad, given in ((X.astype(np.float64), "float64[2,3]"),
                       (X.astype(np.int32), "int32[2,3]"),
                       (X.astype(np.float16), "[2,3]")):
        with pytest.raises(tf.errors.InvalidArgumentError) as e:
            m.sess.run(m.s, {m.x: bad})
        check_feed_error(e, "x", "dtype", "float32[?,3]", given)
        still_runs(m)
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        m.sess.run(m.i, {m.i: np.array([1, 2], np.int64)})
    check_feed_error(e, "i", "int32[2]", "int64[2]")
    still_runs(m)


def test_feed_wrong_shape(model):
    m = model
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        m.sess.run(m.s, {m.x: np.ones((2, 4), np.float32)})
    check_feed_error(e, "x", "shape", "float32[?,3]", "float32[2,4]")
    still_runs(m)
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        m.sess.run(m.s, {m.x: np.ones(3, np.float32)})
    check_feed_error(e, "x", "rank", "float32[?,3]", "float32[3]")
    still_runs(m)
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        m.sess.run(m.i, {m.i: np.ones(3, np.int32)})
    check_feed_error(e, "i", "int32[2]", "int32[3]")
    still_runs(m)


def test_feed_non_contiguous(model):
    m = model
    wide = np.arange(24, dtype=np.float32).reshape(4, 6)
    view = wide[:, ::2]  # float32 [4,3], strided
    assert not view.flags.c_contiguous
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        m.sess.run(m.s, {m.x: view})
    check_feed_error(e, "x", "contiguous", "float32[?,3]", "float32[4,3]")
    still_runs(m)
    assert m.sess.run(m.s, {m.x: np.ascontiguousarray(view)}) == \
        2 * view.sum()
    with pytest.raises(tf.errors.InvalidArgumentError):
        m.sess.run(m.s, {m.x: np.asfortranarray(wide[:3, :3])})
    still_runs(m)


def test_feed_python_values_converted(model, graph):
    m = model
    assert m.sess.run(m.s, {m.x: [[1, 2, 3]]}) == 12.0  # ints to float32
    assert m.sess.run(m.s, {m.x: [[0.5, 0.5, 1.0], [1, 1, 1]]}) == 10.0
    assert m.sess.run(m.i, {m.i: [3, 4]}).tolist() == [3, 4]
    assert m.sess.run(m.i, {m.i: (5, 6)}).dtype == np.int32
    p = tf.placeholder(tf.float32, [], name="p")
    q = tf.placeholder(tf.bool, [2], name="q")
    with tf.Session() as sess:
        assert sess.run(p * 2.0, {p: 3}) == 6.0
        assert sess.run(p * 2.0, {p: 1.5}) == 3.0
        assert sess.run(p * 2.0, {p: np.float32(2.5)}) == 5.0  # np scalar
        assert sess.run(p * 2.0, {p: np.array(4.0, np.float32)}) == 8.0
        assert sess.run(tf.identity(q), {q: [True, False]}).tolist() == \
            [True, False]
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        m.sess.run(m.s, {m.x: [[1, 2]]})
    check_feed_error(e, "x", "float32[?,3]", "[1,2]")
    with pytest.raises(tf.errors.InvalidArgumentError, match="'x'"):
        m.sess.run(m.s, {m.x: "abc"})
    with pytest.raises(TypeError, match="tf.Tensor"):
        m.sess.run(m.s, {m.x: m.y})  # TF: a feed value cannot be a Tensor
    still_runs(m)


def test_feed_missing(model):
    m = model
    with pytest.raises(tf.errors.InvalidArgumentError) as e:
        m.sess.run(m.s)
    check_feed_error(e, "x", "feed", "float32")
    still_runs(m)


def test_unknown_feed_key(model):
    m = model
    for key in ("nope:0", 7):
        with pytest.raises(TypeError, match="feed_dict key") as e:
            m.sess.run(m.s, {key: X})
        assert repr(key) in str(e.value)
        still_runs(m)
    with pytest.raises(TypeError, match="operation x"):
        m.sess.run(m.s, {"x": X})  # an operation's name: not a tensor
    still_runs(m)
    with tf.Graph().as_default():
        other = tf.placeholder(tf.float32, [None, 3], name="x")
    with pytest.raises(TypeError, match="not an element of this graph"):
        m.sess.run(m.s, {other: X})
    still_runs(m)


def test_fetch_not_in_graph(model):
    m = model
    # TensorFlow 1.x: ValueError, also for a name it cannot find
    for fetch, what in (("nope:0", "nope:0"), ("nope", "nope"),
                        ("y:1", "y:1")):
        with pytest.raises(ValueError, match="cannot be interpreted") as e:
            m.sess.run(fetch, {m.x: X})
        assert what in str(e.value)
        still_runs(m)
    with tf.Graph().as_default():
        other = tf.constant(1.0, name="other")
    with pytest.raises(ValueError, match="not an element of this graph"):
        m.sess.run(other)
    still_runs(m)
    with pytest.raises(ValueError):
        m.sess.run([m.s, "nope:0"], {m.x: X})  # one bad leaf fails the run
    for fetch in (None, 3, [m.s, None], object()):
        with pytest.raises(TypeError):
            m.sess.run(fetch, {m.x: X})
        still_runs(m)


def test_closed_session(graph):
    x = tf.placeholder(tf.float32, [2], name="x")
    y = x * 3.0
    sess = tf.Session()
    assert sess.run(y, {x: [1, 2]}).tolist() == [3.0, 6.0]
    sess.close()
    with pytest.raises(RuntimeError, match="closed"):
        sess.run(y, {x: [1, 2]})
    sess.close()  # closing again is harmless
    with tf.Session() as s2:
        assert s2.run(y, {x: [1, 1]}).tolist() == [3.0, 3.0]
        assert tf.get_default_session() is s2
    with pytest.raises(RuntimeError, match="closed"):
        s2.run(y, {x: [1, 1]})
    with tf.Session() as s3:  # others are not affected
        assert s3.run(y, {x: [2, 2]}).tolist() == [6.0, 6.0]


# ---- training --------------------------------------------------------------

OPTIMIZERS = {
    "GradientDescent": lambda: tf.train.GradientDescentOptimizer(0.5),
    "Momentum": lambda: tf.train.MomentumOptimizer(0.1, 0.9),
    "Adagrad": lambda: tf.train.AdagradOptimizer(0.5),
    "Adam": lambda: tf.train.AdamOptimizer(0.1),
    "RMSProp": lambda: tf.train.RMSPropOptimizer(0.05),
    "Ftrl": lambda: tf.train.FtrlOptimizer(1.0),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_softmax_regression_converges(name):
    rng = np.random.RandomState(0)
    centers = rng.randn(3, 4).astype(np.float32) * 2.5
    labels = rng.randint(0, 3, 300).astype(np.int32)
    data = (centers[labels] + rng.randn(300, 4)).astype(np.float32)
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    y = tf.placeholder(tf.int32, [None], name="y")
    w = tf.Variable(np.zeros((4, 3), np.float32), name="w")
    b = tf.Variable(np.zeros(3, np.float32), name="b")
    logits = tf.matmul(x, w) + b
    loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    correct = tf.equal(tf.argmax(logits, 1, output_type=tf.int32), y)
    accuracy = tf.reduce_mean(tf.cast(correct, tf.float32))
    gs = tf.train.get_or_create_global_step()
    train_op = OPTIMIZERS[name]().minimize(loss, global_step=gs)
    feed = {x: data, y: labels}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, feed)
        assert abs(first - np.log(3)) < 1e-5  # zero weights: uniform
        losses = [sess.run([train_op, loss], feed)[1] for _ in range(100)]
        final, acc, step = sess.run([loss, accuracy, gs], feed)
    assert step == 100
    assert final < 0.1, (name, first, losses[::10], final)
    assert losses[-1] < losses[9] < first
    assert acc >= 0.95


# Each optimizer's step in numpy, as TensorFlow 1.x documents it
# (training_ops' Apply* kernels), in float64 from the same float32 values
# and float32 hyperparameters (TF's scalars are the variable's dtype:
# 1 - beta2 is 1 - float32(0.999)): step(w, g, slots, t) -> w, with slots
# updated in place, named as get_slot names them.


def f32(*values):
    return [float(np.float32(v)) for v in values]


def ref_sgd(lr):
    lr, = f32(lr)

    def step(w, g, s, t):
        return w - lr * g
    return step, {}


def ref_momentum(lr, momentum, nesterov=False):
    lr, momentum = f32(lr, momentum)

    def step(w, g, s, t):
        s["momentum"] = momentum * s["momentum"] + g
        if nesterov:
            return w - lr * g - lr * momentum * s["momentum"]
        return w - lr * s["momentum"]
    return step, {"momentum": 0.0}


def ref_adagrad(lr, init=0.1):
    lr, init = f32(lr, init)

    def step(w, g, s, t):
        s["accumulator"] = s["accumulator"] + g * g
        return w - lr * g / np.sqrt(s["accumulator"])
    return step, {"accumulator": init}


def ref_adam(lr=0.001, b1=0.9, b2=0.999, eps=1e-8):
    lr, b1, b2, eps = f32(lr, b1, b2, eps)

    def step(w, g, s, t):
        # the "epsilon hat" form: lr_t folds in the bias corrections
        lr_t = lr * np.sqrt(1 - b2 ** t) / (1 - b1 ** t)
        s["m"] = b1 * s["m"] + (1 - b1) * g
        s["v"] = b2 * s["v"] + (1 - b2) * g * g
        return w - lr_t * s["m"] / (np.sqrt(s["v"]) + eps)
    return step, {"m": 0.0, "v": 0.0}


def ref_rmsprop(lr, decay=0.9, momentum=0.0, eps=1e-10, centered=False):
    lr, decay, momentum, eps = f32(lr, decay, momentum, eps)

    def step(w, g, s, t):
        s["rms"] = decay * s["rms"] + (1 - decay) * g * g
        denom = s["rms"] + eps
        if centered:
            s["mg"] = decay * s["mg"] + (1 - decay) * g
            denom = s["rms"] - s["mg"] ** 2 + eps
        s["momentum"] = momentum * s["momentum"] + lr * g / np.sqrt(denom)
        return w - s["momentum"]
    slots = {"rms": 1.0, "momentum": 0.0}  # TF 1.x: rms starts at ones
    if centered:
        slots["mg"] = 0.0
    return step, slots


def ref_ftrl(lr, lr_power=-0.5, init=0.1, l1=0.0, l2=0.0, shrinkage=0.0):
    lr, lr_power, init, l1, l2, shrinkage = f32(lr, lr_power, init, l1, l2,
                                                shrinkage)

    def step(w, g, s, t):
        g_shrunk = g + 2 * shrinkage * w  # ApplyFtrlV2
        new_accum = s["accum"] + g * g
        s["linear"] = s["linear"] + g_shrunk - (
            new_accum ** -lr_power - s["accum"] ** -lr_power) / lr * w
        quadratic = new_accum ** -lr_power / lr + 2 * l2
        s["accum"] = new_accum
        lin = s["linear"]
        return np.where(np.abs(lin) > l1,
                        (np.sign(lin) * l1 - lin) / quadratic, 0.0)
    return step, {"accum": init, "linear": 0.0}


OPTIMIZER_RULES = [
    # TensorFlow 1.x's defaults
    ("sgd", lambda: tf.train.GradientDescentOptimizer(0.1),
     lambda: ref_sgd(0.1)),
    ("momentum", lambda: tf.train.MomentumOptimizer(0.1, 0.9),
     lambda: ref_momentum(0.1, 0.9)),
    ("adagrad", lambda: tf.train.AdagradOptimizer(0.1),
     lambda: ref_adagrad(0.1)),
    ("adam", lambda: tf.train.AdamOptimizer(),
     lambda: ref_adam()),
    ("rmsprop", lambda: tf.train.RMSPropOptimizer(0.01),
     lambda: ref_rmsprop(0.01)),
    ("ftrl", lambda: tf.train.FtrlOptimizer(0.1),
     lambda: ref_ftrl(0.1)),
    # other settings, each where a wrong variant of the rule shows
    ("momentum-nesterov",
     lambda: tf.train.MomentumOptimizer(0.05, 0.7, use_nesterov=True),
     lambda: ref_momentum(0.05, 0.7, nesterov=True)),
    ("adagrad-init", lambda: tf.train.AdagradOptimizer(
        0.2, initial_accumulator_value=1.5),
     lambda: ref_adagrad(0.2, init=1.5)),
    ("adam-large-epsilon", lambda: tf.train.AdamOptimizer(
        0.05, beta1=0.8, beta2=0.9, epsilon=0.5),
     lambda: ref_adam(0.05, 0.8, 0.9, 0.5)),
    ("rmsprop-momentum-centered", lambda: tf.train.RMSPropOptimizer(
        0.02, decay=0.8, momentum=0.5, epsilon=0.1, centered=True),
     lambda: ref_rmsprop(0.02, 0.8, 0.5, 0.1, centered=True)),
    ("ftrl-l1-l2", lambda: tf.train.FtrlOptimizer(
        0.3, learning_rate_power=-0.7, initial_accumulator_value=0.5,
        l1_regularization_strength=0.4, l2_regularization_strength=0.2),
     lambda: ref_ftrl(0.3, -0.7, 0.5, 0.4, 0.2)),
    ("ftrl-shrinkage", lambda: tf.train.FtrlOptimizer(
        0.3, l2_shrinkage_regularization_strength=0.3),
     lambda: ref_ftrl(0.3, shrinkage=0.3)),
]

W0 = np.array([1.0, -2.0, 0.5, 0.0, 3.0], np.float32)
GRADS = np.array([[0.5, -1.0, 2.0, 0.0, 0.05],
                  [-0.3, -1.2, 0.5, 0.25, -0.05],
                  [0.1, 0.4, -2.5, 1.0, 0.02]], np.float32)


@pytest.mark.parametrize("case", OPTIMIZER_RULES, ids=lambda c: c[0])
def test_optimizer_steps_follow_tensorflows_rule(case):
    _, make_opt, make_ref = case
    w = tf.Variable(W0, name="w")
    g = tf.placeholder(tf.float32, [W0.size], name="g")
    loss = tf.reduce_sum(w * g)  # d loss / d w = g: the fed gradient
    gs = tf.train.get_or_create_global_step()
    opt = make_opt()
    train_op = opt.minimize(loss, global_step=gs)
    step, slots = make_ref()
    assert sorted(opt.get_slot_names()) == sorted(slots)
    ref_w = W0.astype(np.float64)
    ref_slots = {k: np.full(W0.shape, v, np.float64)
                 for k, v in slots.items()}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(w), W0)
        for k, v in ref_slots.items():
            np.testing.assert_allclose(sess.run(opt.get_slot(w, k)), v)
        for t, grad in enumerate(GRADS, start=1):
            sess.run(train_op, {g: grad})
            ref_w = step(ref_w, grad.astype(np.float64), ref_slots, t)
            got = sess.run(w)
            assert got.dtype == np.float32
            # a few float32 roundings (Ftrl's linear cancels: atol)
            np.testing.assert_allclose(got, ref_w, rtol=4e-6, atol=1e-6,
                                       err_msg="w after step %d" % t)
            for k, v in ref_slots.items():
                np.testing.assert_allclose(
                    sess.run(opt.get_slot(w, k)), v, rtol=4e-6, atol=1e-6,
                    err_msg="slot %s after step %d" % (k, t))
            assert sess.run(gs) == t


def test_adam_beta_powers():
    w = tf.Variable(W0, name="w")
    g = tf.placeholder(tf.float32, [W0.size], name="g")
    train_op = tf.train.AdamOptimizer(0.01, beta1=0.8, beta2=0.95).minimize(
        tf.reduce_sum(w * g))
    graph = tf.get_default_graph()
    b1 = graph.get_tensor_by_name("beta1_power:0")
    b2 = graph.get_tensor_by_name("beta2_power:0")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for t in range(3):
            np.testing.assert_allclose(sess.run([b1, b2]),
                                       [0.8 ** (t + 1), 0.95 ** (t + 1)],
                                       rtol=1e-6)
            sess.run(train_op, {g: GRADS[t]})


def finite_difference_check(sess, loss, variables, eps=4e-3):
    """compute_gradients' values against central differences of the loss
    the session computes, one element at a time (Variable.load)."""
    grads = tf.train.GradientDescentOptimizer(0.1).compute_gradients(
        loss, var_list=variables)
    assert [v for _, v in grads] == variables
    analytic = sess.run([gr for gr, _ in grads])
    for v, a in zip(variables, analytic):
        x0 = sess.run(v)
        assert a.shape == x0.shape, v.name
        numeric = np.zeros(x0.shape)
        for idx in np.ndindex(*x0.shape):
            values = []
            for sign in (1, -1):
                x = x0.copy()
                x[idx] += sign * eps
                v.load(x)
                values.append(float(sess.run(loss)))
            numeric[idx] = (values[0] - values[1]) / (2 * eps)
        v.load(x0)
        np.testing.assert_allclose(a, numeric, rtol=5e-3, atol=1e-3,
                                   err_msg="d loss / d %s" % v.name)


def test_gradients_against_finite_differences():
    rng = np.random.RandomState(1)

    def var(*shape, name):
        return tf.Variable(rng.randn(*shape).astype(np.float32), name=name)

    def const(*shape):
        return tf.constant(rng.randn(*shape).astype(np.float32))

    x, w, b = var(5, 4, name="x"), var(4, 3, name="w"), var(3, name="b")
    labels = tf.constant(np.array([0, 2, 1, 1, 0], np.int32))
    targets = tf.constant(rng.rand(5, 3).astype(np.float32))
    c53 = const(5, 3)
    # relu's input kept away from its kink, by more than eps
    pre = rng.randn(5, 4).astype(np.float32)
    pre = np.where(np.abs(pre) < 0.1, 0.3, pre).astype(np.float32)
    r = tf.Variable(pre, name="r")
    img, flt = var(1, 5, 5, 2, name="img"), var(3, 3, 2, 3, name="flt")
    # max_pool's input: distinct values 0.05 apart, so no window's maximum
    # changes under a perturbation of eps
    pool_in = tf.Variable((rng.permutation(32) * 0.05).reshape(1, 4, 4, 2)
                          .astype(np.float32), name="pool_in")
    row = tf.reduce_sum(x * const(4) - 0.5, axis=1)  # broadcasting
    cases = [
        (tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=tf.nn.tanh(tf.matmul(x, w) + b) * 3.0)),
         [x, w, b]),
        (tf.losses.sparse_softmax_cross_entropy(
            labels=labels, logits=tf.nn.bias_add(tf.matmul(x, w), b)),
         [w, b]),
        (tf.reduce_sum(tf.nn.softmax(tf.matmul(x, w)) * c53), [x, w]),
        (tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(
            labels=targets, logits=tf.matmul(x, w))), [x, w]),
        (tf.reduce_sum(tf.nn.sigmoid(tf.matmul(x, w, transpose_b=False))
                       * c53) - tf.reduce_sum(tf.add_n([b, b, -b])),
         [x, w, b]),
        (tf.reduce_mean(row * row) + tf.nn.l2_loss(b), [x, b]),
        (tf.reduce_sum(tf.reshape(tf.concat([x, tf.reshape(w, [3, 4])], 0),
                                  [-1]) * const(32)), [x, w]),
        (tf.reduce_sum(tf.reduce_mean(x, axis=0) * const(4))
         - tf.reduce_sum(tf.matmul(x, x, transpose_a=True) * const(4, 4)),
         [x]),
        (tf.reduce_sum(tf.nn.relu(r) * const(5, 4)), [r]),
        (tf.reduce_sum(tf.nn.conv2d(img, flt, [1, 1, 1, 1], "SAME")
                       * const(1, 5, 5, 3)), [img, flt]),
        (tf.reduce_sum(tf.nn.conv2d(img, flt, [1, 2, 2, 1], "VALID")
                       * const(1, 2, 2, 3)), [img, flt]),
        (tf.reduce_sum(tf.nn.max_pool(pool_in, [1, 2, 2, 1], [1, 2, 2, 1],
                                      "VALID") * const(1, 2, 2, 2)),
         [pool_in]),
    ]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for loss, variables in cases:
            finite_difference_check(sess, loss, variables)


# ---- zero-copy feeds --------------------------------------------------------


def test_feed_is_read_at_run_time(graph):
    x = tf.placeholder(tf.float32, [None], name="x")
    s = tf.reduce_sum(x)
    a = np.ones(1 << 16, np.float32)
    with tf.Session() as sess:
        assert sess.run(s, {x: a}) == a.size
        a[:100] = 3.0  # the same array, changed between two runs
        assert sess.run(s, {x: a}) == a.size + 200
        a[0] = -a.size  # was 3
        assert sess.run(s, {x: a}) == 197


ZERO_COPY = textwrap.dedent("""\
    import resource
    import numpy as np
    import rdmaflow as tf

    def peak_mb():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    n = 32 << 20  # 128 MB of float32
    x = tf.placeholder(tf.float32, [None], name="x")
    s = tf.reduce_sum(x)
    sess = tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=1))
    sess.run(s, {x: np.ones(4, np.float32)})  # the plan made
    a = np.ones(n, np.float32)  # touched: all resident
    before = peak_mb()
    total = sess.run(s, {x: a})
    after = peak_mb()
    copy = a.copy()  # the control: a copy does show
    after_copy = peak_mb()
    print(before, after, after_copy, total)
""")


def test_feed_is_not_copied(python):
    """A feed's buffer is used in place: feeding 128 MB raises the peak
    resident set of a fresh process by nothing like 128 MB, where a copy
    of the array (the control) does."""
    out = subprocess.run([python, "-c", ZERO_COPY], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    before, after, after_copy, total = map(float, out.stdout.split())
    assert total == 32 << 20
    assert after_copy - after > 100, (before, after, after_copy)
    assert after - before < 16, (
        "feeding 128 MB raised the peak RSS by %.0f MB: copied?"
        % (after - before))


def test_python_values_become_the_placeholders_dtype(graph):
    i = tf.placeholder(tf.int64, [3], name="i")
    with tf.Session() as sess:
        out = sess.run(i * 2, {i: [1, 2, 3]})
    assert out.dtype == np.int64 and out.tolist() == [2, 4, 6]

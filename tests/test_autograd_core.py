"""mx.autograd and mx.contrib.autograd: recording scopes, variables, backward/grad, writes while
recording, autograd.Function and get_symbol. Expected values are closed forms or MXNet 1.9.1's
own results (noted where they are)."""
import json

import numpy as np
import pytest

import mxtorch as mx
from mxtorch import autograd as ag
from mxtorch import nd
from mxtorch.contrib import autograd as cag


def test_scopes_and_dropout_modes():
    x = nd.ones((20, 20))
    assert not ag.is_recording() and not ag.is_training()
    with ag.record():
        assert ag.is_recording() and ag.is_training()
        assert (nd.Dropout(x, p=0.5).asnumpy() != 1).any()
        with ag.predict_mode():
            assert ag.is_recording() and not ag.is_training()
            assert (nd.Dropout(x, p=0.5).asnumpy() == 1).all()
        with ag.pause():
            assert not ag.is_recording() and not ag.is_training()
    with ag.record(train_mode=False):
        assert not ag.is_training()
        with ag.train_mode():
            assert ag.is_recording() and ag.is_training()
    assert not ag.is_recording() and not ag.is_training()
    assert ag.set_recording(True) is False
    assert ag.set_recording(False) is True


def test_backward_write_add_and_head_grads():
    x = nd.ones((3, 5))
    dx = nd.zeros_like(x)
    ag.mark_variables([x], [dx])
    with ag.record():
        a, b, c = nd.split(x, axis=0, num_outputs=3, squeeze_axis=True)
    ag.backward([a, b, c], [None, nd.array([1, 2, 3, 4, 5]), nd.array([5, 4, 3, 2, 1])])
    np.testing.assert_array_equal(dx.asnumpy(), [[1] * 5, [1, 2, 3, 4, 5], [5, 4, 3, 2, 1]])

    y = nd.array([1., 2.])
    y.attach_grad(grad_req='add')
    for _ in range(2):
        with ag.record():
            z = y * y
        z.backward()
    np.testing.assert_array_equal(y.grad.asnumpy(), [4., 8.])
    with pytest.raises(KeyError):
        ag.mark_variables([y], [nd.zeros((2,))], grad_reqs='sometimes')
    with pytest.raises(AssertionError):
        ag.backward([z], [nd.ones((2,)), nd.ones((2,))])


def test_unreached_variables_keep_their_gradient_and_fresh_flag():
    x, y = nd.ones((2,)), nd.ones((2,))
    x.attach_grad()
    y.attach_grad()
    y.grad[:] = 5
    assert x._fresh_grad is False
    with ag.record():
        z = (x * 3).detach() + x * 2
    z.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [2., 2.])
    np.testing.assert_array_equal(y.grad.asnumpy(), [5., 5.])
    assert x._fresh_grad is True and y._fresh_grad is False
    x._fresh_grad = False
    assert x._fresh_grad is False


def test_retain_graph_and_spent_graphs():
    x = nd.ones((2, 2))
    dx = nd.zeros((2, 2))
    ag.mark_variables([x], [dx], grad_reqs='add')
    with ag.record():
        y = x + 1
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_array_equal(dx.asnumpy(), 2 * np.ones((2, 2)))
    with pytest.raises(mx.MXNetError, match='not in a computational graph'):
        y.backward()
    with pytest.raises(mx.MXNetError, match='not in a computational graph'):
        (x * 2).backward()                       # computed outside record()


def test_attach_grad_on_an_intermediate_cuts_the_graph():
    x = nd.array([1., 2.])
    x.attach_grad()
    with ag.record():
        a = x * 2
        a.attach_grad()
        b = a * 5
    b.backward()
    np.testing.assert_array_equal(a.grad.asnumpy(), [5., 5.])
    np.testing.assert_array_equal(x.grad.asnumpy(), [0., 0.])


def test_grad_returns_new_arrays_and_checks_variables():
    x = nd.ones((1,))
    x.attach_grad()
    with ag.record():
        z = nd.elemwise_add(nd.exp(x), x)
    dx, = ag.grad(z, [x], create_graph=True)
    assert abs(dx.asscalar() - (np.e + 1)) < 1e-6
    dx.backward()
    assert abs(x.grad.asscalar() - np.e) < 1e-6

    u, n = nd.ones((1,)), nd.ones((1,))
    u.attach_grad()
    with ag.record():
        z = x * 3
    with pytest.raises(mx.MXNetError, match='unreachable'):
        ag.grad(z, [x, u], retain_graph=True)
    with pytest.raises(mx.MXNetError, match='does not require gradient'):
        ag.grad(z, [n], retain_graph=True)
    with pytest.raises(AssertionError):
        ag.grad(z, [])
    g = ag.grad(z, x)                              # one NDArray: still a list back
    assert isinstance(g, list) and g[0].asscalar() == 3
    with pytest.raises(mx.MXNetError):            # retain_graph defaulted to create_graph=False
        ag.grad(z, [x])


def test_writes_while_recording():
    x = nd.array([1., 2.])
    x.attach_grad()
    c = nd.array([1., 2.])
    with ag.record():
        y = x * 2
        with pytest.raises(mx.MXNetError, match='already in a computational graph'):
            y[:] = 5
        with pytest.raises(mx.MXNetError, match='already in a computational graph'):
            x += 1
        c += 1                                     # not in the graph, constant result: fine
        with pytest.raises(mx.MXNetError, match='Inplace operations'):
            c += x
        w = nd.zeros((2,))
        nd.exp(x, out=w)                           # out= into a fresh array is recorded
        v = nd.zeros((2,))
        v[:] = x                                   # so is assignment of a recorded value
        q = w * v
    q.backward()
    xs = np.array([1., 2.])
    np.testing.assert_allclose(x.grad.asnumpy(), np.exp(xs) * (1 + xs), rtol=1e-6)
    x[:] = 7                                       # outside record(): allowed
    assert x.asnumpy().tolist() == [7., 7.]


def test_function_custom_backward():
    class DivMul(ag.Function):
        def forward(self, x, y):
            self.save_for_backward(x, y)
            return x / y, x * y

        def backward(self, dm, dn):
            x, y = self.saved_tensors
            return dm / y + dn * y, dn * x - dm * x / y / y

    x, y = nd.array([1., 2., 3.]), nd.array([2., 4., 5.])
    x.attach_grad()
    y.attach_grad()
    with ag.record():
        m, n = DivMul()(x, y)
        ag.backward([m, n], [nd.ones((3,)), nd.array([2., 2., 2.])])
    xs, ys = x.asnumpy(), y.asnumpy()
    np.testing.assert_allclose(m.asnumpy(), xs / ys)
    np.testing.assert_allclose(x.grad.asnumpy(), 1 / ys + 2 * ys, rtol=1e-6)
    np.testing.assert_allclose(y.grad.asnumpy(), 2 * xs - xs / ys ** 2, rtol=1e-6)

    f = DivMul()
    f(x, y)
    with pytest.raises(AssertionError, match='only be called once'):
        f(x, y)


def test_function_counts_its_gradients_and_runs_unrecorded():
    class Bad(ag.Function):
        def forward(self, x):
            return x * 1

        def backward(self, dy):
            return dy, dy

    class AddOne(ag.Function):
        def forward(self, x):
            return x + 1

        def backward(self, dy):
            return dy

    x = nd.zeros((3,))
    with ag.record():
        for _ in range(3):
            x = AddOne()(x)                        # no variable: nothing to record
    assert x.asnumpy().tolist() == [3., 3., 3.]
    v = nd.ones((2,))
    v.attach_grad()
    with ag.record():
        y = Bad()(v)
    with pytest.raises(mx.MXNetError, match='same number'):
        y.backward()


def test_get_symbol():
    x, z = nd.ones((2,)), nd.ones((2,))
    x.attach_grad()
    with ag.record():
        y = x * x + 2 * x - 1 + z
    sym = ag.get_symbol(y)
    # MXNet 1.9.1 names marked variables var<i>, other inputs null<i>, operators node_<j>
    assert sym.list_arguments() == ['var0', 'null1']
    assert sym.list_outputs() == ['node_4_output']
    nodes = json.loads(sym.tojson())['nodes']
    assert [n['op'] for n in nodes] == ['null', 'broadcast_mul', '_mul_scalar', 'broadcast_add',
                                        '_minus_scalar', 'null', 'broadcast_add']
    assert nodes[2]['attrs'] == {'scalar': '2.0'}
    out = sym.eval(var0=nd.array([3., 4.]), null1=nd.array([1., 1.]))[0]
    assert out.asnumpy().tolist() == [15., 24.]
    with ag.record():
        q = nd.FullyConnected(y.reshape((1, 2)), nd.ones((3, 2)), nd.ones((3,)), num_hidden=3)
    sym = ag.get_symbol(q)                         # reshape is recorded too (MXNet's names)
    assert sym.list_arguments() == ['var0', 'null1', 'null2', 'null3']
    assert sym.list_outputs() == ['node_6_output']
    with pytest.raises(AssertionError):
        ag.get_symbol(np.ones(2))


def test_get_symbol_of_a_hybridized_call_inlines_small_graphs():
    net = mx.gluon.nn.HybridSequential()
    for _ in range(3):
        net.add(mx.gluon.nn.Dense(4))
    net.initialize()
    x = nd.ones((1, 5))

    def recorded_ops(**flags):
        net.hybridize(**flags)
        with ag.record():
            y = net(x)
        nodes = json.loads(ag.get_symbol(y).tojson())['nodes']
        y.backward()
        return [n['op'] for n in nodes if n['op'] != 'null'], len(nodes)

    # MXNet 1.9.1: a graph of at most inline_limit operators is recorded operator by operator,
    # a larger one (or any with static_alloc) as one _CachedOp node over data and 6 parameters
    assert recorded_ops(inline_limit=3) == (['FullyConnected'] * 3, 10)
    assert recorded_ops(inline_limit=2) == (['_CachedOp'], 8)
    assert recorded_ops(inline_limit=3, static_alloc=True) == (['_CachedOp'], 8)


def test_contrib_autograd():
    def f(a, b, mode):
        return a + b if mode else a * b

    a, b = nd.array([[1., 2.]]), nd.array([[3., 5.]])
    grads, out = cag.grad_and_loss(f, argnum=[0, 1])(a, b, False)
    assert out.asnumpy().tolist() == [[3., 10.]]
    assert grads[0].asnumpy().tolist() == [[3., 5.]] and grads[1].asnumpy().tolist() == [[1., 2.]]
    g, = cag.grad(lambda x: nd.exp(x))(a)
    np.testing.assert_allclose(g.asnumpy(), np.exp([[1., 2.]]), rtol=1e-6)
    with pytest.raises(AssertionError):
        cag.grad_and_loss(f, argnum=2)(a, b, True)
    with pytest.raises(AssertionError):
        cag.backward(out)
    x = nd.ones((10, 10))
    with cag.train_section():
        assert ag.is_recording() and ag.is_training()
        with cag.test_section():
            assert not ag.is_recording()
            assert (nd.Dropout(x, p=0.5).asnumpy() == 1).all()
    assert not ag.is_recording() and not ag.is_training()
    assert mx.contrib.autograd is cag

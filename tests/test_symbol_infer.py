"""Partial shape inference as MXNet 1.9.1 reports it: 0 marks an unknown dim and () an unknown
shape by default; under mx.np_shape() an unknown dim is -1 and an unknown shape None. Expected
values were read from MXNet 1.9.1."""
import numpy as np
import pytest

import mxtorch as mx


def _out(sym, **given):
    return sym.infer_shape_partial(**given)[1]


def test_unknown_shape_is_empty_tuple_or_none():
    ret = mx.sym.sin(mx.sym.var('data'))
    assert ret.infer_shape_partial() == ([()], [()], [])
    with mx.np_shape():
        assert ret.infer_shape_partial() == ([None], [None], [])
        assert ret.infer_shape_partial(data=(-1, 3)) == ([(-1, 3)], [(-1, 3)], [])
    assert not mx.util.is_np_shape()


def test_np_shape_minus_one_is_unknown_everywhere():
    x, y = mx.sym.var('x'), mx.sym.var('y')
    with mx.np_shape(True):
        assert (x + y).infer_shape_partial(x=(-1, 3)) == ([(-1, 3), (-1, 3)], [(-1, 3)], [])
        assert _out(mx.sym.transpose(x, axes=(0, 3, 2, 1)), x=(-1, 3, 224, 224)) == \
            [(-1, 224, 224, 3)]
        # a complete shape is needed for infer_shape
        with pytest.warns(UserWarning):
            assert mx.sym.sin(x).infer_shape(x=(-1, 3)) == (None, None, None)


@pytest.mark.parametrize('lhs, rhs, kw, expected', [
    ((0, 3, 4), (0, 4, 5), {}, (0, 3, 5)),
    ((0, 3, 4), (0, 0, 5), {}, ()),            # rhs's second-last dim unknown: nothing
    ((0, 3, 0), (0, 4, 5), {}, ()),            # lhs's last dim unknown: nothing
    ((0, 0, 4), (0, 4, 0), {}, (0, 0, 0)),
    ((0, 4, 0), (0, 4, 5), {'transpose_a': True}, ()),   # MXNet looks at lhs[-1] regardless
])
def test_batch_dot_partial(lhs, rhs, kw, expected):
    z = mx.sym.batch_dot(mx.sym.var('x'), mx.sym.var('y'), **kw)
    assert _out(z, x=lhs, y=rhs) == [expected]


def test_batch_dot_partial_np_shape():
    z = mx.sym.batch_dot(mx.sym.var('x'), mx.sym.var('y'))
    with mx.np_shape(True):
        assert _out(z, x=(-1, 3, 4), y=(-1, 4, 5)) == [(-1, 3, 5)]
        assert _out(z, x=(-1, 3, 4), y=(-1, -1, 5)) == [None]


@pytest.mark.parametrize('cond, x, y, args, out', [
    ((0, 2), (0, 2), (0, 2), [(0, 2), (0, 2), (0, 2)], ()),
    ((0,), (2, 2), (2, 2), [(0,), (2, 2), (2, 2)], ()),
    ((0, 2), (2, 2), (2, 2), [(0, 2), (2, 2), (2, 2)], ()),
    ((3, 2), (0, 2), (0, 2), [(3, 2), (0, 2), (0, 2)], (0, 2)),
    ((2, 2), (2, 2), (0, 2), [(2, 2), (2, 2), (2, 2)], (2, 2)),
])
def test_where_needs_a_known_condition(cond, x, y, args, out):
    w = mx.sym.where(mx.sym.var('c'), mx.sym.var('x'), mx.sym.var('y'))
    assert w.infer_shape_partial(c=cond, x=x, y=y) == (args, [out], [])


def test_identity_with_attr_like_rhs_infers_backward():
    w = mx.sym.var('weight')
    wt = mx.sym.broadcast_add(w, mx.sym.var('wshift', shape=(1,)))
    wt = mx.sym._internal._identity_with_attr_like_rhs(wt, w)
    net = mx.sym.FullyConnected(data=mx.sym.var('data'), weight=wt, num_hidden=11, no_bias=True)
    args, outs, _ = net.infer_shape(data=(7, 100))
    assert dict(zip(net.list_arguments(), args))['weight'] == (11, 100)
    assert outs == [(7, 11)]


def test_identity_with_attr_like_rhs_values_and_gradients():
    a, b = mx.nd.ones((2, 3)), mx.nd.zeros((2, 3))
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        y = mx.nd._internal._identity_with_attr_like_rhs(a * 2, b)
    y.backward()
    assert (y.asnumpy() == 2).all() and (a.grad.asnumpy() == 2).all()
    assert (b.grad.asnumpy() == 0).all()
    with pytest.raises(mx.MXNetError, match='rhs'):
        mx.nd._internal._identity_with_attr_like_rhs(a, mx.nd.ones((3, 3)))


def test_np_shape_bind_gives_zero_size_outputs():
    # under mx.np_shape() a 0 dim of a bound array is a real size (MXNet 1.9.1's results)
    x = mx.sym.var('x')
    with mx.np_shape(True):
        exe = (mx.sym.relu(x) + 1).bind(mx.cpu(), {'x': mx.nd.ones((0, 3))},
                                        args_grad={'x': mx.nd.ones((0, 3))})
        exe.forward(is_train=True)
        exe.backward(mx.nd.ones((0, 3)))
        assert exe.outputs[0].shape == (0, 3) and exe.grad_arrays[0].shape == (0, 3)
        exe = mx.sym.contrib.index_array(x).bind(mx.cpu(), {'x': mx.nd.ones(())})
        exe.forward()
        assert exe.outputs[0].shape == (0,) and exe.outputs[0].dtype == np.int64
        z = mx.sym.sum(mx.sym.contrib.index_array(x), axis=0)      # zero-size inside the graph
        exe = z.bind(mx.cpu(), {'x': mx.nd.ones((0, 4))})
        exe.forward()
        assert exe.outputs[0].asnumpy().tolist() == [[0, 0]] * 4

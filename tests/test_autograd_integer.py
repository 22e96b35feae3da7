"""Gradients through integer arrays (mxtorch/int_grad.py), and zero gradients through
operators torch does not differentiate. Expected values are MXNet 1.9.1's own results."""
import numpy as np
import pytest

import mxtorch as mx
from mxtorch import autograd as ag
from mxtorch import nd


def test_integer_variable_gets_an_integer_gradient():
    a = nd.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]], dtype='int32')
    a.attach_grad()
    with ag.record():
        s = (nd.contrib.boolean_mask(a, nd.array([0, 1, 1])) * 3).sum()
    s.backward()
    assert a.grad.dtype == np.int32
    assert a.grad.asnumpy().tolist() == [[0, 0, 0], [3, 3, 3], [3, 3, 3]]

    a = nd.arange(0, 10, dtype='int32')
    a.attach_grad()
    with ag.record():
        b = nd.topk(a, k=3, ret_typ='value')
    b.backward(nd.array([5, 6, 7], dtype='int32'))
    assert a.grad.asnumpy().tolist() == [0] * 7 + [7, 6, 5]


def test_indexing_and_reshape_of_an_integer_variable():
    a = nd.array(np.arange(12).reshape(3, 4), dtype='int32')
    a.attach_grad()
    with ag.record():
        y = a[1:, [0, 2]]
    y.backward()
    assert a.grad.asnumpy().tolist() == [[0, 0, 0, 0], [1, 0, 1, 0], [1, 0, 1, 0]]
    with ag.record():
        y = a.reshape((4, 3))[1] * a[0, 1:]
    y.backward()
    assert a.grad.asnumpy().tolist() == [[0, 3, 4, 6], [2, 3, 0, 0], [0, 0, 0, 0]]
    with ag.record():
        y = a[::-1, 1]
    y.backward(nd.array([1, 2, 3], dtype='int32'))
    assert a.grad.asnumpy()[:, 1].tolist() == [3, 2, 1]


def test_cast_passes_the_gradient_to_and_from_integers():
    x = nd.array([1.5, -2.7, 3.2])
    x.attach_grad()
    with ag.record():
        y = nd.Cast(x, dtype='int32')
        z = nd.Cast(y * 2, dtype='float32')
    assert y.asnumpy().tolist() == [1, -2, 3] and z.asnumpy().tolist() == [2., -4., 6.]
    z.backward()
    assert x.grad.asnumpy().tolist() == [2., 2., 2.]
    with ag.record():
        y = nd.Cast(x, dtype='int32')
    y.backward(nd.array([2, 3, 4], dtype='int32'))
    assert x.grad.asnumpy().tolist() == [2., 3., 4.]
    a = nd.array([1, 2, 3], dtype='int32')
    a.attach_grad()
    with ag.record():
        y = nd.Cast(a, dtype='float32') * nd.array([0.5, 0.25, 2])
    y.backward()
    assert a.grad.asnumpy().tolist() == [0, 0, 2]          # truncated to int32, as in MXNet
    with ag.record():
        y = a * 2
    assert ag.grad(y, [a])[0].asnumpy().tolist() == [2, 2, 2]


@pytest.mark.parametrize('op', ['BlockGrad', 'stop_gradient', 'zeros_like', 'argsort', 'argmax'])
def test_non_differentiable_outputs_give_zero_gradients(op):
    x = nd.array([1.5, -2.7, 3.2])
    x.attach_grad()
    with ag.record():
        y = getattr(nd, op)(x)
    y.backward()
    assert x.grad.asnumpy().tolist() == [0., 0., 0.]


def test_writing_into_part_of_an_array_while_recording_is_refused():
    v = nd.ones((4,))
    v.attach_grad()
    for dtype in ('float32', 'int32'):
        x = nd.array(np.arange(12).reshape(3, 4), dtype=dtype)
        with pytest.raises(mx.MXNetError, match='Inplace operations'):
            with ag.record():
                x[1] = v
        with ag.record():
            x[:] = nd.ones((3, 4))               # the whole array: recorded as a copy
        assert x.asnumpy().sum() == 12


def test_setitem_and_getitem_with_negative_steps_follow_numpy():
    base = np.arange(24).reshape(2, 3, 4)
    for key in [slice(1, None, -1), (slice(None), slice(None, None, -2), 1),
                (Ellipsis, slice(3, 0, -1)), (1, [2], slice(None, None, -1)),
                (1, [2, 0], slice(None, None, -1))]:
        expected = base.copy()
        value = -np.arange(expected[key].size).reshape(expected[key].shape)
        expected[key] = value
        x = nd.array(base)
        x[key] = value
        assert (x.asnumpy() == expected).all(), key
        assert (nd.array(base)[key].asnumpy() == base[key]).all(), key


def test_bound_graph_gives_integer_arguments_gradients_and_passes_them_through_cast():
    x, w = mx.sym.Variable('x', dtype='int32'), mx.sym.Variable('w')
    exe = (mx.sym.Cast(x, dtype='float32') * w).simple_bind(mx.cpu(), x=(3,), w=(3,),
                                                            type_dict={'x': 'int32'})
    exe.arg_dict['x'][:] = [1, 2, 3]
    exe.arg_dict['w'][:] = [0.5, 1.5, 2.0]
    exe.forward(is_train=True)
    exe.backward(nd.ones((3,)))
    assert exe.grad_dict['x'].dtype == np.int32
    assert exe.grad_dict['x'].asnumpy().tolist() == [0, 1, 2]        # truncated, as MXNet
    assert exe.grad_dict['w'].asnumpy().tolist() == [1., 2., 3.]
    z = mx.sym.Cast(mx.sym.Cast(w, dtype='int32') * 3, dtype='float32')
    exe = z.simple_bind(mx.cpu(), w=(3,))
    exe.arg_dict['w'][:] = [0.5, -1.5, 2.0]
    exe.forward(is_train=True)
    exe.backward(nd.array([1, 2, 3]))
    assert exe.outputs[0].asnumpy().tolist() == [0., -3., 6.]
    assert exe.grad_dict['w'].asnumpy().tolist() == [3., 6., 9.]


def test_integer_gradients_truncate_and_the_integer_modulo_has_none():
    # MXNet computes backward over integer values in the integer type: a head gradient of 2.5
    # reaches an int32 output as 2, and the modulo's integer gradient kernels give 0
    a, b = mx.sym.var('a'), mx.sym.var('b')
    ai, bi = mx.sym.cast(a, dtype='int32'), mx.sym.cast(b, dtype='int32')
    for sym, ga_expected, gb_expected in [
            (mx.sym.broadcast_mul(ai, bi), [[12., 12., 12.]], [[42.], [42.]]),
            (mx.sym.broadcast_mod(ai, bi), [[0., 0., 0.]], [[0.], [0.]])]:
        ga, gb = nd.empty((1, 3)), nd.empty((2, 1))
        exe = sym.bind(mx.cpu(), args={'a': nd.array([[5., 7., 9.]]), 'b': nd.array([[2.], [4.]])},
                       args_grad=[ga, gb])
        exe.forward(is_train=True)
        exe.backward([nd.full((2, 3), 2.5)])
        assert ga.asnumpy().tolist() == ga_expected and gb.asnumpy().tolist() == gb_expected
    x = nd.array([5, 7], dtype='int32')
    x.attach_grad()
    with ag.record():
        y = x % 3
    y.backward()
    assert x.grad.asnumpy().tolist() == [0, 0]

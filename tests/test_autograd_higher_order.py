"""Higher-order gradients through mx.autograd.grad(create_graph=True): second (and third)
derivatives of the element-wise operators against closed forms, times the head gradients."""
import numpy as np
import pytest

from mxtorch import autograd as ag
from mxtorch import nd

_ANY = np.array([[-1.7, -0.4, 0.3], [0.8, 1.3, 2.2]])
_POSITIVE = np.array([[0.3, 0.7, 1.1], [1.6, 2.5, 4.0]])
_UNIT = np.array([[-0.9, -0.5, -0.1], [0.2, 0.6, 0.85]])
_ABOVE_ONE = np.array([[1.2, 1.5, 2.0], [3.0, 4.5, 6.0]])

# name, inputs, second derivative
_SECOND = [
    ('sin', _ANY, lambda x: -np.sin(x)),
    ('cos', _ANY, lambda x: -np.cos(x)),
    ('tan', _UNIT, lambda x: 2 * np.tan(x) / np.cos(x) ** 2),
    ('sinh', _ANY, np.sinh),
    ('cosh', _ANY, np.cosh),
    ('tanh', _ANY, lambda x: -2 * np.tanh(x) / np.cosh(x) ** 2),
    ('arcsin', _UNIT, lambda x: x / (1 - x ** 2) ** 1.5),
    ('arccos', _UNIT, lambda x: -x / (1 - x ** 2) ** 1.5),
    ('arctan', _ANY, lambda x: -2 * x / (1 + x ** 2) ** 2),
    ('arctanh', _UNIT, lambda x: 2 * x / (1 - x ** 2) ** 2),
    ('log', _POSITIVE, lambda x: -1 / x ** 2),
    ('log2', _POSITIVE, lambda x: -1 / (x ** 2 * np.log(2))),
    ('log10', _POSITIVE, lambda x: -1 / (x ** 2 * np.log(10))),
    ('log1p', _POSITIVE, lambda x: -1 / (1 + x) ** 2),
    ('expm1', _ANY, np.exp),
    ('exp', _ANY, np.exp),
    ('square', _ANY, lambda x: 2 * np.ones_like(x)),
    ('reciprocal', _ANY, lambda x: 2 / x ** 3),
    ('sqrt', _POSITIVE, lambda x: -0.25 * x ** -1.5),
    ('rsqrt', _POSITIVE, lambda x: 0.75 * x ** -2.5),
    ('cbrt', _POSITIVE, lambda x: -2 / 9 * x ** (-5 / 3)),
    ('rcbrt', _POSITIVE, lambda x: 4 / 9 * x ** (-7 / 3)),
    ('sigmoid', _ANY, lambda x: (lambda s: s * (1 - s) * (1 - 2 * s))(1 / (1 + np.exp(-x)))),
    ('relu', _ANY, np.zeros_like),
    ('abs', _ANY, np.zeros_like),
    ('radians', _ANY, np.zeros_like),
    ('degrees', _ANY, np.zeros_like),
]


def _nth_grads(op, x_np, order, seed=0):
    """Gradients of order 1..order of op at x with random head gradients, and the heads."""
    rng = np.random.RandomState(seed)
    x = nd.array(x_np, dtype='float64')
    x.attach_grad()
    heads, grads = [], []
    with ag.record():
        y = op(x)
        for _ in range(order):
            head = nd.array(rng.normal(size=x.shape), dtype='float64')
            y = ag.grad(y, [x], head_grads=head, create_graph=True, retain_graph=True)[0]
            heads.append(head.asnumpy())
            grads.append(y.asnumpy())
    return grads, heads


@pytest.mark.parametrize('name,x,second', _SECOND, ids=[s[0] for s in _SECOND])
def test_second_derivatives(name, x, second):
    grads, heads = _nth_grads(getattr(nd, name), x, 2)
    np.testing.assert_allclose(grads[1], second(x) * heads[0] * heads[1], rtol=1e-7, atol=1e-12)


def test_third_derivative_of_sin_and_sigmoid():
    grads, heads = _nth_grads(nd.sin, _ANY, 3)
    np.testing.assert_allclose(grads[2], -np.cos(_ANY) * np.prod(heads, axis=0), rtol=1e-7)
    grads, heads = _nth_grads(nd.sigmoid, _ANY, 3)
    s = 1 / (1 + np.exp(-_ANY))
    third = s * (1 - s) * (1 - 6 * s + 6 * s * s)
    np.testing.assert_allclose(grads[2], third * np.prod(heads, axis=0), rtol=1e-7)


def test_arcsinh_arccosh_second_derivative_as_mxnet():
    # MXNet 1.9.1 gives +x/(x^2 + 1)^1.5 and +x/(x^2 - 1)^1.5 (its own tests expect that sign);
    # these are MXNet's numbers for ones as head gradients
    x = nd.array([-1.5, -0.3, 0.4, 2.0])
    x.attach_grad()
    with ag.record():
        g = ag.grad(nd.arcsinh(x), [x], create_graph=True)[0]
        g2 = ag.grad(g, [x])[0]
    np.testing.assert_allclose(g.asnumpy(), [0.5547002, 0.9578263, 0.9284768, 0.4472136], 1e-6)
    np.testing.assert_allclose(g2.asnumpy(), [-0.2560155, -0.2636219, 0.3201644, 0.1788854],
                               1e-6)
    x = nd.array([1.5, 2.0, 3.0, 4.0])
    x.attach_grad()
    with ag.record():
        g = ag.grad(nd.arccosh(x), [x], create_graph=True)[0]
        g2 = ag.grad(g, [x])[0]
    np.testing.assert_allclose(g.asnumpy(), [0.8944272, 0.5773503, 0.3535534, 0.2581989], 1e-6)
    np.testing.assert_allclose(g2.asnumpy(), [1.0733125, 0.3849002, 0.1325825, 0.0688530], 1e-6)


def test_constant_first_derivatives_differentiate_to_zero():
    for op in (lambda x: nd.clip(x, -0.5, 1.0), lambda x: nd.Dropout(x, p=0.5),
               lambda x: x * 3):
        grads, _ = _nth_grads(op, _ANY, 2)
        np.testing.assert_array_equal(grads[1], np.zeros_like(_ANY))


def test_power_and_mixed_second_derivatives():
    a_np, b_np = _POSITIVE, _POSITIVE[::-1].copy()
    a, b = nd.array(a_np, dtype='float64'), nd.array(b_np, dtype='float64')
    a.attach_grad()
    b.attach_grad()
    with ag.record():
        y = a ** b
        ga, = ag.grad(y, [a], create_graph=True)
        gab, = ag.grad(ga, [b])
    np.testing.assert_allclose(ga.asnumpy(), b_np * a_np ** (b_np - 1), rtol=1e-10)
    mixed = a_np ** (b_np - 1) * (1 + b_np * np.log(a_np))
    np.testing.assert_allclose(gab.asnumpy(), mixed, rtol=1e-10)


@pytest.mark.parametrize('flatten', [True, False])
def test_fully_connected_second_order(flatten):
    x_np = np.arange(24.).reshape(2, 3, 4)
    w_np = np.full((3, 12 if flatten else 4), 0.5)
    x, w, b = nd.array(x_np), nd.array(w_np), nd.ones((3,))
    for v in (x, w, b):
        v.attach_grad()
    rows = (2, -1) if flatten else (-1, 4)         # x as the matrix FullyConnected multiplies
    with ag.record():
        y = nd.FullyConnected(x, w, b, num_hidden=3, flatten=flatten)
        o_y = nd.array(np.arange(y.size).reshape(y.shape))
        x_grad, = ag.grad(y, [x], head_grads=o_y, create_graph=True, retain_graph=True)
        o_x = nd.array(np.arange(x.size).reshape(x.shape))
        w_grad_grad, = ag.grad(x_grad, [w], head_grads=o_x)
    oy = o_y.asnumpy().reshape(-1, 3)
    np.testing.assert_allclose(x_grad.asnumpy().reshape(rows), oy @ w_np)
    np.testing.assert_allclose(w_grad_grad.asnumpy(), oy.T @ o_x.asnumpy().reshape(rows))

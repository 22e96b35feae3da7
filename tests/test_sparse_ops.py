"""Sparse operators as MXNet 1.9.1 runs them: kernels that compute on the stored elements only,
the `_scatter_*` operators, storage-type errors, gradients at the poles. Expected values were
produced by MXNet 1.9.1 (constants below)."""
import math

import numpy as np
import pytest

import mxtorch as mx

INF, NAN = math.inf, math.nan
A = np.array([[0, 2, 0], [0, 0, 0], [4, 0, 8], [0, 0, 0]], dtype=np.float32)
B = np.array([[1, 0, 0], [3, 0, 0], [2, 0, 2], [0, 0, 0]], dtype=np.float32)


def _arr(x, stype):
    return mx.nd.array(x) if stype == 'default' else mx.nd.array(x).tostype(stype)


def _parts(o):
    if o.stype == 'row_sparse':
        return o.stype, o.indices.asnumpy().tolist(), o.data.asnumpy().tolist()
    if o.stype == 'csr':
        return (o.stype, o.indptr.asnumpy().tolist(), o.indices.asnumpy().tolist(),
                o.data.asnumpy().tolist())
    return o.stype, o.asnumpy().tolist()



DIV_DENSE = [[0.0, INF, NAN], [0.0, NAN, NAN], [2.0, NAN, 4.0], [NAN, NAN, NAN]]


@pytest.mark.parametrize('lhs', ['default', 'row_sparse', 'csr'])
@pytest.mark.parametrize('rhs', ['default', 'row_sparse', 'csr'])
@pytest.mark.parametrize('symbolic', [False, True])
def test_scatter_elemwise_div(lhs, rhs, symbolic):
    if symbolic:
        l, r = mx.sym.Variable('l', stype=lhs), mx.sym.Variable('r', stype=rhs)
        exe = mx.sym._internal._scatter_elemwise_div(l, r).bind(
            mx.cpu(), {'l': _arr(A, lhs), 'r': _arr(B, rhs)})
        out = exe.forward()[0]
    else:
        out = mx.nd._internal._scatter_elemwise_div(_arr(A, lhs), _arr(B, rhs))
    if lhs == 'row_sparse':     # only the rows lhs stores
        assert out.stype == 'row_sparse'
        assert out.indices.asnumpy().tolist() == [0, 2]
        np.testing.assert_equal(out.data.asnumpy(), [DIV_DENSE[0], DIV_DENSE[2]])
    else:
        assert out.stype == 'default'
        np.testing.assert_equal(out.asnumpy(), DIV_DENSE)


@pytest.mark.parametrize('symbolic', [False, True])
def test_scatter_scalar_ops_touch_stored_elements_only(symbolic):
    def run(op, x, stype):
        if not symbolic:
            return getattr(mx.nd._internal, op)(_arr(x, stype), scalar=3)
        v = mx.sym.Variable('l', stype=stype)
        return getattr(mx.sym._internal, op)(v, scalar=3).bind(
            mx.cpu(), {'l': _arr(x, stype)}).forward()[0]
    assert _parts(run('_scatter_plus_scalar', A, 'row_sparse')) == \
        ('row_sparse', [0, 2], [[3.0, 5.0, 3.0], [7.0, 3.0, 11.0]])
    assert _parts(run('_scatter_minus_scalar', A, 'row_sparse')) == \
        ('row_sparse', [0, 2], [[-3.0, -1.0, -3.0], [1.0, -3.0, 5.0]])
    assert _parts(run('_scatter_plus_scalar', A, 'csr')) == \
        ('csr', [0, 1, 1, 3, 3], [1, 0, 2], [5.0, 7.0, 11.0])
    assert _parts(run('_scatter_minus_scalar', A, 'csr')) == \
        ('csr', [0, 1, 1, 3, 3], [1, 0, 2], [-1.0, 1.0, 5.0])
    np.testing.assert_equal(run('_scatter_plus_scalar', A, 'default').asnumpy(), A + 3)


def test_unary_on_stored_elements_keeps_structure():
    x = mx.nd.sparse.csr_matrix(([4.0, 0.0, 9.0], [0, 1, 2], [0, 2, 2, 3]), shape=(3, 3))
    y = mx.nd.sparse.sqrt(x)        # an explicitly stored zero stays stored
    assert _parts(y) == ('csr', [0, 2, 2, 3], [0, 1, 2], [2.0, 0.0, 3.0])
    r = mx.nd.sparse.row_sparse_array(([[1.0, -8.0]], [2]), shape=(4, 2))
    assert _parts(mx.nd.sparse.cbrt(r)) == ('row_sparse', [2], [[1.0, -2.0]])


def test_batchnorm_fix_gamma_refuses_sparse_input():
    data = mx.sym.Variable('data', stype='row_sparse')
    args = {'data': _arr(np.ones((2, 3)), 'row_sparse'), 'batchnorm0_gamma': mx.nd.ones(3),
            'batchnorm0_beta': mx.nd.zeros(3)}
    aux = {'batchnorm0_moving_mean': mx.nd.zeros(3), 'batchnorm0_moving_var': mx.nd.ones(3)}
    with pytest.raises(mx.MXNetError, match='fix_gamma=True is not supported for sparse'):
        mx.sym.BatchNorm(data, fix_gamma=True, name='batchnorm0').bind(
            mx.cpu(), args, aux_states=aux)
    exe = mx.sym.BatchNorm(data, fix_gamma=False, name='batchnorm0').bind(
        mx.cpu(), args, aux_states=aux)
    assert exe.forward()[0].stype == 'default'


# MXNet 1.9.1: gradient (head gradient 2) at x = [0, 0, -1, 1] and sparse inputs at zero
@pytest.mark.parametrize('name,dense_grad', [
    ('cbrt', [INF, INF, 0.6666666865348816, 0.6666666865348816]),
    ('gamma', [INF, INF, NAN, -1.1544313430786133]),
    ('gammaln', [INF, INF, INF, -1.1544313430786133]),
])
def test_gradients_at_poles_as_mxnet(name, dense_grad):
    x = mx.nd.array([[0., 0.], [-1, 1]])
    x.attach_grad()
    with mx.autograd.record():
        y = getattr(mx.nd, name)(x)
    y.backward(mx.nd.ones(y.shape) * 2)
    np.testing.assert_allclose(x.grad.asnumpy().ravel(), dense_grad, rtol=1e-5)
    for stype in ('row_sparse', 'csr'):       # recorded through sparse inputs
        x = _arr(np.zeros((2, 2)), stype)
        x.attach_grad(stype=stype)
        with mx.autograd.record():
            y = getattr(mx.nd.sparse, name)(x)
        y.backward(mx.nd.ones(y.shape) * 2)
        assert x.grad.stype == stype
        np.testing.assert_equal(x.grad.asnumpy(), np.full((2, 2), INF))


def test_gamma_values_at_poles():
    # MXNet 1.9.1: gamma(+-0) = +-inf, nan at the negative integers
    x = mx.nd.array([0., -0., -1., -2.5, 1., 2.])
    np.testing.assert_allclose(mx.nd.gamma(x).asnumpy(),
                               [INF, -INF, NAN, -0.9453086, 1, 1], rtol=1e-5)

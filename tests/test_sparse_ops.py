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


# ---------------------------------------------------------------------------------------------
# every `_sparse_*` operator of MXNet 1.9.1 (mx.nd.sparse.<name>), replayed against the
# storage types, values and stored rows/elements MXNet gave (fixtures/gen_sparse_ops.py)
# ---------------------------------------------------------------------------------------------
def _load_cases():
    import json
    import pathlib
    path = pathlib.Path(__file__).parent / 'fixtures' / 'sparse_ops.json'
    data = json.loads(path.read_text())
    return data['arrays'], data['cases']


ARRAYS, CASES = _load_cases()


def _case_id(c):
    kw = ','.join('%s=%s' % kv for kv in sorted(c['kwargs'].items()))
    return '%s(%s)%s' % (c['name'], ','.join(s[:3] for _, s in c['inputs']), kw)


def _to_kwargs(kwargs):
    return {k: tuple(v) if isinstance(v, list) else v for k, v in kwargs.items()}


@pytest.mark.parametrize('case', CASES, ids=[_case_id(c) for c in CASES])
def test_sparse_operator_as_mxnet(case):
    arrays = [_arr(np.array(ARRAYS[k], dtype=np.float32), s) for k, s in case['inputs']]
    fn = getattr(mx.nd.sparse, case['name'])
    kwargs = _to_kwargs(case['kwargs'])
    if 'error' in case:
        with pytest.raises(mx.MXNetError):
            fn(*arrays, **kwargs)
        return
    if case.get('update'):
        fn(*arrays, out=arrays[0], **kwargs)
        results = arrays[:1] + arrays[2:]
    else:
        results = fn(*arrays, **kwargs)
        results = results if isinstance(results, list) else [results]
    assert len(results) == len(case['outputs'])
    for got, want in zip(results, case['outputs']):
        assert got.stype == want['stype']
        assert list(got.shape) == want['shape']
        np.testing.assert_allclose(got.asnumpy(), np.array(want['value'], dtype=np.float64),
                                   rtol=1e-5, atol=1e-6)
        if want['stype'] == 'row_sparse':
            assert got.indices.asnumpy().tolist() == want['indices']
        elif want['stype'] == 'csr':        # the stored positions (MXNet's order within a
            assert got.indptr.asnumpy().tolist() == want['indptr']    # row may vary)
            ptr = want['indptr']
            assert [sorted(got.indices.asnumpy()[ptr[r]:ptr[r + 1]].tolist())
                    for r in range(len(ptr) - 1)] == \
                [sorted(want['indices'][ptr[r]:ptr[r + 1]]) for r in range(len(ptr) - 1)]


def test_sparse_namespace_is_mxnets():
    """mx.nd.sparse / mx.sym.sparse hold the `_sparse_*` operators under their short names."""
    import pathlib
    names = (pathlib.Path(__file__).parent / 'fixtures' / 'mxnet_1.9.1_op_names.txt') \
        .read_text().split()
    short = [n[len('_sparse_'):] for n in names if n.startswith('_sparse_')]
    assert len(short) == 74
    for name in short:
        assert callable(getattr(mx.nd.sparse, name)), name
        assert callable(getattr(mx.sym.sparse, name)), name
    assert not hasattr(mx.nd.sparse, 'softmax') and not hasattr(mx.sym.sparse, 'softmax')

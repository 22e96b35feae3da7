"""Linear algebra (ops/linalg.py: mx.nd.linalg.*, mx.sym.linalg.*, linalg_*) and moments,
cumsum, khatri_rao, ravel_multi_index, unravel_index, histogram and softmax_cross_entropy against
MXNet 1.9.1: forward through mx.nd and a bound symbol, gradients, infer_shape/infer_type and
rejected shapes from tests/fixtures/ops_linalg.npz (made by gen_ops_linalg.py), plus numeric
gradient checks."""
import functools
import json

import numpy as np
import pytest

import mxtorch as mx
from mxtorch.base import MXNetError
from mxtorch.test_utils import check_numeric_gradient

from conftest import OpCases

OPS = OpCases('ops_linalg.npz')
_case_id, _arrays, _listed = OPS.case_id, OPS.arrays, OPS.listed
META, CASES = OPS.meta, OPS.cases
ALL = range(len(CASES))


def _resolve(module, path):
    return functools.reduce(getattr, path.split('.'), module)


def _assert_same(got, want, what):
    assert got.dtype == want.dtype, '%s: dtype %s, MXNet %s' % (what, got.dtype, want.dtype)
    assert got.shape == want.shape, '%s: shape %s, MXNet %s' % (what, got.shape, want.shape)
    rtol = {'float16': 1e-2, 'float32': 1e-4, 'float64': 1e-9}.get(want.dtype.name, 0)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                               atol=rtol, equal_nan=True, err_msg=what)


def _symbol(case, names=None):
    names = names or case['args']
    variables = [mx.sym.Variable(n) for n in names]
    fn = _resolve(mx.sym, case['op'])
    if case['op'] == 'khatri_rao':
        return fn(*variables, name='op', **case['params'])
    return fn(name='op', **dict(zip(names, variables)), **case['params'])


# ---------------------------------------------------------------------------------------------
# The fixture cases
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize('index', ALL, ids=_case_id)
def test_imperative_forward(index):
    case = CASES[index]
    inputs = _arrays(index, 'in')
    result = _resolve(mx.nd, case['op'])(*[mx.nd.array(inputs[n], dtype=inputs[n].dtype)
                                           for n in case['inputs']], **case['params'])
    results = result if isinstance(result, (list, tuple)) else [result]
    expected = _listed(index, 'nd')
    assert len(results) == len(expected)
    for k, (got, want) in enumerate(zip(results, expected)):
        _assert_same(got.asnumpy(), want, 'output %d' % k)


@pytest.mark.parametrize('index', ALL, ids=_case_id)
def test_symbol_forward_backward(index):
    case = CASES[index]
    inputs = _arrays(index, 'in')
    sym = _symbol(case)
    assert sym.list_arguments() == case['args']
    assert sym.list_outputs() == case['outputs']
    assert json.loads(sym.tojson())['nodes'][-1]['op'] == case['json_op']
    args = {n: mx.nd.array(inputs[n], dtype=inputs[n].dtype) for n in case['args']}
    grads = {n: mx.nd.zeros(inputs[n].shape, dtype=inputs[n].dtype)
             for n in _arrays(index, 'grad')}
    exe = sym.bind(mx.cpu(), args, args_grad=grads or None,
                   grad_req={n: 'write' if n in grads else 'null' for n in case['args']})
    outputs = exe.forward(is_train=True)
    expected = _listed(index, 'out')
    assert len(outputs) == len(expected)
    for k, (got, want) in enumerate(zip(outputs, expected)):
        _assert_same(got.asnumpy(), want, 'output %d' % k)
    if not case['backward']:
        return
    exe.backward([mx.nd.array(h, dtype=h.dtype) for h in _listed(index, 'head')])
    for name, want in _arrays(index, 'grad').items():
        _assert_same(exe.grad_dict[name].asnumpy(), want, 'gradient of %s' % name)


@pytest.mark.parametrize('index', ALL, ids=_case_id)
def test_infer_shape_and_type(index):
    case = CASES[index]
    inputs = _arrays(index, 'in')
    sym = _symbol(case)
    shapes = sym.infer_shape(**{n: inputs[n].shape for n in case['args']})
    assert [[list(s) for s in group] for group in shapes] == case['infer_shape']
    types = sym.infer_type(**{n: inputs[n].dtype for n in case['args']})
    assert [[np.dtype(t).name for t in group] for group in types] == case['infer_type']


def _names(op, params):
    if op.endswith('_histogram'):
        return ['data'] if 'bin_cnt' in params else ['data', 'bins']
    return [c['args'] for c in CASES if c['op'] == op][0]


@pytest.mark.parametrize('case', META['partial_shapes'],
                         ids=lambda c: '%s%s' % (c['op'], sorted(c['given'])))
def test_partial_infer_shape(case):
    sym = _symbol(case, _names(case['op'], case['params']))
    shapes = sym.infer_shape_partial(**{k: tuple(v) for k, v in case['given'].items()})
    assert [[list(s) for s in group] for group in shapes] == case['infer_shape']


def _fmt(shape):
    return '(%s)' % ','.join(str(d) for d in shape)


@pytest.mark.parametrize('case', META['errors'],
                         ids=lambda c: '%s%s' % (c['op'], list(c['shapes'].values())))
def test_rejected_like_mxnet(case):
    """Shapes MXNet rejects raise MXNetError naming the operator and the given shapes."""
    inputs = [mx.nd.ones(tuple(s)) for s in case['shapes'].values()]
    with pytest.raises(MXNetError) as err:
        _resolve(mx.nd, case['op'])(*inputs, **case['params'])
    message = str(err.value)
    assert case['op'].split('.')[-1].replace('linalg_', '') in message, message
    assert 'must' in message or 'expected' in message, message
    offending = [s for s in case['shapes'].values()]
    assert any(_fmt(s) in message for s in offending), message
    for key in case['params']:
        assert key in message, message
    # and symbolic inference names the node
    sym = _symbol({'op': case['op'], 'params': case['params'], 'args': list(case['shapes'])})
    with pytest.raises(MXNetError, match='op'):
        sym.infer_shape(**{k: tuple(v) for k, v in case['shapes'].items()})


# ---------------------------------------------------------------------------------------------
# Numeric gradients (float64)
# ---------------------------------------------------------------------------------------------
def _spd(n):
    x = np.random.randn(n, n)
    return x @ x.T + n * np.eye(n)


def _lower(n):
    return np.linalg.cholesky(_spd(n))


def _conditioned(*shape):
    n = shape[-1]
    x = np.random.randn(*shape) * 0.5
    x[..., np.arange(n), np.arange(n)] += 2.5
    return x


def _sym_part(x):
    """Symmetric input built from a free one (potrf reads one triangle only)."""
    return 0.5 * (x + mx.sym.swapaxes(x, -1, -2))


NUMERIC = [
    ('linalg.gemm', {'transpose_b': True, 'alpha': 0.5, 'beta': 2.0},
     {'A': np.random.randn(2, 3), 'B': np.random.randn(4, 3), 'C': np.random.randn(2, 4)}),
    ('linalg.gemm2', {'axis': 1}, {'A': np.random.randn(2, 3, 2, 2),
                                   'B': np.random.randn(2, 2, 2, 3)}),
    ('linalg.gemm2', {'transpose_a': True}, {'A': np.random.randn(3, 2),
                                             'B': np.random.randn(3, 2)}),
    ('linalg.potri', {}, {'A': _lower(3)}),
    ('linalg.trmm', {'rightside': True, 'lower': False, 'alpha': 2.0},
     {'A': _conditioned(3, 3), 'B': np.random.randn(2, 3)}),
    ('linalg.trsm', {'transpose': True}, {'A': _conditioned(3, 3), 'B': np.random.randn(3, 2)}),
    ('linalg.trsm', {'rightside': True, 'lower': False},
     {'A': _conditioned(2, 2, 2), 'B': np.random.randn(2, 3, 2)}),
    ('linalg.sumlogdiag', {}, {'A': _conditioned(2, 3, 3)}),
    ('linalg.syrk', {'transpose': True, 'alpha': 1.5}, {'A': np.random.randn(3, 2)}),
    ('linalg.gelqf', {}, {'A': np.random.randn(2, 3)}),
    ('linalg.inverse', {}, {'A': _conditioned(3, 3)}),
    ('linalg.det', {}, {'A': _conditioned(2, 3, 3)}),
    ('linalg.slogdet', {}, {'A': _conditioned(3, 3)}),
    ('linalg.extractdiag', {'offset': -1}, {'A': np.random.randn(3, 3)}),
    ('linalg.makediag', {'offset': 1}, {'A': np.random.randn(2, 2)}),
    ('linalg.extracttrian', {'offset': 1}, {'A': np.random.randn(3, 3)}),
    ('linalg.maketrian', {'lower': False}, {'A': np.random.randn(3)}),
    ('moments', {'axes': (1,)}, {'data': np.random.randn(2, 3)}),
    ('cumsum', {'axis': 0}, {'a': np.random.randn(3, 2)}),
    ('softmax_cross_entropy', {}, {'data': np.random.randn(3, 4)}),
]


@pytest.mark.parametrize('op, params, location', NUMERIC,
                         ids=['%s%s' % (op, params) for op, params, _ in NUMERIC])
def test_numeric_gradient(op, params, location):
    variables = {n: mx.sym.Variable(n) for n in location}
    fn = _resolve(mx.sym, op)
    if op == 'softmax_cross_entropy':
        sym = fn(variables['data'], mx.sym.Variable('label'))
        check_numeric_gradient(sym, dict(location, label=np.array([1., 0., 3.])),
                               grad_nodes=['data'], dtype=np.float64, numeric_eps=1e-6,
                               rtol=1e-4)
        return
    sym = fn(**variables, **params)
    check_numeric_gradient(sym, location, dtype=np.float64, numeric_eps=1e-6, rtol=1e-4,
                           atol=1e-6)


@pytest.mark.parametrize('op', ['potrf', 'syevd'])
def test_numeric_gradient_on_symmetric_input(op):
    x = mx.sym.Variable('x')
    sym = getattr(mx.sym.linalg, op)(_sym_part(x))
    check_numeric_gradient(sym, {'x': _spd(3)}, dtype=np.float64, numeric_eps=1e-6, rtol=1e-4,
                           atol=1e-6)


# ---------------------------------------------------------------------------------------------
# Behaviour spelled out
# ---------------------------------------------------------------------------------------------
def test_namespaces_and_names():
    a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
    assert mx.sym.linalg.gemm2(a, b).name.startswith('gemm2')
    assert mx.sym.linalg_gemm2(a, b).name.startswith('linalg_gemm2')
    assert mx.nd.linalg.det.__name__ == 'det'
    assert mx.sym.cumsum(a).name.startswith('cumsum')
    assert mx.sym.histogram(a, bins=3, range=(0, 1)).name.startswith('_histogram')
    x = mx.nd.array(np.eye(3) * 2)
    for fn in (mx.nd.linalg.potrf, mx.nd.linalg_potrf, mx.nd.op.linalg_potrf,
               mx.nd._internal._linalg_potrf):
        np.testing.assert_allclose(fn(x).asnumpy(), np.eye(3) * np.sqrt(2), rtol=1e-6)


def test_linalg_rejects_non_float_types():
    x = mx.nd.ones((2, 2), dtype='int32')
    with pytest.raises(MXNetError, match='gemm2.*float'):
        mx.nd.linalg.gemm2(x, x)
    sym = mx.sym.linalg.det(mx.sym.Variable('a'))
    with pytest.raises(MXNetError, match='det.*float16'):
        sym.infer_type(a='float16')


def test_value_errors():
    with pytest.raises(MXNetError, match='potrf.*positive definite'):
        mx.nd.linalg.potrf(mx.nd.array([[1, 2], [2, 1]]))
    with pytest.raises(MXNetError, match='inverse.*singular'):
        mx.nd.linalg.inverse(mx.nd.zeros((2, 2)))
    with pytest.raises(MXNetError, match='softmax_cross_entropy.*label'):
        mx.nd.softmax_cross_entropy(mx.nd.ones((2, 3)), mx.nd.array([0, 3]))
    with pytest.raises(MXNetError, match='bin_cnt.*range'):
        mx.nd._internal._histogram(mx.nd.ones((3,)), bin_cnt=3)
    with pytest.raises(MXNetError, match='moments.*axes'):
        mx.nd.moments(mx.nd.ones((2, 3)), axes=())
    with pytest.raises(MXNetError, match='cumsum.*axis'):
        mx.nd.cumsum(mx.nd.ones((2, 3)), axis=2)


def test_histogram_helpers():
    x = mx.nd.array([0.1, 0.5, 0.7, 0.9, 1.0, 0.0])
    counts, edges = mx.nd.histogram(x, bins=4, range=(0, 1))
    assert counts.dtype == np.int64
    np.testing.assert_array_equal(counts.asnumpy(), [2, 0, 2, 2])
    np.testing.assert_allclose(edges.asnumpy(), [0, 0.25, 0.5, 0.75, 1])
    counts, edges = mx.nd.histogram(x, bins=mx.nd.array([0, 0.5, 1]))
    np.testing.assert_array_equal(counts.asnumpy(), [2, 4])
    with pytest.warns(UserWarning):
        counts, _ = mx.nd.histogram(x, bins=2)
    np.testing.assert_array_equal(counts.asnumpy(), [2, 4])
    with pytest.raises(ValueError):
        mx.sym.histogram(mx.sym.Variable('a'), bins=3)
    sym = mx.sym.histogram(mx.sym.Variable('a'), mx.sym.Variable('b'))
    assert sym.list_arguments() == ['a', 'b']


def test_negative_cumsum_axis_and_batched_triangles():
    x = mx.nd.array(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(mx.nd.cumsum(x, axis=-1).asnumpy(), np.cumsum(x.asnumpy(), 1))
    a = mx.nd.array(np.random.randn(2, 3, 4, 4))
    packed = mx.nd.linalg.extracttrian(a, offset=-1)
    assert packed.shape == (2, 3, 6)
    back = mx.nd.linalg.maketrian(packed, offset=-1).asnumpy()
    np.testing.assert_array_equal(back, np.tril(a.asnumpy(), -1))


def test_autograd_through_imperative_linalg():
    a = mx.nd.array(_conditioned(3, 3))
    a.attach_grad()
    with mx.autograd.record():
        y = mx.nd.linalg.det(a)
    y.backward()
    want = np.linalg.det(a.asnumpy()) * np.linalg.inv(a.asnumpy()).T
    np.testing.assert_allclose(a.grad.asnumpy(), want, rtol=1e-4)

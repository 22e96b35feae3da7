"""Element-wise operators (ops/elemwise.py, ops/activation.py, ops/tensor.py: unary math,
activations, the softmax family, elemwise_*/broadcast_*/scalar binary operators, add_n, Cast,
creation operators) against MXNet 1.9.1: forward through mx.nd and a bound symbol, gradients,
infer_shape/infer_type and rejected parameters from tests/fixtures/ops_elemwise.npz (made by
gen_ops_elemwise.py), plus numeric gradient checks in float64."""
import numpy as np
import pytest

import mxtorch as mx
from mxtorch.base import MXNetError
from mxtorch.test_utils import check_numeric_gradient

from conftest import OpCases

OPS = OpCases('ops_elemwise.npz')
FIXTURE, _case_id, _arrays, _listed = OPS.data, OPS.case_id, OPS.arrays, OPS.listed
META, CASES = OPS.meta, OPS.cases
VARIADIC = ('add_n', 'ElementWiseSum')


def _lookup(module, op):
    return getattr(module, op) if hasattr(module, op) else getattr(module._internal, op)


# MXNet computes these in float32 even for float64 data (float-typed parameters such as clip's
# bounds and hard_sigmoid's alpha/beta, float32 constants in degrees/radians, float32 special
# functions in the gradients of erf/erfinv/gamma/gammaln): float64 results agree to ~1e-7.
FLOAT32_INSIDE = {'degrees', 'radians', 'clip', 'hard_sigmoid', 'erf', 'erfinv', 'gamma',
                  'gammaln'}
_TOLERANCE = {'float16': 1e-2, 'float32': 1e-5, 'float64': 1e-10}


def _tolerance(index, want):
    """The tolerance of the least precise float dtype among the case's inputs and `want`
    (softmax(dtype=float32) of float16 data is only as exact as float16)."""
    case = CASES[index]
    dtypes = [FIXTURE['c%d.in.%s' % (index, n)].dtype.name for n in case['inputs']]
    tol = max([_TOLERANCE.get(want.dtype.name, 0)] +
              [_TOLERANCE[d] for d in dtypes if d in _TOLERANCE])
    return max(tol, 1e-6) if case['op'] in FLOAT32_INSIDE else tol


def _assert_same(got, want, what, rtol=0):
    assert got.dtype == want.dtype, '%s: dtype %s, MXNet %s' % (what, got.dtype, want.dtype)
    assert got.shape == want.shape, '%s: shape %s, MXNet %s' % (what, got.shape, want.shape)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                               atol=rtol, equal_nan=True, err_msg=what)


def _symbol(op, params, names):
    variables = [mx.sym.Variable(n) for n in names]
    if op in VARIADIC:
        return _lookup(mx.sym, op)(*variables, name='op', **params)
    return _lookup(mx.sym, op)(name='op', **dict(zip(names, variables)), **params)


ALL = range(len(CASES))


def _integer_output(case):
    """Cast to an integer dtype: MXNet passes the (integer-cast) head gradient straight
    through; torch autograd cannot carry gradients through integer tensors, so mxtorch's
    gradient there is zero (a documented limitation)."""
    return case['op'] in ('Cast', 'cast') and 'int' in case['params']['dtype']


# ---------------------------------------------------------------------------------------------
# The fixture cases
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize('index', ALL, ids=_case_id)
def test_imperative_forward(index):
    case = CASES[index]
    inputs = _arrays(index, 'in')
    result = _lookup(mx.nd, case['op'])(*[mx.nd.array(inputs[n], dtype=inputs[n].dtype)
                                          for n in case['inputs']], **case['params'])
    results = result if isinstance(result, list) else [result]
    expected = _listed(index, 'out' if case['nd_same'] else 'nd')
    assert len(results) == len(expected)
    for k, (got, want) in enumerate(zip(results, expected)):
        _assert_same(got.asnumpy(), want, 'output %d' % k, _tolerance(index, want))


@pytest.mark.parametrize('index', ALL, ids=_case_id)
def test_symbol_forward_backward(index):
    case = CASES[index]
    inputs = _arrays(index, 'in')
    sym = _symbol(case['op'], case['params'], case['inputs'])
    assert sym.list_arguments() == case['args']
    assert sym.list_outputs() == case['outputs']
    args = {n: mx.nd.array(inputs[n], dtype=inputs[n].dtype) for n in case['args']}
    grads = {n: mx.nd.zeros(inputs[n].shape, dtype=inputs[n].dtype)
             for n in _arrays(index, 'grad')}
    exe = sym.bind(mx.cpu(), args, args_grad=grads,
                   grad_req={n: 'write' if n in grads else 'null' for n in case['args']})
    outputs = exe.forward(is_train=True)
    expected = _listed(index, 'out')
    assert len(outputs) == len(expected)
    for k, (got, want) in enumerate(zip(outputs, expected)):
        _assert_same(got.asnumpy(), want, 'output %d' % k, _tolerance(index, want))
    if not case['backward'] or _integer_output(case):
        return
    exe.backward([mx.nd.array(h, dtype=h.dtype) for h in _listed(index, 'head')])
    for name, want in _arrays(index, 'grad').items():
        _assert_same(exe.grad_dict[name].asnumpy(), want, 'gradient of %s' % name,
                     _tolerance(index, want))


@pytest.mark.parametrize('index', ALL, ids=_case_id)
def test_infer_shape_and_type(index):
    case = CASES[index]
    inputs = _arrays(index, 'in')
    sym = _symbol(case['op'], case['params'], case['inputs'])
    shapes = sym.infer_shape(**{n: inputs[n].shape for n in case['args']})
    assert [[list(s) for s in group] for group in shapes] == case['infer_shape']
    types = sym.infer_type(**{n: inputs[n].dtype for n in case['args']})
    assert [[np.dtype(t).name for t in group] for group in types] == case['infer_type']


@pytest.mark.parametrize('index', range(len(META['creation'])),
                         ids=lambda i: '%s%s' % (META['creation'][i]['op'],
                                                 META['creation'][i]['params']))
def test_creation_operators(index):
    case = META['creation'][index]
    _assert_same(_lookup(mx.nd, case['op'])(**case['params']).asnumpy(),
                 FIXTURE['k%d.nd' % index], 'mx.nd.%s' % case['op'])
    sym = _lookup(mx.sym, case['op'])(name='op', **case['params'])
    assert sym.list_outputs() == case['outputs']
    assert [[list(s) for s in group] for group in sym.infer_shape()] == case['infer_shape']
    _assert_same(sym.bind(mx.cpu(), {}).forward()[0].asnumpy(), FIXTURE['k%d.out' % index],
                 'mx.sym.%s' % case['op'])


@pytest.mark.parametrize('case', META['errors'], ids=lambda c: '%s%s' % (c['op'], c['params']))
def test_rejected_like_mxnet(case):
    inputs = {n: mx.nd.zeros(tuple(s)) for n, s in case['shapes'].items()}
    with pytest.raises(MXNetError) as err:
        _lookup(mx.nd, case['op'])(**inputs, **case['params'])
    message = str(err.value)
    assert case['op'] in message
    for key, value in case['params'].items():
        assert key in message and str(value) in message, message


# ---------------------------------------------------------------------------------------------
# Numeric gradients (float64)
# ---------------------------------------------------------------------------------------------
def _away_from_zero(*shape, low=0.3, high=1.5):
    sign = np.where(np.random.rand(*shape) < 0.5, -1.0, 1.0)
    return np.random.uniform(low, high, shape) * sign


def _within(low, high, *shape):
    return np.random.uniform(low, high, shape)


NUMERIC = [(op, {}, {'data': _away_from_zero(2, 3)}) for op in (
    'abs', 'square', 'cbrt', 'exp', 'expm1', 'sin', 'cos', 'tan', 'arctan', 'sinh', 'cosh',
    'tanh', 'arcsinh', 'degrees', 'radians', 'relu', 'sigmoid', 'softsign', 'negative', 'erf',
    'reciprocal', 'hard_sigmoid', 'softmax', 'log_softmax', 'softmin', 'SoftmaxActivation')]
NUMERIC += [(op, {}, {'data': _within(0.5, 2.5, 2, 3)}) for op in (
    'sqrt', 'rsqrt', 'rcbrt', 'log', 'log10', 'log2', 'log1p', 'gamma', 'gammaln')]
NUMERIC += [(op, {}, {'data': _within(-0.8, 0.8, 2, 3)}) for op in (
    'arcsin', 'arccos', 'arctanh', 'erfinv')]
NUMERIC += [
    ('arccosh', {}, {'data': _within(1.3, 3, 2, 3)}),
    ('clip', {'a_min': -0.5, 'a_max': 0.7}, {'data': np.array([[-1.0, -0.2, 0.3],
                                                               [0.9, 0.1, -0.8]])}),
    ('smooth_l1', {'scalar': 1.5}, {'data': np.array([[-2.0, -0.3, 0.2], [0.5, 1.1, -0.9]])}),
    ('softmax', {'axis': 0, 'temperature': 3.0}, {'data': _away_from_zero(3, 2)}),
    ('SoftmaxActivation', {'mode': 'channel'}, {'data': _away_from_zero(2, 3, 2)}),
    ('Activation', {'act_type': 'softrelu'}, {'data': _away_from_zero(2, 3)}),
    ('elemwise_div', {}, {'lhs': _away_from_zero(2, 3), 'rhs': _away_from_zero(2, 3)}),
    ('_power', {}, {'lhs': _within(0.5, 2, 2, 3), 'rhs': _away_from_zero(2, 3)}),
    ('_hypot', {}, {'lhs': _away_from_zero(2, 3), 'rhs': _away_from_zero(2, 3)}),
    ('_mod', {}, {'lhs': np.array([[2.3, -1.7, 0.4]]), 'rhs': np.array([[0.7, 0.8, -0.9]])}),
    ('broadcast_mul', {}, {'lhs': _away_from_zero(2, 1, 3), 'rhs': _away_from_zero(4, 1)}),
    ('broadcast_power', {}, {'lhs': _within(0.5, 2, 2, 1), 'rhs': _away_from_zero(1, 3)}),
    ('broadcast_maximum', {}, {'lhs': np.array([[0.1], [0.9]]),
                               'rhs': np.array([[0.3, 1.2, -0.5]])}),
    ('broadcast_hypot', {}, {'lhs': _away_from_zero(3, 1), 'rhs': _away_from_zero(3)}),
    ('_rdiv_scalar', {'scalar': 2.0}, {'data': _away_from_zero(2, 3)}),
    ('_rpower_scalar', {'scalar': 1.7}, {'data': _away_from_zero(2, 3)}),
    ('_power_scalar', {'scalar': 2.5}, {'data': _within(0.5, 2, 2, 3)}),
    ('_hypot_scalar', {'scalar': 0.5}, {'data': _away_from_zero(2, 3)}),
    ('_rmod_scalar', {'scalar': 2.5}, {'data': np.array([[0.7, -0.9, 1.1]])}),
]


@pytest.mark.parametrize('op, params, location', NUMERIC,
                         ids=['%s%s' % (op, params) for op, params, _ in NUMERIC])
def test_numeric_gradient(op, params, location):
    variables = {n: mx.sym.Variable(n) for n in location}
    sym = _lookup(mx.sym, op)(**variables, **params)
    check_numeric_gradient(sym, location, dtype=np.float64, numeric_eps=1e-6, rtol=1e-4,
                           atol=1e-6)


def test_add_n_numeric_gradient():
    location = {'a': _away_from_zero(2, 3), 'b': _away_from_zero(2, 3),
                'c': _away_from_zero(2, 3)}
    variables = [mx.sym.Variable(n) for n in location]
    sym = mx.sym.add_n(*variables) * variables[0]
    check_numeric_gradient(sym, location, dtype=np.float64, numeric_eps=1e-6, rtol=1e-4)


def test_ctc_loss_numeric_gradient_and_label_errors():
    data = np.random.randn(4, 2, 3)
    label = np.array([[1, 2], [2, 0]], dtype=np.float64)
    sym = mx.sym.CTCLoss(mx.sym.Variable('data'), mx.sym.Variable('label'))
    check_numeric_gradient(sym, {'data': data, 'label': label}, grad_nodes=['data'],
                           dtype=np.float64, numeric_eps=1e-6, rtol=1e-4, atol=1e-6)
    with pytest.raises(MXNetError, match='CTCLoss.*label values'):
        mx.nd.CTCLoss(mx.nd.array(data), mx.nd.array([[1, 3], [2, 0]]))
    with pytest.raises(MXNetError, match='CTCLoss.*label must have shape'):
        mx.nd.CTCLoss(mx.nd.array(data), mx.nd.array([1, 2]))


def test_attach_grad_twice_then_backward():
    # the same array attached again (as loops in user scripts do) keeps one gradient
    x = mx.nd.array([[1.0, -2.0], [3.0, 4.0]])
    for scale in (1.0, 2.0):
        x.attach_grad()
        with mx.autograd.record():
            y = mx.nd.maximum(x, mx.nd.array([[1.0, 0.0], [0.0, 4.0]])) * scale
        y.backward()
        np.testing.assert_array_equal(x.grad.asnumpy(), [[scale, 0], [scale, scale]])


@pytest.mark.parametrize('index', range(len(META['helpers'])),
                         ids=lambda i: 'mx.%s.%s' % (META['helpers'][i]['module'],
                                                     META['helpers'][i]['fn']))
def test_python_helpers(index):
    case = META['helpers'][index]
    args = [mx.nd.arange(6).reshape((2, 3)) if a == 'arange6' else
            tuple(a) if isinstance(a, list) else a for a in case['args']]
    if case['module'] == 'nd':
        out = getattr(mx.nd, case['fn'])(*args, **case['kwargs'])
        outs = out if isinstance(out, list) else [out]
    else:
        sym = getattr(mx.sym, case['fn'])(*args, **case['kwargs'])
        assert sym.tojson() == case['json']
        outs = sym.bind(mx.cpu(), {}).forward()
    assert len(outs) == case['count']
    for k, out in enumerate(outs):
        _assert_same(out.asnumpy(), FIXTURE['h%d.%d' % (index, k)], 'output %d' % k)

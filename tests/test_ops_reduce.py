"""Reductions, orderings and indexing operators (ops/reduce.py, ops/indexing.py) against MXNet
1.9.1: forward through mx.nd and a bound symbol, gradients, infer_shape/infer_type and rejected
parameters from tests/fixtures/ops_reduce.npz (made by gen_ops_reduce.py), plus numeric
gradient checks."""
import numpy as np
import pytest

import mxtorch as mx
from mxtorch.base import MXNetError
from mxtorch.ops.registry import get_op
from mxtorch.test_utils import check_numeric_gradient

from conftest import OpCases

OPS = OpCases('ops_reduce.npz')
FIXTURE, _case_id, _arrays, _listed = OPS.data, OPS.case_id, OPS.arrays, OPS.listed
META, CASES = OPS.meta, OPS.cases
AUX = {'IdentityAttachKLSparseReg': ['moving_avg']}


def _assert_same(got, want, what):
    assert got.dtype == want.dtype, '%s: dtype %s, MXNet %s' % (what, got.dtype, want.dtype)
    assert got.shape == want.shape, '%s: shape %s, MXNet %s' % (what, got.shape, want.shape)
    rtol = {'float16': 1e-2, 'float32': 1e-5, 'float64': 1e-10}.get(want.dtype.name, 0)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol,
                               atol=rtol, equal_nan=True, err_msg=what)


def _symbol(op, params):
    names = [n for n in _input_names(op) if n not in AUX.get(op, [])]
    return getattr(mx.sym, op)(name='op', **{n: mx.sym.Variable(n) for n in names}, **params)


def _input_names(op):
    return [c['inputs'] for c in CASES if c['op'] == op][0]


ALL = range(len(CASES))


# ---------------------------------------------------------------------------------------------
# The fixture cases
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize('index', [i for i in ALL if _arrays(i, 'nd')], ids=_case_id)
def test_imperative_forward(index):
    case = CASES[index]
    inputs = _arrays(index, 'in')
    result = getattr(mx.nd, case['op'])(*[mx.nd.array(inputs[n], dtype=inputs[n].dtype)
                                          for n in case['inputs']], **case['params'])
    results = result if isinstance(result, list) else [result]
    expected = _listed(index, 'nd')
    assert len(results) == len(expected)
    for k, (got, want) in enumerate(zip(results, expected)):
        _assert_same(got.asnumpy(), want, 'output %d' % k)


@pytest.mark.parametrize('index', ALL, ids=_case_id)
def test_symbol_forward_backward(index):
    case = CASES[index]
    inputs = _arrays(index, 'in')
    sym = _symbol(case['op'], case['params'])
    assert sym.list_arguments() == case['args']
    assert sym.list_outputs() == case['outputs']
    args = {n: mx.nd.array(inputs[n], dtype=inputs[n].dtype) for n in case['args']}
    aux = {'op_' + n: mx.nd.array(inputs[n]) for n in AUX.get(case['op'], [])}
    grads = {n: mx.nd.zeros(inputs[n].shape, dtype=inputs[n].dtype)
             for n in case['args'] if inputs[n].dtype.kind == 'f'}
    differentiable = get_op(case['op']).differentiable
    if grads and not differentiable:
        # MXNet 1.9.1 registers no gradient for these: binding for one fails, as there
        with pytest.raises(MXNetError, match='non-differentiable'):
            sym.bind(mx.cpu(), args, args_grad=grads, aux_states=aux)
        grads = {}
    exe = sym.bind(mx.cpu(), args, args_grad=grads,
                   grad_req={n: 'write' if n in grads else 'null' for n in case['args']},
                   aux_states=aux)
    outputs = exe.forward(is_train=True)
    expected = _listed(index, 'out')
    assert len(outputs) == len(expected)
    for k, (got, want) in enumerate(zip(outputs, expected)):
        _assert_same(got.asnumpy(), want, 'output %d' % k)
    if not case['backward'] or not differentiable:
        return
    heads = None if case['loss'] else [mx.nd.array(h, dtype=h.dtype)
                                       for h in _listed(index, 'head')]
    exe.backward(heads)
    for name, want in _arrays(index, 'grad').items():
        _assert_same(exe.grad_dict[name].asnumpy(), want, 'gradient of %s' % name)
    for name, want in _arrays(index, 'aux').items():
        _assert_same(exe.aux_dict['op_' + name].asnumpy(), want, 'aux %s' % name)


@pytest.mark.parametrize('index', ALL, ids=_case_id)
def test_infer_shape_and_type(index):
    case = CASES[index]
    inputs = _arrays(index, 'in')
    sym = _symbol(case['op'], case['params'])
    shapes = sym.infer_shape(**{n: inputs[n].shape for n in case['args']})
    assert [[list(s) for s in group] for group in shapes] == case['infer_shape']
    types = sym.infer_type(**{n: inputs[n].dtype for n in case['args']})
    assert [[np.dtype(t).name for t in group] for group in types] == case['infer_type']


@pytest.mark.parametrize('case', META['partial_shapes'], ids=lambda c: c['op'])
def test_partial_infer_shape(case):
    sym = _symbol(case['op'], case['params'])
    shapes = sym.infer_shape_partial(**{k: tuple(v) for k, v in case['given'].items()})
    assert [[list(s) for s in group] for group in shapes] == case['infer_shape']


@pytest.mark.parametrize('case', META['errors'], ids=lambda c: '%s%s' % (c['op'], c['params']))
def test_rejected_like_mxnet(case):
    inputs = [mx.nd.zeros(tuple(s)) for s in case['shapes'].values()]
    with pytest.raises(MXNetError) as err:
        getattr(mx.nd, case['op'])(*inputs, **case['params'])
    message = str(err.value)
    assert case['op'] in message
    assert all(key in message for key in case['params']), message


# ---------------------------------------------------------------------------------------------
# Numeric gradients (float64, tiny shapes, no ties)
# ---------------------------------------------------------------------------------------------
def _distinct(*shape):
    """Values spaced 0.1 apart in random order: no ties, none near zero."""
    n = int(np.prod(shape))
    values = (np.random.permutation(n) + 1.0) / 10 * np.where(np.arange(n) % 2, 1, -1)
    return values.reshape(shape)


def _positive(*shape):
    return np.random.uniform(0.5, 1.5, shape)


NUMERIC = [
    ('sum', {'axis': 1}, {'data': _distinct(2, 3)}),
    ('sum', {'axis': 0, 'exclude': True, 'keepdims': True}, {'data': _distinct(2, 3, 2)}),
    ('mean', {}, {'data': _distinct(2, 3)}),
    ('prod', {'axis': (0, 2)}, {'data': _positive(2, 2, 2)}),
    ('nansum', {'axis': -1}, {'data': _distinct(2, 3)}),
    ('nanprod', {}, {'data': _positive(2, 3)}),
    ('max', {'axis': 1}, {'data': _distinct(2, 3)}),
    ('min', {'axis': (0, 1)}, {'data': _distinct(2, 3, 2)}),
    ('norm', {}, {'data': _distinct(2, 3)}),
    ('norm', {'ord': 1, 'axis': 1, 'keepdims': True}, {'data': _distinct(2, 3)}),
    ('topk', {'k': 2, 'ret_typ': 'value'}, {'data': _distinct(2, 4)}),
    ('topk', {'k': 2, 'ret_typ': 'both', 'axis': None}, {'data': _distinct(2, 3)}),
    ('sort', {'axis': 0, 'is_ascend': False}, {'data': _distinct(3, 2)}),
    ('pick', {'axis': 1}, {'data': _distinct(3, 4), 'index': np.array([0, 3, 3], 'int32')}),
    ('take', {'axis': 1}, {'a': _distinct(2, 3), 'indices': np.array([2, 0, 2], 'int32')}),
    ('gather_nd', {}, {'data': _distinct(2, 3),
                       'indices': np.array([[0, 1, 0], [2, 2, 2]], 'int32')}),
    ('scatter_nd', {'shape': (2, 3)}, {'data': _distinct(2),
                                       'indices': np.array([[0, 1], [2, 0]], 'int32')}),
]


@pytest.mark.parametrize('op, params, location', NUMERIC,
                         ids=['%s%s' % (op, params) for op, params, _ in NUMERIC])
def test_numeric_gradient(op, params, location):
    variables = {n: mx.sym.Variable(n) for n in location}
    sym = getattr(mx.sym, op)(**variables, **params)
    # as MXNet's check_numeric_gradient, NumPy inputs all become `dtype`: the float ones are
    # the gradient nodes
    nodes = [n for n, v in location.items() if v.dtype.kind == 'f']
    check_numeric_gradient(sym, location, dtype=np.float64, numeric_eps=1e-6, rtol=1e-4,
                           grad_nodes=nodes)


# ---------------------------------------------------------------------------------------------
# Behaviour spelled out
# ---------------------------------------------------------------------------------------------
def test_max_gradient_goes_in_full_to_every_tie():
    x = mx.nd.array([[1, 3, 3], [2, 2, 2]])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.max(x, axis=1)
    y.backward(mx.nd.array([1.0, 2.0]))
    np.testing.assert_array_equal(x.grad.asnumpy(), [[0, 1, 1], [2, 2, 2]])


def test_positional_params_follow_mxnet_order():
    x = mx.nd.array(np.arange(24.0).reshape(2, 3, 4))
    assert mx.nd.sum(x, 1, True).shape == (2, 1, 4)            # axis, keepdims
    assert mx.nd.norm(x, 1, 2).asnumpy()[0, 0] == 6            # ord, axis
    assert mx.nd.topk(x, 1, 2, 'value').shape == (2, 2, 4)     # axis, k, ret_typ
    assert mx.nd.take(x, mx.nd.array([0, 0]), 2).shape == (2, 3, 2)   # axis
    assert x.argmax(axis=0).shape == (3, 4) and x.sum().shape == (1,)


def test_index_ops_keep_dtype_and_accept_any_index_dtype():
    x = mx.nd.array([[1, 5, 2], [7, 0, 3]], dtype='float16')
    assert mx.nd.argmax(x, axis=1).dtype == np.float16
    assert mx.nd.argsort(x, dtype='int64').dtype == np.int64
    assert mx.nd.topk(x, k=2, ret_typ='both', dtype='int32')[1].dtype == np.int32
    for dtype in ('int32', 'int64', 'float16', 'float64'):
        index = mx.nd.array([2, 0], dtype=dtype)
        np.testing.assert_array_equal(mx.nd.pick(x, index).asnumpy(), [2, 7])
        np.testing.assert_array_equal(mx.nd.take(x, index).asnumpy(), [[7, 0, 3], [1, 5, 2]])


def test_value_dependent_errors():
    x = mx.nd.array(np.arange(6.0).reshape(2, 3))
    with pytest.raises(MXNetError, match='take.*out of bounds'):
        mx.nd.take(x, mx.nd.array([0, 2]), mode='raise')
    with pytest.raises(MXNetError, match='take.*out of bounds'):
        mx.nd.take(x, mx.nd.array([-1]), mode='raise')
    with pytest.raises(IndexError, match='gather_nd.*out of bounds'):      # as MXNet's
        mx.nd.gather_nd(x, mx.nd.array([[0, 1], [1, 3]]))
    with pytest.raises(MXNetError, match='pick.*axis'):
        mx.nd.pick(x, mx.nd.array([0, 1]), axis=None)
    with pytest.raises(MXNetError, match='pick.*index'):
        mx.nd.pick(x, mx.nd.array([0, 1, 1]))
    with pytest.raises(MXNetError, match='batch_take.*indices'):
        mx.nd.batch_take(x, mx.nd.array([0, 1, 1], dtype='int32'))


def test_bad_param_names_the_node_in_symbol_inference():
    sym = mx.sym.sum(mx.sym.Variable('data'), axis=3, name='total')
    with pytest.raises(MXNetError, match='total.*axis=3'):
        sym.infer_shape(data=(2, 3))
    with pytest.raises(MXNetError, match="ret_typ"):
        mx.sym.topk(mx.sym.Variable('data'), ret_typ='values')


def test_kl_sparse_reg_imperative_updates_moving_avg_in_backward():
    """Auxiliary statistics change in the backward (as MXNet's operators update them): a
    training forward alone leaves the moving average, a recorded one's backward moves it."""
    data = mx.nd.array([[0.2, 0.4], [0.6, 0.8]])
    avg = mx.nd.array([0.5, 0.5])
    with mx.autograd.train_mode():
        out = mx.nd.IdentityAttachKLSparseReg(data, avg, momentum=0.5)
    np.testing.assert_allclose(out.asnumpy(), data.asnumpy())
    np.testing.assert_allclose(avg.asnumpy(), [0.5, 0.5])
    data.attach_grad()
    with mx.autograd.record():
        out = mx.nd.IdentityAttachKLSparseReg(data, avg, momentum=0.5)
    np.testing.assert_allclose(avg.asnumpy(), [0.5, 0.5])
    out.backward()
    np.testing.assert_allclose(avg.asnumpy(), [0.45, 0.55])


@pytest.mark.parametrize('make', [
    lambda a: mx.sym.argmax(a, axis=1, keepdims=True), lambda a: mx.sym.argmin(a, axis=0),
    lambda a: mx.sym.argsort(a, axis=1), lambda a: mx.sym.topk(a, axis=1, k=2),
    lambda a: mx.sym.topk(a, axis=1, k=2, ret_typ='mask')])
def test_index_outputs_have_zero_gradient_whatever_the_head_gradient(make):
    """MXNet registers zero gradients for argmax/argmin/argsort and topk's indices/mask: the
    head gradient is never read (any shape is accepted) and the input's gradient is zeros."""
    ex = make(mx.sym.Variable('a')).simple_bind(mx.cpu(), a=(3, 4))
    ex.arg_dict['a'][:] = np.arange(12).reshape(3, 4)
    ex.grad_dict['a'][:] = 5
    ex.forward(is_train=True)
    ex.backward(mx.nd.ones((7, 7)))
    np.testing.assert_array_equal(ex.grad_dict['a'].asnumpy(), np.zeros((3, 4)))


def test_topk_values_gradient_still_checks_the_head_gradient():
    ex = mx.sym.topk(mx.sym.Variable('a'), axis=1, k=2, ret_typ='value').simple_bind(
        mx.cpu(), a=(3, 4))
    ex.forward(is_train=True)
    with pytest.raises(mx.MXNetError, match='head gradient'):
        ex.backward(mx.nd.ones((7, 7)))

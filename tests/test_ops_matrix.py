"""Layout and combination operators (ops/matrix.py) against MXNet 1.9.1: forward through mx.nd and
a bound symbol, gradients, output names and infer_shape from tests/fixtures/ops_matrix.npz (made
by gen_ops_matrix.py), partial shape inference, dtype rules, numeric gradients, the errors for
bad parameters, and the golden mixed_ops checkpoint whose graph uses these operators."""
import json

import numpy as np
import pytest

import mxtorch as mx
from mxtorch.base import MXNetError
from mxtorch.ops import get_op
from mxtorch.test_utils import check_numeric_gradient

from conftest import FIXTURES, assert_matches

FIXTURE = np.load(FIXTURES / 'ops_matrix.npz')
META = json.loads(str(FIXTURE['meta']))
CASES = {c['name']: c for c in META['cases']}
PARTIAL = {p['name']: p for p in META['partial']}
TOLERANCE = {'float16': 1e-2, 'float32': 1e-5, 'float64': 1e-9, 'int32': 0}

# MXNet's CPU kernels reject float16 dot/batch_dot (its GPU ones accept it); mxtorch computes it.
FLOAT16_DOT = ['dot_3d_2d_float16', 'batch_dot_tb_float16']
# Partial inference where mxtorch knows more than MXNet 1.9.1: Concat fills the one unknown size
# along `dim` from the output, stack gives its inputs the merged shape, tile passes partial shapes.
MORE_SPECIFIC = {'concat_back_one_unknown', 'stack_fwd', 'tile_fwd'}


def _params(raw):
    """JSON lists back to the tuples MXNet was given."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in raw.items()}


def _creator(namespace, op):
    return getattr(namespace, op, None) or getattr(namespace._internal, op)


def _symbol(op, params, n_inputs):
    variables = [mx.sym.Variable('in%d' % i) for i in range(n_inputs)]
    return _creator(mx.sym, op)(*variables, name='op', **_params(params))


def _inputs(case):
    return [FIXTURE['%s/in%d' % (case['name'], i)] for i in range(len(case['inputs']))]


def _assert_close(got, want, what):
    assert_matches(got, want, what, TOLERANCE[want.dtype.name])


def _names(predicate):
    return sorted(n for n, c in CASES.items() if predicate(c))


def _runnable(c):
    return 'error' not in c


def _bindable(c):
    """Zero-size outputs cannot be bound: in MXNet's classic shapes a 0 dim means unknown."""
    return _runnable(c) and all(all(c['out_shapes'][k]) for k in range(len(c['outputs'])))


# ---------------------------------------------------------------------------------------------
# The fixture cases
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize('name', _names(_runnable))
def test_against_mxnet(name):
    """mx.nd forward; then, where bindable, names, infer_shape, bound forward and gradients."""
    case = CASES[name]
    values = _inputs(case)
    arrays = [mx.nd.array(v, dtype=v.dtype) for v in values]
    result = _creator(mx.nd, case['op'])(*arrays, **_params(case['params']))
    results = result if isinstance(result, list) else [result]
    assert len(results) == len(case['outputs'])
    for k, got in enumerate(results):
        _assert_close(got.asnumpy(), FIXTURE['%s/out%d' % (name, k)], 'mx.nd output %d' % k)
    if _bindable(case):
        _check_symbolic(case, dict(zip(case['arguments'], values)))


def _check_symbolic(case, values):
    name = case['name']
    sym = _symbol(case['op'], case['params'], len(case['inputs']))
    assert sym.list_outputs() == case['outputs']
    assert sym.list_arguments() == case['arguments']
    _, out_shapes, _ = sym.infer_shape(**{k: v.shape for k, v in values.items()})
    assert [list(s) for s in out_shapes] == case['out_shapes']

    args = {k: mx.nd.array(v, dtype=v.dtype) for k, v in values.items()}
    grads = {k: mx.nd.zeros(values[k].shape, dtype=values[k].dtype) for k in case['has_grad']}
    exe = sym.bind(mx.cpu(), args, args_grad=grads,
                   grad_req={k: 'write' if k in grads else 'null' for k in args})
    outputs = exe.forward(is_train=True)
    for k, got in enumerate(outputs):
        _assert_close(got.asnumpy(), FIXTURE['%s/out%d' % (name, k)], 'bound output %d' % k)
    if not grads:
        return
    heads = [FIXTURE['%s/head%d' % (name, k)] for k in range(len(outputs))]
    exe.backward([mx.nd.array(h, dtype=h.dtype) for h in heads])
    for k in grads:
        _assert_close(exe.grad_dict[k].asnumpy(), FIXTURE['%s/grad/%s' % (name, k)],
                      'gradient of %s' % k)


@pytest.mark.parametrize('name', _names(lambda c: 'error' in c and c['name'] not in FLOAT16_DOT))
def test_rejected_like_mxnet(name):
    """What MXNet refuses raises an MXNetError naming the operator, imperatively and in a graph."""
    case = CASES[name]
    canonical = get_op(case['op']).name
    arrays = [mx.nd.array(v, dtype=v.dtype) for v in _inputs(case)]
    with pytest.raises(MXNetError, match=canonical):
        _creator(mx.nd, case['op'])(*arrays, **_params(case['params']))
    with pytest.raises(MXNetError, match=canonical):
        sym = _symbol(case['op'], case['params'], len(case['inputs']))
        values = dict(zip(sym.list_arguments(), _inputs(case)))
        _, out_types, _ = sym.infer_type(**{k: v.dtype for k, v in values.items()})
        sym.infer_shape(**{k: v.shape for k, v in values.items()})
        # a failure while computing is raised at the wait, as by MXNet's engine
        sym.bind(mx.cpu(), {k: mx.nd.array(v, dtype=v.dtype) for k, v in values.items()}) \
            .forward()[0].asnumpy()


@pytest.mark.parametrize('name', FLOAT16_DOT)
def test_float16_dot(name):
    case = CASES[name]
    lhs, rhs = _inputs(case)
    params = _params(case['params'])
    got = _creator(mx.nd, case['op'])(mx.nd.array(lhs, dtype='float16'),
                                      mx.nd.array(rhs, dtype='float16'), **params).asnumpy()
    a, b = lhs.astype(np.float64), rhs.astype(np.float64)
    want = np.dot(a, b) if case['op'] == 'dot' else np.matmul(a, np.swapaxes(b, -1, -2))
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)


# ---------------------------------------------------------------------------------------------
# Shape and type inference
# ---------------------------------------------------------------------------------------------
def _refines(ours, theirs):
    """ours agrees with MXNet's partial shape and knows at least as much."""
    if not theirs:
        return True
    return len(ours) == len(theirs) and all(t in (0, o) for o, t in zip(ours, theirs))


@pytest.mark.parametrize('name', sorted(PARTIAL))
def test_infer_shape_partial(name):
    entry = PARTIAL[name]
    sym = _symbol(entry['op'], entry['params'], entry['n_inputs'])
    given = {k: tuple(v) for k, v in entry['shapes'].items()}
    if entry['then_add'] is not None:
        index, x_shape = entry['then_add']
        sym = mx.sym.elemwise_add(sym[index], mx.sym.Variable('x'), name='plus')
        given['x'] = tuple(x_shape)
    args, outs, _ = sym.infer_shape_partial(**given)
    ours = dict(zip(sym.list_arguments(), [list(s) for s in args]))
    ours_out = [list(s) for s in outs]
    if name in MORE_SPECIFIC:
        assert (ours, ours_out) != (entry['arg_shapes'], entry['out_shapes'])
        for k, theirs in entry['arg_shapes'].items():
            assert _refines(ours[k], theirs), (k, ours[k], theirs)
    else:
        assert ours == entry['arg_shapes']
        assert ours_out == entry['out_shapes']


def test_concat_fills_one_unknown_size_from_output():
    a, b, x = mx.sym.Variable('a'), mx.sym.Variable('b'), mx.sym.Variable('x')
    sym = mx.sym.Concat(a, b, dim=1) + x
    args, outs, _ = sym.infer_shape(a=(2, 3), b=(2, 0), x=(2, 7))
    assert args == [(2, 3), (2, 4), (2, 7)] and outs == [(2, 7)]


def test_split_infers_input_from_outputs():
    x = mx.sym.Variable('x')
    parts = mx.sym.split(mx.sym.Variable('data'), num_outputs=3, axis=1, squeeze_axis=True)
    args, _, _ = (parts[1] + x).infer_shape(x=(2, 4))
    assert args == [(2, 3, 4), (2, 4)]


def test_type_rules():
    a, b, c = mx.sym.Variable('a'), mx.sym.Variable('b'), mx.sym.Variable('c')
    f32, i32, f16 = np.float32, np.int32, np.float16
    assert mx.sym.where(c, a, b).infer_type(c='int32', a='float32')[:2] == \
        ([i32, f32, f32], [f32])
    for op in (mx.sym.slice_like, mx.sym.broadcast_like, mx.sym.reshape_like):
        assert op(a, b).infer_type(a='float32', b='int32')[:2] == ([f32, i32], [f32])
    seq = mx.sym.SequenceMask(a, b, use_sequence_length=True)
    assert seq.infer_type(a='float32', b='int32')[:2] == ([f32, i32], [f32])
    assert seq.infer_type(a='float16')[:2] == ([f16, f16], [f16])
    with pytest.raises(MXNetError):
        mx.sym.Concat(a, b).infer_type(a='float32', b='float64')


# ---------------------------------------------------------------------------------------------
# Numeric gradients (float64, tiny shapes)
# ---------------------------------------------------------------------------------------------
def _rand(*shape):
    return np.random.normal(size=shape)


NUMERIC = [
    ('transpose', {'axes': (1, 2, 0)}, [_rand(2, 3, 2)]),
    ('SwapAxis', {'dim1': 0, 'dim2': 1}, [_rand(2, 3)]),
    ('expand_dims', {'axis': -1}, [_rand(2, 3)]),
    ('squeeze', {}, [_rand(2, 1, 3)]),
    ('Concat', {'dim': 1}, [_rand(2, 1), _rand(2, 2)]),
    ('stack', {'axis': 1}, [_rand(2, 2), _rand(2, 2)]),
    ('SliceChannel', {'num_outputs': 2, 'axis': 0}, [_rand(4, 2)]),
    ('SliceChannel', {'num_outputs': 2, 'axis': 1, 'squeeze_axis': True}, [_rand(2, 2, 2)]),
    ('_split_v2', {'indices': (0, 1), 'axis': 1}, [_rand(2, 3)]),
    ('slice', {'begin': (None, 2), 'end': (None, 0), 'step': (1, -1)}, [_rand(2, 3)]),
    ('slice_axis', {'axis': 1, 'begin': 1, 'end': None}, [_rand(2, 3)]),
    ('slice_like', {'axes': (0,)}, [_rand(3, 2), _rand(2, 2)]),
    ('tile', {'reps': (2, 1)}, [_rand(2, 2)]),
    ('repeat', {'repeats': 2, 'axis': 0}, [_rand(2, 2)]),
    ('reverse', {'axis': (0, 1)}, [_rand(2, 3)]),
    ('broadcast_to', {'shape': (2, 0, 3)}, [_rand(1, 2, 1)]),
    ('broadcast_axis', {'axis': (1,), 'size': (3,)}, [_rand(2, 1)]),
    ('broadcast_like', {}, [_rand(1, 2), _rand(3, 2)]),
    ('reshape_like', {}, [_rand(2, 3), _rand(3, 2)]),
    ('diag', {'k': 1}, [_rand(3)]),
    ('diag', {'axis1': 1, 'axis2': 0, 'k': -1}, [_rand(3, 2, 2)]),
    ('where', {}, [np.array([1., 0., 1.]), _rand(3, 2), _rand(3, 2)]),
    ('dot', {'transpose_a': True}, [_rand(3, 2), _rand(3, 2)]),
    ('dot', {'transpose_b': True}, [_rand(2, 2, 3), _rand(2, 3)]),
    ('batch_dot', {'transpose_a': True}, [_rand(2, 3, 2), _rand(2, 3, 2)]),
    ('SequenceMask', {'use_sequence_length': True, 'axis': 1}, [_rand(2, 3, 2),
                                                               np.array([1., 3.])]),
    ('SequenceLast', {'use_sequence_length': True}, [_rand(3, 2, 2), np.array([2., 1.])]),
    ('SequenceReverse', {'use_sequence_length': True}, [_rand(3, 2, 2), np.array([2., 3.])]),
]
# inputs that select rather than carry values: no gradient (a tiny step would change the choice)
NOT_DIFFERENTIABLE = {'where': ('in0',), 'slice_like': ('in1',), 'broadcast_like': ('in1',),
                      'reshape_like': ('in1',), 'SequenceMask': ('in1',),
                      'SequenceLast': ('in1',), 'SequenceReverse': ('in1',)}


@pytest.mark.parametrize('op, params, location', NUMERIC,
                         ids=['%s-%d' % (c[0], i) for i, c in enumerate(NUMERIC)])
def test_numeric_gradient(op, params, location):
    sym = _symbol(op, params, len(location))
    skip = NOT_DIFFERENTIABLE.get(op, ())
    nodes = [n for n in sym.list_arguments() if n not in skip]
    check_numeric_gradient(sym, location, dtype=np.float64, numeric_eps=1e-6, rtol=1e-4,
                           grad_nodes=nodes)


# ---------------------------------------------------------------------------------------------
# Specific behaviour and error messages
# ---------------------------------------------------------------------------------------------
def test_split_with_one_output_returns_an_array():
    out = mx.nd.split(mx.nd.ones((2, 4)), num_outputs=1)
    assert isinstance(out, mx.nd.NDArray) and out.shape == (2, 4)
    parts = mx.nd.split(mx.nd.ones((2, 4)), 2)
    assert isinstance(parts, list) and [p.shape for p in parts] == [(2, 2), (2, 2)]


def test_positional_parameters_follow_mxnet_order():
    x = mx.nd.array(np.arange(12).reshape(3, 4))
    assert mx.nd.slice_axis(x, 1, 1, 3).shape == (3, 2)
    assert mx.nd.slice(x, (0, 1), (2, None)).shape == (2, 3)
    assert mx.nd.SequenceMask(x, mx.nd.array([1, 2, 3, 4]), True, -1.0).asnumpy()[2, 0] == -1


def test_sequence_lengths_are_truncated_and_clipped():
    x = mx.nd.array(np.arange(6).reshape(3, 2))
    lengths = mx.nd.array([1.7, 2.2])
    assert mx.nd.SequenceMask(x, lengths, use_sequence_length=True).asnumpy().tolist() == \
        [[0, 1], [0, 3], [0, 0]]
    assert mx.nd.SequenceLast(x, lengths, use_sequence_length=True).asnumpy().tolist() == [0, 3]
    assert mx.nd.SequenceReverse(x, lengths, use_sequence_length=True).asnumpy().tolist() == \
        [[0, 3], [2, 1], [4, 5]]
    long = mx.nd.array([9, 9])
    assert mx.nd.SequenceLast(x, long, use_sequence_length=True).asnumpy().tolist() == [4, 5]


@pytest.mark.parametrize('call, message', [
    (lambda x: mx.nd.split(x, num_outputs=3), r'SliceChannel: axis 1 of size 4 .*num_outputs=3'),
    (lambda x: mx.nd.transpose(x, axes=(0, 0)), r'transpose: axes=\(0, 0\) must be a perm'),
    (lambda x: mx.nd.expand_dims(x, axis=5), r'expand_dims: axis=5 is out of range \[-3, 2\]'),
    (lambda x: mx.nd.slice_axis(x, axis=1, begin=3, end=1), r'slice_axis: begin=3, end=1'),
    (lambda x: mx.nd.dot(x, x), r'dot: shapes \(3,4\) and \(3,4\) do not match'),
    (lambda x: mx.nd.tile(x, reps=(0,)), r'tile: reps=\(0,\) must be positive'),
    (lambda x: mx.nd.Concat(x, mx.nd.ones((2, 3)), dim=1), r'Concat: input 1 of shape \(2,3\)'),
    (lambda x: mx.nd.dot(x.astype('int32'), x.astype('int32'), transpose_b=True),
     r'dot: inputs must be floating point'),
])
def test_error_messages(call, message):
    with pytest.raises(MXNetError, match=message):
        call(mx.nd.ones((3, 4)))


def test_graph_error_names_the_node():
    sym = mx.sym.split(mx.sym.Variable('data'), num_outputs=3, name='parts')
    with pytest.raises(MXNetError, match=r'parts.*SliceChannel: axis 1 of size 4'):
        sym.infer_shape(data=(2, 4))


# ---------------------------------------------------------------------------------------------
# Golden checkpoint: every intermediate value of mixed_ops (Concat, SliceChannel, expand_dims,
# transpose, where, dot, batch_dot, slice_axis among others)
# ---------------------------------------------------------------------------------------------
def test_mixed_ops_checkpoint_internals(golden):
    folder = golden / 'checkpoints'
    expected = np.load(folder / 'mixed_ops-expected.npz')
    sym = mx.sym.load(str(folder / 'mixed_ops-symbol.json'))
    params = mx.nd.load(str(folder / 'mixed_ops-0003.params'))
    args = {k[4:]: v for k, v in params.items() if k.startswith('arg:')}
    args.update({k[6:]: mx.nd.array(expected[k]) for k in expected.files
                 if k.startswith('input/')})
    internals = sym.get_internals()
    names = [n for n in internals.list_outputs() if 'internal/' + n in expected.files]
    assert len(names) > 70
    group = mx.sym.Group([internals[n] for n in names])
    exe = group.bind(mx.cpu(), {k: args[k] for k in group.list_arguments()})
    for name, out in zip(names, exe.forward(is_train=False)):
        np.testing.assert_allclose(out.asnumpy(), expected['internal/' + name], rtol=1e-4,
                                   atol=1e-5, err_msg=name)
    exe = sym.bind(mx.cpu(), {k: args[k] for k in sym.list_arguments()})
    for name, out in zip(sym.list_outputs(), exe.forward(is_train=False)):
        np.testing.assert_allclose(out.asnumpy(), expected['eval_out/' + name], rtol=1e-4,
                                   atol=1e-5, err_msg=name)

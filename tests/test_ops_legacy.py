"""Legacy and auxiliary operators (ops/legacy.py: Convolution_v1, Pooling_v1, BatchNorm_v1,
amp_cast, amp_multicast, im2col, col2im, cast_storage, fill_element_0index) and the optimizer
operators mp_lamb_update_phase1/2, multi_lars and preloaded_multi_*, against MXNet 1.9.1 through
tests/fixtures/ops_legacy.npz (made by gen_ops_legacy.py); a symbol JSON written by MXNet with
v1 and amp_cast nodes; numeric gradients and errors."""
import json

import numpy as np
import pytest

import mxtorch as mx
from mxtorch.base import MXNetError
from mxtorch.test_utils import check_numeric_gradient

from conftest import OpCases, assert_matches

OPS = OpCases('ops_legacy.npz')
CASES = OPS.cases
IMPERATIVE = OPS.meta['imperative']
MODEL = OPS.meta['model']
TOLERANCE = {'float16': 1e-2, 'float32': 1e-5, 'float64': 1e-9, 'int32': 0}


def _case_id(index):
    case = CASES[index]
    params = ','.join('%s=%s' % kv for kv in sorted(case['params'].items()))
    dtypes = ','.join(OPS.data['c%d.in.%s' % (index, n)].dtype.name for n in case['inputs'])
    return '%d-%s(%s)-%s-%s' % (index, case['op'], params, dtypes,
                                'train' if case['train'] else 'infer')


def _assert_close(got, want, what):
    assert_matches(got, want, what, TOLERANCE[want.dtype.name])


def _symbol(case):
    variables = [mx.sym.Variable(n) for n in case['inputs']]
    if case['variadic']:
        return getattr(mx.sym, case['op'])(*variables, name='op', **case['params'])
    return getattr(mx.sym, case['op'])(name='op', **dict(zip(case['inputs'], variables)),
                                       **case['params'])


def _nd(value):
    return mx.nd.array(value, dtype=value.dtype)


# ---------------------------------------------------------------------------------------------
# The fixture cases
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize('index', range(len(CASES)), ids=_case_id)
def test_symbol_forward_backward_aux(index):
    case = CASES[index]
    OPS.check_bound(index, _symbol(case), case['train'], _assert_close)


@pytest.mark.parametrize('index', range(len(CASES)), ids=_case_id)
def test_imperative_forward(index):
    case = CASES[index]
    inputs = OPS.arrays(index, 'in')
    arrays = [_nd(inputs[n]) for n in case['inputs']]
    aux = {n: _nd(v) for n, v in OPS.arrays(index, 'aux').items()}
    fn = getattr(mx.nd, case['op'])
    with mx.autograd.train_mode() if case['train'] else mx.autograd.predict_mode():
        if case['variadic']:
            result = fn(*arrays, **case['params'])
        else:
            result = fn(**dict(zip(case['inputs'], arrays)), **aux, **case['params'])
    results = result if isinstance(result, list) else [result]
    wanted = OPS.listed(index, 'out')[:len(case['outputs'])]
    assert len(results) == len(wanted)
    for k, want in enumerate(wanted):
        _assert_close(results[k].asnumpy(), want, 'output %d' % k)


@pytest.mark.parametrize('index', range(len(CASES)), ids=_case_id)
def test_json_names_and_infer_shape(index):
    case = CASES[index]
    params = {k: tuple(v) if isinstance(v, list) else v for k, v in case['params'].items()}
    sym = _symbol(dict(case, params=params))
    assert sym.tojson() == case['json']
    assert sym.list_arguments() == case['arguments']
    assert sym.list_outputs() == case['outputs']
    assert sym.list_auxiliary_states() == case['aux_names']
    args, outs, aux = sym.infer_shape(**{k: tuple(v) for k, v in case['given'].items()})
    assert [list(s) for s in args] == case['arg_shapes']
    assert [list(s) for s in outs] == case['out_shapes']
    assert [list(s) for s in aux] == case['aux_shapes']


def test_infer_type_of_amp_casts():
    data = mx.sym.Variable('data')
    cast = mx.sym.amp_cast(data, dtype='float16')
    assert cast.infer_type(data='float32')[1] == [np.float16]
    assert cast.infer_type(data='int32')[1] == [np.int32]
    multi = mx.sym.amp_multicast(mx.sym.Variable('a'), mx.sym.Variable('b'), num_outputs=2)
    assert multi.infer_type(a='float16', b='float32')[1] == [np.float32, np.float32]
    multi = mx.sym.amp_multicast(mx.sym.Variable('a'), mx.sym.Variable('b'), num_outputs=2,
                                 cast_narrow=True)
    assert multi.infer_type(a='float16', b='float32')[1] == [np.float16, np.float16]
    types = mx.sym.BatchNorm_v1(data).infer_type(data='float16')
    assert types[1] == [np.float16] and types[2] == [np.float32, np.float32]


# ---------------------------------------------------------------------------------------------
# Imperative-only operators: fill_element_0index and the optimizer updates
# ---------------------------------------------------------------------------------------------
def _imperative_id(index):
    return '%d-%s' % (index, IMPERATIVE[index]['op'])


@pytest.mark.parametrize('index', range(len(IMPERATIVE)), ids=_imperative_id)
def test_imperative_operator_matches_mxnet(index):
    case = IMPERATIVE[index]
    arrays = [_nd(OPS.data['i%d.in.%d' % (index, k)]) for k in range(case['num_inputs'])]
    fn = getattr(mx.nd, case['op'])
    for step in range(case['steps']):
        params = dict(case['params'])
        if case['op'] == 'mp_lamb_update_phase1':
            params['t'] = step + 1
        kwargs = {}
        if case['outs']:
            out = [arrays[k] for k in case['outs']]
            kwargs['out'] = out if len(out) > 1 else out[0]
        result = fn(*arrays, **params, **kwargs)
        results = result if isinstance(result, (list, tuple)) else [result]
        prefix = 'i%d.step%d.' % (index, step)
        for k, r in enumerate(results):
            _assert_close(r.asnumpy(), OPS.data[prefix + 'out.%d' % k], 'step %d out %d'
                          % (step, k))
        for k, a in enumerate(arrays):
            _assert_close(a.asnumpy(), OPS.data[prefix + 'in.%d' % k], 'step %d input %d'
                          % (step, k))


def test_preloaded_symbol_interface():
    s = mx.sym.preloaded_multi_mp_sgd_mom_update(
        *[mx.sym.var('x%d' % i) for i in range(10)], num_weights=2, momentum=0.9, name='u')
    assert s.list_outputs() == ['u_output0', 'u_output1']
    args, outs, _ = s.infer_shape(x0=(3,), x4=(5, 2))
    assert args[8] == (2,) and args[9] == (2,) and outs == [(3,), (5, 2)]
    types = s.infer_type(x0='float16', x4='float16')[0]
    assert types[:4] == [np.float16, np.float16, np.float32, np.float32]
    assert types[8:] == [np.float32, np.float32]


# ---------------------------------------------------------------------------------------------
# A model written by MXNet with v1 and amp_cast nodes
# ---------------------------------------------------------------------------------------------
def _model_executor():
    net = mx.sym.load_json(MODEL['json'])
    args = {n[len('model.arg.'):]: mx.nd.array(OPS.data[n]) for n in OPS.data.files
            if n.startswith('model.arg.')}
    aux = {n[len('model.aux.'):]: mx.nd.array(OPS.data[n]) for n in OPS.data.files
           if n.startswith('model.aux.')}
    grads = {n: mx.nd.zeros(v.shape) for n, v in args.items()}
    return net, net.bind(mx.cpu(), args, args_grad=grads, aux_states=aux), grads


def test_mxnet_json_with_legacy_and_amp_nodes_loads_and_matches():
    ops = [node['op'] for node in json.loads(MODEL['json'])['nodes']]
    for op in ('Convolution_v1', 'BatchNorm_v1', 'Pooling_v1', 'amp_cast'):
        assert op in ops
    net, exe, grads = _model_executor()
    assert net.list_arguments() == MODEL['arguments']
    assert net.list_outputs() == MODEL['outputs']
    assert net.list_auxiliary_states() == MODEL['aux_names']
    out = exe.forward(is_train=False)[0].asnumpy()
    np.testing.assert_allclose(out, OPS.data['model.infer.out'], rtol=2e-3, atol=2e-3)
    out = exe.forward(is_train=True)[0].asnumpy()
    np.testing.assert_allclose(out, OPS.data['model.train.out'], rtol=2e-3, atol=2e-3)
    exe.backward([mx.nd.array(OPS.data['model.train.head'])])
    for name, grad in grads.items():
        np.testing.assert_allclose(grad.asnumpy(), OPS.data['model.train.grad.' + name],
                                   rtol=1e-2, atol=1e-2, err_msg=name)
    # amp_cast nodes are dropped when saving, as MXNet's default, kept on request
    assert 'amp_cast' not in net.tojson() and 'amp_cast' in net.tojson(remove_amp_cast=False)


# ---------------------------------------------------------------------------------------------
# im2col / col2im beyond what MXNet's CPU kernels run: 1-D and 3-D, adjointness, gradients
# ---------------------------------------------------------------------------------------------
def test_im2col_col2im_1d_is_the_2d_result_with_a_unit_height():
    x = np.random.randn(2, 3, 9)
    cols = mx.nd.im2col(mx.nd.array(x), kernel=(3,), stride=(2,), pad=(1,), dilate=(2,))
    cols2 = mx.nd.im2col(mx.nd.array(x[:, :, None]), kernel=(1, 3), stride=(1, 2), pad=(0, 1),
                         dilate=(1, 2))
    np.testing.assert_array_equal(cols.asnumpy(), cols2.asnumpy())
    back = mx.nd.col2im(cols, output_size=(9,), kernel=(3,), stride=(2,), pad=(1,), dilate=(2,))
    back2 = mx.nd.col2im(cols2, output_size=(1, 9), kernel=(1, 3), stride=(1, 2), pad=(0, 1),
                         dilate=(1, 2))
    np.testing.assert_allclose(back.asnumpy(), back2.asnumpy()[:, :, 0], rtol=1e-6)


def test_col2im_is_the_adjoint_of_im2col_in_3d():
    geometry = dict(kernel=(2, 2, 3), stride=(2, 1, 1), dilate=(1, 1, 2), pad=(1, 0, 1))
    x = np.random.randn(1, 2, 4, 3, 5)
    cols = mx.nd.im2col(mx.nd.array(x), **geometry)
    assert cols.shape == (1, 24, 3 * 2 * 3)
    assert mx.sym.im2col(mx.sym.var('d'), **geometry).infer_shape(d=x.shape)[1] == [cols.shape]
    y = np.random.randn(*cols.shape)
    back = mx.nd.col2im(mx.nd.array(y), output_size=(4, 3, 5), **geometry).asnumpy()
    np.testing.assert_allclose((cols.asnumpy() * y).sum(), (x * back).sum(), rtol=1e-4)


NUMERIC = [
    ('im2col', {'data': (1, 2, 4, 3)}, {'kernel': (2, 2), 'stride': (2, 1), 'pad': (1, 0)}),
    ('im2col', {'data': (1, 1, 3, 2, 4)}, {'kernel': (2, 1, 2), 'dilate': (1, 1, 2)}),
    ('col2im', {'data': (1, 8, 6)}, {'output_size': (4, 3), 'kernel': (2, 2), 'stride': (2, 1),
                                     'pad': (1, 0)}),
    ('amp_cast', {'data': (2, 3)}, {'dtype': 'float32'}),
    ('Pooling_v1', {'data': (1, 2, 5, 5)}, {'kernel': (2, 2), 'stride': (2, 2),
                                            'pool_type': 'avg', 'pooling_convention': 'full'}),
    ('Convolution_v1', {'data': (1, 2, 4, 4), 'weight': (2, 2, 2, 2), 'bias': (2,)},
     {'kernel': (2, 2), 'num_filter': 2, 'stride': (2, 1)}),
]


@pytest.mark.parametrize('op,inputs,params', NUMERIC, ids=lambda x: str(x))
def test_numeric_gradient(op, inputs, params):
    location = {n: np.random.randn(*s) for n, s in inputs.items()}
    sym = getattr(mx.sym, op)(name='op', **{n: mx.sym.var(n) for n in inputs}, **params)
    check_numeric_gradient(sym, location, dtype=np.float64, numeric_eps=1e-6, rtol=1e-4,
                           atol=1e-8)


# ---------------------------------------------------------------------------------------------
# cast_storage, fill_element_0index, errors
# ---------------------------------------------------------------------------------------------
def test_cast_storage_default_copies_and_sparse_casts():
    x = mx.nd.array(np.random.randn(3, 4))
    y = mx.nd.cast_storage(x, stype='default')
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy())
    y[:] = 0
    assert x.asnumpy().any()
    for stype in ('csr', 'row_sparse'):
        z = mx.nd.cast_storage(x, stype=stype)
        assert z.stype == stype
        np.testing.assert_array_equal(z.asnumpy(), x.asnumpy())
        shapes = mx.sym.cast_storage(mx.sym.var('x'), stype=stype).infer_shape(x=(3, 4))
        assert shapes[1] == [(3, 4)]


def test_fill_element_0index_symbol():
    sym = mx.sym.fill_element_0index(mx.sym.var('lhs'), mx.sym.var('mhs'), mx.sym.var('rhs'))
    assert sym.infer_shape(lhs=(3, 4))[0] == [(3, 4), (3,), (3,)]
    lhs = np.arange(12.0).reshape(3, 4)
    out = sym.eval(lhs=mx.nd.array(lhs), mhs=mx.nd.array([-1, -2, -3]),
                   rhs=mx.nd.array([3, 0, 1]))[0].asnumpy()
    lhs[[0, 1, 2], [3, 0, 1]] = [-1, -2, -3]
    np.testing.assert_array_equal(out, lhs)


ERRORS = [
    ('im2col', {'data': (1, 2, 5)}, {'kernel': (2, 2)}, r'kernel=\(2, 2\) expects 4-D data'),
    ('im2col', {'data': (1, 2, 3, 3)}, {'kernel': (4, 4)}, 'exceeds the padded input'),
    ('im2col', {'data': (1, 2, 5, 5)}, {'kernel': (2, 2), 'stride': (1,)},
     'one entry per kernel dim'),
    ('col2im', {'data': (1, 7, 4)}, {'kernel': (2, 2), 'output_size': (3, 3)},
     'multiple of prod'),
    ('Pooling_v1', {'data': (1, 2, 3, 3)}, {'kernel': (4, 4)}, 'exceeds the padded input'),
    ('Convolution_v1', {'data': (1, 3, 5, 5), 'weight': (4, 2, 3, 3), 'bias': (4,)},
     {'kernel': (3, 3), 'num_filter': 4, 'num_group': 2}, '3 input channels'),
]


@pytest.mark.parametrize('op,shapes,params,message', ERRORS, ids=lambda x: str(x))
def test_bad_params_raise(op, shapes, params, message):
    with pytest.raises(MXNetError, match=message):
        getattr(mx.nd, op)(**{n: mx.nd.zeros(s) for n, s in shapes.items()}, **params)
    sym = getattr(mx.sym, op)(**{n: mx.sym.var(n) for n in shapes}, **params)
    with pytest.raises(MXNetError, match=message):
        sym.infer_shape(**shapes)


def test_pooling_v1_rejects_new_params():
    with pytest.raises(MXNetError):
        mx.sym.Pooling_v1(mx.sym.var('d'), kernel=(2, 2), pool_type='lp')
    with pytest.raises(MXNetError):
        mx.sym.BatchNorm_v1(mx.sym.var('d'), axis=2)

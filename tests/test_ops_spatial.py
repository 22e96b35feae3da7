"""Spatial, normalisation and LeakyReLU operators (ops/conv.py, ops/norm.py, ops/activation.py)
against MXNet 1.9.1: forward through mx.nd and a bound symbol, gradients and infer_shape from
tests/fixtures/ops_spatial.npz (made by gen_ops_spatial.py), channel-last layouts against the
channel-first references, numeric gradients, and the errors for bad parameters."""
import numpy as np
import pytest

import mxtorch as mx
from mxtorch.base import MXNetError
from mxtorch.test_utils import check_numeric_gradient

from conftest import OpCases, assert_matches

OPS = OpCases('ops_spatial.npz')
FIXTURE, _case_id, _arrays, _listed = OPS.data, OPS.case_id, OPS.arrays, OPS.listed
CASES = OPS.cases
VARIADIC = {'UpSampling', 'Crop'}
TOLERANCE = {'float16': 1e-2, 'float32': 1e-5, 'float64': 1e-9}
# MXNet evaluates these in float32 math even for float64 data
FLOAT32_MATH = {'LeakyReLU'}


def _assert_close(got, want, what, op=None):
    assert_matches(got, want, what, TOLERANCE['float32' if op in FLOAT32_MATH else want.dtype.name])


def _symbol(op, names, params):
    variables = [mx.sym.Variable(n) for n in names]
    if op in VARIADIC:
        return getattr(mx.sym, op)(*variables, name='op', **params)
    return getattr(mx.sym, op)(name='op', **dict(zip(names, variables)), **params)


def _nd_call(op, arrays, params):
    """mx.nd.<op> with the arrays positional (variadic ops) or by input name."""
    if op in VARIADIC:
        return getattr(mx.nd, op)(*arrays.values(), **params)
    return getattr(mx.nd, op)(**arrays, **params)


RUN = [i for i, c in enumerate(CASES) if not c['infer_only']]
TRAIN = [i for i in RUN if CASES[i]['backward']]


# ---------------------------------------------------------------------------------------------
# The fixture cases
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize('index', RUN, ids=_case_id)
def test_imperative_forward(index):
    case = CASES[index]
    inputs = {n: mx.nd.array(v, dtype=v.dtype) for n, v in _arrays(index, 'in').items()}
    inputs = {n: inputs[n] for n in case['inputs']}
    with mx.autograd.train_mode() if case['train'] else mx.autograd.predict_mode():
        result = _nd_call(case['op'], inputs, case['params'])
    results = result if isinstance(result, list) else [result]
    for k, want in enumerate(_listed(index, 'out')):
        _assert_close(results[k].asnumpy(), want, 'output %d' % k, case['op'])


@pytest.mark.parametrize('index', RUN, ids=_case_id)
def test_symbol_forward_backward(index):
    case = CASES[index]
    inputs = _arrays(index, 'in')
    sym = _symbol(case['op'], case['inputs'], case['params'])
    args = {n: mx.nd.array(v, dtype=v.dtype) for n, v in inputs.items()}
    grads = {n: mx.nd.zeros(v.shape, dtype=v.dtype) for n, v in inputs.items()}
    exe = sym.bind(mx.cpu(), args, args_grad=grads)
    outputs = exe.forward(is_train=case['train'])
    for k, want in enumerate(_listed(index, 'out')):
        _assert_close(outputs[k].asnumpy(), want, 'output %d' % k, case['op'])
    if not case['backward']:
        return
    exe.backward([mx.nd.array(h) for h in _listed(index, 'head')])
    for name, want in _arrays(index, 'grad').items():
        _assert_close(exe.grad_dict[name].asnumpy(), want, 'gradient of %s' % name)


@pytest.mark.parametrize('index', range(len(CASES)), ids=_case_id)
def test_json_matches_mxnet(index):
    """Byte-exact JSON: attributes, and the hidden outputs MXNet counts in node_row_ptr."""
    case = CASES[index]
    params = {k: tuple(v) if isinstance(v, list) else v for k, v in case['params'].items()}
    assert _symbol(case['op'], case['inputs'], params).tojson() == case['json']


@pytest.mark.parametrize('index', range(len(CASES)), ids=_case_id)
def test_infer_shape(index):
    case = CASES[index]
    sym = _symbol(case['op'], case['inputs'], case['params'])
    assert sym.list_arguments() == case['arguments']
    assert sym.list_outputs() == case['outputs']
    args, outs, aux = sym.infer_shape(**{k: tuple(v) for k, v in case['given'].items()})
    assert [list(s) for s in args] == case['arg_shapes']
    assert [list(s) for s in outs] == case['out_shapes']
    assert aux == []


# ---------------------------------------------------------------------------------------------
# Channel-last layouts give the channel-first results, transposed
# ---------------------------------------------------------------------------------------------
def _last(x):
    return np.moveaxis(x, 1, -1)


def _fixture_index(op, **params):
    return next(i for i in TRAIN if CASES[i]['op'] == op
                and all(CASES[i]['params'].get(k) == v for k, v in params.items()))


CHANNEL_LAST = [
    ('Convolution', {'kernel': [3, 3], 'num_group': 2}, 'NHWC'),
    ('Convolution', {'kernel': [3, 3], 'stride': [2, 2]}, 'NHWC'),
    ('Convolution', {'kernel': [2, 3, 2]}, 'NDHWC'),
    ('Deconvolution', {'adj': [1, 1]}, 'NHWC'),
    ('Pooling', {'pool_type': 'avg', 'count_include_pad': False, 'pooling_convention': 'full'},
     'NHWC'),
    ('Pooling', {'pool_type': 'lp', 'p_value': 3}, 'NWC'),
]


@pytest.mark.parametrize('op,params,layout', CHANNEL_LAST, ids=lambda x: str(x))
def test_channel_last_layouts(op, params, layout):
    index = _fixture_index(op, **params)
    case = CASES[index]
    inputs = _arrays(index, 'in')
    moved = {n: _last(v) if v.ndim > 1 else v for n, v in inputs.items()}
    sym = _symbol(op, case['inputs'], dict(case['params'], layout=layout))
    grads = {n: mx.nd.zeros(v.shape) for n, v in moved.items()}
    exe = sym.bind(mx.cpu(), {n: mx.nd.array(v) for n, v in moved.items()}, args_grad=grads)
    out = exe.forward(is_train=True)[0]
    _assert_close(out.asnumpy(), _last(_listed(index, 'out')[0]), 'output')
    exe.backward([mx.nd.array(_last(_listed(index, 'head')[0]))])
    for name, want in _arrays(index, 'grad').items():
        want = _last(want) if want.ndim > 1 else want
        _assert_close(exe.grad_dict[name].asnumpy(), want, 'gradient of %s' % name)


def test_deconvolution_target_shape_is_pad_and_adj():
    """target_shape (8, 7) from 4x4 with kernel 4, stride 2: the full size is 10, so pad (1, 2)
    and adj (0, 1) (MXNet's CPU kernel cannot run it; its shapes are in the fixture)."""
    data = mx.nd.array(np.random.randn(1, 2, 4, 4))
    weight = mx.nd.array(np.random.randn(2, 2, 4, 4))
    got = mx.nd.Deconvolution(data, weight, kernel=(4, 4), stride=(2, 2), target_shape=(8, 7),
                              num_filter=2)
    want = mx.nd.Deconvolution(data, weight, kernel=(4, 4), stride=(2, 2), pad=(1, 2),
                               adj=(0, 1), num_filter=2)
    assert got.shape == (1, 2, 8, 7)
    np.testing.assert_array_equal(got.asnumpy(), want.asnumpy())


# ---------------------------------------------------------------------------------------------
# Numeric gradients (float64, tiny shapes)
# ---------------------------------------------------------------------------------------------
AFFINE = np.array([[0.9, 0.13, 0.05, -0.1, 0.8, 0.07]])   # a 2x3 map, away from pixel centres
NUMERIC = [
    ('Convolution', {'data': (1, 2, 4, 4), 'weight': (2, 1, 2, 2), 'bias': (2,)},
     {'kernel': (2, 2), 'num_filter': 2, 'num_group': 2, 'stride': (2, 1), 'pad': (1, 0),
      'dilate': (1, 2)}),
    ('Convolution', {'data': (1, 1, 5), 'weight': (2, 1, 3), 'bias': (2,)},
     {'kernel': (3,), 'num_filter': 2, 'layout': 'NCW'}),
    ('Deconvolution', {'data': (1, 2, 2, 3), 'weight': (2, 1, 3, 3), 'bias': (2,)},
     {'kernel': (3, 3), 'num_filter': 2, 'num_group': 2, 'stride': (2, 2), 'pad': (1, 1),
      'adj': (1, 0), 'no_bias': False}),
    ('Pooling', {'data': (1, 2, 5, 5)}, {'kernel': (3, 3), 'stride': (2, 2), 'pad': (2, 1)}),
    ('Pooling', {'data': (1, 2, 5, 5)}, {'kernel': (2, 2), 'stride': (2, 2), 'pad': (1, 1),
                                         'pool_type': 'avg', 'pooling_convention': 'full',
                                         'count_include_pad': False}),
    ('Pooling', {'data': (1, 1, 4, 3)}, {'kernel': (2, 2), 'pool_type': 'lp', 'p_value': 2}),
    ('Pooling', {'data': (1, 2, 2, 2, 3)}, {'global_pool': True, 'pool_type': 'sum'}),
    ('UpSampling', {'arg0': (1, 1, 2, 2), 'arg1': (1, 2, 1, 1)},
     {'scale': 2, 'sample_type': 'nearest'}),
    ('UpSampling', {'data': (1, 2, 2, 2), 'weight': (2, 1, 4, 4)},
     {'scale': 2, 'sample_type': 'bilinear', 'num_filter': 2}),
    ('LRN', {'data': (1, 4, 2, 2)}, {'nsize': 3, 'alpha': 0.5}),
    ('ROIPooling', {'data': (1, 2, 5, 5), 'rois': np.array([[0, 0, 0, 3, 4], [0, 1.2, 2.4, 4, 4]])},
     {'pooled_size': (2, 2), 'spatial_scale': 1.0}),
    ('Crop', {'data': (1, 2, 4, 5), 'crop_like': (1, 1, 2, 3)}, {'offset': (1, 1)}),
    ('Pad', {'data': (1, 1, 3, 3)}, {'mode': 'reflect', 'pad_width': (0, 0, 0, 0, 2, 1, 1, 2)}),
    ('Pad', {'data': (1, 1, 2, 2, 2)}, {'mode': 'edge',
                                       'pad_width': (0, 0, 0, 0, 1, 0, 0, 1, 1, 1)}),
    ('depth_to_space', {'data': (1, 4, 2, 1)}, {'block_size': 2}),
    ('space_to_depth', {'data': (1, 1, 2, 4)}, {'block_size': 2}),
    ('LayerNorm', {'data': (2, 3, 2), 'gamma': (3,), 'beta': (3,)}, {'axis': 1}),
    ('InstanceNorm', {'data': (2, 2, 3), 'gamma': (2,), 'beta': (2,)}, {}),
    ('GroupNorm', {'data': (2, 4, 2), 'gamma': (2,), 'beta': (2,)}, {'num_groups': 2}),
    ('L2Normalization', {'data': (2, 2, 3)}, {'mode': 'spatial'}),
    ('L2Normalization', {'data': (2, 3)}, {}),
    ('LeakyReLU', {'data': (2, 3, 2), 'gamma': (3,)}, {'act_type': 'prelu'}),
    ('LeakyReLU', {'data': (2, 3)}, {'act_type': 'elu', 'slope': 0.5}),
    ('LeakyReLU', {'data': (2, 3)}, {'act_type': 'gelu'}),
    ('LeakyReLU', {'data': (2, 3)}, {'slope': 0.2}),
    ('GridGenerator', {'data': AFFINE}, {'transform_type': 'affine', 'target_shape': (2, 3)}),
    ('GridGenerator', {'data': (1, 2, 2, 3)}, {'transform_type': 'warp'}),
    ('BilinearSampler', {'data': (1, 2, 3, 4), 'grid': np.linspace(-0.93, 1.1, 12).reshape(
        1, 2, 2, 3)}, {}),
    ('SpatialTransformer', {'data': (1, 2, 3, 4), 'loc': AFFINE},
     {'target_shape': (2, 2), 'transform_type': 'affine', 'sampler_type': 'bilinear'}),
    ('Correlation', {'data1': (1, 2, 4, 4), 'data2': (1, 2, 4, 4)},
     {'kernel_size': 3, 'max_displacement': 1, 'stride1': 2, 'pad_size': 1}),
    ('Correlation', {'data1': (1, 1, 3, 3), 'data2': (1, 1, 3, 3)},
     {'pad_size': 1, 'is_multiply': False}),
]


def _away_from_kinks(shape):
    """Random values at least 0.05 from zero and from each other (max/relu kinks)."""
    n = int(np.prod(shape))
    spaced = (np.random.permutation(n) + 1) * 0.1 * np.where(np.random.rand(n) < 0.5, -1, 1)
    return (spaced + np.random.uniform(-0.03, 0.03, n)).reshape(shape)


@pytest.mark.parametrize('op,inputs,params', NUMERIC, ids=lambda x: str(x))
def test_numeric_gradient(op, inputs, params):
    """inputs: {name: shape (random values) or the values themselves}."""
    location = {n: v if isinstance(v, np.ndarray) else _away_from_kinks(v)
                for n, v in inputs.items()}
    grad_nodes = ['data'] if op == 'ROIPooling' else None     # rois are indices
    sym = _symbol(op, list(inputs), params)
    check_numeric_gradient(sym, location, grad_nodes=grad_nodes, dtype=np.float64,
                           numeric_eps=1e-6, rtol=1e-4, atol=1e-8)


# ---------------------------------------------------------------------------------------------
# rrelu, hints, names
# ---------------------------------------------------------------------------------------------
def test_rrelu_training_draws_slopes_per_element():
    x = np.random.randn(4, 50)
    sym = mx.sym.LeakyReLU(mx.sym.Variable('data'), act_type='rrelu', lower_bound=0.2,
                           upper_bound=0.5, name='r')
    assert sym.list_outputs() == ['r_output', 'r_mask']
    grad = mx.nd.zeros(x.shape)
    exe = sym.bind(mx.cpu(), {'data': mx.nd.array(x)}, args_grad={'data': grad})
    out, mask = (o.asnumpy() for o in exe.forward(is_train=True))
    assert mask.min() >= 0.2 and mask.max() <= 0.5 and mask.std() > 0.05
    np.testing.assert_allclose(out, np.where(x > 0, x, x * mask).astype(np.float32), rtol=1e-6)
    head = np.random.randn(*x.shape)
    exe.backward([mx.nd.array(head), mx.nd.zeros(x.shape)])
    np.testing.assert_allclose(grad.asnumpy(), np.where(x > 0, head, head * mask), rtol=1e-5)
    out, mask = (o.asnumpy() for o in exe.forward(is_train=False))
    np.testing.assert_allclose(mask, np.full(x.shape, 0.35), rtol=1e-6)


def test_init_hints_and_input_names():
    data = mx.sym.Variable('data')
    prelu = mx.sym.LeakyReLU(data, act_type='prelu', name='p')
    assert prelu.list_arguments() == ['data', 'p_gamma']
    assert prelu.attr_dict()['p_gamma']['__init__'] == '["Constant", {"value": 0.25}]'
    up = mx.sym.UpSampling(data, scale=2, sample_type='bilinear', num_filter=3, name='up')
    assert up.list_arguments() == ['data', 'up_weight']
    assert up.attr_dict()['up_weight']['__init__'] == '["bilinear", {}]'
    assert up.attr_dict()['up']['num_args'] == '1'
    crop = mx.sym.Crop(data, mx.sym.Variable('like'), name='c')
    assert crop.attr_dict()['c']['num_args'] == '2'
    deconv = mx.sym.Deconvolution(data, kernel=(2, 2), num_filter=3, name='d')
    assert deconv.list_arguments() == ['data', 'd_weight']
    norm = mx.sym.LayerNorm(data, output_mean_var=True, name='ln')
    assert norm.list_outputs() == ['ln_output', 'ln_mean', 'ln_std']
    assert mx.sym.GroupNorm(data, name='gn').list_outputs() == ['gn_output']


def test_positional_params_follow_mxnet_order():
    x = mx.nd.array(np.random.randn(1, 2, 5, 5))
    w = mx.nd.array(np.random.randn(3, 2, 3, 3))
    b = mx.nd.zeros((3,))
    by_name = mx.nd.Convolution(x, w, b, kernel=(3, 3), stride=(2, 2), num_filter=3)
    positional = mx.nd.Convolution(x, w, b, (3, 3), (2, 2), (), (), 3)
    np.testing.assert_array_equal(by_name.asnumpy(), positional.asnumpy())
    assert mx.nd.pad(x, 'edge', (0, 0, 0, 0, 1, 1, 1, 1)).shape == (1, 2, 7, 7)


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------
ERRORS = [
    ('Convolution', {'data': (1, 2, 5, 5), 'weight': (3, 2, 3), 'bias': (3,)},
     {'kernel': (3,), 'num_filter': 3}, r'Convolution: kernel=\(3,\) expects 3-D data'),
    ('Convolution', {'data': (1, 2, 5, 5), 'weight': (3, 2, 3, 3), 'bias': (3,)},
     {'kernel': (3, 3), 'stride': (2,), 'num_filter': 3}, r'stride=\(2,\) must have one entry'),
    ('Convolution', {'data': (1, 2, 5, 5), 'weight': (3, 2, 3, 3), 'bias': (3,)},
     {'kernel': (3, 3), 'num_filter': 3, 'num_group': 2}, 'num_filter=3 must be a multiple'),
    ('Convolution', {'data': (1, 3, 5, 5), 'weight': (4, 2, 3, 3), 'bias': (4,)},
     {'kernel': (3, 3), 'num_filter': 4, 'num_group': 2}, '3 input channels'),
    ('Convolution', {'data': (1, 2, 2, 5), 'weight': (3, 2, 3, 3), 'bias': (3,)},
     {'kernel': (3, 3), 'num_filter': 3}, 'exceeds the padded input'),
    ('Convolution', {'data': (1, 2, 5, 5), 'weight': (3, 2, 3, 3), 'bias': (3,)},
     {'kernel': (3, 3), 'num_filter': 3, 'layout': 'NCW'}, 'layout=NCW expects 3-D data'),
    ('Deconvolution', {'data': (1, 2, 5, 5), 'weight': (2, 3, 3, 3)},
     {'kernel': (3, 3), 'num_filter': 3, 'stride': (2, 2), 'adj': (2, 2)},
     r'adj=\(2, 2\) must be smaller than stride'),
    ('Deconvolution', {'data': (1, 2, 5, 5), 'weight': (2, 3, 3, 3)},
     {'kernel': (3, 3), 'num_filter': 3, 'target_shape': (12, 12)}, 'target_shape.*too big'),
    ('Pooling', {'data': (1, 2, 5, 5)}, {'kernel': (2,)}, r'kernel=\(2,\) expects 3-D data'),
    ('Pooling', {'data': (1, 2, 5, 5)}, {}, 'kernel must have 1, 2 or 3 entries'),
    ('Pooling', {'data': (1, 2, 5, 5)}, {'kernel': (2, 2), 'pad': (2, 2)},
     r'pad=\(2, 2\) must be smaller than kernel'),
    ('Pooling', {'data': (1, 2, 3, 3)}, {'kernel': (4, 4)}, 'exceeds the padded input'),
    ('Pooling', {'data': (1, 2, 4, 4)}, {'kernel': (2, 2), 'pool_type': 'lp'},
     'p_value in 1, 2, 3'),
    ('Pooling', {'data': (1, 2)}, {'global_pool': True}, 'must be 3-D, 4-D or 5-D'),
    ('UpSampling', {'arg0': (1, 2, 4), }, {'scale': 2, 'sample_type': 'nearest'}, '4-D'),
    ('UpSampling', {'arg0': (1, 2, 2, 2), 'arg1': (1, 3, 2, 2)},
     {'scale': 2, 'sample_type': 'nearest', 'multi_input_mode': 'sum'}, 'equal channels'),
    ('LRN', {'data': (1, 2, 4)}, {'nsize': 3}, 'LRN: data must be 4-D'),
    ('ROIPooling', {'data': (1, 2, 4, 4), 'rois': (2, 4)},
     {'pooled_size': (2, 2), 'spatial_scale': 1.0}, r'rois must be 2-D \(num_rois, 5\)'),
    ('ROIPooling', {'data': (1, 2, 4, 4), 'rois': (2, 5)},
     {'pooled_size': (2,), 'spatial_scale': 1.0}, 'pooled_size must have 2 entries'),
    ('Crop', {'data': (1, 2, 4, 4)}, {'h_w': (3, 3), 'offset': (2, 0)}, 'does not fit'),
    ('Crop', {'data': (1, 2, 4, 4)}, {}, 'h_w must be 2 positive sizes'),
    ('Pad', {'data': (1, 2, 4)}, {'mode': 'constant', 'pad_width': (0, 0, 0, 0, 1, 1)},
     'Pad: data must be 4-D or 5-D'),
    ('Pad', {'data': (1, 2, 4, 4)}, {'mode': 'constant', 'pad_width': (0, 1, 0, 0, 1, 1, 1, 1)},
     'first 4 entries of pad_width must be 0'),
    ('Pad', {'data': (1, 2, 4, 4)}, {'mode': 'reflect', 'pad_width': (0, 0, 0, 0, 4, 0, 0, 0)},
     'mode=reflect needs pads smaller'),
    ('depth_to_space', {'data': (1, 6, 2, 2)}, {'block_size': 2}, 'multiple of block_size'),
    ('space_to_depth', {'data': (1, 1, 3, 4)}, {'block_size': 2}, 'multiples of block_size'),
    ('LayerNorm', {'data': (2, 3), 'gamma': (3,), 'beta': (3,)}, {'axis': 2},
     'axis=2 is out of range'),
    ('InstanceNorm', {'data': (2, 3), 'gamma': (3,), 'beta': (3,)}, {}, 'at least 3 dims'),
    ('GroupNorm', {'data': (2, 6, 3), 'gamma': (4,), 'beta': (4,)}, {'num_groups': 4},
     'multiple of num_groups=4'),
    ('L2Normalization', {'data': (2, 3)}, {'mode': 'channel'}, 'at least 3 dims'),
    ('GridGenerator', {'data': (2, 4)}, {'transform_type': 'affine', 'target_shape': (3, 3)},
     r'needs data of shape \(batch, 6\)'),
    ('SpatialTransformer', {'data': (1, 2, 3, 3), 'loc': (1, 6)},
     {'transform_type': 'affine', 'sampler_type': 'bilinear'}, 'target_shape must be'),
    ('BilinearSampler', {'data': (1, 2, 3, 3), 'grid': (1, 2, 3)}, {}, 'grid must be 4-D'),
    ('Correlation', {'data1': (1, 2, 4, 4), 'data2': (1, 2, 4, 4)}, {'max_displacement': 2},
     'leave no output'),
]


@pytest.mark.parametrize('op,shapes,params,message', ERRORS, ids=lambda x: str(x))
def test_bad_params_raise_in_nd_and_infer_shape(op, shapes, params, message):
    arrays = {n: mx.nd.zeros(s) for n, s in shapes.items()}
    with pytest.raises(MXNetError, match=message):
        _nd_call(op, arrays, params)
    sym = _symbol(op, list(shapes), params)
    with pytest.raises(MXNetError, match=message):
        sym.infer_shape(**shapes)

"""The contrib operators GluonCV/GluonNLP exports use (ops/resize.py, ops/attention.py,
ops/roi_align.py, ops/misc_contrib.py) against MXNet 1.9.1 through
tests/fixtures/ops_contrib_nets.npz (made by gen_ops_contrib_nets.py): forward, gradients,
JSON and shape inference; then the operators MXNet's CPU build cannot run (fft, ifft,
count_sketch: GPU-only there) against NumPy, the NDArray helpers, and rejected attributes."""
import json

import numpy as np
import pytest

import mxtorch as mx
from mxtorch.base import MXNetError

from conftest import OpCases, assert_matches

OPS = OpCases('ops_contrib_nets.npz')
CASES = OPS.cases
# float64: MXNet's resize computes its sampling positions in float32
DYNAMIC_SHAPE = ('_contrib_boolean_mask',)
TOLERANCE = {'float16': 1e-2, 'float32': 1e-5, 'float64': 1e-6, 'int32': 0, 'int64': 0,
             'uint8': 0}


def _assert_close(got, want, what):
    assert_matches(got, want, what, TOLERANCE[want.dtype.name])


def _function(module, op):
    if op.startswith('_contrib_'):
        return getattr(module.contrib, op[len('_contrib_'):])
    return getattr(module._internal, op)


def _symbol(case, params=None):
    variables = [mx.sym.Variable(n) for n in case['inputs']]
    fn = _function(mx.sym, case['op'])
    params = case['params'] if params is None else params
    if case['variadic']:
        return fn(*variables, name='op', **params)
    return fn(name='op', **dict(zip(case['inputs'], variables)), **params)


def _nd(value):
    return mx.nd.array(value, dtype=value.dtype)


@pytest.mark.parametrize('index', range(len(CASES)), ids=OPS.case_id)
def test_symbol_forward_backward(index):
    case = CASES[index]
    if case['op'] in DYNAMIC_SHAPE:
        pytest.xfail('the executor binds static shapes only; %s\'s output shape depends on its '
                     'input values' % case['op'])
    OPS.check_bound(index, _symbol(case), case['train'] or case['backward'], _assert_close)


@pytest.mark.parametrize('index', range(len(CASES)), ids=OPS.case_id)
def test_imperative_forward(index):
    case = CASES[index]
    inputs = OPS.arrays(index, 'in')
    arrays = [_nd(inputs[n]) for n in case['inputs']]
    aux = {n: _nd(v) for n, v in OPS.arrays(index, 'aux').items()}
    fn = _function(mx.nd, case['op'])
    with mx.autograd.train_mode() if case['train'] or case['backward'] else \
            mx.autograd.predict_mode():
        if case['variadic']:
            result = fn(*arrays, **case['params'])
        else:
            result = fn(**dict(zip(case['inputs'], arrays)), **aux, **case['params'])
    results = result if isinstance(result, list) else [result]
    for k, want in enumerate(OPS.listed(index, 'out')[:len(case['outputs'])]):
        _assert_close(results[k].asnumpy(), want, 'output %d' % k)


@pytest.mark.parametrize('index', range(len(CASES)), ids=OPS.case_id)
def test_json_names_and_infer_shape(index):
    case = CASES[index]
    params = {k: tuple(v) if isinstance(v, list) else v for k, v in case['params'].items()}
    sym = _symbol(case, params)
    assert json.loads(sym.tojson()) == json.loads(case['json'])
    assert sym.list_arguments() == case['arguments']
    assert sym.list_outputs() == case['outputs']
    assert sym.list_auxiliary_states() == case['aux_names']
    if case['out_shapes'] is not None:
        args, outs, _ = sym.infer_shape(**{k: tuple(v) for k, v in case['given'].items()})
        assert [list(s) for s in args] == case['arg_shapes']
        assert [list(s) for s in outs] == case['out_shapes']


def test_symbol_json_loads_through_mxnet_format():
    for case in CASES[:3]:
        sym = mx.sym.load_json(case['json'])
        assert sym.list_arguments() == case['arguments']


# ---------------------------------------------------------------------------------------------
# GPU-only in MXNet's CPU build: against NumPy
# ---------------------------------------------------------------------------------------------
def test_fft_interleaves_real_and_imaginary_parts():
    x = np.random.RandomState(1).randn(3, 6).astype('float32')
    out = mx.nd.contrib.fft(mx.nd.array(x)).asnumpy()
    want = np.fft.fft(x, axis=-1)
    assert out.shape == (3, 12)
    np.testing.assert_allclose(out[:, 0::2], want.real, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[:, 1::2], want.imag, rtol=1e-5, atol=1e-5)
    back = mx.nd.contrib.ifft(mx.nd.array(out)).asnumpy()     # unnormalised, as cuFFT
    np.testing.assert_allclose(back, x * 6, rtol=1e-4, atol=1e-4)
    sym = mx.sym.contrib.fft(mx.sym.Variable('d'))
    assert sym.infer_shape(d=(3, 6))[1] == [(3, 12)]


def test_count_sketch_projects_features():
    data = np.arange(8, dtype='float32').reshape(2, 4)
    h, s = np.array([[0, 2, 1, 2]], 'float32'), np.array([[1, -1, 1, 1]], 'float32')
    out = mx.nd.contrib.count_sketch(mx.nd.array(data), mx.nd.array(h), mx.nd.array(s),
                                     out_dim=3).asnumpy()
    np.testing.assert_allclose(out, [[0, 2, 2], [4, 6, 2]])


# ---------------------------------------------------------------------------------------------
# NDArray helpers (MXNet runs them only with out=)
# ---------------------------------------------------------------------------------------------
def test_onehot_encode_set_value_copyto_scatter_set_nd():
    out = mx.nd.zeros((3, 4))
    mx.nd._internal._onehot_encode(mx.nd.array([1, 3, 0]), out, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.eye(4)[[1, 3, 0]])
    mx.nd._internal._set_value(src=2.5, out=out)
    np.testing.assert_array_equal(out.asnumpy(), np.full((3, 4), 2.5))
    src, dst = mx.nd.array([[1, 2], [3, 4]]), mx.nd.zeros((2, 2))
    mx.nd._internal._copyto(src, out=dst)
    np.testing.assert_array_equal(dst.asnumpy(), [[1, 2], [3, 4]])
    lhs = mx.nd.zeros((2, 3))
    mx.nd._internal._scatter_set_nd(lhs, mx.nd.array([5, 6]), mx.nd.array([[0, 1], [2, 0]]),
                                    shape=(2, 3), out=lhs)
    np.testing.assert_array_equal(lhs.asnumpy(), [[0, 0, 5], [6, 0, 0]])


def test_zeros_without_dtype_takes_the_inferred_dtype():
    z = mx.nd._internal._zeros_without_dtype(shape=(2,), dtype=6)
    assert z.dtype == np.int64 and z.shape == (2,)
    sym = mx.sym._internal._zeros_without_dtype(shape=(2, 3)) + mx.sym.Variable('x')
    assert sym.infer_type(x='float64')[1] == [np.float64]


def test_random_like_draws_shape_and_dtype_of_data():
    data = mx.nd.ones((3, 4), dtype='float64')
    for name, params in (('normal', {'loc': 1.0}), ('uniform', {'low': 2.0, 'high': 3.0}),
                         ('exponential', {}), ('gamma', {'alpha': 2.0}), ('poisson', {}),
                         ('negative_binomial', {'k': 2, 'p': 0.5}),
                         ('generalized_negative_binomial', {})):
        out = getattr(mx.nd._internal, '_random_%s_like' % name)(data, **params)
        assert out.shape == (3, 4) and out.dtype == np.float64
    u = mx.nd._internal._random_uniform_like(mx.nd.zeros((1000,)), low=2.0, high=3.0).asnumpy()
    assert 2 <= u.min() and u.max() < 3


def test_sample_unique_zipfian_gives_distinct_classes():
    samples, tries = mx.nd._internal._sample_unique_zipfian(range_max=50, shape=(2, 10))
    assert samples.shape == (2, 10) and tries.shape == (2,)
    assert samples.dtype == np.int64
    for row in samples.asnumpy():
        assert len(set(row)) == 10 and row.min() >= 0 and row.max() < 50
    assert (tries.asnumpy() >= 10).all()


def test_zeros_like_and_ones_like_accept_the_dtype_attribute_mxnet_writes():
    text = json.dumps({'nodes': [
        {'op': 'null', 'name': 'x', 'inputs': []},
        {'op': 'zeros_like', 'name': 'z', 'attrs': {'dtype': 'int32'}, 'inputs': [[0, 0, 0]]},
        {'op': 'ones_like', 'name': 'o', 'attrs': {'dtype': 'float16'}, 'inputs': [[0, 0, 0]]}],
        'arg_nodes': [0], 'node_row_ptr': [0, 1, 2, 3], 'heads': [[1, 0, 0], [2, 0, 0]],
        'attrs': {'mxnet_version': ['int', 10901]}})
    exe = mx.sym.load_json(text).bind(mx.cpu(), {'x': mx.nd.ones((2,))})
    zeros, ones = [o.asnumpy() for o in exe.forward()]
    # MXNet 1.9.1 ignores the attribute: the output keeps the input's dtype
    assert zeros.dtype == ones.dtype == np.float32
    np.testing.assert_array_equal(zeros, [0, 0])
    np.testing.assert_array_equal(ones, [1, 1])


# ---------------------------------------------------------------------------------------------
# Rejected attributes and inputs
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize('call', [
    lambda: mx.nd.contrib.BilinearResize2D(mx.nd.ones((1, 1, 2, 2)), mode='nearest'),
    lambda: mx.nd.contrib.BilinearResize2D(mx.nd.ones((1, 1, 2, 2)), scale_height=1.5),
    lambda: mx.nd.contrib.BilinearResize2D(mx.nd.ones((2, 2)), height=3, width=3),
    lambda: mx.nd.contrib.AdaptiveAvgPooling2D(mx.nd.ones((1, 1, 4, 4)), output_size=(1, 2, 3)),
    lambda: mx.nd.contrib.ROIAlign(mx.nd.ones((1, 1, 4, 4)), mx.nd.ones((1, 5)),
                                   spatial_scale=1.0),
    lambda: mx.nd.contrib.ROIAlign(mx.nd.ones((1, 1, 4, 4)), mx.nd.ones((1, 5)),
                                   pooled_size=3, spatial_scale=1.0),
    lambda: mx.nd.contrib.ROIAlign(mx.nd.ones((1, 3, 4, 4)), mx.nd.ones((1, 5)),
                                   pooled_size=(2, 2), spatial_scale=1.0,
                                   position_sensitive=True),
    lambda: mx.nd.contrib.ROIAlign(mx.nd.ones((1, 1, 4, 4)), mx.nd.ones((1, 4)),
                                   pooled_size=(2, 2), spatial_scale=1.0),
    lambda: mx.nd.contrib.interleaved_matmul_selfatt_qk(mx.nd.ones((2, 1, 12))),
    lambda: mx.nd.contrib.interleaved_matmul_selfatt_qk(mx.nd.ones((2, 1, 10)), heads=2),
    lambda: mx.nd.contrib.arange_like(mx.nd.ones((2, 3)), axis=2),
    lambda: mx.nd.contrib.boolean_mask(mx.nd.ones((2, 3)), mx.nd.ones((3,)), axis=1),
    lambda: mx.nd.contrib.index_copy(mx.nd.ones((4, 3)), mx.nd.array([0]), mx.nd.ones((1, 2))),
    lambda: mx.nd.contrib.allclose(mx.nd.ones((2, 3)), mx.nd.ones((3,))),
])
def test_rejected(call):
    with pytest.raises(MXNetError):
        call().wait_to_read()

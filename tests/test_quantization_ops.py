"""The int8 operators against MXNet 1.9.1's CPU wheel (tests/fixtures/quantization.npz, made by
tests/fixtures/gen_quantization.py)."""
import json
import os

import numpy as np
import pytest

import mxtorch as mx
from mxtorch.base import MXNetError

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures')
FX = np.load(os.path.join(HERE, 'quantization.npz'))
with open(os.path.join(HERE, 'quantization.json')) as f:
    META = json.load(f)

# where this implementation and the wheel part, by design (see mxtorch/ops/quantized_nn.py):
# largest difference in steps of the first output, and whether the range outputs agree
TOLERANCE = {
    'bn_int8': 1, 'bn_int8_fixgamma': 1, 'bn_uint8': 2,   # float rounding of the fused scale
}
# the wheel's non-fused MKL-DNN quantized_conv adds the int8 bias unscaled and reports the
# range of int8 data for uint8 data; here the bias is rescaled and the range is uint8's
DIFFERENT = {'conv_uint8'}
RANGE_DIFFERS = {'conv_uint8', 'conv_uint8_pad'}


def _run(name):
    m = META['ops'][name]
    ins = [FX['%s:in%d' % (name, i)] for i in range(m['inputs'])]
    exp = [FX['%s:out%d' % (name, i)] for i in range(m['outputs'])]
    got = getattr(mx.nd.contrib, m['op'])(*[mx.nd.array(a, dtype=a.dtype) for a in ins],
                                          **m['attrs'])
    got = got if isinstance(got, (list, tuple)) else [got]
    return [g.asnumpy() for g in got], exp


@pytest.mark.parametrize('name', sorted(n for n in META['ops'] if n not in DIFFERENT))
def test_operator_matches_mxnet(name):
    got, exp = _run(name)
    assert len(got) == len(exp)
    assert got[0].dtype == exp[0].dtype and got[0].shape == exp[0].shape
    if META['ops'][name]['op'] == 'calibrate_entropy':
        np.testing.assert_allclose(got[0], exp[0], rtol=1e-6)
        np.testing.assert_allclose(got[1], exp[1], rtol=1e-3, atol=1e-6)
        return
    diff = np.abs(got[0].astype(np.float64) - exp[0].astype(np.float64))
    assert diff.max() <= TOLERANCE.get(name, 0), (name, diff.max())
    if name not in RANGE_DIFFERS:
        for g, e in zip(got[1:], exp[1:]):
            np.testing.assert_allclose(g, e, rtol=1e-6)


def test_conv_int32_range_and_bias():
    got, exp = _run('conv_uint8_pad')          # no bias: the int32 sums are the wheel's
    np.testing.assert_array_equal(got[0], exp[0])
    # one int32 step: data r/255 (uint8) times weight r/127
    np.testing.assert_allclose(got[2], [3 / 255 * 0.5 / 127 * (2 ** 31 - 1)], rtol=1e-6)
    got, exp = _run('conv_uint8')
    m = META['ops']['conv_uint8']
    bias = FX['conv_uint8:in2'].astype(np.float64)
    without = exp[0].astype(np.float64) - bias.reshape(1, -1, 1, 1)
    # the bias in output steps: b * (0.1/127) / ((3/255.5) * (0.5/127)), truncated
    rescaled = np.trunc(bias * (255.5 / 3) * (127 / 0.5) * (0.1 / 127))
    np.testing.assert_array_equal(got[0], without + rescaled.reshape(1, -1, 1, 1))
    assert m['op'] == 'quantized_conv'


def test_quantized_symbols_infer_and_name_inputs():
    data = mx.sym.var('data')
    conv = mx.sym.contrib.quantized_conv(data, kernel=(3, 3), num_filter=4, name='qc')
    assert conv.list_arguments() == ['data', 'qc_weight', 'qc_bias', 'qc_min_data', 'qc_max_data',
                                     'qc_min_weight', 'qc_max_weight', 'qc_min_bias',
                                     'qc_max_bias']
    assert conv.list_outputs() == ['qc_output', 'qc_min_output', 'qc_max_output']
    args, outs, _ = conv.infer_shape(data=(2, 3, 8, 8))
    assert args[1] == (4, 3, 3, 3) and args[2] == (4,) and args[3] == (1,)
    assert outs == [(2, 4, 6, 6), (1,), (1,)]
    _, types, _ = conv.infer_type(data='uint8')
    assert types == [np.int32, np.float32, np.float32]
    cat = mx.sym.contrib.quantized_concat(mx.sym.var('a'), mx.sym.var('b'), num_args=2, name='c')
    assert cat.list_arguments() == ['a', 'b', 'c_arg0_min', 'c_arg0_max', 'c_arg1_min',
                                    'c_arg1_max']
    q = mx.sym.contrib.quantize_v2(data, out_type='auto', min_calib_range=0.0,
                                   max_calib_range=1.0)
    assert q.infer_type(data='float32')[1] == [np.uint8, np.float32, np.float32]
    assert mx.sym.contrib.quantize_v2(data, out_type='auto').infer_type(
        data='float32')[1][0] == np.int8


def test_quantize_asym_scale_and_shift():
    x = mx.nd.array([[-1.0, 0.0], [0.5, 3.0]])
    q, scale, shift = mx.nd.contrib.quantize_asym(x)
    assert q.dtype == np.uint8
    np.testing.assert_allclose(scale.asnumpy(), [255 / 4.0])
    np.testing.assert_allclose(shift.asnumpy(), [255 / 4.0])
    np.testing.assert_array_equal(q.asnumpy(), np.rint(x.asnumpy() * 63.75 + 63.75))
    q, scale, shift = mx.nd.contrib.quantize_asym(x, min_calib_range=0.0, max_calib_range=1.0)
    np.testing.assert_array_equal(q.asnumpy(), [[0, 0], [128, 255]])


def test_bad_arguments_are_named():
    q8 = mx.nd.array([[1, -2]], dtype='int8')
    lo, hi = mx.nd.array([-1.0]), mx.nd.array([1.0])
    with pytest.raises(MXNetError, match='act_type'):
        mx.nd.contrib.quantized_act(q8, lo, hi, act_type='sigmoid')
    with pytest.raises(MXNetError, match='out_type'):
        mx.nd.contrib.quantize_v2(mx.nd.ones((2,)), out_type='int4')
    with pytest.raises(MXNetError, match='calib_range'):
        mx.nd.contrib.quantized_batch_norm(q8.reshape((1, 2)), mx.nd.ones((2,)),
                                           mx.nd.zeros((2,)), mx.nd.zeros((2,)),
                                           mx.nd.ones((2,)), lo, hi)
    with pytest.raises(MXNetError, match='int32'):
        mx.nd.contrib.requantize(mx.nd.ones((2,)), lo, hi)
    with pytest.raises(MXNetError, match='data'):
        mx.nd.contrib.quantized_flatten(mx.nd.ones((2, 2)), lo, hi)


def test_quantized_rnn_is_the_lstm_of_the_dequantized_data():
    rs = np.random.RandomState(0)
    T, N, I, H = 3, 2, 4, 5
    x = rs.randn(T, N, I).astype('f')
    params = mx.nd.array(rs.randn(4 * H * (I + H) + 8 * H) * 0.3)
    h0, c0 = mx.nd.array(rs.randn(1, N, H) * 0.1), mx.nd.array(rs.randn(1, N, H) * 0.1)
    q, scale, shift = mx.nd.contrib.quantize_asym(mx.nd.array(x))
    got = mx.nd.contrib.quantized_rnn(q, params, h0, c0, scale, shift, state_size=H,
                                      num_layers=1, mode='lstm', state_outputs=True)
    xd = (q.asnumpy().astype('f') - shift.asnumpy()) / scale.asnumpy()
    ref = mx.nd.RNN(mx.nd.array(xd), params, h0, c0, state_size=H, num_layers=1, mode='lstm',
                    state_outputs=True)
    assert len(got) == 3
    for g, r in zip(got, ref):
        np.testing.assert_allclose(g.asnumpy(), r.asnumpy(), rtol=1e-5, atol=1e-6)
    sym = mx.sym.contrib.quantized_rnn(mx.sym.var('data'), state_size=H, num_layers=1,
                                       mode='lstm', state_outputs=True, name='r')
    assert sym.list_outputs() == ['r_output', 'r_state_output', 'r_statecell_ouput']
    assert sym.list_arguments() == ['data', 'r_parameters', 'r_state', 'r_state_cell',
                                    'r_min_data', 'r_max_data']
    with pytest.raises(MXNetError, match='mode'):
        mx.nd.contrib.quantized_rnn(q, params, h0, c0, scale, shift, state_size=H,
                                    num_layers=1, mode='gru')


def test_mkldnn_selfatt_ops_are_the_interleaved_matmuls():
    """The wheel cannot run these on every CPU (it crashes here); their float forms are the
    interleaved attention matmuls, the quantized ones those of the dequantized inputs."""
    rs = np.random.RandomState(0)
    qkv = rs.randn(4, 2, 2 * 3 * 8).astype('f')
    att = np.abs(rs.randn(4, 4, 4)).astype('f')
    qk = mx.nd.contrib.interleaved_matmul_selfatt_qk(mx.nd.array(qkv), heads=2).asnumpy()
    va = mx.nd.contrib.interleaved_matmul_selfatt_valatt(mx.nd.array(qkv), mx.nd.array(att),
                                                         heads=2).asnumpy()
    internal = mx.nd._internal
    np.testing.assert_allclose(internal._sg_mkldnn_selfatt_qk(mx.nd.array(qkv), heads=2)
                               .asnumpy(), qk, rtol=1e-6)
    np.testing.assert_allclose(internal._sg_mkldnn_selfatt_valatt(
        mx.nd.array(qkv), mx.nd.array(att), heads=2).asnumpy(), va, rtol=1e-6)
    real = float(np.abs(qkv).max())
    q8 = mx.nd.array(np.clip(np.rint(qkv * 127.5 / real), -128, 127), dtype='int8')
    lo, hi = mx.nd.array([-real]), mx.nd.array([real])
    deq = q8.asnumpy().astype('f') * real / 127.5
    ref = mx.nd.contrib.interleaved_matmul_selfatt_qk(mx.nd.array(deq), heads=2).asnumpy()
    out = internal._sg_mkldnn_selfatt_qk(q8, lo, hi, heads=2, quantized=True,
                                         enable_float_output=True)
    np.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5, atol=1e-5)
    q, qmin, qmax = internal._sg_mkldnn_selfatt_qk(q8, lo, hi, heads=2, quantized=True,
                                                   min_calib_range=-20.0, max_calib_range=20.0)
    assert q.dtype == np.int8 and qmin.asscalar() == -20.0 and qmax.asscalar() == 20.0
    np.testing.assert_array_equal(q.asnumpy(), np.clip(np.rint(ref * 127.5 / 20), -128, 127))
    q, qmin, qmax = internal._sg_mkldnn_selfatt_qk(q8, lo, hi, heads=2, quantized=True)
    assert q.dtype == np.int32
    per_step = qmax.asscalar() / (2 ** 31 - 1)        # one int8 step of q times one of k
    np.testing.assert_allclose(per_step, (real / 127.5) ** 2, rtol=1e-5)
    np.testing.assert_allclose(q.asnumpy() * per_step, ref, atol=per_step / 2 + 1e-6)
    sym = mx.sym._internal._sg_mkldnn_selfatt_valatt(mx.sym.var('qkv'), mx.sym.var('att'),
                                                     heads=2, quantized=True, name='v')
    assert sym.list_arguments() == ['qkv', 'att', 'v_min_qkv', 'v_max_qkv', 'v_min_attention',
                                    'v_max_attention']
    assert sym.list_outputs() == ['v_output', 'v_min_output', 'v_max_output']


def test_quantize_v2_passes_int8_data_through():
    q8 = mx.nd.array([-100, 5, 127], dtype='int8')
    out, lo, hi = mx.nd.contrib.quantize_v2(q8)
    assert out.dtype == np.int8 and list(out.asnumpy()) == [-100, 5, 127]
    assert (lo.asscalar(), hi.asscalar()) == (-127.5, 127.5)       # as MXNet 1.9.1
    out, lo, hi = mx.nd.contrib.quantize_v2(q8, min_calib_range=-2.0, max_calib_range=2.0)
    assert (lo.asscalar(), hi.asscalar()) == (-2.0, 2.0)
    out, lo, hi = mx.nd.contrib.quantize_v2(mx.nd.array([0, 255], dtype='uint8'))
    assert out.dtype == np.uint8 and (lo.asscalar(), hi.asscalar()) == (0.0, 255.5)

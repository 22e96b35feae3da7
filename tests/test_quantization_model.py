"""mx.contrib.quantization.quantize_model on a small conv net against MXNet 1.9.1 (the graph it
writes, the quantized parameters, and outputs near the wheel's fused int8 model's); fixtures
from tests/fixtures/gen_quantization.py."""
import json
import os

import numpy as np
import pytest

import mxtorch as mx
from mxtorch.contrib.quantization import (_get_optimal_threshold, calib_graph,  # noqa: F401
                                          combine_histogram, quantize_graph, quantize_model,
                                          quantize_model_mkldnn, quantize_net, quantize_net_v2)

from fixtures.quantization_nets import conv_net, layer_nets, rich_net

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures')
FX = np.load(os.path.join(HERE, 'quantization.npz'))
with open(os.path.join(HERE, 'quantization.json')) as f:
    MODELS = json.load(f)['models']


ARGS = {k[len('model:arg:'):]: mx.nd.array(FX[k]) for k in FX.files
        if k.startswith('model:arg:')}
X = FX['model:data']


def _quantize(mode, dtype):
    it = mx.io.NDArrayIter(X, np.zeros(8), batch_size=4)
    return quantize_model(conv_net(mx), ARGS, {}, ctx=mx.cpu(), calib_mode=mode, calib_data=it,
                          num_calib_examples=8, quantized_dtype=dtype)


def _same_attrs(mine, ref):
    assert sorted(mine) == sorted(ref)
    for k in ref:
        if k.endswith('calib_range'):
            assert float(mine[k]) == pytest.approx(float(ref[k]), rel=1e-5, abs=1e-6)
        else:
            assert mine[k] == ref[k]


@pytest.mark.parametrize('mode', ['none', 'naive', 'entropy'])
@pytest.mark.parametrize('dtype', ['int8', 'auto'])
def test_quantize_model_graph_params_and_outputs(mode, dtype):
    qsym, qargs, qaux = _quantize(mode, dtype)
    key = '%s_%s' % (mode, dtype)
    mine, ref = json.loads(qsym.tojson())['nodes'], MODELS[key]['nodes']
    assert [(n['op'], n['name'], n['inputs']) for n in mine] == \
        [(n['op'], n['name'], n['inputs']) for n in ref]
    for a, b in zip(mine, ref):
        _same_attrs(a.get('attrs', {}), b.get('attrs', {}))
    prefix = 'model:%s:qarg:' % key
    assert sorted(qargs) == sorted(k[len(prefix):] for k in FX.files if k.startswith(prefix))
    for name, value in qargs.items():
        np.testing.assert_array_equal(value.asnumpy(), FX[prefix + name])
    assert qaux == {}
    feed = dict(qargs, data=mx.nd.array(X[:4]), softmax_label=mx.nd.zeros(4))
    out = qsym.bind(mx.cpu(), feed).forward()[0].asnumpy()
    # the wheel runs this model fused for MKL-DNN (quantize_model_mkldnn): same up to rounding
    np.testing.assert_allclose(out, FX['model:%s_mkldnn:out' % key], atol=0.02)
    np.testing.assert_allclose(out, FX['model:float_out'], atol=0.01)


def test_excluded_layers_stay_float():
    it = mx.io.NDArrayIter(X, np.zeros(8), batch_size=4)
    qsym, qargs, _ = quantize_model(conv_net(mx), ARGS, {}, calib_mode='naive', calib_data=it,
                                    excluded_sym_names=['fc0'], excluded_op_names=['Pooling'],
                                    quantized_dtype='int8')
    ops = {n['name']: n['op'] for n in json.loads(qsym.tojson())['nodes']}
    assert ops['fc0'] == 'FullyConnected' and ops['pool0'] == 'Pooling'
    assert ops['quantized_conv0'] == '_contrib_quantized_conv'
    assert ops['conv0_dequantize'] == '_contrib_dequantize'
    assert 'fc0_weight' in qargs and 'fc0_weight_quantize' not in qargs


def test_bad_options():
    with pytest.raises(ValueError, match='quantized_dtype'):
        quantize_model(conv_net(mx), ARGS, {}, calib_mode='none', quantized_dtype='int4')
    with pytest.raises(ValueError, match='calib_data'):
        quantize_model(conv_net(mx), ARGS, {}, calib_mode='naive')
    with pytest.raises(ValueError, match='excluded_sym_names'):
        quantize_model(conv_net(mx), ARGS, {}, calib_mode='none', excluded_sym_names='fc0')


def test_quantize_graph_then_calib_graph_equals_quantize_model():
    qsym, qargs, _, collector = quantize_graph(conv_net(mx), ARGS, {}, calib_mode='naive',
                                               quantized_dtype='int8', quantize_mode='smart')
    mod = mx.mod.Module(conv_net(mx), context=mx.cpu())
    mod.bind(for_training=False, data_shapes=[('data', (4, 2, 8, 8))],
             label_shapes=[('softmax_label', (4,))])
    mod.set_params(ARGS, {})
    mod._exec_group.execs[0].set_monitor_callback(collector.collect, monitor_all=True)
    for i in (0, 4):
        mod.forward(mx.io.DataBatch([mx.nd.array(X[i:i + 4])], [mx.nd.zeros(4)]), is_train=False)
    qsym, qargs, _ = calib_graph(qsym, ARGS, {}, collector, calib_mode='naive')
    ref = _quantize('naive', 'int8')[0]
    assert json.loads(qsym.tojson())['nodes'] == json.loads(ref.tojson())['nodes']


def test_combine_histogram_widens_symmetrically():
    hist, edges = np.histogram([0.5, -0.5], bins=5, range=(-1, 1))
    out = combine_histogram((hist, edges, -0.5, 0.5, 1.0), np.array([1.5]), 1.5, 1.5, 1.5)
    assert out[4] == pytest.approx(1.8) and len(out[0]) == 9 and out[0].sum() == 3
    assert out[2:4] == (-0.5, 1.5)


@pytest.mark.parametrize('key', ['none_int8', 'naive_int8', 'entropy_int8', 'naive_auto'])
def test_mxnet_fused_quantized_model_loads_and_runs(key):
    """The wheel's quantize_model_mkldnn graph (_sg_mkldnn_conv / _fully_connected nodes with
    subgraphs, int8 weights) runs here with the wheel's outputs up to rounding."""
    key += '_mkldnn'
    sym = mx.sym.load_json(json.dumps(MODELS[key]))
    prefix = 'model:%s:qarg:' % key
    args = {k[len(prefix):]: mx.nd.array(FX[k], dtype=FX[k].dtype) for k in FX.files
            if k.startswith(prefix)}
    ops = [n['op'] for n in MODELS[key]['nodes']]
    assert '_sg_mkldnn_conv' in ops and '_sg_mkldnn_fully_connected' in ops
    feed = dict(args, data=mx.nd.array(X[:4]), softmax_label=mx.nd.zeros(4))
    out = sym.bind(mx.cpu(), feed).forward()[0].asnumpy()
    np.testing.assert_allclose(out, FX['model:%s:out' % key], atol=0.01)


def test_float_fused_conv_runs_its_subgraph():
    data = mx.sym.var('data')
    net = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name='conv0')
    net = mx.sym.Activation(net, act_type='relu', name='relu0')
    fused = mx.sym.Symbol([(mx.sym.symbol.Node(
        mx.ops.get_op('_sg_mkldnn_conv'), 'sg_conv', {'with_act': 'true'},
        [(n, 0) for n in (mx.sym.var('d')._entries[0][0], mx.sym.var('w')._entries[0][0],
                          mx.sym.var('b')._entries[0][0])], [net]), 0)])
    w, b = FX['model:arg:conv0_weight'], FX['model:arg:conv0_bias']
    out = fused.bind(mx.cpu(), {'d': mx.nd.array(X[:2]), 'w': mx.nd.array(w),
                                'b': mx.nd.array(b)}).forward()[0].asnumpy()
    ref = net.bind(mx.cpu(), {'data': mx.nd.array(X[:2]), 'conv0_weight': mx.nd.array(w),
                              'conv0_bias': mx.nd.array(b)}).forward()[0].asnumpy()
    np.testing.assert_allclose(out, ref, rtol=1e-6)
    assert fused.infer_shape(d=(2, 2, 8, 8))[1] == [(2, 4, 6, 6)]


@pytest.mark.parametrize('mode', ['none', 'naive'])
def test_quantize_net_v2_gluon(mode):
    from mxtorch.gluon import nn
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3, in_channels=2), nn.Activation('relu'), nn.MaxPool2D(2),
            nn.Flatten(), nn.Dense(5, in_units=36))
    net.initialize()
    for i, p in enumerate(net.collect_params().values()):
        p.set_data(mx.nd.array(FX['gluon:param%d' % i]))
    data = FX['gluon:data']
    qnet = quantize_net_v2(net, quantized_dtype='auto', calib_mode=mode,
                           calib_data=mx.io.NDArrayIter(data, batch_size=4),
                           num_calib_examples=8)
    assert isinstance(qnet, mx.gluon.SymbolBlock)
    out = qnet(mx.nd.array(data)).asnumpy()
    # int8 noise on outputs up to ~9: the wheel's (MKL-DNN fused) and these both within 2%
    np.testing.assert_allclose(out, FX['gluon:float_out'], atol=0.2)
    np.testing.assert_allclose(out, FX['gluon:%s:out' % mode], atol=0.2)
    names = qnet.collect_params().keys()
    assert any(n.endswith('weight_quantize') for n in names)


def _fused_feed(sym, prefix):
    args = {k[len(prefix):]: mx.nd.array(FX[k], dtype=FX[k].dtype) for k in FX.files
            if k.startswith(prefix)}
    return args


def test_mxnet_fused_float_graph_runs_exactly():
    """conv+bn+relu, conv+sum, fc+relu fused by the wheel (get_backend_symbol('MKLDNN'))."""
    sym = mx.sym.load_json(json.dumps(json.load(open(os.path.join(HERE, 'quantization.json')))
                                      ['fused_float']))
    assert sym.list_auxiliary_states() == ['bn0_moving_mean', 'bn0_moving_var']
    args = {k: mx.nd.array(FX['fused:' + k]) for k in sym.list_arguments()}
    aux = {k: mx.nd.array(FX['fused:' + k]) for k in sym.list_auxiliary_states()}
    out = sym.bind(mx.cpu(), args, aux_states=aux).forward()[0].asnumpy()
    np.testing.assert_allclose(out, FX['fused:out'], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('mode', ['none', 'naive'])
def test_mxnet_fused_quantized_bn_and_sum(mode):
    """The wheel's quantize_model_mkldnn graph of that net: quantized conv with a fused
    BatchNorm (its moving statistics are aux states, as MXNet lists them) and with a sum."""
    meta = json.load(open(os.path.join(HERE, 'quantization.json')))
    sym = mx.sym.load_json(json.dumps(meta['fused_%s' % mode]))
    assert sym.list_auxiliary_states() == ['bn0_moving_mean', 'bn0_moving_var']
    args = _fused_feed(sym, 'fused_%s:qarg:' % mode)
    aux = {k: mx.nd.array(FX['fused:' + k]) for k in ('bn0_moving_mean', 'bn0_moving_var')}
    args['data'] = mx.nd.array(FX['fused:calib_data'][:4])
    out = sym.bind(mx.cpu(), args, aux_states=aux).forward()[0].asnumpy()
    # outputs up to ~11; int8 noise of a few steps through three layers (calibrated: the
    # quantized conv accumulates integer products of int8 weights as MKL-DNN does, 0.13 -> 0.10)
    np.testing.assert_allclose(out, FX['fused_%s:out' % mode],
                               atol=0.4 if mode == 'none' else 0.11)
    if mode == 'none':
        np.testing.assert_allclose(out, FX['fused:float_out'], atol=0.4)
    # with naive calibration the wheel's output is far from the float one: its MKL-DNN conv
    # adds onto the uint8 relu output in place, so that conv's output is uint8 (negatives
    # clipped) where its calibrated range says int8; the same here


RICH = json.load(open(os.path.join(HERE, 'quantization.json')))['rich']


@pytest.mark.parametrize('key', sorted(RICH))
def test_quantize_modes_and_exclusions_give_mxnets_graph(key):
    mode, calib, excl = key.split('_', 2)
    kw, dtype = {}, 'int8'
    if excl in ('uint8', 'auto'):
        kw['excluded_op_names'], dtype = ['Activation'], excl
    elif excl == 'c1':
        kw['excluded_sym_names'] = ['c1']
    elif excl:
        kw['excluded_op_names'] = [excl]
    args = {k[len('rich:arg:'):]: mx.nd.array(FX[k]) for k in FX.files
            if k.startswith('rich:arg:')}
    it = mx.io.NDArrayIter(FX['rich:data'], np.zeros(8), batch_size=4)
    qsym, qargs, _ = quantize_model(rich_net(mx), args, {}, calib_mode=calib, calib_data=it,
                                    num_calib_examples=8, quantized_dtype=dtype,
                                    quantize_mode=mode, **kw)
    mine, ref = json.loads(qsym.tojson())['nodes'], RICH[key]['nodes']
    assert [(n['op'], n['name'], n['inputs']) for n in mine] == \
        [(n['op'], n['name'], n['inputs']) for n in ref]
    for a, b in zip(mine, ref):
        _same_attrs(a.get('attrs', {}), b.get('attrs', {}))
    feed = dict(qargs, data=mx.nd.array(FX['rich:data'][:4]), softmax_label=mx.nd.zeros(4))
    out = qsym.bind(mx.cpu(), feed).forward()[0].asnumpy()
    fargs = dict(args, data=mx.nd.array(FX['rich:data'][:4]), softmax_label=mx.nd.zeros(4))
    ref_out = rich_net(mx).bind(mx.cpu(), fargs).forward()[0].asnumpy()
    if dtype != 'uint8':       # uint8 data loses the negative inputs (as in MXNet)
        np.testing.assert_allclose(out, ref_out, atol=0.05)


LAYERS = json.load(open(os.path.join(HERE, 'quantization.json')))['layers']


@pytest.mark.parametrize('key', sorted(LAYERS))
def test_batchnorm_embedding_and_float_layers_as_mxnet(key):
    """A quantized BatchNorm takes its calibrated output range itself (no requantize), an
    Embedding is quantized in 'full' mode only, a float LeakyReLU is requantized after."""
    name, mode = key.split('_')
    net = layer_nets(mx)[name][0]
    prefix = 'layers:%s:' % name
    given = {k[len(prefix):]: mx.nd.array(FX[k]) for k in FX.files if k.startswith(prefix)}
    data = given.pop('data').asnumpy()
    aux = {k: given.pop(k) for k in net.list_auxiliary_states()}
    if 'bn_gamma' in given:    # the quantized kernel scales by gamma even with fix_gamma
        given['bn_gamma'] = mx.nd.ones(given['bn_gamma'].shape)
    it = mx.io.NDArrayIter(data, batch_size=2)
    qsym, qargs, qaux = quantize_model(net, given, aux, calib_mode='naive', calib_data=it,
                                       label_names=None, quantized_dtype='int8',
                                       quantize_mode=mode)
    mine, ref = json.loads(qsym.tojson())['nodes'], LAYERS[key]['nodes']
    # inputs without the entries' versions: MXNet marks a quantized BatchNorm's moving
    # statistics as mutated (version 1); they are plain arguments here
    assert [(n['op'], n['name'], [e[:2] for e in n['inputs']]) for n in mine] == \
        [(n['op'], n['name'], [e[:2] for e in n['inputs']]) for n in ref]
    for a, b in zip(mine, ref):
        _same_attrs(a.get('attrs', {}), b.get('attrs', {}))
    feed = dict(qargs, data=mx.nd.array(data))
    feed.update(qaux)          # a quantized BatchNorm's moving statistics are arguments here
    if qsym.list_auxiliary_states():
        out = qsym.bind(mx.cpu(), {k: feed[k] for k in qsym.list_arguments()},
                        aux_states={k: feed[k] for k in qsym.list_auxiliary_states()})
    else:
        out = qsym.bind(mx.cpu(), {k: feed[k] for k in qsym.list_arguments()})
    fargs = dict(given, data=mx.nd.array(data))
    ref_out = net.bind(mx.cpu(), fargs, aux_states=aux).forward()[0].asnumpy()
    got = out.forward()[0].asnumpy()
    np.testing.assert_allclose(got, ref_out, rtol=0.03, atol=0.03 * np.abs(ref_out).max())

"""Behaviours real model-zoo exports rely on, found by loading more GluonCV / GluonNLP families
(tests/fixtures/gen_gluoncv_exports.py --check); numbers from MXNet 1.9.1."""
import numpy as np

import mxtorch as mx


def test_avg_pool3d_on_an_input_smaller_than_the_kernel():
    # I3D-InceptionV3's avg pools (3x3x3, pad 1) meet a 2-frame clip: MXNet pools the padded
    # input (torch's avg_pool3d refuses it)
    x = mx.nd.array(np.arange(18).reshape(1, 1, 2, 3, 3))
    expected = {
        True: [1.9259259700775146, 3.1111111640930176, 2.222222328186035, 3.555555582046509,
               5.666666507720947, 4.0, 2.814814805984497, 4.44444465637207, 3.1111111640930176],
        False: [6.5, 7.0, 7.5, 8.0, 8.5, 9.0, 9.5, 10.0, 10.5]}
    for include_pad, values in expected.items():
        out = mx.nd.Pooling(x, kernel=(3, 3, 3), pad=(1, 1, 1), stride=(1, 1, 1),
                            pool_type='avg', count_include_pad=include_pad)
        assert out.shape == (1, 1, 2, 3, 3)
        np.testing.assert_allclose(out.asnumpy().ravel(), values * 2, rtol=1e-6)


def test_module_binds_a_graph_with_two_outputs_of_one_name():
    # a shared Gluon block (MonoDepth2's sigmoid) applied at several scales: the exported
    # graph's outputs share a name, and Module still binds and returns each
    data = mx.sym.var('data')
    outs = [mx.sym.sigmoid(data * scale, name='sigmoid0') for scale in (1.0, 2.0)]
    group = mx.sym.Group(outs)
    assert group.list_outputs() == ['sigmoid0_output', 'sigmoid0_output']
    mod = mx.mod.Module(group, data_names=['data'], label_names=None)
    mod.bind([('data', (2, 3))], for_training=False)
    mod.init_params()
    x = np.linspace(-1, 1, 6).reshape(2, 3).astype('float32')
    mod.forward(mx.io.DataBatch([mx.nd.array(x)]), is_train=False)
    got = [o.asnumpy() for o in mod.get_outputs()]
    for out, scale in zip(got, (1.0, 2.0)):
        np.testing.assert_allclose(out, 1 / (1 + np.exp(-scale * x)), rtol=1e-6)


def _mkldnn_case():
    import json
    import os
    case = np.load(os.path.join(os.path.dirname(__file__), 'fixtures', 'mkldnn_conv_sum.npz'))
    params = {k: case[k] for k in case.files if k.startswith(('arg:', 'aux:'))}
    return case, json, params


def test_fused_conv_aux_states_keep_their_place_among_the_inputs():
    # oneDNN-fused convolutions (GluonCV's *_int8 exports) list a folded BatchNorm's moving
    # statistics before a sum operand and the quantized ranges: MXNet's aux states all the same
    case, json, _ = _mkldnn_case()
    for kind in ('fused', 'quantized'):
        sym = mx.sym.load_json(str(case[kind + '_json']))
        assert sym.list_arguments() == json.loads(str(case[kind + '_args']))
        assert sym.list_auxiliary_states() == json.loads(str(case[kind + '_aux']))


def test_fused_conv_with_bn_and_sum_runs_as_mxnet():
    case, _, params = _mkldnn_case()
    sym = mx.sym.load_json(str(case['fused_json']))
    mod = mx.mod.Module(sym, label_names=None)
    mod.bind([('data', case['data'].shape)], for_training=False)
    mod.set_params({k[4:]: mx.nd.array(v) for k, v in params.items() if k[:4] == 'arg:'},
                   {k[4:]: mx.nd.array(v) for k, v in params.items() if k[:4] == 'aux:'})
    mod.forward(mx.io.DataBatch([mx.nd.array(case['data'])]), is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), case['output'], rtol=1e-5,
                               atol=1e-6)


def test_quantized_conv_adding_onto_a_uint8_operand_gives_uint8():
    # the second conv's calibrated range is [-0.92, 2.05] (int8), but MKL-DNN adds it onto the
    # uint8 relu output in place: MXNet's result keeps uint8 (negatives clipped), far from the
    # float model's [2.26, 0.24, -0.94]
    case, _, params = _mkldnn_case()
    sym = mx.sym.load_json(str(case['quantized_json']))
    args = {k[5:]: mx.nd.array(case[k], dtype=case[k].dtype) for k in case.files
            if k.startswith('qarg:')}
    mod = mx.mod.Module(sym, label_names=None)
    mod.bind([('data', case['data'].shape)], for_training=False)
    mod.set_params(args, {k[4:]: mx.nd.array(v) for k, v in params.items() if k[:4] == 'aux:'})
    mod.forward(mx.io.DataBatch([mx.nd.array(case['data'])]), is_train=False)
    out = mod.get_outputs()[0].asnumpy()
    assert np.abs(case['quantized_output'] - case['output']).max() > 0.3
    # int8 rounding (the wheel quantizes the conv weights too) within about 1%
    np.testing.assert_allclose(out, case['quantized_output'], atol=0.02)

"""mxtorch.models against MXNet 1.9.1 (fixture made by fixtures/gen_models.py, which ran these
very graphs in MXNet): every network builds, infers its output shape, and its logits and
gradients after a training-mode forward and backward pass (in float64 for the networks with
BatchNorm, see model_cases.train_dtype) agree within 1e-4 relative error; a full-size ResNet-50
gives MXNet's float32 inference logits; parameter totals match print_summary; parameter names
are those of MXNet's checkpoints."""
import contextlib
import io
import json
import re

import numpy as np
import pytest

import mxtorch as mx
from mxtorch.models import NETWORKS, get_model, resnet

import model_cases as mc
from conftest import FIXTURES

FIXTURE = np.load(FIXTURES / 'models.npz')
META = json.loads(str(FIXTURE['meta']))
RTOL = 1e-4


def built(network, kwargs, graph):
    """The network's Symbol, checked to be the graph that MXNet ran."""
    symbol = get_model(network, **kwargs)
    assert mc.graph_fingerprint(symbol.tojson()) == graph, 'graph differs from the fixture\'s'
    return symbol


def bound_logits(symbol, shape, seed, grad_req, dtype):
    """An executor of the symbol's logits (Dropout off) with model_cases.fill's parameters."""
    logits = mx.sym.load_json(mc.without_dropout(symbol.tojson())).get_children()[0]
    executor = logits.simple_bind(mx.cpu(), grad_req=grad_req, type_dict={'data': dtype},
                                  data=shape)
    states = dict(executor.arg_dict, **executor.aux_dict)
    for name, values in mc.fill({k: v.shape for k, v in states.items()}, seed).items():
        states[name][:] = values.astype(dtype)
    return executor


def assert_relative(got, want, scale, what):
    error = np.abs(np.asarray(got, np.float64) - want).max() / max(scale, 1e-30)
    assert error <= RTOL, '%s: relative error %.2e' % (what, error)


@pytest.mark.parametrize('case', sorted(META['cases']))
def test_forward_backward_match_mxnet(case):
    spec = META['cases'][case]
    symbol = built(spec['network'], dict(spec['kwargs'], num_classes=mc.CLASSES), spec['graph'])
    shape, dtype = tuple(spec['data_shape']), spec['dtype']
    _, out_shapes, _ = symbol.infer_shape(data=shape)
    assert out_shapes == [tuple(spec['output_shape'])] == [(mc.BATCH, mc.CLASSES)]

    executor = bound_logits(symbol, shape, spec['seed'], 'write', dtype)
    logits = executor.forward(is_train=True)[0].asnumpy()
    want = FIXTURE[case + '/logits']
    assert_relative(logits, want, np.abs(want).max(), 'logits')
    head = mc.head_gradient(logits.shape, spec['seed']).astype(dtype)
    executor.backward(mx.nd.array(head, dtype=dtype))

    names = sorted(executor.grad_dict)
    assert len(names) == spec['gradients']
    norms, maxabs, probes = (FIXTURE[case + key] for key in ('/norm', '/maxabs', '/probes'))
    # gradients that vanish in theory (a bias followed by BatchNorm) are measured against a
    # thousandth of the largest one
    norm_floor, value_floor = 1e-3 * norms.max(), 1e-3 * maxabs.max()
    for i, name in enumerate(names):
        norm, _, values = mc.summarize(executor.grad_dict[name].asnumpy())
        assert_relative(norm, norms[i], max(norms[i], norm_floor), 'norm of d%s' % name)
        assert_relative(values, probes[i], max(maxabs[i], value_floor), 'values of d%s' % name)


def test_full_size_resnet50_inference_matches_mxnet():
    network, kwargs, shape = mc.FULL_RESNET50
    spec = META['full_resnet50']
    executor = bound_logits(built(network, kwargs, spec['graph']), shape, spec['seed'], 'null',
                            'float32')
    logits = executor.forward(is_train=False)[0].asnumpy()
    want = FIXTURE['full-resnet-50/logits']
    assert logits.shape == want.shape == (1, 1000)
    assert_relative(logits, want, np.abs(want).max(), 'logits')


# every network at the image size it was designed for: (name, arguments, image size)
NATIVE = [('alexnet', {}, 224), ('googlenet', {}, 224), ('inception-bn', {}, 224),
          ('inception-bn', {'image_shape': '3,28,28'}, 28), ('inception-v3', {}, 299),
          ('inception-v4', {}, 299), ('mobilenet', {'alpha': 0.5}, 224),
          ('mobilenetv2', {'multiplier': 0.75}, 224), ('resnext', {'num_layers': 101}, 224),
          ('resnet', {'num_layers': 1001, 'image_shape': '3,32,32'}, 32),
          ('resnet-v1', {'num_layers': 110, 'image_shape': '3,32,32'}, 32),
          ('lenet', {}, 28), ('mlp', {}, 28)]
NATIVE += [('vgg', {'num_layers': n, 'batch_norm': bn}, 224)
           for n in (11, 13, 16, 19) for bn in (False, True)]
NATIVE += [(name, {'num_layers': n}, 224)
           for name in ('resnet', 'resnet-v1') for n in sorted(resnet.IMAGENET_UNITS)]


@pytest.mark.parametrize('network,kwargs,size', NATIVE,
                         ids=['%s-%s' % (n, '-'.join(map(str, k.values()))) for n, k, _ in NATIVE])
def test_infer_shape_at_full_size(network, kwargs, size):
    channels = 1 if network in ('lenet', 'mlp') else 3
    symbol = get_model(network, **kwargs)
    classes = 10 if network in ('lenet', 'mlp') else 1000
    _, out_shapes, _ = symbol.infer_shape(data=(4, channels, size, size))
    assert out_shapes == [(4, classes)]


def summary_total(symbol):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        mx.viz.print_summary(symbol, shape={'data': (1, 3, 224, 224)})
    return int(re.search(r'Total params: (\d+)', out.getvalue()).group(1))


@pytest.mark.parametrize('name,network,kwargs,known', [
    ('resnet-50', 'resnet', {'num_layers': 50}, 25.6e6),
    ('vgg-16', 'vgg', {'num_layers': 16}, 138.36e6)])
def test_parameter_totals(name, network, kwargs, known):
    """print_summary's total is MXNet's and the sum of the parameter shapes (gammas and betas
    count, moving statistics do not), near the published size."""
    symbol = get_model(network, **kwargs)
    arg_shapes, _, _ = symbol.infer_shape(data=(1, 3, 224, 224))
    counted = sum(int(np.prod(shape)) for arg, shape in zip(symbol.list_arguments(), arg_shapes)
                  if arg not in ('data', 'softmax_label'))
    assert summary_total(symbol) == counted == META['print_summary_totals'][name]
    assert abs(counted - known) / known < 0.005


def test_layer_names_of_mxnet_checkpoints():
    """Parameter names that MXNet-trained checkpoints of these networks carry."""
    expectations = {
        ('resnet', 50): ['bn_data_gamma', 'conv0_weight', 'stage1_unit1_bn1_beta',
                         'stage1_unit1_sc_weight', 'stage4_unit3_conv3_weight', 'bn1_gamma',
                         'fc1_weight'],
        ('resnet-v1', 50): ['conv0_weight', 'bn0_gamma', 'stage1_unit1_conv1sc_weight',
                            'stage1_unit1_sc_gamma', 'stage3_unit6_bn3_beta', 'fc1_bias'],
        ('resnext', 50): ['bn_data_beta', 'stage2_unit1_sc_weight', 'stage2_unit1_sc_bn_gamma'],
        ('vgg', 16): ['conv1_1_weight', 'conv5_3_bias', 'fc6_weight', 'fc8_bias'],
        ('inception-v3', None): ['conv_conv2d_weight', 'mixed_4_tower_1_conv_4_batchnorm_beta',
                                 'mixed_10_tower_1_mixed_conv_1_conv2d_weight', 'fc1_weight'],
        ('inception-v4', None): ['in_stem_conv1_3*3_conv2d_weight', 'in3C_conv10_3*1_conv2d_weight',
                                 're1B_conv6_3*3_batchnorm_gamma'],
        ('inception-bn', None): ['conv_1_weight', 'bn_2_red_gamma', 'conv_3c_double_3x3_1_weight',
                                 'conv_5b_proj_bias'],
        ('googlenet', None): ['conv_conv1_weight', 'conv_in5b_5x5_reduce_weight'],
        ('mobilenet', None): ['conv_1_conv2d_weight', 'conv_14_dw_batchnorm_gamma', 'fc_weight'],
        ('mobilenetv2', None): ['first-3x3-conv-conv2d_weight', 'seq-0-block0-exp-conv2d_weight',
                                'seq-6-block0-linear-batchnorm_beta',
                                'last-1x1-conv-batchnorm_gamma', 'fc_weight'],
        ('alexnet', None): ['conv1_weight', 'conv5_bias', 'fc3_weight'],
    }
    for (network, layers), names in expectations.items():
        kwargs = {} if layers is None else {'num_layers': layers}
        arguments = set(get_model(network, **kwargs).list_arguments())
        assert set(names) <= arguments, (network, sorted(set(names) - arguments))


def test_width_arguments():
    """num_group splits ResNeXt's 3x3 convolutions; alpha and multiplier scale MobileNets."""
    def weight_shape(symbol, name, size=224):
        arg_shapes, _, _ = symbol.infer_shape(data=(1, 3, size, size))
        return dict(zip(symbol.list_arguments(), arg_shapes))[name + '_weight']

    resnext = get_model('resnext', num_layers=50, num_group=8)
    assert weight_shape(resnext, 'stage1_unit1_conv2') == (128, 16, 3, 3)
    assert weight_shape(resnext, 'stage4_unit3_conv2') == (1024, 128, 3, 3)
    mobilenet = get_model('mobilenet', alpha=0.5)
    assert weight_shape(mobilenet, 'conv_14_conv2d') == (512, 512, 1, 1)
    assert weight_shape(mobilenet, 'conv_14_dw_conv2d') == (512, 1, 3, 3)
    mobilenetv2 = get_model('mobilenetv2', multiplier=1.4)
    assert weight_shape(mobilenetv2, 'seq-6-block0-linear-conv2d') == (448, 1344, 1, 1)
    assert weight_shape(mobilenetv2, 'last-1x1-conv-conv2d') == (1792, 448, 1, 1)


@pytest.mark.parametrize('network', ['alexnet', 'inception-v3', 'inception-v4', 'resnet',
                                     'resnet-v1', 'resnext', 'vgg'])
def test_float16(network):
    """dtype='float16' computes in half precision from the float32 data and gives float32
    probabilities (BatchNorm keeps float32 parameters, as in MXNet)."""
    symbol = get_model(network, dtype='float16')
    arg_types, out_types, _ = symbol.infer_type(data='float32')
    types = dict(zip(symbol.list_arguments(), arg_types))
    assert out_types == [np.float32]
    assert {types[name] for name in types if name.endswith('_weight')} == {np.float16}
    assert {types[name] for name in types if name.endswith('_gamma')} <= {np.float32}


def test_get_model():
    assert sorted(NETWORKS) == sorted(['alexnet', 'googlenet', 'inception-bn', 'inception-v3',
                                       'inception-v4', 'lenet', 'mlp', 'mobilenet', 'mobilenetv2',
                                       'resnet', 'resnet-v1', 'resnet-v2', 'resnext', 'vgg'])
    v1 = get_model('resnet_v1', num_layers=18).tojson()
    assert v1 == resnet.get_symbol(num_layers=18, version=1).tojson()
    with pytest.raises(ValueError, match='unknown network'):
        get_model('resnet-9000')
    with pytest.raises(ValueError, match='6n\\+2'):
        get_model('resnet', num_layers=21, image_shape='3,32,32')
    with pytest.raises(ValueError, match='11, 13, 16 or 19'):
        get_model('vgg', num_layers=12)

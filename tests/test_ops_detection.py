"""mx.contrib detection operators and ModulatedDeformableConvolution against MXNet 1.9.1
(fixtures/contrib_detection.npz, made by fixtures/gen_contrib_detection.py), plus gradients."""
import json

import numpy as np
import pytest

import mxtorch as mx
from conftest import FIXTURES

_DATA = np.load(FIXTURES / 'contrib_detection.npz')
_META = json.loads(str(_DATA['meta']))


def _listed(name, kind):
    found, i = [], 0
    while '%s.%s.%d' % (name, kind, i) in _DATA.files:
        found.append(_DATA['%s.%s.%d' % (name, kind, i)])
        i += 1
    return found


@pytest.mark.parametrize('name', sorted(_META))
def test_matches_mxnet(name):
    case = _META[name]
    inputs = [mx.nd.array(x, dtype=x.dtype) for x in _listed(name, 'in')]
    result = getattr(mx.nd.contrib, case['op'])(*inputs, **case['params'])
    result = result if isinstance(result, list) else [result]
    expected = _listed(name, 'out')
    assert len(result) == len(expected)
    for got, want in zip(result, expected):
        np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-5)


def test_box_nms_gradient_follows_kept_rows():
    boxes = np.array([[0, 0.5, 0.1, 0.1, 0.2, 0.2], [1, 0.4, 0.1, 0.1, 0.2, 0.2],
                      [0, 0.3, 0.1, 0.1, 0.14, 0.14], [2, 0.6, 0.5, 0.5, 0.7, 0.8]])
    head = np.arange(24, dtype='float32').reshape(4, 6)
    data = mx.sym.Variable('data')
    sym = mx.sym.contrib.box_nms(data, overlap_thresh=0.5, id_index=0, force_suppress=True)
    assert sym.list_outputs() == [sym.name + '_output0']
    grad = mx.nd.zeros((4, 6))
    exe = sym.bind(mx.cpu(), {'data': mx.nd.array(boxes)}, args_grad={'data': grad})
    out = exe.forward(is_train=True)[0].asnumpy()
    np.testing.assert_allclose(out[:3], boxes[[3, 0, 2]], rtol=1e-6)
    assert (out[3] == -1).all()
    exe.backward(mx.nd.array(head))
    # input row i gets the head gradient of the output row it went to; suppressed rows none
    np.testing.assert_allclose(grad.asnumpy(), head[[1, 0, 2, 0]] * [[1], [0], [1], [1]])


def test_gradientmultiplier():
    x = mx.nd.array([1.0, -2.0, 3.0])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.contrib.gradientmultiplier(mx.nd.contrib.quadratic(x, a=1, b=2, c=3),
                                             scalar=-0.5)
    y.backward()
    assert y.asnumpy().tolist() == [6.0, 3.0, 18.0]
    assert x.grad.asnumpy().tolist() == [-2.0, 1.0, -4.0]        # (2x + 2) * -0.5


def test_modulated_deformable_convolution_graph():
    sym = mx.sym.contrib.ModulatedDeformableConvolution(
        mx.sym.var('data'), mx.sym.var('offset'), mx.sym.var('mask'), num_filter=6,
        kernel=(3, 3), stride=(2, 2), dilate=(2, 2), pad=(2, 2), num_deformable_group=2,
        name='mdc')
    assert sym.list_arguments() == ['data', 'offset', 'mask', 'mdc_weight', 'mdc_bias']
    args, outs, _ = sym.infer_shape(data=(2, 4, 9, 9), offset=(2, 36, 5, 5), mask=(2, 18, 5, 5))
    assert args[3:] == [(6, 4, 3, 3), (6,)] and outs == [(2, 6, 5, 5)]


def test_modulated_deformable_convolution_zero_offsets_is_convolution():
    rs = np.random.RandomState(3)
    x, w, b = rs.rand(2, 4, 6, 5), rs.rand(6, 2, 3, 3), rs.rand(6)
    nd = [mx.nd.array(v, dtype='float64') for v in (x, w, b)]
    offset = mx.nd.zeros((2, 18, 6, 5), dtype='float64')
    mask = mx.nd.ones((2, 9, 6, 5), dtype='float64')
    got = mx.nd.contrib.ModulatedDeformableConvolution(nd[0], offset, mask, nd[1], nd[2],
                                                       kernel=(3, 3), pad=(1, 1), num_filter=6,
                                                       num_group=2)
    want = mx.nd.Convolution(nd[0], nd[1], nd[2], kernel=(3, 3), pad=(1, 1), num_filter=6,
                             num_group=2)
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-10)

"""Max Pooling (2-D, 4+ channels, CPU float) runs torch's channels-last kernel and picks its
outputs with the argmax indices: values and gradients as MXNet's (numbers from MXNet 1.9.1)."""
import numpy as np
import torch
import torch.nn.functional as F

import mxtorch as mx
from mxtorch.ops.conv import _channels_last_pays, _max_pool2d_channels_last


def _pool_grad(x, head=None, **kwargs):
    channel_first = np.moveaxis(x, -1, 1) if kwargs.get('layout') == 'NHWC' else x
    assert _channels_last_pays(torch.from_numpy(np.ascontiguousarray(channel_first)))
    x = mx.nd.array(x, dtype=x.dtype)
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Pooling(x, pool_type='max', **kwargs)
    y.backward(mx.nd.ones_like(y) if head is None else head)
    return y.asnumpy(), x.grad.asnumpy()


def test_ties_send_the_gradient_to_the_first_maximum():
    plane = np.array([[0, 0, 1, 3], [0, 0, 3, 2], [5, 5, 2, 2], [5, 5, 2, 2]], np.float32)
    y, g = _pool_grad(np.tile(plane, (8, 64, 1, 1)), kernel=(2, 2), stride=(2, 2))
    np.testing.assert_array_equal(y[1, 5], [[0, 3], [5, 2]])
    np.testing.assert_array_equal(g[1, 5], [[1, 0, 0, 1], [0, 0, 0, 0], [1, 0, 1, 0],
                                            [0, 0, 0, 0]])


def test_full_convention_with_padding_and_overlapping_windows():
    x = (np.arange(2 * 8 * 5 * 5, dtype=np.float32) % 7).reshape(2, 8, 5, 5)
    x = np.tile(x, (1, 21, 1, 1))           # planes 3, 11, ... of batch 1 are MXNet's case
    y, g = _pool_grad(x, kernel=(3, 3), stride=(2, 2), pad=(1, 1), pooling_convention='full')
    assert y.shape == (2, 168, 3, 3)
    np.testing.assert_array_equal(y[1, 3], [[3, 5, 6], [6, 6, 6], [4, 6, 6]])
    np.testing.assert_array_equal(g[1, 3], [[0, 1, 0, 1, 1], [0, 0, 0, 0, 0], [0, 2, 0, 0, 0],
                                            [0, 1, 0, 3, 0], [0, 0, 0, 0, 0]])


def test_channel_last_layout_and_float64_agree_with_the_plain_kernel():
    rng = np.random.RandomState(0)
    x = np.maximum(np.round(rng.randn(2, 28, 27, 6) * 2) / 2, 0)        # NHWC, many ties
    head = mx.nd.array(rng.rand(2, 10, 28, 6), dtype='float64')
    y, g = _pool_grad(x, head, kernel=(3, 2), stride=(3, 1), pad=(1, 1), layout='NHWC',
                      pooling_convention='full')
    t = torch.tensor(x).permute(0, 3, 1, 2).requires_grad_()
    ref = F.max_pool2d(t, (3, 2), (3, 1), (1, 1), ceil_mode=True)
    ref.backward(torch.tensor(head.asnumpy()).permute(0, 3, 1, 2))
    np.testing.assert_array_equal(y, ref.detach().permute(0, 2, 3, 1).numpy())
    np.testing.assert_array_equal(g, t.grad.permute(0, 2, 3, 1).numpy())


def test_second_order_gradient_is_max_poolings():
    x = torch.randn(2, 4, 5, 5, dtype=torch.float64, requires_grad=True)
    pool = lambda t: _max_pool2d_channels_last(t, (3, 3), (2, 2), (1, 1), ceil_mode=True)
    assert torch.autograd.gradgradcheck(pool, (x,))
    with torch.no_grad():
        np.testing.assert_array_equal(pool(x).numpy(), F.max_pool2d(
            x, (3, 3), (2, 2), (1, 1), ceil_mode=True).numpy())

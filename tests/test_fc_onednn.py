"""FullyConnected on float32 products big enough may run oneDNN's matmul (mxtorch/ops/gemm.py),
with or without gradients, and PyTorch's GEMM otherwise: both give NumPy's numbers."""
import numpy as np
import pytest

import mxtorch as mx
from mxtorch.ops import gemm


@pytest.mark.parametrize('flatten,shape', [(True, (8, 4, 16, 16)), (False, (2, 3, 1024))])
def test_large_fully_connected_matches_numpy(flatten, shape):
    rng = np.random.RandomState(0)
    x = rng.randn(*shape).astype(np.float32)
    w = rng.randn(512, 1024).astype(np.float32) / 32
    b = rng.randn(512).astype(np.float32)
    rows = x.reshape(-1, 1024)
    assert gemm._eligible(mx.nd.array(rows)._tensor, mx.nd.array(w)._tensor, None)
    got = mx.nd.FullyConnected(mx.nd.array(x), mx.nd.array(w), mx.nd.array(b), num_hidden=512,
                               flatten=flatten).asnumpy()
    want = (rows.astype(np.float64) @ w.T + b).reshape(got.shape)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_gradients_take_the_differentiable_path():
    rng = np.random.RandomState(1)
    x, w = mx.nd.array(rng.randn(8, 1024)), mx.nd.array(rng.randn(512, 1024) / 32)
    w.attach_grad()
    with mx.autograd.record():
        out = mx.nd.FullyConnected(x, w, no_bias=True, num_hidden=512)
    out.backward(mx.nd.ones(out.shape))
    np.testing.assert_allclose(w.grad.asnumpy(), np.tile(x.asnumpy().sum(0), (512, 1)),
                               rtol=1e-4, atol=1e-4)


def test_small_products_stay_on_pytorch():
    import torch
    assert not gemm._eligible(torch.ones(4, 64), torch.ones(64, 64), None)
    assert not gemm._eligible(torch.ones(8, 1024, dtype=torch.float64),
                              torch.ones(512, 1024, dtype=torch.float64), None)

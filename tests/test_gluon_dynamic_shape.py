"""A hybridized block whose graph has an operator with a value-dependent output shape
(boolean_mask) runs operator by operator, as MXNet's CachedOp does, with gradients."""
import numpy as np

import mxtorch as mx
from mxtorch import gluon


class _Masked(gluon.HybridBlock):
    def hybrid_forward(self, F, data, index):
        return F.contrib.boolean_mask(data * 2, index)


class _Static(gluon.HybridBlock):
    def hybrid_forward(self, F, data):
        return data * 2


def test_hybridized_boolean_mask_forward_and_gradient():
    rs = np.random.RandomState(3)
    x = rs.uniform(-1, 1, (5, 3)).astype(np.float32)
    keep = np.array([1, 0, 1, 1, 0], dtype=np.float32)
    block = _Masked()
    block.hybridize()
    for mask in (keep, 1 - keep):                 # a different output shape each call
        data = mx.nd.array(x)
        data.attach_grad()
        with mx.autograd.record():
            out = block(data, mx.nd.array(mask))
        out.backward(mx.nd.ones(out.shape) * 3)
        np.testing.assert_allclose(out.asnumpy(), 2 * x[mask != 0])
        np.testing.assert_allclose(data.grad.asnumpy(), 6 * mask[:, None] * np.ones((5, 3)))
    assert block._cached.imperative is not None


def test_static_graphs_still_bind_a_plan():
    block = _Static()
    block.hybridize()
    np.testing.assert_allclose(block(mx.nd.ones((2, 2))).asnumpy(), 2 * np.ones((2, 2)))
    assert block._cached.imperative is None and len(block._cached.executors) == 1

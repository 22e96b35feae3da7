"""Gluon's SoftmaxCrossEntropyLoss with sparse labels runs imperatively as one operator; its
values and gradients are those of the four-operator graph MXNet records (log_softmax, pick,
negative, mean), which the hybridized loss still runs."""
import numpy as np
import pytest

import mxtorch as mx
from mxtorch import autograd, gluon

CASES = [((16, 10), (16,), -1, 0), ((8, 5), (8, 1), 1, 0), ((4, 6, 5), (4, 6), -1, 0),
         ((4, 5, 6), (4, 6), 1, 0), ((6, 4), (4,), 0, 1)]


def _reference(x, label, axis, batch_axis):
    """NumPy: -log_softmax picked at the truncated, clipped label, mean over non-batch axes."""
    x = x.astype(np.float64)
    logp = x - x.max(axis, keepdims=True)
    logp = logp - np.log(np.exp(logp).sum(axis, keepdims=True))
    n = x.shape[axis]
    index = np.clip(np.trunc(label).astype(np.int64), 0, n - 1)
    kept = list(x.shape)
    kept[axis] = 1
    picked = -np.take_along_axis(logp, index.reshape(kept), axis)
    others = tuple(d for d in range(x.ndim) if d != batch_axis)
    return picked.mean(others)


def _run(loss, x, label, head):
    x.attach_grad()
    with autograd.record():
        out = loss(x, label)
    out.backward(head)
    return out.asnumpy(), x.grad.asnumpy()


@pytest.mark.parametrize('shape,lshape,axis,batch_axis', CASES)
def test_imperative_loss_equals_the_recorded_graph(shape, lshape, axis, batch_axis):
    rng = np.random.RandomState(3)
    x = mx.nd.array(rng.randn(*shape))
    label = mx.nd.array(rng.randint(-2, shape[axis] + 2, size=lshape) + 0.5)
    head = mx.nd.array(rng.rand(shape[batch_axis]))
    loss = gluon.loss.SoftmaxCrossEntropyLoss(axis=axis, batch_axis=batch_axis)
    value, grad = _run(loss, x, label, head)
    hybrid = gluon.loss.SoftmaxCrossEntropyLoss(axis=axis, batch_axis=batch_axis)
    hybrid.hybridize()
    h_value, h_grad = _run(hybrid, x, label, head)
    np.testing.assert_allclose(value, _reference(x.asnumpy(), label.asnumpy(), axis,
                                                 batch_axis), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(value, h_value, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(grad, h_grad, rtol=1e-6, atol=1e-7)


def test_mismatched_label_is_refused_as_pick_refuses_it():
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    with pytest.raises(mx.MXNetError, match='pick'):
        loss(mx.nd.ones((4, 3)), mx.nd.ones((5,)))


def test_weights_and_dense_labels_keep_the_general_path():
    x = mx.nd.array([[1.0, 2.0, 3.0], [1.0, 0.0, -1.0]])
    label = mx.nd.array([2, 0])
    plain = gluon.loss.SoftmaxCrossEntropyLoss()(x, label).asnumpy()
    weighted = gluon.loss.SoftmaxCrossEntropyLoss(weight=2.0)(x, label).asnumpy()
    np.testing.assert_allclose(weighted, 2 * plain, rtol=1e-6)
    sample = gluon.loss.SoftmaxCrossEntropyLoss()(x, label, mx.nd.array([[1.0], [0.0]]))
    np.testing.assert_allclose(sample.asnumpy(), [plain[0], 0], rtol=1e-6)
    dense = gluon.loss.SoftmaxCrossEntropyLoss(sparse_label=False)(
        x, mx.nd.array([[0, 0, 1], [1, 0, 0]]))
    np.testing.assert_allclose(dense.asnumpy(), plain, rtol=1e-6)


def _fused_nodes(block):
    """How many fused per-sample loss nodes the hybridized block's bound plans run."""
    return sum(ex.get_optimized_symbol().tojson().count('"_softmax_cross_entropy_per_sample"')
               for ex in block._cached.executors.values())


@pytest.mark.parametrize('shape,lshape,axis,batch_axis', CASES)
def test_hybridized_loss_is_bound_as_one_node_with_the_graphs_results(
        shape, lshape, axis, batch_axis, monkeypatch):
    rng = np.random.RandomState(5)
    x = mx.nd.array(rng.randn(*shape))
    label = mx.nd.array(rng.randint(-2, shape[axis] + 2, size=lshape) + 0.5)
    head = mx.nd.array(rng.rand(shape[batch_axis]))
    results = []
    for fuse in ('1', '0'):
        monkeypatch.setenv('MXTORCH_FUSE_LOSS', fuse)
        loss = gluon.loss.SoftmaxCrossEntropyLoss(axis=axis, batch_axis=batch_axis)
        loss.hybridize(static_alloc=True)
        results.append(_run(loss, x, label, head))
        assert _fused_nodes(loss) == (1 if fuse == '1' else 0)
        # the exported graph stays MXNet's four operators
        assert '_softmax_cross_entropy_per_sample' not in loss._cached_graph[1].tojson()
    (value, grad), (plain_value, plain_grad) = results
    np.testing.assert_array_equal(value, plain_value)
    np.testing.assert_array_equal(grad, plain_grad)
    np.testing.assert_allclose(value, _reference(x.asnumpy(), label.asnumpy(), axis,
                                                 batch_axis), rtol=1e-5, atol=1e-6)


def test_other_loss_graphs_are_not_fused():
    x = mx.nd.array([[1.0, 2.0, 3.0], [1.0, 0.0, -1.0]])
    label = mx.nd.array([2, 0])
    weighted = gluon.loss.SoftmaxCrossEntropyLoss(weight=2.0)
    dense = gluon.loss.SoftmaxCrossEntropyLoss(sparse_label=False)
    for block, args, want in ((weighted, (x, label), [0.8152, 0.8152]),
                              (dense, (x, mx.nd.array([[0, 0, 1], [1, 0, 0]])),
                               [0.4076, 0.4076])):
        block.hybridize()
        np.testing.assert_allclose(block(*args).asnumpy(), want, rtol=1e-3)
        assert _fused_nodes(block) == 0
    # an intermediate value that is also an output of the graph keeps the chain as it is
    data, lab = mx.sym.var('data'), mx.sym.var('label')
    logp = mx.sym.log_softmax(data)
    loss = mx.sym.mean(-mx.sym.pick(logp, lab, keepdims=True), axis=0, exclude=True)
    ex = mx.sym.Group([loss, logp]).bind(mx.cpu(), {'data': x, 'label': label})
    assert '_softmax_cross_entropy_per_sample' not in ex.get_optimized_symbol().tojson()
    out = ex.forward()
    np.testing.assert_allclose(out[0].asnumpy(), [0.4076, 0.4076], rtol=1e-3)


def test_imperative_call_keeps_hooks_and_subclass_overrides():
    x = mx.nd.array([[1.0, 2.0, 3.0], [1.0, 0.0, -1.0]])
    label = mx.nd.array([2, 0])
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    seen = []
    loss.register_forward_hook(lambda blk, inputs, out: seen.append(out.shape))
    np.testing.assert_allclose(loss(x, label).asnumpy(), [0.4076, 0.4076], rtol=1e-3)
    assert seen == [(2,)]

    class Doubled(gluon.loss.SoftmaxCrossEntropyLoss):
        def hybrid_forward(self, F, pred, label, sample_weight=None):
            return 2 * super().hybrid_forward(F, pred, label, sample_weight)
    np.testing.assert_allclose(Doubled()(x, label).asnumpy(), [0.8152, 0.8152], rtol=1e-3)

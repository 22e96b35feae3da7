"""gluon.contrib: layers (PixelShuffle against NumPy, Concurrent), convolutional cells, the
sampler, and the Estimator (same parameters as a hand-written Trainer loop)."""
import numpy as np
import pytest

import mxtorch as mx
from mxtorch import gluon
from mxtorch.gluon import nn
from mxtorch.gluon.contrib import estimator as est_mod
from mxtorch.gluon.contrib.nn import (HybridConcurrent, Identity, PixelShuffle1D,
                                      PixelShuffle2D, PixelShuffle3D)


def _np_pixel_shuffle(x, factors):
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    d = len(factors)
    out_c = c // int(np.prod(factors))
    y = x.reshape((n, out_c) + tuple(factors) + spatial)
    # (n, C, f1..fd, s1..sd) -> (n, C, s1, f1, s2, f2, ...)
    order = [0, 1] + [p for i in range(d) for p in (2 + d + i, 2 + i)]
    y = y.transpose(order)
    return y.reshape((n, out_c) + tuple(s * f for s, f in zip(spatial, factors)))


@pytest.mark.parametrize('layer,factors,shape', [
    (PixelShuffle1D(3), (3,), (2, 6, 5)),
    (PixelShuffle2D((2, 3)), (2, 3), (1, 12, 2, 3)),
    (PixelShuffle3D((2, 1, 2)), (2, 1, 2), (1, 8, 2, 3, 4))])
def test_pixel_shuffle_matches_numpy(layer, factors, shape):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    want = _np_pixel_shuffle(x, factors)
    np.testing.assert_array_equal(layer(mx.nd.array(x)).asnumpy(), want)
    layer.hybridize()
    np.testing.assert_array_equal(layer(mx.nd.array(x)).asnumpy(), want)


def test_hybrid_concurrent_concatenates_branches():
    net = HybridConcurrent(axis=1)
    net.add(nn.Dense(3, in_units=4), Identity())
    net.initialize(mx.init.One())
    x = mx.nd.array(np.arange(8).reshape(2, 4))
    out = net(x).asnumpy()
    np.testing.assert_allclose(out[:, :3], np.repeat(x.asnumpy().sum(1, keepdims=True), 3, 1))
    np.testing.assert_allclose(out[:, 3:], x.asnumpy())
    assert len(net(mx.sym.var('data')).list_arguments()) == 3


def test_conv_rnn_cell_with_1x1_kernels_is_a_dense_rnn_per_position():
    conv = gluon.contrib.rnn.Conv1DRNNCell((4, 5), 3, 1, 1, prefix='c_')
    dense = gluon.rnn.RNNCell(3, prefix='d_')
    conv.initialize(mx.init.Uniform(0.5))
    dense.initialize()
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (2, 3, 4, 5)))   # N T C W
    out, _ = conv.unroll(3, x, merge_outputs=True)
    assert out.shape == (2, 3, 3, 5)
    xd = x.transpose((0, 3, 1, 2)).reshape((10, 3, 4))
    dense.unroll(3, xd)
    for k in ('i2h_weight', 'h2h_weight', 'i2h_bias', 'h2h_bias'):
        w = getattr(conv, k).data()
        getattr(dense, k).set_data(w.reshape(w.shape[:2]) if w.ndim == 3 else w)
    ref, _ = dense.unroll(3, xd, merge_outputs=True)
    ref = ref.reshape((2, 5, 3, 3)).transpose((0, 2, 3, 1))
    np.testing.assert_allclose(out.asnumpy(), ref.asnumpy(), rtol=1e-5, atol=1e-6)


def test_interval_sampler():
    assert list(gluon.contrib.data.IntervalSampler(7, 3)) == [0, 3, 6, 1, 4, 2, 5]
    assert list(gluon.contrib.data.IntervalSampler(7, 3, rollover=False)) == [0, 3, 6]


def _data(n=16):
    rng = np.random.RandomState(1)
    x = rng.uniform(-1, 1, (n, 3)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5], np.float32) + 0.3).reshape(-1, 1)
    return x, y


def test_estimator_fit_equals_a_trainer_loop():
    x, y = _data()
    loader = gluon.data.DataLoader(gluon.data.ArrayDataset(x, y), batch_size=4)
    nets = []
    for _ in range(2):
        net = nn.Dense(1, in_units=3)
        net.initialize(mx.init.Constant(0.1))
        nets.append(net)
    trainer = gluon.Trainer(nets[0].collect_params(), 'sgd', {'learning_rate': 0.1})
    est = est_mod.Estimator(nets[0], gluon.loss.L2Loss(), trainer=trainer)
    est.logger.disabled = True
    est.fit(loader, epochs=2)
    manual = gluon.Trainer(nets[1].collect_params(), 'sgd', {'learning_rate': 0.1})
    loss_fn = gluon.loss.L2Loss()
    for _ in range(2):
        for data, label in loader:
            with mx.autograd.record():
                loss = loss_fn(nets[1](data), label)
            loss.backward()
            manual.step(data.shape[0])
    for a, b in zip(nets[0].collect_params().values(), nets[1].collect_params().values()):
        np.testing.assert_allclose(a.data().asnumpy(), b.data().asnumpy(), rtol=1e-6)
    assert [m.name for m in est.train_metrics] == ['training l2loss']
    assert [m.name for m in est.val_metrics] == ['validation l2loss']


def test_estimator_batches_early_stopping_and_checks(tmp_path):
    x, y = _data()
    loader = gluon.data.DataLoader(gluon.data.ArrayDataset(x, y), batch_size=4)
    net = nn.Dense(1, in_units=3)
    with pytest.warns(UserWarning, match='No trainer specified'):
        est = est_mod.Estimator(net, gluon.loss.L2Loss())
    est.logger.disabled = True
    stopper = est_mod.StoppingHandler()
    est.fit(loader, batches=6, event_handlers=[stopper])
    assert stopper.current_batch == 6 and stopper.current_epoch == 2   # 4 + 2 batches
    with pytest.raises(ValueError, match='exactly one type of iteration'):
        est.fit(loader, epochs=1, batches=2)
    with pytest.raises(ValueError, match='loss must be a Loss'):
        est_mod.Estimator(net, 'l2')
    ckpt = est_mod.CheckpointHandler(str(tmp_path), model_prefix='m', epoch_period=1)
    est.fit(loader, epochs=2, event_handlers=[ckpt])
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        'm-epoch0batch4.params', 'm-epoch0batch4.states', 'm-epoch1batch8.params',
        'm-epoch1batch8.states']

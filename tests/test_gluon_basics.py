"""mx.gluon: naming, losses (MXNet 1.9.1 numbers), hybridized == imperative, export/load,
Trainer, DataLoader."""
import os

import numpy as np
import pytest

import mxtorch as mx
from mxtorch import autograd, gluon
from mxtorch.gluon import nn

L = gluon.loss


def test_parameter_names_follow_mxnet():
    with mx.name.NameManager():
        net = nn.HybridSequential()
        with net.name_scope():
            net.add(nn.Dense(4, activation='relu'), nn.Conv2DTranspose(3, 2), nn.Conv2D(3, 2),
                    nn.BatchNorm(), nn.MaxPool2D(), nn.Dense(2))
        single = nn.Dense(3)
        assert single.weight.name == 'dense0_weight'
        assert nn.LeakyReLU(0.1).name == 'leakyrelu0'
        assert nn.Activation('tanh').name == 'tanh0'
    assert [c.name for c in net._children.values()] == [
        'hybridsequential0_dense0', 'hybridsequential0_conv0', 'hybridsequential0_conv1',
        'hybridsequential0_batchnorm0', 'hybridsequential0_pool0', 'hybridsequential0_dense1']
    assert net[0].act.name == 'hybridsequential0_dense0_relu'
    assert sorted(net.collect_params().keys())[:4] == [
        'hybridsequential0_batchnorm0_beta', 'hybridsequential0_batchnorm0_gamma',
        'hybridsequential0_batchnorm0_running_mean', 'hybridsequential0_batchnorm0_running_var']
    assert list(net.collect_params('.*dense1.*').keys()) == [
        'hybridsequential0_dense1_weight', 'hybridsequential0_dense1_bias']


def test_deferred_init_and_parameter_api():
    dense = nn.Dense(3)
    dense.initialize()
    with pytest.raises(gluon.DeferredInitializationError):
        dense.weight.data()
    dense(mx.nd.ones((2, 5)))
    assert dense.weight.shape == (3, 5)
    assert dense.bias.data().asnumpy().tolist() == [0, 0, 0]
    dense.weight.set_data(mx.nd.ones((3, 5)))
    assert dense.weight.data().asnumpy().sum() == 15
    p = gluon.Parameter('p', shape=(2,), grad_req='null')
    p.initialize(init='ones')
    with pytest.raises(RuntimeError, match="grad_req='null'"):
        p.grad()
    c = gluon.Constant('c', [[1, 2], [3, 4]])
    c.initialize()
    assert c.data().asnumpy().tolist() == [[1, 2], [3, 4]] and c.grad_req == 'null'


# MXNet 1.9.1's values for these inputs
LOSS_REF = {
    'L2': [0.49416670203208923, 0.14000000059604645],
    'L1': [0.5833333134651184, 0.1666666716337204],
    'BCE': [0.8148552775382996, 0.4862750470638275],
    'BCEpos': [1.3872348070144653, 0.4862750470638275],
    'CE': [0.10083599388599396, 0.6674647927284241],
    'CEdense': [3.603344202041626, 0.33373239636421204],
    'KL': [0.7998511791229248, 0.05781172215938568],
    'Huber': [0.9300000071525574, 0.14000000059604645],
    'Hinge': [1.1666666269302368, 0.5666666626930237],
    'SqHinge': [2.176666498184204, 0.5233333706855774],
    'Logistic': [0.8148552775382996, 0.4862750470638275],
    'Triplet': [1.7000000476837158, 0.25],
    'Poisson': [2.166214942932129],
    'Cosine': [[0.7594460844993591], [0.9642364978790283]],
    'CTC': [3.401740789413452, 4.8429036140441895],
}


def _losses(pred, lab, sl, sw, F=mx.nd):
    return {
        'L2': L.L2Loss()(pred, lab, sw),
        'L1': L.L1Loss(weight=0.5)(pred, lab),
        'BCE': L.SigmoidBCELoss()(pred, lab),
        'BCEpos': L.SigmoidBCELoss()(pred, lab, None, F.array([[1.0, 2.0, 3.0]])),
        'CE': L.SoftmaxCELoss()(pred, sl, sw),
        'CEdense': L.SoftmaxCELoss(sparse_label=False)(pred, lab),
        'KL': L.KLDivLoss(from_logits=False)(pred, F.softmax(lab)),
        'Huber': L.HuberLoss(rho=0.5)(pred, lab),
        'Hinge': L.HingeLoss()(pred, 2 * lab - 1),
        'SqHinge': L.SquaredHingeLoss()(pred, 2 * lab - 1),
        'Logistic': L.LogisticLoss(label_format='binary')(pred, lab),
        'Triplet': L.TripletLoss()(pred, lab, lab * 0.5),
        'Poisson': L.PoissonNLLLoss()(pred, lab),
        'Cosine': L.CosineEmbeddingLoss()(pred, lab, F.array([1, -1])),
        'CTC': L.CTCLoss()(F.array(np.linspace(-1, 1, 40).reshape(2, 5, 4)),
                           F.array([[1, 0, -1], [2, 2, 1]])),
    }


def test_losses_match_mxnet():
    pred = mx.nd.array([[0.3, -1.2, 2.0], [1.5, 0.1, -0.4]])
    lab = mx.nd.array([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    got = _losses(pred, lab, mx.nd.array([2, 0]), mx.nd.array([[0.5], [2.0]]))
    for name, ref in LOSS_REF.items():
        np.testing.assert_allclose(got[name].asnumpy(), np.array(ref), rtol=1e-4, atol=1e-6,
                                   err_msg=name)


def test_loss_against_numpy_and_symbolic():
    x = np.random.uniform(-3, 3, (4, 5)).astype(np.float32)
    z = np.random.randint(0, 2, (4, 5)).astype(np.float32)
    got = L.SigmoidBCELoss()(mx.nd.array(x), mx.nd.array(z)).asnumpy()
    p = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(got, (-z * np.log(p) - (1 - z) * np.log(1 - p)).mean(axis=1),
                               rtol=1e-5)
    sym = L.L2Loss()(mx.sym.var('pred'), mx.sym.var('label'))
    out = sym.eval(pred=mx.nd.array(x), label=mx.nd.array(z))[0].asnumpy()
    np.testing.assert_allclose(out, ((x - z) ** 2 / 2).mean(axis=1), rtol=1e-6)


def test_operators_without_parameters_ignore_extra_attributes():
    a = mx.nd.array([[1.0, -2.0]])
    assert mx.nd.broadcast_maximum(mx.nd.array([0]), a, axis=1).asnumpy().tolist() == [[1, 0]]


def _net():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(4, 3, padding=1, in_channels=2), nn.BatchNorm(in_channels=4),
                nn.Activation('relu'), nn.MaxPool2D(), nn.Flatten(), nn.Dense(3, in_units=16))
    net.initialize(mx.init.Xavier())
    return net


def _step(net, x):
    with autograd.record():
        y = net(x)
        loss = L.SoftmaxCELoss()(y, mx.nd.array([0, 2]))
    loss.backward()
    params = net.collect_params()
    return (y.asnumpy(), {k: p.grad().asnumpy().copy() for k, p in params.items()
                          if p.grad_req != 'null'},
            {k: p.data().asnumpy().copy() for k, p in params.items() if 'running' in k})


def test_hybridized_equals_imperative_forward_backward():
    net = _net()
    x = mx.nd.random.uniform(shape=(2, 2, 4, 4))
    saved = {k: p.data().copy() for k, p in net.collect_params().items()}
    y1, g1, s1 = _step(net, x)
    for k, p in net.collect_params().items():        # undo the running-stat update
        p.set_data(saved[k])
    net.hybridize()
    y2, g2, s2 = _step(net, x)
    np.testing.assert_allclose(y1, y2, rtol=1e-5, atol=1e-6)
    for k in g1:
        np.testing.assert_allclose(g1[k], g2[k], rtol=1e-4, atol=1e-6, err_msg=k)
    for k in s1:
        np.testing.assert_allclose(s1[k], s2[k], rtol=1e-5, atol=1e-6, err_msg=k)
    # inference (no record): running statistics, same as imperative
    y3 = net(x).asnumpy()
    net.hybridize(False)
    np.testing.assert_allclose(y3, net(x).asnumpy(), rtol=1e-5, atol=1e-6)


def test_export_loads_in_module_and_symbolblock(tmp_path):
    net = _net()
    net.hybridize()
    x = mx.nd.random.uniform(shape=(2, 2, 4, 4))
    ref = net(x).asnumpy()
    prefix = str(tmp_path / 'model')
    net.export(prefix, epoch=3)
    assert os.path.exists(prefix + '-symbol.json') and os.path.exists(prefix + '-0003.params')
    sym, args, auxs = mx.model.load_checkpoint(prefix, 3)
    mod = mx.mod.Module(sym, data_names=['data'], label_names=None)
    mod.bind(data_shapes=[('data', (2, 2, 4, 4))], for_training=False)
    mod.set_params(args, auxs)
    mod.forward(mx.io.DataBatch([x]), is_train=False)
    np.testing.assert_allclose(mod.get_outputs()[0].asnumpy(), ref, rtol=1e-5, atol=1e-6)
    block = gluon.SymbolBlock.imports(prefix + '-symbol.json', ['data'],
                                      prefix + '-0003.params')
    np.testing.assert_allclose(block(x).asnumpy(), ref, rtol=1e-5, atol=1e-6)


def test_save_load_parameters(tmp_path):
    net = _net()
    fname = str(tmp_path / 'net.params')
    net.save_parameters(fname)
    assert sorted(mx.nd.load(fname).keys())[:2] == ['0.bias', '0.weight']
    other = _net()
    other.load_parameters(fname)
    for a, b in zip(net.collect_params().values(), other.collect_params().values()):
        assert (a.data().asnumpy() == b.data().asnumpy()).all()
    with pytest.raises(AssertionError, match='is missing'):
        nn.Dense(2, in_units=2).load_parameters(fname)


def test_trainer_sgd_step():
    dense = nn.Dense(2, in_units=3)
    dense.initialize(mx.init.One())
    trainer = gluon.Trainer(dense.collect_params(), 'sgd',
                            {'learning_rate': 0.1, 'momentum': 0.0})
    x = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    with autograd.record():
        loss = dense(x).sum()
    loss.backward()
    trainer.step(2)
    expect = 1 - 0.1 * np.array([5, 7, 9]) / 2
    np.testing.assert_allclose(dense.weight.data().asnumpy(), np.stack([expect, expect]),
                               rtol=1e-6)
    np.testing.assert_allclose(dense.bias.data().asnumpy(), [-0.1, -0.1], rtol=1e-6)
    with pytest.raises(UserWarning, match='has not been updated by backward'):
        trainer.step(2)
    trainer.set_learning_rate(0.5)
    assert trainer.learning_rate == 0.5


def test_dataloader_batches():
    data = gluon.data.ArrayDataset(np.arange(10).reshape(5, 2), np.arange(5))
    loader = gluon.data.DataLoader(data, batch_size=2, last_batch='keep')
    batches = list(loader)
    assert len(loader) == 3 and [b[0].shape for b in batches] == [(2, 2), (2, 2), (1, 2)]
    assert batches[2][1].asnumpy().tolist() == [4]
    threaded = gluon.data.DataLoader(data, batch_size=2, num_workers=2, last_batch='discard')
    assert [b[1].asnumpy().tolist() for b in threaded] == [[0, 1], [2, 3]]
    assert len(data.shard(2, 1)) == 2 and data.take(2)[1][0].tolist() == [2, 3]

"""Training plans on channels-last activations (plan.py, CPU): channel-first 2-D convolutions,
BatchNorm, activations, sums and pooling run on channels-last data between the graph's inputs
and its other operators. The numbers are those of the channel-first plan: outputs, gradients,
BatchNorm's moving statistics and parameters after several SGD steps, for the traced call
(joint.py) and the eager one; BatchNorm's channels-last training kernel is as exact as the
channel-first one (checked against float64 NumPy on post-ReLU data, where torch's own
channels-last kernel is ~1e-4 off) and twice differentiable."""
import numpy as np
import pytest
import torch

import mxtorch as mx
from mxtorch import gluon, joint
from mxtorch.ops.nn import _ChannelsLastBatchNorm


@pytest.fixture(autouse=True)
def always_keep(monkeypatch):
    """The traced call is kept whenever it agrees (timing would make the tests depend on the
    machine's load)."""
    monkeypatch.setattr(joint, 'KEEP_BELOW', float('inf'))


def _post_relu(shape, seed=0):
    rs = np.random.RandomState(seed)
    return np.maximum(rs.normal(0.5, 1.0, shape), 0).astype('float32')


def _bn_reference(x, gamma, beta, grad, eps):
    """float64 training BatchNorm over axis 1: (out, mean, inv_std, dx, dgamma, dbeta)."""
    x, grad = x.astype('f8'), grad.astype('f8')
    gamma, beta = gamma.astype('f8').reshape(1, -1, 1, 1), beta.astype('f8').reshape(1, -1, 1, 1)
    axes = (0, 2, 3)
    mean = x.mean(axes, keepdims=True)
    inv_std = 1 / np.sqrt(((x - mean) ** 2).mean(axes, keepdims=True) + eps)
    xhat = (x - mean) * inv_std
    dbeta = grad.sum(axes, keepdims=True)
    dgamma = (grad * xhat).sum(axes, keepdims=True)
    dx = gamma * inv_std * (grad - dbeta / x[:, :1].size - xhat * dgamma / x[:, :1].size)
    return (xhat * gamma + beta, mean.ravel(), inv_std.ravel(), dx, (dgamma * 1).ravel(),
            dbeta.ravel())


@pytest.mark.parametrize('shape', [(32, 16, 32, 32), (8, 64, 8, 8)])
def test_channels_last_batchnorm_is_exact(shape):
    x = _post_relu(shape)
    rs = np.random.RandomState(1)
    gamma, beta = rs.uniform(0.5, 1.5, shape[1]), rs.normal(size=shape[1])
    grad = rs.normal(size=shape).astype('float32')
    xt = torch.from_numpy(x).contiguous(memory_format=torch.channels_last).requires_grad_()
    gt = torch.tensor(gamma, dtype=torch.float32, requires_grad=True)
    bt = torch.tensor(beta, dtype=torch.float32, requires_grad=True)
    out, mean, inv_std = _ChannelsLastBatchNorm.apply(xt, gt, bt, 2e-5)
    assert out.is_contiguous(memory_format=torch.channels_last) and not out.is_contiguous()
    out.backward(torch.from_numpy(grad).contiguous(memory_format=torch.channels_last))
    want = _bn_reference(x, gamma, beta, grad, 2e-5)
    got = [out, mean, inv_std, xt.grad, gt.grad, bt.grad]
    for name, g, w in zip(('out', 'mean', 'inv_std', 'dx', 'dgamma', 'dbeta'), got, want):
        g = g.detach().numpy().astype('f8')
        err = np.abs(g - w).max() / np.abs(w).max()
        # the channel-first kernel's own errors here: 1e-7 (dx: 3e-6, the formula's cancellation)
        assert err < (1e-5 if name == 'dx' else 5e-7), (name, err)
    # torch's channels-last kernel accumulates row after row: its variance is far less exact
    _, _, torch_inv_std = torch.native_batch_norm(xt.detach(), gt.detach(), bt.detach(), None,
                                                  None, True, 0.0, 2e-5)
    if shape[0] * shape[2] * shape[3] >= 32768:
        assert np.abs(torch_inv_std.numpy() - want[2]).max() / want[2].max() > 5e-6


def test_channels_last_batchnorm_twice_differentiable():
    rs = np.random.RandomState(2)
    x = torch.tensor(rs.normal(size=(4, 3, 5, 5))).contiguous(
        memory_format=torch.channels_last).requires_grad_()
    gamma = torch.tensor(rs.uniform(0.5, 1.5, 3), requires_grad=True)
    beta = torch.tensor(rs.normal(size=3), requires_grad=True)

    def fn(x, gamma, beta):
        return _ChannelsLastBatchNorm.apply(x, gamma, beta, 1e-3)[0]
    assert torch.autograd.gradcheck(fn, (x, gamma, beta))
    assert torch.autograd.gradgradcheck(fn, (x, gamma, beta))


def _resnet_block_net(pool='avg'):
    """conv -> BN -> relu -> conv (+ 1x1 shortcut) -> sum -> BN -> relu -> pool -> FC: every
    operator that keeps the layout, and Flatten/FullyConnected/SoftmaxOutput that do not."""
    data = mx.sym.Variable('data')
    x = mx.sym.BatchNorm(data, fix_gamma=True, eps=2e-5, name='bn_data')
    x = mx.sym.Convolution(x, num_filter=8, kernel=(3, 3), pad=(1, 1), no_bias=True,
                           name='conv0')
    y = mx.sym.Activation(mx.sym.BatchNorm(x, fix_gamma=False, eps=2e-5, name='bn1'),
                          act_type='relu')
    y = mx.sym.Convolution(y, num_filter=16, kernel=(3, 3), stride=(2, 2), pad=(1, 1),
                           no_bias=True, name='conv1')
    y = mx.sym.Activation(mx.sym.BatchNorm(y, fix_gamma=False, eps=2e-5, name='bn2'),
                          act_type='relu')
    y = mx.sym.Convolution(y, num_filter=16, kernel=(3, 3), pad=(1, 1), no_bias=True,
                           name='conv2')
    sc = mx.sym.Convolution(x, num_filter=16, kernel=(1, 1), stride=(2, 2), no_bias=True,
                            name='sc')
    y = mx.sym.BatchNorm(y + sc, fix_gamma=False, eps=2e-5, name='bn3')
    y = mx.sym.Activation(y, act_type='relu')
    if pool == 'avg':
        y = mx.sym.Pooling(y, global_pool=True, kernel=(7, 7), pool_type='avg')
    else:     # windows over post-ReLU zeros: ties, whose gradient goes to the first maximum
        y = mx.sym.Pooling(y, kernel=(2, 2), stride=(2, 2), pool_type='max')
    y = mx.sym.FullyConnected(mx.sym.Flatten(y), num_hidden=5, name='fc')
    return mx.sym.SoftmaxOutput(y, name='softmax')


def _train(monkeypatch, sym, channels_last, traced, steps=4, shape=(8, 3, 24, 24)):
    monkeypatch.setenv('MXTORCH_CHANNELS_LAST', '1' if channels_last else '0')
    monkeypatch.setenv('MXTORCH_JOINT', '1' if traced else '0')
    mod = mx.mod.Module(sym)
    mod.bind([('data', shape)], [('softmax_label', (shape[0],))])
    mod.init_params(mx.init.Xavier(magnitude=2.0))
    rs = np.random.RandomState(0)
    args, auxs = mod.get_params()
    mod.set_params({k: mx.nd.array(rs.uniform(-0.3, 0.3, v.shape)) for k, v in args.items()},
                   auxs)
    mod.init_optimizer(optimizer_params={'learning_rate': 0.02, 'momentum': 0.9})
    rs = np.random.RandomState(1)
    outputs = []
    for _ in range(steps):
        batch = mx.io.DataBatch([mx.nd.array(rs.uniform(-1, 2, shape))],
                                [mx.nd.array(rs.randint(0, 5, shape[0]))])
        mod.forward_backward(batch)
        outputs.append(mod.get_outputs()[0].asnumpy())
        grads = {n: g[0].asnumpy() for n, g in zip(mod._exec_group.param_names,
                                                   mod._exec_group.grad_arrays)}
        mod.update()
    args, auxs = mod.get_params()
    exe = mod._exec_group.execs[0]
    return (outputs, grads, {k: v.asnumpy() for k, v in args.items()},
            {k: v.asnumpy() for k, v in auxs.items()}, exe)


def _close(a, b, what, rtol=1e-5):
    err = np.abs(a - b).max() / max(np.abs(b).max(), 1e-30)
    assert err < rtol, (what, err)


@pytest.mark.parametrize('traced', [False, True])
@pytest.mark.parametrize('pool', ['avg', 'max'])
def test_training_equals_channel_first(monkeypatch, traced, pool):
    """Four SGD steps with momentum: outputs, parameters and moving statistics within 1e-5 of
    the channel-first plan's, the last step's gradients within 1e-4 (sums that cancel, as
    bn_data_beta's, differ by float rounding: see the next test)."""
    sym = _resnet_block_net(pool)
    cf = _train(monkeypatch, sym, False, traced)
    cl = _train(monkeypatch, sym, True, traced)
    for k, (a, b) in enumerate(zip(cl[0], cf[0])):
        _close(a, b, 'output %d' % k)
    for part, what, rtol in ((1, 'gradient', 1e-4), (2, 'parameter', 1e-5),
                             (3, 'moving statistic', 1e-5)):
        assert sorted(cl[part]) == sorted(cf[part])
        for name in cf[part]:
            _close(cl[part][name], cf[part][name], '%s %s' % (what, name), rtol)
    if traced:
        assert cl[4]._joint, 'the traced call was not used'
    assert cl[4]._plan.channels_last_source is not None


def _gradients(monkeypatch, channels_last, dtype, shape=(8, 3, 24, 24)):
    monkeypatch.setenv('MXTORCH_CHANNELS_LAST', '1' if channels_last else '0')
    exe = _resnet_block_net().simple_bind(mx.cpu(), data=shape, softmax_label=(shape[0],),
                                          type_dict={'data': dtype})
    rs = np.random.RandomState(0)
    for name, arr in exe.arg_dict.items():
        if name == 'data':
            arr[:] = rs.uniform(-1, 2, shape)
        elif name == 'softmax_label':
            arr[:] = rs.randint(0, 5, shape[0])
        else:
            arr[:] = rs.uniform(-0.3, 0.3, arr.shape)
    exe.forward(is_train=True)
    exe.backward()
    return {k: g.asnumpy().astype('f8') for k, g in exe.grad_dict.items()
            if k not in ('softmax_label', 'bn_data_gamma')}


def test_gradients_as_exact_as_channel_first(monkeypatch):
    """Against the float64 gradients, the float32 channels-last plan's errors are those of the
    float32 channel-first plan (1e-7 to 5e-6 of each gradient's largest value)."""
    ref = _gradients(monkeypatch, False, 'float64')
    cf = _gradients(monkeypatch, False, 'float32')
    cl = _gradients(monkeypatch, True, 'float32')
    for name, want in ref.items():
        scale = np.abs(want).max()
        err_cf = np.abs(cf[name] - want).max() / scale
        err_cl = np.abs(cl[name] - want).max() / scale
        assert err_cl < max(3 * err_cf, 2e-6), (name, err_cl, err_cf)


def test_plan_converts_once_and_back_before_other_operators(monkeypatch):
    _, _, _, _, exe = _train(monkeypatch, _resnet_block_net(), True, False, steps=1)
    source = exe._plan.channels_last_source
    body = [line.strip() for line in source.splitlines()[1:]]
    to_last = [line for line in body if '_to_channels_last(' in line]
    to_first = [line for line in body if '_to_channel_first(' in line]
    # the data after bn_data (channel-first BatchNorm of the input) once; the pooled values
    # before Flatten once; nothing else
    assert to_last == ['bn_data_output_cl = _to_channels_last(bn_data_output)'], to_last
    assert len(to_first) == 1 and 'pool' in to_first[0], to_first
    # the training call runs the BatchNorms after the first convolution on channels-last data
    inputs = exe._inputs(False)
    with torch.no_grad():
        _, stats, _ = exe._forward_train.fn(*inputs)
    layouts = [s[0].is_contiguous(memory_format=torch.channels_last) and not s[0].is_contiguous()
               for s in stats]
    assert layouts == [False, True, True, True]
    # inference keeps the channel-first plan
    assert '_to_channels_last' not in exe._plan.source


def test_small_data_stays_channel_first(monkeypatch):
    """Convolutions of fewer than CHANNELS_LAST_ROWS output positions stay channel-first
    (oneDNN's channels-last kernels are slower there): the plan is the channel-first one."""
    _, _, _, _, exe = _train(monkeypatch, _resnet_block_net(), True, False, steps=1,
                             shape=(4, 3, 12, 12))
    assert exe._plan.channels_last_source is None


def test_hybridized_gluon_training_equals_channel_first(monkeypatch):
    """A hybridized block runs the executor's training plan as one node of autograd's graph
    (run_on): gradients and moving statistics as on channel-first data."""
    def run(channels_last):
        monkeypatch.setenv('MXTORCH_CHANNELS_LAST', '1' if channels_last else '0')
        mx.random.seed(0)
        net = gluon.nn.HybridSequential()
        net.add(gluon.nn.Conv2D(8, 3, padding=1, use_bias=False, in_channels=3),
                gluon.nn.BatchNorm(in_channels=8), gluon.nn.Activation('relu'),
                gluon.nn.Conv2D(8, 3, padding=1, use_bias=False, in_channels=8),
                gluon.nn.BatchNorm(in_channels=8), gluon.nn.Activation('relu'),
                gluon.nn.GlobalAvgPool2D(), gluon.nn.Dense(4, in_units=8))
        net.initialize(mx.init.Xavier())
        net.hybridize()
        trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1})
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        rs = np.random.RandomState(3)
        for _ in range(4):
            x = mx.nd.array(rs.normal(size=(6, 3, 24, 24)))
            y = mx.nd.array(rs.randint(0, 4, 6))
            with mx.autograd.record():
                loss = loss_fn(net(x), y)
            loss.backward()
            trainer.step(6)
        # (names differ between the two nets: compared in order)
        return [(k.split('_', 1)[1], p.data().asnumpy()) for k, p in net.collect_params().items()]
    cf, cl = run(False), run(True)
    assert [k for k, _ in cl] == [k for k, _ in cf]
    for (name, a), (_, b) in zip(cl, cf):
        _close(a, b, name)


def test_recorded_convolution_runs_as_the_plan_does():
    """Recorded imperatively, a convolution the training plan runs channels-last (here 4 x 30 x 30
    output positions) runs channels-last too: a hybridized conv + slice + BatchNorm block gives
    the imperative block's outputs and gradients bit for bit, as MXNet's same kernels do,
    recorded for training and for prediction."""
    class Net(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.conv = gluon.nn.Conv2D(32, 3, in_channels=32)
                self.bn = gluon.nn.BatchNorm(in_channels=16)

        def hybrid_forward(self, F, x):
            return self.bn(F.slice(self.conv(x), begin=(0, 0, 0, 0), end=(2, 16, 30, 30)))

    data = mx.nd.random.uniform(shape=(4, 32, 32, 32))
    # (a random head gradient: BatchNorm's output sums to a constant, so ones would give
    # gradients of rounding noise)
    for train_mode in (True, False):        # (recorded for prediction: both channel-first)
        mx.random.seed(0)
        net = Net()
        net.initialize(mx.init.Xavier())
        results = []
        for hybridized in (False, True):
            if hybridized:
                net.hybridize()
            x = data.copy()
            x.attach_grad()
            with mx.autograd.record(train_mode=train_mode):
                out = net(x)
            out.backward(mx.nd.array(np.random.RandomState(5).normal(size=out.shape)))
            results.append([out.asnumpy(), x.grad.asnumpy()] +
                           [p.grad().asnumpy() for p in net.collect_params().values()
                            if p.grad_req != 'null'])
        for a, b in zip(*results):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize('shape', [(4, 1, 6, 5), (4, 3, 1, 1), (4, 3, 6, 5)])
def test_to_channels_last_lays_out_ambiguous_data_channels_last(shape):
    """One channel or 1x1 maps: channel-first data is channels-last-contiguous as it lies, but a
    convolution reads it (and returns its output) channel-first; to_channels_last restrides it
    over the same memory, so the convolution after it runs channels-last."""
    from mxtorch.ops.conv import to_channels_last
    x = torch.arange(float(np.prod(shape))).reshape(shape)
    y = to_channels_last(x)
    assert y.stride(1) == 1 and y.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(y, x)
    if shape[1] == 1 or shape[2:] == (1, 1):
        assert y.data_ptr() == x.data_ptr()          # no copy: the same positions
    out = torch.nn.functional.conv2d(y, torch.ones(2, shape[1], 1, 1))
    assert out.stride(1) == 1 and out.shape[1] == 2


def test_small_convolutions_after_large_ones_take_channel_first_data(monkeypatch):
    """At batch 2 the first convolution has 1152 output positions (channels-last), the stride-2
    ones 288 (channel-first): their data goes back to channel-first, once each, and training
    still equals the channel-first plan's."""
    sym = _resnet_block_net()
    cf = _train(monkeypatch, sym, False, True, steps=3, shape=(2, 3, 24, 24))
    cl = _train(monkeypatch, sym, True, True, steps=3, shape=(2, 3, 24, 24))
    body = [line.strip() for line in cl[4]._plan.channels_last_source.splitlines()[1:]]
    conversions = [line for line in body if '_to_' in line]
    assert conversions[0] == 'bn_data_output_cl = _to_channels_last(bn_data_output)'
    assert conversions[2] == 'conv0_output_cf = _to_channel_first(conv0_output)'
    assert len(conversions) == 3 and '_to_channel_first(activation' in conversions[1]
    for k, (a, b) in enumerate(zip(cl[0], cf[0])):
        _close(a, b, 'output %d' % k)
    for name in cf[2]:
        _close(cl[2][name], cf[2][name], 'parameter %s' % name)

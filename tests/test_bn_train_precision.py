"""Training-mode BatchNorm in deep conv-BN-relu stacks (the pattern of GluonCV's SSD
FeatureExpander: mx.sym.BatchNorm with its default fix_gamma=True inside a SymbolBlock, stride-2
convolutions down to 1x1 maps, batch 2).

Such stacks amplify float32 rounding: a BatchNorm over two values per channel outputs about
+-1 whatever their spread, so its input gradient is ill-conditioned. In float64 mxtorch's
gradients equal MXNet 1.9.1's (constants below); in float32 they stay close to float64 because
the batch statistics are reduced accurately (MXNet's own CPU kernels are less accurate there,
so float32 runs of the two are compared against float64, not against each other)."""
import numpy as np
import pytest

import mxtorch as mx
from mxtorch import autograd, gluon, nd

# MXNet 1.9.1, float64: per parameter (sum |g|, sum g * cos(arange(g.size)))
MXNET_GRADS_F64 = {
    'bn0_beta': (8.399496029687576, -4.446642824710545),
    'bn0_gamma': (0.0, 0.0),
    'bn1_beta': (0.4208009787746427, -0.17511499613300877),
    'bn1_gamma': (0.0, 0.0),
    'c0_weight': (16.185571949649262, 1.8666838474732237),
    'c1_weight': (0.0013276560424028408, 0.0005916995272060609),
    't0_weight': (4.078327897963276, -0.39977839357893746),
    'tbn0_beta': (1.6086168155376532, 1.245181710728769),
    'tbn0_gamma': (0.0, 0.0),
}


def _expander_grads(dtype):
    d = mx.sym.var('data')
    y = mx.sym.Convolution(d, num_filter=3, kernel=(1, 1), no_bias=True, name='t0')
    y = mx.sym.Activation(mx.sym.BatchNorm(y, name='tbn0'), act_type='relu')
    outs = []
    for i in range(2):
        y = mx.sym.Convolution(y, num_filter=3, kernel=(3, 3), pad=(1, 1), stride=(2, 2),
                               no_bias=True, name='c%d' % i)
        y = mx.sym.Activation(mx.sym.BatchNorm(y, name='bn%d' % i), act_type='relu')
        outs.append(y)
    blk = gluon.SymbolBlock(outs, [d])
    blk.initialize()
    blk.cast(dtype)
    rs = np.random.RandomState(7)
    x = nd.array(rs.normal(size=(2, 4, 4, 4)), dtype=dtype)
    blk(x)
    params = sorted(blk.collect_params().items())
    for _, p in params:
        if p.grad_req != 'null':
            p.set_data(nd.array(rs.normal(size=p.shape), dtype=dtype))
    heads = [nd.array(rs.normal(size=s), dtype=dtype) for s in ((2, 3, 2, 2), (2, 3, 1, 1))]
    with autograd.record():
        outs = blk(x)
    autograd.backward(outs, heads)
    return {k: p.grad().asnumpy().astype('f8') for k, p in params if p.grad_req != 'null'}


def test_expander_chain_float64_gradients_equal_mxnet():
    grads = _expander_grads('float64')
    assert sorted(grads) == sorted(MXNET_GRADS_F64)
    for k, g in grads.items():
        w = np.cos(np.arange(g.size)).reshape(g.shape)
        np.testing.assert_allclose([np.abs(g).sum(), (g * w).sum()], MXNET_GRADS_F64[k],
                                   rtol=1e-8, atol=1e-14, err_msg=k)


def test_expander_chain_float32_gradients_close_to_float64():
    g64, g32 = _expander_grads('float64'), _expander_grads('float32')
    for k, g in g64.items():
        err = np.abs(g32[k] - g).max() / (np.abs(g).max() + 1e-30)
        # the last stride-2 conv feeds a BatchNorm over 2 values a channel: ~2e-4 there
        assert err < (1e-3 if k == 'c1_weight' else 2e-6), (k, err)


@pytest.mark.parametrize('hybrid', [False, True])
def test_train_batchnorm_float32_statistics_are_accurate(hybrid):
    # an offset, narrow channel over 2*128*128 values: a naive float32 running sum is ~1e-4 off
    rs = np.random.RandomState(0)
    x = (3.0 + 0.25 * rs.normal(size=(2, 4, 128, 128))).astype('float32')
    gamma = np.array([0.5, 1.0, 2.0, -1.5], 'float32')
    beta = np.array([0.0, 0.1, -0.2, 0.3], 'float32')
    net = gluon.nn.BatchNorm(in_channels=4, gamma_initializer=mx.init.Constant(0.0))
    net.initialize()
    net.gamma.set_data(nd.array(gamma))
    net.beta.set_data(nd.array(beta))
    if hybrid:
        net.hybridize()
    with autograd.record():
        out = net(nd.array(x)).asnumpy()
    x64 = x.astype('f8')
    m, v = x64.mean((0, 2, 3), keepdims=True), x64.var((0, 2, 3), keepdims=True)
    want = (x64 - m) / np.sqrt(v + 1e-5) * gamma.reshape(1, -1, 1, 1) + beta.reshape(1, -1, 1, 1)
    assert np.abs(out - want).max() < 2e-5


def test_moving_statistics_use_momentum_as_a_c_float():
    # MXNet's momentum is a C float (0.9 -> 0.899999976), also for float64 statistics;
    # numbers from MXNet 1.9.1 after one recorded training pass and its backward
    x = nd.array(np.arange(72.0).reshape(4, 2, 3, 3) % 7, dtype='float64')
    bn = gluon.nn.BatchNorm(in_channels=2)
    bn.initialize()
    bn.cast('float64')
    with autograd.record():
        y = bn(x)
    y.backward()
    assert bn.running_mean.data().asnumpy()[0] == 0.30000007152557373
    assert bn.running_var.data().asnumpy()[0] == 1.3111111852857802


def test_batchnorm_default_eps_is_the_float_1e_3():
    # mx.sym/nd.BatchNorm's eps is a double defaulting to 1e-3f; two values a channel make
    # the output depend on eps directly
    x = nd.array([1.0, 1.01], dtype='float64').reshape((2, 1, 1, 1))
    one, zero = nd.ones(1, dtype='float64'), nd.zeros(1, dtype='float64')
    with autograd.train_mode():
        dflt = nd.BatchNorm(x, one, zero, zero.copy(), one.copy(), fix_gamma=False)
        given = nd.BatchNorm(x, one, zero, zero.copy(), one.copy(), eps=1e-3, fix_gamma=False)
    assert abs(dflt.asnumpy().ravel()[1] - 0.005 / np.sqrt(0.005 ** 2 + 0.0010000000474974513)) < 1e-13
    assert abs(given.asnumpy().ravel()[1] - 0.005 / np.sqrt(0.005 ** 2 + 1e-3)) < 1e-13


@pytest.mark.parametrize('hybridize', [False, True])
def test_moving_statistics_change_in_backward_as_mxnet(hybridize):
    """MXNet updates BatchNorm's moving statistics in its backward: a training-mode forward that
    is not recorded leaves them, a recorded one changes them only when backward runs (numbers
    from MXNet 1.9.1, imperative and hybridized alike)."""
    from mxtorch import autograd, gluon, nd
    net = gluon.nn.BatchNorm(in_channels=2)
    net.initialize()
    if hybridize:
        net.hybridize()
    x = nd.array(np.arange(8).reshape(2, 2, 2, 1) + 1.0)
    with autograd.train_mode():
        net(x)
    np.testing.assert_array_equal(net.running_mean.data().asnumpy(), [0, 0])
    with autograd.record():
        y = net(x)
    np.testing.assert_array_equal(net.running_mean.data().asnumpy(), [0, 0])
    y.backward()
    np.testing.assert_allclose(net.running_mean.data().asnumpy(), [0.35000008, 0.55000013],
                               rtol=1e-7)

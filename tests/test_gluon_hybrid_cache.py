"""A hybridized block keeps one binding per input signature and reads its Parameters' current
arrays on every call: values set, re-initialised, cast, moved or detached since are seen."""
import numpy as np

import mxtorch as mx
from mxtorch import autograd, gluon
from mxtorch.gluon import nn


def _dense():
    net = nn.Dense(2, in_units=3)
    net.initialize(mx.init.One())
    net.hybridize()
    return net


def test_parameter_changes_reach_the_cached_graph():
    net = _dense()
    x = mx.nd.ones((1, 3))
    assert net(x).asnumpy().tolist() == [[3, 3]]
    net.weight.set_data(mx.nd.full((2, 3), 2))              # written in place
    assert net(x).asnumpy().tolist() == [[6, 6]]
    net.initialize(mx.init.Zero(), force_reinit=True)        # new arrays
    assert net(x).asnumpy().tolist() == [[0, 0]]
    net.weight.set_data(mx.nd.ones((2, 3)))
    net.weight.grad_req = 'null'                             # detached copies
    assert net(x).asnumpy().tolist() == [[3, 3]]
    net.collect_params().reset_ctx(mx.cpu(1))                # moved
    y = net(x.as_in_context(mx.cpu(1)))
    assert y.context == mx.cpu(1) and y.asnumpy().tolist() == [[3, 3]]
    net.cast('float64')
    y = net(x.astype('float64').as_in_context(mx.cpu(1)))
    assert y.dtype == np.float64 and y.asnumpy().tolist() == [[3, 3]]


def test_signatures_and_gradients():
    net = _dense()
    for batch in (1, 4, 1):
        x = mx.nd.ones((batch, 3))
        with autograd.record():
            y = net(x)
        y.backward()
        assert y.shape == (batch, 2)
        np.testing.assert_array_equal(net.weight.grad().asnumpy(), np.full((2, 3), batch))
    assert len(net._cached.bindings) == 2


def test_nested_and_repeated_inputs():
    class Pair(gluon.HybridBlock):
        def hybrid_forward(self, F, pair, z):
            return F.broadcast_add(pair[0] * 2, pair[1]) - z

    block = Pair()
    block.hybridize()
    a, b = mx.nd.ones((2,)), mx.nd.full((2,), 3)
    assert block([a, b], a).asnumpy().tolist() == [4, 4]
    assert block([a, a], a).asnumpy().tolist() == [2, 2]     # one array as two inputs
    assert block([b, a], b).asnumpy().tolist() == [4, 4]


def test_batchnorm_of_a_slice_gives_the_same_numbers_hybridized():
    # BatchNorm's gradient of a ones head gradient is rounding noise: MXNet's imperative and
    # hybridized runs agree exactly, so they must here (a bound slice is a view, an nd one a copy)
    class Net(mx.gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.conv = mx.gluon.nn.Conv2D(16, (1, 1))
                self.bn = mx.gluon.nn.BatchNorm()

        def hybrid_forward(self, F, x):
            return self.bn(self.conv(x).slice(begin=(0, 0, 0, 0), end=(2, 8, 8, 8)))

    x = mx.nd.array(np.random.RandomState(0).uniform(size=(3, 4, 16, 16)))
    net = Net()
    net.initialize()
    grads, outs = [], []
    for hybrid in (False, True):
        net.hybridize(hybrid)
        xc = x.copy()
        xc.attach_grad()
        with mx.autograd.record():
            out = net(xc)
        out.backward()
        grads.append(xc.grad.asnumpy())
        outs.append(out.asnumpy())
    assert np.array_equal(outs[0], outs[1]) and np.array_equal(grads[0], grads[1])

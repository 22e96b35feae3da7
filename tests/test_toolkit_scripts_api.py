"""Behaviours that GluonCV / GluonNLP / InsightFace scripts rely on (run unchanged under
`mxtorch run`); expected values were taken from MXNet 1.9.1."""
import numpy as np

import mxtorch as mx
from mxtorch.gluon import nn


def test_astype_none_is_float32():
    # verify_pretrained.py calls X.astype(opt.dtype, copy=False) with --dtype left at None
    x = mx.nd.array([1, 2], dtype='int32')
    assert x.astype(None).dtype == np.float32
    assert x.astype(None, copy=False).dtype == np.float32
    y = mx.nd.array([1.5, 2], dtype='float64')
    assert y.astype(None).dtype == np.float32
    z = y.astype(None, copy=False)
    assert z is y and z.dtype == np.float64
    np.testing.assert_array_equal(x.astype(None).asnumpy(), [1., 2.])


def test_block_cast_none_keeps_float32():
    net = nn.Dense(2)
    net.initialize()
    net(mx.nd.ones((1, 3)))
    net.cast(None)
    assert net.weight.data().dtype == np.float32
    net.hybridize()
    assert net(mx.nd.ones((1, 3)).astype(None, copy=False)).dtype == np.float32


def _bn_output_freed(hybridize, backward):
    import gc
    import weakref
    from mxtorch import autograd
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, 3), nn.BatchNorm())
    net.initialize(mx.init.Constant(0.5))
    if hybridize:
        net.hybridize()
    x = mx.nd.array(np.arange(2 * 3 * 5 * 5, dtype='float32').reshape(2, 3, 5, 5) / 50)
    with autograd.record():
        y = net(x)
    if backward:
        y.backward()
    ref = weakref.ref(y._tensor)
    del y
    gc.collect()
    return ref() is None, net[1].running_mean.data().asnumpy()



def test_recorded_batchnorm_output_is_freed():
    # faster_rcnn's training ran out of memory: every recorded BatchNorm output stayed alive
    # (with its whole graph) through the hook that updates the moving statistics
    for hybridize in (False, True):
        freed, mean = _bn_output_freed(hybridize, backward=True)
        assert freed
        np.testing.assert_allclose(mean, [2.0115004] * 4, rtol=1e-6)    # MXNet 1.9.1
        freed, mean = _bn_output_freed(hybridize, backward=False)
        assert freed
        np.testing.assert_array_equal(mean, [0.] * 4)

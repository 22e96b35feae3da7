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

"""Operator behaviours pinned against MXNet 1.9.1 (numbers made with MXNet, kept as constants)."""
import numpy as np
import pytest

import mxtorch as mx
from mxtorch.base import MXNetError


def test_mod_by_zero_is_zero_and_follows_divisor_sign():
    # MXNet 1.9.1: broadcast_mod([5,-5,7,0], [0,3,-3,0]) -> [0, 1, -2, 0] (int32 and float32)
    for dtype in ('int32', 'float32'):
        a = mx.nd.array([5, -5, 7, 0], dtype=dtype)
        b = mx.nd.array([0, 3, -3, 0], dtype=dtype)
        np.testing.assert_array_equal(mx.nd.broadcast_mod(a, b).asnumpy(), [0, 1, -2, 0])
    a = mx.nd.array([5, -5, 7, 0], dtype='int32')
    np.testing.assert_array_equal((a % 0).asnumpy(), [0, 0, 0, 0])
    np.testing.assert_array_equal((3 % mx.nd.array([0, 2, -2], dtype='int32')).asnumpy(), [0, 1, -1])
    np.testing.assert_allclose((3.5 % mx.nd.array([0, 2, -2])).asnumpy(), [0, 1.5, -0.5])

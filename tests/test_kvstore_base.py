"""mx.kv's store registry and the plain-Python TestStore."""
import numpy as np
import pytest

import mxtorch as mx


def test_teststore_sums_devices_and_has_no_optimizer():
    kv = mx.kv.create('teststore')
    assert isinstance(kv, mx.kv.KVStoreBase) and kv.type == 'teststore'
    out = mx.nd.empty((2,))
    kv.broadcast('w', mx.nd.array([1, 2]), out=out)
    np.testing.assert_array_equal(out.asnumpy(), [1, 2])
    pushed = [mx.nd.array([1, 2]), mx.nd.array([10, 20])]
    kv.pushpull('w', pushed)
    for v in pushed:
        np.testing.assert_array_equal(v.asnumpy(), [11, 22])
    # is_capable is static, as MXNet's: asked on the class
    assert type(kv).is_capable('optimizer') is False
    assert kv.is_capable('OPTIMIZER') is False
    with pytest.raises(ValueError, match='Unknown capability: sparse'):
        type(kv).is_capable('sparse')

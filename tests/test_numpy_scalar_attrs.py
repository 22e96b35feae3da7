"""Operator attributes given as NumPy scalars (NumPy 2 prints them as `np.int64(3)`) are taken
wherever MXNet takes ints or floats: Python calls, the attrs they store, and JSON holding them."""
import json

import numpy as np
import pytest

import mxtorch as mx


def test_symbol_attrs_are_stored_as_plain_numbers():
    data = mx.sym.Variable('data')
    conv = mx.sym.Convolution(data, kernel=(np.int64(3), np.int64(3)), num_filter=np.int32(4),
                              stride=[np.int64(1), np.int64(2)], name='c')
    assert conv.list_attr() == {'kernel': '(3, 3)', 'num_filter': '4', 'stride': '[1, 2]'}
    assert conv.infer_shape(data=(1, 2, 8, 9))[1] == [(1, 4, 6, 4)]
    attrs = json.loads(conv.tojson())['nodes'][-1]['attrs']
    assert 'np.' not in json.dumps(attrs)


def test_json_with_numpy2_scalar_reprs_loads():
    data = mx.sym.Variable('data')
    graph = json.loads(mx.sym.Pooling(data, kernel=(2, 2), stride=(2, 2), pool_type='avg',
                                      name='p').tojson())
    graph['nodes'][-1]['attrs'].update(kernel='(np.int64(2), np.int64(2))',
                                       stride='(np.int32(2), np.int32(2))')
    pool = mx.sym.load_json(json.dumps(graph))
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    out = pool.eval(data=mx.nd.array(x))[0].asnumpy()
    np.testing.assert_allclose(out, x.reshape(1, 1, 2, 2, 2, 2).mean(axis=(3, 5)))


def test_imperative_calls_take_numpy_scalars():
    x = np.random.uniform(-1, 1, (2, 3, 5)).astype(np.float32)
    nd = mx.nd.array(x)
    np.testing.assert_allclose(mx.nd.sum(nd, axis=np.int64(1)).asnumpy(), x.sum(axis=1),
                               rtol=1e-6)
    np.testing.assert_allclose(mx.nd.clip(nd, np.float32(-0.5), np.float64(0.25)).asnumpy(),
                               np.clip(x, -0.5, 0.25))
    w = np.random.uniform(-1, 1, (4, 15)).astype(np.float32)
    out = mx.nd.FullyConnected(nd, mx.nd.array(w), no_bias=True, num_hidden=np.int64(4))
    np.testing.assert_allclose(out.asnumpy(), x.reshape(2, 15) @ w.T, rtol=1e-5, atol=1e-6)
    assert nd.reshape((np.int64(3), np.int64(10))).shape == (3, 10)


def test_a_bad_numpy_value_is_still_refused_by_name():
    with pytest.raises(mx.MXNetError, match='kernel'):
        mx.sym.Convolution(mx.sym.Variable('d'), kernel=(np.float64(2.5), 3), num_filter=2)

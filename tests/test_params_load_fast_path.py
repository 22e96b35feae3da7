"""mx.nd.load reads plain dense records (the bulk of a checkpoint) with a few unpacks and every
other record field by field: a file mixing them loads the same, every array a view of the one
buffer read from the file, and a plain record cut short is still reported by name."""
import numpy as np
import pytest

import mxtorch as mx


def _arrays():
    rng = np.random.RandomState(0)
    return {'w': mx.nd.array(rng.randn(4, 3, 2)),
            'half': mx.nd.array(rng.randn(5), dtype='float16'),
            'ids': mx.nd.array(rng.randint(0, 9, (2, 3)), dtype='int64'),
            'bytes': mx.nd.array(rng.randint(0, 255, 7), dtype='uint8'),
            'bf': mx.nd.ones((2, 2), dtype='bfloat16'),
            'sparse': mx.nd.array([[0, 1], [0, 0], [2, 0]]).tostype('row_sparse'),
            'last': mx.nd.array(rng.randn(3, 1, 1, 2))}


def test_mixed_records_load_alike(tmp_path):
    arrays = _arrays()
    path = str(tmp_path / 'mixed.params')
    mx.nd.save(path, arrays)
    loaded = mx.nd.load(path)
    assert list(loaded) == list(arrays)
    for name, arr in arrays.items():
        got = loaded[name]
        assert got.shape == arr.shape and got.dtype == arr.dtype and got.stype == arr.stype
        np.testing.assert_array_equal(got.astype('float32').asnumpy(),
                                      arr.astype('float32').asnumpy())
    # the first plain ones are views of the buffer read from the file (no copy per array)
    size = (tmp_path / 'mixed.params').stat().st_size
    first, second = (loaded[n]._tensor.data_ptr() for n in ('w', 'half'))
    assert 0 < second - first < size
    loaded['w'][:] = 7                           # and writable, each its own part
    np.testing.assert_array_equal(loaded['half'].asnumpy(), arrays['half'].asnumpy())

def test_plain_record_cut_short_is_named(tmp_path):
    path = str(tmp_path / 'cut.params')
    mx.nd.save(path, [mx.nd.ones((3,)), mx.nd.ones((100, 10))])
    with open(path, 'rb') as f:
        payload = f.read()
    with open(path, 'wb') as f:
        f.write(payload[:len(payload) - 2000])
    with pytest.raises(mx.MXNetError, match='array 1 data'):
        mx.nd.load(path)

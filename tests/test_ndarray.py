"""NDArray semantics and MXNet's binary file format."""
import pickle
import struct

import numpy as np
import pytest
import torch

import mxtorch as mx
from mxtorch.ndarray import serialization


# ---- creation and properties ---------------------------------------------------------------
def test_array_dtypes_follow_mxnet():
    assert mx.nd.array(np.arange(3)).dtype == np.float32          # int64 numpy -> float32
    assert mx.nd.array(np.arange(3), dtype='int32').dtype == np.int32
    assert mx.nd.array([1, 2]).dtype == np.float32
    x = mx.nd.array([1, 2], dtype=np.float64)
    assert mx.nd.array(x).dtype == np.float64                      # NDArray keeps its dtype
    assert mx.nd.zeros((2, 3), dtype='float16').dtype == np.float16
    assert mx.nd.ones(4).shape == (4,)


def test_properties_and_repr():
    a = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    assert (a.shape, a.size, a.ndim, a.context, a.stype) == ((2, 3), 6, 2, mx.cpu(0), 'default')
    assert repr(a).endswith('<NDArray 2x3 @cpu(0)>')
    assert a.T.shape == (3, 2)
    np.testing.assert_array_equal(a.T.asnumpy(), a.asnumpy().T)
    assert mx.nd.array([7]).asscalar() == 7
    with pytest.raises(ValueError, match='not a scalar'):
        a.asscalar()


def test_creation_functions():
    np.testing.assert_array_equal(mx.nd.full((2, 2), 3.5).asnumpy(), np.full((2, 2), 3.5))
    np.testing.assert_array_equal(mx.nd.arange(0, 4, repeat=2).asnumpy(),
                                  [0, 0, 1, 1, 2, 2, 3, 3])
    np.testing.assert_array_equal(mx.nd.arange(5).asnumpy(), np.arange(5, dtype=np.float32))
    c = mx.nd.concatenate([mx.nd.ones((1, 2)), mx.nd.zeros((2, 2))])
    np.testing.assert_array_equal(c.asnumpy(), [[1, 1], [0, 0], [0, 0]])
    u = mx.nd.random.uniform(-1, 1, shape=(1000,))
    assert -1 <= u.asnumpy().min() and u.asnumpy().max() <= 1 and abs(u.asnumpy().mean()) < 0.1
    n = mx.nd.random.normal(2, 3, shape=(4000,)).asnumpy()
    assert abs(n.mean() - 2) < 0.2 and abs(n.std() - 3) < 0.2


def test_seed_makes_draws_repeatable():
    mx.random.seed(42)
    a = mx.nd.random.uniform(shape=(5,)).asnumpy()
    mx.random.seed(42)
    np.testing.assert_array_equal(a, mx.nd.random.uniform(shape=(5,)).asnumpy())


# ---- views, copies, assignment ------------------------------------------------------------------
def test_first_axis_slice_is_a_view_that_writes_through():
    a = mx.nd.zeros((4, 3))
    row = a[1]
    row[:] = 5
    view = a[2:4]
    view[:] = mx.nd.ones((2, 3)) * 2
    np.testing.assert_array_equal(a.asnumpy(), [[0, 0, 0], [5, 5, 5], [2, 2, 2], [2, 2, 2]])
    assert a[1].shape == (3,) and a[1, 1].shape == (1,)        # no 0-d arrays


def test_setitem_forms():
    z = mx.nd.zeros((3, 4))
    z[1] = 5
    z[:, 2] = 7
    z[0, 1] = 3
    z[2] = np.arange(4)
    expect = np.array([[0, 3, 7, 0], [5, 5, 7, 5], [0, 1, 2, 3]], dtype=np.float32)
    np.testing.assert_array_equal(z.asnumpy(), expect)
    z[:] = mx.nd.array([1, 2, 3, 4])                              # broadcast
    np.testing.assert_array_equal(z.asnumpy(), np.tile([1, 2, 3, 4], (3, 1)))


def test_advanced_indexing_copies():
    b = mx.nd.array([[1, 2], [3, 4]])
    picked = b[mx.nd.array([1, 0])]
    np.testing.assert_array_equal(picked.asnumpy(), [[3, 4], [1, 2]])
    picked[:] = 0
    np.testing.assert_array_equal(b.asnumpy(), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(b[[0, 1]].asnumpy(), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(mx.nd.arange(5)[::-2].asnumpy(), [4, 2, 0])


def test_copy_copyto_context_astype():
    a = mx.nd.array([1.5, 2.5])
    c = a.copy()
    c[:] = 0
    assert a.asnumpy().tolist() == [1.5, 2.5]
    target = mx.nd.zeros((2,))
    assert a.copyto(target) is target and target.asnumpy().tolist() == [1.5, 2.5]
    assert a.as_in_context(mx.cpu(0)) is a
    moved = a.as_in_context(mx.cpu(1))
    assert moved.context == mx.cpu(1) and moved is not a
    assert a.astype('int32').asnumpy().tolist() == [1, 2]
    with pytest.raises(ValueError, match='shape mismatch'):
        a.copyto(mx.nd.zeros((3,)))


def test_reshape_special_codes():
    x = mx.nd.zeros((2, 3, 4))
    assert x.reshape((0, -1)).shape == (2, 12)
    assert x.reshape((-1, 0)).shape == (8, 3)
    assert x.reshape((-3, -2)).shape == (6, 4)
    assert x.reshape((-4, 1, 2, -2)).shape == (1, 2, 3, 4)
    assert x.reshape(4, 6).shape == (4, 6)
    assert mx.nd.zeros((10, 5, 4)).reshape((-1, 0), reverse=True).shape == (50, 4)
    y = mx.nd.arange(6).reshape((2, 3))
    y.reshape((6,))[:] = 1                                          # a view
    assert y.asnumpy().sum() == 6
    with pytest.raises(mx.MXNetError, match='size'):
        x.reshape((5, 5))


# ---- arithmetic ---------------------------------------------------------------------------------
def test_arithmetic_broadcasts_and_casts_scalars():
    a = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    b = mx.nd.array([10, 20, 30])
    np.testing.assert_array_equal((a + b).asnumpy(), a.asnumpy() + b.asnumpy())
    np.testing.assert_array_equal((a * 2 - 1).asnumpy(), a.asnumpy() * 2 - 1)
    np.testing.assert_allclose((1 / a).asnumpy(), 1 / a.asnumpy(), rtol=1e-6)
    np.testing.assert_array_equal((2 ** mx.nd.array([1, 2])).asnumpy(), [2, 4])
    np.testing.assert_array_equal((mx.nd.array([5, -5]) % mx.nd.array([-3, 3])).asnumpy(),
                                  [-1, 1])                          # sign of the divisor
    x = mx.nd.array([1, 2, 3], dtype='int32')
    assert (x * 0.5).asnumpy().tolist() == [0, 0, 0]                # 0.5 cast to int first
    assert (x + 1.5).asnumpy().tolist() == [2, 3, 4]
    assert (x / 2).asnumpy().tolist() == [0, 1, 1]
    cmp = a > 3
    assert cmp.dtype == np.float32 and cmp.asnumpy().tolist() == [[0, 0, 0], [1, 1, 1]]
    with pytest.raises(mx.MXNetError, match='dtype'):
        mx.nd.ones((2,)) + mx.nd.ones((2,), dtype='float64')


def test_inplace_operators_keep_the_handle():
    a = mx.nd.ones((2, 2))
    view = a[0]
    a += 1
    a *= mx.nd.array([[1, 2], [3, 4]])
    np.testing.assert_array_equal(a.asnumpy(), [[2, 4], [6, 8]])
    np.testing.assert_array_equal(view.asnumpy(), [2, 4])


def test_generated_operator_functions_and_methods():
    x = mx.nd.array([[1, -2], [3, -4]])
    np.testing.assert_array_equal(mx.nd.abs(x).asnumpy(), np.abs(x.asnumpy()))
    np.testing.assert_array_equal(mx.nd.clip(x, -1, 1).asnumpy(), np.clip(x.asnumpy(), -1, 1))
    np.testing.assert_allclose(x.exp().asnumpy(), np.exp(x.asnumpy()), rtol=1e-6)
    out = mx.nd.zeros((2, 2))
    assert mx.nd.relu(x, out=out) is out
    np.testing.assert_array_equal(out.asnumpy(), [[1, 0], [3, 0]])
    with pytest.raises(mx.MXNetError, match='act_type'):
        mx.nd.Activation(x, act_type='swishy')


def test_autograd_records_nd_operations():
    x = mx.nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with mx.autograd.record():
        y = x * x + x * 2
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * np.array([1, 2, 3]) + 2)


def test_pickle_uses_mxnet_state_form():
    a = mx.nd.array([[1, 2], [3, 4]], dtype='int32')
    state = a.__getstate__()
    assert list(state) == ['handle'] and isinstance(state['handle'], bytearray)
    b = pickle.loads(pickle.dumps(a))
    assert b.dtype == np.int32 and b.asnumpy().tolist() == [[1, 2], [3, 4]]


# ---- the binary format ----------------------------------------------------------------------------
FILES = ['list.nd', 'dict.nd', 'single.nd']


@pytest.mark.parametrize('name', FILES)
def test_load_golden_files_bit_exactly(golden, name):
    folder = golden / 'ndarray_files'
    loaded = mx.nd.load(str(folder / name))
    expected = np.load(folder / name.replace('.nd', '.npz'), allow_pickle=False)
    if isinstance(loaded, dict):
        assert list(loaded) == list(expected.keys())
        pairs = [(loaded[k], expected[k]) for k in expected.keys()]
    else:
        assert isinstance(loaded, list)
        pairs = [(loaded[i], expected[str(i)]) for i in range(len(loaded))]
    for arr, exp in pairs:
        got = arr.asnumpy()
        assert got.dtype == exp.dtype and got.shape == exp.shape
        assert got.tobytes() == exp.tobytes()


@pytest.mark.parametrize('name', FILES)
def test_save_writes_the_same_bytes_as_mxnet(golden, name, tmp_path):
    folder = golden / 'ndarray_files'
    loaded = mx.nd.load(str(folder / name))
    out = tmp_path / name
    mx.nd.save(str(out), loaded if name != 'single.nd' else loaded[0])
    assert out.read_bytes() == (folder / name).read_bytes()


def test_empty_and_numpy_shape_files(golden, tmp_path):
    folder = golden / 'ndarray_files'
    assert mx.nd.load(str(folder / 'empty_list.nd')) == []
    (scalar,) = mx.nd.load(str(folder / 'npshape_0d.nd')).values()
    assert scalar.asnumpy().reshape(-1).tolist() == [2.5]
    mx.nd.save(str(tmp_path / 'e'), {})
    assert (tmp_path / 'e').read_bytes() == (folder / 'empty_list.nd').read_bytes()


def _record_v1(values):
    data = np.asarray(values, dtype=np.float32)
    return (struct.pack('<I', 0xF993FAC8) + struct.pack('<i', 1) + struct.pack('<q', data.size)
            + struct.pack('<iii', 1, 0, 0) + data.tobytes())


def _record_pre_v1(values):
    data = np.asarray(values, dtype=np.float32)
    return (struct.pack('<I', 1) + struct.pack('<I', data.size) + struct.pack('<iii', 1, 0, 0)
            + data.tobytes())


def _record_row_sparse(rows, values, shape):
    values = np.asarray(values, dtype=np.float32)
    rows = np.asarray(rows, dtype=np.int64)
    rec = struct.pack('<Ii', 0xF993FAC9, 1)
    rec += struct.pack('<i', values.ndim) + struct.pack('<%dq' % values.ndim, *values.shape)
    rec += struct.pack('<i', len(shape)) + struct.pack('<%dq' % len(shape), *shape)
    rec += struct.pack('<iii', 1, 0, 0)
    rec += struct.pack('<i', 6) + struct.pack('<i', 1) + struct.pack('<q', len(rows))
    return rec + values.tobytes() + rows.tobytes()


def _file(records, names=()):
    blob = struct.pack('<QQQ', 0x112, 0, len(records)) + b''.join(records)
    blob += struct.pack('<Q', len(names))
    for n in names:
        blob += struct.pack('<Q', len(n)) + n.encode()
    return blob


def test_legacy_and_sparse_records_load():
    arrays = mx.nd.load_frombuffer(_file([_record_pre_v1([1, 2]), _record_v1([3, 4, 5]),
                                          _record_row_sparse([2], [[7, 8]], (3, 2))]))
    assert arrays[0].asnumpy().tolist() == [1, 2]
    assert arrays[1].asnumpy().tolist() == [3, 4, 5]
    assert arrays[2].asnumpy().tolist() == [[0, 0], [0, 0], [7, 8]]


@pytest.mark.parametrize('blob, message', [
    (b'\x00' * 8, 'header'),
    (struct.pack('<QQQ', 0x113, 0, 0) + b'\0' * 8, 'magic'),
    (struct.pack('<QQQ', 0x112, 0, 1 << 40), 'claims'),
    (_file([_record_v1([1, 2])])[:-12], 'needs'),
    (_file([_record_v1([1])], names=['a', 'b']), 'names for'),
    (struct.pack('<QQQ', 0x112, 0, 1) + struct.pack('<Iii', 0xF993FAC9, 0, 99), 'ndim'),
])
def test_corrupt_files_raise_clear_errors(blob, message):
    with pytest.raises(mx.MXNetError, match='Invalid NDArray file format.*' + message):
        mx.nd.load_frombuffer(blob)


def test_save_rejects_bad_containers(tmp_path):
    with pytest.raises(TypeError):
        mx.nd.save(str(tmp_path / 'x'), [np.zeros(2)])
    with pytest.raises(ValueError):
        mx.nd.save(str(tmp_path / 'x'), 'not arrays')
    with pytest.raises(TypeError):
        mx.nd.load(3)


def test_save_is_atomic(tmp_path, monkeypatch):
    target = tmp_path / 'w.params'
    mx.nd.save(str(target), {'a': mx.nd.ones(3)})
    before = target.read_bytes()

    def boom(*args, **kwargs):
        raise OSError('disk full')
    monkeypatch.setattr(serialization.os, 'replace', boom)
    with pytest.raises(OSError):
        mx.nd.save(str(target), {'a': mx.nd.zeros(3)})
    assert target.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ['w.params']

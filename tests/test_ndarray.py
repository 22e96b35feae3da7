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


# Which basic indexes give views, as MXNet 1.9.1 decides it (checked there): a view exactly when
# the selected region is one contiguous block of the array.
@pytest.mark.parametrize('key, shape, is_view', [
    (1, (3, 4), True), (-1, (3, 4), True), ((1, 2), (4,), True), ((1, slice(0, 2)), (2, 4), True),
    ((slice(0, 1), slice(None)), (1, 3, 4), True), ((0, slice(1, 2)), (1, 4), True),
    ((1, Ellipsis), (3, 4), True), ((None, 1), (1, 3, 4), True), (slice(0, 2, 2), (1, 3, 4), True),
    ((slice(None), 1), (2, 4), False), ((Ellipsis, 1), (2, 3), False),
    ((slice(None), slice(None), slice(0, 1)), (2, 3, 1), False),
])
def test_basic_indexing_is_a_view_only_for_contiguous_blocks(key, shape, is_view):
    b = mx.nd.array(np.arange(24).reshape(2, 3, 4))
    part = b[key]
    assert part.shape == shape
    part[:] = -1
    assert (b.asnumpy() == -1).any() == is_view
    expected = np.arange(24).reshape(2, 3, 4)[key]
    np.testing.assert_array_equal(b[key].asnumpy().reshape(expected.shape),
                                  -np.ones_like(expected) if is_view else expected)


def test_setitem_with_a_value_of_the_wrong_shape_fails_cleanly():
    b = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    with pytest.raises(mx.MXNetError, match=r'shape \(2,\).*region of shape \(3,\)'):
        b[0] = [1, 1]
    np.testing.assert_array_equal(b.asnumpy(), [[1, 2, 3], [4, 5, 6]])
    b[1] = np.array([[7, 8, 9]])                      # same size: reshaped
    b[:] = mx.nd.array([[1], [2]])                    # broadcast
    np.testing.assert_array_equal(b.asnumpy(), [[1, 1, 1], [2, 2, 2]])
    with pytest.raises(mx.MXNetError, match='non-negative'):
        mx.nd.zeros((-1, 2))


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


def test_contexts_scopes_and_a_missing_gpu():
    assert mx.cpu() == mx.cpu(0) == mx.Context('cpu', 0) and mx.cpu(1) != mx.cpu(0)
    assert mx.gpu(0) != mx.cpu(0) and str(mx.gpu(2)) == 'gpu(2)' and repr(mx.cpu(1)) == 'cpu(1)'
    assert (mx.cpu().device_typeid, mx.gpu().device_typeid) == (1, 2)
    assert mx.Context(mx.gpu(3)) == mx.gpu(3)
    assert mx.current_context() == mx.cpu(0)
    with mx.cpu(2):
        assert mx.current_context() == mx.cpu(2)
        with mx.Context('cpu', 3):
            assert mx.nd.zeros((1,)).context == mx.cpu(3)
        assert mx.nd.ones((1,)).context == mx.cpu(2)
    assert mx.current_context() == mx.cpu(0)
    assert mx.context.num_gpus() == torch.cuda.device_count()
    missing = mx.gpu(mx.context.num_gpus())            # one past the last GPU (gpu(0) if none)
    with pytest.raises(mx.MXNetError, match=r'gpu\(\d+\) is not available'):
        mx.nd.zeros((2,), ctx=missing)
    with pytest.raises(mx.MXNetError, match='not available'):
        mx.sym.var('x').simple_bind(missing, x=(2,))
    with pytest.raises(ValueError, match='Unknown device type'):
        mx.Context('tpu', 0)


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
    with pytest.raises(ValueError, match='size 24'):      # MXNet 1.9.1: ValueError
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


def test_module_level_binary_helpers_take_arrays_or_scalars():
    a = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    b = mx.nd.array([[3], [4]])
    an, bn = a.asnumpy(), b.asnumpy()
    cases = {
        'add': np.add, 'subtract': np.subtract, 'multiply': np.multiply, 'divide': np.divide,
        'true_divide': np.divide, 'modulo': np.mod, 'power': np.power,
        'maximum': np.maximum, 'minimum': np.minimum, 'equal': np.equal,
        'not_equal': np.not_equal, 'greater': np.greater, 'greater_equal': np.greater_equal,
        'lesser': np.less, 'lesser_equal': np.less_equal, 'logical_and': np.logical_and,
        'logical_or': np.logical_or, 'logical_xor': np.logical_xor,
    }
    for name, ref in cases.items():
        fn = getattr(mx.nd, name)
        for lhs, rhs, ln, rn in [(a, b, an, bn), (a, 2, an, 2), (2, a, 2, an)]:
            got = fn(lhs, rhs)
            assert got.dtype == np.float32 and got.shape == (2, 3), name
            np.testing.assert_allclose(got.asnumpy(), ref(ln, rn).astype(np.float32),
                                       rtol=1e-6, err_msg=name)
    assert mx.nd.maximum(2, 3) == 3 and mx.nd.minimum(2, 3) == 2 and mx.nd.power(2, 3) == 8
    assert mx.nd.equal(2, 3) == 0 and mx.nd.logical_xor(2, 0) == 1
    with pytest.raises(TypeError, match='maximum'):
        mx.nd.maximum(a, 'x')


def test_broadcast_to_adds_leading_axes():
    x = mx.nd.array([1, 2, 3])
    np.testing.assert_array_equal(x.broadcast_to((2, 3)).asnumpy(), [[1, 2, 3], [1, 2, 3]])
    with pytest.raises(mx.MXNetError, match=r'\(3,\) cannot be broadcast to shape=\(2, 4\)'):
        x.broadcast_to((2, 4))
    s = mx.sym.var('x').broadcast_to(shape=(2, 3))
    assert s.infer_shape(x=(1, 3))[1] == [(2, 3)]


def test_samplers_with_array_parameters_draw_per_element():
    mx.random.seed(7)
    low, high = mx.nd.array([0, 10], dtype='float64'), mx.nd.array([1, 12], dtype='float64')
    draws = mx.nd.random.uniform(low, high, shape=(500,))
    assert draws.shape == (2, 500) and draws.dtype == np.float32       # float32 unless dtype=
    d = draws.asnumpy()
    assert d[0].min() >= 0 and d[0].max() < 1 and d[1].min() >= 10 and d[1].max() < 12
    assert abs(d[1].mean() - 11) < 0.15
    normal = mx.nd.random.normal(mx.nd.array([0, 5]), mx.nd.array([1, 0.5]), shape=(2000,),
                                 dtype='float64').asnumpy()
    assert normal.dtype == np.float64 and normal.shape == (2, 2000)
    assert abs(normal[1].mean() - 5) < 0.1 and abs(normal[1].std() - 0.5) < 0.05
    assert mx.nd.random.uniform(low, high).shape == (2,)
    with pytest.raises(mx.MXNetError, match='same type.*high=int'):
        mx.nd.random.uniform(low, 1)
    sym = mx.sym.random.uniform(mx.sym.var('a'), mx.sym.var('b'), shape=(3,))
    assert sym.list_arguments() == ['a', 'b'] and sym.infer_shape(a=(2,))[1] == [(2, 3)]
    node = [n for n in __import__('json').loads(sym.tojson())['nodes'] if n['op'] != 'null'][0]
    assert node['op'] == '_sample_uniform' and node['attrs'] == {'shape': '(3,)'}


def test_split_v2_helpers():
    a = mx.nd.array(np.arange(12).reshape(6, 2))
    parts = mx.nd.split_v2(a, (1, 4))
    assert [p.shape for p in parts] == [(1, 2), (3, 2), (2, 2)]
    for got, want in zip(parts, np.split(np.arange(12).reshape(6, 2), [1, 4])):
        np.testing.assert_array_equal(got.asnumpy(), want)
    assert [p.shape for p in a.split_v2(3)] == [(2, 2)] * 3
    assert mx.nd.split_v2(a, 2, axis=1, squeeze_axis=True)[1].asnumpy().tolist() == \
        list(range(1, 12, 2))
    with pytest.raises(ValueError, match='equal division'):
        mx.nd.split_v2(a, 4)
    # the JSON MXNet 1.9.1 writes for mx.sym.split_v2(x, (2,), axis=0)
    s = mx.sym.split_v2(mx.sym.var('x'), (2,), axis=0)
    node = __import__('json').loads(s.tojson())['nodes'][1]
    assert node['op'] == '_split_v2' and node['attrs'] == {
        'axis': '0', 'indices': '[0, 2]', 'sections': '0', 'squeeze_axis': 'False'}
    assert s.infer_shape(x=(6, 2))[1] == [(2, 2), (4, 2)]


def test_imperative_shape_errors_name_the_input():
    with pytest.raises(mx.MXNetError, match=r'FullyConnected.*Provided = \[2,4\], inferred '
                                            r'shape=\(2,3\)'):
        mx.nd.FullyConnected(mx.nd.ones((2, 3)), mx.nd.ones((2, 4)), mx.nd.zeros((2,)),
                             num_hidden=2)


@pytest.mark.parametrize('dtype, op, scalar, expected', [
    # values printed by MXNet 1.9.1: the scalar is first cast to the array's dtype (C cast), and
    # integer arithmetic wraps
    ('int32', '/', 2, [2, -3, 4]), ('int32', '/', 1.5, [5, -7, 9]), ('int32', '/', -3, [-1, 2, -3]),
    ('int32', '%', 1.5, [0, 0, 0]), ('int32', '%', -3, [-1, -1, 0]),
    ('uint8', '/', 2, [2, 124, 4]), ('uint8', '%', -3, [5, 249, 9]),
    ('uint8', '*', -3, [241, 21, 229]),
    ('uint8', '+', 2, [7, 251, 11]),
])
def test_inplace_integer_arithmetic_matches_mxnet(dtype, op, scalar, expected):
    a = mx.nd.array([5, -7, 9], dtype=dtype)          # -7 wraps to 249 in uint8, as in MXNet
    handle = a
    if op == '/':
        a /= scalar
    elif op == '%':
        a %= scalar
    elif op == '*':
        a *= scalar
    else:
        a += scalar
    assert a is handle and a.dtype == np.dtype(dtype)
    assert a.asnumpy().tolist() == expected


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
    with mx.np_shape(True):          # a V3 (np-shape) file loads only under np semantics
        (scalar,) = mx.nd.load(str(folder / 'npshape_0d.nd')).values()
    assert scalar.shape == () and scalar.asnumpy().tolist() == 2.5
    with pytest.raises(mx.MXNetError, match='np shape'):
        mx.nd.load(str(folder / 'npshape_0d.nd'))
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


def test_dlpack_shares_memory_both_ways():
    a = mx.nd.array([[1, 2], [3, 4]])
    b = mx.nd.from_dlpack(a.to_dlpack_for_write())
    b[0] = 9                                          # writes through the capsule show in a
    np.testing.assert_array_equal(a.asnumpy(), [[9, 9], [3, 4]])
    t = torch.utils.dlpack.from_dlpack(mx.nd.to_dlpack_for_read(a))
    t[1, 1] = -1
    assert a.asnumpy()[1, 1] == -1 and b.dtype == np.float32 and b.context == mx.cpu()
    c = mx.nd.from_dlpack(torch.arange(3, dtype=torch.int64))   # an object with __dlpack__
    assert c.dtype == np.int64 and c.asnumpy().tolist() == [0, 1, 2]

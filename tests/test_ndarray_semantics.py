"""NDArray behaviours checked against MXNet 1.9.1 (numbers and bytes taken from it)."""
import numpy as np
import pytest

import mxtorch as mx


# ---- views through inplace=True ------------------------------------------------------------
def test_inplace_shape_methods_are_views():
    x = mx.nd.arange(6).reshape((2, 3))
    y = x.expand_dims(1, inplace=True)
    assert y.shape == (2, 1, 3)
    y[:] = -1
    assert x.asnumpy().tolist() == [[-1] * 3] * 2
    z = x.expand_dims(1)                       # a copy
    z[:] = 5
    assert x.asnumpy().sum() == -6
    f = mx.nd.ones((2, 3, 4)).flatten(inplace=True)
    assert f.shape == (2, 12)
    s = mx.nd.zeros((1, 5, 1, 3, 1))
    sq = s.squeeze(axis=(0, 4), inplace=True)
    assert sq.shape == (5, 1, 3)
    sq[:] = 2
    assert s.asnumpy().sum() == 30
    assert mx.nd.ones((1, 1, 1)).squeeze(inplace=True).shape == (1,)      # as MXNet
    with pytest.raises(ValueError):
        mx.nd.ones((2, 3)).squeeze(axis=0, inplace=True)


def test_basic_indexing_slice_is_contiguous():
    check = mx.nd.NDArray._basic_indexing_slice_is_contiguous
    shape = (6, 7, 8)
    assert check((slice(1, 4), slice(None), slice(None)), shape)
    assert check((2, slice(1, 3), slice(None)), shape)
    assert not check((slice(None), slice(1, 3), slice(None)), shape)
    assert not check((slice(None, None, 2), slice(None), slice(None)), shape)
    assert not check((slice(None, None, -1), slice(None), slice(None)), shape)
    assert check((slice(0, 1), slice(None, None, 20), slice(None)), shape)


# ---- creation ------------------------------------------------------------------------------
def test_array_of_a_scalar_is_0d():
    a = mx.nd.array(np.ones([]))
    assert a.shape == () and a.size == 1 and a.ndim == 0
    assert a.asnumpy().shape == () and a.asscalar() == 1.0
    assert mx.nd.array(2.5).shape == ()


def test_from_numpy_zero_copy():
    src = np.array([[1, 2], [3, 4], [5, 6]], dtype='float32')
    arr = mx.nd.from_numpy(src)
    with pytest.raises(ValueError):
        src[2, 1] = 0                          # NumPy's side is read-only
    arr[2, 1] = 100
    assert src[2, 1] == 100                    # writes go through
    with pytest.raises(ValueError, match='c-contiguous'):
        mx.nd.from_numpy(np.ones((2, 3)).T)
    copy = mx.nd.from_numpy(np.ones((2, 3)).T, zero_copy=False)
    assert copy.shape == (3, 2)


def test_creation_into_out():
    out = mx.nd.zeros((2, 2))
    assert mx.nd.ones((2, 2), out=out) is out
    assert out.asnumpy().tolist() == [[1, 1], [1, 1]]
    mx.nd.zeros((2, 2), out=out)
    assert out.asnumpy().sum() == 0


def test_moveaxis():
    x = mx.nd.zeros((4, 1, 2, 3))
    assert mx.nd.moveaxis(x, [0, 1], [2, 3]).shape == (2, 3, 4, 1)
    assert mx.nd.moveaxis(x, [3, 0], [1, 0]).shape == (4, 3, 1, 2)
    assert mx.nd.moveaxis(x, range(4), range(4)).shape == (4, 1, 2, 3)
    assert mx.nd.moveaxis(x, -1, 0).shape == (3, 4, 1, 2)
    y = mx.nd.arange(6).reshape((2, 3))
    assert mx.nd.moveaxis(y, 0, 1).asnumpy().tolist() == [[0, 3], [1, 4], [2, 5]]
    for source, destination in [(4, 0), (0, [0, 1]), ([0, 0], [0, 1]), ([0, 1], [1, 1])]:
        with pytest.raises(ValueError):
            mx.nd.moveaxis(x, source, destination)


# ---- assignment ----------------------------------------------------------------------------
def test_setitem_value_with_leading_unit_axes():
    x = mx.nd.zeros((2, 3, 4))
    x[1] = np.arange(4).reshape((1, 1, 1, 4))
    assert x[1].asnumpy().tolist() == [[0, 1, 2, 3]] * 3
    x[:, 1:2] = mx.nd.ones((1, 1, 1, 4)) * 7
    assert x.asnumpy()[:, 1].tolist() == [[7] * 4] * 2
    x[[0, 1]] = np.full((1, 2, 3, 4), 9)       # advanced indexing too
    assert x.asnumpy().sum() == 9 * 24


def test_crop_assign():
    x = mx.nd.arange(24).reshape((2, 3, 4))
    mx.nd._internal._crop_assign(x, mx.nd.zeros((2, 1, 3)) - 1, begin=(0, 0, 0),
                                 end=(2, 1, 3), out=x)
    assert x.asnumpy()[:, 0, :].tolist() == [[-1, -1, -1, 3], [-1, -1, -1, 15]]
    # numbers from MXNet 1.9.1
    y = mx.nd._internal._slice_assign(mx.nd.zeros((4,)), mx.nd.array([1, 2]), begin=(3,),
                                      end=(0,), step=(-2,))
    assert y.asnumpy().tolist() == [0, 2, 0, 1]
    z = mx.nd._internal._slice_assign_scalar(mx.nd.zeros((2, 3)), scalar=5, begin=(None, 1),
                                             end=(None, None))
    assert z.asnumpy().tolist() == [[0, 5, 5], [0, 5, 5]]
    with pytest.raises(mx.MXNetError, match='rhs'):
        mx.nd._internal._slice_assign(mx.nd.zeros((4,)), mx.nd.ones((3,)), begin=(0,), end=(2,))


# ---- operators -----------------------------------------------------------------------------
def test_contrib_float_class_checks():
    data = mx.nd.array([np.inf, -np.inf, np.nan, 5, 0])
    assert mx.nd.contrib.isinf(data).asnumpy().tolist() == [1, 1, 0, 0, 0]
    assert mx.nd.contrib.isfinite(data).asnumpy().tolist() == [0, 0, 0, 1, 1]
    assert mx.nd.contrib.isnan(data).asnumpy().tolist() == [0, 0, 1, 0, 0]


def test_broadcast_like_empty_axes_rejected():
    lhs, rhs = mx.nd.ones((1, 3)), mx.nd.ones((4, 3))
    assert mx.nd.broadcast_like(lhs, rhs, lhs_axes=(0,), rhs_axes=(0,)).shape == (4, 3)
    with pytest.raises(mx.MXNetError):
        mx.nd.broadcast_like(lhs, rhs, lhs_axes=(), rhs_axes=())


def test_integer_rounding_is_exact():
    a = mx.nd.array([50000001, -7], dtype='int32')
    for name in ('floor', 'ceil', 'round', 'rint', 'fix', 'trunc'):
        assert getattr(a, name)().asnumpy().tolist() == [50000001, -7], name
    assert mx.nd.array([-2.5, 2.5, 1.5]).round().asnumpy().tolist() == [-3, 3, 2]
    assert mx.nd.array([-2.5, 2.5, 1.5]).rint().asnumpy().tolist() == [-3, 2, 1]


def test_cached_op():
    data, weight = mx.sym.Variable('data'), mx.sym.Variable('weight')
    sym = mx.sym.FullyConnected(data, weight, num_hidden=2, no_bias=True) * 2 + 1
    op = mx.nd.CachedOp(sym)
    x = mx.nd.array([[1, 2, 3]])
    w = mx.nd.array([[1, 0, 0], [0, 1, 1]])
    assert op(x, w).asnumpy().tolist() == [[3, 11]]
    out = mx.nd.zeros((1, 2))
    op(x, w, out=out)
    assert out.asnumpy().tolist() == [[3, 11]]
    w.attach_grad()
    with mx.autograd.record():
        y = op(x, w)
    y.backward()
    assert w.grad.asnumpy().tolist() == [[2, 4, 6], [2, 4, 6]]
    with pytest.raises(mx.MXNetError, match='expected 2 inputs'):
        op(x)


# ---- files ---------------------------------------------------------------------------------
# mx.nd.save([(2,0,1) zeros, (2,1) ones, 3.0 as a 0-d array]) under mx.np_shape(True),
# written by MXNet 1.9.1: V3 records.
_NP_SHAPE_FILE = bytes.fromhex(
    '1201000000000000000000000000000003000000000000'
    '00cafa93f90000000003000000020000000000000000000000000000000100000000000000010000000000000000'
    '000000cafa93f90000000002000000020000000000000001000000000000000100000000000000000000000000'
    '803f0000803fcafa93f90000000000000000010000000000000000000000000040400000000000000000')


def test_np_shape_save_load(tmp_path):
    fname = str(tmp_path / 'a')
    with mx.np_shape(True):
        arrays = [mx.nd.zeros((2, 0, 1)), mx.nd.ones((2, 1)), mx.nd.array(np.array(3.0))]
        mx.nd.save(fname, arrays)
        with open(fname, 'rb') as f:
            assert f.read() == _NP_SHAPE_FILE
        loaded = mx.nd.load(fname)
    assert [a.shape for a in loaded] == [(2, 0, 1), (2, 1), ()]
    assert loaded[2].asscalar() == 3.0
    with pytest.raises(mx.MXNetError, match='np shape'):
        mx.nd.load(fname)                      # V3 needs np semantics
    mx.nd.save(fname, arrays[:2])              # V2 (legacy) ...
    assert [a.shape for a in mx.nd.load(fname)] == [(2, 0, 1), (2, 1)]
    with mx.np_shape(True):
        with pytest.raises(mx.MXNetError, match='np shape'):
            mx.nd.load(fname)                  # ... loads only without them

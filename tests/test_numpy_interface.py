"""mx.np / mx.npx: NumPy semantics on NDArray handles, checked against NumPy and against the
dtypes and results MXNet 1.9.1 gives (noted where they differ from NumPy's)."""
import numpy as onp
import pytest

import mxtorch as mx
from mxtorch import np, npx, autograd, gluon
from mxtorch.gluon import nn


@pytest.fixture
def np_mode():
    npx.set_np()
    yield
    npx.reset_np()


def test_ndarray_is_an_ndarray_handle_with_numpy_shapes():
    a = np.ones((2, 3))
    assert isinstance(a, mx.nd.NDArray) and isinstance(a, np.ndarray)
    assert a.dtype == onp.float32 and a.shape == (2, 3) and a.T.shape == (3, 2)
    assert a.sum().shape == () and a[0, 0].shape == ()
    assert repr(a.sum()) == 'array(6.)'
    assert repr(np.ones(2, dtype='int32')) == 'array([1, 1], dtype=int32)'
    assert float(np.array(3.5)) == 3.5 and np.array(3.5).item() == 3.5
    assert type(a.as_nd_ndarray()) is mx.nd.NDArray
    assert type(mx.nd.ones(2).as_np_ndarray()) is np.ndarray
    assert a.tolist() == [[1.0] * 3] * 2


def test_creation_dtypes_as_mxnet():
    assert np.array([1, 2, 3]).dtype == onp.float32            # lists: float32
    assert np.array(onp.array([1, 2], dtype=onp.int64)).dtype == onp.int64
    assert np.arange(5).dtype == onp.float32
    assert np.zeros(3, dtype=int).dtype == onp.int64
    assert np.full((2,), 3).dtype == onp.float32
    assert np.full((2,), 3, dtype='int32').dtype == onp.int32
    assert np.empty_like(np.ones(2, dtype='int32')).dtype == onp.int32
    onp.testing.assert_allclose(np.linspace(0, 1, 5).asnumpy(), onp.linspace(0, 1, 5))
    onp.testing.assert_array_equal(np.eye(3, k=1).asnumpy(), onp.eye(3, k=1))
    assert np.ones(shape=()).shape == () and np.zeros((0, 2)).shape == (0, 2)


def test_promotion_rules_as_mxnet():
    i32 = np.array([1, 2], dtype='int32')
    # a scalar is cast to the array's dtype first (MXNet 1.9.1: int32 * 0.5 -> [0, 0])
    onp.testing.assert_array_equal((i32 * 0.5).asnumpy(), [0, 0])
    assert (i32 * 0.5).dtype == onp.int32
    assert (i32 / 2).dtype == onp.float32                    # true division of ints
    assert (i32 + np.array([1., 2.])).dtype == onp.float32
    assert (i32 + np.array([1, 2], dtype='int64')).dtype == onp.int64
    assert (i32 == 1).dtype == onp.bool_
    assert i32.sum().dtype == onp.int32 and np.array([1, 1], dtype=bool).sum().dtype == onp.int64
    assert np.mean(i32).dtype == onp.float32
    onp.testing.assert_array_equal(np.sqrt(np.array([4, 9], dtype='int32')).asnumpy(), [2, 3])
    onp.testing.assert_array_equal(np.exp(i32).asnumpy(), [2, 7])   # cast back to int32
    assert np.argmax(i32).dtype == onp.int64


def test_indexing_follows_numpy():
    ref = onp.arange(24, dtype=onp.float32).reshape(2, 3, 4)
    x = np.array(ref)
    for key in [(1,), (slice(None), 1), (Ellipsis, 2), (None, 0), (slice(None, None, -1),),
                (slice(None), [0, 2]), (onp.array([1, 0]), slice(None), onp.array([3, 1])),
                (ref > 10,), (0, slice(None, None, -2), 1)]:
        onp.testing.assert_array_equal(x[key].asnumpy(), ref[key], err_msg=str(key))
    mask = x > 10
    onp.testing.assert_array_equal(x[mask].asnumpy(), ref[ref > 10])
    row = x[0]
    row[1] = -1                               # basic indexing is a view that writes through
    assert (x[0, 1] == -1).all()
    x[x > 20] = 0
    assert x.max().item() == 20


@pytest.mark.parametrize('name', ['sin', 'exp', 'tanh', 'log1p', 'abs', 'floor', 'square'])
def test_unary_against_numpy(name):
    ref = onp.linspace(0.1, 2, 7, dtype=onp.float32)
    onp.testing.assert_allclose(getattr(np, name)(np.array(ref)).asnumpy(),
                                getattr(onp, name)(ref), rtol=1e-6)


def test_reductions_and_manipulation_against_numpy():
    ref = onp.random.RandomState(0).rand(3, 4, 5).astype(onp.float32)
    x = np.array(ref)
    for name, kw in [('sum', dict(axis=1)), ('mean', dict(axis=(0, 2), keepdims=True)),
                     ('max', dict(axis=-1)), ('std', dict(axis=0)), ('var', dict(ddof=1)),
                     ('prod', dict(axis=2)), ('argmin', dict(axis=1)), ('cumsum', dict(axis=1))]:
        onp.testing.assert_allclose(getattr(np, name)(x, **kw).asnumpy(),
                                    getattr(onp, name)(ref, **kw), rtol=1e-5, err_msg=name)
    onp.testing.assert_array_equal(np.transpose(x, (2, 0, 1)).asnumpy(),
                                   onp.transpose(ref, (2, 0, 1)))
    onp.testing.assert_array_equal(np.concatenate([x, x], axis=1).asnumpy(),
                                   onp.concatenate([ref, ref], axis=1))
    for got, want in zip(np.array_split(x, 3, axis=2), onp.array_split(ref, 3, axis=2)):
        onp.testing.assert_array_equal(got.asnumpy(), want)
    onp.testing.assert_allclose(np.dot(x[0], x[1].T).asnumpy(), ref[0] @ ref[1].T, rtol=1e-5)
    onp.testing.assert_allclose(np.einsum('ijk,ilk->ijl', x, x).asnumpy(),
                                onp.einsum('ijk,ilk->ijl', ref, ref), rtol=1e-5)
    onp.testing.assert_array_equal(np.where(x > 0.5, x, 0).asnumpy(),
                                   onp.where(ref > 0.5, ref, 0))
    with pytest.raises(mx.MXNetError):
        x.reshape((7,))
    with pytest.raises(mx.MXNetError):
        np.reshape(x, (-1, 7))


def test_autograd_records_through_np_functions():
    x = np.array([0.5, 1.0, 2.0])
    x.attach_grad()
    with autograd.record():
        y = (np.exp(x) * x[1:].sum() + np.sin(x) ** 2).sum()
    y.backward()
    ref = onp.array([0.5, 1.0, 2.0])
    want = onp.exp(ref) * 3.0 + 2 * onp.sin(ref) * onp.cos(ref)
    want[1:] += onp.exp(ref).sum()
    onp.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-5)
    assert isinstance(x.grad, np.ndarray)


def test_random_and_linalg():
    mx.random.seed(7)
    u = np.random.uniform(-1, 1, size=(1000,))
    assert u.dtype == onp.float32 and -1 <= u.min().item() and u.max().item() < 1
    assert np.random.randint(0, 5, size=(3,)).dtype == onp.int64
    assert np.random.normal(0, 1, (2, 2)).shape == (2, 2)
    assert np.random.choice(5, 3, replace=False).shape == (3,)
    with pytest.raises(TypeError):
        np.random.uniform(shape=())
    a = np.arange(10)
    np.random.shuffle(a)
    assert sorted(a.asnumpy().tolist()) == list(range(10))
    m = onp.array([[4., 1.], [1., 3.]], dtype=onp.float32)
    onp.testing.assert_allclose(np.linalg.inv(np.array(m)).asnumpy(), onp.linalg.inv(m),
                                rtol=1e-5)
    onp.testing.assert_allclose(np.linalg.norm(np.array(m)).item(), onp.linalg.norm(m),
                                rtol=1e-6)


def test_npx_operators_and_reshape_codes(np_mode):
    assert npx.is_np_array() and mx.util.is_np_array()
    shape = lambda s, codes, **kw: npx.reshape(np.ones(s), codes, **kw).shape  # noqa: E731
    assert shape((2, 3, 4), (-2, -1)) == (2, 12)
    assert shape((2, 1, 4), (-2, -3, -1)) == (2, 4)
    assert shape((2, 3, 4), (-5, -1)) == (6, 4)
    assert shape((6, 4), (-6, 2, 3, -1)) == (2, 3, 4)
    assert shape((2, 3, 4), (-4,)) == (2, 3, 4)
    with pytest.raises(mx.MXNetError):
        npx.reshape(np.ones((2, 3, 4)), (-3, -1))
    s = npx.softmax(np.array([[1., 2., 3.]]))
    assert isinstance(s, np.ndarray)
    onp.testing.assert_allclose(s.asnumpy(), onp.exp([[1, 2, 3]]) / onp.exp([1, 2, 3]).sum(),
                                rtol=1e-6)
    onp.testing.assert_array_equal(npx.topk(np.array([1., 3., 2.]), k=2).asnumpy(), [1., 2.])
    onp.testing.assert_array_equal(npx.pick(np.array([[1., 2.], [3., 4.]]),
                                            np.array([0, 1])).asnumpy(), [1., 4.])
    out = npx.fully_connected(np.ones((2, 3)), np.ones((4, 3)), None, num_hidden=4, no_bias=True)
    onp.testing.assert_array_equal(out.asnumpy(), onp.full((2, 4), 3.))


def test_npx_save_load_keeps_zero_dim_arrays(tmp_path):
    path = str(tmp_path / 'a.npx')
    npx.save(path, {'s': np.array(2.5), 'v': np.arange(3)})
    loaded = npx.load(path)
    assert loaded['s'].shape == () and loaded['s'].item() == 2.5
    assert isinstance(loaded['v'], np.ndarray)


def test_gluon_under_np_mode(np_mode):
    class Net(gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.dense = nn.Dense(4, in_units=3)

        def hybrid_forward(self, F, x):
            return F.npx.relu(self.dense(x)) + F.np.ones_like(x).sum()

    net = Net()
    net.initialize(mx.init.One())
    net.hybridize()
    x = np.ones((2, 3))
    with autograd.record():
        y = net(x)
    y.backward()
    assert isinstance(y, np.ndarray) and isinstance(net.dense.weight.data(), np.ndarray)
    onp.testing.assert_array_equal(y.asnumpy(), onp.full((2, 4), 3. + 6.))      # bias stays zeros
    onp.testing.assert_array_equal(net.dense.weight.grad().asnumpy(), onp.full((4, 3), 2.))

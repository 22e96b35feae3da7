"""mx.test_utils as MXNet users' own tests use it, wrong expectations included."""
import gzip
import os

import numpy as np
import pytest

import mxtorch as mx
from mxtorch import test_utils as tu


def _mlp():
    data = mx.sym.Variable('data')
    net = mx.sym.FullyConnected(data, num_hidden=4, name='fc')
    return mx.sym.Activation(net, act_type='tanh', name='act')


def _ctx_list(shape, *dtypes):
    return [{'ctx': mx.cpu(i % 2), 'data': shape, 'type_dict': {'data': dt}}
            for i, dt in enumerate(dtypes)]


# ---- check_consistency --------------------------------------------------------------------------
def test_check_consistency_across_contexts_and_dtypes():
    ctx_list = _ctx_list((3, 5), np.float32, np.float64, np.float16)
    gt = tu.check_consistency(_mlp(), ctx_list)
    assert sorted(gt) == ['act_output', 'data', 'fc_bias', 'fc_weight']   # outputs, gradients
    assert gt['fc_weight'].dtype == np.float64 and gt['fc_weight'].shape == (4, 5)

    x, w, b = np.random.normal(size=(3, 5)), np.random.normal(size=(4, 5)), np.zeros(4)
    gt = tu.check_consistency(_mlp(), ctx_list,
                              arg_params={'data': x, 'fc_weight': w, 'fc_bias': b})
    y = np.tanh(x @ w.T + b)
    tu.assert_almost_equal(gt['act_output'], y, rtol=1e-12, atol=0)
    # every executor's head gradient: the first one's output, in the least precise dtype
    head = y.astype(np.float32).astype(np.float16).astype(np.float64)
    tu.assert_almost_equal(gt['fc_bias'], (head * (1 - y ** 2)).sum(0), rtol=1e-12, atol=0)


@pytest.mark.parametrize('grad_req', ['add', 'null', {'data': 'null', 'fc_weight': 'write',
                                                      'fc_bias': 'add'}])
def test_check_consistency_grad_reqs(grad_req):
    tu.check_consistency(_mlp(), _ctx_list((2, 3), np.float64, np.float32), grad_req=grad_req)


def test_check_consistency_with_aux_states_and_given_params():
    data = mx.sym.Variable('data')
    net = mx.sym.BatchNorm(mx.sym.Convolution(data, kernel=(3, 3), num_filter=2, name='conv'),
                           name='bn')
    params = {'conv_weight': np.random.normal(size=(2, 1, 3, 3))}
    ctx_list = _ctx_list((2, 1, 5, 5), np.float64, np.float32)
    gt = tu.check_consistency(net, ctx_list, arg_params=params, aux_params={'bn_moving_var': 1},
                              tol=1e-3)
    # the random inputs are added to the caller's dict, so a second run can reuse them
    assert sorted(params) == ['bn_beta', 'bn_gamma', 'conv_bias', 'conv_weight', 'data']
    again = tu.check_consistency(net, ctx_list, arg_params=params,
                                 aux_params={'bn_moving_var': 1})
    tu.assert_almost_equal(again['conv_weight'], gt['conv_weight'], rtol=0, atol=0)


def test_check_consistency_catches_a_different_computation(capsys):
    other = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=4,
                                                    name='fc'), act_type='sigmoid', name='act')
    with pytest.raises(AssertionError, match=r'forward output act_output of ctx_list\[1\] '
                                             r'\(cpu\(1\), float32\) differs from ctx_list\[0\]'):
        tu.check_consistency([_mlp(), other], _ctx_list((3, 5), np.float64, np.float32))
    tu.check_consistency([_mlp(), other], _ctx_list((3, 5), np.float64, np.float32),
                         raise_on_err=False)
    assert 'gradient of fc_weight' in capsys.readouterr().out


def test_check_consistency_against_a_wrong_ground_truth():
    ctx_list = _ctx_list((3, 5), np.float64, np.float32)
    params = {'data': np.ones((3, 5)), 'fc_weight': np.ones((4, 5)) / 10, 'fc_bias': np.zeros(4)}
    truth = {'act_output': np.full((3, 4), np.tanh(0.5)), 'data': None, 'fc_weight': None,
             'fc_bias': None}
    tu.check_consistency(_mlp(), ctx_list, arg_params=params, ground_truth=truth)
    truth['act_output'] = truth['act_output'] + 0.01
    with pytest.raises(AssertionError, match='differs from the given ground truth'):
        tu.check_consistency(_mlp(), ctx_list, arg_params=params, ground_truth=truth)


def test_check_consistency_argument_errors():
    with pytest.raises(ValueError, match='at least two'):
        tu.check_consistency(_mlp(), _ctx_list((2, 3), np.float32))
    with pytest.raises(ValueError, match='has no "ctx"'):
        tu.check_consistency(_mlp(), [{'data': (2, 3)}, {'ctx': mx.cpu(), 'data': (2, 3)}])


# ---- symbolic and numeric gradient checks -------------------------------------------------------
def test_check_numeric_gradient_passes_and_catches_a_wrong_gradient():
    x = mx.sym.Variable('x')
    loc = {'x': np.random.uniform(0.5, 1.5, (3, 4))}
    tu.check_numeric_gradient(x * x, loc)
    # BlockGrad hides one factor from backward: d/dx is x instead of 2x
    with pytest.raises(AssertionError, match='numeric gradient of x'):
        tu.check_numeric_gradient(x * mx.sym.BlockGrad(x), loc)
    tu.check_numeric_gradient(x * x, loc, numeric_eps=None, rtol=None, atol=None)


def test_check_symbolic_forward_and_backward():
    a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
    lhs, rhs = np.random.normal(size=(2, 3)), np.random.normal(size=(3, 4))
    out = tu.check_symbolic_forward(mx.sym.dot(a, b), [lhs, rhs], [lhs @ rhs])
    assert out[0].shape == (2, 4)
    # MXNet returns the executor's NDArrays (user code calls .asnumpy() on them)
    assert isinstance(out[0], mx.nd.NDArray)
    np.testing.assert_allclose(out[0].asnumpy(), lhs @ rhs, rtol=1e-5, atol=1e-5)
    with pytest.raises(AssertionError, match='output dot'):
        tu.check_symbolic_forward(mx.sym.dot(a, b), [lhs, rhs], [lhs @ rhs + 0.1])
    head = np.random.normal(size=(2, 4))
    grads = tu.check_symbolic_backward(mx.sym.dot(a, b), [lhs, rhs], [head],
                                       [head @ rhs.T, lhs.T @ head])
    assert sorted(grads) == ['a', 'b'] and isinstance(grads['a'], mx.nd.NDArray)
    np.testing.assert_allclose(grads['b'].asnumpy(), lhs.T @ head, rtol=1e-5, atol=1e-5)
    tu.check_symbolic_backward(mx.sym.dot(a, b), [lhs, rhs], [head], [head @ rhs.T, lhs.T @ head],
                               grad_req=['write', 'add'])
    with pytest.raises(AssertionError, match='gradient of b'):
        tu.check_symbolic_backward(mx.sym.dot(a, b), {'a': lhs, 'b': rhs}, [head],
                                   {'b': lhs.T @ head + 0.1})


# ---- comparisons --------------------------------------------------------------------------------
def test_tolerance_is_the_looser_of_the_two_dtypes():
    expected = np.random.normal(size=(50,))                          # float64
    got = mx.nd.array(expected * (1 + 3e-5))                         # float32, off by 3e-5
    tu.assert_almost_equal(got, expected)                            # float32 tolerance
    assert not tu.almost_equal(expected * (1 + 3e-5), expected)      # both float64: too far
    assert tu.get_tols(got, expected, None, None) == (1e-4, 1e-3)
    assert tu.get_tols(got, expected, {np.dtype(np.float32): 0.5}, 0.25) == (0.5, 0.25)
    with pytest.raises(AssertionError, match=r'error .* at \(7,\)'):
        wrong = expected.copy()
        wrong[7] += 1
        tu.assert_almost_equal(mx.nd.array(wrong), expected)


def test_assert_exception_and_same():
    tu.assert_exception(lambda: 1 / 0, ZeroDivisionError)
    with pytest.raises(AssertionError, match='did not raise'):
        tu.assert_exception(lambda: None, ValueError)
    assert tu.same(mx.nd.array([1, 2]), np.array([1, 2], dtype=np.float32))
    a = mx.nd.zeros((2, 2))
    assert tu.same_array(a, a) and not tu.same_array(a, a.copy())
    assert a.asnumpy().sum() == 0                                    # left as it was


def test_np_reduce_matches_numpy():
    dat = np.random.normal(size=(2, 3, 4, 5))
    for axis, keepdims in [(None, False), (1, True), ((0, 3), False), ((-1, 1), True)]:
        want = np.sum(dat, axis=axis, keepdims=keepdims)
        np.testing.assert_allclose(tu.np_reduce(dat, axis, keepdims, np.sum), want)
    np.testing.assert_array_equal(tu.np_reduce(dat, (0, 2), True, np.max),
                                  dat.max(axis=(0, 2), keepdims=True))


# ---- random data --------------------------------------------------------------------------------
def test_rand_ndarray_and_shapes():
    arr = tu.rand_ndarray((40, 30), dtype='float64', ctx=mx.cpu(1))
    assert arr.shape == (40, 30) and arr.dtype == np.float64 and arr.context == mx.cpu(1)
    values = arr.asnumpy()
    assert values.min() < 0 < values.max() and abs(values.std() - 1) < 0.1   # standard normal
    np.random.seed(5)
    csr = tu.rand_ndarray((5, 16), stype='csr', density=0.5)
    assert csr.stype == 'csr' and np.count_nonzero(csr.asnumpy()) == 40
    rsp, (values, rows) = tu.rand_sparse_ndarray((6, 2), 'row_sparse', density=0.5)
    np.testing.assert_array_equal(rsp.asnumpy()[rows], values)
    assert np.count_nonzero(rsp.asnumpy()) == values.size
    power = tu.rand_sparse_ndarray((5, 16), 'csr', density=0.5, distribution='powerlaw')[0]
    np.testing.assert_array_equal((power.asnumpy() != 0).sum(axis=1), [2, 4, 8, 16, 10])
    shapes = [tu.rand_shape_2d(3, 4) for _ in range(200)]
    assert {s[0] for s in shapes} == {1, 2, 3} and {s[1] for s in shapes} == {1, 2, 3, 4}
    assert min(min(tu.rand_shape_3d(2, 2, 2, allow_zero_size=True)) for _ in range(50)) == 0
    np.random.seed(3)
    first = tu.rand_shape_nd(4)
    np.random.seed(3)
    assert tu.rand_shape_nd(4) == first
    assert tu.random_arrays(()).shape == () and tu.random_arrays((2,), (3,))[1].shape == (3,)
    low_high = tu.random_uniform_arrays((100,), low=2, high=3)[0]
    assert low_high.dtype == np.float32 and 2 <= low_high.min() and low_high.max() < 3
    assert sorted(tu.random_sample(list(range(5)), 5)) == list(range(5))


def test_set_default_context_is_the_current_context():
    try:
        tu.set_default_context(mx.cpu(1))
        assert tu.default_context() == mx.cpu(1)
        assert mx.nd.zeros((1,)).context == mx.cpu(1)
    finally:
        tu.set_default_context(mx.cpu(0))


def test_random_generator_checks():
    buckets, probs = tu.gen_buckets_probs_with_ppf(lambda q: q * 2 - 1, 4)
    assert buckets == [(-1, -0.5), (-0.5, 0), (0, 0.5), (0.5, 1)] and probs == [0.25] * 4
    uniform = lambda n: np.random.uniform(-1, 1, n)                 # noqa: E731
    assert len(tu.verify_generator(uniform, buckets, probs, nsamples=20000)) == 5
    skewed = lambda n: np.random.uniform(-1, 1, n) ** 2             # noqa: E731
    with pytest.raises(AssertionError, match='chi-square'):
        tu.verify_generator(skewed, buckets, probs, nsamples=20000)
    p, observed, _ = tu.chi_square_check(lambda n: np.random.randint(0, 3, n), [0, 1, 2],
                                         [1 / 3] * 3, nsamples=30000)
    assert p > 1e-4 and observed.sum() == 30000
    assert tu.mean_check(lambda n: np.random.normal(1, 2, n), 1, 2, 50000)
    assert not tu.mean_check(lambda n: np.random.normal(1.2, 2, n), 1, 2, 50000)
    assert tu.var_check(lambda n: np.random.normal(0, 2, n), 2, 50000)
    # the counts are exactly lo <= x < hi (edges, overlaps, empty and infinite ranges, NaN
    # never counted) and x == value
    draws = np.array([-np.inf, -1, -0.5, -0.5, 0, 0.25, 0.5, 1, np.inf, np.nan])
    ranges = [(-np.inf, -0.5), (-0.5, 0.5), (0, np.inf), (0.5, 0.5), (1, -1), (-np.inf, np.inf)]
    _, observed, _ = tu.chi_square_check(lambda n: draws, ranges, [1 / 6] * 6, nsamples=10)
    assert observed.tolist() == [((draws >= lo) & (draws < hi)).sum() for lo, hi in ranges]
    _, observed, _ = tu.chi_square_check(lambda n: np.array([2, 0, 2, 5]), [0, 1, 2, 2.5],
                                         [0.25] * 4, nsamples=4)
    assert observed.tolist() == [1, 0, 2, 0]


# ---- helpers ------------------------------------------------------------------------------------
def test_retry_reruns_assertion_failures_only():
    calls = []

    @tu.retry(3)
    def flaky(threshold):
        calls.append(1)
        assert len(calls) >= threshold

    flaky(2)
    assert len(calls) == 2 and flaky.__name__ == 'flaky'
    calls.clear()
    with pytest.raises(AssertionError):
        flaky(5)
    assert len(calls) == 3


def test_discard_stderr_and_environment(capfd):
    with tu.discard_stderr():
        os.write(2, b'hidden\n')
    os.write(2, b'shown\n')
    assert capfd.readouterr().err == 'shown\n'
    os.environ.pop('MXTORCH_TEST_VAR', None)
    with tu.environment('MXTORCH_TEST_VAR', '1'):
        assert os.environ['MXTORCH_TEST_VAR'] == '1'
        with tu.environment({'MXTORCH_TEST_VAR': None}):
            assert 'MXTORCH_TEST_VAR' not in os.environ
    assert 'MXTORCH_TEST_VAR' not in os.environ


def test_dummy_iter_repeats_the_first_batch():
    real = mx.io.NDArrayIter(np.arange(12).reshape(6, 2), np.arange(6), batch_size=2)
    dummy = tu.DummyIter(real)
    batches = [next(dummy) for _ in range(5)]
    assert all(b is batches[0] for b in batches)
    assert dummy.provide_data == real.provide_data and dummy.batch_size == 2


def test_list_gpus_and_speed():
    assert list(tu.list_gpus()) == list(range(mx.num_gpus()))
    assert tu.check_speed(_mlp(), N=2, data=(2, 3)) > 0
    assert tu.check_speed(_mlp(), location={'data': np.ones((2, 3)), 'fc_weight': np.ones((4, 3)),
                                            'fc_bias': np.ones(4)}, N=2, typ='forward') > 0


def _idx(array):
    header = bytes([0, 0, 8, array.ndim]) + np.array(array.shape, dtype='>u4').tobytes()
    return header + array.astype(np.uint8).tobytes()


def test_download_and_mnist_work_offline_from_local_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def no_network(url, timeout=None):
        raise OSError('network is unreachable')
    monkeypatch.setattr(tu.urllib.request, 'urlopen', no_network)
    with pytest.raises(ConnectionError, match='save it as .*file.bin'):
        tu.download('http://example.com/data/file.bin', retries=2)
    (tmp_path / 'file.bin').write_bytes(b'x')
    assert tu.download('http://example.com/data/file.bin') == 'file.bin'
    with pytest.raises(ConnectionError):
        tu.get_mnist()
    images = {'train': np.random.randint(0, 256, (10, 28, 28)),
              't10k': np.random.randint(0, 256, (4, 28, 28))}
    labels = {'train': np.arange(10) % 10, 't10k': np.arange(4)}
    os.mkdir('data')
    for prefix in ('train', 't10k'):
        for kind, arr in (('images-idx3', images[prefix]), ('labels-idx1', labels[prefix])):
            name = '%s-%s-ubyte' % (prefix, kind)
            (tmp_path / 'data' / name).write_bytes(_idx(arr))
            with gzip.open(tmp_path / (name + '.gz'), 'wb') as f:
                f.write(_idx(arr))
    mnist = tu.get_mnist()
    assert mnist['train_data'].shape == (10, 1, 28, 28) and mnist['test_label'].dtype == np.int8
    np.testing.assert_allclose(mnist['test_data'][:, 0] * 255, images['t10k'], atol=1e-4)
    # MNISTIters as MXNet's: whole batches of 3 only (10 images -> 3, 4 -> 1), both shuffled, pixels / 256
    train, val = tu.get_mnist_iterator(3, (784,))
    assert train.provide_data[0].shape == (3, 784)
    assert len(list(train)) == 3
    batches = list(val)
    assert len(batches) == 1 and batches[0].pad == 0
    got = batches[0].label[0].asnumpy().astype(int)
    assert len(set(got)) == 3 and set(got) <= set(labels['t10k'].tolist())
    np.testing.assert_allclose(batches[0].data[0].asnumpy() * 256,
                               images['t10k'].reshape(4, 784)[got], atol=1e-3)
    train, _ = tu.get_mnist_iterator(2, (1, 28, 28), num_parts=2, part_index=1)
    assert train.provide_data[0].shape == (2, 1, 28, 28) and len(list(train)) == 2


# ---- the rest of MXNet's helpers -----------------------------------------------------------------
def test_array_helpers_match_mxnet():
    np.testing.assert_array_equal(tu.collapse_sum_like(np.arange(24.).reshape(2, 3, 4), (3, 1)),
                                  [[60.], [92.], [124.]])             # MXNet 1.9.1's values
    np.testing.assert_array_equal(tu.assign_each(np.arange(4.), lambda x: x * 2 + 1), [1, 3, 5, 7])
    np.testing.assert_array_equal(tu.assign_each2(np.arange(3.), np.ones(3), lambda x, y: x - y),
                                  [-1, 0, 1])
    np.testing.assert_array_equal(tu.create_2d_tensor(3, 2).asnumpy(), [[0, 0], [1, 1], [2, 2]])
    assert tu.create_vector(4).dtype == np.int64
    np.testing.assert_array_equal(tu.get_identity_mat_batch(2).asnumpy(), [np.eye(2)] * 2)
    assert tu.default_numeric_eps()[np.dtype(np.float32)] == 1 / 512 and tu.get_etol() == 0
    tu.assert_almost_equal_with_err(np.array([1., 2, 3, 4]), np.array([1., 2, 3, 5]), etol=0.3)
    with pytest.raises(AssertionError, match='etol'):
        tu.assert_almost_equal_with_err(np.array([1., 2, 3, 4]), np.array([1., 2, 3, 5]), etol=0.2)


def test_real_eigenvalue_matrices():
    np.random.seed(3)
    m = tu.new_matrix_with_real_eigvals_nd((2, 3, 3))
    assert m.shape == (2, 3, 3) and np.allclose(np.linalg.eigvals(m).imag, 0)
    s = tu.new_sym_matrix_with_real_eigvals_nd((2, 4, 4))
    np.testing.assert_allclose(s, s.transpose(0, 2, 1), atol=1e-12)
    q = tu.new_orthonormal_matrix_2d(4)
    np.testing.assert_allclose(q @ q.T, np.eye(4), atol=1e-12)


def test_numeric_grad_and_compare_optimizer():
    x = mx.sym.var('x')
    exe = mx.sym.sum(x * x).simple_bind(mx.cpu(), x=(2, 2))
    got = tu.numeric_grad(exe, {'x': np.array([[1., 2], [3, 4]], dtype=np.float32)}, eps=1e-2)
    np.testing.assert_allclose(got['x'], [[2, 4], [6, 8]], rtol=1e-3)
    tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9),
                         mx.optimizer.SGD(learning_rate=0.1, momentum=0.9), (3, 4), np.float32)
    with pytest.raises(AssertionError):
        tu.compare_optimizer(mx.optimizer.SGD(learning_rate=0.1),
                             mx.optimizer.SGD(learning_rate=0.2), (3, 4), np.float32)


def test_use_np_scopes_and_platform_queries():
    @tu.use_np
    def flags():
        return mx.util.is_np_shape(), mx.util.is_np_array()
    assert flags() == (True, True) and not mx.util.is_np_array()
    with mx.np_array(True):
        assert mx.is_np_array()
    assert not mx.is_np_array()
    assert tu.is_op_runnable() and not tu.has_tvm_ops()
    assert tu.is_aarch64_run() in (True, False) and tu.is_cd_run() in (True, False)
    assert tu.download_model('no-such-model') == (None, 0)


def test_check_symbolic_backward_stores_gradients_in_the_asked_stype():
    x = mx.sym.Variable('x')
    value = np.array([[1, 2], [0, 0], [3, 4]], dtype=np.float32)
    grads = mx.test_utils.check_symbolic_backward(
        mx.sym.elemwise_mul(x, x), [value], [np.ones_like(value)], [2 * value],
        grad_stypes={'x': 'row_sparse'})
    assert grads['x'].stype == 'row_sparse'
    np.testing.assert_allclose(grads['x'].asnumpy(), 2 * value)

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


def test_prelu_gamma_broadcasts_from_leading_axes():
    # MXNet 1.9.1 LeakyReLU(act_type='prelu'): gamma (3,4) on (3,4) data is per element; (3,) on
    # (3,4) data matches axis 0; (2,4) on (2,4,3,2) data matches axes 0 and 1
    x = mx.nd.array(np.arange(-6, 6).reshape(3, 4))
    out = mx.nd.LeakyReLU(x, mx.nd.array(np.arange(12).reshape(3, 4) * 0.1), act_type='prelu')
    np.testing.assert_allclose(out.asnumpy()[:2], [[0, -0.5, -0.8, -0.9], [-0.8, -0.5, 0, 1]],
                               rtol=1e-6)
    out = mx.nd.LeakyReLU(x, mx.nd.array([0.5, 0.2, 0.1]), act_type='prelu')
    np.testing.assert_allclose(out.asnumpy()[:2], [[-3, -2.5, -2, -1.5], [-0.4, -0.2, 0, 1]],
                               rtol=1e-6)
    x4 = mx.nd.array(np.arange(-24, 24).reshape(2, 4, 3, 2))
    out = mx.nd.LeakyReLU(x4, mx.nd.array(np.arange(8).reshape(2, 4) * 0.1), act_type='prelu')
    np.testing.assert_allclose(out.asnumpy()[:, :, 0, 0], [[0, -1.8, -2.4, -1.8], [0, 6, 12, 18]],
                               rtol=1e-6)
    with pytest.raises(MXNetError):
        mx.nd.LeakyReLU(x, mx.nd.array([0.5, 0.2, 0.1, 0.4, 0.3]), act_type='prelu')
    # gamma's gradient sums over the axes it broadcasts along
    g = mx.nd.array([0.5, 0.2, 0.1])
    g.attach_grad()
    with mx.autograd.record():
        y = mx.nd.LeakyReLU(x, g, act_type='prelu')
    y.backward()
    np.testing.assert_allclose(g.grad.asnumpy(), [-18, -3, 0])


def test_executor_backward_head_gradients_like_mxnet():
    x = mx.sym.var('x')
    xa, xg = mx.nd.ones((2, 3)), mx.nd.zeros((2, 3))
    exe = (x * 2).bind(mx.cpu(), {'x': xa}, args_grad={'x': xg})
    # backward before any forward runs one (MXNet runs its backward graph regardless)
    exe.backward([mx.nd.ones((2, 3))])
    np.testing.assert_array_equal(xg.asnumpy(), np.full((2, 3), 2))
    # extra head gradients are ignored
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((2, 3)) * 3, mx.nd.ones((4,))])
    np.testing.assert_array_equal(xg.asnumpy(), np.full((2, 3), 6))
    with pytest.raises(MXNetError):
        exe.backward([mx.nd.ones((3, 2))])
    # shape_array's head gradient is never read, whatever its shape; x's gradient is zero
    exe = mx.sym.shape_array(x).bind(mx.cpu(), {'x': xa}, args_grad={'x': xg})
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((7,))])
    np.testing.assert_array_equal(xg.asnumpy(), np.zeros((2, 3)))


def test_integer_argument_gradient_is_written_as_zeros():
    data, length = mx.sym.var('data'), mx.sym.var('length')
    sym = mx.sym.softmax(data, length=length, use_length=True, axis=1)
    lg = mx.nd.array([7, 7], dtype='int32')
    exe = sym.bind(mx.cpu(), {'data': mx.nd.ones((2, 3)), 'length': mx.nd.array([1, 3], dtype='int32')},
                   args_grad={'data': mx.nd.zeros((2, 3)), 'length': lg})
    exe.forward(is_train=True)
    exe.backward([mx.nd.ones((2, 3))])
    np.testing.assert_array_equal(lg.asnumpy(), [0, 0])


def test_zero_dims_are_unknown_outside_numpy_shape_mode():
    # MXNet 1.9.1: zeros(()), ones((2, 0)) fail shape inference unless mx.np_shape is on;
    # depth_to_space of a zero-size input likewise
    for make in (lambda: mx.nd.zeros(()), lambda: mx.nd.ones((2, 0)), lambda: mx.nd.full((), 3)):
        with pytest.raises(MXNetError):
            make()
    with pytest.raises(MXNetError):
        mx.nd.depth_to_space(mx.nd.array(np.zeros((1, 4, 0, 3))), 2)
    assert not mx.is_np_shape()
    with mx.np_shape(True):
        assert mx.is_np_shape()
        assert mx.nd.zeros(()).shape == ()
        assert mx.nd.ones((2, 0)).shape == (2, 0)
        assert mx.nd.depth_to_space(mx.nd.array(np.zeros((1, 4, 0, 3))), 2).shape == (1, 1, 0, 6)
    assert not mx.is_np_shape()

    @mx.use_np_shape
    def scoped():
        return mx.is_np_shape()
    assert scoped() and not mx.is_np_shape()
    # sum of a zero-size array still has a known (1,) shape
    assert mx.nd.sum(mx.nd.array(np.zeros((2, 0, 3)))).shape == (1,)


def test_array_from_fortran_order_numpy_is_row_major():
    src = np.arange(12, dtype=np.float32).reshape(3, 4).T        # a Fortran-ordered view
    a = mx.nd.array(src)
    assert a._tensor.is_contiguous()
    np.testing.assert_array_equal(a.asnumpy(), src)
    np.testing.assert_array_equal(a.reshape((-1,)).asnumpy(), src.reshape(-1))


def test_executor_defers_a_compute_failure_to_the_wait():
    # take(mode='raise') with an index out of range: MXNet's forward returns, the wait raises
    a, idx = mx.sym.var('a'), mx.sym.var('indices')
    exe = mx.sym.take(a, idx, mode='raise').bind(
        mx.cpu(), {'a': mx.nd.ones((2, 3)), 'indices': mx.nd.array([0, 5])})
    outs = exe.forward()
    with pytest.raises(MXNetError):
        outs[0].asnumpy()
    exe.arg_dict['indices'][:] = mx.nd.array([1, 0])
    np.testing.assert_array_equal(exe.forward()[0].asnumpy(), np.ones((2, 3)))


def test_diag_offset_past_the_plane_is_an_error():
    # MXNet 1.9.1 on a (3, 5) matrix: k=5 -> (0,), k=6 -> error; k=-3 -> (0,), k=-4 -> error
    a = mx.nd.ones((3, 5))
    assert mx.nd.diag(a, k=3).shape == (2,)
    assert mx.nd.diag(a, k=-2).shape == (1,)
    for k in (6, -4):
        with pytest.raises(MXNetError):
            mx.nd.diag(a, k=k)
    with pytest.raises(MXNetError):
        mx.nd.diag(mx.nd.ones((2, 3, 4)), k=4)
    assert mx.nd.diag(mx.nd.ones((4,)), k=7).shape == (11, 11)


SPD = np.array([[9., 3., -6., 12.], [3., 26., -7., -11.], [-6., -7., 9., 7.],
                [12., -11., 7., 65.]])
# MXNet 1.9.1: linalg.potrf(SPD) (lower) -- potrf(SPD, lower=False) is its transpose
SPD_LOWER = np.array([[3., 0, 0, 0], [1, 5, 0, 0], [-2, -1, 2, 0], [4, -3, 6, 2]])


def test_potrf_potri_lower_and_upper():
    a = mx.nd.array(SPD, dtype='float64')
    np.testing.assert_allclose(mx.nd.linalg.potrf(a).asnumpy(), SPD_LOWER)
    upper = mx.nd.linalg.potrf(a, lower=False)
    np.testing.assert_allclose(upper.asnumpy(), SPD_LOWER.T)
    np.testing.assert_allclose(mx.nd.linalg.potri(upper, lower=False).asnumpy() @ SPD, np.eye(4),
                               atol=1e-10)
    np.testing.assert_allclose(mx.nd.linalg.potri(mx.nd.linalg.potrf(a)).asnumpy() @ SPD,
                               np.eye(4), atol=1e-10)


def test_operator_arguments_as_mxnet_documents_them():
    from mxtorch.operator import get_all_registered_operators, get_operator_arguments
    ops = get_all_registered_operators()
    assert 'Activation' in ops and 'broadcast_plus' in ops and ops == sorted(ops)
    # MXNet 1.9.1's answers
    args = get_operator_arguments('Activation')
    assert args.narg == 2 and args.names == ['data', 'act_type']
    assert args.types == ['NDArray-or-Symbol',
                          "{'relu', 'sigmoid', 'softrelu', 'softsign', 'tanh'}, required"]
    args = get_operator_arguments('Dropout')
    assert args.types[:4] == ['NDArray-or-Symbol', 'float, optional, default=0.5',
                              "{'always', 'training'},optional, default='training'",
                              'Shape(tuple), optional, default=[]']
    assert get_operator_arguments('add_n') == (1, ['args'], ['NDArray-or-Symbol[]'])
    assert get_operator_arguments('broadcast_add').names == ['lhs', 'rhs']


def test_integer_arange_counts_in_integer_steps():
    # MXNet 1.9.1: arange(-2.5, 10, 1.7, dtype=int32) -> [-2 -1 0 1 2 3 4 5]; (0.5, 5, 0.5) -> 9 zeros
    for make in (mx.nd.arange, lambda *a, **k: mx.sym.arange(*a, **k).eval()[0]):
        np.testing.assert_array_equal(make(-2.5, 10, 1.7, dtype='int32').asnumpy(),
                                      [-2, -1, 0, 1, 2, 3, 4, 5])
        np.testing.assert_array_equal(make(1.3, 20, 2.6, dtype='int64').asnumpy(),
                                      [1, 3, 5, 7, 9, 11, 13, 15])
        np.testing.assert_array_equal(make(0.5, 5, 0.5, dtype='int32').asnumpy(), np.zeros(9))
        np.testing.assert_allclose(make(0.5, 2, 0.5, repeat=2).asnumpy(),
                                   [0.5, 0.5, 1, 1, 1.5, 1.5])


def test_gather_nd_index_out_of_range_is_index_error():
    data = mx.nd.array([[0, 1, 2], [3, 4, 5]])
    for idx in ([[0, 1, 0], [0, 1, 3]], [[0, 1, 0], [0, 1, -5]]):
        with pytest.raises(IndexError):
            mx.nd.gather_nd(data, mx.nd.array(idx)).asnumpy()
    np.testing.assert_array_equal(mx.nd.gather_nd(data, mx.nd.array([[1, 0], [2, -1]])).asnumpy(),
                                  [5, 2])


def test_unknown_dims_inferred_backwards():
    # ones(shape=[-1, -1]): -1 dims are unknown, filled from the consumer (as MXNet)
    b = mx.sym.ones(shape=[2, 3]) + mx.sym.transpose(mx.sym.ones(shape=[-1, -1]))
    assert b.bind(mx.cpu(), args={}).forward()[0].shape == (2, 3)
    b = mx.sym.ones(shape=[2, -1]) + mx.sym.transpose(mx.sym.ones(shape=[3, -1]))
    assert b.bind(mx.cpu(), args={}).forward()[0].shape == (2, 3)
    # Reshape: one unknown input dim follows from a known output
    net = mx.sym.elemwise_add(mx.sym.var('data').reshape((0, -1)), mx.sym.ones(shape=(2, 75)))
    ins, outs, _ = net.infer_shape(data=(2, 0, 5, 5))
    assert ins[0] == (2, 3, 5, 5) and outs[0] == (2, 75)


def test_dropout_backward_reuses_the_forward_mask():
    x = mx.sym.var('data')
    for mode, train in (('always', False), ('training', True)):
        exe = mx.sym.Dropout(x, p=0.5, mode=mode).simple_bind(mx.cpu(), data=(50, 40))
        exe.arg_arrays[0][:] = 1
        out = exe.forward(is_train=train)[0].asnumpy()
        assert 0 < (out == 0).mean() < 1
        exe.backward([mx.nd.ones((50, 40))], is_train=train)
        np.testing.assert_array_equal(exe.grad_arrays[0].asnumpy(), out)
        exe.backward([mx.nd.ones((50, 40))], is_train=train)      # a second backward too
        np.testing.assert_array_equal(exe.grad_arrays[0].asnumpy(), out)


def test_dropout_p_one_gives_nan_as_mxnet():
    # MXNet 1.9.1: the mask is 0 * (1/0)
    assert np.isnan(mx.nd.Dropout(mx.nd.ones((2, 2)), p=1.0, mode='always').asnumpy()).all()


def test_custom_op_python_error_is_mxnet_error():
    class Failing(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            raise ZeroDivisionError('boom')

    @mx.operator.register('mxtorch_test_failing')
    class FailingProp(mx.operator.CustomOpProp):
        def list_arguments(self):
            return ['a']

        def infer_shape(self, in_shape):
            return in_shape, [in_shape[0]]

        def create_operator(self, ctx, shapes, dtypes):
            return Failing()

    with pytest.raises(MXNetError, match='boom'):
        mx.nd.Custom(mx.nd.ones((2,)), op_type='mxtorch_test_failing').wait_to_read()


def test_ctc_loss_ignores_frames_past_the_data_length():
    rng = np.random.RandomState(0)
    data = rng.randn(4, 2, 5).astype(np.float32)
    label = mx.nd.array([[1, 2], [3, 0]])
    lengths = mx.nd.array([3, 3])
    padded = data.copy()
    padded[3] = np.nan
    grads = []
    for d in (data, padded):
        x = mx.nd.array(d)
        x.attach_grad()
        with mx.autograd.record():
            loss = mx.nd.CTCLoss(x, label, lengths, use_data_lengths=True)
        loss.backward()
        grads.append(x.grad.asnumpy())
        assert np.isfinite(loss.asnumpy()).all()
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)
    np.testing.assert_array_equal(grads[1][3], 0)


def test_correlation_abs_gradient_at_ties_is_plus_one():
    # equal inputs: every |a - b| is a tie; MXNet's gradient takes sign +1 for data1, -1 for data2
    x = mx.nd.ones((1, 1, 3, 3))
    a, b = x.copy(), x.copy()
    a.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        out = mx.nd.Correlation(a, b, kernel_size=1, max_displacement=0, pad_size=0,
                               is_multiply=False)
    out.backward()
    np.testing.assert_array_equal(a.grad.asnumpy(), np.ones((1, 1, 3, 3)))
    np.testing.assert_array_equal(b.grad.asnumpy(), -np.ones((1, 1, 3, 3)))


def test_legacy_numpy_and_ndarray_ops():
    class Square(mx.operator.NumpyOp):
        def forward(self, in_data, out_data):
            out_data[0][:] = in_data[0] ** 2

        def backward(self, out_grad, in_data, out_data, in_grad):
            in_grad[0][:] = 2 * in_data[0] * out_grad[0]

    with pytest.warns(UserWarning):
        sq = Square()
    x = mx.sym.Variable('X')
    s = sq.get_symbol(x, name='sq')
    assert s.list_arguments() == ['X'] and s.list_outputs() == ['sq_output']
    dx = mx.nd.zeros((3,))
    exe = s.bind(mx.cpu(), args=[mx.nd.array([1, 2, 3])], args_grad={'X': dx})
    np.testing.assert_allclose(exe.forward(is_train=True)[0].asnumpy(), [1, 4, 9])
    exe.backward(mx.nd.ones((3,)))
    np.testing.assert_allclose(dx.asnumpy(), [2, 4, 6])
    # the default PythonOp is the identity whose input gradient is 1
    with pytest.warns(UserWarning):
        ident = mx.operator.NDArrayOp()
    exe = ident(x).bind(mx.cpu(), args=[mx.nd.ones(3) * 10], args_grad={'X': dx})
    np.testing.assert_allclose(exe.forward(is_train=True)[0].asnumpy(), [10, 10, 10])
    exe.backward(mx.nd.ones(3) * 5)
    np.testing.assert_allclose(dx.asnumpy(), [1, 1, 1])


def test_pooling_ignores_extra_pad_and_stride_entries():
    # MXNet 1.9.1: kernel=2, stride=2, pad=(0, 0, 0) on 1-D data -> (1, 1, 5); pad=(1,) -> 6
    x = mx.nd.ones((1, 1, 10))
    assert mx.nd.Pooling(x, kernel=2, stride=2, pad=(0, 0, 0)).shape == (1, 1, 5)
    assert mx.nd.Pooling(x, kernel=2, stride=(2, 3), pad=(1,)).shape == (1, 1, 6)
    with pytest.raises(MXNetError):       # Convolution stays strict
        mx.nd.Convolution(x, mx.nd.ones((1, 1, 3)), kernel=(3,), stride=(2, 3), num_filter=1,
                          no_bias=True)


def test_min_max_of_empty_array_is_an_error():
    with mx.np_shape(True):
        a = mx.nd.zeros((5, 0))
        for reduce in (a.min, a.max):
            with pytest.raises(MXNetError):
                reduce()


def test_quantize_dequantize_int8_and_uint8():
    a = mx.nd.array([[0.1392, -0.5928], [0.6027, 2.0], [-0.5, 0.5]])
    lo, hi = mx.nd.array([-0.3]), mx.nd.array([1.0])
    q, qmin, qmax = mx.nd.contrib.quantize(a, lo, hi, out_type='int8')
    # MXNet 1.9.1: symmetric over +-max(|min|, |max|) = +-1, 127 steps, rounded half away
    np.testing.assert_array_equal(q.asnumpy(), [[18, -75], [77, 127], [-64, 64]])
    assert q.dtype == np.int8 and qmin.asscalar() == -1 and qmax.asscalar() == 1
    np.testing.assert_allclose(mx.nd.contrib.dequantize(q, qmin, qmax).asnumpy(),
                               np.array([[18, -75], [77, 127], [-64, 64]]) / 127.0, rtol=1e-6)
    q, qmin, qmax = mx.nd.contrib.quantize(a, lo, hi, out_type='uint8')
    expect = np.clip(np.floor((a.asnumpy() + 0.3) * (255 / 1.3) + 0.5), 0, 255)
    np.testing.assert_array_equal(q.asnumpy(), expect)
    np.testing.assert_allclose(mx.nd.contrib.dequantize(q, qmin, qmax).asnumpy(),
                               -0.3 + expect * 1.3 / 255, rtol=1e-5, atol=1e-6)

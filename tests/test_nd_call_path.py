"""The imperative call path (`mx.nd.<op>(...)`): a call's parameters are parsed once per call
signature and reused; the results must be those of parsing every call."""
import numpy as np
import pytest

import mxtorch as mx


def test_parameter_values_are_part_of_the_signature():
    x = mx.nd.array([[-2.0, 0.5, 3.0]])
    for lo, hi in ((0, 1), (-1, 2), (0.25, 0.75)):
        np.testing.assert_allclose(mx.nd.clip(x, lo, hi).asnumpy(),
                                   np.clip(x.asnumpy(), lo, hi))
        np.testing.assert_allclose(mx.nd.clip(x, a_min=lo, a_max=hi).asnumpy(),
                                   np.clip(x.asnumpy(), lo, hi))


def test_equal_values_of_different_types_are_parsed_apart():
    x = mx.nd.array([[1.0, 2.0], [3.0, 4.0]])
    assert mx.nd.sum(x, axis=1, keepdims=True).shape == (2, 1)
    assert mx.nd.sum(x, axis=1, keepdims=1).shape == (2, 1)
    assert mx.nd.sum(x, axis=1, keepdims=False).shape == (2,)
    with pytest.raises(mx.MXNetError):
        mx.nd.sum(x, axis=1.5)          # a float axis is refused, every time
    with pytest.raises(mx.MXNetError):
        mx.nd.sum(x, axis=1.5)


def test_arrays_by_position_and_by_keyword():
    x = mx.nd.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    w = mx.nd.array(np.ones((4, 3), dtype=np.float32))
    b = mx.nd.array(np.arange(4, dtype=np.float32))
    want = x.asnumpy() @ w.asnumpy().T + b.asnumpy()
    for _ in range(2):
        np.testing.assert_allclose(mx.nd.FullyConnected(x, w, b, num_hidden=4).asnumpy(), want)
        np.testing.assert_allclose(mx.nd.FullyConnected(data=x, weight=w, bias=b,
                                                        num_hidden=4).asnumpy(), want)
        np.testing.assert_allclose(mx.nd.FullyConnected(x, weight=w, num_hidden=4,
                                                        no_bias=True).asnumpy(), want - b.asnumpy())
        np.testing.assert_allclose(mx.nd.FullyConnected(x, w, None, num_hidden=4,
                                                        no_bias=True).asnumpy(), want - b.asnumpy())
    # the same array in two input positions
    np.testing.assert_allclose(mx.nd.elemwise_add(x, x).asnumpy(), 2 * x.asnumpy())


def test_missing_input_raises_every_time():
    x = mx.nd.ones((2, 3))
    for _ in range(2):
        with pytest.raises(mx.MXNetError, match='weight'):
            mx.nd.FullyConnected(x, num_hidden=4)


def test_variadic_list_and_positional():
    a, b = mx.nd.ones((2,)), mx.nd.full((2,), 2.0)
    for _ in range(2):
        np.testing.assert_allclose(mx.nd.add_n(a, b).asnumpy(), [3, 3])
        np.testing.assert_allclose(mx.nd.add_n([a, b]).asnumpy(), [3, 3])
        np.testing.assert_allclose(mx.nd.add_n(*[a, b, b]).asnumpy(), [5, 5])


def test_storage_rules_still_decide_for_sparse_inputs():
    dense = mx.nd.array([[0.0, -1.0], [2.0, 0.0]])
    csr = dense.tostype('csr')
    for _ in range(2):
        assert mx.nd.relu(dense).stype == 'default'
        assert mx.nd.relu(csr).stype == 'csr'
        np.testing.assert_allclose(mx.nd.relu(csr).asnumpy(), [[0, 0], [2, 0]])
        assert mx.nd.negative(csr).stype == 'csr'
        assert mx.nd.cast_storage(dense, stype='row_sparse').stype == 'row_sparse'
        with pytest.raises(mx.MXNetError, match='row_sparse'):
            mx.nd.sparse.retain(dense, mx.nd.array([0]))


def test_recording_and_grad_mode():
    import torch
    x = mx.nd.array([1.0, -2.0])
    x.attach_grad()
    y = mx.nd.relu(x)                       # not recorded: no graph, whatever torch's mode
    assert not y._tensor.requires_grad
    with torch.no_grad(), mx.autograd.record():
        y = mx.nd.relu(x) * 3
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [3, 0])
    assert torch.is_grad_enabled()


def test_backward_gradients_never_share_memory():
    """backward may hand a variable the computed gradient tensor itself instead of copying it,
    but never one that other arrays (the head gradient, another variable's gradient) hold."""
    x = mx.nd.array([1.0, 2.0, 3.0])
    w = mx.nd.array([4.0, 5.0, 6.0])
    x.attach_grad()
    w.attach_grad()
    handle = x.grad
    head = mx.nd.array([[1.0, 2.0, 3.0]])
    with mx.autograd.record():
        y = x.reshape((1, 3))
    y.backward(head)                      # the gradient is the head gradient, reshaped
    head[:] = 0
    np.testing.assert_allclose(x.grad.asnumpy(), [1, 2, 3])
    assert handle is x.grad
    with mx.autograd.record():
        y = (x + w) * 2
    y.backward()                          # x and w get the same gradient tensor from torch
    x.grad[:] = 7
    np.testing.assert_allclose(w.grad.asnumpy(), [2, 2, 2])
    np.testing.assert_allclose(handle.asnumpy(), [7, 7, 7])


def test_backward_add_accumulates_and_write_replaces():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad(grad_req='add')
    for _ in range(3):
        with mx.autograd.record():
            y = x * x
        y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [6, 12])
    x.attach_grad()
    for _ in range(3):
        with mx.autograd.record():
            y = x * x
        y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [2, 4])

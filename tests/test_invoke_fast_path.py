"""The imperative call path's shortcuts keep MXNet's semantics: a FullyConnected bias of any
shape gets its gradient, torch's grad mode is restored after a failing call, results never
alias their inputs, and integer inputs still reach their gradient."""
import numpy as np
import pytest
import torch

import mxtorch as mx
from mxtorch import autograd


@pytest.mark.parametrize('bias_shape', [(3,), (3, 1)])
def test_fully_connected_bias_gradient(bias_shape):
    x = mx.nd.array(np.arange(8, dtype=np.float32).reshape(4, 2))
    w = mx.nd.array(np.ones((3, 2), np.float32))
    b = mx.nd.array(np.array([1, 2, 3], np.float32).reshape(bias_shape))
    for a in (w, b):
        a.attach_grad()
    head = np.arange(12, dtype=np.float32).reshape(4, 3)
    with autograd.record():
        y = mx.nd.FullyConnected(x, w, b, num_hidden=3)
    y.backward(mx.nd.array(head))
    np.testing.assert_array_equal(y.asnumpy(), x.asnumpy().sum(1, keepdims=True) + [1, 2, 3])
    np.testing.assert_array_equal(b.grad.asnumpy().reshape(-1), head.sum(0))
    np.testing.assert_array_equal(w.grad.asnumpy(), head.T @ x.asnumpy())


@pytest.mark.parametrize('recording', [False, True])
def test_grad_mode_restored_after_a_failing_call(recording):
    assert torch.is_grad_enabled()
    a, b = mx.nd.ones((2, 3)), mx.nd.ones((4, 5))
    with autograd.record() if recording else autograd.pause():
        with pytest.raises(mx.MXNetError):
            mx.nd.dot(a, b)
    assert torch.is_grad_enabled()
    with torch.no_grad():
        with pytest.raises(mx.MXNetError):
            mx.nd.dot(a, b)
        assert not torch.is_grad_enabled()


def test_results_are_new_arrays():
    x = mx.nd.ones((2, 3))
    for y in (mx.nd.identity(x), mx.nd.reshape(x, shape=(3, 2)), mx.nd.BlockGrad(x),
              mx.nd.FullyConnected(x, mx.nd.ones((2, 3)), no_bias=True, num_hidden=2)):
        y[:] = 7
    np.testing.assert_array_equal(x.asnumpy(), np.ones((2, 3)))


def test_zero_size_input_still_checked():
    with pytest.raises(mx.MXNetError, match='unknown'):
        mx.nd.relu(mx.nd.ones((2, 3))[0:0])

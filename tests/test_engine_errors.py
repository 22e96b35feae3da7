"""Errors of operators that fail while computing are raised when the results are waited for,
once, as by MXNet 1.9.1's asynchronous engine (each case checked against MXNet)."""
import numpy as np
import pytest

import mxtorch as mx
from mxtorch.base import MXNetError


def _bad():
    return mx.nd.random.normal(0, -1, (2, 2))      # a negative scale fails in the kernel


def test_raised_by_the_first_wait_only():
    a = _bad()                                       # no error here
    assert a.shape == (2, 2)
    with pytest.raises(MXNetError, match='_random_normal'):
        a.wait_to_read()
    a.wait_to_read()
    a.asnumpy()
    mx.nd.waitall()


def test_waitall_raises_the_oldest_and_forgets_all():
    a = mx.nd.zeros((1,)) + 1
    b = mx.nd.broadcast_add(_bad(), mx.nd.ones((2, 2)))
    with pytest.raises(MXNetError):
        mx.nd.waitall()
    mx.nd.waitall()
    b.asnumpy()
    assert a.asnumpy()[0] == 1


def test_results_views_and_copies_carry_the_error():
    a = _bad()
    b = a + 1
    with pytest.raises(MXNetError):
        b.asnumpy()
    a.asnumpy()                                      # the shared error is gone
    rows = _bad().copyto(mx.cpu())
    first, second = rows                             # views of the copy
    with pytest.raises(MXNetError):
        first.asnumpy()
    second.asnumpy()
    target = mx.nd.ones((2, 2))
    target[:] = _bad()
    with pytest.raises(MXNetError):
        repr(target)
    with pytest.raises(MXNetError):
        _bad().sum().asscalar()


def test_random_generator_carries_a_random_failure():
    a = _bad()
    b = mx.nd.random.normal(0, 1, (2, 2))          # draws from the failed generator
    with pytest.raises(MXNetError):
        b.asnumpy()
    mx.nd.waitall()                                  # one error, already raised
    a.asnumpy()
    mx.nd.random.normal(0, 1, (2, 2)).asnumpy()


def test_bad_shapes_still_raise_at_once():
    with pytest.raises(MXNetError, match='dot'):
        mx.nd.dot(mx.nd.ones((2, 3)), mx.nd.ones((2, 3)))
    a = _bad()
    with pytest.raises(MXNetError, match='dot'):
        mx.nd.dot(a, mx.nd.ones((3, 3)))
    with pytest.raises(MXNetError):
        mx.nd.waitall()
    np.testing.assert_array_equal(mx.nd.ones((2,)).asnumpy(), [1, 1])


def test_executor_failures_are_raised_at_the_wait():
    x = mx.sym.var('x')
    out = mx.sym.dot(x, mx.sym.random.normal(0, -1, shape=(2, 2)))
    exe = out.bind(mx.cpu(), {'x': mx.nd.ones((2, 2))}, args_grad={'x': mx.nd.zeros((2, 2))})
    outputs = exe.forward(is_train=True)            # no error yet
    exe.backward(mx.nd.ones((2, 2)))                # the gradient carries the same error
    with pytest.raises(MXNetError, match='normal'):
        exe.grad_arrays[0].asnumpy()
    outputs[0].asnumpy()                            # raised once
    exe.forward()
    with pytest.raises(MXNetError):
        mx.nd.waitall()

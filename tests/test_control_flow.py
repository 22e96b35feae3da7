"""mx.nd.contrib.foreach / while_loop / cond (eager control flow under mx.autograd), against
numbers from MXNet 1.9.1."""
import numpy as np
import pytest

import mxtorch as mx


def test_foreach_outputs_states_and_gradient():
    def body(x, states):
        s = states[0] + x
        return [s * 2, x + 1], [s]
    data = mx.nd.array(np.arange(6).reshape(3, 2))
    data.attach_grad()
    with mx.autograd.record():
        outs, states = mx.nd.contrib.foreach(body, data, [mx.nd.zeros((2,))])
        loss = outs[0].sum() + states[0].sum() * 3
    loss.backward()
    assert isinstance(outs, list) and [o.shape for o in outs] == [(3, 2), (3, 2)]
    np.testing.assert_array_equal(outs[0].asnumpy(), [[0, 2], [4, 8], [12, 18]])
    np.testing.assert_array_equal(outs[1].asnumpy(), [[1, 2], [3, 4], [5, 6]])
    np.testing.assert_array_equal(states[0].asnumpy(), [6, 9])
    np.testing.assert_array_equal(data.grad.asnumpy(), [[9, 9], [7, 7], [5, 5]])


def test_foreach_keeps_single_arrays_single_and_slices_lists_together():
    data = mx.nd.array(np.arange(6).reshape(3, 2))
    out, state = mx.nd.contrib.foreach(lambda x, s: (x * s, s + x), data, mx.nd.ones((2,)))
    assert isinstance(out, mx.nd.NDArray) and isinstance(state, mx.nd.NDArray)
    np.testing.assert_array_equal(out.asnumpy(), [[0, 1], [2, 6], [12, 25]])
    np.testing.assert_array_equal(state.asnumpy(), [7, 10])
    out, state = mx.nd.contrib.foreach(lambda xs, s: ([xs[0] + xs[1]], [s[0]]), [data, data],
                                       [mx.nd.ones((2,))])
    np.testing.assert_array_equal(out[0].asnumpy(), [[0, 2], [4, 6], [8, 10]])


def test_while_loop_pads_to_max_iterations_and_differentiates():
    i, acc = mx.nd.array([0]), mx.nd.array([1.0])
    acc.attach_grad()
    with mx.autograd.record():
        outs, loop_vars = mx.nd.contrib.while_loop(
            lambda i, a: i < 3, lambda i, a: ([a * 2, i], [i + 1, a * 2]), [i, acc],
            max_iterations=5)
        (outs[0].sum() + loop_vars[1]).backward()
    assert [o.shape for o in outs] == [(5, 1), (5, 1)]
    # MXNet leaves the padding rows undefined; they are zeros here
    np.testing.assert_array_equal(outs[0].asnumpy()[:3, 0], [2, 4, 8])
    np.testing.assert_array_equal(outs[1].asnumpy()[:3, 0], [0, 1, 2])
    assert [v.asscalar() for v in loop_vars] == [3, 8]
    assert acc.grad.asscalar() == 22
    outs, loop_vars = mx.nd.contrib.while_loop(
        lambda i, a: i < 3, lambda i, a: (a * 2, (i + 1, a * 2)), (i, acc), max_iterations=5)
    assert isinstance(outs, mx.nd.NDArray) and isinstance(loop_vars, list)
    outs, _ = mx.nd.contrib.while_loop(lambda i, a: i < 3, lambda i, a: (None, [i + 1, a]),
                                       [i, acc], max_iterations=5)
    assert outs == []
    with pytest.raises(ValueError):
        mx.nd.contrib.while_loop(lambda i: i < 3, lambda i: (None, [i + 1]), [i])


def test_cond_runs_one_branch_with_its_gradient():
    a = mx.nd.array([2.0])
    a.attach_grad()
    with mx.autograd.record():
        r = mx.nd.contrib.cond(a > 1, lambda: a * 3, lambda: a * 5)
    r.backward()
    assert r.asscalar() == 6 and a.grad.asscalar() == 3
    r = mx.nd.contrib.cond(a < 1, lambda: [a * 3, a], lambda: [a * 5, a])
    assert [x.asscalar() for x in r] == [10, 2]

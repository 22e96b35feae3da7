"""mx.nd.contrib: operators registered as `_contrib_<name>`, under `<name>`, and MXNet's
Python-level contrib helpers (isinf, isfinite, isnan)."""


def isinf(data):
    """1 where an element of `data` is +inf or -inf, else 0 (data's dtype)."""
    return data.abs() == float('inf')


def isfinite(data):
    """1 where an element of `data` is neither infinite nor NaN, else 0 (data's dtype)."""
    from . import logical_and
    return logical_and(data.abs() != float('inf'), data == data)


def isnan(data):
    """1 where an element of `data` is NaN, else 0 (data's dtype)."""
    return data != data


def rand_zipfian(true_classes, num_sampled, range_max, ctx=None):
    """Draw num_sampled classes of [0, range_max) (with replacement) from the log-uniform
    (Zipfian) distribution P(c) = log((c+2)/(c+1)) / log(range_max+1).

    Returns (sampled classes (int64), expected counts of true_classes, expected counts of the
    sampled classes): a class's expected count is num_sampled * P(class) (float64).
    """
    import math
    from ..context import current_context
    from . import random
    ctx = ctx or current_context()
    log_range = math.log(range_max + 1)
    draws = random.uniform(0, log_range, shape=(num_sampled,), dtype='float64', ctx=ctx)
    sampled = (draws.exp() - 1).astype('int64') % range_max

    def expected_count(classes):
        classes = classes.astype('float64')
        return ((classes + 2.0) / (classes + 1.0)).log() / log_range * num_sampled
    return (sampled, expected_count(true_classes.as_in_context(ctx)),
            expected_count(sampled))


# ---------------------------------------------------------------------------------------------
# Control flow run eagerly: the body is called once per step on NDArrays, so mx.autograd
# records every step and gradients flow through the loop as through plain code.
# ---------------------------------------------------------------------------------------------
def _as_list(value):
    """(list of NDArrays, whether `value` was a single NDArray)."""
    if value is None:
        return [], False
    if isinstance(value, (list, tuple)):
        return list(value), False
    return [value], True


def _restore(values, single):
    return values[0] if single else values


def foreach(body, data, init_states):
    """Run body(data[i], states) -> (outputs, states) for each slice i of data along axis 0
    (data: an NDArray or a list of them, sliced together). Returns (the step outputs stacked
    along a new axis 0, the final states), each a list or a single NDArray as body and
    init_states give them."""
    from . import stack
    arrays, data_single = _as_list(data)
    if not arrays:
        raise ValueError('foreach: data must be an NDArray or a non-empty list of NDArrays')
    length = arrays[0].shape[0]
    if any(a.shape[0] != length for a in arrays):
        raise ValueError('foreach: every data array must have the same length along axis 0')
    states, states_single = _as_list(init_states)
    steps, out_single = [], True
    for i in range(length):
        item = _restore([a[i] for a in arrays], data_single)
        outputs, new_states = body(item, _restore(states, states_single))
        outputs, out_single = _as_list(outputs)
        new_states, _ = _as_list(new_states)
        if len(new_states) != len(states):
            raise ValueError('foreach: body returned %d states, init_states has %d'
                             % (len(new_states), len(states)))
        steps.append(outputs)
        states = new_states
    stacked = [stack(*column, axis=0) for column in zip(*steps)] if steps else []
    return _restore(stacked, out_single), _restore(states, states_single)


def while_loop(cond, func, loop_vars, max_iterations=None):
    """While cond(*loop_vars) holds (and at most max_iterations times), run
    func(*loop_vars) -> (step outputs, new loop_vars). Returns (the step outputs stacked along
    axis 0 and padded with zeros to max_iterations rows, the final loop_vars as a list)."""
    from . import concat, stack, zeros
    if max_iterations is None:
        raise ValueError('while_loop: max_iterations must be given')
    max_iterations = int(max_iterations)
    if max_iterations <= 0:
        raise ValueError('while_loop: max_iterations must be positive, got %d' % max_iterations)
    loop_vars, _ = _as_list(loop_vars)
    steps, out_single = [], False
    for _ in range(max_iterations):
        if not bool(cond(*loop_vars).asnumpy().ravel()[0]):
            break
        outputs, new_vars = func(*loop_vars)
        outputs, out_single = _as_list(outputs)
        new_vars, _ = _as_list(new_vars)
        if len(new_vars) != len(loop_vars):
            raise ValueError('while_loop: func returned %d loop variables, expected %d'
                             % (len(new_vars), len(loop_vars)))
        steps.append(outputs)
        loop_vars = new_vars
    stacked = []
    for column in zip(*steps):
        out = stack(*column, axis=0)
        if len(column) < max_iterations:
            pad = zeros((max_iterations - len(column),) + column[0].shape,
                        ctx=column[0].context, dtype=column[0].dtype)
            out = concat(out, pad, dim=0)
        stacked.append(out)
    return _restore(stacked, out_single), loop_vars


def cond(pred, then_func, else_func):
    """then_func() if the one-element NDArray pred is non-zero, else else_func()."""
    if bool(pred.asnumpy().ravel()[0]):
        return then_func()
    return else_func()


# MXNet's Python front ends of the contrib update operators (rescale_grad as a number or array,
# lists of weights for the multi-tensor ones)
from ..ops.optimizer_contrib import (adamw_update, mp_adamw_update,  # noqa: E402,F401
                                     multi_adamw_update, multi_mp_adamw_update,
                                     multi_lamb_update, multi_mp_lamb_update)

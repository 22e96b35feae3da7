"""mx.sym.contrib: operators registered as `_contrib_<name>`, under `<name>`."""


def rand_zipfian(true_classes, num_sampled, range_max):
    """Symbolic rand_zipfian (see mx.nd.contrib.rand_zipfian): returns the symbols of the
    sampled classes (int64) and the expected counts of true_classes and of the sampled classes
    (float64)."""
    import math
    from . import random
    log_range = math.log(range_max + 1)
    draws = random.uniform(0, log_range, shape=(num_sampled,), dtype='float64')
    sampled = (draws.exp() - 1).astype('int64') % range_max

    def expected_count(classes):
        classes = classes.astype('float64')
        return ((classes + 2.0) / (classes + 1.0)).log() / log_range * num_sampled
    return sampled, expected_count(true_classes), expected_count(sampled)


def foreach(body, data, init_states, name='foreach'):
    """Symbolic foreach over axis 0 of data (see mx.nd.contrib.foreach): a node carrying body's
    graph."""
    from ..ops.control_flow import foreach as build
    return build(body, data, init_states, name)


def while_loop(cond, func, loop_vars, max_iterations=None, name='while_loop'):
    """Symbolic while_loop (see mx.nd.contrib.while_loop): a node carrying cond's and func's
    graphs; outputs are padded to max_iterations rows."""
    from ..ops.control_flow import while_loop as build
    return build(cond, func, loop_vars, max_iterations, name)


def cond(pred, then_func, else_func, name='cond'):
    """Symbolic if-then-else (see mx.nd.contrib.cond): a node carrying the three graphs."""
    from ..ops.control_flow import cond as build
    return build(pred, then_func, else_func, name)


# MXNet's Python front ends of the AdamW update operators
from ..ops.optimizer_contrib import (sym_adamw_update as adamw_update,  # noqa: E402,F401
                                     sym_mp_adamw_update as mp_adamw_update)

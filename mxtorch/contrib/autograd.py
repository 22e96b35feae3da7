"""mx.contrib.autograd: MXNet's first autograd interface, kept for old scripts.

Here training and recording are one switch (`train_section` / `test_section`), and
`grad_and_loss(func)` / `grad(func)` turn a function of NDArrays into one that also returns the
gradients of its (or the `argnum`-th) arguments. All of it runs on `mx.autograd`.
"""
import functools

from .. import autograd as _ag
from ..ndarray.ndarray import NDArray
from ..ndarray import zeros_like


def set_is_training(is_train):
    """Turn training and recording on or off together; returns the previous training state."""
    prev = _ag.set_training(is_train)
    _ag.set_recording(is_train)
    return prev


class TrainingStateScope:
    """Scope that sets training (and recording) state inside a `with` block."""

    def __init__(self, enter_state):
        self._enter_state = enter_state
        self._prev = None

    def __enter__(self):
        self._prev = set_is_training(self._enter_state)

    def __exit__(self, ptype, value, trace):
        if self._prev != self._enter_state:
            set_is_training(self._prev)


def train_section():
    """Scope in which operators are recorded and run in training mode."""
    return TrainingStateScope(True)


def test_section():
    """Scope in which operators are not recorded and run in predict mode."""
    return TrainingStateScope(False)


def mark_variables(variables, gradients, grad_reqs='write'):
    """Make `variables` leaves whose gradients go into `gradients` (lists of NDArrays)."""
    _ag.mark_variables(list(variables), list(gradients), grad_reqs)


def backward(outputs, out_grads=None, retain_graph=False):
    """Gradients of `outputs` (a list) into the marked variables."""
    if not isinstance(outputs, (list, tuple)):
        raise AssertionError('outputs must be a list or tuple of NDArrays')
    if out_grads is not None and len(out_grads) != len(outputs):
        raise AssertionError('outputs and out_grads must have the same length')
    _ag.backward(list(outputs), out_grads, retain_graph)


def compute_gradient(outputs):
    """Deprecated: backward(outputs)."""
    backward(outputs)


def grad_and_loss(func, argnum=None):
    """A function returning (gradients of the arguments, func's value) for func's arguments;
    argnum (an int or a list of ints) picks which arguments to differentiate."""
    @functools.wraps(func)
    def wrapped(*args):
        variables = args
        if argnum is not None:
            positions = argnum if isinstance(argnum, list) else [argnum]
            variables = [args[i] for i in positions]
        for x in variables:
            if not isinstance(x, NDArray):
                raise AssertionError('type of autograd input should NDArray.')
        grads = [zeros_like(x) for x in variables]
        mark_variables(variables, grads)
        with train_section():
            outputs = func(*args)
        compute_gradient([outputs] if isinstance(outputs, NDArray) else outputs)
        return grads, outputs
    return wrapped


def grad(func, argnum=None):
    """A function returning the gradients of func's arguments (see grad_and_loss)."""
    grad_with_loss_func = grad_and_loss(func, argnum)

    @functools.wraps(grad_with_loss_func)
    def wrapped(*args):
        return grad_with_loss_func(*args)[0]
    return wrapped

"""mx.autograd: imperative recording over torch autograd.

`with mx.autograd.record():` runs `mx.nd` operators with torch's graph recording on;
`x.attach_grad()` makes x a leaf whose gradient lands in `x.grad` after `y.backward()`.
`is_training()` decides the mode of Dropout/BatchNorm in `mx.nd` calls.
"""
import threading
import weakref

import torch

_state = threading.local()


def is_recording():
    return getattr(_state, 'recording', False)


def is_training():
    return getattr(_state, 'training', False)


def set_recording(is_record):
    prev = is_recording()
    _state.recording = bool(is_record)
    return prev


def set_training(train_mode):
    prev = is_training()
    _state.training = bool(train_mode)
    return prev


class _Scope:
    def __init__(self, recording, training):
        self._rec, self._train = recording, training
        self._prev = None

    def __enter__(self):
        self._prev = (is_recording(), is_training())
        if self._rec is not None:
            set_recording(self._rec)
        if self._train is not None:
            set_training(self._train)
        return self

    def __exit__(self, *exc):
        set_recording(self._prev[0])
        set_training(self._prev[1])


def record(train_mode=True):
    return _Scope(True, train_mode)


def pause(train_mode=False):
    return _Scope(False, train_mode)


def train_mode():
    return _Scope(None, True)


def predict_mode():
    return _Scope(None, False)


# NDArrays whose gradient backward() fills: id -> weak reference. (A WeakSet would compare
# NDArrays with ==, which is element-wise, when the same array is attached twice.)
_attached = {}


def _attach(var):
    key = id(var)
    ref = _attached.get(key)
    if ref is not None and ref() is var:
        return

    def forget(dead, key=key):
        if _attached.get(key) is dead:
            del _attached[key]
    _attached[key] = weakref.ref(var, forget)


def mark_variables(variables, gradients, grad_reqs='write'):
    """Make `variables` leaves whose gradients are written (or added) into `gradients`."""
    if isinstance(grad_reqs, str):
        grad_reqs = [grad_reqs] * len(variables)
    for var, grad, req in zip(variables, gradients, grad_reqs):
        var._tensor.requires_grad_(req != 'null')
        var._grad = grad
        var._grad_req = req
        _attach(var)


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):
    """Gradients of `heads` into the `.grad` of every variable marked with attach_grad."""
    from .ndarray.ndarray import NDArray
    heads = [heads] if isinstance(heads, NDArray) else list(heads)
    if head_grads is None:
        head_grads = [None] * len(heads)
    elif isinstance(head_grads, NDArray):
        head_grads = [head_grads]
    grads = [torch.ones_like(h._tensor) if g is None else g._tensor
             for h, g in zip(heads, head_grads)]
    attached = [ref() for ref in list(_attached.values())]
    leaves = [v for v in attached if v is not None and v._tensor.requires_grad]
    results = torch.autograd.grad([h._tensor for h in heads], [v._tensor for v in leaves],
                                  grads, retain_graph=retain_graph, allow_unused=True)
    with torch.no_grad():
        for var, g in zip(leaves, results):
            if var._grad_req == 'add':
                if g is not None:
                    var._grad._tensor.add_(g)
            elif g is None:
                var._grad._tensor.zero_()
            else:
                var._grad._tensor.copy_(g)

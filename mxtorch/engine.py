"""mx.engine: the engine's operator-bulking hint.

MXNet's engine may fuse up to `size` consecutive operators into one scheduled unit. mxtorch runs
operators as they come (always a valid schedule), but keeps the setting per thread, as MXNet
does, so code that reads it back or restores it sees exactly what it set.
"""
import threading

_local = threading.local()


def set_bulk_size(size):
    """Set this thread's bulk size (0: no bulking); returns the previous one."""
    prev = getattr(_local, 'size', 0)
    _local.size = int(size)
    return prev


class _BulkScope:
    """`with mx.engine.bulk(size):` sets the bulk size inside the block, then restores it."""

    def __init__(self, size):
        self._size = size
        self._old = None

    def __enter__(self):
        self._old = set_bulk_size(self._size)
        return self

    def __exit__(self, *exc):
        set_bulk_size(self._old)


def bulk(size):
    """A scope in which the bulk size is `size`."""
    return _BulkScope(size)


# ---- errors raised when the results are waited for ---------------------------------------------
# MXNet's engine runs operators asynchronously: an operator that fails while computing (a bad
# value, not a bad shape) does not raise where it is called. Its outputs, and everything computed
# from them, carry the error, which is raised once -- by the first wait on any of them
# (wait_to_read, asnumpy, ...) or by waitall -- and then forgotten. mxtorch computes eagerly but
# defers such errors the same way: the outputs are placeholders of the inferred shapes, marked
# with the error by their storage (so views share the mark). As in MXNet, a failed random
# operator also leaves its error on the device's random generator (a resource the random
# operators share and update): the random operators that use it next carry the same error.
class _Failure:
    __slots__ = ('error', 'keys')

    def __init__(self, error):
        self.error = error
        self.keys = set()       # storage addresses, and ('random', device) resources


_lock = threading.Lock()
_marked = {}        # storage address -> (failure, a tensor keeping that storage alive)
_failures = []      # failures not raised yet, oldest first


def _key(tensor):
    return tensor.untyped_storage().data_ptr()


def failure_of(tensors, random_device=None):
    """The pending failure carried by one of `tensors` -- or, for a random operator, by the
    random generator of `random_device` -- or None."""
    if not _marked:
        return None
    keys = [_key(t) for t in tensors]
    if random_device is not None:
        keys.append(('random', str(random_device)))
    for key in keys:
        entry = _marked.get(key)
        if entry is not None:
            return entry[0]
    return None


def mark_random_generator(failure, device):
    """The random generator of `device` carries `failure` (a random operator failed there)."""
    with _lock:
        if failure in _failures:
            key = ('random', str(device))
            _marked[key] = (failure, None)
            failure.keys.add(key)


def defer(error):
    """A new pending failure for `error`, raised by the next wait on what it marks."""
    failure = _Failure(error)
    with _lock:
        _failures.append(failure)
    return failure


def mark(failure, tensors):
    """Make `tensors` (non-empty ones: an empty one has no storage to mark) carry `failure`."""
    with _lock:
        if failure not in _failures:
            return                  # already raised: what it would mark is just garbage now
        for t in tensors:
            if t.numel():
                key = _key(t)
                _marked[key] = (failure, t)
                failure.keys.add(key)


def _forget(failure):
    for key in failure.keys:
        _marked.pop(key, None)
    if failure in _failures:
        _failures.remove(failure)


def _raise(failure):
    error = failure.error
    raise type(error)(*error.args)


def wait_for(tensor):
    """Raise the pending failure `tensor` carries, if any (once: it is then forgotten)."""
    if not _marked:
        return
    with _lock:
        entry = _marked.get(_key(tensor))
        if entry is None:
            return
        _forget(entry[0])
    _raise(entry[0])


def wait_for_all():
    """Raise the oldest pending failure, forgetting all of them, if there is one."""
    with _lock:
        if not _failures:
            return
        first = _failures[0]
        for failure in list(_failures):
            _forget(failure)
    _raise(first)


def placeholder_outputs(op, p, tensors, device):
    """Zero tensors with the shapes and dtypes operator `op` infers for all its outputs on these
    inputs (what a deferred failure leaves behind), or None where inference cannot tell."""
    import torch
    from .base import torch_dtype
    from .ops.shapes import known
    from .symbol.infer import infer_call
    try:
        shapes, types = infer_call(op, p, tensors)
    except Exception:        # noqa: BLE001  (no inference: the caller raises at once)
        return None
    if not all(known(shape) for shape in shapes):
        return None
    outputs = [torch.zeros(shape, dtype=torch_dtype(dtype or 'float32'), device=device)
               for shape, dtype in zip(shapes, types)]
    return tuple(outputs)


def carry(source, target):
    """A copy from `source` into `target` passes on the pending failure source carries."""
    if _marked:
        failure = failure_of([source])
        if failure is not None:
            mark(failure, [target])

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

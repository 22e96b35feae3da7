"""Extra samplers of mx.gluon.contrib.data."""
from ...data.sampler import Sampler

__all__ = ['IntervalSampler']


class IntervalSampler(Sampler):
    """Indices 0, k, 2k, ... then (with rollover) 1, 1+k, ... up to k-1, 2k-1, ...: every
    index of range(length) once, in strides of `interval`."""

    def __init__(self, length, interval, rollover=True):
        assert interval <= length, \
            'Interval {} must be smaller than or equal to length {}'.format(interval, length)
        self._length = length
        self._interval = interval
        self._rollover = rollover

    def __iter__(self):
        for start in range(self._interval if self._rollover else 1):
            yield from range(start, self._length, self._interval)

    def __len__(self):
        return self._length

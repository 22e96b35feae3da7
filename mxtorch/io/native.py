"""MXDataIter: the behaviour MXNet's built-in (C++) iterators share.

CSVIter, MNISTIter and LibSVMIter are MXDataIters. As in MXNet they take keyword arguments only
(values may also be given as the strings MXNet would receive, e.g. data_shape='(3,)'), ignore
keywords they do not know (so the parameters of other iterators, such as MNISTIter's
data_shape, pass), and report a missing or malformed parameter as an MXNetError.
`data_name` / `label_name` name the arrays in provide_data / provide_label.

An MXDataIter loads its first batch when it is made (provide_data / provide_label describe that
batch). Until the next `reset()` that batch is pending: `next()` returns it, and `iter_next()`
reports True without moving on. `getdata()` / `getlabel()` return one array each (not lists),
`getindex()` a uint64 NumPy array, `getpad()` an int.
"""
import ast

import numpy as np

from ..base import MXNetError, integer_types
from .io import DataBatch, DataDesc, DataIter

REQUIRED = object()


def _as_shape(value):
    if isinstance(value, str):
        value = ast.literal_eval(value.strip() or '()')
    if isinstance(value, integer_types):
        value = (value,)
    shape = tuple(int(v) for v in value)
    if any(v < 0 for v in shape):
        raise ValueError('negative size')
    return shape


def _as_bool(value):
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ('1', 'true'):
            return True
        if lowered in ('0', 'false'):
            return False
        raise ValueError(value)
    if isinstance(value, (bool, np.bool_)) or value in (0, 1):
        return bool(value)
    raise ValueError(value)


def _as_int(value):
    if isinstance(value, (bool, float)):
        raise ValueError(value)
    return int(value)


def _as_count(value):
    value = _as_int(value)
    if value < 0:
        raise ValueError(value)
    return value


def _as_float(value):
    if isinstance(value, bool):
        raise ValueError(value)
    return float(value)


def _as_str(value):
    return str(value)


def _as_dtype(value):
    if value is None or str(value) == 'None':
        return None
    return np.dtype(value)


# parameter kind -> (parser, the type name MXNet's messages use)
KINDS = {'shape': (_as_shape, 'Shape(tuple)'), 'bool': (_as_bool, 'boolean'),
         'int': (_as_int, 'int'), 'count': (_as_count, 'int (non-negative)'),
         'str': (_as_str, 'string'), 'dtype': (_as_dtype, 'dtype'),
         'float': (_as_float, 'float')}

# the batching and prefetching parameters every built-in iterator accepts
COMMON_PARAMS = {'prefetch_buffer': ('count', 4), 'ctx': ('str', 'gpu'), 'dtype': ('dtype', None)}


def parse_params(iter_name, schema, args, kwargs):
    """The values of `schema` (name -> (kind, default or REQUIRED)) found in `kwargs`."""
    if args:
        raise TypeError('%s can only accept keyword arguments' % iter_name)
    params = {}
    for name, (kind, default) in dict(schema, **COMMON_PARAMS).items():
        parse, type_name = KINDS[kind]
        if name not in kwargs:
            if default is REQUIRED:
                raise MXNetError('%s: Required parameter %s of %s is not presented'
                                 % (iter_name, name, type_name))
            params[name] = default
            continue
        try:
            params[name] = parse(kwargs[name])
        except (ValueError, TypeError, SyntaxError):
            raise MXNetError("%s: Invalid Parameter format for %s expect %s but value='%s'"
                             % (iter_name, name, type_name, kwargs[name])) from None
    return params


class RoundBatchRows:
    """Which rows of an in-memory table each batch takes, as MXNet's row iterators choose them.

    round_batch=True: the rows are read as an endless loop; the batch that reaches the end is
    completed with rows from the start (`pad` counts them), and after `reset()` the next epoch
    starts right after them. N=10, batch 4: [0-3] [4-7] [8,9,0,1] (pad 2), then [2-5] [6-9].
    A `reset()` before the wrap restarts at row 0.
    round_batch=False: every epoch starts at row 0; the last, incomplete batch keeps in its
    trailing slots the rows of the previous batch at those slots (rows from the start when there
    is no previous batch) and reports them as `pad`.
    """

    def __init__(self, num_rows, batch_size, round_batch):
        self.num_rows, self.batch_size, self.round_batch = num_rows, batch_size, round_batch
        self._pos = 0                                          # first row of the next batch
        self._previous = np.arange(batch_size) % num_rows      # rows of the last batch

    def reset(self):
        wrapped = self._pos - self.num_rows
        self._pos = wrapped % self.num_rows if self.round_batch and wrapped > 0 else 0

    def next(self):
        """(rows, pad, contiguous) of the next batch, or None at the end of the epoch.

        `contiguous` is (start, stop) when the rows are start..stop-1 taken modulo the number
        of rows, else None.
        """
        if self._pos >= self.num_rows:
            return None
        start, stop = self._pos, self._pos + self.batch_size
        if self.round_batch:
            rows, contiguous = np.arange(start, stop) % self.num_rows, (start, stop)
        else:
            valid = min(stop, self.num_rows) - start
            rows = np.concatenate([np.arange(start, start + valid), self._previous[valid:]])
            contiguous = (start, stop) if valid == self.batch_size else None
        self._previous, self._pos = rows, stop
        return rows, max(0, stop - self.num_rows), contiguous


class MXDataIter(DataIter):
    """Base of the built-in iterators (see the module's docstring).

    A subclass prepares its data, then calls `_start(batch_size)`; it implements
    `_before_first()` (back to the start of an epoch) and `_advance()`, which loads the next
    batch into `self._current = (data, label, pad, index)` and returns False at the end.
    """

    def __init__(self, data_name='data', label_name='softmax_label'):
        super().__init__()
        self.data_name, self.label_name = data_name, label_name
        self._debug_skip_load = False
        self._debug_at_begin = True
        self._current = None
        self.first_batch = None

    def _start(self):
        self.first_batch = self.next()
        data, label = self.first_batch.data[0], self.first_batch.label[0]
        self.provide_data = [DataDesc(self.data_name, data.shape, data.dtype)]
        self.provide_label = [DataDesc(self.label_name, label.shape, label.dtype)]
        self.batch_size = data.shape[0]

    def _before_first(self):
        raise NotImplementedError

    def _advance(self):
        raise NotImplementedError

    def debug_skip_load(self):
        """From now on every `next()` returns the current batch again (to time without I/O)."""
        self._debug_skip_load = True

    def reset(self):
        self._debug_at_begin = True
        self.first_batch = None
        self._before_first()

    def _batch(self):
        return DataBatch(data=[self.getdata()], label=[self.getlabel()], pad=self.getpad(),
                         index=self.getindex())

    def next(self):
        if self._debug_skip_load and not self._debug_at_begin:
            return self._batch()
        if self.first_batch is not None:
            batch, self.first_batch = self.first_batch, None
            return batch
        self._debug_at_begin = False
        if self._advance():
            return self._batch()
        raise StopIteration

    def iter_next(self):
        return self.first_batch is not None or self._advance()

    def getdata(self):
        return self._current[0]

    def getlabel(self):
        return self._current[1]

    def getpad(self):
        return self._current[2]

    def getindex(self):
        return self._current[3]

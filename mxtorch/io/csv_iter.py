"""CSVIter: batches of rows read from CSV files."""
import numpy as np

from ..base import MXNetError, integer_types
from ..ndarray import array
from .io import DataDesc, DataIter
from .utils import _part_range, _reorder, _take

_DTYPES = (np.dtype('float32'), np.dtype('int32'), np.dtype('int64'))


def _shape(shape, argument):
    shape = (shape,) if isinstance(shape, integer_types) else tuple(int(s) for s in shape)
    if not shape or any(s <= 0 for s in shape):
        raise ValueError('CSVIter: %s must be a non-empty shape of positive sizes, got %r'
                         % (argument, shape))
    return shape


def _read_csv(path, shape, dtype, argument):
    """All rows of a CSV file as an array of shape (rows,) + shape."""
    try:
        rows = np.loadtxt(path, delimiter=',', dtype=np.float64, ndmin=2)
    except ValueError as err:
        raise MXNetError('CSVIter: cannot parse %s %r: %s' % (argument, path, err)) from None
    if rows.size == 0:
        raise MXNetError('CSVIter: %s %r holds no rows' % (argument, path))
    size = int(np.prod(shape))
    if rows.shape[1] != size:
        raise MXNetError('CSVIter: the rows of %s %r hold %d values, but the shape %s needs %d'
                         % (argument, path, rows.shape[1], shape, size))
    return rows.astype(dtype).reshape((rows.shape[0],) + shape)


class CSVIter(DataIter):
    """Iterate over the rows of a CSV file (and of a label CSV file) in batches.

    Each row of `data_csv` is one sample reshaped to `data_shape`; each row of `label_csv` one
    label of `label_shape` (labels are zeros without `label_csv`). A `label_shape` of one element
    gives labels of shape (batch_size,). Values are parsed as numbers and stored as `dtype`
    ('float32' by default, 'int32' or 'int64'), data and labels alike. Arrays are named 'data'
    and 'softmax_label'; `index` holds the row numbers in the file (uint64).

    round_batch=True: the file is read as an endless loop; the batch that reaches the end of the
    file is completed with rows from its start, `pad` counts them, and the next epoch (after
    `reset()`) starts right after them. N=10, batch 4: [0-3] [4-7] [8,9,0,1] (pad 2), then
    [2-5] [6-9], then again from row 0. A `reset()` before the wrap restarts at row 0.
    round_batch=False: every epoch starts at row 0; the last, incomplete batch keeps in its
    trailing slots the rows of the previous batch at those slots (rows from the file start when
    there is no previous batch) and reports them as `pad`.

    num_parts, part_index: sharding for distributed training. The rows are split into
    `num_parts` contiguous, near-equal pieces (piece i = rows [N*i//num_parts,
    N*(i+1)//num_parts)) and this iterator only reads piece `part_index`; each piece is iterated
    as if it were the whole file.

    The files are read into memory once; `prefetch_buffer` and `ctx` are accepted for MXNet
    compatibility, batches live on the CPU. Batches inside the file's range are views.
    """

    def __init__(self, data_csv, data_shape, label_csv='NULL', label_shape=(1,), *, batch_size,
                 round_batch=True, prefetch_buffer=4, ctx='gpu', dtype=None, num_parts=1,
                 part_index=0):
        super().__init__(batch_size)
        if not (isinstance(batch_size, integer_types) and batch_size > 0):
            raise ValueError('CSVIter: batch_size must be a positive int, got %r' % (batch_size,))
        dtype = np.dtype(dtype or 'float32')
        if dtype not in _DTYPES:
            raise ValueError('CSVIter: dtype must be one of %s, got %s'
                             % ([d.name for d in _DTYPES], dtype))
        self.data_shape = _shape(data_shape, 'data_shape')
        self.label_shape = _shape(label_shape, 'label_shape')
        self.round_batch = round_batch
        data = _read_csv(data_csv, self.data_shape, dtype, 'data_csv')
        sample_label_shape = () if int(np.prod(self.label_shape)) == 1 else self.label_shape
        if label_csv in (None, 'NULL'):
            label = np.zeros((len(data),) + sample_label_shape, dtype=dtype)
        else:
            label = _read_csv(label_csv, self.label_shape, dtype, 'label_csv')
            if len(label) != len(data):
                raise MXNetError('CSVIter: data_csv has %d rows but label_csv has %d'
                                 % (len(data), len(label)))
            label = label.reshape((len(label),) + sample_label_shape)
        self._first_row, stop = _part_range(len(data), num_parts, part_index)
        self._data = array(data[self._first_row:stop], dtype=dtype)
        self._label = array(label[self._first_row:stop], dtype=dtype)
        self.num_data = stop - self._first_row
        self._pos = 0                                      # first row of the next batch
        self._previous = np.arange(batch_size) % self.num_data   # rows of the last batch
        self._batch = None

    @property
    def provide_data(self):
        return [DataDesc('data', (self.batch_size,) + self.data_shape, self._data.dtype)]

    @property
    def provide_label(self):
        return [DataDesc('softmax_label', (self.batch_size,) + self._label.shape[1:],
                         self._label.dtype)]

    def reset(self):
        wrapped = self._pos - self.num_data
        self._pos = wrapped % self.num_data if self.round_batch and wrapped > 0 else 0

    def iter_next(self):
        if self._pos >= self.num_data:
            return False
        start, stop = self._pos, self._pos + self.batch_size
        if self.round_batch:
            rows = np.arange(start, stop) % self.num_data
            arrays = [_take(a, 0, start, stop) for a in (self._data, self._label)]
        else:
            valid = min(stop, self.num_data) - start
            rows = np.concatenate([np.arange(start, start + valid), self._previous[valid:]])
            if valid == self.batch_size:
                arrays = [_take(a, 0, start, stop) for a in (self._data, self._label)]
            else:
                arrays = [_reorder(a, 0, rows) for a in (self._data, self._label)]
        pad = max(0, stop - self.num_data)
        self._previous = rows
        self._batch = (arrays, pad, (rows + self._first_row).astype(np.uint64))
        self._pos = stop
        return True

    def getdata(self):
        return [self._batch[0][0]]

    def getlabel(self):
        return [self._batch[0][1]]

    def getpad(self):
        return self._batch[1]

    def getindex(self):
        return self._batch[2]

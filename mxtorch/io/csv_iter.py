"""CSVIter: batches of rows read from CSV files."""
import numpy as np

from ..base import MXNetError
from ..ndarray import array
from .native import REQUIRED, MXDataIter, RoundBatchRows, parse_params
from .utils import _part_range, _reorder, _take

_DTYPES = (np.dtype('float32'), np.dtype('int32'), np.dtype('int64'))
_PARAMS = {'data_csv': ('str', REQUIRED), 'data_shape': ('shape', REQUIRED),
           'label_csv': ('str', 'NULL'), 'label_shape': ('shape', (1,)),
           'batch_size': ('count', REQUIRED), 'round_batch': ('bool', True),
           'num_parts': ('int', 1), 'part_index': ('int', 0)}


def _check_shape(shape, argument):
    if not shape or any(s <= 0 for s in shape):
        raise MXNetError('CSVIter: %s must be a non-empty shape of positive sizes, got %r'
                         % (argument, shape))
    return shape


def _read_csv(path, shape, dtype, argument):
    """All rows of a CSV file as an array of shape (rows,) + shape."""
    try:
        rows = np.loadtxt(path, delimiter=',', dtype=np.float64, ndmin=2)
    except (OSError, ValueError, OverflowError) as err:
        raise MXNetError('CSVIter: cannot read %s %r: %s' % (argument, path, err)) from None
    if rows.size == 0:
        raise MXNetError('CSVIter: %s %r holds no rows' % (argument, path))
    size = int(np.prod(shape))
    if rows.shape[1] != size:
        raise MXNetError('CSVIter: the rows of %s %r hold %d values, but the shape %s needs %d'
                         % (argument, path, rows.shape[1], shape, size))
    return rows.astype(dtype).reshape((rows.shape[0],) + shape)


class CSVIter(MXDataIter):
    """Iterate over the rows of a CSV file (and of a label CSV file) in batches.

    Keyword arguments only: data_csv, data_shape (required), label_csv='NULL', label_shape=(1,),
    batch_size (required), round_batch=True, dtype, num_parts=1, part_index=0, and the other
    parameters of MXNet's built-in iterators (see mxtorch.io.native).

    Each row of `data_csv` is one sample reshaped to `data_shape`; each row of `label_csv` one
    label of `label_shape` (labels are zeros without `label_csv`). A `label_shape` of one element
    gives labels of shape (batch_size,). Values are parsed as numbers and stored as `dtype`
    ('float32' by default, 'int32' or 'int64'), data and labels alike. `index` holds the row
    numbers in the file (uint64). Batches follow `RoundBatchRows` (round_batch=True: the batch
    reaching the end of the file wraps to its start and the next epoch continues after it).

    num_parts, part_index (an mxtorch extension; MXNet's CSVIter ignores them): the rows are
    split into `num_parts` contiguous, near-equal pieces (piece i = rows [N*i//num_parts,
    N*(i+1)//num_parts)) and this iterator only reads piece `part_index`.

    The files are read into memory once; batches live on the CPU and are views of it unless
    they wrap around.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(kwargs.get('data_name', 'data'),
                         kwargs.get('label_name', 'softmax_label'))
        params = parse_params('CSVIter', _PARAMS, args, kwargs)
        batch_size = params['batch_size']
        if batch_size <= 0:
            raise MXNetError('CSVIter: batch_size must be positive, got %d' % batch_size)
        dtype = params['dtype'] or np.dtype('float32')
        if dtype not in _DTYPES:
            raise MXNetError('CSVIter: %s is not supported; dtype must be one of %s'
                             % (dtype, [d.name for d in _DTYPES]))
        self.data_shape = _check_shape(params['data_shape'], 'data_shape')
        self.label_shape = _check_shape(params['label_shape'], 'label_shape')
        data = _read_csv(params['data_csv'], self.data_shape, dtype, 'data_csv')
        sample_label_shape = () if int(np.prod(self.label_shape)) == 1 else self.label_shape
        label_csv = params['label_csv']
        if label_csv in ('None', 'NULL'):
            label = np.zeros((len(data),) + sample_label_shape, dtype=dtype)
        else:
            label = _read_csv(label_csv, self.label_shape, dtype, 'label_csv')
            if len(label) != len(data):
                raise MXNetError('CSVIter: data_csv has %d rows but label_csv has %d'
                                 % (len(data), len(label)))
            label = label.reshape((len(label),) + sample_label_shape)
        self._first_row, stop = _part_range(len(data), params['num_parts'],
                                            params['part_index'])
        self._data = array(data[self._first_row:stop], dtype=dtype)
        self._label = array(label[self._first_row:stop], dtype=dtype)
        self.num_data = stop - self._first_row
        self.round_batch = params['round_batch']
        self._rows = RoundBatchRows(self.num_data, batch_size, self.round_batch)
        self._start()

    def _before_first(self):
        self._rows.reset()

    def _advance(self):
        step = self._rows.next()
        if step is None:
            return False
        rows, pad, contiguous = step
        if contiguous is not None:
            data, label = (_take(a, 0, *contiguous) for a in (self._data, self._label))
        else:
            data, label = (_reorder(a, 0, rows) for a in (self._data, self._label))
        self._current = (data, label, pad, (rows + self._first_row).astype(np.uint64))
        return True

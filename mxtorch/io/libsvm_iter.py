"""LibSVMIter: batches of CSR rows read from zero-based LibSVM files."""
import os

import numpy as np

from ..base import MXNetError
from ..ndarray import array
from ..ndarray.sparse import csr_matrix
from .native import REQUIRED, MXDataIter, RoundBatchRows, parse_params

_PARAMS = {'data_libsvm': ('str', REQUIRED), 'data_shape': ('shape', REQUIRED),
           'label_libsvm': ('str', 'NULL'), 'label_shape': ('shape', (1,)),
           'num_parts': ('int', 1), 'part_index': ('int', 0),
           'batch_size': ('count', REQUIRED), 'round_batch': ('bool', True)}


def _read_bytes(path, argument):
    """The bytes of `path`, or of every file in the directory `path` (by name), one after
    another."""
    try:
        if os.path.isdir(path):
            names = sorted(os.listdir(path))
            return b''.join(open(os.path.join(path, n), 'rb').read() for n in names
                            if os.path.isfile(os.path.join(path, n)))
        with open(path, 'rb') as f:
            return f.read()
    except OSError as err:
        raise MXNetError('LibSVMIter: cannot read %s %r: %s' % (argument, path, err)) from None


def _part_lines(raw, num_parts, part_index):
    """The lines of part `part_index` of `num_parts`, split by bytes as MXNet's readers do:
    part i holds the lines that start in [begin_i, begin_{i+1}), where begin_i is the start of
    the first line after byte ceil(len/num_parts)*i (0 for the first part)."""
    if not (num_parts >= 1 and 0 <= part_index < num_parts):
        raise MXNetError('LibSVMIter: part_index must be in [0, num_parts=%d), got %d'
                         % (num_parts, part_index))
    step = -(-len(raw) // num_parts)

    def begin(i):
        offset = min(step * i, len(raw))
        if offset in (0, len(raw)):
            return offset
        end = min((p for p in (raw.find(b'\n', offset), raw.find(b'\r', offset)) if p >= 0),
                  default=len(raw))
        while end < len(raw) and raw[end:end + 1] in b'\r\n':
            end += 1
        return end

    return raw[begin(part_index):begin(part_index + 1)].splitlines()


def _parse(lines, num_cols, argument):
    """(labels, rows) of LibSVM lines; each row is (sorted column indices, values) with the
    columns outside [0, num_cols) dropped."""
    labels, rows = [], []
    for number, line in enumerate(lines, 1):
        tokens = line.split()
        if not tokens:
            continue
        try:
            labels.append(float(tokens[0].split(b':')[0]))
            pairs = [t.split(b':') for t in tokens[1:] if not t.startswith(b'qid:')]
            cols = np.array([int(p[0]) for p in pairs], dtype=np.int64)
            vals = np.array([float(p[1]) for p in pairs], dtype=np.float32)
        except (ValueError, IndexError, OverflowError):
            raise MXNetError('LibSVMIter: line %d of %s is not "label index:value ...": %r'
                             % (number, argument, line.decode(errors='replace'))) from None
        if (cols < 0).any():
            raise MXNetError('LibSVMIter: line %d of %s has a negative column index %d'
                             % (number, argument, cols.min()))
        keep = cols < num_cols
        order = np.argsort(cols[keep], kind='stable')
        rows.append((cols[keep][order], vals[keep][order]))
    return np.array(labels, dtype=np.float32), rows


def _csr_batch(rows, picked, num_cols):
    counts = [len(rows[r][0]) for r in picked]
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    indices = np.concatenate([rows[r][0] for r in picked] + [np.zeros(0, np.int64)])
    values = np.concatenate([rows[r][1] for r in picked] + [np.zeros(0, np.float32)])
    return csr_matrix((values, indices, indptr), shape=(len(picked), num_cols), dtype='float32')


class LibSVMIter(MXDataIter):
    """Iterate over a LibSVM file (zero-based column indices) in batches of CSRNDArrays.

    Keyword arguments only: data_libsvm, data_shape=(num_cols,) (required), label_libsvm='NULL',
    label_shape=(1,), batch_size (required), num_parts=1, part_index=0, and the other parameters
    of MXNet's built-in iterators (see mxtorch.io.native). A path may name a directory, whose
    files are read one after another.

    Each line is `label index:value index:value ...`; the data of a batch is a float32
    CSRNDArray of shape (batch_size, num_cols) (columns sorted within each row; columns at or
    beyond num_cols are left out). Without `label_libsvm` the labels are the lines' leading
    numbers, a dense (batch_size,) array; with it, the labels are that file's rows, a CSR of
    shape (batch_size,) + label_shape (its leading numbers are ignored). Batches always wrap
    round the end of the data (round_batch=True only, see `RoundBatchRows`). num_parts /
    part_index split the file by bytes, at line starts, as MXNet does, so the parts need not
    hold the same number of lines; `index` counts lines within the part (uint64).
    """

    def __init__(self, *args, **kwargs):
        super().__init__(kwargs.get('data_name', 'data'),
                         kwargs.get('label_name', 'softmax_label'))
        params = parse_params('LibSVMIter', _PARAMS, args, kwargs)
        data_shape, label_shape = params['data_shape'], params['label_shape']
        label_path = params['label_libsvm']
        if len(data_shape) != 1:
            raise MXNetError('LibSVMIter: data_shape must have one dimension, got %s'
                             % (data_shape,))
        if label_path in ('NULL', 'None') and int(np.prod(label_shape)) != 1:
            raise MXNetError('LibSVMIter: label_shape must be (1,) without label_libsvm, got %s'
                             % (label_shape,))
        if label_path not in ('NULL', 'None') and (len(label_shape) != 1 or
                                                   label_shape[0] <= 1):
            raise MXNetError('LibSVMIter: with label_libsvm, label_shape must be (n,) with n > 1,'
                             ' got %s' % (label_shape,))
        if not params['round_batch']:
            raise MXNetError("LibSVMIter doesn't support round_batch == false yet")
        if params['dtype'] is not None and params['dtype'] != np.float32:
            raise MXNetError('LibSVMIter: only float32 data is supported, got dtype=%s'
                             % params['dtype'])
        if params['batch_size'] <= 0:
            raise MXNetError('LibSVMIter: batch_size must be positive, got %d'
                             % params['batch_size'])
        parts = params['num_parts'], params['part_index']
        self.num_cols = data_shape[0]
        labels, self._rows = _parse(_part_lines(_read_bytes(params['data_libsvm'],
                                                            'data_libsvm'), *parts),
                                    self.num_cols, 'data_libsvm')
        if not self._rows:
            raise MXNetError('LibSVMIter: part %d of %d of data_libsvm %r holds no lines'
                             % (parts[1], parts[0], params['data_libsvm']))
        self._labels, self._label_rows = labels, None
        if label_path not in ('NULL', 'None'):
            self.label_cols = label_shape[0]
            _, self._label_rows = _parse(_part_lines(_read_bytes(label_path, 'label_libsvm'),
                                                     *parts), self.label_cols, 'label_libsvm')
            if len(self._label_rows) != len(self._rows):
                raise MXNetError('LibSVMIter: data_libsvm has %d lines but label_libsvm has %d'
                                 % (len(self._rows), len(self._label_rows)))
        self.num_data = len(self._rows)
        self._order = RoundBatchRows(self.num_data, params['batch_size'], True)
        self._start()

    def _before_first(self):
        self._order.reset()

    def _advance(self):
        step = self._order.next()
        if step is None:
            return False
        picked, pad, _ = step
        data = _csr_batch(self._rows, picked, self.num_cols)
        if self._label_rows is None:
            label = array(self._labels[picked])
        else:
            label = _csr_batch(self._label_rows, picked, self.label_cols)
        self._current = (data, label, pad, picked.astype(np.uint64))
        return True

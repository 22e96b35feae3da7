"""NDArrayIter: batches over in-memory arrays."""
import numpy as np

from ..base import MXNetError
from ..ndarray import concatenate
from .io import DataBatch, DataDesc, DataIter, check_count
from .utils import _init_data, _part_range, _reorder, _take

_LAST_BATCH_HANDLES = ('pad', 'discard', 'roll_over')


class NDArrayIter(DataIter):
    """Iterate over NDArrays / NumPy arrays (or a list or dict of them) in batches.

    Parameters
    ----------
    data, label : array, list of arrays or dict name -> array
        One array is named `data_name` / `label_name`; a list of several is named
        `_0_<name>, _1_<name>, ...`; a dict keeps its keys. Entries are sorted by name. NumPy
        input becomes float32 NDArrays; NDArrays are used as they are. `label=None` gives batches
        with `label=[]`.
    batch_size : int
    shuffle : bool
        Permute the samples (with `numpy.random`) at construction and at every `reset()`.
    last_batch_handle : 'pad', 'discard' or 'roll_over'
        What to do with an incomplete last batch. 'pad': complete it with samples from the start
        (wrapping as often as needed) and report their number as `pad`. 'discard': drop it.
        'roll_over': hold it back; after `reset()` the first batch is the held samples followed
        by the first samples of the new pass, with `pad` = the number of held samples, and the
        epoch continues from there. `hard_reset()` forgets held samples.
    layout : str
        The position of 'N' is the batch axis: batches are cut along it and `provide_data`
        reports `batch_size` there.
    num_parts, part_index : int
        Sharding for distributed training: the samples are split into `num_parts` contiguous,
        near-equal pieces (piece i = samples [N*i//num_parts, N*(i+1)//num_parts)) and this
        iterator only reads piece `part_index`. Shuffling permutes within the piece.

    Batches that fall inside the arrays are views (no copy); padding, rolling over and shuffling
    copy.
    """

    def __init__(self, data, label=None, batch_size=1, shuffle=False, last_batch_handle='pad',
                 data_name='data', label_name='softmax_label', layout='NCHW',
                 num_parts=1, part_index=0):
        batch_size = check_count('NDArrayIter', 'batch_size', batch_size)
        super().__init__(batch_size)
        if last_batch_handle not in _LAST_BATCH_HANDLES:
            raise ValueError('last_batch_handle must be one of %s, got %r'
                             % (_LAST_BATCH_HANDLES, last_batch_handle))
        self.layout = layout
        self._axis = DataDesc.get_batch_axis(layout)
        if self._axis < 0:
            raise ValueError("layout must contain 'N' (the batch axis), got %r" % (layout,))
        data = _init_data(data, allow_empty=False, default_name=data_name)
        label = _init_data(label, allow_empty=True, default_name=label_name)
        if last_batch_handle != 'discard' and any(a.stype == 'csr' for _, a in data + label):
            raise NotImplementedError("NDArrayIter supports CSRNDArray (or scipy.sparse) data "
                                      "only with last_batch_handle='discard', got %r"
                                      % last_batch_handle)
        lengths = {name: arr.shape[self._axis] for name, arr in data + label}
        # the first data array sets the number of samples (MXNet reads longer arrays only
        # that far)
        if min(lengths.values()) < lengths[data[0][0]]:
            raise ValueError('all data and label arrays must hold the same number of samples '
                             'as %s (or more) along the batch axis %d, got %s'
                             % (data[0][0], self._axis, lengths))
        start, stop = _part_range(lengths[data[0][0]], num_parts, part_index)
        self.data = [(name, _take(arr, self._axis, start, stop)) for name, arr in data]
        self.label = [(name, _take(arr, self._axis, start, stop)) for name, arr in label]
        self.num_data = stop - start
        self.idx = np.arange(self.num_data)
        self.shuffle = shuffle
        self.last_batch_handle = last_batch_handle
        self.cursor = -batch_size
        self._cache_data = None
        self._cache_label = None
        self.reset()

    def _descs(self, arrays):
        axis = self._axis
        return [DataDesc(name, arr.shape[:axis] + (self.batch_size,) + arr.shape[axis + 1:],
                         arr.dtype, layout=self.layout) for name, arr in arrays]

    @property
    def provide_data(self):
        return self._descs(self.data)

    @property
    def provide_label(self):
        return self._descs(self.label)

    def _shuffle_data(self):
        # `idx` is permuted in place and applied to the already shuffled arrays, as MXNet does,
        # so a given numpy seed yields MXNet's sample order
        np.random.shuffle(self.idx)
        self.data = [(name, _reorder(arr, self._axis, self.idx)) for name, arr in self.data]
        self.label = [(name, _reorder(arr, self._axis, self.idx)) for name, arr in self.label]

    def hard_reset(self):
        """Go back to the start, forgetting samples held back by 'roll_over'."""
        if self.shuffle:
            self._shuffle_data()
        self.cursor = -self.batch_size
        self._cache_data = None
        self._cache_label = None

    def reset(self):
        if self.shuffle:
            self._shuffle_data()
        held = self.num_data - self.cursor
        if self.last_batch_handle == 'roll_over' and 0 < held < self.batch_size:
            # the next iter_next() lands on -held: `held` samples come from the cache
            self.cursor = -held - self.batch_size
        else:
            self.cursor = -self.batch_size

    def iter_next(self):
        self.cursor += self.batch_size
        return self.cursor < self.num_data

    def next(self):
        if not self.iter_next():
            raise StopIteration
        data, label = self.getdata(), self.getlabel()
        if data[0].shape[self._axis] != self.batch_size:
            if self.last_batch_handle == 'roll_over':
                self._cache_data, self._cache_label = data, label
            raise StopIteration
        return DataBatch(data=data, label=label, pad=self.getpad(), index=None)

    def _rolling_over(self):
        return self.last_batch_handle == 'roll_over' and -self.batch_size < self.cursor < 0

    def _batchify(self, arrays, cached):
        if self.cursor >= self.num_data:
            raise MXNetError('NDArrayIter: the epoch is over (cursor %d, %d samples); call reset()'
                             % (self.cursor, self.num_data))
        end = self.cursor + self.batch_size
        if self._rolling_over():
            return [concatenate([held, _take(arr, self._axis, 0, end)], axis=self._axis)
                    for held, (_, arr) in zip(cached, arrays)]
        if self.last_batch_handle != 'pad':
            end = min(end, self.num_data)
        return [_take(arr, self._axis, self.cursor, end) for _, arr in arrays]

    def getdata(self):
        return self._batchify(self.data, self._cache_data)

    def getlabel(self):
        return self._batchify(self.label, self._cache_label)

    def getpad(self):
        if self.last_batch_handle == 'pad' and self.cursor + self.batch_size > self.num_data:
            return self.cursor + self.batch_size - self.num_data
        if self._rolling_over():
            return -self.cursor
        return 0

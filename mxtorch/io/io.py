"""Data descriptions, batches and the iterator protocol, plus the wrapping iterators."""
import numbers
import threading
import weakref
from collections import namedtuple

import numpy as np

from ..base import MXNetError


def check_count(owner, name, value, minimum=1):
    """`value` as an int, if it is a whole number >= `minimum`; otherwise TypeError (not a
    number) or MXNetError naming `owner` and argument `name` (a count such as a batch size that
    would otherwise give empty batches or an epoch that never ends)."""
    if not isinstance(value, numbers.Real):
        raise TypeError('%s: %s must be an int, got %s %r'
                        % (owner, name, type(value).__name__, value))
    if not isinstance(value, numbers.Integral) or value < minimum:
        raise MXNetError('%s: %s must be an int >= %d, got %r' % (owner, name, minimum, value))
    return int(value)


class DataDesc(namedtuple('DataDesc', ['name', 'shape'])):
    """(name, shape) of one input, with `dtype` and `layout` as extra attributes.

    Compares and unpacks as the 2-tuple (name, shape).
    """

    def __new__(cls, name, shape, dtype=np.float32, layout='NCHW'):
        desc = super().__new__(cls, name, shape)
        desc.dtype = dtype
        desc.layout = layout
        return desc

    def __repr__(self):
        return 'DataDesc[%s,%s,%s,%s]' % (self.name, self.shape, self.dtype, self.layout)

    @staticmethod
    def get_batch_axis(layout):
        """Index of 'N' in `layout` (-1 if absent); 0 when layout is None."""
        if layout is None:
            return 0
        return layout.find('N')

    @staticmethod
    def get_list(shapes, types):
        """DataDescs from (name, shape) pairs and, optionally, (name, dtype) pairs."""
        if types is None:
            return [DataDesc(name, shape) for name, shape in shapes]
        dtypes = dict(types)
        return [DataDesc(name, shape, dtypes[name]) for name, shape in shapes]


class DataBatch:
    """One batch: lists of data and label arrays, the number of filler samples at its end
    (`pad`), sample indices, and optionally the bucket key and the batch's DataDescs."""

    def __init__(self, data, label=None, pad=None, index=None, bucket_key=None,
                 provide_data=None, provide_label=None):
        if data is not None:
            assert isinstance(data, (list, tuple)), 'Data must be list of NDArrays'
        if label is not None:
            assert isinstance(label, (list, tuple)), 'Label must be list of NDArrays'
        self.data = data
        self.label = label
        self.pad = pad
        self.index = index
        self.bucket_key = bucket_key
        self.provide_data = provide_data
        self.provide_label = provide_label

    def __str__(self):
        data_shapes = [d.shape for d in self.data]
        label_shapes = [l.shape for l in self.label] if self.label else None
        return '{}: data shapes: {} label shapes: {}'.format(
            self.__class__.__name__, data_shapes, label_shapes)


class DataIter:
    """Base of the data iterators: Python iteration over DataBatches.

    `next()` asks `iter_next()` whether a batch is available and builds it from `getdata()`,
    `getlabel()`, `getpad()` and `getindex()`; subclasses override those (and usually the
    `provide_data` / `provide_label` properties). The base iterator is empty.
    """

    def __init__(self, batch_size=0):
        self.batch_size = batch_size

    def __iter__(self):
        return self

    def reset(self):
        """Go back to the start of the data (the base iterator has nothing to reset)."""

    def next(self):
        if self.iter_next():
            return DataBatch(data=self.getdata(), label=self.getlabel(), pad=self.getpad(),
                             index=self.getindex())
        raise StopIteration

    def __next__(self):
        return self.next()

    def iter_next(self):
        """Move to the next batch; False when the epoch is over."""
        return False

    def getdata(self):
        """The current batch's data arrays."""
        return None

    def getlabel(self):
        """The current batch's label arrays."""
        return None

    def getindex(self):
        """The current batch's sample indices, if the iterator tracks them."""
        return None

    def getpad(self):
        """How many samples at the end of the current batch are filler."""
        return None


class ResizeIter(DataIter):
    """Make an epoch exactly `size` batches of `data_iter`, restarting it when it runs out.

    `reset()` resets the inner iterator only when `reset_internal` is True; otherwise the next
    epoch continues where the inner iterator stopped.
    """

    def __init__(self, data_iter, size, reset_internal=True):
        super().__init__()
        self.data_iter = data_iter
        self.size = check_count('ResizeIter', 'size', size, minimum=0)
        self.reset_internal = reset_internal
        self.cur = 0
        self.current_batch = None
        self.provide_data = data_iter.provide_data
        self.provide_label = data_iter.provide_label
        self.batch_size = data_iter.batch_size
        if hasattr(data_iter, 'default_bucket_key'):
            self.default_bucket_key = data_iter.default_bucket_key

    def reset(self):
        self.cur = 0
        if self.reset_internal:
            self.data_iter.reset()

    def iter_next(self):
        if self.cur == self.size:
            return False
        try:
            self.current_batch = self.data_iter.next()
        except StopIteration:
            self.data_iter.reset()
            self.current_batch = self.data_iter.next()
        self.cur += 1
        return True

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getindex(self):
        return self.current_batch.index

    def getpad(self):
        return self.current_batch.pad


class _Prefetcher:
    """A background thread keeping the next batch of one iterator ready.

    The thread fetches when `taken` is set and signals `ready` when the batch (None at the end of
    the epoch) is there. An exception other than StopIteration is re-raised by `take()`.
    `stop()` ends the thread after the fetch in progress (it is joined, so no fetch is still
    running torch code while the interpreter shuts down).
    """

    def __init__(self, data_iter):
        self.data_iter = data_iter
        self.batch = None
        self.error = None
        self.running = True
        self.ready = threading.Event()
        self.taken = threading.Event()
        self.taken.set()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while True:
            self.taken.wait()
            if not self.running:
                return
            self.taken.clear()
            try:
                self.batch, self.error = self.data_iter.next(), None
            except StopIteration:
                self.batch, self.error = None, None
            except Exception as err:  # pylint: disable=broad-except  (handed to the consumer)
                self.batch, self.error = None, err
            self.ready.set()

    def take(self):
        """The prefetched batch (None at the end of the epoch), waiting for it if needed."""
        self._check_open()
        self.ready.wait()
        if self.error is not None:
            raise self.error
        return self.batch

    def fetch_next(self):
        self.ready.clear()
        self.taken.set()

    def _check_open(self):
        if not self.running:
            raise MXNetError('PrefetchingIter: the iterator was closed')

    def reset(self):
        self._check_open()
        self.ready.wait()
        self.data_iter.reset()
        self.fetch_next()

    def stop(self):
        self.running = False
        self.taken.set()
        if self.thread is not threading.current_thread():
            self.thread.join()


def _stop_all(workers):
    for worker in workers:
        worker.stop()


class PrefetchingIter(DataIter):
    """Read one or more iterators ahead in background threads.

    Each batch concatenates the data lists (and the label lists) of the iterators' batches, in
    order; their `pad` must agree. `rename_data` / `rename_label` hold one dict old -> new name
    per iterator and rename the corresponding DataDescs.
    """

    def __init__(self, iters, rename_data=None, rename_label=None):
        super().__init__()
        if not isinstance(iters, list):
            iters = [iters]
        if not iters:
            raise ValueError('PrefetchingIter needs at least one iterator')
        self.iters = iters
        self.n_iter = len(iters)
        self.rename_data = rename_data
        self.rename_label = rename_label
        self.batch_size = self.provide_data[0][1][0]
        self.current_batch = None
        self._workers = [_Prefetcher(it) for it in iters]
        # stops and joins the threads when this iterator is collected, or at exit at the latest
        # (before torch's own exit handlers), whichever comes first
        self._finalizer = weakref.finalize(self, _stop_all, self._workers)

    def close(self):
        """Stop the background threads now (the iterator cannot be used afterwards)."""
        self._finalizer()

    @staticmethod
    def _renamed(descs_per_iter, renames):
        result = []
        for descs, rename in zip(descs_per_iter, renames or [{}] * len(descs_per_iter)):
            for desc in descs:
                desc = desc if isinstance(desc, DataDesc) else DataDesc(*desc)
                result.append(DataDesc(rename.get(desc.name, desc.name), desc.shape,
                                       desc.dtype, desc.layout))
        return result

    @property
    def provide_data(self):
        return self._renamed([it.provide_data for it in self.iters], self.rename_data)

    @property
    def provide_label(self):
        return self._renamed([it.provide_label for it in self.iters], self.rename_label)

    def reset(self):
        for worker in self._workers:
            worker.reset()

    def iter_next(self):
        batches = [worker.take() for worker in self._workers]
        if all(batch is None for batch in batches):
            return False
        if any(batch is None for batch in batches):
            raise MXNetError('PrefetchingIter: the iterators ran out of batches at different '
                             'points (batches available: %s)' % [b is not None for b in batches])
        pads = [batch.pad for batch in batches]
        if any(pad != pads[0] for pad in pads):
            raise MXNetError('PrefetchingIter: the iterators disagree on pad: %s' % pads)
        self.current_batch = DataBatch(
            sum([list(batch.data) for batch in batches], []),
            sum([list(batch.label or []) for batch in batches], []),
            pads[0], batches[0].index,
            provide_data=self.provide_data, provide_label=self.provide_label)
        for worker in self._workers:
            worker.fetch_next()
        return True

    def next(self):
        if self.iter_next():
            return self.current_batch
        raise StopIteration

    def getdata(self):
        return self.current_batch.data

    def getlabel(self):
        return self.current_batch.label

    def getindex(self):
        return self.current_batch.index

    def getpad(self):
        return self.current_batch.pad


# MXNet's io.py also defines NDArrayIter and MXDataIter and puts its C++ iterators in this
# module; here they live in modules of their own (which import this one), found on first use
_ITERATORS = {'NDArrayIter': 'ndarray_iter', 'MXDataIter': 'native', 'CSVIter': 'csv_iter',
              'MNISTIter': 'mnist_iter', 'LibSVMIter': 'libsvm_iter',
              'ImageRecordIter': 'image_record_iter', 'ImageRecordIter_v1': 'image_record_iter',
              'ImageRecordUInt8Iter': 'image_record_iter',
              'ImageRecordUInt8Iter_v1': 'image_record_iter',
              'ImageRecordInt8Iter': 'image_record_iter',
              'ImageDetRecordIter': 'image_det_record_iter'}


def __getattr__(name):
    if name in _ITERATORS:
        import importlib
        module = importlib.import_module('.' + _ITERATORS[name], __package__)
        return getattr(module, name)
    raise AttributeError('module %r has no attribute %r' % (__name__, name))

"""mx.gluon.data.DataLoader: batches of a Dataset, assembled by a batchify function.

With num_workers > 0 the batches are assembled by a pool of worker threads (samples are read
and stacked in parallel, `prefetch` batches ahead), and handed out in order.
"""
import io
import pickle
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.reduction import ForkingPickler

import numpy as np

from ... import ndarray as nd
from ...context import cpu_pinned
from . import sampler as _sampler

__all__ = ['DataLoader', 'default_batchify_fn', 'default_mp_batchify_fn']


def default_batchify_fn(data):
    """Stack NDArrays, transpose tuples (one batch per field) and turn the rest into one
    NDArray (keeping NumPy's dtype)."""
    if isinstance(data[0], nd.NDArray):
        return nd.stack(*data)
    if isinstance(data[0], tuple):
        return [default_batchify_fn(list(field)) for field in zip(*data)]
    data = np.asarray(data)
    return nd.array(data, dtype=data.dtype)


default_mp_batchify_fn = default_batchify_fn


def _as_in_context(data, ctx):
    if isinstance(data, nd.NDArray):
        return data.as_in_context(ctx)
    if isinstance(data, (list, tuple)):
        return [_as_in_context(d, ctx) for d in data]
    return data


# The worker-pool protocol MXNet's DataLoader is built on, which toolkits (GluonCV's
# RandomTransformDataLoader) subclass: a pool with apply_async (multiprocessing.Pool, whose
# initializer stores the dataset per process, or a ThreadPool given the dataset directly).
_worker_dataset = None


def _worker_initializer(dataset, *_):
    """Pool initializer: the dataset a worker process reads its samples from."""
    global _worker_dataset
    _worker_dataset = dataset


def _worker_fn(samples, batchify_fn, dataset=None):
    """One batch, made in a worker process, returned pickled."""
    batch = batchify_fn([_worker_dataset[i] for i in samples])
    buf = io.BytesIO()
    ForkingPickler(buf, pickle.HIGHEST_PROTOCOL).dump(batch)
    return buf.getvalue()


def _thread_worker_fn(samples, batchify_fn, dataset):
    """One batch, made in a worker thread."""
    return batchify_fn([dataset[i] for i in samples])


class _MultiWorkerIter:
    """Batches of `batch_sampler` made by `worker_fn` on `worker_pool`, handed out in order.
    With `dataset` None the workers return pickled batches (process pool)."""

    def __init__(self, worker_pool, batchify_fn, batch_sampler, pin_memory=False,
                 pin_device_id=0, worker_fn=_worker_fn, prefetch=0, dataset=None,
                 data_loader=None, timeout=120):
        self._worker_pool = worker_pool
        self._batchify_fn = batchify_fn
        self._batch_sampler = batch_sampler
        self._data_buffer = {}
        self._rcvd_idx = 0
        self._sent_idx = 0
        self._iter = iter(self._batch_sampler)
        self._worker_fn = worker_fn
        self._pin_memory = pin_memory
        self._pin_device_id = pin_device_id
        self._dataset = dataset
        self._data_loader = data_loader
        self._timeout = timeout
        for _ in range(prefetch):
            self._push_next()

    def __len__(self):
        return len(self._batch_sampler)

    def _push_next(self):
        indices = next(self._iter, None)
        if indices is None:
            return
        self._data_buffer[self._sent_idx] = self._worker_pool.apply_async(
            self._worker_fn, (indices, self._batchify_fn, self._dataset))
        self._sent_idx += 1

    def __next__(self):
        self._push_next()
        if self._rcvd_idx == self._sent_idx:
            raise StopIteration
        result = self._data_buffer.pop(self._rcvd_idx).get(self._timeout)
        batch = pickle.loads(result) if self._dataset is None else result
        if self._pin_memory:
            batch = _as_in_context(batch, cpu_pinned(self._pin_device_id))
        self._rcvd_idx += 1
        return batch

    next = __next__

    def __iter__(self):
        return self


class DataLoader:
    """Iterate over `dataset` in mini-batches (see MXNet's gluon.data.DataLoader)."""

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None, last_batch=None,
                 batch_sampler=None, batchify_fn=None, num_workers=0, pin_memory=False,
                 pin_device_id=0, prefetch=None, thread_pool=False, timeout=120,
                 try_nopython=None, auto_reload=False):
        self._dataset = dataset
        self._pin_memory = pin_memory
        self._pin_device_id = pin_device_id
        self._thread_pool = thread_pool
        self._timeout = timeout
        self.auto_reload = auto_reload      # batches are made on iteration either way
        if batch_sampler is None:
            if batch_size is None:
                raise ValueError('batch_size must be specified unless batch_sampler is '
                                 'specified')
            if sampler is None:
                sampler = _sampler.RandomSampler(len(dataset)) if shuffle else \
                    _sampler.SequentialSampler(len(dataset))
            elif shuffle:
                raise ValueError('shuffle must not be specified if sampler is specified')
            batch_sampler = _sampler.BatchSampler(sampler, batch_size,
                                                  last_batch if last_batch else 'keep')
        elif batch_size is not None or shuffle or sampler is not None or \
                last_batch is not None:
            raise ValueError('batch_size, shuffle, sampler and last_batch must not be '
                             'specified if batch_sampler is specified.')
        self._batch_sampler = batch_sampler
        self._num_workers = num_workers if num_workers >= 0 else 0
        self._prefetch = max(0, int(prefetch) if prefetch is not None
                             else 2 * self._num_workers)
        self._batchify_fn = batchify_fn if batchify_fn is not None else default_batchify_fn

    def _make_batch(self, indices):
        batch = self._batchify_fn([self._dataset[i] for i in indices])
        if self._pin_memory:
            batch = _as_in_context(batch, cpu_pinned(self._pin_device_id))
        return batch

    def __iter__(self):
        if self._num_workers == 0:
            for indices in self._batch_sampler:
                yield self._make_batch(indices)
            return
        with ThreadPoolExecutor(self._num_workers) as pool:
            pending = []
            batches = iter(self._batch_sampler)
            for indices in batches:
                pending.append(pool.submit(self._make_batch, indices))
                if len(pending) > max(self._prefetch, 1):
                    break
            while pending:
                future = pending.pop(0)
                nxt = next(batches, None)
                if nxt is not None:
                    pending.append(pool.submit(self._make_batch, nxt))
                yield future.result(timeout=self._timeout)

    def __len__(self):
        return len(self._batch_sampler)



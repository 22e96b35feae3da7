"""Distributed key-value stores on torch.distributed: 'dist_sync', 'dist_device_sync', 'dist_async'.

MXNet ran these stores on parameter servers. Here every worker keeps its own copy of every key
and the workers talk only through torch.distributed collectives (gloo for CPU tensors, NCCL for
CUDA ones); see cluster.py for how a job is joined and how failures are reported.

* init: rank 0's value is broadcast, so every worker starts from the same parameters.
* dist_sync / dist_device_sync: push sums the values given on this worker, then all-reduces the
  sums (all keys of one push travel as one flat buffer per device and dtype). Row_sparse values
  are not densified: the workers all-gather their stored rows (indices and values) and each adds
  up the rows it receives, so a push costs the rows touched, not the whole array. Without an optimizer
  the stored value becomes that global sum; with one, every worker applies the same update to the
  same sum, so all copies stay identical - this replaces the servers. dist_device_sync keeps each
  key on the device of its first pushed value (NCCL on GPUs); dist_sync keeps it where init put it.
* 2-bit compression (sync types): each worker quantises its summed gradient with its own
  residual (compression.py), all-gathers the 2-bit codes packed four to a byte, and every worker
  adds up all the messages (as threshold x the sum of their signs).
* dist_async: a push applies the optimizer at once to the worker's own copy, with its own
  gradient, then starts a non-blocking all-reduce that averages the new weights. The next push
  first adopts that average (the gradient it carries was computed on the worker's own weights,
  so it is one averaging round stale), applies its update, and starts the next round.
  Communication overlaps the next batch's computation and no worker waits for the others' current
  step; the fastest worker runs at most one round ahead of the slowest. Between pushes the
  workers' weights differ by their own last update; `barrier()` completes the outstanding round,
  after which every worker holds the same average. Optimizer states stay per worker (saving
  writes rank 0's, loading gives every worker rank 0's). Without an optimizer a push sums across
  workers as in dist_sync.
* save_optimizer_states / load_optimizer_states: rank 0 writes the file; on loading rank 0
  reads it and broadcasts it, so only rank 0 needs to see the file.
* 'horovod': the synchronous store without optimizer support (Module then updates locally after
  the summed gradients come back), as MXNet's Horovod store.

`bytes_sent` counts the bytes this worker has handed to gradient collectives (the payload of
each all-reduce, or the packed codes of each 2-bit all-gather).
"""
import copy
import glob
import os
import re

import torch
import torch.distributed as dist

from .. import metric
from ..base import MXNetError
from ..ndarray.ndarray import _wrap
from .cluster import join, joined
from .compression import pack_2bit, unpack_2bit
from .kvstore import KVStore, _arrays, _key_list, sum_on


def worker_rank():
    """This process's rank in a running torch.distributed job; 0 outside one."""
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def latest_checkpoint(prefix, states=False):
    """The highest epoch with `prefix-symbol.json` and `prefix-%04d.params` (and, if `states`,
    `prefix-%04d.states`) on disk, or None: where a restarted job resumes."""
    if not os.path.exists('%s-symbol.json' % prefix):
        return None
    pattern = re.compile(re.escape(os.path.basename(prefix)) + r'-(\d{4,})\.params$')
    epochs = sorted((int(m.group(1)) for m in
                     (pattern.match(os.path.basename(p)) for p in glob.glob(prefix + '-*.params'))
                     if m), reverse=True)
    for epoch in epochs:
        if not states or os.path.exists('%s-%04d.states' % (prefix, epoch)):
            return epoch
    return None


def _buckets(tensors):
    """[(flat buffer, members)] with one buffer per (device, dtype), members in order."""
    groups = {}
    for t in tensors:
        groups.setdefault((t.device, t.dtype), []).append(t)
    return [(torch.cat([t.reshape(-1) for t in members]), members)
            for members in groups.values()]


def _scatter(flat, members):
    """Copy consecutive pieces of `flat` back into `members`."""
    offset = 0
    for t in members:
        t.copy_(flat[offset:offset + t.numel()].view_as(t))
        offset += t.numel()


class DistKVStore(KVStore):
    """A store shared by all workers of a launched job (see the module docstring)."""

    def __init__(self, name):
        super().__init__(name)
        self._cluster = join(name)
        self._async = 'async' in name
        self._on_device = 'device' in name
        self._rounds = {}          # dist_async: key -> its round in flight
        self.bytes_sent = 0

    @property
    def rank(self):
        return self._cluster.rank

    @property
    def num_workers(self):
        return self._cluster.size

    def is_capable(self, capability):
        if capability.lower() == 'optimizer':
            return self._type != 'horovod'
        return super().is_capable(capability)

    def barrier(self):
        """Wait for every worker (dist_async: after completing the averaging in flight)."""
        self._finish_rounds(list(self._rounds))
        self._cluster.collective('barrier', dist.barrier)

    def set_gradient_compression(self, compression_params):
        if self._async:
            raise MXNetError('gradient compression needs a synchronous store (dist_sync or '
                             'dist_device_sync): dist_async exchanges weights, not gradients')
        super().set_gradient_compression(compression_params)

    # ---- data ---------------------------------------------------------------------------------
    def init(self, key, value):
        """Store rank 0's value under each key on every worker."""
        keys, values = _key_list(key, value)
        copies = []
        for i, (k, v) in enumerate(zip(keys, values)):
            self._check_key(k)
            if k in self._store or k in keys[:i]:
                raise MXNetError('key %r has already been initialized' % (k,))
            copies.append(_arrays(v, 'value')[0].copy())
        for flat, members in _buckets([c._tensor for c in copies]):
            self._cluster.collective('init of %d key(s)' % len(keys),
                                     lambda: dist.broadcast(flat, src=0))
            _scatter(flat, members)
        self._store.update(zip(keys, copies))

    def push(self, key, value, priority=0):
        """Sum each key's values over devices and workers, then store or apply the update."""
        keys, values = _key_list(key, value)
        for k in keys:
            self._check_key(k)
        asynchronous = self._async and self._updater is not None
        if asynchronous:
            self._finish_rounds(keys)
        sums = [self._local_sum(k, _arrays(v, 'value')) for k, v in zip(keys, values)]
        stored = [self._store[k] for k in keys]
        if asynchronous:
            self._updater(keys, sums, stored)
            self._start_round(keys)
            return
        what = 'push of %d key(s)' % len(keys)
        sparse = [i for i, s in enumerate(sums) if s.stype == 'row_sparse']
        if sparse:
            if self._compression is not None:
                raise MXNetError('gradient compression is not supported for row_sparse values '
                                 '(key %r)' % (keys[sparse[0]],))
            for i, total in zip(sparse, self._all_gather_rows([sums[i] for i in sparse], what)):
                sums[i] = total
        dense = [s for s in sums if s.stype != 'row_sparse']
        if self._compression is not None:
            sums = self._all_gather_2bit(keys, sums, what)
        else:
            for flat, members in _buckets([s._tensor for s in dense]):
                self._cluster.collective(what, lambda: dist.all_reduce(flat))
                self.bytes_sent += flat.numel() * flat.element_size()
                _scatter(flat, members)
        if self._updater is not None:
            self._updater(keys, sums, stored)
        else:
            for target, total in zip(stored, sums):
                total.copyto(target)

    def _local_sum(self, key, arrays):
        stored = self._stored(key)
        self._check_shapes(key, arrays, 'value')
        if self._on_device and arrays[0].context != stored.context:
            stored = self._store[key] = stored.as_in_context(arrays[0].context)
        return sum_on(arrays, stored.context)

    def _all_gather_rows(self, sums, what):
        """The sums over all workers of row_sparse values: each worker sends only its stored
        rows (indices and values, padded to the longest worker's count), every worker adds up
        the rows it receives. The result stores the union of the workers' rows."""
        from ..ndarray.sparse import _new
        n = self.num_workers
        counts = torch.tensor([s._get_parts()[1].numel() for s in sums], dtype=torch.int64)
        gathered = [torch.empty_like(counts) for _ in range(n)]
        self._cluster.collective(what, lambda: dist.all_gather(gathered, counts))
        self.bytes_sent += counts.numel() * counts.element_size()
        per_worker = torch.stack(gathered)                  # (workers, keys)
        results = []
        for j, total in enumerate(sums):
            data, rows = total._get_parts()
            longest = int(per_worker[:, j].max())
            if longest == 0:                 # no worker stores a row
                results.append(total)
                continue
            idx = torch.full((longest,), -1, dtype=torch.int64, device=rows.device)
            idx[:rows.numel()] = rows
            val = torch.zeros((longest,) + tuple(data.shape[1:]), dtype=data.dtype,
                              device=data.device)
            val[:rows.numel()] = data
            all_idx = [torch.empty_like(idx) for _ in range(n)]
            all_val = [torch.empty_like(val) for _ in range(n)]
            self._cluster.collective(what, lambda: dist.all_gather(all_idx, idx))
            self._cluster.collective(what, lambda: dist.all_gather(all_val, val))
            self.bytes_sent += idx.numel() * idx.element_size() + \
                val.numel() * val.element_size()
            idx_cat, val_cat = torch.cat(all_idx), torch.cat(all_val)
            keep = idx_cat >= 0
            union, where = torch.unique(idx_cat[keep], return_inverse=True)
            summed = torch.zeros((union.numel(),) + tuple(data.shape[1:]), dtype=data.dtype,
                                 device=data.device)
            summed.index_add_(0, where, val_cat[keep])
            results.append(_new('row_sparse', total.shape, total.context,
                                parts=(summed, union)))
        return results

    def _all_gather_2bit(self, keys, sums, what):
        """The sums of all workers' 2-bit messages for `keys` (this worker sends its own)."""
        threshold = self._compression.threshold
        messages = [self._compression.compress(k, 0, s)._tensor for k, s in zip(keys, sums)]
        codes = [pack_2bit(m) for m in messages]
        by_device = {}
        for i, c in enumerate(codes):
            by_device.setdefault(c.device, []).append(i)
        results = [None] * len(keys)
        for indices in by_device.values():
            packed = torch.cat([codes[i] for i in indices])
            gathered = [torch.empty_like(packed) for _ in range(self.num_workers)]
            self._cluster.collective(what, lambda: dist.all_gather(gathered, packed))
            self.bytes_sent += packed.numel()
            signs = unpack_2bit(torch.stack(gathered)).sum(dim=0, dtype=torch.int32)
            offset = 0
            for i in indices:
                m = messages[i]
                total = signs[offset:offset + m.numel()].to(m.dtype).mul_(threshold)
                results[i] = _wrap(total.view(m.shape), sums[i].context)
                offset += 4 * codes[i].numel()
        return results

    # ---- dist_async ----------------------------------------------------------------------------
    def _start_round(self, keys):
        weights = [self._store[k]._tensor for k in keys]
        parts = []
        for flat, members in _buckets(weights):
            work = self._cluster.collective('averaging of %d key(s)' % len(keys),
                                            lambda: dist.all_reduce(flat, async_op=True))
            self.bytes_sent += flat.numel() * flat.element_size()
            parts.append((flat, members, work))
        for k in keys:
            self._rounds[k] = parts

    def _finish_rounds(self, keys):
        for k in keys:
            parts = self._rounds.get(k)
            if parts is None:
                continue
            for flat, members, work in parts:
                self._cluster.complete('averaging', work.wait)
                _scatter(flat.div_(self.num_workers), members)
            self._rounds = {key: p for key, p in self._rounds.items() if p is not parts}

    # ---- optimizer -------------------------------------------------------------------------------
    def save_optimizer_states(self, fname, dump_optimizer=False):
        """Rank 0 writes its optimizer states to `fname` (the other workers write nothing: on
        the sync stores their states are the same; on dist_async rank 0's stand for all)."""
        if self._updater is None:
            raise MXNetError('Cannot save states: no optimizer is set on the kvstore')
        if self.rank == 0:
            super().save_optimizer_states(fname, dump_optimizer)

    def load_optimizer_states(self, fname):
        """Rank 0 reads `fname`; every worker loads what it read."""
        if self._updater is None:
            raise MXNetError('Cannot load states: no optimizer is set on the kvstore')
        payload = [None]
        if self.rank == 0:
            with open(fname, 'rb') as f:
                payload[0] = f.read()
        self._cluster.collective('load_optimizer_states',
                                 lambda: dist.broadcast_object_list(payload, src=0))
        self._set_states(payload[0], fname)


class AllWorkersMetric(metric.EvalMetric):
    """A metric whose values cover the samples of every worker of the job.

    Wraps `metric` (anything `mx.metric.create` takes). Updates stay local; `get()` and
    `get_global()` (so the epoch lines `Module.fit` logs, and Speedometer's) all-reduce the
    running sums of every worker and evaluate the metric on the pooled sums. Reading it is a
    collective: every worker must read it at the same points (as fit and Speedometer do). Outside
    a distributed job it is the wrapped metric. Exact for metrics that are a function of
    sum_metric / num_inst (accuracy, top-k, cross-entropy, NLL, perplexity, loss, MAE/MSE/RMSE,
    macro F1/MCC); micro F1/MCC and the correlations keep other statistics and are refused.
    """

    def __init__(self, metric_like):
        self.metric = metric.create(metric_like)
        for leaf in self._leaves(self.metric):
            if isinstance(leaf, (metric.PCC, metric.PearsonCorrelation)) or \
                    getattr(leaf, 'average', 'macro') == 'micro':
                raise TypeError('AllWorkersMetric cannot pool %s: its value is not a function '
                                'of sum_metric / num_inst' % type(leaf).__name__)
        super().__init__(self.metric.name, output_names=self.metric.output_names,
                         label_names=self.metric.label_names, has_global_stats=True)

    def _leaves(self, m):
        if isinstance(m, metric.CompositeEvalMetric):
            return [leaf for child in m.metrics for leaf in self._leaves(child)]
        return [m]

    def update_dict(self, label, pred):
        self.metric.update_dict(label, pred)

    def update(self, labels, preds):
        self.metric.update(labels, preds)

    def reset(self):
        self.metric.reset()

    def reset_local(self):
        self.metric.reset_local()

    def get(self):
        return self._pooled().get()

    def get_global(self):
        return self._pooled().get_global()

    def get_config(self):
        return self.metric.get_config()

    def _pooled(self):
        """A copy of the wrapped metric holding the sums of all workers."""
        pooled = copy.deepcopy(self.metric)
        cluster = joined()
        if cluster is None or cluster.size == 1:
            return pooled
        leaves = self._leaves(pooled)
        fields = ('sum_metric', 'num_inst', 'global_sum_metric', 'global_num_inst')
        sums = torch.tensor([float(getattr(leaf, f)) for leaf in leaves for f in fields],
                            dtype=torch.float64)
        cluster.collective('pooling metric %s' % self.name, lambda: dist.all_reduce(sums))
        values = iter(sums.tolist())
        for leaf in leaves:
            for f in fields:
                value = next(values)
                setattr(leaf, f, int(round(value)) if f.endswith('num_inst') else value)
        return pooled

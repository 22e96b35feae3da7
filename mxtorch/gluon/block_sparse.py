"""A hybridized block called with sparse inputs (CSRNDArray, RowSparseNDArray), as MXNet's
CachedOp runs one: bound once per signature that includes the inputs' storage types, the
sparse inputs handed to the executor as they are (their stored structure, explicit zeros
included, reaches the operators' sparse kernels; their dense forms are never built), and the
outputs in the storage types the operators' rules give (a row_sparse dot(csr.T, x) stays
row_sparse). HybridBlock._call_cached_op comes here for inputs of a sparse class, and for
a graph whose bound executor found sparse values inside (cast_storage of a dense input);
all-dense graphs never do."""
import torch

from .. import autograd
from ..ndarray.ndarray import NDArray, _wrap
from ..ndarray.sparse import BaseSparseNDArray
from .block import _op_hook, _regroup


def _values(binding, data):
    """The values the executor runs on (a sparse input as its array), or None when stale."""
    out = []
    for src in binding.sources:
        if src.__class__ is int:
            a = data[src]
            out.append(a if isinstance(a, BaseSparseNDArray) else a._tensor)
        else:
            param, arrays, arr = src
            if param._data is not arrays:
                return None
            out.append(arr._tensor)
    return out


def _graph_tensor(value):
    """The tensor mx.autograd's record notes for a value (a sparse one's dense form where it
    carries the gradient, else a stand-in: nothing flows through it)."""
    if isinstance(value, BaseSparseNDArray):
        dense = value._dense
        if dense is not None and not value._dense_stale and dense.requires_grad:
            return dense
        return torch.zeros(())
    return value


def call(block, cached, args, data, ctx):
    """`block`'s hybridized call on `data` (its flat inputs)."""
    key = (ctx, 'stype') + tuple((a.shape, a.dtype, a.stype) for a in data)
    binding = cached.bindings.get(key)
    values = _values(binding, data) if binding is not None else None
    if values is None:
        with ctx:
            if cached.imperative is not None:
                return block._call_imperative(cached, args, data, ctx)
            binding = cached.bindings[key] = block._bind(cached, args, data, ctx)
        values = _values(binding, data)
    monitor = None if block._callback is None else _op_hook(cached.out, block._callback)
    recording = autograd.is_recording()
    with torch.set_grad_enabled(recording):
        heads = binding.executor.run_on(values, autograd.is_training(), monitor=monitor,
                                        monitor_all=block._monitor_all, keep_sparse=True)
    if recording:
        autograd._record_graph(cached.out, [_graph_tensor(v) for v in values],
                               [_graph_tensor(h) for h in heads], block._inlined(cached))
    given = {id(a) for a in data}
    outs = [(h.copy() if id(h) in given else h) if isinstance(h, NDArray) else _wrap(h, ctx)
            for h in heads]
    if block._out_format == 0:
        return outs[0]
    return _regroup(outs, block._out_format)[0]

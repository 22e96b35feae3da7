"""DGL's graph operators (MXNet 1.9.1's contrib dgl_graph): edge_id, dgl_adjacency,
dgl_subgraph, the neighbour samplers dgl_csr_neighbor_uniform_sample / _non_uniform_sample and
dgl_graph_compact.

A graph is a square-ish csr array (int64) whose stored values are edge ids: row = destination
vertex, stored column = neighbour, value = the id of that edge (0 is a valid id, so the stored
structure matters, not the values). Each operator is one kernel over numpy parts (`Csr`): the
sparse path runs it on the inputs' stored parts; the dense forward (what a symbolic executor
calls) runs it on the non-zeros of the dense form, where an edge with id 0 cannot be seen.

Differences from MXNet: the samplers draw from torch's generator (mx.random.seed), not MXNet's
clock-seeded rand_r; entries MXNet leaves uninitialised (the vertex, layer and probability
slots past the sampled count) are 0; dgl_graph_compact(return_mapping=True) fills its second
set of outputs with the parent graph's edge ids, where MXNet 1.9.1 leaves them unallocated.
"""
import collections
import logging

import numpy as np
import torch

from ..base import MXNetError
from .params import Bool, Int, Shape
from .registry import OpDef, register
from .shapes import require

C, D = 'csr', 'default'
_INT64 = np.dtype('int64')
_F32 = np.dtype('float32')
_LOG = logging.getLogger(__name__)

Csr = collections.namedtuple('Csr', 'shape data indptr indices')


# ---------------------------------------------------------------------------------------------
# plumbing: inputs to numpy parts, outputs back to arrays
# ---------------------------------------------------------------------------------------------
def _csr_of_tensor(t):
    """The non-zeros of a dense 2-D tensor as a Csr."""
    a = t.detach().cpu().numpy()
    rows, cols = np.nonzero(a)
    counts = np.bincount(rows, minlength=a.shape[0])
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return Csr(a.shape, a[rows, cols], indptr, cols.astype(np.int64))


def _csr_of_array(x):
    data, indptr, idx = x._get_parts()
    return Csr(tuple(x.shape), data.detach().cpu().numpy(),
               indptr.detach().cpu().numpy().astype(np.int64),
               idx.detach().cpu().numpy().astype(np.int64))


def _dense_of_csr(g):
    out = np.zeros(g.shape, dtype=g.data.dtype)
    rows = np.repeat(np.arange(g.shape[0]), np.diff(g.indptr))
    out[rows, g.indices] = g.data
    return out


def _graph_op(name, kernel, graph_inputs, out_stypes, **kwargs):
    """Register `name`: kernel(p, inputs) -> outputs, where the inputs at graph_inputs(p, n)
    are Csr and the others numpy arrays, and each output a Csr or a numpy array."""
    def infer_storage(p, st):
        for i in graph_inputs(p, len(st)):
            if st[i] != C:
                raise MXNetError('Check failed: infer_stype_success: Operator not implemented: '
                                 'operator = %s, input storage types = [%s]: the graph input '
                                 'must be a csr array' % (name, ', '.join(st)))
        return out_stypes(p)

    def sparse_forward(op, p, inputs, stypes):
        from ..ndarray.ndarray import _wrap
        from ..ndarray.sparse import _new
        ctx = inputs[0].context
        graphs = set(graph_inputs(p, len(inputs)))
        args = [_csr_of_array(x) if i in graphs else x.asnumpy() for i, x in enumerate(inputs)]
        outs = []
        for r in kernel(p, args):
            if isinstance(r, Csr):
                parts = tuple(torch.from_numpy(np.ascontiguousarray(a)).to(ctx.torch_device)
                              for a in (r.data, r.indptr, r.indices))
                outs.append(_new(C, tuple(r.shape), ctx, parts=parts))
            else:
                outs.append(_wrap(torch.from_numpy(np.ascontiguousarray(r)).to(ctx.torch_device),
                                  ctx))
        return outs

    def forward(p, *tensors):
        graphs = set(graph_inputs(p, len(tensors)))
        device = tensors[0].device
        args = [_csr_of_tensor(t) if i in graphs else t.detach().cpu().numpy()
                for i, t in enumerate(tensors)]
        outs = tuple(torch.from_numpy(np.ascontiguousarray(
            _dense_of_csr(r) if isinstance(r, Csr) else r)).to(device)
            for r in kernel(p, args))
        return outs[0] if len(outs) == 1 else outs

    kwargs.setdefault('doc', kernel.__doc__ or '')
    op = OpDef(name, forward, differentiable=False, **kwargs)
    op.infer_storage = infer_storage
    op.sparse_forward = sparse_forward
    register(op)
    return op


def _first(p, n):
    return [0]


def _halves(p, n):
    return range(n // 2)


def _check_int64(name, what, dtype):
    require(np.dtype(dtype) == _INT64, '%s: %s must be int64, got %s', name, what,
            np.dtype(dtype).name)


def _check_graph(name, g):
    _check_int64(name, 'the graph (csr of edge ids)', g.data.dtype)


def _check_vertices(name, what, v, n):
    _check_int64(name, what, v.dtype)
    require(v.ndim == 1, '%s: %s must be 1-D, got shape %s', name, what, v.shape)
    if v.size and (v.min() < 0 or v.max() >= n):
        raise MXNetError('%s: vertex id %d of %s is not in a graph of %d vertices'
                         % (name, v.max() if v.max() >= n else v.min(), what, n))


# ---------------------------------------------------------------------------------------------
# edge_id and dgl_adjacency
# ---------------------------------------------------------------------------------------------
def _edge_id(p, args):
    """output[i] = the edge id stored at (u[i], v[i]), -1 where no edge is stored."""
    g, u, v = args
    require(u.ndim == 1 and v.ndim == 1, 'edge_id: u and v must be 1-D, got shapes %s and %s',
            u.shape, v.shape)
    require(u.size == v.size, 'edge_id: u and v must have one length, got %d and %d',
            u.size, v.size)
    u, v = u.astype(np.int64), v.astype(np.int64)
    rows = np.repeat(np.arange(g.shape[0], dtype=np.int64), np.diff(g.indptr))
    keys = rows * g.shape[1] + g.indices
    order = np.argsort(keys, kind='stable')      # a repeated (row, col): its first entry
    sorted_keys = keys[order]
    inside = (u >= 0) & (u < g.shape[0]) & (v >= 0) & (v < g.shape[1])
    want = np.where(inside, u * g.shape[1] + v, -1)
    at = np.minimum(np.searchsorted(sorted_keys, want), max(len(keys) - 1, 0))
    found = inside & (len(keys) > 0)
    if len(keys):
        found &= sorted_keys[at] == want
    out = np.full(u.shape, -1, dtype=g.data.dtype)
    if found.any():
        out[found] = g.data[order[at[found]]]
    return [out]


def _edge_id_shape(p, ins, outs):
    g, u, v = ins
    for s, what in ((u, 'u'), (v, 'v')):
        require(s is None or len(s) == 1, 'edge_id: %s must be 1-D, got shape %s', what, s)
    if g is not None:
        require(len(g) == 2, 'edge_id: data must be 2-D, got shape %s', g)
    n = next((s[0] for s in (u, v) if s is not None and s[0]), 0)
    if u is not None and v is not None and u[0] and v[0]:
        require(u[0] == v[0], 'edge_id: u and v must have one length, got %d and %d',
                u[0], v[0])
    size = (n,) if n else None
    return [g, u or size, v or size], [size]


def _adjacency(p, args):
    """The graph's structure with every stored value 1.0 (float32)."""
    g, = args
    _check_graph('dgl_adjacency', g)
    return [Csr(g.shape, np.ones(len(g.indices), dtype=np.float32), g.indptr, g.indices)]


def _adjacency_type(p, ins, outs):
    if ins[0] is not None:
        _check_int64('dgl_adjacency', 'data', ins[0])
    return ins, [_F32]


_graph_op('_contrib_edge_id', _edge_id, _first, lambda p: [D], inputs=('data', 'u', 'v'),
          infer_shape=_edge_id_shape,
          infer_type=lambda p, ins, outs: (ins, [ins[0]]))
_graph_op('_contrib_dgl_adjacency', _adjacency, _first, lambda p: [C],
          infer_shape=lambda p, ins, outs: (ins, [ins[0]]), infer_type=_adjacency_type)


# ---------------------------------------------------------------------------------------------
# dgl_subgraph: the subgraph induced by each sorted vertex set
# ---------------------------------------------------------------------------------------------
def _induced(g, vertices):
    """(indptr, new column ids, parent edge ids) of the subgraph induced by `vertices`."""
    new_id = {int(x): i for i, x in enumerate(vertices)}
    indptr, cols, eids = [0], [], []
    for x in vertices:
        lo, hi = g.indptr[x], g.indptr[x + 1]
        for c, e in zip(g.indices[lo:hi], g.data[lo:hi]):
            j = new_id.get(int(c))
            if j is not None:
                cols.append(j)
                eids.append(e)
        indptr.append(len(cols))
    return (np.array(indptr, dtype=np.int64), np.array(cols, dtype=np.int64),
            np.array(eids, dtype=g.data.dtype))


def _subgraph(p, args):
    """The subgraph induced by each sorted vertex set (csr, vertices renumbered by position):
    edge ids 0..n-1, and with return_mapping a second csr per set holding the parent's ids."""
    g, sets = args[0], args[1:]
    _check_graph('dgl_subgraph', g)
    new, old = [], []
    for k, vertices in enumerate(sets):
        _check_vertices('dgl_subgraph', 'vertex set %d' % k, vertices, g.shape[0])
        if np.any(np.diff(vertices) < 0):
            raise MXNetError('dgl_subgraph: the input vertex list has to be sorted')
        indptr, cols, eids = _induced(g, vertices)
        shape = (len(vertices), len(vertices))
        new.append(Csr(shape, np.arange(len(cols), dtype=np.int64), indptr, cols))
        old.append(Csr(shape, eids, indptr, cols))
    return new + old if p.return_mapping else new


def _subgraph_outputs(p):
    n = (p.num_args - 1) * (2 if p.return_mapping else 1)
    return tuple('output%d' % i for i in range(n))


def _subgraph_shape(p, ins, outs):
    sets = [(s[0], s[0]) if s is not None and len(s) == 1 and s[0] else None for s in ins[1:]]
    return ins, (sets * 2 if p.return_mapping else sets)


_graph_op('_contrib_dgl_subgraph', _subgraph, _first, lambda p: [C] * len(_subgraph_outputs(p)),
          params={'num_args': Int(lower=2), 'return_mapping': Bool()},
          variadic='num_args', outputs=_subgraph_outputs, infer_shape=_subgraph_shape,
          infer_type=lambda p, ins, outs: (ins, [_INT64] * len(_subgraph_outputs(p))))


# ---------------------------------------------------------------------------------------------
# neighbour sampling: a breadth-first walk from the seeds, `num_neighbor` sampled neighbours of
# each vertex above the last hop, stopping once max_num_vertices vertices are reached
# ---------------------------------------------------------------------------------------------
def _pick(n, k, weights):
    """Sorted positions of k of n neighbours (all when n <= k): uniform without replacement,
    or with the given weights (successive draws without replacement)."""
    if n <= k:
        return np.arange(n)
    if weights is None:
        chosen = torch.randperm(n)[:k]
    else:
        w = torch.from_numpy(np.asarray(weights, dtype=np.float64))
        if not bool(torch.isfinite(w).all()) or bool((w < 0).any()) or int((w > 0).sum()) < k:
            raise MXNetError('dgl_csr_neighbor_non_uniform_sample: the probabilities of a '
                             'vertex\'s neighbours must be finite, non-negative and positive for '
                             'at least num_neighbor=%d of them' % k)
        chosen = torch.multinomial(w, k, replacement=False)
    return np.sort(chosen.numpy())


def _walk(name, g, seeds, p, probability):
    """(sorted vertices, their layers, {vertex: (columns, edge ids)} of the expanded ones)."""
    layer = {}
    for s in seeds.tolist():
        layer.setdefault(s, 0)
    queue = list(layer)
    expanded = {}
    at = 0
    while at < len(queue) and len(layer) < p.max_num_vertices:
        vertex = queue[at]
        at += 1
        if layer[vertex] >= p.num_hops:
            continue
        lo, hi = g.indptr[vertex], g.indptr[vertex + 1]
        weights = None if probability is None else probability[g.indices[lo:hi]]
        keep = _pick(hi - lo, p.num_neighbor, weights) + lo
        expanded[vertex] = (g.indices[keep], g.data[keep])
        for c in g.indices[keep].tolist():
            if len(layer) >= p.max_num_vertices:
                break
            if c not in layer:
                layer[c] = layer[vertex] + 1
                queue.append(c)
    if any(layer[v] < p.num_hops for v in queue[at:]):
        _LOG.warning('%s: the sampling is truncated because max_num_vertices=%d vertices were '
                     'reached; use fewer seeds or a smaller neighbourhood', name,
                     p.max_num_vertices)
    vertices = sorted(layer)
    return vertices, [layer[v] for v in vertices], expanded


def _sample_one(name, g, seeds, p, probability):
    _check_vertices(name, 'the seed array', seeds, g.shape[0])
    require(p.max_num_vertices >= seeds.size,
            '%s: max_num_vertices (%d) must be at least the number of seeds (%d)',
            name, p.max_num_vertices, seeds.size)
    vertices, layers, expanded = _walk(name, g, seeds, p, probability)
    m, n = p.max_num_vertices, len(vertices)
    ids = np.zeros(m + 1, dtype=np.int64)
    ids[:n] = vertices
    ids[m] = n
    layer = np.zeros(m, dtype=np.int64)
    layer[:n] = layers
    counts = np.zeros(m, dtype=np.int64)
    cols, eids = [], []
    for i, v in enumerate(vertices):
        if v in expanded:
            c, e = expanded[v]
            counts[i] = len(c)
            cols.append(c)
            eids.append(e)
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    cols = np.concatenate(cols).astype(np.int64) if cols else np.zeros(0, np.int64)
    eids = np.concatenate(eids).astype(g.data.dtype) if eids else np.zeros(0, g.data.dtype)
    sub = Csr((m, g.shape[1]), eids, indptr, cols)
    prob = None
    if probability is not None:
        prob = np.zeros(m, dtype=np.float32)
        prob[:n] = probability[vertices]
    return ids, sub, prob, layer


def _sampler(name, n_fixed):
    def kernel(p, args):
        """Subgraphs sampled from each seed array: num_neighbor neighbours of every vertex
        within num_hops - 1 hops, up to max_num_vertices vertices. Outputs, one per seed array
        in each group: the sorted vertex ids (the last entry: their count), the subgraph (csr,
        row i for vertex i of the list, parent columns and edge ids), [the vertices'
        probabilities,] the hop at which each vertex was reached."""
        g = args[0]
        _check_graph(name, g)
        probability = None
        if n_fixed == 2:
            probability = np.asarray(args[1], dtype=np.float32).reshape(-1)
            require(probability.size == g.shape[0], '%s: the probability vector has %d entries '
                    'for a graph of %d vertices', name, probability.size, g.shape[0])
        results = [_sample_one(name, g, seeds, p, probability) for seeds in args[n_fixed:]]
        ids, subs, probs, layers = zip(*results)
        return list(ids) + list(subs) + (list(probs) if n_fixed == 2 else []) + list(layers)
    return kernel


def _sampler_sets(n_fixed):
    return 4 if n_fixed == 2 else 3


def _sampler_outputs(n_fixed):
    def outputs(p):
        n = (p.num_args - n_fixed) * _sampler_sets(n_fixed)
        return tuple('output%d' % i for i in range(n))
    return outputs


def _sampler_stypes(n_fixed):
    def stypes(p):
        k = p.num_args - n_fixed
        return [D] * k + [C] * k + [D] * k * (_sampler_sets(n_fixed) - 2)
    return stypes


def _sampler_shape(n_fixed):
    def infer(p, ins, outs):
        k, m = p.num_args - n_fixed, p.max_num_vertices
        cols = ins[0][1] if ins[0] is not None and len(ins[0]) == 2 else 0
        rest = [(m,)] * k * (_sampler_sets(n_fixed) - 2)
        return ins, [(m + 1,)] * k + [(m, cols) if cols else None] * k + rest
    return infer


def _sampler_type(n_fixed):
    def infer(p, ins, outs):
        k = p.num_args - n_fixed
        prob = [_F32] * k if n_fixed == 2 else []
        return ins, [_INT64] * 2 * k + prob + [_INT64] * k
    return infer


_SAMPLER_PARAMS = {'num_args': Int(lower=2), 'num_hops': Int(1), 'num_neighbor': Int(2),
                   'max_num_vertices': Int(100)}
for _name, _fixed in (('_contrib_dgl_csr_neighbor_uniform_sample', 1),
                      ('_contrib_dgl_csr_neighbor_non_uniform_sample', 2)):
    _graph_op(_name, _sampler(_name[len('_contrib_'):], _fixed), _first,
              _sampler_stypes(_fixed), params=dict(_SAMPLER_PARAMS), variadic='num_args',
              outputs=_sampler_outputs(_fixed), infer_shape=_sampler_shape(_fixed),
              infer_type=_sampler_type(_fixed), random=True)


# ---------------------------------------------------------------------------------------------
# dgl_graph_compact: a sampled subgraph with its vertices renumbered 0..size-1
# ---------------------------------------------------------------------------------------------
def _compact(p, args):
    """Each sampled subgraph (the first half of the inputs) renumbered by its vertex ids (the
    second half) to graph_sizes[i] x graph_sizes[i], with new edge ids 0..n-1; with
    return_mapping a second csr per graph holds the parent's edge ids."""
    half = len(args) // 2
    require(len(p.graph_sizes) == half, 'dgl_graph_compact: graph_sizes has %d entries for %d '
            'graphs', len(p.graph_sizes), half)
    new, old = [], []
    for g, ids, size in zip(args[:half], args[half:], p.graph_sizes):
        _check_graph('dgl_graph_compact', g)
        _check_int64('dgl_graph_compact', 'the vertex ids', ids.dtype)
        require(0 <= size < ids.size and size <= g.shape[0], 'dgl_graph_compact: graph size %d '
                'does not fit %d vertex ids and a graph of %d rows', size, ids.size, g.shape[0])
        position = {int(v): i for i, v in enumerate(ids[:size])}
        end = g.indptr[size]
        try:
            cols = np.array([position[int(c)] for c in g.indices[:end]], dtype=np.int64)
        except KeyError as err:
            raise MXNetError('dgl_graph_compact: column %s is not one of the subgraph\'s vertex '
                             'ids' % err) from None
        indptr = g.indptr[:size + 1].copy()
        new.append(Csr((size, size), np.arange(end, dtype=np.int64), indptr, cols))
        old.append(Csr((size, size), g.data[:end].copy(), indptr, cols))
    return new + old if p.return_mapping else new


def _compact_outputs(p):
    n = p.num_args // 2 * (2 if p.return_mapping else 1)
    return tuple('output%d' % i for i in range(n))


def _compact_shape(p, ins, outs):
    shapes = [(s, s) for s in p.graph_sizes]
    return ins, shapes * 2 if p.return_mapping else shapes


_graph_op('_contrib_dgl_graph_compact', _compact, _halves,
          lambda p: [C] * len(_compact_outputs(p)),
          params={'num_args': Int(lower=2), 'return_mapping': Bool(), 'graph_sizes': Shape()},
          variadic='num_args', outputs=_compact_outputs, infer_shape=_compact_shape,
          infer_type=lambda p, ins, outs: (ins, [_INT64] * len(_compact_outputs(p))))

"""DGL graph operators (mx.nd.contrib.edge_id, dgl_adjacency, dgl_subgraph, the csr neighbour
samplers, dgl_graph_compact) against outputs of MXNet 1.9.1 (constants below, printed by
tests/fixtures/gen_graph_hawkes_det.py)."""
import numpy as np
import pytest

import mxtorch as mx
from mxtorch.base import MXNetError


def _complete5():
    """The complete graph on 5 vertices without self loops; edge ids 1..20 in row order."""
    data = np.arange(1, 21, dtype=np.int64)
    indices = np.array([1, 2, 3, 4, 0, 2, 3, 4, 0, 1, 3, 4, 0, 1, 2, 4, 0, 1, 2, 3], np.int64)
    indptr = np.array([0, 4, 8, 12, 16, 20], dtype=np.int64)
    return mx.nd.sparse.csr_matrix((data, indices, indptr), shape=(5, 5))


def _chain5():
    """0 -> 1 -> 2 -> 3 -> 4 with edge ids 0..3 (edge id 0 is a stored value)."""
    return mx.nd.sparse.csr_matrix((np.arange(4, dtype=np.int64), np.arange(1, 5, dtype=np.int64),
                                    np.array([0, 1, 2, 3, 4, 4], np.int64)), shape=(5, 5))


def _parts(a):
    assert a.stype == 'csr'
    return [a.indptr.asnumpy().tolist(), a.indices.asnumpy().tolist(), a.data.asnumpy().tolist()]


def _ids(values):
    return mx.nd.array(values, dtype='int64')


def test_edge_id_and_adjacency():
    g = _complete5()
    out = mx.nd.contrib.edge_id(g, mx.nd.array([0, 0, 1, 4]), mx.nd.array([0, 1, 2, 3]))
    assert out.dtype == np.int64 and out.asnumpy().tolist() == [-1, 1, 6, 20]
    # an edge with id 0 is found; out-of-range vertices give -1
    out = mx.nd.contrib.edge_id(_chain5(), mx.nd.array([0, 9, 4]), mx.nd.array([1, 0, 0]))
    assert out.asnumpy().tolist() == [0, -1, -1]
    f = mx.nd.array([[0, 1], [2, 0]]).tostype('csr')
    out = mx.nd.contrib.edge_id(f, mx.nd.array([0, 1, 1]), mx.nd.array([1, 0, 1]))
    assert out.dtype == np.float32 and out.asnumpy().tolist() == [1, 2, -1]
    adj = mx.nd.contrib.dgl_adjacency(g)
    assert adj.stype == 'csr' and adj.dtype == np.float32 and adj.shape == (5, 5)
    assert _parts(adj)[:2] == _parts(g)[:2] and adj.data.asnumpy().tolist() == [1.0] * 20


def test_graph_ops_refuse_dense_and_non_int64_graphs():
    dense = mx.nd.array([[0, 1], [2, 0]], dtype='int64')
    with pytest.raises(MXNetError, match='csr'):
        mx.nd.contrib.dgl_adjacency(dense)
    with pytest.raises(MXNetError, match='csr'):
        mx.nd.contrib.edge_id(dense, mx.nd.array([0]), mx.nd.array([1]))
    with pytest.raises(MXNetError, match='int64'):
        mx.nd.contrib.dgl_adjacency(mx.nd.array([[0, 1], [2, 0]]).tostype('csr'))
    with pytest.raises(MXNetError, match='one length'):
        mx.nd.contrib.edge_id(_complete5(), mx.nd.array([0, 1]), mx.nd.array([1]))


def test_subgraph_new_and_parent_edge_ids():
    g = _complete5()
    new, old = mx.nd.contrib.dgl_subgraph(g, _ids([0, 1, 2]), return_mapping=True)
    assert new.shape == old.shape == (3, 3)
    assert _parts(new) == [[0, 2, 4, 6], [1, 2, 0, 2, 0, 1], [0, 1, 2, 3, 4, 5]]
    assert _parts(old) == [[0, 2, 4, 6], [1, 2, 0, 2, 0, 1], [1, 2, 5, 6, 9, 10]]
    outs = mx.nd.contrib.dgl_subgraph(g, _ids([0, 1, 2]), _ids([1, 3]), return_mapping=True)
    assert [o.shape for o in outs] == [(3, 3), (2, 2), (3, 3), (2, 2)]
    assert _parts(outs[1]) == [[0, 1, 2], [1, 0], [0, 1]]
    assert _parts(outs[3]) == [[0, 1, 2], [1, 0], [7, 14]]
    single = mx.nd.contrib.dgl_subgraph(g, _ids([0, 1, 2]), return_mapping=False)
    assert single.stype == 'csr' and _parts(single) == _parts(new)
    with pytest.raises(MXNetError, match='sorted'):
        mx.nd.contrib.dgl_subgraph(g, _ids([2, 0]), return_mapping=False)
    with pytest.raises(MXNetError, match='not in a graph'):
        mx.nd.contrib.dgl_subgraph(g, _ids([0, 7]), return_mapping=False)


def test_uniform_sample_takes_every_neighbour_when_degree_is_small():
    g = _complete5()
    ids, sub, layer = mx.nd.contrib.dgl_csr_neighbor_uniform_sample(
        g, _ids([0, 1, 2, 3, 4]), num_hops=1, num_neighbor=5, max_num_vertices=7)
    assert ids.asnumpy().tolist() == [0, 1, 2, 3, 4, 0, 0, 5]   # last: the vertex count
    assert sub.shape == (7, 5) and sub.dtype == np.int64
    assert _parts(sub) == [[0, 4, 8, 12, 16, 20, 20, 20], _parts(g)[1], list(range(1, 21))]
    assert layer.asnumpy().tolist() == [0] * 7
    # two seed sets: outputs are grouped (ids, ids, csr, csr, layer, layer)
    outs = mx.nd.contrib.dgl_csr_neighbor_uniform_sample(
        g, _ids([3, 1]), _ids([0, 1, 2, 3, 4]), num_hops=1, num_neighbor=5,
        max_num_vertices=7)
    assert len(outs) == 6 and outs[0].asnumpy()[:5].tolist() == [0, 1, 2, 3, 4]
    assert _parts(outs[2]) == [[0, 0, 4, 4, 8, 8, 8, 8], [0, 2, 3, 4, 0, 1, 2, 4],
                               [5, 6, 7, 8, 13, 14, 15, 16]]
    assert outs[4].asnumpy()[:5].tolist() == [1, 0, 1, 0, 1]


def test_sampling_stops_at_max_num_vertices_and_num_hops():
    g = _complete5()
    ids, sub, layer = mx.nd.contrib.dgl_csr_neighbor_uniform_sample(
        g, _ids([0]), num_hops=1, num_neighbor=4, max_num_vertices=3)
    assert ids.asnumpy().tolist() == [0, 1, 2, 3]
    assert _parts(sub) == [[0, 4, 4, 4], [1, 2, 3, 4], [1, 2, 3, 4]]
    assert layer.asnumpy().tolist() == [0, 1, 1]
    # the walk stops once full: seed 1 is never expanded
    ids, sub, layer = mx.nd.contrib.dgl_csr_neighbor_uniform_sample(
        g, _ids([0, 1]), num_hops=1, num_neighbor=4, max_num_vertices=3)
    assert _parts(sub) == [[0, 4, 4, 4], [1, 2, 3, 4], [1, 2, 3, 4]]
    assert layer.asnumpy().tolist() == [0, 0, 1]
    ids, sub, layer = mx.nd.contrib.dgl_csr_neighbor_uniform_sample(
        _chain5(), _ids([0]), num_hops=2, num_neighbor=4, max_num_vertices=6)
    assert ids.asnumpy().tolist() == [0, 1, 2, 0, 0, 0, 3]
    assert _parts(sub) == [[0, 1, 2, 2, 2, 2, 2], [1, 2], [0, 1]]
    with pytest.raises(MXNetError, match='max_num_vertices'):
        mx.nd.contrib.dgl_csr_neighbor_uniform_sample(g, _ids([0, 1]), max_num_vertices=1)


def test_non_uniform_sample_outputs_and_invariants():
    prob = mx.nd.array([0.9, 0.8, 0.2, 0.4, 0.1])
    ids, sub, p, layer = mx.nd.contrib.dgl_csr_neighbor_non_uniform_sample(
        _chain5(), prob, _ids([0]), num_hops=3, num_neighbor=4, max_num_vertices=6)
    assert ids.asnumpy().tolist() == [0, 1, 2, 3, 0, 0, 4]
    assert _parts(sub) == [[0, 1, 2, 3, 3, 3, 3], [1, 2, 3], [0, 1, 2]]
    np.testing.assert_allclose(p.asnumpy(), [0.9, 0.8, 0.2, 0.4, 0, 0], rtol=1e-6)
    assert p.dtype == np.float32 and layer.asnumpy().tolist() == [0, 1, 2, 3, 0, 0]
    # random draws: num_neighbor of each row's neighbours, in their stored order, never one
    # with probability 0
    g = _complete5()
    mx.random.seed(3)
    zero3 = mx.nd.array([1, 1, 1, 0, 1])
    for _ in range(5):
        ids, sub, p, layer = mx.nd.contrib.dgl_csr_neighbor_non_uniform_sample(
            g, zero3, _ids([0, 1, 2, 3, 4]), num_hops=1, num_neighbor=2, max_num_vertices=6)
        indptr, cols, eids = _parts(sub)
        assert indptr == [0, 2, 4, 6, 8, 10, 10] and 3 not in cols[:6] + cols[8:]
        for r in range(5):
            row = cols[2 * r:2 * r + 2]
            assert row == sorted(row) and r not in row
            assert mx.nd.contrib.edge_id(g, mx.nd.array([r, r]), mx.nd.array(row)) \
                .asnumpy().tolist() == eids[2 * r:2 * r + 2]


def test_uniform_sample_draws_distinct_neighbours():
    g = _complete5()
    mx.random.seed(0)
    seen = set()
    for _ in range(20):
        _, sub, _ = mx.nd.contrib.dgl_csr_neighbor_uniform_sample(
            g, _ids([0]), num_hops=1, num_neighbor=2, max_num_vertices=5)
        indptr, cols, _ = _parts(sub)
        row = cols[:indptr[1]]
        assert len(row) == 2 and row[0] < row[1] and 0 not in row
        seen.add(tuple(row))
    assert len(seen) > 1

    def draws():
        mx.random.seed(5)
        return [_parts(mx.nd.contrib.dgl_csr_neighbor_uniform_sample(
            g, _ids([0]), num_hops=2, num_neighbor=2, max_num_vertices=5)[1]) for _ in range(3)]
    assert draws() == draws()          # mx.random.seed repeats the draws


def test_graph_compact():
    ids, sub, _ = mx.nd.contrib.dgl_csr_neighbor_uniform_sample(
        _chain5(), _ids([0]), num_hops=2, num_neighbor=4, max_num_vertices=6)
    compact = mx.nd.contrib.dgl_graph_compact(sub, ids, graph_sizes=(3,), return_mapping=False)
    assert compact.shape == (3, 3) and _parts(compact) == [[0, 1, 2, 2], [1, 2], [0, 1]]
    # a NumPy array of sizes is read as MXNet reads str(array)
    compact = mx.nd.contrib.dgl_graph_compact(sub, ids, graph_sizes=ids[-1:].asnumpy(),
                                              return_mapping=False)
    assert compact.shape == (3, 3)
    g = _complete5()
    ids, sub, _ = mx.nd.contrib.dgl_csr_neighbor_uniform_sample(
        g, _ids([0, 1, 2, 3, 4]), num_hops=1, num_neighbor=4, max_num_vertices=6)
    outs = mx.nd.contrib.dgl_graph_compact(sub, sub, ids, ids, graph_sizes=(5, 5),
                                           return_mapping=True)
    assert len(outs) == 4
    assert _parts(outs[0]) == [_parts(g)[0], _parts(g)[1], list(range(20))]
    assert _parts(outs[2])[2] == list(range(1, 21))     # the parent graph's edge ids
    with pytest.raises(MXNetError, match='graph_sizes'):
        mx.nd.contrib.dgl_graph_compact(sub, ids, return_mapping=False)


def test_graph_ops_in_symbols():
    x = mx.sym.Variable('x', stype='csr')
    s = mx.sym.contrib.dgl_csr_neighbor_uniform_sample(x, mx.sym.Variable('s'),
                                                       max_num_vertices=4)
    assert len(s.list_outputs()) == 3
    assert s.infer_shape(x=(3, 3), s=(2,))[1] == [(5,), (4, 3), (4,)]
    assert s.infer_type(x='int64', s='int64')[1] == [np.int64] * 3
    e = mx.sym.contrib.edge_id(x, mx.sym.Variable('u'), mx.sym.Variable('v'))
    assert e.infer_type(x='int64', u='float32', v='float32')[1] == [np.int64]
    g = mx.nd.array([[0, 1], [2, 0]], dtype='int64').tostype('csr')
    exe = e.bind(mx.cpu(), {'x': g, 'u': mx.nd.array([0, 1]), 'v': mx.nd.array([1, 1])})
    assert exe.forward()[0].asnumpy().tolist() == [1, -1]
    a = mx.sym.contrib.dgl_adjacency(x)
    assert a.infer_type(x='int64')[1] == [np.float32]

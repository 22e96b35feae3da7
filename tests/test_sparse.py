"""Sparse storage (CSRNDArray, RowSparseNDArray): creation, parts, storage-type rules, sparse
kernels, executors, kvstore, optimizer, files. Expected values were checked on MXNet 1.9.1."""
import pickle

import numpy as np
import pytest

import mxtorch as mx
from conftest import FIXTURES

D = np.array([[0, 1.5, 0, 0], [0, 0, 0, 0], [2, 0, 3, 0]], dtype=np.float32)


def test_csr_parts_and_values():
    a = mx.nd.array(D).tostype('csr')
    assert isinstance(a, mx.nd.sparse.CSRNDArray) and a.stype == 'csr'
    assert a.data.asnumpy().tolist() == [1.5, 2, 3]
    assert a.indices.asnumpy().tolist() == [1, 0, 2]
    assert a.indptr.asnumpy().tolist() == [0, 1, 1, 3]
    assert a.indices.dtype == np.int64
    np.testing.assert_array_equal(a.asnumpy(), D)
    assert repr(a) == '\n<CSRNDArray 3x4 @cpu(0)>'
    b = mx.nd.sparse.csr_matrix(([1, 2, 3], [1, 0, 2], [0, 1, 2, 2, 3]), shape=(4, 3))
    np.testing.assert_array_equal(b.asnumpy(), [[0, 1, 0], [2, 0, 0], [0, 0, 0], [0, 0, 3]])
    assert a[2].asnumpy().tolist() == [[2, 0, 3, 0]] and a[0:2].stype == 'csr'
    with pytest.raises(ValueError):
        mx.nd.array([1, 2, 3]).tostype('csr')


def test_csr_from_scipy_is_canonical():
    sp = pytest.importorskip('scipy.sparse')
    m = sp.csr_matrix((np.array([1., 2, 3, 4]), np.array([2, 0, 2, 1]), np.array([0, 2, 4])),
                      shape=(2, 3))
    a = mx.nd.array(m)
    assert a.stype == 'csr' and a.dtype == np.float64
    assert a.indices.asnumpy().tolist() == [0, 2, 1, 2]
    assert a.data.asnumpy().tolist() == [2, 1, 4, 3]
    np.testing.assert_array_equal(a.asscipy().toarray(), m.toarray())


def test_row_sparse_parts_retain_and_union():
    r = mx.nd.array(D).tostype('row_sparse')
    assert r.indices.asnumpy().tolist() == [0, 2] and r.data.shape == (2, 4)
    kept = mx.nd.sparse.retain(r, mx.nd.array([1, 2]))
    assert kept.indices.asnumpy().tolist() == [1, 2]          # requested rows, even empty ones
    np.testing.assert_array_equal(kept.asnumpy(), [[0] * 4, [0] * 4, [2, 0, 3, 0]])
    x = mx.nd.array([[0, 0], [1, 0]]).tostype('row_sparse')
    y = mx.nd.array([[0, 0], [-1, 0]]).tostype('row_sparse')
    s = x + y
    assert s.stype == 'row_sparse' and s.indices.asnumpy().tolist() == [1]
    z = mx.nd.sparse.zeros('row_sparse', (3, 2))
    assert z.indices.shape == (0,) and z.data.shape == (0, 2)
    z[:] = 2
    assert z.asnumpy().tolist() == [[2, 2]] * 3


def test_storage_type_rules():
    r = mx.nd.array(D).tostype('row_sparse')
    c = mx.nd.array(D).tostype('csr')
    assert (r * 2).stype == 'row_sparse' and (r + 0).stype == 'row_sparse'
    assert (r + 1).stype == 'default' and mx.nd.exp(r).stype == 'default'
    assert (r >= 1).stype == 'row_sparse' and (r >= 0).stype == 'default'
    assert (c * c).stype == 'csr' and mx.nd.sqrt(c).stype == 'csr'
    assert mx.nd.sum(c, axis=1).stype == 'default'
    w = mx.nd.ones((3, 2))
    assert mx.nd.dot(c, mx.nd.ones((4, 2))).stype == 'default'
    t = mx.nd.dot(c, w, transpose_a=True)
    assert t.stype == 'row_sparse'
    np.testing.assert_allclose(t.asnumpy(), D.T @ np.ones((3, 2)))
    assert mx.nd.add_n(r, r, r).stype == 'row_sparse'
    sq = mx.nd._internal._square_sum(r, axis=1, keepdims=True)
    assert sq.stype == 'row_sparse'
    np.testing.assert_allclose(sq.asnumpy(), (D * D).sum(1, keepdims=True))


def test_inplace_and_astype():
    r = mx.nd.array(D).tostype('row_sparse')
    r += r
    assert r.stype == 'row_sparse'
    np.testing.assert_array_equal(r.asnumpy(), 2 * D)
    i = r.astype('int32')
    assert i.stype == 'row_sparse' and i.dtype == np.int32


def test_save_load_matches_mxnet_bytes(tmp_path):
    ref = (FIXTURES / 'sparse_mxnet.params').read_bytes()
    loaded = mx.nd.load(str(FIXTURES / 'sparse_mxnet.params'))
    assert loaded['c'].stype == 'csr' and loaded['r3'].stype == 'row_sparse'
    assert loaded['r3'].indices.asnumpy().tolist() == [1, 3]
    assert loaded['c64'].dtype == np.float64
    np.testing.assert_array_equal(loaded['r'].asnumpy(), D)
    out = tmp_path / 'x.params'
    mx.nd.save(str(out), {k: loaded[k] for k in ['c', 'r', 'e', 'ec', 'r3', 'c64', 'dn']})
    assert out.read_bytes() == ref
    b = pickle.loads(pickle.dumps(loaded['c']))
    assert isinstance(b, mx.nd.sparse.CSRNDArray)
    np.testing.assert_array_equal(b.asnumpy(), D)


def test_autograd_sparse_gradients():
    lhs = mx.nd.array(D).tostype('csr')
    rhs = mx.nd.ones((4, 2))
    rhs.attach_grad(stype='row_sparse')
    with mx.autograd.record():
        y = mx.nd.dot(lhs, rhs)
    y.backward()
    assert rhs.grad.stype == 'row_sparse'
    np.testing.assert_allclose(rhs.grad.asnumpy(), D.T @ np.ones((3, 2)))
    x = mx.nd.zeros((1, 1), stype='csr')
    x.attach_grad()
    assert x.grad.stype == 'csr' and x.detach().stype == 'csr'


def test_executor_sparse_embedding_gradient():
    data = mx.sym.Variable('data')
    weight = mx.sym.Variable('w', stype='row_sparse')
    out = mx.sym.Embedding(data, weight, input_dim=5, output_dim=2, sparse_grad=True)
    exe = out.simple_bind(mx.cpu(), grad_req={'data': 'null', 'w': 'write'}, data=(3,))
    assert exe.arg_dict['w'].stype == 'row_sparse'
    exe.arg_dict['w'][:] = np.arange(10, dtype=np.float32).reshape(5, 2)
    exe.arg_dict['data'][:] = np.array([1, 3, 1])
    exe.forward(is_train=True)
    np.testing.assert_array_equal(exe.outputs[0].asnumpy(), [[2, 3], [6, 7], [2, 3]])
    exe.backward([mx.nd.ones((3, 2))])
    g = exe.grad_dict['w']
    assert g.stype == 'row_sparse' and g.indices.asnumpy().tolist() == [1, 3]
    np.testing.assert_array_equal(g.asnumpy()[[1, 3]], [[2, 2], [1, 1]])


def test_kvstore_row_sparse_pull_and_lazy_sgd():
    kv = mx.kv.create('local')
    kv.init('e', mx.nd.ones((4, 2)).tostype('row_sparse'))
    out = mx.nd.sparse.zeros('row_sparse', (4, 2))
    kv.row_sparse_pull('e', out=out, row_ids=mx.nd.array([3, 1, 3]))
    assert out.indices.asnumpy().tolist() == [1, 3]
    np.testing.assert_array_equal(out.asnumpy(), [[0, 0], [1, 1], [0, 0], [1, 1]])
    opt = mx.optimizer.SGD(learning_rate=0.1, wd=0.1, momentum=0.9)
    w = mx.nd.ones((3, 2))
    g = mx.nd.array([[0, 0], [1, 1], [0, 0]]).tostype('row_sparse')
    state = opt.create_state(0, w)
    opt.update_multi_precision(0, w, g, state)
    # only row 1 moves: 1 - 0.1 * (1 + 0.1 * 1) = 0.89
    np.testing.assert_allclose(w.asnumpy(), [[1, 1], [0.89, 0.89], [1, 1]], rtol=1e-6)

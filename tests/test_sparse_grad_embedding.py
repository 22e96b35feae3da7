"""Sparse-grad embeddings give their row_sparse gradient as (rows, values) directly: only the
looked-up rows are stored, the dense gradient is never built, and lazy optimizer updates on it
train exactly as updates on the gradient computed densely."""
import numpy as np
import pytest

import mxtorch as mx


def _bind(n, d, batch, sparse_grad=True, op='Embedding', req='write'):
    data, w = mx.sym.Variable('data'), mx.sym.Variable('w')
    if op == 'Embedding':
        emb = mx.sym.Embedding(data, w, input_dim=n, output_dim=d, sparse_grad=sparse_grad)
    else:
        emb = mx.sym.contrib.SparseEmbedding(data, w, input_dim=n, output_dim=d)
    return emb.simple_bind(mx.cpu(), data=(batch,), w=(n, d),
                           grad_req={'data': 'null', 'w': req})


def test_gradient_stores_the_looked_up_rows_as_mxnet():
    # numbers from MXNet 1.9.1: a row whose gradient is zero is still stored
    ex = _bind(10, 3, 4)
    ex.arg_dict['data'][:] = mx.nd.array([7, 2, 7, 5])
    ex.arg_dict['w'][:] = mx.nd.arange(30).reshape((10, 3))
    ex.forward(is_train=True)
    ex.backward(mx.nd.array([[1, 2, 3], [0, 0, 0], [4, 5, 6], [1, 1, 1]]))
    g = ex.grad_dict['w']
    assert g.stype == 'row_sparse'
    np.testing.assert_array_equal(g.indices.asnumpy(), [2, 5, 7])
    np.testing.assert_array_equal(g.data.asnumpy(), [[0, 0, 0], [1, 1, 1], [5, 7, 9]])


@pytest.mark.parametrize('op', ['Embedding', 'SparseEmbedding'])
def test_large_embedding_gradient_keeps_only_touched_rows(op):
    n, d, batch = 200000, 8, 64
    ex = _bind(n, d, batch, op=op)
    idx = np.random.RandomState(0).randint(0, n, batch)
    ex.arg_dict['data'][:] = mx.nd.array(idx)
    ex.forward(is_train=True)
    head = np.random.RandomState(1).rand(batch, d).astype(np.float32)
    ex.backward(mx.nd.array(head))
    g = ex.grad_dict['w']
    assert isinstance(g, mx.nd.sparse.RowSparseNDArray)
    data, rows = g._get_parts()
    assert g._dense is None or g._dense_stale          # no dense (n x d) gradient was made
    np.testing.assert_array_equal(rows.numpy(), np.unique(idx))
    expect = np.zeros((n, d), np.float32)
    np.add.at(expect, idx, head)
    np.testing.assert_allclose(data.numpy(), expect[np.unique(idx)], rtol=1e-6)
    # grad_req='add': MXNet's sparse embedding kernels write only
    ex2 = _bind(n, d, batch, op=op, req='add')
    ex2.arg_dict['data'][:] = mx.nd.array(idx)
    ex2.forward(is_train=True)
    with pytest.raises(mx.MXNetError, match='kWriteTo'):
        ex2.backward(mx.nd.array(head))


@pytest.mark.parametrize('opt', [dict(optimizer='sgd', momentum=0.9, wd=1e-3),
                                 dict(optimizer='adam', wd=1e-3)])
def test_lazy_training_equals_the_dense_gradient_path(opt):
    n, d, batch = 5000, 4, 32
    rng = np.random.RandomState(2)
    w0 = rng.rand(n, d).astype(np.float32)
    runs = []
    for sparse_grad in (True, False):
        ex = _bind(n, d, batch, sparse_grad=sparse_grad)
        ex.arg_dict['w'][:] = mx.nd.array(w0)
        kwargs = dict(opt)
        updater = mx.optimizer.get_updater(
            mx.optimizer.create(kwargs.pop('optimizer'), learning_rate=0.1, lazy_update=True,
                                **kwargs))
        step_rng = np.random.RandomState(3)
        for _ in range(4):
            ex.arg_dict['data'][:] = mx.nd.array(step_rng.randint(0, n, batch))
            ex.forward(is_train=True)
            ex.backward(mx.nd.array(step_rng.rand(batch, d) + 0.5))
            g = ex.grad_dict['w']
            if not sparse_grad:           # the gradient computed densely, then its rows
                g = g.tostype('row_sparse')
            updater(0, g, ex.arg_dict['w'])
        runs.append(ex.arg_dict['w'].asnumpy())
    np.testing.assert_allclose(runs[0], runs[1], rtol=1e-6, atol=1e-7)
    assert not np.allclose(runs[0], w0)


def test_sparse_gradient_into_a_dense_array_is_refused():
    # MXNet 1.9.1: a sparse-grad embedding needs a row_sparse gradient array
    w = mx.nd.arange(12).reshape((4, 3))
    w.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Embedding(mx.nd.array([1, 3, 1]), w, input_dim=4, output_dim=3,
                            sparse_grad=True)
    with pytest.raises(mx.MXNetError, match='sparse_grad'):
        y.backward()
    ex = mx.sym.Embedding(mx.sym.var('data'), mx.sym.var('w'), input_dim=4, output_dim=3,
                          sparse_grad=True).bind(
        mx.cpu(), {'data': mx.nd.array([1, 3, 1]), 'w': w}, args_grad={'w': mx.nd.zeros((4, 3))},
        grad_req={'data': 'null', 'w': 'write'})
    ex.forward(is_train=True)
    with pytest.raises(mx.MXNetError, match='sparse_grad'):
        ex.backward(mx.nd.ones((3, 3)))
    w.attach_grad(stype='row_sparse')
    with mx.autograd.record():
        y = mx.nd.Embedding(mx.nd.array([1, 3, 1]), w, input_dim=4, output_dim=3,
                            sparse_grad=True)
    y.backward()
    assert w.grad.indices.asnumpy().tolist() == [1, 3]
    np.testing.assert_array_equal(w.grad.data.asnumpy(), [[2] * 3, [1] * 3])


def test_dot_csr_dense_uses_the_csr_parts_and_records_the_weight_gradient():
    import scipy.sparse as sp
    a = sp.random(6, 50000, density=0.001, format='csr', dtype=np.float32, random_state=4)
    w_np = np.random.RandomState(5).rand(50000, 3).astype(np.float32)
    csr = mx.nd.sparse.csr_matrix(a)
    w = mx.nd.array(w_np)
    w.attach_grad()
    head = np.random.RandomState(6).rand(6, 3).astype(np.float32)
    with mx.autograd.record():
        y = mx.nd.sparse.dot(csr, w)
    y.backward(mx.nd.array(head))
    assert y.stype == 'default'
    np.testing.assert_allclose(y.asnumpy(), a @ w_np, rtol=1e-5)
    np.testing.assert_allclose(w.grad.asnumpy(), a.T @ head, rtol=1e-5, atol=1e-7)
    assert csr._dense is None                   # the csr array's dense form was not built

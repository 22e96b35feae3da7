"""Sparse values through Gluon blocks, hybridized or not, as MXNet 1.9.1: CSR inputs reach the
operators' sparse kernels (stored zeros kept), outputs keep MXNet's storage types, row_sparse
gradients store the rows MXNet's kernels store (zero rows included, which lazy updates still
decay), and Trainers train sparse models to MXNet's parameters (fixture made with MXNet by
tests/fixtures/gen_gluon_sparse_training.py)."""
import os
import sys

import numpy as np
import pytest

import mxtorch as mx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, 'fixtures'))
import _gluon_sparse_cases as cases  # noqa: E402

FIXTURE = np.load(os.path.join(HERE, 'fixtures', 'gluon_sparse_training.npz'))


def _csr_with_stored_zero():
    return mx.nd.sparse.csr_matrix((np.array([1.5, 2, 0, 3, -1], 'float32'),
                                    np.array([1, 4, 2, 0, 3]), np.array([0, 2, 3, 5])),
                                   shape=(3, 5))


def _parts(a):
    if a.stype == 'row_sparse':
        return ['row_sparse', a.indices.asnumpy().tolist(), a.data.asnumpy().tolist()]
    if a.stype == 'csr':
        return ['csr', a.indptr.asnumpy().tolist(), a.indices.asnumpy().tolist(),
                a.data.asnumpy().tolist()]
    return ['default', a.asnumpy().tolist()]


class _Fn(mx.gluon.HybridBlock):
    def __init__(self, fn, **kw):
        super().__init__(**kw)
        self.fn = fn

    def hybrid_forward(self, F, *args):
        return self.fn(F, *args)


def _both(fn, *args):
    """fn's block called imperatively, then hybridized (twice: the cached binding too)."""
    block = _Fn(fn)
    results = [block(*args)]
    block.hybridize()
    results += [block(*args), block(*args)]
    return results


@pytest.mark.parametrize('fn, want', [
    (lambda F, x: F.sparse.dot(x, F.ones((3, 2)), transpose_a=True),
     ['row_sparse', [0, 1, 2, 3, 4], [[3, 3], [1.5, 1.5], [0, 0], [-1, -1], [2, 2]]]),
    (lambda F, x: x * 2, ['csr', [0, 2, 3, 5], [1, 4, 2, 0, 3], [3, 4, 0, 6, -2]]),
    (lambda F, x: F.identity(x), ['csr', [0, 2, 3, 5], [1, 4, 2, 0, 3], [1.5, 2, 0, 3, -1]]),
    (lambda F, x: F.cast_storage(F.cast_storage(x, stype='default'), stype='row_sparse'),
     ['row_sparse', [0, 2], [[0, 1.5, 0, 0, 2], [3, 0, 0, -1, 0]]]),
])
def test_hybridized_outputs_keep_mxnet_storage_types(fn, want):
    x = _csr_with_stored_zero()
    for out in _both(fn, x):
        assert _parts(out) == want
    assert _parts(x) == ['csr', [0, 2, 3, 5], [1, 4, 2, 0, 3], [1.5, 2, 0, 3, -1]]


def test_csr_input_reaches_the_sparse_kernels_as_it_is():
    x = _csr_with_stored_zero()
    block = _Fn(lambda F, x, w: F.sparse.dot(x, w))
    block.hybridize()
    for _ in range(2):
        out = block(x, mx.nd.array([[1], [2], [3], [4], [5]]))
        assert _parts(out) == ['default', [[13], [0], [-1]]]
    assert x._dense is None                # its dense form was never built


def test_dense_and_csr_calls_of_one_block_bind_apart():
    block = _Fn(lambda F, x, w: F.sparse.dot(x, w))
    block.hybridize()
    x, w = _csr_with_stored_zero(), mx.nd.ones((5, 1))
    dense = block(x.tostype('default'), w)
    sparse = block(x, w)
    again = block(x.tostype('default'), w)
    for out in (dense, sparse, again):
        assert _parts(out) == ['default', [[3.5], [0.0], [2.0]]]
    assert sparse.stype == 'default'


class _Dot(mx.gluon.HybridBlock):
    def __init__(self, grad_stype, **kw):
        super().__init__(**kw)
        with self.name_scope():
            self.w = self.params.get('w', shape=(5, 2), init=mx.init.Constant(0.5),
                                     grad_stype=grad_stype)

    def hybrid_forward(self, F, x, w):
        return F.sparse.dot(x, w) * 2


@pytest.mark.parametrize('hybridize', [False, True])
def test_dot_weight_gradient_stores_the_csr_columns(hybridize):
    # MXNet: row 2 (only a stored zero reaches it) is a stored row of zeros
    net = _Dot('row_sparse')
    net.initialize()
    if hybridize:
        net.hybridize()
    with mx.autograd.record():
        y = net(_csr_with_stored_zero())
    y.backward()
    assert _parts(y) == ['default', [[3.5, 3.5], [0, 0], [2, 2]]]
    assert _parts(net.w.grad()) == ['row_sparse', [0, 1, 2, 3, 4],
                                    [[6, 6], [3, 3], [0, 0], [-2, -2], [4, 4]]]
    dense = _Dot('default')
    dense.initialize()
    if hybridize:
        dense.hybridize()
    with mx.autograd.record():
        y = dense(_csr_with_stored_zero())
    y.backward()
    assert _parts(dense.w.grad()) == ['default', [[6, 6], [3, 3], [0, 0], [-2, -2], [4, 4]]]


def test_imperative_row_sparse_gradients_as_mxnet():
    w = mx.nd.ones((5, 2))
    w.attach_grad(stype='row_sparse')
    with mx.autograd.record():       # two sparse gradients: rows of both
        y = mx.nd.sparse.dot(_csr_with_stored_zero(), w) + \
            mx.nd.sparse.dot(_csr_with_stored_zero()[0:1], w)
    y.backward()
    assert _parts(w.grad) == ['row_sparse', [0, 1, 2, 3, 4],
                              [[3, 3], [6, 6], [0, 0], [-1, -1], [8, 8]]]
    with mx.autograd.record():       # with a dense one: the non-zero rows
        y = mx.nd.sparse.dot(_csr_with_stored_zero(), w) + mx.nd.sum(w[1:2] * 0)
    y.backward()
    assert _parts(w.grad) == ['row_sparse', [0, 1, 3, 4], [[3, 3], [1.5, 1.5], [-1, -1], [2, 2]]]
    emb = mx.nd.ones((6, 2))
    emb.attach_grad(stype='row_sparse')
    with mx.autograd.record():
        y = mx.nd.Embedding(mx.nd.array([4, 1, 4]), emb, input_dim=6, output_dim=2,
                            sparse_grad=True)
    y.backward(mx.nd.array([[1, 2], [0, 0], [3, 4]]))
    assert _parts(emb.grad) == ['row_sparse', [1, 4], [[0, 0], [4, 6]]]


@pytest.mark.parametrize('hybridize', [False, True])
def test_sparse_kernel_gradients_refuse_grad_req_add(hybridize):
    emb = mx.gluon.nn.Embedding(6, 2, sparse_grad=True)
    emb.initialize()
    emb.collect_params().setattr('grad_req', 'add')
    if hybridize:
        emb.hybridize()
    with mx.autograd.record():
        y = emb(mx.nd.array([4, 1, 4]))
    with pytest.raises(mx.MXNetError, match='kWriteTo'):
        y.backward()
    w = mx.nd.ones((5, 2))
    w.attach_grad('add', stype='row_sparse')
    with mx.autograd.record():
        y = mx.nd.sparse.dot(_csr_with_stored_zero(), w)
    with pytest.raises(mx.MXNetError, match='kWriteTo'):
        y.backward()


def test_sparse_weights_need_update_on_kvstore():
    p = mx.gluon.Parameter('w', shape=(4, 2), stype='row_sparse', grad_stype='row_sparse')
    p.initialize()
    trainer = mx.gluon.Trainer([p], 'sgd', update_on_kvstore=False)
    with pytest.raises(ValueError, match='update_on_kvstore=False'):
        p.row_sparse_data(mx.nd.array([0, 1]))
    del trainer


@pytest.mark.parametrize('name', sorted(cases.cases()))
def test_sparse_training_equals_mxnet(name):
    got = cases.run(mx, name)
    for key, value in got.items():
        want = FIXTURE['%s.%s' % (name, key)]
        if key.startswith('rows'):
            np.testing.assert_array_equal(value, want, err_msg=key)
        else:
            np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-5, err_msg=key)
    assert len(got) == sum(k.startswith(name + '.') for k in FIXTURE.files)


def test_symbol_block_takes_csr_inputs_not_row_sparse_variables():
    data, w = mx.sym.var('data', stype='csr'), mx.sym.var('w', shape=(5, 2))
    block = mx.gluon.SymbolBlock(mx.sym.sparse.dot(data, w), [data])
    block.collect_params().initialize(mx.init.Constant(2))
    block.hybridize()
    assert _parts(block(_csr_with_stored_zero())) == ['default', [[7, 7], [0, 0], [4, 4]]]
    rsp = mx.sym.var('data', stype='row_sparse')
    with pytest.raises(AssertionError, match="'data' because its storage type is 'row_sparse'"):
        mx.gluon.SymbolBlock(mx.sym.sparse.dot(rsp, w), [rsp])


def test_autograd_grad_returns_the_stored_rows():
    # MXNet 1.9.1: autograd.grad gives row_sparse gradients where sparse kernels store rows
    emb = mx.nd.ones((6, 2))
    emb.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Embedding(mx.nd.array([4, 1, 4]), emb, input_dim=6, output_dim=2,
                            sparse_grad=True)
    assert _parts(mx.autograd.grad(y, [emb])[0]) == ['row_sparse', [1, 4], [[1, 1], [2, 2]]]
    w = mx.nd.ones((5, 2))
    w.attach_grad(stype='row_sparse')
    with mx.autograd.record():
        y = mx.nd.sparse.dot(_csr_with_stored_zero(), w)
    assert _parts(mx.autograd.grad(y, [w])[0]) == [
        'row_sparse', [0, 1, 2, 3, 4], [[3, 3], [1.5, 1.5], [0, 0], [-1, -1], [2, 2]]]


def test_dense_inputs_to_a_graph_with_sparse_values():
    # cast_storage inside the graph: MXNet 1.9.1's outputs and gradient, both ways, twice
    class Net(mx.gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.w = self.params.get('w', shape=(5, 2), init=mx.init.Constant(0.5),
                                         grad_stype='row_sparse')

        def hybrid_forward(self, F, x, w):
            c = F.cast_storage(x, stype='csr')
            return (F.sparse.dot(c, w), F.cast_storage(x, stype='row_sparse'),
                    F.sparse.dot(c, F.ones((3, 2)), transpose_a=True))

    x = mx.nd.array([[0, 1.5, 0, 0, 2], [0, 0, 0, 0, 0], [3, 0, 0, -1, 0]])
    rows = [[3, 3], [1.5, 1.5], [-1, -1], [2, 2]]
    for hybridize in (False, True):
        net = Net()
        net.initialize()
        if hybridize:
            net.hybridize()
        for _ in range(2):
            with mx.autograd.record():
                a, b, c = net(x)
            a.backward()
            assert _parts(a) == ['default', [[1.75, 1.75], [0, 0], [1, 1]]]
            assert _parts(b) == ['row_sparse', [0, 2], [[0, 1.5, 0, 0, 2], [3, 0, 0, -1, 0]]]
            assert _parts(c) == ['row_sparse', [0, 1, 3, 4], rows]
            assert _parts(net.w.grad()) == ['row_sparse', [0, 1, 3, 4], rows]

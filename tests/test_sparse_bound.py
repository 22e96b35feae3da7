"""Sparse values inside bound executors: the ops' sparse kernels run as the imperative calls do
(stored structure, edge id 0, explicit zeros), gradients in MXNet's storage types; dense graphs
keep their plan. Expected numbers are MXNet 1.9.1's (CPU) for the same graphs and inputs."""
import numpy as np
import pytest

import mxtorch as mx

X = np.array([[0, 1.5, 0, 0, 2], [0, 0, 0, 0, 0], [3, 0, 0, -1, 0]], dtype='float32')
W = (np.arange(10, dtype='float32').reshape(5, 2) - 4) / 4


def _csr_with_stored_zero():
    """X's values, and a stored zero at (1, 2)."""
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


def _graph():
    return mx.nd.sparse.csr_matrix((np.array([0, 1, 2, 3], dtype='int64'),
                                    np.array([1, 2, 0, 1], dtype='int64'),
                                    np.array([0, 2, 3, 4, 4], dtype='int64')), shape=(4, 4))


def test_graph_ops_bound_read_the_stored_structure():
    g, u, v = _graph(), mx.nd.array([0, 0, 1, 2, 3], dtype='int64'), \
        mx.nd.array([1, 2, 2, 0, 3], dtype='int64')
    gs = mx.sym.var('g', stype='csr')
    sym = mx.sym.Group([mx.sym.contrib.edge_id(gs, mx.sym.var('u'), mx.sym.var('v')),
                        mx.sym.contrib.dgl_adjacency(gs)])
    outs = sym.bind(mx.cpu(), {'g': g, 'u': u, 'v': v}).forward()
    assert _parts(outs[0]) == ['default', [0, 1, -1, -1, -1]]     # edge id 0 is an edge
    assert _parts(outs[0]) == _parts(mx.nd.contrib.edge_id(g, u, v))
    assert _parts(outs[1]) == ['csr', [0, 2, 3, 4, 4], [1, 2, 0, 1], [1.0] * 4]


def test_graph_op_on_a_dense_graph_fails_at_bind():
    e = mx.sym.contrib.edge_id(mx.sym.var('g'), mx.sym.var('u'), mx.sym.var('v'))
    with pytest.raises(mx.MXNetError, match='edge_id'):
        e.bind(mx.cpu(), {'g': mx.nd.ones((4, 4), dtype='int64'),
                          'u': mx.nd.array([0], dtype='int64'),
                          'v': mx.nd.array([1], dtype='int64')})


def test_linear_classification_graph_as_mxnet():
    data, w, b = (mx.sym.var('data', stype='csr'), mx.sym.var('w', stype='row_sparse'),
                  mx.sym.var('b'))
    out = mx.sym.LogisticRegressionOutput(mx.sym.broadcast_add(mx.sym.sparse.dot(data, w), b),
                                          mx.sym.var('label'))
    ex = out.simple_bind(mx.cpu(), data=X.shape, w=W.shape, b=(1, 2), label=(3, 2),
                         grad_req={'data': 'null', 'w': 'write', 'b': 'write', 'label': 'null'})
    assert [a.stype for a in ex.arg_arrays] == ['csr', 'row_sparse', 'default', 'default']
    assert ex.grad_dict['w'].stype == 'row_sparse'
    ex.arg_dict['data'][:] = _csr_with_stored_zero()
    ex.arg_dict['w'][:] = mx.nd.array(W).tostype('row_sparse')
    ex.arg_dict['b'][:] = 0.5
    ex.arg_dict['label'][:] = np.array([[1, 0], [0, 1], [1, 1]])
    np.testing.assert_allclose(ex.forward(is_train=True)[0].asnumpy(),
                               [[0.8519527316093445, 0.9324532747268677],
                                [0.622459352016449, 0.622459352016449],
                                [0.04742587357759476, 0.07585817575454712]], rtol=1e-6)
    ex.backward()
    kind, rows, values = _parts(ex.grad_dict['w'])
    assert (kind, rows) == ('row_sparse', [0, 1, 2, 3, 4])    # the stored zero's column too
    np.testing.assert_allclose(values, [[-1.428861141204834, -1.386212706565857],
                                        [-0.11103545129299164, 0.6993399858474731], [0, 0],
                                        [0.4762870669364929, 0.46207091212272644],
                                        [-0.14804726839065552, 0.9324532747268677]], rtol=1e-6)
    np.testing.assert_allclose(ex.grad_dict['b'].asnumpy(),
                               [[-0.2390810251235962, -0.18461459875106812]], rtol=1e-6)


def _dot_loss_executor(req):
    d, w = mx.sym.var('data', stype='csr'), mx.sym.var('w')
    y = mx.sym.MakeLoss(mx.sym.sum(mx.sym.square(mx.sym.dot(d, w))))
    ex = y.simple_bind(mx.cpu(), data=(3, 5), w=(5, 2), grad_req={'data': 'null', 'w': req})
    ex.arg_dict['data'][:] = _csr_with_stored_zero()
    ex.arg_dict['w'][:] = W
    return ex


def test_dot_csr_dense_bound_runs_on_the_stored_elements():
    ex = _dot_loss_executor('write')
    ex.forward(is_train=True)
    ex.backward()
    assert _parts(ex.grad_dict['w']) == ['row_sparse', [0, 1, 2, 3, 4],
                                         [[-21.0, -18.0], [3.75, 6.375], [0.0, 0.0],
                                          [7.0, 6.0], [5.0, 8.5]]]
    data = ex.arg_dict['data']
    assert data._dense is None           # the csr array's dense form was never built
    grad = ex.grad_dict['w']
    assert grad._dense is None or grad._dense_stale     # rows only


def test_dot_csr_dense_bound_grad_req_add():
    # MXNet 1.9.1: dot(csr, dense)'s row_sparse weight gradient is written only ('add' fails
    # its kernel's check); a dense gradient array accumulates
    ex = _dot_loss_executor('add')
    assert ex.grad_dict['w'].stype == 'row_sparse'
    ex.forward(is_train=True)
    with pytest.raises(mx.MXNetError, match='kWriteTo'):
        ex.backward()
    d, w = mx.sym.var('data', stype='csr'), mx.sym.var('w')
    y = mx.sym.MakeLoss(mx.sym.sum(mx.sym.square(mx.sym.dot(d, w))))
    grad = mx.nd.zeros((5, 2))
    ex = y.bind(mx.cpu(), {'data': _csr_with_stored_zero(), 'w': mx.nd.array(W)},
                args_grad={'w': grad}, grad_req={'data': 'null', 'w': 'add'})
    for _ in range(2):
        ex.forward(is_train=True)
        ex.backward()
    assert _parts(grad) == ['default', [[-42.0, -36.0], [7.5, 12.75], [0.0, 0.0],
                                        [14.0, 12.0], [10.0, 17.0]]]
    # a row_sparse gradient summed with a dense one (w * w) accumulates too
    y = mx.sym.MakeLoss(mx.sym.sum(mx.sym.dot(d, w)) + mx.sym.sum(w * w))
    grad = mx.nd.zeros((5, 2)).tostype('row_sparse')
    ex = y.bind(mx.cpu(), {'data': _csr_with_stored_zero(), 'w': mx.nd.array(W)},
                args_grad={'w': grad}, grad_req={'data': 'null', 'w': 'add'})
    for _ in range(2):
        ex.forward(is_train=True)
        ex.backward()
    assert _parts(ex.grad_dict['w']) == ['row_sparse', [0, 1, 2, 3, 4],
                                         [[2.0, 3.0], [1.0, 2.0], [0.0, 1.0], [0.0, 1.0],
                                          [8.0, 9.0]]]


def test_cast_storage_in_a_graph_gives_sparse_results():
    d = mx.sym.var('d')
    z = mx.sym.dot(mx.sym.cast_storage(d, stype='csr'), mx.sym.var('v'), transpose_a=True)
    ex = z.bind(mx.cpu(), {'d': mx.nd.array(X), 'v': mx.nd.array([[1, 2], [3, 4], [5, 6]])})
    out = ex.forward()[0]
    assert _parts(out) == ['row_sparse', [0, 1, 3, 4],
                           [[15.0, 18.0], [1.5, 3.0], [-5.0, -6.0], [2.0, 4.0]]]


def test_row_sparse_ops_keep_stored_rows_bound_and_imperative():
    a = mx.sym.var('a', stype='row_sparse')
    arr = mx.nd.sparse.row_sparse_array((np.array([[1, 2], [0, 0], [-3, 1]], 'float32'),
                                         np.array([0, 3, 4])), shape=(5, 2))
    sym = mx.sym.Group([mx.sym.sqrt(mx.sym.abs(a)) * 2,
                        mx.sym._internal._square_sum(a, axis=1, keepdims=True),
                        mx.sym.sum(mx.sym.elemwise_add(a, a))])
    outs = sym.bind(mx.cpu(), {'a': arr}).forward()
    expected = [['row_sparse', [0, 3, 4], [[2.0, 2.8284270763397217], [0.0, 0.0],
                                           [3.464101552963257, 2.0]]],
                ['row_sparse', [0, 3, 4], [[5.0], [0.0], [10.0]]],
                ['default', [2.0]]]
    for got, want in zip(outs, expected):
        assert got.stype == want[0] and (got.stype == 'default' or _parts(got)[1] == want[1])
        np.testing.assert_allclose(_parts(got)[-1], want[-1], rtol=1e-6)
    imperative = mx.nd._internal._square_sum(arr, axis=1, keepdims=True)
    assert _parts(imperative) == expected[1]


def test_dense_graphs_keep_their_plan():
    fc = mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3, name='fc')
    ex = fc.simple_bind(mx.cpu(), data=(2, 4))
    assert ex._storage is None
    d = mx.sym.var('data', stype='csr')
    ex = mx.sym.dot(d, mx.sym.var('w')).simple_bind(mx.cpu(), data=(2, 4), w=(4, 3))
    assert ex._storage is not None


def test_sparse_graph_step_by_step_and_monitored():
    d = mx.sym.var('data', stype='csr')
    y = mx.sym.relu(mx.sym.dot(d, mx.sym.var('w')), name='act')
    ex = y.bind(mx.cpu(), {'data': _csr_with_stored_zero(), 'w': mx.nd.array(W)})
    want = np.maximum(X @ W, 0)
    seen = []
    ex.set_monitor_callback(lambda name, arr: seen.append(name), monitor_all=True)
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), want, rtol=1e-6)
    assert 'act_output' in seen and 'data' in seen
    ex.set_monitor_callback(None)
    ex.outputs[0][:] = 0
    step = 0
    while ex.partial_forward(step=step):
        step += 1
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), want, rtol=1e-6)


def test_hybridized_block_on_csr_input():
    class Net(mx.gluon.HybridBlock):
        def __init__(self, **kw):
            super().__init__(**kw)
            with self.name_scope():
                self.w = self.params.get('w', shape=(5, 2), init=mx.init.Constant(0.5))

        def hybrid_forward(self, F, x, w):
            return F.sparse.dot(x, w) * 2

    net = Net()
    net.initialize()
    net.hybridize()
    with mx.autograd.record():
        y = net(mx.nd.array(X).tostype('csr'))
    y.backward()
    np.testing.assert_allclose(y.asnumpy(), [[3.5, 3.5], [0, 0], [2, 2]])
    np.testing.assert_allclose(net.w.grad().asnumpy(),
                               [[6, 6], [3, 3], [0, 0], [-2, -2], [4, 4]])


def test_factorization_machine_graph_as_mxnet():
    """MXNet's sparse factorization-machine model: v's gradient keeps the rows the csr data
    stores (a stored zero's too) though square_sum's branch adds a dense gradient."""
    x = mx.sym.var('data', stype='csr')
    v, w1 = mx.sym.var('v', stype='row_sparse'), mx.sym.var('w1_weight', stype='row_sparse')
    linear = mx.sym.broadcast_add(mx.sym.dot(x, w1), mx.sym.var('w1_bias'))
    v_s = mx.sym._internal._square_sum(data=v, axis=1, keepdims=True)
    pair = mx.sym.sum(0.5 * mx.sym.square(mx.sym.dot(x, v)), axis=1, keepdims=True) - \
        0.5 * mx.sym.dot(mx.sym.square(x), v_s)
    model = mx.sym.LogisticRegressionOutput(mx.sym.elemwise_add(linear, pair),
                                            mx.sym.var('softmax_label'))
    ex = model.simple_bind(mx.cpu(), data=(3, 6), v=(6, 2), w1_weight=(6, 1), w1_bias=(1,),
                           softmax_label=(3, 1),
                           grad_req={'data': 'null', 'softmax_label': 'null', 'v': 'write',
                                     'w1_weight': 'write', 'w1_bias': 'write'})
    ex.arg_dict['data'][:] = mx.nd.sparse.csr_matrix(
        (np.array([1.5, 2, 0, 3, -1], 'float32'), np.array([1, 4, 2, 0, 3]),
         np.array([0, 2, 3, 5])), shape=(3, 6))
    ex.arg_dict['v'][:] = mx.nd.array(
        (np.arange(12, dtype='float32').reshape(6, 2) - 5) / 7).tostype('row_sparse')
    ex.arg_dict['w1_weight'][:] = mx.nd.array(
        np.arange(6, dtype='float32').reshape(6, 1) / 5).tostype('row_sparse')
    ex.arg_dict['w1_bias'][:] = 0.1
    ex.arg_dict['softmax_label'][:] = np.array([[1], [0], [1]])
    np.testing.assert_allclose(ex.forward(is_train=True)[0].asnumpy(),
                               [[0.72296], [0.52498], [0.57344]], rtol=1e-4)
    ex.backward()
    expected = {'v': [[0.18281, 0.36562], [-0.3562, -0.47493], [0.0, 0.0],
                      [-0.91405, -0.73124], [0.3562, 0.23746]],
                'w1_weight': [[-1.27967], [-0.41556], [0.0], [0.42656], [-0.55408]]}
    for name, values in expected.items():
        kind, rows, got = _parts(ex.grad_dict[name])
        assert (kind, rows) == ('row_sparse', [0, 1, 2, 3, 4])
        np.testing.assert_allclose(got, values, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ex.grad_dict['w1_bias'].asnumpy(), [-0.17862], rtol=1e-4)


def test_csr_argument_of_dot_gets_zero_gradient_bound():
    """MXNet's executor writes zeros for the csr operand's gradient of dot(csr, dense)."""
    d, w = mx.sym.var('data', stype='csr'), mx.sym.var('w')
    ex = mx.sym.dot(d, w).simple_bind(mx.cpu(), data=(3, 5), w=(5, 2))
    ex.arg_dict['data'][:] = _csr_with_stored_zero()
    ex.arg_dict['w'][:] = np.ones((5, 2))
    ex.grad_dict['data'][:] = 7
    ex.forward(is_train=True)
    ex.backward(mx.nd.ones((3, 2)))
    assert _parts(ex.grad_dict['data']) == ['default', np.zeros((3, 5)).tolist()]
    assert _parts(ex.grad_dict['w']) == ['row_sparse', [0, 1, 2, 3, 4],
                                         [[3.0, 3.0], [1.5, 1.5], [0.0, 0.0], [-1.0, -1.0],
                                          [2.0, 2.0]]]


def test_forward_kwargs_keep_a_csr_argument_stored_structure():
    d, w = mx.sym.var('data', stype='csr'), mx.sym.var('w')
    ex = mx.sym.dot(d, w).simple_bind(mx.cpu(), data=(3, 5), w=(5, 2))
    out = ex.forward(data=_csr_with_stored_zero(), w=np.ones((5, 2), 'float32'))[0]
    np.testing.assert_allclose(out.asnumpy(), [[3.5, 3.5], [0, 0], [2, 2]])
    data = ex.arg_dict['data']
    assert _parts(data)[1:3] == [[0, 2, 3, 5], [1, 4, 2, 0, 3]]
    assert data._dense is None

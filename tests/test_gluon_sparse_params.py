"""Gluon: row_sparse Parameters and gradients, op hooks, trailing None arguments of hybridized
blocks, dtype casting on load (behaviour as MXNet 1.9.1)."""
import numpy as np
import pytest

import mxtorch as mx
from mxtorch import gluon


def test_invalid_stype_is_an_assertion():
    with pytest.raises(AssertionError):
        gluon.Parameter('w', shape=(2, 2), stype='invalid')
    with pytest.raises(AssertionError):
        gluon.Parameter('w', shape=(2, 2), grad_stype='invalid')


def test_row_sparse_parameter_rows_through_a_trainer():
    p = gluon.Parameter('w', shape=(4, 2), stype='row_sparse', grad_stype='row_sparse')
    p.initialize(init=mx.init.Constant(3), ctx=[mx.cpu(0), mx.cpu(1)])
    rows = mx.nd.array([0, 2], ctx=mx.cpu(1))
    with pytest.raises(RuntimeError):
        p.data()                              # row_sparse: only row_sparse_data
    with pytest.raises(RuntimeError):
        p.row_sparse_data(rows)               # no Trainer yet
    gluon.Trainer([p], 'sgd')
    got = p.row_sparse_data(rows)
    assert got.stype == 'row_sparse' and got.context == mx.cpu(1)
    np.testing.assert_array_equal(got.asnumpy(), [[3, 3], [0, 0], [3, 3], [0, 0]])
    assert len(p.list_row_sparse_data(rows)) == 2
    assert p.grad(mx.cpu(0)).stype == 'row_sparse'
    assert p.var().attr('__storage_type__') == '1'
    dense = gluon.Parameter('d', shape=(2, 2))
    dense.initialize()
    with pytest.raises(RuntimeError):
        dense.row_sparse_data(rows)


def test_embedding_sparse_grad_is_row_sparse():
    layer = gluon.nn.Embedding(10, 3, sparse_grad=True)
    layer.initialize()
    with mx.autograd.record():
        y = layer(mx.nd.array([3, 4, 3]))
    y.backward()
    grad = layer.weight.grad()
    assert grad.stype == 'row_sparse'
    np.testing.assert_array_equal(grad.asnumpy()[:, 0], [0, 0, 0, 2, 1, 0, 0, 0, 0, 0])


def test_clip_global_norm_on_row_sparse_arrays():
    x1 = mx.nd.ones((3, 3)).tostype('row_sparse')
    x2 = mx.nd.ones((4, 4)).tostype('row_sparse')
    assert gluon.utils.clip_global_norm([x1, x2], 1.0) == 5.0
    np.testing.assert_allclose(x1.asnumpy(), np.full((3, 3), 0.2), rtol=1e-6)


def test_load_casts_to_the_saved_dtype(tmp_path):
    path = str(tmp_path / 'p.params')
    params = gluon.ParameterDict('')
    params.get('w', shape=(2, 2), dtype='int8')
    params.initialize(mx.init.One())
    params.save(path)
    loaded = gluon.ParameterDict('')
    loaded.get('w', shape=(2, 2), dtype='float64')
    loaded.initialize()
    loaded.load(path, cast_dtype=True, dtype_source='saved')
    assert loaded['w'].data().dtype == np.int8


def test_op_hook_reports_node_and_operator_names():
    net = gluon.nn.HybridSequential(prefix='m_')
    with net.name_scope():
        net.add(gluon.nn.Dense(2), gluon.nn.Activation('relu'))
    net.initialize()
    net.hybridize()
    seen = []
    net.register_op_hook(lambda name, op, arr: seen.append((name, op)), monitor_all=True)
    net(mx.nd.ones((1, 3)))
    assert seen[:4] == [('m_dense0_fwd_data', 'FullyConnected'),
                        ('m_dense0_fwd_weight', 'FullyConnected'),
                        ('m_dense0_fwd_bias', 'FullyConnected'),
                        ('m_dense0_fwd_output', 'FullyConnected')]
    assert seen[-1] == ('m_relu0_fwd_output', 'Activation')


def test_hybridized_block_takes_trailing_none_defaults():
    class Add(gluon.HybridBlock):
        def hybrid_forward(self, F, a, b=None):
            return a if b is None else a + b

    block = Add()
    block.hybridize()
    first = block(mx.nd.ones(2))
    again = block(mx.nd.ones(2), None)
    np.testing.assert_array_equal(first.asnumpy(), again.asnumpy())
    with pytest.raises(ValueError):
        block(mx.nd.ones(2), mx.nd.ones(2))


def test_symbol_block_registers_params_without_their_common_prefix():
    data = mx.sym.var('data')
    out = mx.sym.FullyConnected(data, num_hidden=2, name='net_fc')
    block = gluon.SymbolBlock(out, data)
    assert sorted(block._reg_params) == ['bias', 'weight']
    assert sorted(block.collect_params().keys()) == ['net_fc_bias', 'net_fc_weight']


def test_summary_refuses_hybridized_blocks():
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(2))
    net.initialize()
    net.summary(mx.nd.ones((1, 3)))
    net.hybridize()
    with pytest.raises(AssertionError):
        net.summary(mx.nd.ones((1, 3)))


# MXNet 1.9.1: a (5, 2) weight of ones on cpu(0) and cpu(1), rows [0, 2] and [2, 3] looked up,
# loss sum(embedding * [[1, 2], [3, 4]]), SGD lr 0.1 momentum 0.9 wd 0.1 (lazy update), 2 steps
_SPARSE_SGD_FINAL = [[0.6821, 0.3931], [1.0, 1.0], [-0.1849, -0.7629], [0.1041, -0.1849],
                     [1.0, 1.0]]


def _two_contexts_data():
    ctxs = [mx.cpu(0), mx.cpu(1)]
    datas = [mx.nd.array([0, 2], ctx=ctxs[0]), mx.nd.array([2, 3], ctx=ctxs[1])]
    coefs = [mx.nd.array([[1., 2.], [3., 4.]], ctx=c) for c in ctxs]
    return ctxs, datas, coefs


def test_row_sparse_weight_trains_on_the_kvstore(tmp_path):
    ctxs, datas, coefs = _two_contexts_data()
    w = gluon.Parameter('w', shape=(5, 2), stype='row_sparse', grad_stype='row_sparse')
    w.initialize(init=mx.init.One(), ctx=ctxs)
    trainer = gluon.Trainer([w], 'sgd', {'learning_rate': 0.1, 'momentum': 0.9, 'wd': 0.1})
    for _ in range(2):
        with mx.autograd.record():
            ys = [(mx.nd.Embedding(x, w.row_sparse_data(x), input_dim=5, output_dim=2,
                                   sparse_grad=True) * c).sum() for x, c in zip(datas, coefs)]
        for y in ys:
            y.backward()
        assert w.grad(ctxs[0]).stype == 'row_sparse'
        np.testing.assert_array_equal(w.grad(ctxs[0]).asnumpy(),
                                      [[1, 2], [0, 0], [3, 4], [0, 0], [0, 0]])
        trainer.step(1)
    assert trainer._update_on_kvstore is True
    got = w.row_sparse_data(mx.nd.arange(0, 5))
    np.testing.assert_allclose(got.asnumpy(), _SPARSE_SGD_FINAL, rtol=1e-5, atol=1e-5)
    # the full value is pulled from the kvstore when saved
    np.testing.assert_allclose(w._reduce().asnumpy(), _SPARSE_SGD_FINAL, rtol=1e-5, atol=1e-5)
    states = str(tmp_path / 'sparse.states')
    trainer.save_states(states)
    trainer.load_states(states)
    w.lr_mult = 2.0
    assert trainer._kvstore._updater.optimizer._get_lr(0) == pytest.approx(0.2)
    v = gluon.Parameter('v', shape=(2, 2), stype='row_sparse')
    v.initialize()
    with pytest.raises(ValueError):          # sparse weights are updated on the kvstore
        gluon.Trainer([v], 'sgd', update_on_kvstore=False).save_states(states)


def test_dense_weight_with_sparse_grad_updates_locally():
    ctxs, datas, coefs = _two_contexts_data()
    emb = gluon.nn.Embedding(5, 2, sparse_grad=True)
    emb.initialize(mx.init.One(), ctx=ctxs)
    trainer = gluon.Trainer(emb.collect_params(), 'sgd',
                            {'learning_rate': 0.1, 'momentum': 0.9, 'wd': 0.1})
    for _ in range(2):
        with mx.autograd.record():
            ys = [(emb(x) * c).sum() for x, c in zip(datas, coefs)]
        for y in ys:
            y.backward()
        trainer.step(1)
    assert trainer._update_on_kvstore is False
    for c in ctxs:
        np.testing.assert_allclose(emb.weight.data(c).asnumpy(), _SPARSE_SGD_FINAL,
                                   rtol=1e-5, atol=1e-5)


def test_sparse_rows_pulled_inside_a_forward_with_deferred_dense_layers():
    class Net(gluon.Block):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.embed = self.params.get('embed', shape=(4, 3), stype='row_sparse',
                                             grad_stype='row_sparse')
                self.dense = gluon.nn.Dense(2)

        def forward(self, x):
            rows = self.embed.row_sparse_data(x)
            return self.dense(mx.nd.Embedding(x, rows, input_dim=4, output_dim=3,
                                              sparse_grad=True))

    ctxs = [mx.cpu(1), mx.cpu(2)]
    net = Net(prefix='net_')
    net.initialize(mx.init.One(), ctx=ctxs)
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 1})
    xs = gluon.utils.split_and_load(mx.nd.array([[0, 2], [1, 2]]), ctxs)
    with mx.autograd.record():
        ys = [net(x) for x in xs]
    for y in ys:
        y.backward()
    trainer.step(1)
    assert not trainer._params_to_init
    weight = net.embed.row_sparse_data(mx.nd.arange(0, 4, ctx=ctxs[0])).asnumpy()
    np.testing.assert_array_equal(weight[:, 0], [-1, -1, -3, 1])


def test_sparse_embedding_gradient_rows():
    layer = gluon.contrib.nn.SparseEmbedding(10, 4)
    layer.initialize()
    gluon.Trainer(layer.collect_params(), 'sgd')
    with mx.autograd.record():
        y = layer(mx.nd.array([3, 4, 2, 0, 1]))
    y.backward()
    grad = layer.weight.grad()
    assert grad.stype == 'row_sparse'
    np.testing.assert_array_equal(grad.asnumpy()[:, 0], [1] * 5 + [0] * 5)


def test_sparse_embedding_saves_its_trained_rows(tmp_path):
    # MXNet 1.9.1: the saved weight is row_sparse and holds the kvstore's (updated) value
    layer = gluon.contrib.nn.SparseEmbedding(6, 2, prefix='emb_')
    layer.initialize(mx.init.Constant(2))
    trainer = gluon.Trainer(layer.collect_params(), 'sgd', {'learning_rate': 0.5})
    with mx.autograd.record():
        y = layer(mx.nd.array([1, 3]))
    y.backward()
    trainer.step(1)
    path = str(tmp_path / 'emb.params')
    layer.save_parameters(path)
    expected = [[2, 2], [1.5, 1.5], [2, 2], [1.5, 1.5], [2, 2], [2, 2]]
    saved = mx.nd.load(path)['weight']
    assert saved.stype == 'row_sparse'
    np.testing.assert_array_equal(saved.asnumpy(), expected)
    other = gluon.contrib.nn.SparseEmbedding(6, 2, prefix='emb_')
    other.load_parameters(path)
    gluon.Trainer(other.collect_params(), 'sgd')
    np.testing.assert_array_equal(other.weight.row_sparse_data(mx.nd.arange(6)).asnumpy(),
                                  expected)

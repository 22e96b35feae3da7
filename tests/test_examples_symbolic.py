"""Behaviours MXNet's symbolic/Module example scripts rely on (found running them on mxtorch)."""
import json
import os
import struct

import numpy as np

import mxtorch as mx


def test_quantized_batch_norm_moving_stats_are_aux_states():
    # MXNet 1.9.1: the moving statistics of a quantized BatchNorm are mutated inputs (aux
    # states) although they sit among its inputs; a quantized model's params load as aux
    x = mx.sym.var('data', dtype='int8')
    q = mx.sym.contrib.quantized_batch_norm(
        x, mx.sym.var('g'), mx.sym.var('b'), mx.sym.var('mm'), mx.sym.var('mv'),
        mx.sym.var('lo'), mx.sym.var('hi'), min_calib_range=-1.0, max_calib_range=1.0,
        name='qbn')
    assert q.list_arguments() == ['data', 'g', 'b', 'lo', 'hi']
    assert q.list_auxiliary_states() == ['mm', 'mv']
    node = [n for n in json.loads(q.tojson())['nodes'] if n['op'] != 'null'][0]
    assert node['inputs'] == [[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 1], [4, 0, 1],
                              [5, 0, 0], [6, 0, 0]]                       # MXNet's JSON
    loaded = mx.sym.load_json(q.tojson())
    assert loaded.list_auxiliary_states() == ['mm', 'mv']
    args, _, aux = q.infer_shape(data=(2, 3, 4, 4))
    assert args == [(2, 3, 4, 4), (3,), (3,), (1,), (1,)] and aux == [(3,), (3,)]

    rng = np.random.RandomState(0)
    data = mx.nd.array(rng.randint(-127, 128, (2, 3, 4, 4)), dtype='int8')
    g, b = mx.nd.array(rng.rand(3) + 0.5), mx.nd.array(rng.rand(3))
    mm, mv = mx.nd.array(rng.rand(3) - 0.5), mx.nd.array(rng.rand(3) + 0.5)
    lo, hi = mx.nd.array([-2.0]), mx.nd.array([2.0])
    ex = q.bind(mx.cpu(), {'data': data, 'g': g, 'b': b, 'lo': lo, 'hi': hi},
                aux_states={'mm': mm, 'mv': mv})
    got = ex.forward()[0].asnumpy()
    want = mx.nd.contrib.quantized_batch_norm(data, g, b, mm, mv, lo, hi, min_calib_range=-1.0,
                                              max_calib_range=1.0)[0].asnumpy()
    np.testing.assert_array_equal(got, want)


def test_sgd_subclass_update_override_and_super():
    # MXNet 1.9.1: SGD's update_multi_precision (the Updater's and kvstores' path) runs SGD's
    # own rule, so a subclass's update() is not called there; called directly it runs, and its
    # super().update is SGD's rule. A subclass of the base Optimizer is updated through update().
    calls = []

    class Masked(mx.optimizer.SGD):
        def update(self, index, weight, grad, state):
            calls.append(index)
            grad[:] = grad * 0.5
            super().update(index, weight, grad, state)

    opt = Masked(learning_rate=0.1)
    updater = mx.optimizer.get_updater(opt)
    w, g = mx.nd.ones((3,)), mx.nd.ones((3,))
    updater(0, g, w)
    assert calls == []
    np.testing.assert_allclose(w.asnumpy(), 0.9)              # plain SGD step
    opt.update(1, w, g, None)
    assert calls == [1]
    np.testing.assert_allclose(w.asnumpy(), 0.85)             # the override's half gradient

    class Custom(mx.optimizer.Optimizer):
        def update(self, index, weight, grad, state):
            calls.append(('custom', index))
            weight[:] = weight - grad

    updater = mx.optimizer.get_updater(Custom())
    updater(2, g, w)
    assert calls[-1] == ('custom', 2)
    np.testing.assert_allclose(w.asnumpy(), 0.35, rtol=1e-6)       # g was halved in place


def test_monitor_reports_no_backward_node_whose_inputs_need_no_gradient():
    # MXNet 1.9.1 (train_mnist.py --monitor): flatten0 only reads `data` (no gradient), so its
    # backward graph has no flatten0_backward node; fc1_backward is there (weight, bias)
    data = mx.sym.Flatten(mx.sym.var('data'), name='flatten0')
    fc1 = mx.sym.FullyConnected(data, num_hidden=4, name='fc1')
    net = mx.sym.SoftmaxOutput(fc1, name='softmax')
    mod = mx.mod.Module(net, context=mx.cpu())
    mod.bind(data_shapes=[('data', (2, 1, 2, 2))], label_shapes=[('softmax_label', (2,))])
    mod.init_params()
    mod.init_optimizer()
    names = []
    mon = mx.mon.Monitor(1, lambda x: mx.nd.norm(x) / np.sqrt(x.size), pattern='.*')
    mon.install(mod._exec_group.execs[0])
    mon.tic()
    batch = mx.io.DataBatch([mx.nd.ones((2, 1, 2, 2))], [mx.nd.array([0, 1])])
    mod.forward_backward(batch)
    names = [name for _, name, _ in mon.toc()]
    assert names == ['flatten0_output', 'fc1_output', 'softmax_output',
                     'softmax_backward_output0', 'softmax_backward_output1',
                     'fc1_backward_output0', 'fc1_backward_output1', 'fc1_backward_output2',
                     'data', 'fc1_weight', 'fc1_bias', 'softmax_label']


def test_ndarray_iter_over_no_samples_is_empty_as_mxnet():
    # MXNet 1.9.1 builds it (text_cnn.py with a small corpus): shapes from the batch size, 0 batches
    it = mx.io.NDArrayIter(np.zeros((0, 14)), np.zeros(0), 50, shuffle=True)
    assert it.provide_data[0].shape == (50, 14) and it.num_data == 0
    assert list(it) == []


def test_legacy_collections_abc_names_only_while_the_alias_is_installed():
    # example/ssd's config does isinstance(x, collections.Mapping) (Python <= 3.9)
    import collections
    import collections.abc
    import sys
    import warnings
    import pytest
    from mxtorch import compat
    if sys.version_info < (3, 10):
        pytest.skip('this Python still has the aliases')
    with pytest.raises(AttributeError):
        collections.Mapping
    compat.install()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            assert collections.Mapping is collections.abc.Mapping
            assert isinstance([], collections.Sequence) and collections.Mapping
        assert [str(w.message).split(' ')[0] for w in caught] == ['collections.Mapping',
                                                                   'collections.Sequence']
        with pytest.raises(AttributeError):
            collections.NoSuchName
    finally:
        compat.uninstall()
    with pytest.raises(AttributeError):
        collections.Mapping

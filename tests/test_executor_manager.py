"""mx.executor_manager: data-parallel executor groups and the manager of the old training loop."""
import logging

import numpy as np
import pytest

import mxtorch as mx
from mxtorch import executor_manager as em

IN, HIDDEN, CLASSES = 4, 5, 3


def _mlp():
    data = mx.sym.Variable('data')
    net = mx.sym.FullyConnected(data, num_hidden=HIDDEN, name='fc1')
    net = mx.sym.Activation(net, act_type='relu', name='relu1')
    net = mx.sym.FullyConnected(net, num_hidden=CLASSES, name='fc2')
    return mx.sym.SoftmaxOutput(net, name='softmax')


def _params(seed=1):
    rng = np.random.RandomState(seed)
    return {'fc1_weight': mx.nd.array(rng.randn(HIDDEN, IN)),
            'fc1_bias': mx.nd.array(rng.randn(HIDDEN) * 0.1),
            'fc2_weight': mx.nd.array(rng.randn(CLASSES, HIDDEN)),
            'fc2_bias': mx.nd.array(rng.randn(CLASSES) * 0.1)}


def _data(n, seed=0):
    rng = np.random.RandomState(seed)
    return rng.randn(n, IN).astype('float32'), (np.arange(n) % CLASSES).astype('float32')


def _manager(sym, ctx, train, **kwargs):
    args = sym.list_arguments()
    params = [n for n in args if n not in ('data', 'softmax_label')]
    return em.DataParallelExecutorManager(sym, ctx, train, args, params,
                                          sym.list_auxiliary_states(), **kwargs)


def test_split_input_slice():
    assert em._split_input_slice(5, [1, 1]) == [slice(0, 2), slice(2, 5)]
    assert em._split_input_slice(6, [1, 2]) == [slice(0, 2), slice(2, 6)]
    assert em._split_input_slice(7, [1, 1, 1]) == [slice(0, 2), slice(2, 4), slice(4, 7)]
    with pytest.raises(ValueError, match='Too many slices'):
        em._split_input_slice(2, [1, 1, 1])


def test_check_arguments():
    em._check_arguments(_mlp())
    with pytest.raises(ValueError, match=r'Find duplicated argument name "a", .*\[\'a\', \'a\'\]'):
        em._check_arguments(mx.sym.Variable('a') + mx.sym.Variable('a'))


def test_bind_exec_gradients_and_shared_parameters():
    sym = _mlp()
    shapes = {'data': (6, IN), 'softmax_label': (6,)}
    params = ['fc1_weight', 'fc1_bias', 'fc2_weight', 'fc2_bias']
    buffer = {}
    base = em._bind_exec(sym, mx.cpu(), shapes, params, need_grad=True,
                         shared_data_arrays=buffer)
    assert sorted(n for n, g in base.grad_dict.items() if g is not None) == sorted(params)
    assert {'data', 'softmax_label'} <= set(buffer)
    smaller = em._bind_exec(sym, mx.cpu(), {'data': (3, IN), 'softmax_label': (3,)}, params,
                            need_grad={'fc2_weight'}, base_exec=base, shared_data_arrays=buffer)
    assert smaller.arg_dict['fc1_weight'] is base.arg_dict['fc1_weight']
    assert smaller.grad_dict['fc2_weight'] is base.grad_dict['fc2_weight']
    assert smaller.grad_dict['fc1_weight'] is None
    assert smaller.arg_dict['data'].shape == (3, IN)
    smaller.arg_dict['data'][:] = 7.0                       # carved from the shared buffer
    assert base.arg_dict['data'].asnumpy()[0, 0] == 7.0
    no_grad = em._bind_exec(sym, mx.cpu(), shapes, params)
    assert all(g is None for g in no_grad.grad_dict.values())


def test_two_devices_reproduce_single_executor(caplog):
    x, y = _data(6)
    train = mx.io.NDArrayIter(x, y, batch_size=6)
    with caplog.at_level(logging.INFO):
        manager = _manager(_mlp(), [mx.cpu(0), mx.cpu(1)], train, work_load_list=[1, 2])
    assert 'Start training with [cpu(0), cpu(1)]' in caplog.text
    assert manager.slices == [slice(0, 2), slice(2, 6)]
    group = manager.execgrp
    assert group.data_names == ['data'] and group.label_names == ['softmax_label']
    assert group.param_names == ['fc1_weight', 'fc1_bias', 'fc2_weight', 'fc2_bias']
    assert [arr.shape for _, arr in group.data_arrays[0]] == [(2, IN), (4, IN)]
    manager.set_params(_params(), {})

    batch = next(iter(train))
    manager.load_data_batch(batch)
    for (part, arr) in group.data_arrays[0]:
        np.testing.assert_array_equal(arr.asnumpy(), x[part])
    for (part, arr) in group.label_arrays[0]:
        np.testing.assert_array_equal(arr.asnumpy(), y[part])
    manager.forward(is_train=True)
    manager.backward()

    single = _mlp().simple_bind(mx.cpu(), data=(6, IN), softmax_label=(6,))
    single.copy_params_from(_params())
    single.forward(is_train=True, data=mx.nd.array(x), softmax_label=mx.nd.array(y))
    single.backward()
    outputs = np.concatenate([e.outputs[0].asnumpy() for e in group.train_execs])
    np.testing.assert_allclose(outputs, single.outputs[0].asnumpy(), rtol=1e-5, atol=1e-6)
    for name, grads in zip(group.param_names, manager.grad_arrays):
        assert len(grads) == 2
        np.testing.assert_allclose(sum(g.asnumpy() for g in grads),
                                   single.grad_dict[name].asnumpy(), rtol=1e-5, atol=1e-5)

    metric = mx.metric.Accuracy()
    manager.update_metric(metric, batch.label)
    expected = (single.outputs[0].asnumpy().argmax(axis=1) == y).mean()
    assert metric.num_inst == 6 and metric.get()[1] == pytest.approx(expected)
    metric.reset()
    manager.update_metric(metric, [[mx.nd.array(y[:2])], [mx.nd.array(y[2:])]],
                          pre_sliced=True)
    assert metric.num_inst == 6 and metric.get()[1] == pytest.approx(expected)


def test_load_data_batch_checks_batch_size():
    x, y = _data(6)
    manager = _manager(_mlp(), [mx.cpu(0), mx.cpu(1)], mx.io.NDArrayIter(x, y, batch_size=6))
    with pytest.raises(AssertionError, match='Batch size miss match. Expected 6, got 5'):
        manager.load_data_batch(mx.io.DataBatch([mx.nd.ones((5, IN))], [mx.nd.ones((5,))]))


def test_work_load_list_length():
    x, y = _data(6)
    with pytest.raises(ValueError, match='work_load_list'):
        _manager(_mlp(), [mx.cpu(0), mx.cpu(1)], mx.io.NDArrayIter(x, y, batch_size=6),
                 work_load_list=[1])


def test_copy_to_averages_devices():
    x, y = _data(4)
    sym = mx.sym.BatchNorm(mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2,
                                                 name='fc'), name='bn')
    train = mx.io.NDArrayIter(x, None, batch_size=4)
    args = sym.list_arguments()
    manager = em.DataParallelExecutorManager(sym, [mx.cpu(0), mx.cpu(1)], train, args,
                                             args[1:], sym.list_auxiliary_states())
    assert manager.aux_names == ['bn_moving_mean', 'bn_moving_var']
    for k, (weights, auxes) in enumerate(zip(zip(*manager.param_arrays),
                                             zip(*manager.aux_arrays))):
        for arr in weights + auxes:
            arr[:] = float(k + 1)
    arg_params = {name: mx.nd.zeros(block[0].shape, dtype='float64')
                  for name, block in zip(manager.param_names, manager.param_arrays)}
    aux_params = {name: mx.nd.zeros(block[0].shape)
                  for name, block in zip(manager.aux_names, manager.aux_arrays)}
    targets = dict(arg_params)
    manager.copy_to(arg_params, aux_params)
    for name, arr in list(arg_params.items()) + list(aux_params.items()):
        np.testing.assert_array_equal(arr.asnumpy(), np.full(arr.shape, 1.5))
    assert all(arg_params[n] is targets[n] for n in targets)     # updated in place
    assert arg_params['fc_weight'].dtype == np.float64


def test_seed_page_executor_example_through_manager():
    """The Executor example of the API page (FC -> relu -> SoftmaxOutput), run by a manager."""
    net = mx.sym.Variable('data')
    net = mx.sym.FullyConnected(net, name='fc', num_hidden=6)
    net = mx.sym.Activation(net, name='relu', act_type='relu')
    net = mx.sym.SoftmaxOutput(net, name='softmax')
    train = mx.io.NDArrayIter(mx.nd.ones((1, 4)), mx.nd.ones((1,)), batch_size=1)
    manager = _manager(net, [mx.cpu()], train)
    manager.set_params({'fc_weight': mx.nd.ones((6, 4)),
                        'fc_bias': mx.nd.array((1, 4, 4, 4, 5, 6))}, {})
    manager.load_data_batch(next(iter(train)))
    manager.forward(is_train=True)
    manager.backward()
    out = manager.curr_execgrp.train_execs[0].outputs[0].asnumpy()
    probs = [0.00378404, 0.07600445, 0.07600445, 0.07600445, 0.20660152, 0.5616011]
    np.testing.assert_allclose(out, [probs], rtol=1e-5)
    expected_grad = np.array(probs) - np.eye(6)[1]
    np.testing.assert_allclose(manager.grad_arrays[0][0].asnumpy(),
                               np.repeat(expected_grad[:, None], 4, axis=1), rtol=1e-5)


def test_feedforward_style_training_loop():
    """set_params, then per batch load/forward/backward, an updater over every device, and
    copy_to: two devices train exactly as one."""
    x, y = _data(12)
    finals = []
    for ctx in ([mx.cpu(0)], [mx.cpu(0), mx.cpu(1)]):
        train = mx.io.NDArrayIter(x, y, batch_size=6)
        manager = _manager(_mlp(), ctx, train)
        manager.set_params(_params(), {})
        updater = mx.optimizer.get_updater(
            mx.optimizer.create('sgd', learning_rate=0.1, rescale_grad=1.0 / 6))
        metric = mx.metric.Accuracy()
        for _ in range(2):
            train.reset()
            for batch in train:
                manager.load_data_batch(batch)
                manager.forward(is_train=True)
                manager.backward()
                for index, (weights, grads) in enumerate(zip(manager.param_arrays,
                                                              manager.grad_arrays)):
                    total = sum(g.copyto(mx.cpu()) for g in grads)
                    for k, w in enumerate(weights):
                        updater(index * len(ctx) + k, total.copyto(w.context), w)
                manager.update_metric(metric, batch.label)
        params = {k: mx.nd.zeros(v.shape) for k, v in _params().items()}
        manager.copy_to(params, {})
        finals.append(({k: v.asnumpy() for k, v in params.items()}, metric.get()))
    (one, metric_one), (two, metric_two) = finals
    assert metric_one == metric_two
    for name in one:
        assert not np.allclose(one[name], _params()[name].asnumpy())
        np.testing.assert_allclose(two[name], one[name], rtol=1e-5, atol=1e-5)


class _BucketIter:
    """What the manager reads from a bucketing iterator: shapes of the default bucket."""
    batch_size = 4
    default_bucket_key = 5
    provide_data = [mx.io.DataDesc('data', (4, 5, 2))]
    provide_label = [mx.io.DataDesc('softmax_label', (4,))]


def _bucket_sym(length):
    pooled = mx.sym.mean(mx.sym.Variable('data'), axis=1)
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(pooled, num_hidden=3, name='fc'),
                                name='softmax')


def _bucket_batch(length, rng):
    return mx.io.DataBatch([mx.nd.array(rng.randn(4, length, 2))], [mx.nd.array([0, 1, 2, 1])],
                           bucket_key=length,
                           provide_data=[mx.io.DataDesc('data', (4, length, 2))],
                           provide_label=[mx.io.DataDesc('softmax_label', (4,))])


def test_bucketing_shares_parameters(caplog):
    rng = np.random.RandomState(3)
    weight = rng.randn(3, 2).astype('float32')
    manager = _manager(_bucket_sym(5), [mx.cpu(0), mx.cpu(1)], _BucketIter(),
                       sym_gen=_bucket_sym)
    manager.set_params({'fc_weight': mx.nd.array(weight), 'fc_bias': mx.nd.zeros(3)}, {})

    for length in (5, 3, 7, 3):
        batch = _bucket_batch(length, rng)
        with caplog.at_level(logging.WARNING):
            manager.load_data_batch(batch)
        manager.forward(is_train=True)
        manager.backward()
        group = manager.execgrp_bucket[length]
        assert manager.curr_execgrp is group
        single = _bucket_sym(length).simple_bind(mx.cpu(), data=(4, length, 2))
        single.copy_params_from({'fc_weight': mx.nd.array(weight), 'fc_bias': mx.nd.zeros(3)})
        single.forward(is_train=True, data=batch.data[0], softmax_label=batch.label[0])
        single.backward()
        np.testing.assert_allclose(sum(g.asnumpy() for g in manager.grad_arrays[0]),
                                   single.grad_dict['fc_weight'].asnumpy(), rtol=1e-5,
                                   atol=1e-6)
    assert sorted(manager.execgrp_bucket) == [3, 5, 7]
    for group in manager.execgrp_bucket.values():
        for mine, shared in zip(group.param_arrays + group.grad_arrays,
                                manager.param_arrays + manager.grad_arrays):
            assert all(a is b for a, b in zip(mine, shared))
    # only the bucket larger than the default one needed new data arrays
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2 and all('"data"' in w and 'default_bucket_key' in w
                                      for w in warnings)

    manager.param_arrays[0][0][:] = 1.0          # shared: visible through every bucket
    assert manager.execgrp_bucket[3].train_execs[0].arg_dict['fc_weight'].asnumpy().min() == 1


def test_install_monitor_without_bucketing():
    class Recorder:
        def __init__(self):
            self.executors = []

        def install(self, executor):
            self.executors.append(executor)

    x, y = _data(4)
    manager = _manager(_mlp(), [mx.cpu(0), mx.cpu(1)], mx.io.NDArrayIter(x, y, batch_size=4))
    monitor = Recorder()
    manager.install_monitor(monitor)
    assert monitor.executors == manager.execgrp.train_execs


def test_install_monitor_with_bucketing():
    """The monitor watches every bucket's executors, those bound after install_monitor too,
    and reports the statistics of the bucket that ran."""
    rng = np.random.RandomState(4)
    manager = _manager(_bucket_sym(5), [mx.cpu(0), mx.cpu(1)], _BucketIter(),
                       sym_gen=_bucket_sym)
    weight = rng.randn(3, 2).astype('float32')
    manager.set_params({'fc_weight': mx.nd.array(weight), 'fc_bias': mx.nd.zeros(3)}, {})
    manager.load_data_batch(_bucket_batch(3, rng))          # a bucket bound before install
    monitor = mx.mon.Monitor(1, pattern='fc_output|data')
    manager.install_monitor(monitor)
    installed = manager.execgrp.train_execs + manager.execgrp_bucket[3].train_execs
    assert monitor.exes == installed
    batch = _bucket_batch(7, rng)                           # bound after install
    manager.load_data_batch(batch)
    assert monitor.exes == installed + manager.execgrp_bucket[7].train_execs
    monitor.tic()
    manager.forward(is_train=False)
    outputs = [(name, float(text.split()[0])) for _, name, text in monitor.toc()
               if name == 'fc_output']
    assert len(outputs) == 2                                # the two devices of bucket 7
    pooled = batch.data[0].asnumpy().mean(axis=1)
    fc = pooled @ weight.T
    expected = [np.sqrt(np.mean(fc[:2] ** 2)), np.sqrt(np.mean(fc[2:] ** 2))]
    np.testing.assert_allclose([v for _, v in outputs], expected, rtol=1e-5)

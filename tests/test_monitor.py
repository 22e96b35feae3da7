"""mx.monitor: step counting, the default norm(x)/sqrt(size) statistic against NumPy, pattern /
sort / monitor_all, the toc_print line format and Module.fit driving a Monitor."""
import logging

import numpy as np
import pytest

import mxtorch as mx
from mxtorch.monitor import Monitor


def rms(x):
    return np.linalg.norm(x.ravel()) / np.sqrt(x.size)


def net():
    data = mx.sym.var('data')
    fc = mx.sym.FullyConnected(data, num_hidden=3, name='fc')
    bn = mx.sym.BatchNorm(fc, name='bn')
    return mx.sym.Activation(bn, act_type='relu', name='act')


def bound(values):
    symbol = net()
    args = {name: mx.nd.array(values[name]) for name in symbol.list_arguments()}
    aux = {name: mx.nd.array(values[name]) for name in symbol.list_auxiliary_states()}
    return symbol.bind(mx.cpu(), args, aux_states=aux)


def random_values():
    rng = np.random.RandomState(1)
    return {'data': rng.randn(2, 4), 'fc_weight': rng.randn(3, 4), 'fc_bias': rng.randn(3),
            'bn_gamma': rng.rand(3) + .5, 'bn_beta': rng.randn(3),
            'bn_moving_mean': rng.randn(3), 'bn_moving_var': rng.rand(3) + .5}


def test_default_stat_matches_numpy_for_outputs_args_and_aux():
    values = {k: v.astype(np.float32) for k, v in random_values().items()}
    exe = bound(values)
    mon = Monitor(1)
    mon.install(exe)
    mon.tic()
    exe.forward()
    result = mon.toc()
    fc = values['data'] @ values['fc_weight'].T + values['fc_bias']
    # BatchNorm's defaults: fix_gamma (gamma taken as 1), eps 1e-3, moving statistics in inference
    bn = ((fc - values['bn_moving_mean']) / np.sqrt(values['bn_moving_var'] + 1e-3)
          + values['bn_beta'])
    # BatchNorm's hidden outputs too, as MXNet 1.9.1 reports them: in inference the moving
    # mean and 1/sqrt(moving var + eps)
    expected = {'fc_output': fc, 'bn_output': bn, 'act_output': np.maximum(bn, 0),
                'bn_mean': values['bn_moving_mean'],
                'bn_var': 1 / np.sqrt(values['bn_moving_var'] + 1e-3)}
    expected.update(values)
    # operator outputs in execution order, then arguments, then auxiliary states
    assert [name for _, name, _ in result] == ['fc_output', 'bn_output', 'bn_mean', 'bn_var',
                                               'act_output', 'data', 'fc_weight', 'fc_bias',
                                               'bn_gamma', 'bn_beta', 'bn_moving_mean',
                                               'bn_moving_var']
    for step, name, text in result:
        assert step == 1 and text.endswith('\t') and text.count('\t') == 1
        assert float(text) == pytest.approx(rms(expected[name]), rel=1e-5), name


def test_default_stat_is_a_shape_1_ndarray():
    stats = []
    mon = Monitor(1, stat_func=None)
    for array in [mx.nd.array([[3, 4], [0, 0]]), mx.nd.array([1, 2, 3], dtype='int32'),
                  mx.nd.array([1, 1], dtype='float64')]:
        stats.append(mon.stat_func(array))
    assert [s.shape for s in stats] == [(1,)] * 3
    assert [s.dtype for s in stats] == [np.float32, np.float32, np.float64]
    assert stats[0].asscalar() == 2.5                      # 5 / sqrt(4)
    assert stats[1].asscalar() == pytest.approx(np.sqrt(14 / 3))
    assert stats[2].asscalar() == 1.0


def test_interval_and_step_counting():
    exe = bound(random_values())
    mon = Monitor(2, pattern='fc_output')
    mon.install(exe)
    steps = []
    for _ in range(5):
        mon.tic()
        exe.forward()
        steps.append([step for step, _, _ in mon.toc()])
    # active on batches 0, 2, 4; reported with the step already incremented
    assert steps == [[1], [], [3], [], [5]]
    assert mon.toc() == []                                 # inactive after a toc


def test_pattern_is_matched_at_the_start_of_names():
    exe = bound(random_values())
    mon = Monitor(1, pattern='bn|.*weight')
    mon.install(exe)
    mon.tic()
    exe.forward()
    assert [name for _, name, _ in mon.toc()] == ['bn_output', 'bn_mean', 'bn_var', 'fc_weight',
                                                  'bn_gamma', 'bn_beta', 'bn_moving_mean',
                                                  'bn_moving_var']


def test_sort_orders_by_name():
    exe = bound(random_values())
    mon = Monitor(1, pattern='fc|act', sort=True)
    mon.install(exe)
    mon.tic()
    exe.forward()
    assert [name for _, name, _ in mon.toc()] == ['act_output', 'fc_bias', 'fc_output', 'fc_weight']


def test_monitor_all_adds_operator_inputs():
    exe = bound(random_values())
    mon = Monitor(1, pattern='fc_|act_', monitor_all=True)
    mon.install(exe)
    mon.tic()
    exe.forward()
    # as MXNet 1.9.1: variable inputs also under their own names, Activation's input is input0
    assert [name for _, name, _ in mon.toc()] == ['fc_data', 'fc_weight', 'fc_weight', 'fc_bias',
                                                  'fc_bias', 'fc_output', 'act_input0',
                                                  'act_output', 'fc_weight', 'fc_bias']


def test_stat_func_returning_several_arrays():
    exe = bound(random_values())
    mon = Monitor(1, stat_func=lambda x: [x.sum(), x[0]], pattern='fc_weight')
    mon.install(exe)
    mon.tic()
    exe.forward()
    weight = exe.arg_dict['fc_weight']
    text = '%s\t%s\t' % (weight.sum().asscalar(), weight[0].asnumpy())
    assert mon.toc() == [(1, 'fc_weight', text)]


def test_stat_func_must_give_ndarrays():
    exe = bound(random_values())
    mon = Monitor(1, stat_func=lambda x: 1.0, pattern='data')
    mon.install(exe)
    mon.tic()
    with pytest.raises(TypeError, match='stat_func must return an NDArray'):
        mon.toc()


def test_toc_print_lines(caplog):
    caplog.set_level(logging.INFO)
    symbol = mx.sym.Activation(mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3, name='fc'),
                               act_type='relu', name='relu')
    exe = symbol.bind(mx.cpu(), {'data': mx.nd.ones((2, 4)), 'fc_weight': mx.nd.full((3, 4), .25),
                                 'fc_bias': mx.nd.zeros((3,))})
    mon = Monitor(1)
    mon.install(exe)
    mon.tic()
    exe.forward()
    mon.toc_print()
    assert [r.name for r in caplog.records] == ['root'] * 5
    assert caplog.messages == ['Batch:       1 fc_output                      1.0\t',
                               'Batch:       1 relu_output                    1.0\t',
                               'Batch:       1 data                           1.0\t',
                               'Batch:       1 fc_weight                      0.25\t',
                               'Batch:       1 fc_bias                        0.0\t']


def test_fit_ticks_and_prints(caplog):
    caplog.set_level(logging.INFO)
    rng = np.random.RandomState(0)
    train = mx.io.NDArrayIter(rng.rand(16, 4), rng.randint(0, 3, 16), batch_size=4)
    symbol = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3,
                                                        name='fc'), name='softmax')
    mod = mx.mod.Module(symbol, context=mx.cpu())
    mon = Monitor(3, pattern='fc_weight|softmax_output')
    mod.fit(train, num_epoch=2, monitor=mon, optimizer_params={'learning_rate': 0.1})
    lines = [m.split() for m in caplog.messages if m.startswith('Batch:')]
    # 8 batches: active on steps 1, 4, 7 (batches 0, 3, 6)
    assert [(step, name) for _, step, name, _ in lines] == [
        ('1', 'softmax_output'), ('1', 'fc_weight'), ('4', 'softmax_output'), ('4', 'fc_weight'),
        ('7', 'softmax_output'), ('7', 'fc_weight')]
    assert lines[1][3] != lines[5][3]                     # the weight trained in between
    for _, _, name, value in lines[::2]:                  # 4 rows of 3 probabilities
        assert 1 / 3 - 1e-6 <= float(value) <= np.sqrt(1 / 3)


def test_hidden_outputs_are_reported_like_mxnet():
    # the names MXNet 1.9.1's executor gives its monitor callback for this graph, in both modes
    x = mx.sym.Variable('data')
    y = mx.sym.BatchNorm(x, name='bn')
    y = mx.sym.Dropout(y, p=0.5, name='dr')
    y = mx.sym.Pooling(y, kernel=(1, 1), pool_type='max', name='pool')
    y = mx.sym.LRN(y, nsize=3, name='lrn')
    exe = y.simple_bind(mx.cpu(), data=(2, 3, 2, 2))
    exe.arg_dict['data'][:] = np.random.RandomState(0).randn(2, 3, 2, 2)
    exe.arg_dict['bn_gamma'][:] = 1
    seen = []
    exe.set_monitor_callback(lambda name, array: seen.append((name, array.asnumpy())))
    for is_train in (False, True):
        seen.clear()
        exe.forward(is_train=is_train)
        assert [name for name, _ in seen] == [
            'bn_output', 'bn_mean', 'bn_var', 'dr_output', 'dr_mask', 'pool_output',
            'pool_workspace', 'lrn_output', 'lrn_tmp_norm']
    values = dict(seen)
    data = exe.arg_dict['data'].asnumpy()
    np.testing.assert_allclose(values['bn_mean'], data.mean(axis=(0, 2, 3)), rtol=1e-5, atol=1e-6)
    # Dropout's mask in training: 0 or 1/(1-p), and the output is the input times it
    assert set(np.unique(values['dr_mask'])) <= {0.0, 2.0}
    np.testing.assert_allclose(values['dr_output'], values['bn_output'] * values['dr_mask'],
                               rtol=1e-6)


def test_backward_node_outputs_are_reported_like_mxnet():
    """A monitored training step also reports each node's backward outputs, named and ordered
    as MXNet 1.9.1 does (names taken from MXNet), holding this node's input gradients."""
    rs = np.random.RandomState(0)
    data = mx.sym.Variable('data')
    net = mx.sym.FullyConnected(data, num_hidden=8, name='fc1')
    net = mx.sym.Activation(net, act_type='relu', name='relu1')
    net = mx.sym.FullyConnected(net, num_hidden=3, name='fc2')
    net = mx.sym.SoftmaxOutput(net, name='softmax')
    mod = mx.mod.Module(net)
    mod.bind(data_shapes=[('data', (4, 5))], label_shapes=[('softmax_label', (4,))])
    params = {'fc1_weight': rs.uniform(-.5, .5, (8, 5)), 'fc1_bias': rs.uniform(-.5, .5, 8),
              'fc2_weight': rs.uniform(-.5, .5, (3, 8)), 'fc2_bias': rs.uniform(-.5, .5, 3)}
    mod.init_params(arg_params={k: mx.nd.array(v) for k, v in params.items()})
    x, label = rs.uniform(-1, 1, (4, 5)), np.array([0, 1, 2, 0])
    mon = Monitor(1, stat_func=lambda a: a.copy())
    mod.install_monitor(mon)
    mon.tic()
    mod.forward_backward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(label)]))
    got = {name: arr for _, name, arr in mon.queue}
    names = [name for _, name, _ in mon.toc()]
    assert names == ['fc1_output', 'relu1_output', 'fc2_output', 'softmax_output',
                     'softmax_backward_output0', 'softmax_backward_output1',
                     'fc2_backward_output0', 'fc2_backward_output1', 'fc2_backward_output2',
                     'relu1_backward_output', 'fc1_backward_output0', 'fc1_backward_output1',
                     'fc1_backward_output2', 'data', 'fc1_weight', 'fc1_bias', 'fc2_weight',
                     'fc2_bias', 'softmax_label']
    # NumPy: forward, then each node's input gradients
    h = x @ params['fc1_weight'].T + params['fc1_bias']
    r = np.maximum(h, 0)
    z = r @ params['fc2_weight'].T + params['fc2_bias']
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    dz = p - np.eye(3)[label]
    dr = dz @ params['fc2_weight']
    dh = dr * (h > 0)
    expect = {'softmax_backward_output0': dz, 'softmax_backward_output1': np.zeros(4),
              'fc2_backward_output0': dr, 'fc2_backward_output1': dz.T @ r,
              'fc2_backward_output2': dz.sum(0), 'relu1_backward_output': dh,
              'fc1_backward_output0': dh @ params['fc1_weight'],
              'fc1_backward_output1': dh.T @ x, 'fc1_backward_output2': dh.sum(0)}
    for name, value in expect.items():
        np.testing.assert_allclose(got[name].asnumpy(), value, rtol=1e-5, atol=1e-6,
                                   err_msg=name)
    # the gradients the module computes are unchanged by the monitoring
    np.testing.assert_allclose(mod._exec_group.execs[0].grad_dict['fc1_weight'].asnumpy(),
                               dh.T @ x, rtol=1e-5, atol=1e-6)


def test_no_backward_node_where_mxnet_clones_the_gradient():
    """elemwise_add hands its head gradient to both inputs without a backward node in MXNet, so
    the monitor reports none for it; its neighbours still are."""
    a, b = mx.sym.Variable('a'), mx.sym.Variable('b')
    net = mx.sym.MakeLoss(mx.sym.sum(mx.sym.elemwise_add(a * 2, b, name='add'), name='s'),
                          name='loss')
    exe = net.simple_bind(mx.cpu(), a=(3,), b=(3,))
    mon = Monitor(1, stat_func=lambda x: x.copy())
    mon.install(exe)
    mon.tic()
    exe.forward(is_train=True)
    exe.backward()
    got = {name: arr.asnumpy() for _, name, arr in mon.queue}
    backward = [n for _, n, _ in mon.queue if '_backward' in n]
    assert not any(n.startswith('add_backward') for n in backward), backward
    assert any(n.startswith('s_backward') for n in backward), backward
    np.testing.assert_allclose(exe.grad_dict['a'].asnumpy(), [2, 2, 2])
    assert all(np.all(np.isfinite(v)) for v in got.values())


def test_raw_monitor_callback_gets_mxnet_name_and_handle():
    """Executor.set_monitor_callback follows MXNet's protocol: a name and an NDArrayHandle that
    NDArray(ctypes.cast(handle, NDArrayHandle)) turns into the array."""
    import ctypes
    from mxtorch.base import NDArrayHandle, py_str
    seen = {}

    def callback(name, handle):
        arr = mx.nd.NDArray(ctypes.cast(handle, NDArrayHandle), writable=False)
        seen[py_str(name)] = arr.asnumpy()

    data = mx.sym.Variable('data')
    net = mx.sym.FullyConnected(data, num_hidden=2, no_bias=True, name='fc')
    exe = net.simple_bind(mx.cpu(), data=(1, 3), grad_req='null')
    exe.arg_dict['data'][:] = mx.nd.array([[1, 2, 3]])
    exe.arg_dict['fc_weight'][:] = mx.nd.array([[1, 0, 0], [0, 1, 1]])
    exe.set_monitor_callback(callback, monitor_all=True)
    exe.forward()
    np.testing.assert_allclose(seen['fc_output'], [[1, 5]])
    np.testing.assert_allclose(seen['fc_data'], [[1, 2, 3]])
    from mxtorch import capi
    assert not capi._arrays                      # every lent handle was taken or released

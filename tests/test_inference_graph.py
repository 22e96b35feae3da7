"""Inference forwards replayed as one traced graph (mxtorch/inference_graph.py): the graph is
used once the kept values settle, follows parameter and data changes, and is refused where the
Python reads tensor values or shapes depend on values."""
import numpy as np
import pytest

import mxtorch as mx
from mxtorch import inference_graph


def _bind(out, **shapes):
    exe = out.simple_bind(mx.cpu(), grad_req='null', **shapes)
    rng = np.random.RandomState(0)
    for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
        arr[:] = rng.uniform(0.5, 1.5, arr.shape) if 'var' in name else rng.randn(*arr.shape)
    return exe


def _net():
    data = mx.sym.Variable('data')
    x = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=4, name='c1')
    x = mx.sym.Activation(mx.sym.BatchNorm(x, fix_gamma=False, name='bn1'), act_type='relu')
    x = mx.sym.Activation(mx.sym.BatchNorm(x, fix_gamma=False, name='bn2'), act_type='relu')
    return mx.sym.FullyConnected(mx.sym.Flatten(x), num_hidden=3, name='fc')


def _expected(exe):
    """The same network, imperatively (no plan, no fusion)."""
    a = {k: v for k, v in list(exe.arg_dict.items()) + list(exe.aux_dict.items())}
    x = mx.nd.Convolution(a['data'], a['c1_weight'], a['c1_bias'], kernel=(3, 3), pad=(1, 1),
                          num_filter=4)
    for bn in ('bn1', 'bn2'):
        x = mx.nd.relu(mx.nd.BatchNorm(x, a[bn + '_gamma'], a[bn + '_beta'],
                                       a[bn + '_moving_mean'], a[bn + '_moving_var'],
                                       fix_gamma=False))
    return mx.nd.FullyConnected(mx.nd.Flatten(x), a['fc_weight'], a['fc_bias'],
                                num_hidden=3).asnumpy()


def test_graph_follows_data_and_parameter_changes():
    exe = _bind(_net(), data=(2, 3, 5, 5))
    rng = np.random.RandomState(1)
    for step in range(8):
        exe.arg_dict['data'][:] = rng.randn(2, 3, 5, 5)
        if step == 5:                                 # in place: folded weights must follow
            exe.arg_dict['c1_weight'][:] *= -2
            exe.aux_dict['bn2_moving_var'][:] = 3.0
        np.testing.assert_allclose(exe.forward()[0].asnumpy(), _expected(exe),
                                   rtol=1e-4, atol=1e-5)
    forward = exe._inference()
    assert isinstance(forward, inference_graph.GraphForward)
    assert forward.refused is None
    for _ in range(4):                                # traced again after the change
        exe.forward()
    assert forward.graph is not None
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), _expected(exe), rtol=1e-4, atol=1e-5)


def test_python_reading_values_or_value_shaped_outputs_stay_eager():
    data, mask = mx.sym.Variable('data'), mx.sym.Variable('mask')
    picked = mx.sym.contrib.boolean_mask(data, mask)       # its row count depends on the mask
    exe = _bind(mx.sym.sum(picked * 2), data=(4, 3), mask=(4,))
    for k in range(6):
        m = np.array([1, 0, 1, 1], 'float32') if k % 2 else np.array([0, 1, 0, 0], 'float32')
        exe.arg_dict['mask'][:] = m
        d = exe.arg_dict['data'].asnumpy()
        np.testing.assert_allclose(exe.forward()[0].asnumpy(), [2 * d[m > 0].sum()], rtol=1e-5)
    forward = exe._inference()
    assert forward.graph is None and forward.refused


def test_switched_off(monkeypatch):
    monkeypatch.setenv('MXTORCH_GRAPH', '0')
    exe = _bind(_net(), data=(2, 3, 5, 5))
    for _ in range(4):
        exe.forward()
    assert not isinstance(exe._inference(), inference_graph.GraphForward)
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), _expected(exe), rtol=1e-4, atol=1e-5)


def test_index_checks_stay_in_the_graph():
    data, indices = mx.sym.Variable('data'), mx.sym.Variable('indices')
    exe = _bind(mx.sym.gather_nd(data, indices) * 2, data=(3, 4), indices=(2, 2))
    exe.arg_dict['indices'][:] = np.array([[0, 2], [1, -1]])
    rng = np.random.RandomState(2)
    for _ in range(5):                                # new data each call: nothing kept
        d = rng.randn(3, 4)
        exe.arg_dict['data'][:] = d
        np.testing.assert_allclose(exe.forward()[0].asnumpy(), 2 * d[[0, 2], [1, 3]],
                                   rtol=1e-6)
    assert exe._inference().graph is not None
    exe.arg_dict['indices'][:] = np.array([[0, 3], [1, 0]])           # row 3 of 3
    with pytest.raises((mx.MXNetError, IndexError)):
        exe.forward()
        exe.outputs[0].asnumpy()

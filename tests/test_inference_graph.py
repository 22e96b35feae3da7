"""Inference forwards replayed as one traced graph (mxtorch/inference_graph.py): the graph is
used once the kept values settle, follows parameter and data changes, and is refused where the
Python reads tensor values or shapes depend on values."""
import numpy as np
import pytest
import torch

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


def test_graph_follows_data_and_parameter_changes(monkeypatch):
    monkeypatch.setenv('MXTORCH_ONEDNN_GRAPH', '0')       # PyTorch's graph (oneDNN's: below)
    monkeypatch.setattr(inference_graph, 'PER_STEP_SECONDS', 1.0)   # (however busy the CPU)
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
    for _ in range(10):                     # traced again after the change (and timed)
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


@pytest.mark.parametrize('onednn_graph', ['0', 'always'])
def test_operators_reading_values_run_as_opaque_calls_in_the_graph(monkeypatch, onednn_graph):
    """box_nms decides in Python which boxes to keep (OpDef.reads_values): the graph records it
    as one opaque call, so the graph is used and each call's suppression follows its own data
    (boxes that overlapped when traced no longer do, and the other way round)."""
    monkeypatch.setenv('MXTORCH_ONEDNN_GRAPH', onednn_graph)
    monkeypatch.setattr(inference_graph, 'PER_STEP_SECONDS', 1.0)
    data = mx.sym.Variable('data')
    scored = mx.sym.concat(mx.sym.sigmoid(mx.sym.slice_axis(data, axis=2, begin=0, end=1)),
                           mx.sym.slice_axis(data, axis=2, begin=1, end=5) * 2, dim=2)
    out = mx.sym.contrib.box_nms(scored, overlap_thresh=0.5, coord_start=1, score_index=0,
                                 topk=4)
    exe = _bind(out, data=(2, 6, 5))
    rng = np.random.RandomState(3)

    def boxes(spread):
        corner = rng.uniform(0, 1, (2, 6, 2)) * spread
        size = rng.uniform(1, 2, (2, 6, 2))
        return np.concatenate([rng.randn(2, 6, 1), corner, corner + size], 2) / 2

    for step in range(12):
        exe.arg_dict['data'][:] = boxes(0.2 if step % 2 else 8.0)   # overlapping or apart
        d = exe.arg_dict['data']
        x = mx.nd.concat(mx.nd.sigmoid(d[:, :, :1]), d[:, :, 1:] * 2, dim=2)
        want = mx.nd.contrib.box_nms(x, overlap_thresh=0.5, coord_start=1, score_index=0,
                                     topk=4).asnumpy()
        np.testing.assert_allclose(exe.forward()[0].asnumpy(), want, rtol=1e-5, atol=1e-6)
    forward = exe._inference()
    assert forward.refused is None and forward.graph is not None
    assert forward.used + len(forward.trial or ()) > 0         # calls the graph ran (timed or not)
    kept = (want[..., 0] != -1).sum(1)
    assert 0 < kept.min() and kept.max() <= 4


def test_repeat_by_a_number_is_traced(monkeypatch):
    """repeat (torch's repeat_interleave by a number of repeats) has an output shape that
    follows from its input's: unlike repeat_interleave by a tensor, it stays in the graph."""
    monkeypatch.setenv('MXTORCH_ONEDNN_GRAPH', '0')
    monkeypatch.setattr(inference_graph, 'PER_STEP_SECONDS', 1.0)
    exe = _bind(mx.sym.repeat(mx.sym.Variable('data') * 3, repeats=2, axis=1), data=(2, 3))
    rng = np.random.RandomState(2)
    for _ in range(8):
        d = rng.randn(2, 3).astype('float32')
        exe.arg_dict['data'][:] = d
        np.testing.assert_allclose(exe.forward()[0].asnumpy(), np.repeat(d * 3, 2, axis=1),
                                   rtol=1e-6)
    forward = exe._inference()
    assert forward.refused is None and forward.graph is not None


def test_switched_off(monkeypatch):
    monkeypatch.setenv('MXTORCH_GRAPH', '0')
    exe = _bind(_net(), data=(2, 3, 5, 5))
    for _ in range(4):
        exe.forward()
    assert not isinstance(exe._inference(), inference_graph.GraphForward)
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), _expected(exe), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize('onednn_graph', ['0', 'always'])
def test_index_checks_stay_in_the_graph(monkeypatch, onednn_graph):
    monkeypatch.setenv('MXTORCH_ONEDNN_GRAPH', onednn_graph)
    monkeypatch.setattr(inference_graph, 'PER_STEP_SECONDS', 1.0)
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


# ---------------------------------------------------------------------------------------------
# oneDNN Graph (the second kind of graph, on CPU)
# ---------------------------------------------------------------------------------------------
onednn = pytest.mark.skipif(not inference_graph.onednn_graph_available(),
                            reason='this PyTorch has no oneDNN Graph fuser')


def _conv_net():
    """Every fused step kind: conv+BN+ReLU, depthwise conv+BN+clip (ReLU6), conv+sum+ReLU, a
    BatchNorm no convolution takes (+ReLU), a Deconvolution, max pooling, FullyConnected."""
    data = mx.sym.Variable('data')
    x = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=8, name='c1')
    x = mx.sym.Activation(mx.sym.BatchNorm(x, fix_gamma=False, name='bn1'), act_type='relu')
    y = mx.sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=8, num_group=8,
                           no_bias=True, name='dw')
    y = mx.sym.clip(mx.sym.BatchNorm(y, fix_gamma=False, name='bn2'), 0, 6)
    y = mx.sym.Convolution(y, kernel=(1, 1), num_filter=8, name='pw')
    z = mx.sym.Activation(y + x, act_type='relu')
    z = mx.sym.Activation(mx.sym.BatchNorm(mx.sym.Pooling(z, kernel=(2, 2), stride=(2, 2),
                                                          pool_type='max'),
                                           fix_gamma=False, name='bn3'), act_type='relu')
    z = mx.sym.Deconvolution(z, kernel=(4, 4), stride=(2, 2), pad=(1, 1), num_filter=4,
                             no_bias=False, name='up')
    return mx.sym.FullyConnected(mx.sym.Flatten(z), num_hidden=5, name='fc')


def _conv_expected(exe):
    """_conv_net imperatively (each operator on its own: no plan, no fusion, no graph)."""
    a = {k: v for k, v in list(exe.arg_dict.items()) + list(exe.aux_dict.items())}

    def bn(x, name):
        return mx.nd.BatchNorm(x, a[name + '_gamma'], a[name + '_beta'], a[name + '_moving_mean'],
                               a[name + '_moving_var'], fix_gamma=False)
    x = mx.nd.Convolution(a['data'], a['c1_weight'], a['c1_bias'], kernel=(3, 3), pad=(1, 1),
                          num_filter=8)
    x = mx.nd.relu(bn(x, 'bn1'))
    y = mx.nd.Convolution(x, a['dw_weight'], kernel=(3, 3), pad=(1, 1), num_filter=8,
                          num_group=8, no_bias=True)
    y = mx.nd.clip(bn(y, 'bn2'), 0, 6)
    y = mx.nd.Convolution(y, a['pw_weight'], a['pw_bias'], kernel=(1, 1), num_filter=8)
    z = mx.nd.relu(y + x)
    z = mx.nd.relu(bn(mx.nd.Pooling(z, kernel=(2, 2), stride=(2, 2), pool_type='max'), 'bn3'))
    z = mx.nd.Deconvolution(z, a['up_weight'], a['up_bias'], kernel=(4, 4), stride=(2, 2),
                            pad=(1, 1), num_filter=4, no_bias=False)
    return mx.nd.FullyConnected(mx.nd.Flatten(z), a['fc_weight'], a['fc_bias'],
                                num_hidden=5).asnumpy()


@onednn
def test_onednn_graph_follows_data_and_parameter_changes(monkeypatch):
    monkeypatch.setenv('MXTORCH_ONEDNN_GRAPH', 'always')     # kept where valid, untimed
    exe = _bind(_conv_net(), data=(2, 3, 8, 8))
    forward = exe._inference()
    rng = np.random.RandomState(3)
    for step in range(14):
        if step != 4:                                 # (call 4: the same data again)
            exe.arg_dict['data'][:] = rng.randn(2, 3, 8, 8)
        if step == 9:                                 # in place: the graph's constants follow
            exe.arg_dict['pw_weight'][:] *= -0.5
            exe.aux_dict['bn3_moving_mean'][:] = 0.25
            exe.arg_dict['up_bias'][:] = 1.0
        np.testing.assert_allclose(exe.forward()[0].asnumpy(), _conv_expected(exe),
                                   rtol=1e-4, atol=1e-4)
        if step == 8:
            assert forward.graph is not None and forward.graph.kind == 'onednn', \
                (forward.refused, forward.onednn_refused)
            names = list(exe.arg_dict) + list(exe.aux_dict)
            # the data is the graph's one input, the parameters are its constants; the
            # Deconvolution's packed weight (oneDNN's layout, no constant of a graph) follows
            assert [names[i] for i in forward.graph.live] == ['data']
            assert [t.layout == torch.strided for t in forward.graph.extras] == [False]
    assert forward.graph is not None and forward.graph.kind == 'onednn'   # traced again


@onednn
def test_onednn_graph_holds_stable_inputs_until_they_change(monkeypatch):
    """An input unchanged over the eager calls (here the data) is a constant of the graph,
    guarded: changed, the eager function runs and the graph is traced again with it live."""
    monkeypatch.setenv('MXTORCH_ONEDNN_GRAPH', 'always')
    exe = _bind(_conv_net(), data=(2, 3, 8, 8))
    forward = exe._inference()
    for _ in range(6):
        np.testing.assert_allclose(exe.forward()[0].asnumpy(), _conv_expected(exe),
                                   rtol=1e-4, atol=1e-4)
    assert forward.graph.kind == 'onednn' and forward.graph.live == []
    rng = np.random.RandomState(4)
    for _ in range(6):
        exe.arg_dict['data'][:] = rng.randn(2, 3, 8, 8)
        np.testing.assert_allclose(exe.forward()[0].asnumpy(), _conv_expected(exe),
                                   rtol=1e-4, atol=1e-4)
    assert forward.graph.kind == 'onednn' and forward.graph.live == [0]


def _timed_run(monkeypatch, costs):
    """Binds _conv_net with a fake clock under which a graph of kind k takes costs[k] seconds
    a call and the eager function costs['eager']; runs it until the choice is made."""
    clock = {'now': 0.0}
    monkeypatch.setattr(inference_graph.time, 'thread_time', lambda: clock['now'])
    monkeypatch.setattr(inference_graph, 'TIMED_SECONDS', 0.0)      # TIMED_CALLS calls each
    real_call = inference_graph._Graph.__call__

    def call(self, inputs):
        clock['now'] += costs[self.kind]
        return real_call(self, inputs)
    monkeypatch.setattr(inference_graph._Graph, '__call__', call)
    exe = _bind(_conv_net(), data=(2, 3, 8, 8))
    forward = exe._inference()
    eager = forward.eager

    def timed_eager(*inputs):
        clock['now'] += costs['eager']
        return eager(*inputs)
    forward.eager = timed_eager
    for _ in range(16):
        np.testing.assert_allclose(exe.forward()[0].asnumpy(), _conv_expected(exe),
                                   rtol=1e-4, atol=1e-4)
    return forward


@onednn
@pytest.mark.parametrize('costs, kept', [
    ({'eager': 1e-4, 'torch': 2e-5, 'onednn': 1e-5}, 'onednn'),
    ({'eager': 1e-4, 'torch': 1e-5, 'onednn': 2e-5}, 'torch'),
    ({'eager': 2.5, 'torch': 0, 'onednn': 1.0}, 'onednn'),      # too slow for PyTorch's graph
    ({'eager': 0.5, 'torch': 0, 'onednn': 2.0}, None)])         # (the eager function wins)
def test_the_faster_graph_is_kept(monkeypatch, costs, kept):
    monkeypatch.setattr(inference_graph, 'MAX_SECONDS', 5.0)
    forward = _timed_run(monkeypatch, costs)
    assert forward.trial is None and forward.pending is None
    if kept is None:
        assert forward.graph is None and 'eager' in forward.refused
    else:
        assert forward.graph is not None and forward.graph.kind == kept
        assert forward.choice == kept


@onednn
def test_a_failed_onednn_graph_leaves_pytorchs(monkeypatch):
    def fail(fn, args):
        raise RuntimeError('could not add op to the graph')
    monkeypatch.setattr(inference_graph, '_onednn_compile', fail)
    forward = _timed_run(monkeypatch, {'eager': 1e-4, 'torch': 2e-5, 'onednn': 1e-5})
    assert forward.graph.kind == 'torch' and 'could not add op' in forward.onednn_refused


def test_onednn_graph_switched_off(monkeypatch):
    monkeypatch.setenv('MXTORCH_ONEDNN_GRAPH', '0')
    exe = _bind(_conv_net(), data=(2, 3, 8, 8))
    for _ in range(12):
        np.testing.assert_allclose(exe.forward()[0].asnumpy(), _conv_expected(exe),
                                   rtol=1e-4, atol=1e-4)
    forward = exe._inference()
    assert forward.graph is not None and forward.graph.kind == 'torch'

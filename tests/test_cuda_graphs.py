"""cuda_graphs.py: the traced training call replayed over static tensors. On a machine without a
GPU the capture itself is stood in for by StandInGraph, which records the function and, at each
replay, runs it again and writes its results into the tensors the capture returned, as a CUDA
graph's replay rewrites its own memory: what these tests check is everything around the
capture (static inputs and head gradients, borrowed results copied out before the next replay,
statistics, grad_req, devices, buckets), against the eager executor's numbers."""
import numpy as np
import pytest
import torch

import mxtorch as mx
from mxtorch import cuda_graphs
from mxtorch import joint
from test_train_step import _bucketing_run


class StandInGraph:
    """capture(fn) / replay() as cuda_graphs.CudaGraph, run eagerly (see the module docstring)."""
    captures = []

    def __init__(self, pool=None):
        self.pool = pool
        self.replays = 0

    def capture(self, fn):
        self._fn = fn
        self._out = fn()
        StandInGraph.captures.append(self)
        return self._out

    def replay(self):
        self.replays += 1
        _write_into(self._out, self._fn())


def _write_into(static, fresh):
    if isinstance(static, torch.Tensor):
        if static is not fresh:
            static.copy_(fresh)
    elif isinstance(static, (list, tuple)):
        for a, b in zip(static, fresh):
            _write_into(a, b)


@pytest.fixture
def captured(monkeypatch):
    """Capture the traced calls of CPU executors made from now on (with StandInGraph)."""
    monkeypatch.setattr(joint, 'KEEP_BELOW', float('inf'))   # (not subject to timing)
    monkeypatch.setattr(cuda_graphs, 'enabled', lambda device: True)
    monkeypatch.setattr(cuda_graphs, 'CudaGraph', StandInGraph)
    StandInGraph.captures = []
    return StandInGraph.captures


def _net(bn=False):
    x = mx.sym.Variable('data')
    x = mx.sym.FullyConnected(x, num_hidden=16, name='fc1')
    if bn:
        x = mx.sym.BatchNorm(x, fix_gamma=False, name='bn1')
    x = mx.sym.Activation(x, act_type='relu')
    x = mx.sym.FullyConnected(x, num_hidden=4, name='fc2')
    return mx.sym.SoftmaxOutput(x, name='softmax')


def _batches(n, batch=8):
    rng = np.random.RandomState(1)
    return [mx.io.DataBatch([mx.nd.array(rng.randn(batch, 6))],
                            [mx.nd.array(rng.randint(0, 4, batch))]) for _ in range(n)]


def _train(sym, batches, contexts=None, grad_req='write', optimizer='sgd'):
    mod = mx.mod.Module(sym, context=contexts or mx.cpu())
    mod.bind(data_shapes=[('data', batches[0].data[0].shape)],
             label_shapes=[('softmax_label', batches[0].label[0].shape)], grad_req=grad_req)
    mx.random.seed(3)
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer=optimizer, optimizer_params={'learning_rate': 0.1})
    outputs = []
    for batch in batches:
        mod.forward_backward(batch)
        outputs.append(mod.get_outputs()[0].asnumpy())
        mod.update()
    arg, aux = mod.get_params()
    values = {k: v.asnumpy() for k, v in list(arg.items()) + list(aux.items())}
    return mod, values, outputs


def _assert_same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=1e-6, atol=1e-7, err_msg=k)


@pytest.mark.parametrize('bn,grad_req,contexts,optimizer', [
    (False, 'write', None, 'sgd'),
    (True, 'write', None, 'adam'),
    (False, 'add', None, 'sgd'),
    (True, 'write', [mx.cpu(0), mx.cpu(1)], 'sgd')])
def test_captured_training_equals_eager(captured, monkeypatch, bn, grad_req, contexts,
                                        optimizer):
    batches = _batches(6)
    mod, values, outputs = _train(_net(bn), batches, contexts, grad_req, optimizer)
    execs = mod._exec_group.execs
    assert all(isinstance(e._joint, cuda_graphs.Captured) for e in execs)
    # two graphs per executor, replayed once per step after the eager and tracing calls
    assert len(captured) == 2 * len(execs)
    assert all(g.replays == len(batches) - executor_calls_before_capture() for g in captured)
    monkeypatch.setenv('MXTORCH_JOINT', '0')
    _, eager_values, eager_outputs = _train(_net(bn), batches, contexts, grad_req, optimizer)
    _assert_same(values, eager_values)
    for a, b in zip(outputs, eager_outputs):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def executor_calls_before_capture():
    from mxtorch import executor
    return executor.JOINT_AFTER + 1          # eager calls, then the one that traces


def test_gradients_are_copied_out_of_the_graphs_memory(captured):
    """The captured backward's gradients are the graph's own tensors, rewritten by its next
    replay: the executor's gradient arrays must hold copies, not those tensors."""
    batches = _batches(5)
    mod, _, _ = _train(_net(), batches)
    ex = mod._exec_group.execs[0]
    static = {id(g) for g in ex._joint._grads if g is not None}
    assert static and not any(id(g._tensor) in static for g in ex.grad_arrays if g is not None)
    before = ex.grad_dict['fc1_weight'].asnumpy()
    mod.forward_backward(batches[0])                  # another replay: other gradients
    assert not np.allclose(before, ex.grad_dict['fc1_weight'].asnumpy())


def test_head_gradients_and_replaced_arguments(captured):
    """Head gradients go through static buffers; an argument whose array was given a new
    tensor after capture is copied into the captured one."""
    x = mx.sym.Variable('data')
    y = mx.sym.Activation(mx.sym.FullyConnected(x, num_hidden=5, name='fc'), act_type='tanh')
    ex = y.simple_bind(mx.cpu(), data=(3, 4))
    rng = np.random.RandomState(0)
    for arr in ex.arg_arrays:
        arr[:] = rng.randn(*arr.shape)
    head = mx.nd.array(rng.randn(3, 5))
    for _ in range(executor_calls_before_capture() + 2):
        ex.forward(is_train=True)
        ex.backward(head)
    assert isinstance(ex._joint, cuda_graphs.Captured)
    ex.arg_dict['fc_weight']._tensor = torch.tensor(rng.randn(5, 4), dtype=torch.float32)
    ex.arg_dict['data'][:] = rng.randn(3, 4)
    head = mx.nd.array(rng.randn(3, 5))
    out = ex.forward(is_train=True)[0].asnumpy()
    ex.backward(head)
    w, b, d = (ex.arg_dict[k].asnumpy() for k in ('fc_weight', 'fc_bias', 'data'))
    want = np.tanh(d @ w.T + b)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    g = head.asnumpy() * (1 - want ** 2)
    np.testing.assert_allclose(ex.grad_dict['fc_weight'].asnumpy(), g.T @ d, rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(ex.grad_dict['fc_bias'].asnumpy(), g.sum(0), rtol=1e-5,
                               atol=1e-5)


def test_each_bucket_captures_its_own_graphs(captured, monkeypatch):
    buckets = [6, 4] * 5
    mod, values = _bucketing_run(buckets)
    assert len(captured) == 4 and all(
        isinstance(m._exec_group.execs[0]._joint, cuda_graphs.Captured)
        for m in mod._buckets.values())
    monkeypatch.setenv('MXTORCH_JOINT', '0')
    _assert_same(values, _bucketing_run(buckets)[1])


def test_a_failed_capture_keeps_the_traced_call(captured, monkeypatch, caplog):
    class Failing(StandInGraph):
        def capture(self, fn):
            raise RuntimeError('operation not permitted when stream is capturing')
    monkeypatch.setattr(cuda_graphs, 'CudaGraph', Failing)
    with caplog.at_level('DEBUG', logger='mxtorch.cuda_graphs'):
        mod, values, _ = _train(_net(), _batches(5))
    assert isinstance(mod._exec_group.execs[0]._joint, joint.Joint)
    assert 'not captured as a CUDA graph (RuntimeError: operation not permitted' in caplog.text
    monkeypatch.setenv('MXTORCH_JOINT', '0')
    _assert_same(values, _train(_net(), _batches(5))[1])


def test_capture_is_for_cuda_devices_and_can_be_turned_off(monkeypatch):
    assert not cuda_graphs.enabled(torch.device('cpu'))
    assert cuda_graphs.enabled(torch.device('cuda', 0))
    monkeypatch.setenv('MXTORCH_CUDA_GRAPHS', '0')
    assert not cuda_graphs.enabled(torch.device('cuda', 0))


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA device')
@pytest.mark.parametrize('bn', [False, True])
def test_on_a_gpu_captured_training_equals_uncaptured(monkeypatch, bn):
    """The real capture (run where a GPU is): the same parameters as without CUDA graphs."""
    monkeypatch.setattr(joint, 'KEEP_BELOW', float('inf'))
    batches = _batches(8, batch=32)
    mod, values, outputs = _train(_net(bn), batches, [mx.gpu(0)])
    assert isinstance(mod._exec_group.execs[0]._joint, cuda_graphs.Captured)
    monkeypatch.setenv('MXTORCH_CUDA_GRAPHS', '0')
    mod, plain, plain_outputs = _train(_net(bn), batches, [mx.gpu(0)])
    assert isinstance(mod._exec_group.execs[0]._joint, joint.Joint)
    for k in values:
        np.testing.assert_allclose(values[k], plain[k], rtol=1e-5, atol=1e-6, err_msg=k)
    for a, b in zip(outputs, plain_outputs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)

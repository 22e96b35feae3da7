"""MXTORCH_COMPILE: a bound graph's plan compiled with torch.compile computes what the uncompiled
plan computes (outputs, gradients, BatchNorm statistics), falls back when compiling fails, and
runs custom Python operators as they are."""
import logging

import numpy as np
import pytest
import torch

import mxtorch as mx
from mxtorch import compiler, joint


def _net():
    data = mx.sym.Variable('data')
    x = mx.sym.Convolution(data, kernel=(3, 3), num_filter=4, name='conv')
    x = mx.sym.BatchNorm(x, name='bn')
    x = mx.sym.Activation(x, act_type='tanh')
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type='max')
    x = mx.sym.FullyConnected(x, num_hidden=5, name='fc')
    return mx.sym.SoftmaxOutput(x, name='softmax')


def _bind(sym, seed=0):
    ex = sym.simple_bind(mx.cpu(), data=(6, 2, 8, 8), softmax_label=(6,))
    rng = np.random.RandomState(seed)
    for name, arr in ex.arg_dict.items():
        if name == 'softmax_label':
            arr[:] = rng.randint(0, 5, arr.shape)
        else:
            arr[:] = rng.uniform(-1, 1, arr.shape)
    for arr in ex.aux_dict.values():
        arr[:] = rng.uniform(0.5, 1, arr.shape)
    return ex


def _train(ex, steps=2):
    for _ in range(steps):
        ex.forward(is_train=True)
        ex.backward()
    return ({k: v.asnumpy() for k, v in ex.grad_dict.items() if v is not None},
            {k: v.asnumpy() for k, v in ex.aux_dict.items()}, ex.outputs[0].asnumpy(),
            ex.forward(is_train=False)[0].asnumpy())


def test_compiled_plan_matches_uncompiled(monkeypatch):
    monkeypatch.setenv('MXTORCH_COMPILE', '0')
    expected = _train(_bind(_net()))
    monkeypatch.setenv('MXTORCH_COMPILE', '1')
    ex = _bind(_net())
    got = _train(ex)
    assert ex._forward_train.state == 'ready'
    for want, have in zip(expected[:2], got[:2]):
        assert want.keys() == have.keys()
        for key in want:
            np.testing.assert_allclose(have[key], want[key], rtol=1e-4, atol=1e-5, err_msg=key)
    np.testing.assert_allclose(got[2], expected[2], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(got[3], expected[3], rtol=1e-4, atol=1e-6)


def test_compile_failure_falls_back(monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError('no compiler here')
    monkeypatch.setattr(torch, 'compile', broken)
    monkeypatch.setenv('MXTORCH_COMPILE', '0')
    expected = _train(_bind(_net()))
    monkeypatch.setenv('MXTORCH_COMPILE', '1')
    compiler._WARNED.clear()
    ex = _bind(_net())
    with caplog.at_level(logging.WARNING, logger='mxtorch.compiler'):
        got = _train(ex)
    assert ex._forward_train.state == 'failed'
    assert 'no compiler here' in caplog.text and 'MXTORCH_COMPILE=0' in caplog.text
    for key in expected[0]:
        np.testing.assert_array_equal(got[0][key], expected[0][key])


def test_background_compile_switches_when_ready(monkeypatch):
    calls = []
    real = torch.compile

    def counting(fn, **kwargs):           # the background thread compiles the bound function
        calls.append(fn)
        return real(fn, **kwargs)
    monkeypatch.setattr(torch, 'compile', counting)
    monkeypatch.setenv('MXTORCH_COMPILE', 'background')
    monkeypatch.setenv('MXTORCH_FUSE', '0')       # the unfused inference plan is compiled
    monkeypatch.setattr(compiler, 'AUTO_AFTER', 3)
    data = mx.sym.Variable('data')
    sym = mx.sym.tanh(mx.sym.FullyConnected(data, num_hidden=3, name='fc'))
    ex = sym.simple_bind(mx.cpu(), data=(2, 4), grad_req='null')
    ex.arg_dict['data'][:] = np.arange(8).reshape(2, 4) / 8.0
    ex.arg_dict['fc_weight'][:] = np.linspace(-1, 1, 12).reshape(3, 4)
    ex.arg_dict['fc_bias'][:] = 0.5
    want = np.tanh(ex.arg_dict['data'].asnumpy() @ ex.arg_dict['fc_weight'].asnumpy().T + 0.5)
    for _ in range(2):
        np.testing.assert_allclose(ex.forward()[0].asnumpy(), want, rtol=1e-6)
    assert not calls                       # below the threshold: nothing compiles
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), want, rtol=1e-6)
    compiler.wait()
    assert len(calls) == 1 and ex._inference().state == 'ready'
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), want, rtol=1e-6)


class _Square(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        self.assign(out_data[0], req[0], in_data[0] * in_data[0])

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], 2 * in_data[0] * out_grad[0])


@mx.operator.register('compiler_test_square')
class _SquareProp(mx.operator.CustomOpProp):
    def list_arguments(self):
        return ['data']

    def infer_shape(self, in_shape):
        return in_shape, in_shape, []

    def create_operator(self, ctx, shapes, dtypes):
        return _Square()


def test_custom_operator_runs_between_compiled_regions(monkeypatch):
    monkeypatch.setenv('MXTORCH_COMPILE', '1')
    x = mx.sym.Variable('x')
    sym = mx.sym.sum(mx.sym.Custom(mx.sym.sin(x), op_type='compiler_test_square'))
    ex = sym.simple_bind(mx.cpu(), x=(3,))
    values = np.array([0.1, 0.5, -1.2], dtype=np.float32)
    ex.arg_dict['x'][:] = values
    ex.forward(is_train=True)
    ex.backward(mx.nd.ones((1,)))
    assert ex._forward_train.state == 'ready'
    np.testing.assert_allclose(ex.outputs[0].asnumpy(), [np.sum(np.sin(values) ** 2)], rtol=1e-5)
    np.testing.assert_allclose(ex.grad_dict['x'].asnumpy(),
                               2 * np.sin(values) * np.cos(values), rtol=1e-5)


def test_compiled_code_kept_only_when_faster(monkeypatch):
    """The compiled function replaces the plan only if it timed at least 5% faster (here the
    inference plan without fusion.py's rewrites, whose cached steps are not traced)."""
    monkeypatch.setenv('MXTORCH_COMPILE', '1')
    monkeypatch.setenv('MXTORCH_FUSE', '0')
    times = {}
    monkeypatch.setattr(compiler, '_timed', lambda fn, examples, grad: times[fn is plan_fn])
    for eager, compiled, state in ((1.0, 0.9, 'ready'), (1.0, 0.97, 'slower')):
        times.update({True: eager, False: compiled})
        ex = _bind(_net())
        plan_fn = ex._inference().fn
        ex.forward(is_train=False)
        assert ex._inference().state == state



def test_inference_compiles_the_unfused_forward_against_the_fused_plan(monkeypatch):
    """With fusion.py on, the inference forward that a compiled unfused graph must beat is the
    fused plan: it runs until the compiled code is ready and stays where that is not faster."""
    monkeypatch.setenv('MXTORCH_COMPILE', '1')
    monkeypatch.delenv('MXTORCH_FUSE', raising=False)
    want = _bind(_net()).forward(is_train=False)[0].asnumpy()
    for fused_time, compiled_time, state in ((1.0, 0.9, 'ready'), (1.0, 0.97, 'slower')):
        ex = _bind(_net())
        infer = ex._inference()
        assert infer.baseline is not infer.fn            # the fused plan, not the bound forward
        monkeypatch.setattr(compiler, '_timed', lambda fn, examples, grad: (
            fused_time if fn is infer.baseline else compiled_time))
        np.testing.assert_allclose(ex.forward(is_train=False)[0].asnumpy(), want, rtol=1e-5,
                                   atol=1e-6)
        assert infer.state == state
        np.testing.assert_allclose(ex.forward(is_train=False)[0].asnumpy(), want, rtol=1e-5,
                                   atol=1e-6)


def _module_params(monkeypatch, compiled, make, batches, **opt):
    """Parameters (and aux states) of a Module trained on `batches`, compiled or not."""
    monkeypatch.setenv('MXTORCH_COMPILE', '1' if compiled else '0')
    mod = make()
    mx.random.seed(0)
    mod.init_params(mx.init.Uniform(0.5))
    mod.init_optimizer(**opt)
    for batch in batches:
        mod.forward_backward(batch)
        mod.update()
    states = [e._forward_train.state for e in _executors(mod)]
    args, aux = mod.get_params()
    return {k: v.asnumpy() for k, v in list(args.items()) + list(aux.items())}, states


def _executors(mod):
    modules = mod._buckets.values() if hasattr(mod, '_buckets') else [mod]
    return [e for m in modules for e in m._exec_group.execs]


def _mlp_bn():
    data = mx.sym.Variable('data')     # no bias before BatchNorm: its gradient would be noise
    x = mx.sym.FullyConnected(data, num_hidden=8, no_bias=True, name='fc1')
    x = mx.sym.Activation(mx.sym.BatchNorm(x, name='bn'), act_type='relu')
    return mx.sym.SoftmaxOutput(mx.sym.FullyConnected(x, num_hidden=4, name='fc2'),
                                name='softmax')


@pytest.mark.parametrize('contexts,grad_req,optimizer,params', [
    (1, 'write', 'adam', {}),
    (1, 'add', 'nag', {'momentum': 0.9}),
    (2, 'write', 'sgd', {'momentum': 0.9, 'learning_rate': 0.1}),     # through the kvstore
    (2, 'add', 'rmsprop', {'centered': True}),
])
def test_compiled_training_reaches_the_uncompiled_parameters(monkeypatch, contexts, grad_req,
                                                             optimizer, params):
    rng = np.random.RandomState(0)
    batches = [mx.io.DataBatch([mx.nd.array(rng.rand(6, 5))],
                               [mx.nd.array(rng.randint(0, 4, 6))]) for _ in range(3)]

    def make():
        mod = mx.mod.Module(_mlp_bn(), context=[mx.cpu(i) for i in range(contexts)])
        mod.bind([('data', (6, 5))], [('softmax_label', (6,))], grad_req=grad_req)
        return mod
    want, _ = _module_params(monkeypatch, False, make, batches, optimizer=optimizer,
                             optimizer_params=params)
    got, states = _module_params(monkeypatch, True, make, batches, optimizer=optimizer,
                                 optimizer_params=params)
    assert states == ['ready'] * contexts     # each device's executor runs compiled code
    assert want.keys() == got.keys()
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-6, atol=1e-6, err_msg=key)


def test_compiled_bucketing_reaches_the_uncompiled_parameters(monkeypatch):
    def sym_gen(key):         # buckets share fc1/fc2; each has its own fc3 over its length
        x = mx.sym.Reshape(mx.sym.Variable('data'), shape=(-1, 5))
        x = mx.sym.tanh(mx.sym.FullyConnected(x, num_hidden=8, no_bias=True, name='fc1'))
        x = mx.sym.Reshape(mx.sym.FullyConnected(x, num_hidden=4, name='fc2'),
                           shape=(-1, key * 4))
        x = mx.sym.FullyConnected(x, num_hidden=3, name='fc3_%d' % key)
        return mx.sym.SoftmaxOutput(x, name='softmax'), ('data',), ('softmax_label',)
    rng = np.random.RandomState(0)
    batches = [mx.io.DataBatch([mx.nd.array(rng.rand(2, key, 5))],
                               [mx.nd.array(rng.randint(0, 3, 2))], bucket_key=key,
                               provide_data=[mx.io.DataDesc('data', (2, key, 5))],
                               provide_label=[mx.io.DataDesc('softmax_label', (2,))])
               for key in (3, 2, 3, 1, 2)]

    def make():
        mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=3)
        mod.bind([('data', (2, 3, 5))], [('softmax_label', (2,))])
        return mod
    want, _ = _module_params(monkeypatch, False, make, batches, optimizer='adam')
    got, states = _module_params(monkeypatch, True, make, batches, optimizer='adam')
    assert states == ['ready'] * 3            # one compiled plan per bucket
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-6, atol=1e-6, err_msg=key)


@pytest.mark.parametrize('traced_faster', [True, False])
def test_traced_call_is_timed_against_the_compiled_plan(monkeypatch, traced_faster):
    """Once the compiled training plan is settled, the traced call (joint.py) is timed against
    it, not against the uncompiled plan, and replaces it only where faster; the gradients are
    the uncompiled plan's either way."""
    monkeypatch.setenv('MXTORCH_COMPILE', '0')
    want = _train(_bind(_net()), steps=8)
    monkeypatch.setenv('MXTORCH_COMPILE', '1')
    seen = []
    real_compare = joint.compare

    def compare(traced, forward, *args, **kwargs):
        agrees, _, _ = real_compare(traced, forward, *args, **kwargs)
        seen.append((forward, forward.state))
        return agrees, (1.0 if traced_faster else 3.0), 2.0
    monkeypatch.setattr(joint, 'compare', compare)
    ex = _bind(_net())
    got = _train(ex, steps=8)
    assert seen == [(ex._forward_train, 'ready')]
    assert isinstance(ex._joint, joint.Joint) if traced_faster else ex._joint is False
    for a, b in zip(got[:2], want[:2]):
        for key in b:
            np.testing.assert_allclose(a[key], b[key], rtol=1e-5, atol=1e-5, err_msg=key)


@pytest.fixture(autouse=True)
def _no_leftover_compiles(monkeypatch, request):
    if request.node.name not in ('test_compiled_code_kept_only_when_faster',
                                 'test_inference_compiles_the_unfused_forward_against_the_fused_plan'):
        monkeypatch.setattr(compiler, 'KEEP_BELOW', float('inf'))   # keep whatever compiles
    yield
    compiler.wait()

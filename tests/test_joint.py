"""joint.py: a bound graph's training call traced into forward and backward graphs gives the
eager call's outputs, gradients, auxiliary statistics and parameters after several steps (every
optimizer, grad_req write and add, two devices, bucketing, BatchNorm, Dropout, head gradients
given by the user), and where it cannot be traced the executor stays on its eager path."""
import numpy as np
import pytest

import mxtorch as mx
from mxtorch import executor as executor_mod
from mxtorch import joint
from mxtorch.models import lenet


@pytest.fixture(autouse=True)
def always_keep(monkeypatch):
    """The traced call is kept whenever it agrees (in use it must also be faster: timing on a
    shared test machine would make these tests depend on the load)."""
    monkeypatch.setattr(joint, 'KEEP_BELOW', float('inf'))


@pytest.fixture
def eager(monkeypatch):
    """Run the executors made inside the block without tracing."""
    def off():
        monkeypatch.setenv('MXTORCH_JOINT', '0')
    return off


def _mlp(bn=False, dropout=0.0):
    x = mx.sym.Variable('data')
    x = mx.sym.FullyConnected(x, num_hidden=96, name='fc1')
    if bn:
        x = mx.sym.BatchNorm(x, name='bn1', fix_gamma=False)
    x = mx.sym.Activation(x, act_type='relu')
    if dropout:
        x = mx.sym.Dropout(x, p=dropout)
    x = mx.sym.FullyConnected(x, num_hidden=80, name='fc2')
    x = mx.sym.Activation(x, act_type='tanh')
    x = mx.sym.FullyConnected(x, num_hidden=5, name='fc3')
    return mx.sym.SoftmaxOutput(x, name='softmax')


def _batches(n, shape=(64, 70), classes=5, seed=3):
    rng = np.random.RandomState(seed)
    return [mx.io.DataBatch([mx.nd.array(rng.randn(*shape))],
                            [mx.nd.array(rng.randint(0, classes, shape[0]))])
            for _ in range(n)]


def _train(sym, batches, optimizer='sgd', params=None, contexts=None, grad_req='write',
           steps=6):
    mx.random.seed(7)
    mod = mx.mod.Module(sym, context=contexts or mx.cpu())
    mod.bind(data_shapes=[('data', batches[0].data[0].shape)],
             label_shapes=[('softmax_label', batches[0].label[0].shape)], grad_req=grad_req)
    rng = np.random.RandomState(0)
    arg_shapes, _, aux_shapes = sym.infer_shape(data=batches[0].data[0].shape)
    args = {n: mx.nd.array(rng.uniform(-0.2, 0.2, s))
            for n, s in zip(sym.list_arguments(), arg_shapes) if n not in ('data', 'softmax_label')}
    mod.init_params(arg_params=args, aux_params={n: mx.nd.ones(s) if n.endswith('var') else
                                                 mx.nd.zeros(s)
                                                 for n, s in zip(sym.list_auxiliary_states(),
                                                                 aux_shapes)},
                    allow_missing=False)
    mod.init_optimizer(optimizer=optimizer,
                       optimizer_params=params or {'learning_rate': 0.1, 'momentum': 0.9})
    outs = []
    for i in range(steps):
        mod.forward_backward(batches[i % len(batches)])
        mod.update()
        outs.append(mod.get_outputs()[0].asnumpy())
    arg, aux = mod.get_params()
    values = {k: v.asnumpy() for k, v in list(arg.items()) + list(aux.items())}
    return mod, values, outs


def _traced(mod):
    return [isinstance(e._joint, joint.Joint) for e in mod._exec_group.execs]


def _assert_same(a, b, rtol=1e-5, atol=1e-6):
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_allclose(a[k], b[k], rtol=rtol, atol=atol, err_msg=k)


@pytest.mark.parametrize('optimizer,params', [
    ('sgd', {'learning_rate': 0.1, 'momentum': 0.9, 'wd': 1e-3}),
    ('adam', {'learning_rate': 0.01}),
    ('nag', {'learning_rate': 0.05, 'momentum': 0.8}),
    ('rmsprop', {'learning_rate': 0.01, 'centered': True})])
def test_traced_training_equals_eager(eager, optimizer, params):
    batches = _batches(3)
    mod, traced, outs = _train(_mlp(), batches, optimizer, params)
    assert _traced(mod) == [True]
    eager()
    mod, plain, plain_outs = _train(_mlp(), batches, optimizer, params)
    assert _traced(mod) == [False]
    _assert_same(traced, plain)
    for a, b in zip(outs, plain_outs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert not np.allclose(traced['fc1_weight'], _train(_mlp(), batches, steps=0)[1]['fc1_weight'])


def test_batchnorm_statistics_dropout_grad_add_and_two_devices(eager):
    batches = _batches(2)
    sym = _mlp(bn=True, dropout=0.3)
    cases = [dict(), dict(grad_req='add'), dict(contexts=[mx.cpu(0), mx.cpu(1)])]
    results = []
    for case in cases:
        mod, values, _ = _train(sym, batches, **case)
        assert all(_traced(mod))
        results.append(values)
    eager()
    for case, values in zip(cases, results):
        _assert_same(values, _train(sym, batches, **case)[1])
    assert not np.allclose(results[0]['bn1_moving_mean'], 0)     # statistics moved


def test_lenet_convolutions_and_pooling(eager):
    batches = _batches(2, shape=(8, 1, 28, 28), classes=10)
    mod, traced, _ = _train(lenet.get_symbol(10), batches, steps=4)
    assert _traced(mod) == [True]
    eager()
    _assert_same(traced, _train(lenet.get_symbol(10), batches, steps=4)[1], rtol=1e-4,
                 atol=1e-5)


def test_head_gradients_given_by_the_user():
    """A graph whose output needs a head gradient: backward(out_grads) feeds the traced
    backward; the gradient is the analytic one, d(sum(g * tanh(x W^T)))/dW."""
    rng = np.random.RandomState(0)
    x, w = rng.randn(6, 4).astype('f'), rng.randn(3, 4).astype('f')
    sym = mx.sym.tanh(mx.sym.FullyConnected(mx.sym.Variable('x'), mx.sym.Variable('w'),
                                            no_bias=True, num_hidden=3))
    ex = sym.bind(mx.cpu(), {'x': mx.nd.array(x), 'w': mx.nd.array(w)},
                  args_grad={'x': mx.nd.zeros((6, 4)), 'w': mx.nd.zeros((3, 4))})
    for step in range(4):
        g = rng.randn(6, 3).astype('f')
        ex.forward(is_train=True)
        ex.backward(mx.nd.array(g))
        y = np.tanh(x @ w.T)
        np.testing.assert_allclose(ex.outputs[0].asnumpy(), y, rtol=1e-5, atol=1e-6)
        dy = g * (1 - y ** 2)
        np.testing.assert_allclose(ex.grad_dict['w'].asnumpy(), dy.T @ x, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(ex.grad_dict['x'].asnumpy(), dy @ w, rtol=1e-4, atol=1e-5)
    assert isinstance(ex._joint, joint.Joint)
    with pytest.raises(mx.MXNetError, match='head_gradient is required'):
        ex.forward(is_train=True)
        ex.backward()


def test_a_second_backward_and_a_forward_without_backward():
    rng = np.random.RandomState(1)
    x = rng.randn(5, 3).astype('f')
    sym = mx.sym.MakeLoss(mx.sym.sum(mx.sym.square(mx.sym.Variable('x'))))
    ex = sym.bind(mx.cpu(), {'x': mx.nd.array(x)}, args_grad={'x': mx.nd.zeros((5, 3))})
    for _ in range(4):
        ex.forward(is_train=True)
        ex.forward(is_train=True)         # a forward nobody takes the backward of
        ex.backward()
        ex.backward()                     # again: recomputed, the same gradient
        np.testing.assert_allclose(ex.grad_dict['x'].asnumpy(), 2 * x, rtol=1e-6)
    assert isinstance(ex._joint, joint.Joint)


def test_untraceable_graphs_stay_eager(monkeypatch):
    """A failure while tracing (here: the tracer made to fail) leaves the eager path."""
    def fail(*args, **kwargs):
        raise RuntimeError('cannot trace')
    monkeypatch.setattr(joint, 'trace', fail)
    batches = _batches(2)
    mod, values, _ = _train(_mlp(), batches)
    assert _traced(mod) == [False]
    monkeypatch.undo()
    monkeypatch.setattr(joint, 'KEEP_BELOW', float('inf'))    # (undo() took always_keep's too)
    mod2, values2, _ = _train(_mlp(), batches)
    assert _traced(mod2) == [True]
    _assert_same(values, values2)


def test_gemm_backend_and_cleanup_passes_keep_the_graph_readable():
    batches = _batches(1)
    mod, _, _ = _train(_mlp(), batches, steps=3)
    traced = mod._exec_group.execs[0]._joint
    code = traced.code
    assert 'detach' not in code and 'torch.ops' not in code    # operators bound by name
    assert code.count('def forward(') == 2 and 'relu' in code
    assert executor_mod.JOINT_AFTER >= 1


def _gluon_train(steps=6, bn=True):
    from mxtorch import autograd, gluon
    mx.random.seed(3)
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Dense(64, activation='relu'))
        if bn:
            net.add(gluon.nn.BatchNorm())
        net.add(gluon.nn.Dense(10))
    net.initialize(mx.init.Xavier())
    net.hybridize(static_alloc=True, static_shape=True)
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1, 'momentum': 0.9})
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    rng = np.random.RandomState(0)
    x, y = mx.nd.array(rng.randn(32, 50)), mx.nd.array(rng.randint(0, 10, 32))
    for _ in range(steps):
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(32)
    executor = list(net._cached.bindings.values())[0].executor
    values = {k.split('_', 1)[1]: v.data().asnumpy() for k, v in net.collect_params().items()}
    return values, executor


def test_hybridized_gluon_block_runs_the_traced_call_as_one_autograd_node(eager):
    traced, executor = _gluon_train()
    assert any(isinstance(e[1], joint.Joint) for e in executor._joint_calls_on.values())
    eager()
    plain, executor = _gluon_train()
    assert not executor._joint_calls_on
    _assert_same(traced, plain)
    assert not np.allclose(traced['batchnorm0_running_mean'], 0)


def test_second_order_gradients_through_a_traced_block():
    """Under create_graph the traced node recomputes its call eagerly: d/dx of sum((dy/dx)^2)
    for y = sum(tanh(x W^T)) matches the analytic second derivative."""
    from mxtorch import autograd, gluon
    net = gluon.nn.Dense(3, use_bias=False, in_units=4)
    net.initialize()
    net.hybridize()
    w = np.random.RandomState(1).randn(3, 4).astype('f')
    net.weight.set_data(mx.nd.array(w))
    xv = np.random.RandomState(2).randn(5, 4).astype('f')
    for _ in range(4):
        x = mx.nd.array(xv)
        x.attach_grad()
        with autograd.record():
            y = mx.nd.tanh(net(x)).sum()
            dx = autograd.grad(y, [x], create_graph=True)[0]
            z = (dx * dx).sum()
        z.backward()
    t = np.tanh(xv @ w.T)
    d1 = (1 - t ** 2)                                  # dy/du, u = x W^T
    dx_ref = d1 @ w
    # z = sum((d1 W)^2); dz/dx = (2 (d1 W) W^T * d(d1)/du) W with d(d1)/du = -2 t d1
    ddx = ((2 * dx_ref @ w.T) * (-2 * t * d1)) @ w
    np.testing.assert_allclose(x.grad.asnumpy(), ddx, rtol=1e-4, atol=1e-5)
    executor = list(net._cached.bindings.values())[0].executor
    assert any(isinstance(e[1], joint.Joint) for e in executor._joint_calls_on.values())


def test_speed_check_times_three_rounds_at_least(monkeypatch):
    """compare() times the traced and the eager call in three interleaved rounds at least (one
    round of a slow call decides nothing on a busy machine), unless they take longer than
    MIN_ROUNDS_WITHIN seconds."""
    calls = []
    original = joint.compare

    def counting(traced, forward, *args, **kwargs):
        def eager(*inputs):
            calls.append(1)
            return forward(*inputs)
        return original(traced, eager, *args, **dict(kwargs, budget=0.0))
    monkeypatch.setattr(joint, 'compare', counting)
    mod, _, _ = _train(_mlp(), _batches(1), steps=3)
    assert _traced(mod) == [True]
    assert len(calls) == 1 + 3             # the check's call, then one a round
    calls.clear()
    monkeypatch.setattr(joint, 'MIN_ROUNDS_WITHIN', 0.0)
    _train(_mlp(), _batches(1), steps=3)
    assert len(calls) == 1 + 1


def _spy_direct(monkeypatch):
    """Record for each joint.leaf_grads call whether it ran the backward itself."""
    used = []
    original = joint.leaf_grads

    def spy(*args):
        out = original(*args)
        used.append(out is not None)
        return out
    monkeypatch.setattr(joint, 'leaf_grads', spy)
    return used


def _two_stage_train(hybrid_loss, steps=6):
    """A hybridized body (Dense, BatchNorm, relu) whose output feeds two hybridized heads
    sharing one weight, each with the loss (hybridized or not), summed imperatively: traced
    calls under a few operators, one leaf reached from two calls, one call's output used
    twice."""
    from mxtorch import autograd, gluon
    mx.random.seed(3)
    body = gluon.nn.HybridSequential(prefix='body_')
    with body.name_scope():
        body.add(gluon.nn.Dense(32), gluon.nn.BatchNorm(), gluon.nn.Activation('relu'))
    head = gluon.nn.Dense(10, prefix='head_')
    twin = gluon.nn.Dense(10, prefix='head_', params=head.collect_params())
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    params = body.collect_params()
    params.update(head.collect_params())
    params.initialize(mx.init.Xavier())
    for block in (body, head, twin) + ((loss_fn,) if hybrid_loss else ()):
        block.hybridize(static_alloc=True, static_shape=True)
    trainer = gluon.Trainer(params, 'sgd', {'learning_rate': 0.1, 'momentum': 0.9})
    rng = np.random.RandomState(0)
    x, y = mx.nd.array(rng.randn(16, 20)), mx.nd.array(rng.randint(0, 10, 16))
    for _ in range(steps):
        with autograd.record():
            h = body(x)
            loss = loss_fn(head(h), y) + loss_fn(twin(h), y) * 0.5
        loss.backward()
        trainer.step(16)
    return {k: v.data().asnumpy() for k, v in params.items()}


@pytest.mark.parametrize('hybrid_loss', [True, False])
def test_gluon_backward_runs_traced_calls_without_torchs_engine(eager, monkeypatch,
                                                                  hybrid_loss):
    """mx.autograd.backward runs the traced calls' backward graphs itself (joint.leaf_grads)
    and gives what torch's engine gives through the eager calls: a weight shared by two
    calls gets both gradients, an output used twice both seeds, BatchNorm's statistics move
    once a step."""
    used = _spy_direct(monkeypatch)
    traced = _two_stage_train(hybrid_loss)
    assert used and used[-1] is True
    eager()
    used.clear()
    plain = _two_stage_train(hybrid_loss)
    assert not any(used)
    _assert_same(traced, plain)
    assert not np.allclose(traced['body_batchnorm0_running_mean'], 0)


def _traced_dense(steps=5):
    from mxtorch import autograd, gluon
    net = gluon.nn.Dense(3, in_units=4)
    net.initialize(mx.init.Constant(0.1))
    net.hybridize(static_alloc=True)
    x = mx.nd.array(np.arange(8, dtype=np.float32).reshape(2, 4) / 8)
    for _ in range(steps):
        with autograd.record():
            y = net(x)
        y.backward()
    executor = list(net._cached.bindings.values())[0].executor
    assert any(isinstance(e[1], joint.Joint) for e in executor._joint_calls_on.values())
    return net, x


def test_direct_backward_keeps_retain_graph_grad_add_and_a_spent_graph_error(monkeypatch):
    from mxtorch import autograd
    used = _spy_direct(monkeypatch)
    net, x = _traced_dense()
    net.collect_params().setattr('grad_req', 'add')
    net.collect_params().zero_grad()
    with autograd.record():
        y = net(x)
        z = (y * y).sum()
    z.backward(retain_graph=True)
    z.backward()
    assert used[-2:] == [True, True]
    xs = np.arange(8, dtype=np.float32).reshape(2, 4) / 8
    yv = xs @ np.full((4, 3), 0.1, np.float32)            # (Constant leaves the bias 0)
    np.testing.assert_allclose(net.weight.grad().asnumpy(), 2 * (2 * yv).T @ xs, rtol=1e-5)
    np.testing.assert_allclose(net.bias.grad().asnumpy(), 2 * (2 * yv).sum(0), rtol=1e-5)
    with pytest.raises(mx.MXNetError, match='second time'):
        y.backward()                     # the call's saved values went with the first graph


def test_a_leaf_reached_by_an_operator_takes_torchs_engine(monkeypatch):
    """A penalty on a weight computed imperatively above the traced call reaches a leaf from
    an operator: the backward falls back to torch's engine and both gradients add up."""
    from mxtorch import autograd
    used = _spy_direct(monkeypatch)
    net, x = _traced_dense()
    with autograd.record():
        z = net(x).sum() + (net.weight.data() ** 2).sum()
    z.backward()
    assert used[-1] is False
    xs = np.arange(8, dtype=np.float32).reshape(2, 4) / 8
    np.testing.assert_allclose(net.weight.grad().asnumpy(),
                               np.ones((2, 3), np.float32).T @ xs + 0.2, rtol=1e-5)


def test_direct_backward_two_heads_of_one_call_given_gradients_and_an_input_gradient(
        eager, monkeypatch):
    """Both outputs of one traced call as heads, with head gradients given, and the input's
    own gradient (attach_grad): what torch's engine gives through the eager call."""
    from mxtorch import autograd, gluon

    class TwoHeads(gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.body = gluon.nn.Dense(8, in_units=5, activation='tanh')
                self.a = gluon.nn.Dense(3, in_units=8)
                self.b = gluon.nn.Dense(2, in_units=8)

        def hybrid_forward(self, F, x):
            h = self.body(x)
            return self.a(h), self.b(h)

    def run():
        mx.random.seed(5)
        net = TwoHeads(prefix='two_')
        net.initialize(mx.init.Xavier())
        net.hybridize(static_alloc=True)
        rng = np.random.RandomState(1)
        x = mx.nd.array(rng.randn(4, 5))
        ga, gb = mx.nd.array(rng.randn(4, 3)), mx.nd.array(rng.randn(4, 2))
        for _ in range(5):
            x.attach_grad()
            with autograd.record():
                a, b = net(x)
            autograd.backward([a, b], [ga, gb])
        grads = {k: v.grad().asnumpy() for k, v in net.collect_params().items()}
        grads['x'] = x.grad.asnumpy()
        return grads
    used = _spy_direct(monkeypatch)
    traced = run()
    assert used[-1] is True
    eager()
    _assert_same(traced, run())

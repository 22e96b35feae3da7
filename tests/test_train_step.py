"""train_step.UpdatePlan: Module.update's planned path (one optimizer rule call per device on
the tensors, resolved once) changes parameters and optimizer states exactly as the Updater's
per-batch path does: counts, learning-rate schedules, multipliers, saved/loaded states."""
import numpy as np
import pytest

import mxtorch as mx
from mxtorch import train_step


def _module(contexts=None):
    data = mx.sym.Variable('data')
    x = mx.sym.FullyConnected(data, num_hidden=8, name='fc1')
    x = mx.sym.Activation(x, act_type='relu')
    x = mx.sym.FullyConnected(x, num_hidden=3, name='fc2', attr={'__lr_mult__': '0.5'})
    mod = mx.mod.Module(mx.sym.SoftmaxOutput(x, name='softmax'), context=contexts or mx.cpu())
    mod.bind(data_shapes=[('data', (4, 5))], label_shapes=[('softmax_label', (4,))])
    mod.init_params(mx.init.Xavier(rnd_type='gaussian', magnitude=1.0))
    params = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    mod.set_params({k: mx.nd.array(np.linspace(-1, 1, v.size).reshape(v.shape))
                    for k, v in params.items()}, {})
    return mod


def _batches(n):
    rng = np.random.RandomState(3)
    return [mx.io.DataBatch([mx.nd.array(rng.randn(4, 5))], [mx.nd.array(rng.randint(0, 3, 4))])
            for _ in range(n)]


def _train(mod, batches, optimizer, params):
    params = {k: v() if callable(v) else v for k, v in params.items()}   # a fresh scheduler
    mod.init_optimizer(optimizer=optimizer, optimizer_params=params, force_init=True)
    for batch in batches:
        mod.forward_backward(batch)
        mod.update()
    return {k: v.asnumpy() for k, v in mod.get_params()[0].items()}


CASES = [('sgd', {'learning_rate': 0.1, 'momentum': 0.9, 'wd': 1e-3}),
         ('sgd', {'learning_rate': 0.1, 'clip_gradient': 0.05}),
         ('adam', {'learning_rate': 0.01, 'wd': 1e-3,
                   'lr_scheduler': lambda: mx.lr_scheduler.FactorScheduler(step=2, factor=0.5)}),
         ('nag', {'learning_rate': 0.05, 'momentum': 0.8}),
         ('rmsprop', {'learning_rate': 0.01, 'centered': True}),
         ('adagrad', {'learning_rate': 0.1}),
         # every other optimizer with a rule (optimizer_rules.py)
         ('adadelta', {'rho': 0.9, 'wd': 1e-3}),
         ('adamax', {'learning_rate': 0.02}),
         ('nadam', {'learning_rate': 0.02, 'wd': 1e-3}),
         ('ftrl', {'learning_rate': 0.1, 'lamda1': 0.01}),
         ('ftml', {'learning_rate': 0.02}),
         ('signum', {'learning_rate': 0.01, 'momentum': 0.9, 'wd_lh': 1e-3}),
         ('lamb', {'learning_rate': 0.01, 'wd': 1e-3}),
         ('lars', {'learning_rate': 0.1, 'momentum': 0.9, 'wd': 1e-3}),
         ('dcasgd', {'learning_rate': 0.1, 'momentum': 0.5}),
         ('ccsgd', {'learning_rate': 0.1, 'momentum': 0.9}),
         ('sgld', {'learning_rate': 0.01})]


@pytest.mark.parametrize('optimizer,params', CASES)
def test_planned_update_equals_updater_path(monkeypatch, optimizer, params):
    batches = _batches(6)
    planned_mod = _module()
    mx.random.seed(7)                                   # (SGLD's noise)
    planned = _train(planned_mod, batches, optimizer, params)
    assert planned_mod._update_plan is not None and planned_mod._update_plan.planned
    monkeypatch.setattr(train_step.UpdatePlan, 'make', classmethod(lambda *a: None))
    unplanned_mod = _module()
    mx.random.seed(7)
    unplanned = _train(unplanned_mod, batches, optimizer, params)
    moved = _train(_module(), batches[:0], 'sgd', {})
    assert any(not np.allclose(planned[k], moved[k]) for k in planned)    # (they trained)
    for name in planned:
        np.testing.assert_allclose(planned[name], unplanned[name], rtol=1e-6, atol=1e-7,
                                   err_msg=name)


def test_planned_update_on_two_devices_without_a_kvstore(monkeypatch):
    """kvstore=None on two contexts: each device updates its own copy with its own gradients
    (MXNet's _update_params without aggregation), one rule call per device."""
    def run():
        mod = _module(contexts=[mx.cpu(0), mx.cpu(1)])
        mod.init_optimizer(kvstore=None, optimizer='sgd', force_init=True,
                           optimizer_params={'learning_rate': 0.1, 'momentum': 0.9})
        for batch in _batches(4):
            mod.forward_backward(batch)
            mod.update()
        return mod, [{n: a.asnumpy() for n, a in zip(mod._exec_group.param_names, arrays)}
                     for arrays in zip(*mod._exec_group.param_arrays)]
    mod, planned = run()
    assert mod._update_plan.planned and len(mod._update_plan._devices) == 2
    assert not np.allclose(planned[0]['fc1_weight'], planned[1]['fc1_weight'])  # own grads
    monkeypatch.setattr(train_step.UpdatePlan, 'make', classmethod(lambda *a: None))
    _, unplanned = run()
    for per_device, expected in zip(planned, unplanned):
        for name in expected:
            np.testing.assert_allclose(per_device[name], expected[name], rtol=1e-6, atol=1e-7)


def test_plan_follows_loaded_states_and_a_new_optimizer(tmp_path):
    batches = _batches(4)
    mod = _module()
    _train(mod, batches, 'sgd', {'learning_rate': 0.1, 'momentum': 0.9})
    plan = mod._update_plan
    mod.save_optimizer_states(str(tmp_path / 'o.states'))
    saved = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    for batch in batches:                       # planned steps move the momentum on
        mod.forward_backward(batch)
        mod.update()
    after_plan = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    # reloading weights and states gives the same steps again: the plan does not keep the old
    # state arrays, it is made anew from the loaded ones
    mod.set_params({k: mx.nd.array(v) for k, v in saved.items()}, {})
    mod.load_optimizer_states(str(tmp_path / 'o.states'))
    for batch in batches:
        mod.forward_backward(batch)
        mod.update()
    assert mod._update_plan is not plan
    for k, v in mod.get_params()[0].items():
        np.testing.assert_allclose(v.asnumpy(), after_plan[k], rtol=1e-6, atol=1e-7)


def test_custom_optimizer_takes_the_updater_path():
    @mx.optimizer.register
    class HalfStep(mx.optimizer.Optimizer):
        def update(self, index, weight, grad, state):
            weight[:] -= 0.5 * grad

    mod = _module()
    before = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
    batch = _batches(1)[0]
    mod.init_optimizer(optimizer=HalfStep(rescale_grad=0.25))
    for _ in range(3):
        mod.forward_backward(batch)
        grads = {n: g[0].asnumpy() for n, g in zip(mod._exec_group.param_names,
                                                   mod._exec_group.grad_arrays)}
        mod.update()
        after = {k: v.asnumpy() for k, v in mod.get_params()[0].items()}
        for k in before:
            np.testing.assert_allclose(after[k], before[k] - 0.5 * grads[k], rtol=1e-6)
        before = after
    assert not mod._update_plan.planned


def _gluon_run(optimizer, params, steps=5):
    """Parameters after `steps` Trainer steps of a small Dense net (an unused layer's stale
    gradient skipped with ignore_stale_grad; the learning rate changed midway)."""
    mx.random.seed(0)
    net = mx.gluon.nn.HybridSequential(prefix='net_')
    with net.name_scope():
        net.add(mx.gluon.nn.Dense(6, activation='relu'), mx.gluon.nn.Dense(3))
    unused = mx.gluon.nn.Dense(2, prefix='unused_')
    net.initialize(mx.init.Constant(0.1))
    unused.initialize(mx.init.Constant(0.1))
    unused(mx.nd.ones((1, 4)))
    all_params = net.collect_params()
    all_params.update(unused.collect_params())
    trainer = mx.gluon.Trainer(all_params, optimizer, dict(params))
    loss = mx.gluon.loss.SoftmaxCrossEntropyLoss()
    rng = np.random.RandomState(5)
    for step in range(steps):
        x, y = mx.nd.array(rng.randn(4, 5)), mx.nd.array(rng.randint(0, 3, 4))
        with mx.autograd.record():
            out = loss(net(x), y)
        out.backward()
        if step == 2 and 'lr_scheduler' not in params:
            trainer.set_learning_rate(trainer.learning_rate * 0.5)
        trainer.step(4, ignore_stale_grad=True)
    return {k: v.data().asnumpy() for k, v in all_params.items()}, trainer


@pytest.mark.parametrize('optimizer,params', CASES[:4])
def test_trainer_planned_update_equals_updater_path(monkeypatch, optimizer, params):
    planned, trainer = _gluon_run(optimizer, {k: v() if callable(v) else v
                                              for k, v in params.items()})
    assert trainer._update_plans[0].planned
    monkeypatch.setattr(train_step.UpdatePlan, 'make', classmethod(lambda *a: None))
    unplanned, _ = _gluon_run(optimizer, {k: v() if callable(v) else v
                                          for k, v in params.items()})
    for name in planned:
        np.testing.assert_allclose(planned[name], unplanned[name], rtol=1e-6, atol=1e-7,
                                   err_msg=name)
    np.testing.assert_array_equal(planned['unused_weight'], np.full((2, 4), 0.1, np.float32))


def _bucketing_run(buckets):
    mx.random.seed(0)
    def sym_gen(key):
        data = mx.sym.Variable('data')             # (4, key): a sequence of `key` steps
        emb = mx.sym.Embedding(data, input_dim=10, output_dim=5, name='embed')
        x = mx.sym.FullyConnected(mx.sym.mean(emb, axis=1), num_hidden=6, name='fc')
        x = mx.sym.FullyConnected(mx.sym.Activation(x, act_type='tanh'), num_hidden=3,
                                  name='out')
        return mx.sym.SoftmaxOutput(x, name='softmax'), ('data',), ('softmax_label',)
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=6)
    mod.bind(data_shapes=[('data', (4, 6))], label_shapes=[('softmax_label', (4,))])
    mod.init_params(mx.init.Uniform(0.1))
    mod.init_optimizer(optimizer='adam', optimizer_params={'learning_rate': 0.05})
    rng = np.random.RandomState(4)
    for key in buckets:
        batch = mx.io.DataBatch([mx.nd.array(rng.randint(0, 10, (4, key)))],
                                [mx.nd.array(rng.randint(0, 3, 4))], bucket_key=key,
                                provide_data=[('data', (4, key))],
                                provide_label=[('softmax_label', (4,))])
        mod.forward_backward(batch)
        mod.update()
    return mod, {k: v.asnumpy() for k, v in mod.get_params()[0].items()}


def test_planned_update_per_bucket_equals_updater_path(monkeypatch):
    buckets = [6, 4, 4, 6, 4, 6, 6]
    mod, planned = _bucketing_run(buckets)
    assert all(m._update_plan is not None and m._update_plan.planned
               for m in mod._buckets.values())
    monkeypatch.setattr(train_step.UpdatePlan, 'make', classmethod(lambda *a: None))
    _, unplanned = _bucketing_run(buckets)
    assert sorted(planned) == ['embed_weight', 'fc_bias', 'fc_weight', 'out_bias', 'out_weight']
    for name in planned:
        np.testing.assert_allclose(planned[name], unplanned[name], rtol=1e-6, atol=1e-7,
                                   err_msg=name)

"""Gluon training-step fast paths keep MXNet's semantics: the Trainer's repeated planned update
(stale gradients still raise, grad_req/optimizer-state changes still apply) and
mx.autograd.backward's direct engine call."""
import numpy as np
import pytest

import mxtorch as mx
from mxtorch import autograd, gluon


def _net_and_data():
    net = gluon.nn.Dense(3, in_units=4)
    net.initialize(mx.init.Constant(0.1))
    x = mx.nd.array(np.arange(8, dtype=np.float32).reshape(2, 4) / 8)
    return net, x


def _sgd_momentum_reference(steps, lr=0.1, momentum=0.9, grad_req='write'):
    """NumPy: the Dense weight after `steps` steps of loss = sum(net(x)), batch 2."""
    x = np.arange(8, dtype=np.float32).reshape(2, 4) / 8
    w = np.full((3, 4), 0.1, np.float32)
    mom = np.zeros_like(w)
    acc = np.zeros_like(w)
    for _ in range(steps):
        g = np.ones((2, 3), np.float32).T @ x
        acc = acc + g if grad_req == 'add' else g
        mom = momentum * mom - lr * acc / 2
        w = w + mom
    return w


def _train(net, x, trainer, steps):
    for _ in range(steps):
        with autograd.record():
            y = net(x)
        y.backward()
        trainer.step(2)


@pytest.mark.parametrize('hybridize', [False, True])
def test_repeated_steps_match_numpy(hybridize):
    net, x = _net_and_data()
    if hybridize:
        net.hybridize(static_alloc=True)
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1, 'momentum': 0.9})
    _train(net, x, trainer, 5)
    np.testing.assert_allclose(net.weight.data().asnumpy(), _sgd_momentum_reference(5),
                               rtol=1e-5)


def test_stale_gradient_still_raises_after_repeated_steps():
    net, x = _net_and_data()
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1})
    _train(net, x, trainer, 3)
    before = net.weight.data().asnumpy()
    with pytest.raises(UserWarning, match='has not been updated by backward'):
        trainer.step(2)                   # no backward since the last step
    np.testing.assert_array_equal(net.weight.data().asnumpy(), before)
    trainer.step(2, ignore_stale_grad=True)           # skipped: nothing fresh
    np.testing.assert_array_equal(net.weight.data().asnumpy(), before)
    _train(net, x, trainer, 1)                        # fresh again: updated
    assert not np.array_equal(net.weight.data().asnumpy(), before)


def test_grad_req_change_between_steps_applies():
    net, x = _net_and_data()
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1, 'momentum': 0.9})
    _train(net, x, trainer, 2)
    net.collect_params().setattr('grad_req', 'add')
    net.collect_params().zero_grad()
    _train(net, x, trainer, 2)
    # write for 2 steps then add (gradients accumulate from zero) for 2 more
    xs = np.arange(8, dtype=np.float32).reshape(2, 4) / 8
    g = np.ones((2, 3), np.float32).T @ xs
    w, mom = np.full((3, 4), 0.1, np.float32), np.zeros((3, 4), np.float32)
    for acc in (g, g, g, 2 * g):
        mom = 0.9 * mom - 0.1 * acc / 2
        w = w + mom
    np.testing.assert_allclose(net.weight.data().asnumpy(), w, rtol=1e-5)


def test_loaded_optimizer_states_are_used(tmp_path):
    net, x = _net_and_data()
    trainer = gluon.Trainer(net.collect_params(), 'sgd', {'learning_rate': 0.1, 'momentum': 0.9})
    _train(net, x, trainer, 2)
    trainer.save_states(str(tmp_path / 's'))
    _train(net, x, trainer, 2)
    trainer.load_states(str(tmp_path / 's'))     # momentum back to after step 2
    net.weight.set_data(mx.nd.array(_sgd_momentum_reference(2)))
    _train(net, x, trainer, 1)
    np.testing.assert_allclose(net.weight.data().asnumpy(), _sgd_momentum_reference(3),
                               rtol=1e-5)


def test_backward_head_gradient_and_retain_graph():
    x = mx.nd.array([1.0, 2.0, 3.0])
    x.attach_grad()
    with autograd.record():
        y = x * x
    y.backward(mx.nd.array([1.0, 0.5, 2.0]), retain_graph=True)
    np.testing.assert_allclose(x.grad.asnumpy(), [2.0, 2.0, 12.0])
    y.backward()                                   # the graph was retained
    np.testing.assert_allclose(x.grad.asnumpy(), [2.0, 4.0, 6.0])
    with pytest.raises(mx.MXNetError):
        y.backward()                               # now spent

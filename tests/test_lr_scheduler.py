"""mx.lr_scheduler: schedules, warmup, validation, log lines and the optimizer's base_lr rule.

Sequences marked "MXNet 1.9.1" were printed by the reference implementation.
"""
import logging
import math
import pickle

import numpy as np
import pytest

from mxtorch import lr_scheduler
from mxtorch import optimizer


def run(sched, n):
    return [sched(i) for i in range(n)]


def test_factor_spec_sequence():
    sched = lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=1.0)
    assert run(sched, 8) == [1, 1, 1, .5, .5, .25, .25, .125]


def test_factor_matches_closed_form():
    sched = lr_scheduler.FactorScheduler(step=3, factor=0.7, base_lr=0.2)
    for n in range(1, 30):
        assert sched(n) == pytest.approx(0.2 * 0.7 ** ((n - 1) // 3), rel=1e-12)


def test_factor_floor_and_log_lines(caplog):
    sched = lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=1, stop_factor_lr=0.2)
    with caplog.at_level(logging.INFO):
        values = run(sched, 10)
    assert values == [1, 1, 1, 0.5, 0.5, 0.25, 0.25, 0.2, 0.2, 0.2]    # MXNet 1.9.1
    assert caplog.messages == [
        'Update[3]: Change learning rate to 5.00000e-01',
        'Update[5]: Change learning rate to 2.50000e-01',
        'Update[7]: now learning rate arrived at 2.00000e-01, will not change in the future',
        'Update[9]: now learning rate arrived at 2.00000e-01, will not change in the future']


def test_factor_jump_logs_every_step(caplog):
    sched = lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=1)
    with caplog.at_level(logging.INFO):
        assert sched(9) == 0.0625
    assert len(caplog.messages) == 4 and all(m.startswith('Update[9]: ') for m in caplog.messages)
    assert sched(3) == 0.0625      # stateful: it never goes back up


def test_factor_with_warmup():
    sched = lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=1, warmup_steps=3,
                                         warmup_begin_lr=0.1)
    expected = [0.1, 0.4, 0.7, 0.5, 0.5, 0.25, 0.25, 0.125, 0.125, 0.0625]   # MXNet 1.9.1
    np.testing.assert_allclose(run(sched, 10), expected, rtol=1e-12)


def test_multifactor_spec_sequence(caplog):
    sched = lr_scheduler.MultiFactorScheduler(step=[2, 5], factor=0.1, base_lr=1)
    with caplog.at_level(logging.INFO):
        values = run(sched, 8)
    np.testing.assert_allclose(values, [1, 1, 1, .1, .1, .1, .01, .01], rtol=1e-12)
    assert caplog.messages == ['Update[3]: Change learning rate to 1.00000e-01',
                               'Update[6]: Change learning rate to 1.00000e-02']


def test_poly_and_cosine():
    poly = lr_scheduler.PolyScheduler(max_update=4, base_lr=1, pwr=2)
    np.testing.assert_allclose(run(poly, 6), [1, 0.5625, 0.25, 0.0625, 0, 0], atol=1e-12)
    cosine = lr_scheduler.CosineScheduler(max_update=4, base_lr=1)
    np.testing.assert_allclose(run(cosine, 6), [1, .853553, .5, .146447, 0, 0], atol=1e-6)


def test_poly_and_cosine_with_warmup():
    poly = lr_scheduler.PolyScheduler(max_update=4, base_lr=1, pwr=2, final_lr=0.1,
                                      warmup_steps=2, warmup_begin_lr=0.5)
    np.testing.assert_allclose(run(poly, 8), [0.5, 0.75, 1.0, 0.325, 0.1, 0.1, 0.1, 0.1],
                               rtol=1e-12)                                  # MXNet 1.9.1
    cosine = lr_scheduler.CosineScheduler(max_update=4, base_lr=1, warmup_steps=1,
                                          warmup_mode='constant', warmup_begin_lr=0.3)
    np.testing.assert_allclose(run(cosine, 8), [0.3, 1.0, 0.75, 0.25, 0, 0, 0, 0], atol=1e-12)


def test_poly_keeps_last_value_after_max_update():
    poly = lr_scheduler.PolyScheduler(max_update=4, base_lr=1)
    assert poly(10) == 1          # nothing computed yet: the base rate      (MXNet 1.9.1)
    assert poly(2) == 0.25
    assert poly(10) == 0.25


def test_base_scheduler_is_constant_after_warmup():
    sched = lr_scheduler.LRScheduler(base_lr=0.4, warmup_steps=4, warmup_begin_lr=0.0)
    np.testing.assert_allclose(run(sched, 7), [0, .1, .2, .3, .4, .4, .4], rtol=1e-12)


@pytest.mark.parametrize('make, message', [
    (lambda: lr_scheduler.LRScheduler(warmup_steps=-1), 'warmup_steps'),
    (lambda: lr_scheduler.LRScheduler(warmup_steps=1.5), 'warmup_steps'),
    (lambda: lr_scheduler.LRScheduler(base_lr=0.1, warmup_begin_lr=1.0), 'warmup_begin_lr'),
    (lambda: lr_scheduler.LRScheduler(warmup_mode='cubic'), 'cubic'),
    (lambda: lr_scheduler.FactorScheduler(step=0), 'step=0'),
    (lambda: lr_scheduler.FactorScheduler(step=2, factor=1.5), 'factor=1.5'),
    (lambda: lr_scheduler.MultiFactorScheduler(step=[2, 2]), 'increasing'),
    (lambda: lr_scheduler.MultiFactorScheduler(step=[0, 2]), 'greater or equal than 1'),
    (lambda: lr_scheduler.MultiFactorScheduler(step=3), 'list'),
    (lambda: lr_scheduler.MultiFactorScheduler(step=[2, 5], factor=2), 'factor=2'),
    (lambda: lr_scheduler.PolyScheduler(max_update=0), 'max_update'),
    (lambda: lr_scheduler.PolyScheduler(max_update=2.5), 'max_update'),
    (lambda: lr_scheduler.CosineScheduler(max_update=0), 'max_update'),
])
def test_validation(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_optimizer_overrides_scheduler_base_lr(capsys):
    sched = lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=1.0)
    opt = optimizer.SGD(learning_rate=0.3, lr_scheduler=sched)
    assert 'has been overwritten by ``learning_rate``' in capsys.readouterr().out
    assert sched.base_lr == 0.3
    assert sched.warmup_final_lr == 1.0          # MXNet leaves the warmup target alone
    assert opt.learning_rate == 0.3
    with pytest.raises(UserWarning, match='LRScheduler of the optimizer has already been defined'):
        opt.set_learning_rate(0.1)


def test_optimizer_keeps_scheduler_base_lr_without_learning_rate(capsys):
    sched = lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=2.0)
    opt = optimizer.SGD(lr_scheduler=sched)
    assert capsys.readouterr().out == ''
    assert opt.lr is None and opt.learning_rate == 2.0
    plain = optimizer.SGD()
    assert plain.learning_rate == 0.01
    plain.set_learning_rate(0.5)
    assert plain.learning_rate == 0.5


def test_first_update_uses_scheduler_of_one():
    sched = lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=1.0)
    opt = optimizer.SGD(learning_rate=1.0, lr_scheduler=sched)
    lrs = []
    for _ in range(3):
        opt._update_count(0)
        lrs.append(opt._get_lr(0))
    assert lrs == [1.0, 0.5, 0.25]


def test_scheduler_pickles_with_mxnet_attribute_names():
    sched = lr_scheduler.MultiFactorScheduler(step=[2, 5], factor=0.1, base_lr=1)
    sched(4)
    assert set(vars(sched)) == {'base_lr', 'warmup_steps', 'warmup_final_lr', 'warmup_begin_lr',
                                'warmup_mode', 'step', 'cur_step_ind', 'factor', 'count'}
    copy = pickle.loads(pickle.dumps(sched))
    assert vars(copy) == vars(sched)
    assert math.isclose(copy(6), 0.01)

"""mx.callback: exact log lines (root logger, INFO), checkpoints written and loaded back, and the
callbacks driven by Module.fit."""
import logging
import re
import types

import numpy as np
import pytest

import mxtorch as mx
from mxtorch import callback
from mxtorch.model import BatchEndParam

LABELS = [mx.nd.array([0, 1, 1, 0])]
PREDS = [mx.nd.array([[0.9, 0.1], [0.2, 0.8], [0.7, 0.3], [0.6, 0.4]])]
ACC = 0.75                                          # 3 of 4 right
CE = float(np.mean(-np.log([0.9, 0.8, 0.3, 0.6])))  # probabilities of the true labels


def scored(*names):
    metric = mx.metric.create(list(names) if len(names) > 1 else names[0])
    metric.update(LABELS, PREDS)
    return metric


@pytest.fixture
def clock(monkeypatch):
    """The callbacks' time.time() returns the values pushed into the list, in order."""
    times = []
    monkeypatch.setattr(callback, 'time', types.SimpleNamespace(time=lambda: times.pop(0)))
    return times


@pytest.fixture
def logs(caplog):
    caplog.set_level(logging.INFO)
    return caplog


def root_messages(caplog):
    assert all(r.name == 'root' and r.levelno == logging.INFO for r in caplog.records)
    return caplog.messages


# ---- Speedometer --------------------------------------------------------------------------------
def test_speedometer_auto_reset_logs_window_and_resets_local(clock, logs):
    speedometer = callback.Speedometer(batch_size=4, frequent=2)
    metric = scored('acc', 'ce')
    clock.extend([100.0, 100.25, 100.25])
    for nbatch in range(3):                          # nbatch 0 starts the clock, 2 reports
        speedometer(BatchEndParam(epoch=3, nbatch=nbatch, eval_metric=metric, locals=None))
    assert root_messages(logs) == [
        'Epoch[3] Batch [0-2]\tSpeed: 32.00 samples/sec\taccuracy=0.750000\tcross-entropy=%f' % CE]
    assert np.isnan(metric.get_name_value()[0][1])   # local statistics reset
    assert metric.get_global_name_value()[0] == ('accuracy', ACC)


def test_speedometer_without_auto_reset_counts_from_zero(clock, logs):
    speedometer = callback.Speedometer(batch_size=10, frequent=2, auto_reset=False)
    metric = scored('acc')
    clock.extend([5.0, 6.0, 7.0, 9.0, 9.0])
    for nbatch in range(5):
        speedometer(BatchEndParam(epoch=0, nbatch=nbatch, eval_metric=metric, locals=None))
    assert root_messages(logs) == [
        'Epoch[0] Batch [0-2]\tSpeed: 20.00 samples/sec\taccuracy=0.750000',
        'Epoch[0] Batch [0-4]\tSpeed: 10.00 samples/sec\taccuracy=0.750000']
    assert metric.get_name_value() == [('accuracy', ACC)]


def test_speedometer_without_metric(clock, logs):
    speedometer = callback.Speedometer(batch_size=3, frequent=1)
    clock.extend([0.0, 0.5, 0.5, 0.5, 0.5])
    for nbatch in range(3):
        speedometer(BatchEndParam(epoch=1, nbatch=nbatch, eval_metric=None, locals=None))
    # the third call comes with no time elapsed: infinite speed rather than a ZeroDivisionError
    assert root_messages(logs) == ['Iter[1] Batch [1]\tSpeed: 6.00 samples/sec',
                                   'Iter[1] Batch [2]\tSpeed: inf samples/sec']


def test_speedometer_restarts_its_clock_at_a_new_epoch(clock, logs):
    speedometer = callback.Speedometer(batch_size=1, frequent=2)
    metric = scored('acc')
    clock.extend([0.0, 1.0, 1.0, 10.0, 10.5, 10.5])
    for epoch, nbatch in [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]:
        metric.update(LABELS, PREDS)
        speedometer(BatchEndParam(epoch=epoch, nbatch=nbatch, eval_metric=metric, locals=None))
    assert root_messages(logs) == [
        'Epoch[0] Batch [0-2]\tSpeed: 2.00 samples/sec\taccuracy=0.750000',
        'Epoch[1] Batch [0-2]\tSpeed: 4.00 samples/sec\taccuracy=0.750000']


# ---- other batch-end and eval-end callbacks -----------------------------------------------------
def test_log_train_metric_every_period(logs):
    metric = scored('acc')
    log = callback.log_train_metric(period=2)
    for nbatch in range(4):
        log(BatchEndParam(epoch=5, nbatch=nbatch, eval_metric=metric, locals=None))
    assert root_messages(logs) == ['Iter[5] Batch[0] Train-accuracy=0.750000',
                                   'Iter[5] Batch[2] Train-accuracy=0.750000']


def test_log_train_metric_auto_reset(logs):
    metric = scored('acc', 'ce')
    callback.log_train_metric(period=1, auto_reset=True)(
        BatchEndParam(epoch=0, nbatch=7, eval_metric=metric, locals=None))
    assert root_messages(logs) == ['Iter[0] Batch[7] Train-accuracy=0.750000',
                                   'Iter[0] Batch[7] Train-cross-entropy=%f' % CE]
    assert np.isnan(metric.get_name_value()[0][1])


def test_progress_bar(logs):
    bar = callback.ProgressBar(total=4, length=10)
    for nbatch in (0, 1, 3, 4):
        bar(BatchEndParam(epoch=0, nbatch=nbatch, eval_metric=None, locals=None))
    callback.ProgressBar(total=3, length=10)(BatchEndParam(0, 1, None, None))
    callback.ProgressBar(total=2)(BatchEndParam(0, 1, None, None))
    assert root_messages(logs) == ['[----------] 0%\r', '[==--------] 25%\r', '[========--] 75%\r',
                                   '[==========] 100%\r', '[===-------] 34%\r',
                                   '[' + '=' * 40 + '-' * 40 + '] 50%\r']


def test_log_validation_metrics(logs):
    log = callback.LogValidationMetricsCallback()
    log(BatchEndParam(epoch=2, nbatch=0, eval_metric=scored('acc', 'ce'), locals=None))
    log(BatchEndParam(epoch=2, nbatch=0, eval_metric=None, locals=None))
    assert root_messages(logs) == ['Epoch[2] Validation-accuracy=0.750000',
                                   'Epoch[2] Validation-cross-entropy=%f' % CE]


# ---- checkpoints --------------------------------------------------------------------------------
def small_net():
    data = mx.sym.var('data')
    fc = mx.sym.FullyConnected(data, num_hidden=3, name='fc')
    bn = mx.sym.BatchNorm(fc, name='bn')
    return mx.sym.SoftmaxOutput(bn, name='softmax')


def test_do_checkpoint_every_period(tmp_path, logs):
    prefix = str(tmp_path / 'net')
    symbol = small_net()
    args = {'fc_weight': mx.nd.array(np.arange(12).reshape(3, 4)),
            'fc_bias': mx.nd.array([1, 2, 3]),
            'bn_gamma': mx.nd.ones((3,)), 'bn_beta': mx.nd.zeros((3,))}
    aux = {'bn_moving_mean': mx.nd.array([.5, .25, .125]), 'bn_moving_var': mx.nd.ones((3,))}
    save = callback.do_checkpoint(prefix, period=2)
    for epoch in range(4):
        save(epoch, symbol, args, aux)
    assert sorted(p.name for p in tmp_path.iterdir()) == ['net-0002.params', 'net-0004.params',
                                                          'net-symbol.json']
    assert root_messages(logs) == ['Saved checkpoint to "%s-0002.params"' % prefix,
                                   'Saved checkpoint to "%s-0004.params"' % prefix]
    loaded_sym, loaded_args, loaded_aux = mx.model.load_checkpoint(prefix, 4)
    assert loaded_sym.tojson() == symbol.tojson()
    assert loaded_args.keys() == args.keys() and loaded_aux.keys() == aux.keys()
    for saved, loaded in [(args, loaded_args), (aux, loaded_aux)]:
        for name, value in saved.items():
            np.testing.assert_array_equal(loaded[name].asnumpy(), value.asnumpy())


def test_do_checkpoint_period_below_one_saves_every_epoch(tmp_path):
    save = callback.do_checkpoint(str(tmp_path / 'm'), period=0)
    save(0, small_net(), {'fc_weight': mx.nd.ones((3, 4))}, {})
    save(1, None, {'fc_weight': mx.nd.ones((3, 4))}, {})
    assert sorted(p.name for p in tmp_path.iterdir()) == ['m-0001.params', 'm-0002.params',
                                                          'm-symbol.json']


def trained_module():
    mod = mx.mod.Module(small_net(), context=mx.cpu())
    mod.bind(data_shapes=[('data', (4, 4))], label_shapes=[('softmax_label', (4,))])
    mod.init_params(mx.init.Uniform(0.5))
    mod.init_optimizer(optimizer='sgd', optimizer_params={'learning_rate': 0.1, 'momentum': 0.9})
    mod.forward_backward(mx.io.DataBatch([mx.nd.ones((4, 4))], [mx.nd.array([0, 1, 2, 1])]))
    mod.update()
    return mod


def test_module_checkpoint_saves_module_params_and_states(tmp_path):
    mod = trained_module()
    prefix = str(tmp_path / 'mod')
    save = callback.module_checkpoint(mod, prefix, period=3, save_optimizer_states=True)
    for epoch in range(3):
        save(epoch)
    assert sorted(p.name for p in tmp_path.iterdir()) == ['mod-0003.pair.json', 'mod-0003.params',
                                                          'mod-0003.states', 'mod-symbol.json']
    symbol, args, aux = mx.model.load_checkpoint(prefix, 3)
    assert symbol.tojson() == mod.symbol.tojson()
    expected_args, expected_aux = mod.get_params()
    for saved, loaded in [(expected_args, args), (expected_aux, aux)]:
        assert loaded.keys() == saved.keys()
        for name, value in saved.items():
            np.testing.assert_array_equal(loaded[name].asnumpy(), value.asnumpy())


def test_module_checkpoint_without_states(tmp_path):
    save = callback.module_checkpoint(trained_module(), str(tmp_path / 'mod'))
    save(0, None, None, None)
    assert sorted(p.name for p in tmp_path.iterdir()) == ['mod-0001.params', 'mod-symbol.json']


# ---- with Module.fit ----------------------------------------------------------------------------
def test_fit_drives_speedometer_and_checkpoints(tmp_path, logs):
    rng = np.random.RandomState(0)
    train = mx.io.NDArrayIter(rng.rand(24, 4), rng.randint(0, 3, 24), batch_size=4)
    prefix = str(tmp_path / 'fit')
    mod = mx.mod.Module(small_net(), context=mx.cpu())
    mod.fit(train, num_epoch=2, optimizer_params={'learning_rate': 0.1},
            batch_end_callback=[callback.Speedometer(4, frequent=2)],
            epoch_end_callback=callback.do_checkpoint(prefix))
    speed = [m for m in logs.messages if 'Speed' in m]
    pattern = (r'Epoch\[(\d)\] Batch \[(\d)-(\d)\]\tSpeed: \d+\.\d\d samples/sec'
               r'\taccuracy=\d\.\d{6}$')
    assert [re.match(pattern, m).groups() for m in speed] == [
        ('0', '0', '2'), ('0', '2', '4'), ('1', '0', '2'), ('1', '2', '4')]
    assert sorted(p.name for p in tmp_path.iterdir()) == ['fit-0001.params', 'fit-0002.params',
                                                          'fit-symbol.json']
    _, args, aux = mx.model.load_checkpoint(prefix, 2)
    trained_args, trained_aux = mod.get_params()
    np.testing.assert_array_equal(args['fc_weight'].asnumpy(), trained_args['fc_weight'].asnumpy())
    np.testing.assert_array_equal(aux['bn_moving_var'].asnumpy(),
                                  trained_aux['bn_moving_var'].asnumpy())

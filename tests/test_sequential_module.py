"""SequentialModule: a chain of Modules computes what the fused symbol computes in one Module."""
import logging

import numpy as np
import pytest

import mxtorch as mx

BATCH, IN, HIDDEN, CLASSES = 4, 5, 6, 3


def _data(n=8, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, IN).astype('float32')
    y = (np.arange(n) % CLASSES).astype('float32')
    return x, y


def _params(seed=1):
    rng = np.random.RandomState(seed)
    return {'fc1_weight': mx.nd.array(rng.randn(HIDDEN, IN) * 0.5),
            'fc1_bias': mx.nd.array(rng.randn(HIDDEN) * 0.1),
            'fc2_weight': mx.nd.array(rng.randn(CLASSES, HIDDEN) * 0.5),
            'fc2_bias': mx.nd.array(rng.randn(CLASSES) * 0.1)}


def _lower():
    data = mx.sym.Variable('data')
    fc1 = mx.sym.FullyConnected(data, num_hidden=HIDDEN, name='fc1')
    return mx.sym.Activation(fc1, act_type='relu', name='relu1')


def _upper(data_name):
    fc2 = mx.sym.FullyConnected(mx.sym.Variable(data_name), num_hidden=CLASSES, name='fc2')
    return mx.sym.SoftmaxOutput(fc2, name='softmax')


def _fused_module():
    fc2 = mx.sym.FullyConnected(_lower(), num_hidden=CLASSES, name='fc2')
    return mx.mod.Module(mx.sym.SoftmaxOutput(fc2, name='softmax'))


def _sequential(auto_wiring):
    lower = mx.mod.Module(_lower(), label_names=None)
    if auto_wiring:
        upper = mx.mod.Module(_upper('data'))
        return mx.mod.SequentialModule().add(lower).add(upper, take_labels=True,
                                                         auto_wiring=True)
    upper = mx.mod.Module(_upper('relu1_output'), data_names=['relu1_output'])
    return mx.mod.SequentialModule().add(lower).add(upper, take_labels=True)


def _batch(x, y):
    return mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)])


def _grads(module):
    group = module._exec_group
    return {name: block[0].asnumpy() for name, block in zip(group.param_names, group.grad_arrays)}


@pytest.mark.parametrize('auto_wiring', [False, True])
def test_matches_fused_symbol(auto_wiring):
    x, y = _data(BATCH)
    shapes = [('data', (BATCH, IN))]
    labels = [('softmax_label', (BATCH,))]
    fused = _fused_module()
    fused.bind(shapes, labels, inputs_need_grad=True)
    fused.init_params(arg_params=_params())
    fused.init_optimizer(optimizer_params=(('learning_rate', 0.3), ('momentum', 0.9)))
    seq = _sequential(auto_wiring)
    seq.bind(shapes, labels, inputs_need_grad=True)
    seq.init_params(arg_params=_params())
    seq.init_optimizer(optimizer_params=(('learning_rate', 0.3), ('momentum', 0.9)))

    for step in range(2):
        x, y = _data(BATCH, seed=step)
        for mod in (fused, seq):
            mod.forward(_batch(x, y), is_train=True)
            mod.backward()
        np.testing.assert_allclose(seq.get_outputs()[0].asnumpy(),
                                   fused.get_outputs()[0].asnumpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(seq.get_input_grads()[0].asnumpy(),
                                   fused.get_input_grads()[0].asnumpy(), rtol=1e-5, atol=1e-6)
        fused_grads = _grads(fused)
        seq_grads = {**_grads(seq._modules[0]), **_grads(seq._modules[1])}
        assert sorted(seq_grads) == sorted(fused_grads)
        for name, grad in fused_grads.items():
            np.testing.assert_allclose(seq_grads[name], grad, rtol=1e-5, atol=1e-6)
        fused.update()
        seq.update()
        fused_args, _ = fused.get_params()
        seq_args, seq_aux = seq.get_params()
        assert seq_aux == {}
        assert sorted(seq_args) == sorted(fused_args)
        for name, value in fused_args.items():
            np.testing.assert_allclose(seq_args[name].asnumpy(), value.asnumpy(),
                                       rtol=1e-5, atol=1e-6)


def test_fit_score_predict_match_fused():
    x, y = _data(12)
    results = []
    for mod in (_fused_module(), _sequential(auto_wiring=True)):
        train = mx.io.NDArrayIter(x, y, batch_size=BATCH)
        mod.fit(train, num_epoch=3, arg_params=_params(),
                optimizer_params=(('learning_rate', 0.5),))
        score = mod.score(mx.io.NDArrayIter(x, y, batch_size=BATCH), 'acc')
        predicted = mod.predict(mx.io.NDArrayIter(x, y, batch_size=BATCH)).asnumpy()
        args, _ = mod.get_params()
        results.append((score, predicted, {k: v.asnumpy() for k, v in args.items()}))
    (score_f, pred_f, args_f), (score_s, pred_s, args_s) = results
    assert score_s == score_f
    assert pred_s.shape == (12, CLASSES)
    np.testing.assert_allclose(pred_s, pred_f, rtol=1e-5, atol=1e-6)
    for name in args_f:
        np.testing.assert_allclose(args_s[name], args_f[name], rtol=1e-5, atol=1e-6)


def test_fit_logs_and_validation(caplog):
    x, y = _data(8)
    seq = _sequential(auto_wiring=False)
    with caplog.at_level(logging.INFO):
        seq.fit(mx.io.NDArrayIter(x, y, batch_size=BATCH),
                eval_data=mx.io.NDArrayIter(x, y, batch_size=BATCH), num_epoch=1,
                initializer=mx.init.Xavier())
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith('Epoch[0] Train-accuracy=') for m in messages)
    assert any(m.startswith('Epoch[0] Validation-accuracy=') for m in messages)


def test_bind_wiring_labels_and_input_grads():
    seq = _sequential(auto_wiring=True)
    lower, upper = seq._modules
    seq.bind([('data', (BATCH, IN))], [('softmax_label', (BATCH,))])
    assert seq.data_names == ['data'] and seq.output_names == ['softmax_output']
    assert [tuple(d) for d in seq.data_shapes] == [('data', (BATCH, IN))]
    assert [tuple(d) for d in seq.label_shapes] == [('softmax_label', (BATCH,))]
    assert seq.output_shapes == [('softmax_output', (BATCH, CLASSES))]
    # auto_wiring renamed relu1_output to the upper module's 'data'
    assert [tuple(d) for d in upper.data_shapes] == [('data', (BATCH, HIDDEN))]
    # labels only go to take_labels modules
    assert lower.label_shapes is None
    assert [tuple(d) for d in upper.label_shapes] == [('softmax_label', (BATCH,))]
    # modules after the first compute input gradients when training
    assert not lower.inputs_need_grad and upper.inputs_need_grad
    assert seq.for_training and not seq.inputs_need_grad

    seq.init_params()      # Module (as MXNet's) only rebinds once it has parameters
    seq.bind([('data', (2, IN))], for_training=False, force_rebind=True)
    assert not upper.inputs_need_grad and not upper.for_training
    assert seq.output_shapes == [('softmax_output', (2, CLASSES))]


def test_label_shapes_none_without_take_labels():
    lower = mx.mod.Module(_lower(), label_names=None)
    fc2 = mx.mod.Module(mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2,
                                              name='fc2'), label_names=None)
    seq = mx.mod.SequentialModule().add(lower).add(fc2, auto_wiring=True)
    seq.bind([('data', (BATCH, IN))], [('softmax_label', (BATCH,))])
    assert seq.label_shapes is None
    assert fc2.label_shapes is None


def test_update_metric_only_from_take_labels_modules():
    calls = []

    class Spy(mx.metric.EvalMetric):
        def __init__(self):
            super().__init__('spy')

        def update(self, labels, preds):
            calls.append([p.shape for p in preds])

    x, y = _data(BATCH)
    seq = _sequential(auto_wiring=True)
    seq.bind([('data', (BATCH, IN))], [('softmax_label', (BATCH,))])
    seq.init_params(arg_params=_params())
    seq.forward(_batch(x, y), is_train=False)
    seq.update_metric(Spy(), [mx.nd.array(y)])
    assert calls == [[(BATCH, CLASSES)]]


def test_auto_wiring_count_mismatch():
    lower = mx.mod.Module(_lower(), label_names=None)
    two = mx.sym.Variable('a') + mx.sym.Variable('b')
    seq = mx.mod.SequentialModule().add(lower).add(
        mx.mod.Module(two, data_names=['a', 'b'], label_names=None), auto_wiring=True)
    with pytest.raises(AssertionError, match='auto_wiring'):
        seq.bind([('data', (BATCH, IN))])


def test_duplicated_parameter_names():
    first = mx.mod.Module(_lower(), label_names=None)
    second = mx.mod.Module(mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=HIDDEN,
                                                 name='fc1'), label_names=None)
    seq = mx.mod.SequentialModule().add(first).add(second, auto_wiring=True)
    seq.bind([('data', (BATCH, HIDDEN))], for_training=False)
    with pytest.raises(AssertionError, match=r'Duplicated parameter names: name "fc1_\w+" in '
                                             r'layer 1 \(Module\) is already used in layer 0'):
        seq.init_params()
    assert not seq.params_initialized


def test_add_rejects_unknown_meta_and_resets_state():
    seq = _sequential(auto_wiring=True)
    seq.bind([('data', (BATCH, IN))], [('softmax_label', (BATCH,))])
    seq.init_params()
    with pytest.raises(AssertionError, match='Unknown meta "take_label", a typo?'):
        seq.add(mx.mod.Module(_lower(), label_names=None), take_label=True)
    assert len(seq._modules) == 2 and seq.binded
    assert seq.add(mx.mod.Module(_upper('data'))) is seq
    assert not seq.binded and not seq.params_initialized and not seq.optimizer_initialized


def test_bind_preconditions():
    with pytest.raises(AssertionError, match='empty SequentialModule'):
        mx.mod.SequentialModule().bind([('data', (BATCH, IN))])
    seq = _sequential(auto_wiring=True)
    with pytest.raises(AssertionError, match='shared_module'):
        seq.bind([('data', (BATCH, IN))], shared_module=seq)
    with pytest.raises(mx.MXNetError, match='bind'):
        seq.forward(_batch(*_data(BATCH)))


def test_params_roundtrip_and_optimizer_warning(caplog):
    seq = _sequential(auto_wiring=True)
    seq.bind([('data', (BATCH, IN))], [('softmax_label', (BATCH,))])
    seq.init_params()
    seq.set_params(_params(), {})
    args, aux = seq.get_params()
    assert aux == {}
    for name, value in _params().items():
        np.testing.assert_allclose(args[name].asnumpy(), value.asnumpy(), rtol=1e-6)
    seq.init_params(arg_params={})           # already initialised: ignored
    seq.init_optimizer()
    with caplog.at_level(logging.WARNING):
        seq.init_optimizer()
    assert 'optimizer already initialized, ignoring.' in caplog.text


def test_input_grads_need_inputs_need_grad():
    seq = _sequential(auto_wiring=True)
    seq.bind([('data', (BATCH, IN))], [('softmax_label', (BATCH,))])
    seq.init_params()
    seq.forward_backward(_batch(*_data(BATCH)))
    with pytest.raises(AssertionError, match='inputs_need_grad'):
        seq.get_input_grads()


def test_install_monitor_reaches_every_module():
    class Recorder:
        def __init__(self):
            self.executors = []

        def install(self, executor):
            self.executors.append(executor)

    seq = _sequential(auto_wiring=True)
    seq.bind([('data', (BATCH, IN))], [('softmax_label', (BATCH,))])
    monitor = Recorder()
    seq.install_monitor(monitor)
    assert monitor.executors == [m._exec_group.execs[0] for m in seq._modules]

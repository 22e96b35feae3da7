"""PythonModule and PythonLossModule, alone and as the loss stage of a SequentialModule."""
import logging

import numpy as np
import pytest

import mxtorch as mx

BATCH, IN, CLASSES = 4, 5, 3


class Scale(mx.mod.PythonModule):
    """y = 2 * x, written in Python."""

    def __init__(self):
        super().__init__(data_names=['x'], label_names=None, output_names=['scale_output'])
        self._out = None
        self._grad = None

    def _compute_output_shapes(self):
        return [('scale_output', self.data_shapes[0][1])]

    def forward(self, data_batch, is_train=None):
        self._out = data_batch.data[0] * 2

    def backward(self, out_grads=None):
        self._grad = out_grads[0] * 2

    def get_outputs(self, merge_multi_context=True):
        return [self._out]

    def get_input_grads(self, merge_multi_context=True):
        return [self._grad]


def softmax_ce_grad(scores, labels):
    """Gradient of softmax cross-entropy with respect to the scores, in numpy."""
    s = scores.asnumpy().astype(np.float64)
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    p[np.arange(len(p)), labels.asnumpy().astype(int)] -= 1
    return p.astype(np.float32)


def _fc_params(seed=1):
    rng = np.random.RandomState(seed)
    return {'fc_weight': mx.nd.array(rng.randn(CLASSES, IN) * 0.5),
            'fc_bias': mx.nd.array(rng.randn(CLASSES) * 0.1)}


def _fc():
    return mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=CLASSES, name='fc')


def _data(n, seed=0):
    rng = np.random.RandomState(seed)
    return rng.randn(n, IN).astype('float32'), (np.arange(n) % CLASSES).astype('float32')


def _python_loss_chain(grad_func=softmax_ce_grad):
    return (mx.mod.SequentialModule()
            .add(mx.mod.Module(_fc(), label_names=None))
            .add(mx.mod.PythonLossModule(grad_func=grad_func), take_labels=True,
                 auto_wiring=True))


def test_python_module_shapes_and_no_params(caplog):
    mod = Scale()
    mod.bind([('x', (BATCH, 7))])
    assert mod.binded
    assert mod.data_names == ['x'] and mod.output_names == ['scale_output']
    assert mod.data_shapes == [('x', (BATCH, 7))] and mod.label_shapes is None
    assert mod.output_shapes == [('scale_output', (BATCH, 7))]
    assert mod.get_params() == ({}, {})
    mod.init_params()
    mod.init_optimizer()
    mod.update()
    assert mod.params_initialized
    with caplog.at_level(logging.WARNING):
        mod.bind([('x', (2, 7))])
    assert 'Already bound, ignoring bind()' in caplog.text
    mod.bind([('x', (2, 3))], force_rebind=True)
    assert mod.output_shapes == [('scale_output', (2, 3))]
    out = mod.predict(mx.nd.ones((2, 3)))
    np.testing.assert_array_equal(out.asnumpy(), np.full((2, 3), 2.0))


def test_python_module_bind_checks():
    with pytest.raises(AssertionError, match='data_names'):
        Scale().bind([('data', (BATCH, 7))])
    with pytest.raises(AssertionError, match="grad_req='write'"):
        Scale().bind([('x', (BATCH, 7))], grad_req='add')
    loss = mx.mod.PythonLossModule()
    with pytest.raises(AssertionError, match='label_names'):
        loss.bind([('data', (BATCH, 3))], [('label', (BATCH,))])
    with pytest.raises(NotImplementedError, match='_compute_output_shapes'):
        mx.mod.PythonModule(['x'], None, ['y']).bind([('x', (1,))])


def test_python_module_update_metric():
    metric = mx.metric.Accuracy()
    mod = Scale()
    mod.bind([('x', (2, 3))])
    mod.forward(mx.io.DataBatch([mx.nd.array([[0, 1, 0], [1, 0, 0]])]))
    mod.update_metric(metric, [mx.nd.array([1, 1])])       # bound without labels: nothing
    assert metric.num_inst == 0

    loss = mx.mod.PythonLossModule()
    loss.bind([('data', (2, 3))], [('softmax_label', (2,))])
    loss.forward(mx.io.DataBatch([mx.nd.array([[0, 1, 0], [1, 0, 0]])], [mx.nd.array([1, 1])]))
    loss.update_metric(metric, [mx.nd.array([1, 1])])
    assert metric.get() == ('accuracy', 0.5)
    with pytest.raises(RuntimeError, match='presliced'):
        loss.update_metric(metric, [[mx.nd.array([1, 1])]], pre_sliced=True)


def test_python_loss_module_basics():
    loss = mx.mod.PythonLossModule(name='ce', grad_func=softmax_ce_grad)
    assert loss.data_names == ['data'] and loss.output_names == ['ce_output']
    loss.bind([('data', (BATCH, CLASSES))], [('softmax_label', (BATCH,))])
    assert loss.output_shapes == [('ce_output', (BATCH, CLASSES))]
    scores = mx.nd.array(np.arange(12).reshape(BATCH, CLASSES) / 4.0)
    labels = mx.nd.array([0, 1, 2, 0])
    loss.forward(mx.io.DataBatch([scores], [labels]))
    assert loss.get_outputs()[0] is scores
    loss.backward()
    grad = loss.get_input_grads()[0]
    assert isinstance(grad, mx.nd.NDArray)
    np.testing.assert_allclose(grad.asnumpy(), softmax_ce_grad(scores, labels), rtol=1e-6)
    with pytest.raises(AssertionError, match='out_grads should be None'):
        loss.backward(out_grads=[grad])
    with pytest.raises(AssertionError, match='merge_multi_context'):
        loss.get_outputs(merge_multi_context=False)
    loss.install_monitor(mx.mon.Monitor(1))      # no executors: nothing to watch


def test_python_loss_module_constructor_checks():
    with pytest.raises(AssertionError, match='one data name'):
        mx.mod.PythonLossModule(data_names=('a', 'b'))
    with pytest.raises(AssertionError, match='one label name'):
        mx.mod.PythonLossModule(label_names=('a', 'b'))
    with pytest.raises(AssertionError, match='callable'):
        mx.mod.PythonLossModule(grad_func=3)


def test_python_loss_module_default_gradient_is_softmax_cross_entropy():
    # MXNet raised NotImplementedError without grad_func; mxtorch defaults to the softmax
    # cross-entropy gradient, softmax(scores) - one_hot(labels), per sample
    loss = mx.mod.PythonLossModule()
    loss.bind([('data', (BATCH, CLASSES))], [('softmax_label', (BATCH,))])
    scores = mx.nd.array(np.arange(12).reshape(BATCH, CLASSES) / 4.0 - 1.0)
    labels = mx.nd.array([2, 0, 1, 2])
    loss.forward(mx.io.DataBatch([scores], [labels]))
    loss.backward()
    np.testing.assert_allclose(loss.get_input_grads()[0].asnumpy(),
                               softmax_ce_grad(scores, labels), rtol=1e-5, atol=1e-7)
    # (N, C, K) scores are flattened per sample like SoftmaxOutput's default
    cube = mx.mod.PythonLossModule()
    cube.bind([('data', (2, 3, 2))], [('softmax_label', (2,))])
    scores = mx.nd.array(np.linspace(-1, 1, 12).reshape(2, 3, 2))
    cube.forward(mx.io.DataBatch([scores], [mx.nd.array([5, 1])]))
    cube.backward()
    expected = softmax_ce_grad(scores.reshape((2, 6)), mx.nd.array([5, 1])).reshape(2, 3, 2)
    np.testing.assert_allclose(cube.get_input_grads()[0].asnumpy(), expected, rtol=1e-5,
                               atol=1e-7)

    loss.forward(mx.io.DataBatch([scores.reshape((4, 3))], [mx.nd.array([0, 3, 1, 1])]))
    with pytest.raises(mx.MXNetError, match=r'class indices in \[0, 3\), given 3'):
        loss.backward()
    loss.forward(mx.io.DataBatch([scores.reshape((4, 3))], [mx.nd.array([0, 1])]))
    with pytest.raises(mx.MXNetError, match=r'expected 4 labels .* given shape \(2,\)'):
        loss.backward()
    inference = mx.mod.PythonLossModule()
    inference.bind([('data', (BATCH, CLASSES))], for_training=False)
    with pytest.raises(AssertionError, match='for_training'):
        inference.backward()


def test_python_loss_stage_default_gradient_trains_like_softmax_output():
    x, y = _data(12)
    results = []
    for mod in (mx.mod.Module(mx.sym.SoftmaxOutput(_fc(), name='softmax')),
                _python_loss_chain(grad_func=None)):
        mod.fit(mx.io.NDArrayIter(x, y, batch_size=BATCH), num_epoch=2,
                arg_params=_fc_params(), optimizer_params=(('learning_rate', 0.5),))
        results.append({k: v.asnumpy() for k, v in mod.get_params()[0].items()})
    for name, value in results[0].items():
        np.testing.assert_allclose(results[1][name], value, rtol=1e-5, atol=1e-6)


def test_sequential_module_with_python_stage_installs_monitor_on_the_executors():
    seq = _python_loss_chain()
    seq.bind([('data', (BATCH, IN))], [('softmax_label', (BATCH,))])
    seq.init_params(arg_params=_fc_params())
    monitor = mx.mon.Monitor(1, pattern='fc_output')
    seq.install_monitor(monitor)
    assert monitor.exes == seq._modules[0]._exec_group.execs
    x, y = _data(BATCH)
    monitor.tic()
    seq.forward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]), is_train=False)
    (_, name, text), = monitor.toc()
    params = _fc_params()
    fc = x @ params['fc_weight'].asnumpy().T + params['fc_bias'].asnumpy()
    assert name == 'fc_output'
    np.testing.assert_allclose(float(text.split()[0]), np.sqrt(np.mean(fc ** 2)), rtol=1e-5)


def test_python_loss_stage_matches_softmax_output():
    x, y = _data(BATCH)
    batch = mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)])
    shapes, labels = [('data', (BATCH, IN))], [('softmax_label', (BATCH,))]
    fused = mx.mod.Module(mx.sym.SoftmaxOutput(_fc(), name='softmax'))
    seq = _python_loss_chain()
    for mod in (fused, seq):
        mod.bind(shapes, labels, inputs_need_grad=True)
        mod.init_params(arg_params=_fc_params())
        mod.init_optimizer(optimizer_params=(('learning_rate', 0.2),))
        mod.forward_backward(batch)

    scores = seq.get_outputs()[0].asnumpy()
    assert seq.output_names == ['pyloss_output'] and scores.shape == (BATCH, CLASSES)
    probs = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(probs, fused.get_outputs()[0].asnumpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(seq.get_input_grads()[0].asnumpy(),
                               fused.get_input_grads()[0].asnumpy(), rtol=1e-5, atol=1e-6)
    fc = seq._modules[0]
    for name in ('fc_weight', 'fc_bias'):
        np.testing.assert_allclose(fc._exec_group.execs[0].grad_dict[name].asnumpy(),
                                   fused._exec_group.execs[0].grad_dict[name].asnumpy(),
                                   rtol=1e-5, atol=1e-6)
    fused.update()
    seq.update()
    for name, value in fused.get_params()[0].items():
        np.testing.assert_allclose(seq.get_params()[0][name].asnumpy(), value.asnumpy(),
                                   rtol=1e-5, atol=1e-6)


def test_python_loss_stage_fit_matches_softmax_output():
    x, y = _data(12)
    results = []
    for mod in (mx.mod.Module(mx.sym.SoftmaxOutput(_fc(), name='softmax')),
                _python_loss_chain()):
        mod.fit(mx.io.NDArrayIter(x, y, batch_size=BATCH), num_epoch=3,
                arg_params=_fc_params(), optimizer_params=(('learning_rate', 0.5),))
        score = mod.score(mx.io.NDArrayIter(x, y, batch_size=BATCH), 'acc')
        results.append((score, {k: v.asnumpy() for k, v in mod.get_params()[0].items()}))
    (score_f, args_f), (score_s, args_s) = results
    assert score_s == score_f
    for name in args_f:
        np.testing.assert_allclose(args_s[name], args_f[name], rtol=1e-5, atol=1e-6)

"""Module: golden training replays, checkpoints with optimizer states, the optimizer
trajectories, data parallelism, the state machine and the high-level API."""
import json
import logging
from collections import namedtuple

import numpy as np
import pytest

import mxtorch as mx

TRAINED = ['mlp', 'lenet_bn', 'resnet_tiny', 'lstm_lm']     # mixed_ops trained with live Dropout
SGD = {'learning_rate': 0.1, 'momentum': 0.9, 'wd': 1e-4}


def _batch(z, prefix, names):
    data = [mx.nd.array(z[prefix + n]) for n in names['data']]
    label = [mx.nd.array(z[prefix + n]) for n in names['label']]
    return mx.io.DataBatch(data, label)


def _names(sym, z, prefix):
    present = {k[len(prefix):] for k in z.keys() if k.startswith(prefix)}
    args = sym.list_arguments()
    data = [n for n in args if n in present and not n.endswith('label')]
    label = [n for n in args if n in present and n.endswith('label')]
    return {'data': data, 'label': label}


def _golden_module(folder, model):
    z = np.load(folder / ('%s-train.npz' % model))
    sym = mx.sym.load(str(folder / ('%s-symbol.json' % model)))
    names = _names(sym, z, 'batch0/')
    mod = mx.mod.Module(sym, data_names=names['data'], label_names=names['label'])
    mod.bind([(n, z['batch0/' + n].shape) for n in names['data']],
             [(n, z['batch0/' + n].shape) for n in names['label']])
    return z, sym, names, mod


@pytest.mark.parametrize('model', TRAINED)
def test_replaying_mxnet_training_gives_its_checkpoint(golden, model):
    folder = golden / 'checkpoints'
    z, sym, names, mod = _golden_module(folder, model)
    init = {k[len('init_param/'):]: mx.nd.array(z[k]) for k in z.keys()
            if k.startswith('init_param/')}
    init_aux = {k[len('init_aux/'):]: mx.nd.array(z[k]) for k in z.keys()
                if k.startswith('init_aux/')}
    mod.init_params(arg_params=init, aux_params=init_aux)
    mod.init_optimizer(optimizer='sgd', optimizer_params=SGD)
    for k in range(4):
        mod.forward_backward(_batch(z, 'batch%d/' % k, names))
        mod.update()
    arg, aux = mod.get_params()
    expected = mx.nd.load(str(folder / ('%s-0003.params' % model)))
    for key, value in expected.items():
        got = (arg if key.startswith('arg:') else aux)[key[4:]].asnumpy()
        np.testing.assert_allclose(got, value.asnumpy(), rtol=1e-4, atol=2e-5, err_msg=key)
    manifest = json.loads((folder / 'manifest.json').read_text())['models'][model]
    index = {int(i): n for i, n in manifest['states_file']['index_to_param'].items()}
    for i, state in mod._updater.states.items():
        np.testing.assert_allclose(state.asnumpy(), z['opt_state/' + index[i]], rtol=1e-4,
                                   atol=2e-5, err_msg=index[i])


def test_module_load_with_optimizer_states_continues_training(golden, tmp_path):
    folder = golden / 'checkpoints'
    mod = mx.mod.Module.load(str(folder / 'mlp'), 3, load_optimizer_states=True)
    assert mod.params_initialized and not mod.binded
    mod.bind([('data', (8, 20))], [('softmax_label', (8,))])
    mod.init_optimizer(optimizer='sgd', optimizer_params=SGD)
    z = np.load(folder / 'mlp-train.npz')
    for i, name in enumerate(mod._param_names):
        np.testing.assert_allclose(mod._updater.states[i].asnumpy(), z['opt_state/' + name],
                                   rtol=1e-6)
    # one more step: w1 = w0 + mom*m0 - lr*(rescale*g + wd*w0), with MXNet's recorded gradient
    step = np.load(folder / 'optim-sgd-expected.npz')
    w0 = {n: step['step0/param/' + n] for n in mod._param_names}
    mod.forward_backward(mx.io.DataBatch([mx.nd.array(step['step1/input/data'])],
                                         [mx.nd.array(step['step1/input/softmax_label'])]))
    mod.update()
    arg, _ = mod.get_params()
    for name in mod._param_names:
        wd = SGD['wd'] if name.endswith('_weight') else 0.0
        g = step['step1/raw_grad/' + name] / 8
        expect = w0[name] + 0.9 * z['opt_state/' + name] - 0.1 * (g + wd * w0[name])
        np.testing.assert_allclose(arg[name].asnumpy(), expect, rtol=1e-5, atol=1e-6)
    # and our own checkpoint of it round-trips, states included
    mod.save_checkpoint(str(tmp_path / 'again'), 4, save_optimizer_states=True)
    back = mx.mod.Module.load(str(tmp_path / 'again'), 4, load_optimizer_states=True)
    back.bind([('data', (8, 20))], [('softmax_label', (8,))])
    back.init_optimizer(optimizer='sgd', optimizer_params=SGD)
    for i, state in mod._updater.states.items():
        np.testing.assert_array_equal(back._updater.states[i].asnumpy(), state.asnumpy())
    for name, value in back.get_params()[0].items():
        np.testing.assert_array_equal(value.asnumpy(), arg[name].asnumpy())


@pytest.mark.parametrize('model', TRAINED)
def test_every_golden_checkpoint_resumes_with_mxnets_optimizer_states(golden, model):
    """Module.load(..., load_optimizer_states=True) on each MXNet checkpoint: its momenta are the
    ones MXNet recorded, and one more step equals a NumPy SGD step with momentum on them."""
    folder = golden / 'checkpoints'
    z = np.load(folder / ('%s-train.npz' % model))
    names = _names(mx.sym.load(str(folder / ('%s-symbol.json' % model))), z, 'batch0/')
    mod = mx.mod.Module.load(str(folder / model), 3, load_optimizer_states=True,
                             data_names=names['data'], label_names=names['label'])
    mod.bind([(n, z['batch0/' + n].shape) for n in names['data']],
             [(n, z['batch0/' + n].shape) for n in names['label']])
    mod.init_optimizer(optimizer='sgd', optimizer_params=SGD)
    params = mod._exec_group.param_names
    assert sorted(mod._updater.states) == list(range(len(params)))
    for i, name in enumerate(params):
        np.testing.assert_array_equal(mod._updater.states[i].asnumpy(), z['opt_state/' + name],
                                      err_msg=name)
    w0 = {k: v.asnumpy().copy() for k, v in mod.get_params()[0].items()}
    mod.forward_backward(_batch(z, 'batch0/', names))
    grads = {n: g[0].asnumpy().copy() for n, g in zip(params, mod._exec_group.grad_arrays)
             if g[0] is not None}
    mod.update()
    arg = mod.get_params()[0]
    batch = z['batch0/' + names['data'][0]].shape[0]
    wd_mult = json.loads((folder / 'manifest.json').read_text())['models'][model][
        'training']['optimizer']['wd_mult']
    for name, g in grads.items():
        wd = SGD['wd'] * wd_mult.get(name, 1.0)
        mom = 0.9 * z['opt_state/' + name] - 0.1 * (g / batch + wd * w0[name])
        np.testing.assert_allclose(arg[name].asnumpy(), w0[name] + mom, rtol=1e-5, atol=1e-6,
                                   err_msg=name)


def _trajectory_tags(golden):
    hyper = json.loads((golden / 'checkpoints' / 'optim-hyperparams.json').read_text())
    return hyper['optimizers']


@pytest.mark.parametrize('tag', ['sgd', 'sgd_nomom_clip', 'adam', 'adam_clip', 'rmsprop',
                                 'rmsprop_centered', 'rmsprop_clip', 'adagrad', 'adagrad_clip',
                                 'nag', 'nag_clip'])
def test_optimizer_trajectories_through_module(golden, tag):
    folder = golden / 'checkpoints'
    info = _trajectory_tags(golden)[tag]
    exp = np.load(folder / ('optim-%s-expected.npz' % tag))
    mod = mx.mod.Module.load(str(folder / 'mlp'), 3)
    mod.bind([('data', (8, 20))], [('softmax_label', (8,))])
    mod.init_optimizer(optimizer=info['optimizer'], optimizer_params=info['given_params'])
    for k in (1, 2, 3):
        mod.forward_backward(mx.io.DataBatch([mx.nd.array(exp['step%d/input/data' % k])],
                                             [mx.nd.array(exp['step%d/input/softmax_label' % k])]))
        for name, grads in zip(mod._exec_group.param_names, mod._exec_group.grad_arrays):
            np.testing.assert_allclose(grads[0].asnumpy(), exp['step%d/raw_grad/%s' % (k, name)],
                                       rtol=1e-4, atol=1e-6)
        mod.update()
        arg, _ = mod.get_params()
        for name, value in arg.items():
            np.testing.assert_allclose(value.asnumpy(), exp['step%d/param/%s' % (k, name)],
                                       atol=1e-6, err_msg='%s step %d %s' % (tag, k, name))


# ---- the examples of the Module reference page ---------------------------------------------------
def test_seed_page_forward_example_reshapes_on_the_fly():
    Batch = namedtuple('Batch', ['data'])
    data = mx.sym.Variable('data')
    out = data * 2
    mod = mx.mod.Module(symbol=out, label_names=None)
    mod.bind(data_shapes=[('data', (1, 10))])
    mod.init_params()
    mod.forward(Batch([mx.nd.ones((1, 10))]))
    np.testing.assert_array_equal(mod.get_outputs()[0].asnumpy(), np.full((1, 10), 2.0))
    mod.forward(Batch([mx.nd.ones((3, 5))]))
    np.testing.assert_array_equal(mod.get_outputs()[0].asnumpy(), np.full((3, 5), 2.0))


def _mlp_symbol():
    data = mx.symbol.Variable('data')
    fc1 = mx.symbol.FullyConnected(data, name='fc1', num_hidden=128)
    act1 = mx.symbol.Activation(fc1, name='relu1', act_type='relu')
    fc2 = mx.symbol.FullyConnected(act1, name='fc2', num_hidden=64)
    act2 = mx.symbol.Activation(fc2, name='relu2', act_type='relu')
    fc3 = mx.symbol.FullyConnected(act2, name='fc3', num_hidden=10)
    return mx.symbol.SoftmaxOutput(fc3, name='softmax')


def _iter(n=64, batch=16, seed=0):
    """Four classes; class c lifts features [10c, 10c+10) by 0.5 over uniform noise."""
    rng = np.random.RandomState(seed)
    y = rng.randint(0, 4, n)
    x = rng.rand(n, 100).astype(np.float32)
    for c in range(4):
        x[y == c, 10 * c:10 * c + 10] += 0.5
    return mx.io.NDArrayIter(x, y.astype(np.float32), batch_size=batch)


def test_seed_page_workflow_and_documented_outputs():
    mod = mx.mod.Module(_mlp_symbol())
    train = _iter()
    mod.bind(data_shapes=train.provide_data, label_shapes=train.provide_label)
    mod.init_params()
    mod.init_optimizer(kvstore='local', optimizer='sgd',
                       optimizer_params=(('learning_rate', 0.005),))
    batch = next(iter(train))
    mod.forward(batch)
    probs = mod.get_outputs()[0].asnumpy()
    assert probs.shape == (16, 10)
    np.testing.assert_allclose(probs.sum(1), 1, rtol=1e-5)
    np.testing.assert_allclose(probs, 0.1, atol=1e-3)        # Uniform(0.01) init: near uniform
    mod.backward()
    w_before = mod.get_params()[0]['fc3_weight'].asnumpy().copy()
    mod.update()
    arg, aux = mod.get_params()
    assert sorted(arg) == ['fc1_bias', 'fc1_weight', 'fc2_bias', 'fc2_weight', 'fc3_bias',
                           'fc3_weight'] and aux == {}
    assert arg['fc1_weight'].shape == (128, 100) and arg['fc1_weight'].context == mx.cpu()
    assert not np.allclose(w_before, arg['fc3_weight'].asnumpy())
    assert mod.output_shapes == [('softmax_output', (16, 10))]
    assert mod.data_shapes[0].name == 'data' and mod.label_shapes[0].shape == (16,)


def test_state_machine_errors_and_warnings(caplog):
    mod = mx.mod.Module(_mlp_symbol())
    batch = next(iter(_iter()))
    with pytest.raises(mx.MXNetError, match='bind'):
        mod.forward(batch)
    with pytest.raises(mx.MXNetError, match='bind'):
        mod.init_params()
    mod.bind([('data', (16, 100))], [('softmax_label', (16,))])
    with pytest.raises(mx.MXNetError, match='init_params'):
        mod.forward(batch)
    with pytest.raises(mx.MXNetError, match='init_params'):
        mod.init_optimizer()
    mod.init_params()
    with pytest.raises(mx.MXNetError, match='init_optimizer'):
        mod.update()
    with caplog.at_level(logging.WARNING):
        mod.bind([('data', (16, 100))], [('softmax_label', (16,))])
    assert 'Already bound, ignoring bind()' in caplog.text
    with pytest.warns(UserWarning, match='init_params call ignored'):
        mod.init_params()
    predict_only = mx.mod.Module(_mlp_symbol())
    predict_only.bind([('data', (16, 100))], for_training=False)
    predict_only.init_params()
    predict_only.forward(batch, is_train=False)
    with pytest.raises(mx.MXNetError, match='for_training'):
        predict_only.backward()
    with pytest.raises(ValueError, match="input with name 'x' is not found"):
        mx.mod.Module(_mlp_symbol(), data_names=['x'])
    with pytest.raises(ValueError, match="don't match names"):
        mx.mod.Module(_mlp_symbol()).bind([('other', (2, 100))])
    with pytest.raises(RuntimeError, match='fc1_bias is not presented'):
        m = mx.mod.Module(_mlp_symbol())
        m.bind([('data', (16, 100))], [('softmax_label', (16,))])
        m.init_params(arg_params={'fc1_weight': mx.nd.zeros((128, 100))})


def test_every_out_of_order_call_is_an_mxnet_error_naming_the_step():
    """Each call made too early names the call and the step it needs; the error is also an
    AssertionError, which is what MXNet raises for these."""
    batch = mx.io.DataBatch([mx.nd.ones((16, 100))], [mx.nd.ones((16,))])
    fresh = mx.mod.Module(_mlp_symbol())
    early = [('init_params', fresh.init_params, 'bind'),
             ('set_params', lambda: fresh.set_params({}, {}), 'bind'),
             ('get_params', fresh.get_params, 'bind'),
             ('save_params', lambda: fresh.save_params('unused.params'), 'bind'),
             ('get_outputs', fresh.get_outputs, 'bind'),
             ('init_optimizer', fresh.init_optimizer, 'bind'),
             ('save_optimizer_states', lambda: fresh.save_optimizer_states('x'), 'bind'),
             ('load_optimizer_states', lambda: fresh.load_optimizer_states('x'), 'bind'),
             ('output_shapes', lambda: fresh.output_shapes, 'bind'),
             ('fit', lambda: fresh.fit(_iter()), 'num_epoch')]
    for what, call, needs in early:
        with pytest.raises(mx.MXNetError, match=needs) as err:
            call()
        assert isinstance(err.value, AssertionError), what
    with pytest.raises(mx.MXNetError, match='inputs_need_grad=True needs for_training=True'):
        fresh.bind([('data', (16, 100))], for_training=False, inputs_need_grad=True)
    assert not fresh.binded
    fresh.bind([('data', (16, 100))], [('softmax_label', (16,))])
    fresh.init_params()
    for what, call in (('update', fresh.update),
                       ('save_optimizer_states', lambda: fresh.save_optimizer_states('x'))):
        with pytest.raises(mx.MXNetError, match=what + ': call init_optimizer'):
            call()
    fresh.forward(batch)
    with pytest.raises(mx.MXNetError, match='get_input_grads: bind with inputs_need_grad'):
        fresh.get_input_grads()
    with pytest.raises(mx.MXNetError, match=r'work_load_list .* expected 2 entries, given \[1\]'):
        mx.mod.Module(_mlp_symbol(), context=[mx.cpu(0), mx.cpu(1)], work_load_list=[1])


def test_failed_init_params_changes_nothing():
    mod = mx.mod.Module(_mlp_symbol())
    mod.bind([('data', (16, 100))], [('softmax_label', (16,))])
    mod.init_params(mx.init.Constant(0.25))
    before = {k: v.asnumpy().copy() for k, v in mod.get_params()[0].items()}
    good = {k: mx.nd.ones(v.shape) for k, v in before.items()}
    bad = dict(good, fc2_weight=mx.nd.ones((3, 3)))      # fc1_* sort (and were copied) first
    with pytest.raises(mx.MXNetError, match=r"arg_params\['fc2_weight'\] has shape \(3, 3\), "
                                            r"expected \(64, 128\)"):
        mod.init_params(arg_params=bad, force_init=True)
    with pytest.raises(mx.MXNetError, match=r"arg_params\['fc3_weight'\] must be an NDArray, "
                                            r"given list"):
        mod.init_params(arg_params=dict(good, fc3_weight=[[0.0] * 64] * 10), force_init=True)
    missing = {k: v for k, v in good.items() if k != 'fc3_bias'}
    with pytest.raises(mx.MXNetError, match='fc3_bias is not presented'):
        mod.set_params(missing, {})

    class Failing(mx.init.Initializer):
        def _init_weight(self, name, arr):
            if name == 'fc3_weight':
                raise ValueError('no value for fc3_weight')
            arr[:] = 7

    with pytest.raises(ValueError, match='no value for fc3_weight'):
        mod.init_params(Failing(), force_init=True)
    for name, value in mod.get_params()[0].items():
        np.testing.assert_array_equal(value.asnumpy(), before[name], err_msg=name)
    out = mod.predict(mx.nd.ones((16, 100)))          # the executors kept the old values too
    np.testing.assert_allclose(out.asnumpy(), np.full((16, 10), 0.1), rtol=1e-6)
    as_numpy = {k: np.full(v.shape, 0.5, np.float64) for k, v in before.items()}
    mod.set_params(as_numpy, {})                      # NumPy values are taken (cast) too
    assert all(v.dtype == np.float32 and (v.asnumpy() == 0.5).all()
               for v in mod.get_params()[0].values())


def test_failed_reshape_keeps_the_bound_shapes():
    mod = mx.mod.Module(_mlp_symbol())
    mod.bind([('data', (16, 100))], [('softmax_label', (16,))])
    mod.init_params(mx.init.Constant(0.01))
    with pytest.raises(mx.MXNetError, match='fc1_weight'):
        mod.forward(mx.io.DataBatch([mx.nd.ones((8, 7))], [mx.nd.ones((8,))]))
    assert mod.data_shapes[0].shape == (16, 100) and mod.label_shapes[0].shape == (16,)
    assert mod.output_shapes == [('softmax_output', (16, 10))]
    mod.forward(mx.io.DataBatch([mx.nd.ones((16, 100))], [mx.nd.ones((16,))]), is_train=False)
    assert mod.get_outputs()[0].shape == (16, 10)
    mod.forward(mx.io.DataBatch([mx.nd.ones((4, 100))], [mx.nd.ones((4,))]), is_train=False)
    assert mod.get_outputs()[0].shape == (4, 10) and mod.data_shapes[0].shape == (4, 100)


def test_failed_bind_leaves_the_module_unbound_and_force_rebind_keeps_training():
    mod = mx.mod.Module(_mlp_symbol())
    with pytest.raises(mx.MXNetError, match='inputs_need_grad=True needs for_training=True'):
        mod.bind([('data', (16, 100))], for_training=False, inputs_need_grad=True)
    with pytest.raises(mx.MXNetError,
                       match=r'batch_size = 16, but softmax_label has shape \(8,\)'):
        mod.bind([('data', (16, 100))], [('softmax_label', (8,))])
    assert (mod.binded, mod.for_training, mod.inputs_need_grad) == (False, False, False)
    with pytest.raises(mx.MXNetError, match='data_shapes: call bind'):
        mod.data_shapes
    mod.bind([('data', (4, 100))], [('softmax_label', (4,))])
    mod.init_params(mx.init.Constant(0.01))
    mod.init_optimizer(optimizer_params={'learning_rate': 1.0})
    batch = mx.io.DataBatch([mx.nd.ones((4, 100))], [mx.nd.array([0, 1, 1, 1])])
    mod.forward_backward(batch)
    mod.update()
    # biases start at 0 (initializers zero them) and every class scores alike, so p = 0.1;
    # the gradient of fc3_bias is (p - onehot) summed over the batch, rescaled by 1/4, lr 1
    expected = np.full(10, -0.1)
    expected[0] = -(0.4 - 1) / 4
    expected[1] = -(0.4 - 3) / 4
    mod.bind([('data', (2, 100))], [('softmax_label', (2,))], force_rebind=True)
    np.testing.assert_allclose(mod.get_params()[0]['fc3_bias'].asnumpy(), expected, rtol=1e-5)


def test_fit_logs_in_mxnet_format_and_learns(caplog):
    mx.random.seed(1)
    train = _iter(n=256, batch=32)
    val = _iter(n=128, batch=32, seed=1)
    mod = mx.mod.Module(_mlp_symbol())
    with caplog.at_level(logging.INFO):
        mod.fit(train, eval_data=val, num_epoch=8, initializer=mx.init.Xavier(),
                optimizer_params={'learning_rate': 0.1, 'momentum': 0.9})
    lines = [r.getMessage() for r in caplog.records]
    assert any(line.startswith('Epoch[0] Train-accuracy=') for line in lines)
    assert any(line.startswith('Epoch[7] Time cost=') for line in lines)
    final = [line for line in lines if line.startswith('Epoch[7] Validation-accuracy=')]
    assert len(final) == 1 and float(final[0].split('=')[1]) > 0.9
    score = dict(mod.score(val, ['acc', 'ce']))
    assert score['accuracy'] > 0.9 and 0 < score['cross-entropy'] < 0.5


def test_predict_merges_and_removes_padding():
    x = np.random.rand(10, 100).astype(np.float32)
    mod = mx.mod.Module(_mlp_symbol())
    mod.bind([('data', (4, 100))], [('softmax_label', (4,))])
    mod.init_params(mx.init.Xavier())
    it = mx.io.NDArrayIter(x, np.zeros(10), batch_size=4)          # last batch padded with 2
    merged = mod.predict(it)
    assert merged.shape == (10, 10)
    per_batch = mod.predict(it, merge_batches=False)
    assert [b[0].shape[0] for b in per_batch] == [4, 4, 2]
    assert isinstance(mod.predict(it, always_output_list=True), list)
    outs = [o[0].shape for o, _, _ in mod.iter_predict(it)]
    assert outs == [(4, 10), (4, 10), (2, 10)]
    probs = mx.sym.softmax(_mlp_symbol().get_internals()['fc3_output'])   # no label input
    unlabelled = mx.mod.Module(probs, label_names=None)
    unlabelled.bind([('data', (4, 100))], for_training=False)
    unlabelled.set_params(*mod.get_params())
    direct = unlabelled.predict(mx.nd.array(x[:3]))                 # reshapes to batch 3
    np.testing.assert_allclose(direct.asnumpy(), merged.asnumpy()[:3], rtol=1e-5)
    with pytest.raises(ValueError, match='NDArray or DataIter'):
        mod.predict([1, 2])


def test_two_contexts_train_like_one():
    x = np.random.rand(32, 100).astype(np.float32)
    y = np.random.randint(0, 10, 32).astype(np.float32)
    results = []
    for ctx in ([mx.cpu(0)], [mx.cpu(0), mx.cpu(1)]):
        mod = mx.mod.Module(_mlp_symbol(), context=ctx)
        mod.bind([('data', (32, 100))], [('softmax_label', (32,))])
        mx.random.seed(3)
        mod.init_params(mx.init.Xavier())
        mod.init_optimizer(optimizer_params={'learning_rate': 0.5, 'momentum': 0.9})
        for _ in range(3):
            mod.forward_backward(mx.io.DataBatch([mx.nd.array(x)], [mx.nd.array(y)]))
            mod.update()
        results.append({k: v.asnumpy() for k, v in mod.get_params()[0].items()})
        assert mod.get_outputs()[0].shape == (32, 10)
    for name in results[0]:
        np.testing.assert_allclose(results[1][name], results[0][name], rtol=1e-5, atol=1e-5)


def test_work_load_list_slices():
    from mxtorch.module.executor_group import split_input_slice
    assert split_input_slice(5, [1, 1]) == [slice(0, 2), slice(2, 5)]
    assert split_input_slice(10, [1, 2, 2]) == [slice(0, 2), slice(2, 6), slice(6, 10)]
    with pytest.raises(ValueError, match='Too many slices'):
        split_input_slice(2, [1, 1, 1])


def test_input_grads_states_and_fixed_params():
    mod = mx.mod.Module(_mlp_symbol(), fixed_param_names=['fc1_weight'])
    mod.bind([('data', (4, 100))], [('softmax_label', (4,))], inputs_need_grad=True)
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer_params={'learning_rate': 1.0})
    before = mod.get_params()[0]['fc1_weight'].asnumpy().copy()
    mod.forward_backward(mx.io.DataBatch([mx.nd.array(np.random.rand(4, 100))],
                                         [mx.nd.array([1, 2, 3, 4])]))
    mod.update()
    np.testing.assert_array_equal(mod.get_params()[0]['fc1_weight'].asnumpy(), before)
    grads = mod.get_input_grads()[0].asnumpy()
    assert grads.shape == (4, 100) and np.abs(grads).sum() > 0


def test_save_and_load_params(tmp_path):
    mod = mx.mod.Module(_mlp_symbol())
    mod.bind([('data', (4, 100))], [('softmax_label', (4,))])
    mod.init_params(mx.init.Xavier())
    mod.save_params(str(tmp_path / 'p.params'))
    other = mx.mod.Module(_mlp_symbol())
    other.bind([('data', (4, 100))], [('softmax_label', (4,))])
    other.load_params(str(tmp_path / 'p.params'))
    for name, value in mod.get_params()[0].items():
        np.testing.assert_array_equal(other.get_params()[0][name].asnumpy(), value.asnumpy())
    mx.nd.save(str(tmp_path / 'bad.params'), {'weird:x': mx.nd.ones(1)})
    with pytest.raises(ValueError, match='Invalid param file'):
        other.load_params(str(tmp_path / 'bad.params'))


# ---- kvstore ---------------------------------------------------------------------------------------
def test_kvstore_push_sums_and_pull_copies():
    kv = mx.kv.create('local')
    assert (kv.type, kv.rank, kv.num_workers) == ('local', 0, 1)
    kv.init('w', mx.nd.ones((2, 2)))
    kv.push('w', [mx.nd.ones((2, 2)) * i for i in (1, 2, 3)])
    out = [mx.nd.zeros((2, 2)), mx.nd.zeros((2, 2))]
    kv.pull('w', out=out)
    for o in out:
        np.testing.assert_array_equal(o.asnumpy(), np.full((2, 2), 6))
    with pytest.raises(mx.MXNetError, match='Mixed key types'):
        kv.init(3, mx.nd.ones(1))
    kv.init('v', mx.nd.zeros(3))
    with pytest.raises(mx.MXNetError, match=r"key 'w' has shape \(3,\), expected \(2, 2\)"):
        kv.push(['v', 'w'], [mx.nd.ones(3), mx.nd.ones(3)])     # 'v' is not pushed either
    with pytest.raises(mx.MXNetError, match="key 'w' has already been initialized"):
        kv.init(['new', 'w'], [mx.nd.ones(1), mx.nd.ones(1)])  # 'new' is not stored either
    kv.init('new', mx.nd.ones(1))
    v = mx.nd.ones(3)
    kv.pull('v', out=v)
    np.testing.assert_array_equal(v.asnumpy(), np.zeros(3))
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.5))
    g = mx.nd.ones((2, 2))
    kv.pushpull('w', g)
    np.testing.assert_array_equal(g.asnumpy(), np.full((2, 2), 6 - 0.5))


def test_kvstore_two_bit_compression_matches_a_numpy_model():
    kv = mx.kv.create('device')
    with pytest.raises(Exception, match='not supported'):
        mx.kv.create('local').set_gradient_compression({'type': '2bit', 'threshold': 0.5})
    kv.set_gradient_compression({'type': '2bit', 'threshold': 0.5})
    kv.init(0, mx.nd.zeros(6))
    g = np.array([.3, .6, -.7, -.2, 1.5, 0], dtype=np.float32)
    residual = np.zeros(6, dtype=np.float32)
    for _ in range(3):
        residual += g
        sent = np.where(residual >= .5, .5, np.where(residual <= -.5, -.5, 0)).astype(np.float32)
        residual -= sent
        kv.push(0, mx.nd.array(g))
        out = mx.nd.zeros(6)
        kv.pull(0, out=out)
        np.testing.assert_allclose(out.asnumpy(), sent)


def test_dist_kvstore_types_fail_clearly_until_launched(monkeypatch):
    for name in ('RANK', 'WORLD_SIZE', 'MASTER_ADDR', 'MASTER_PORT', 'DMLC_ROLE'):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(mx.MXNetError, match='needs a launched distributed job, but RANK, '
                                            'WORLD_SIZE, MASTER_ADDR, MASTER_PORT are not set'):
        mx.kv.create('dist_sync')


def test_base_module_declares_the_whole_intermediate_api():
    """The seed page lists these on BaseModule; a subclass that forgets one hears which."""
    class Partial(mx.mod.BaseModule):
        pass

    mod = Partial()
    calls = {'bind': lambda: mod.bind([('data', (1, 2))]), 'init_params': mod.init_params,
             'get_params': mod.get_params, 'init_optimizer': mod.init_optimizer,
             'forward': lambda: mod.forward(None), 'backward': mod.backward,
             'update': mod.update, 'get_outputs': mod.get_outputs,
             'get_input_grads': mod.get_input_grads,
             'update_metric': lambda: mod.update_metric(mx.metric.Accuracy(), [])}
    for name, call in calls.items():
        with pytest.raises(NotImplementedError, match='Partial.%s: a subclass' % name):
            call()
    for name in ('fit', 'score', 'predict', 'iter_predict', 'forward_backward', 'set_params',
                 'save_params', 'load_params', 'get_states', 'set_states', 'install_monitor',
                 'prepare', 'symbol', 'data_names', 'output_names', 'data_shapes',
                 'label_shapes', 'output_shapes'):
        assert hasattr(mx.mod.BaseModule, name), name


def _two_group_net():
    with mx.AttrScope(ctx_group='dev1'):
        a = mx.sym.Variable('a') * 2
    with mx.AttrScope(ctx_group='dev2'):
        c = a + mx.sym.Variable('b')
    return c


@pytest.mark.parametrize('group2ctxs, grad_ctxs', [
    ({'dev1': mx.cpu(1), 'dev2': mx.cpu(2)}, [mx.cpu(1), mx.cpu(2)]),
    ({'dev1': [mx.cpu(1)], 'dev2': [mx.cpu(2)]}, [mx.cpu(1), mx.cpu(2)]),
    ([{'dev1': mx.cpu(3), 'dev2': mx.cpu(4)}], [mx.cpu(3), mx.cpu(4)]),
])
def test_module_group2ctxs_forms(group2ctxs, grad_ctxs):
    mod = mx.mod.Module(_two_group_net(), context=[mx.cpu(0)], data_names=['a', 'b'],
                        label_names=None, group2ctxs=group2ctxs)
    mod.bind(data_shapes=[['a', (2, 5)], ['b', (2, 5)]], inputs_need_grad=True)
    mod.init_params()
    mod.forward(mx.io.DataBatch(data=[mx.nd.ones((2, 5)), mx.nd.ones((2, 5))]), is_train=True)
    mod.backward([mx.nd.ones((2, 5))])
    grads = mod.get_input_grads()
    assert [g.context for g in grads] == grad_ctxs
    assert (grads[0].asnumpy() == 2).all() and (grads[1].asnumpy() == 1).all()
    assert (mod.get_outputs()[0].asnumpy() == 3).all()


def test_module_group2ctxs_list_per_context_must_match():
    mod = mx.mod.Module(_two_group_net(), context=[mx.cpu(0), mx.cpu(1)],
                        data_names=['a', 'b'], label_names=None,
                        group2ctxs={'dev1': [mx.cpu(2)] * 3, 'dev2': mx.cpu(3)})
    with pytest.raises(ValueError, match='3 contexts given for 2'):
        mod.bind(data_shapes=[['a', (2, 5)], ['b', (2, 5)]])


def test_executor_group_takes_name_shape_pairs_and_shares_only_inputs():
    from mxtorch.module.executor_group import DataParallelExecutorGroup
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var('data'), num_hidden=3,
                                                     name='fc'), name='softmax')
    params = ['fc_weight', 'fc_bias']
    group = DataParallelExecutorGroup(net, [mx.cpu(0), mx.cpu(1)], [1, 1], [('data', (4, 5))],
                                      [('softmax_label', (4,))], params, True, False)
    assert [sorted(d) for d in group.shared_data_arrays] == [['data', 'softmax_label']] * 2
    other = DataParallelExecutorGroup(net, [mx.cpu(0), mx.cpu(1)], [1, 1], [('data', (2, 5))],
                                      [('softmax_label', (2,))], params, True, False,
                                      shared_group=group)
    for a, b in zip(group.execs, other.execs):
        assert a.arg_dict['fc_weight'] is b.arg_dict['fc_weight']
        assert a.grad_dict['fc_weight'] is b.grad_dict['fc_weight']

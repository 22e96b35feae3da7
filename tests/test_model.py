"""mx.model: the kvstore/update helpers and the deprecated FeedForward model, checked against
MXNet 1.9.1 (tests/fixtures/feedforward.npz, made by gen_feedforward.py)."""
import importlib.util
import logging
import types
import warnings

import numpy as np
import pytest

import mxtorch as mx
from conftest import FIXTURES

_SPEC = importlib.util.spec_from_file_location('gen_feedforward', FIXTURES / 'gen_feedforward.py')
GEN = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(GEN)
REF = np.load(FIXTURES / 'feedforward.npz')
TOL = 1e-5


def _ref_params(prefix):
    return {k[len(prefix):]: REF[k] for k in REF.files if k.startswith(prefix)}


def _model(**kwargs):
    _, _, init = GEN.data()
    kwargs.setdefault('arg_params', {k: mx.nd.array(v) for k, v in init.items()})
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)
        return mx.model.FeedForward(GEN.network(mx), **kwargs)


# ---- FeedForward against MXNet -------------------------------------------------------------------
@pytest.mark.parametrize('name', list(GEN.CASES))
def test_fit_predict_score_match_mxnet(name, caplog, monkeypatch):
    monkeypatch.setenv('MXNET_UPDATE_ON_KVSTORE', '1')   # run() sets and removes it
    X, y, _ = GEN.data()
    with caplog.at_level(logging.INFO), warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)
        model, seen = GEN.run(mx, name)
    assert set(model.arg_params) == set(_ref_params(name + '.param.'))
    for key, want in _ref_params(name + '.param.').items():
        np.testing.assert_allclose(model.arg_params[key].asnumpy(), want, rtol=0, atol=TOL)
    assert sorted(seen) == [0, 1]
    for epoch in seen:
        for key, want in _ref_params('%s.epoch%d.' % (name, epoch)).items():
            np.testing.assert_allclose(seen[epoch][key], want, rtol=0, atol=TOL)
    np.testing.assert_allclose(model.predict(X[:12]), REF[name + '.predict'], rtol=0, atol=TOL)
    score = model.score(mx.io.NDArrayIter(X[:12], y[:12], batch_size=7))
    assert score == pytest.approx(float(REF[name + '.score']))
    messages = [r.getMessage() for r in caplog.records]
    val = [float(m.split('=')[1]) for m in messages if 'Validation-accuracy' in m]
    np.testing.assert_allclose(val, REF[name + '.val'])
    ctx = '[cpu(0), cpu(1)]' if name.startswith('two_dev') else '[cpu(0)]'
    assert messages[0] == 'Start training with ' + ctx
    assert any(m.startswith('Epoch[1] Time cost=') for m in messages)
    resets = [m for m in messages if m.endswith('Resetting Data Iterator')]
    # 5 batches per pass: epoch_size=3 resets only in epoch 1 (after batches 4 and 5)
    assert resets == (['Epoch[1] Resetting Data Iterator'] if name == 'epoch_size' else
                      ['Epoch[0] Resetting Data Iterator', 'Epoch[1] Resetting Data Iterator'])


def test_create_trains_like_fit():
    X, y, init = GEN.data()
    np.random.seed(3)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)
        model = mx.model.FeedForward.create(
            GEN.network(mx), X, y, num_epoch=2, numpy_batch_size=GEN.BATCH,
            arg_params={k: mx.nd.array(v) for k, v in init.items()},
            eval_data=(X[:16], y[:16]), **GEN.OPTIMIZER)
    assert isinstance(model, mx.model.FeedForward)
    for key, want in _ref_params('numpy.param.').items():
        np.testing.assert_allclose(model.arg_params[key].asnumpy(), want, rtol=0, atol=TOL)


def test_save_load_round_trip(tmp_path):
    X, y, _ = GEN.data()
    model = _model(num_epoch=1, numpy_batch_size=8, learning_rate=0.1)
    model.fit(X, y)
    prefix = str(tmp_path / 'ff')
    model.save(prefix)                                    # epoch defaults to num_epoch
    assert (tmp_path / 'ff-symbol.json').exists() and (tmp_path / 'ff-0001.params').exists()
    loaded = mx.model.FeedForward.load(prefix, 1, numpy_batch_size=5)
    assert loaded.begin_epoch == 1 and loaded.numpy_batch_size == 5
    assert loaded.ctx == [mx.cpu()]
    for key, value in model.arg_params.items():
        np.testing.assert_array_equal(loaded.arg_params[key].asnumpy(), value.asnumpy())
    np.testing.assert_allclose(loaded.predict(X), model.predict(X), rtol=0, atol=1e-6)
    model.save(prefix, epoch=7)
    assert (tmp_path / 'ff-0007.params').exists()
    with pytest.raises(ValueError, match='give the epoch'):
        _model().save(prefix)


def test_predict_return_data_num_batch_and_column_labels():
    X, y, _ = GEN.data()
    model = _model(numpy_batch_size=16)
    out = model.predict(X)                               # 3 batches, the last one padded
    assert out.shape == (40, GEN.CLASSES)
    np.testing.assert_allclose(out.sum(axis=1), 1, atol=1e-6)
    outputs, data, label = model.predict(mx.io.NDArrayIter(X, y, batch_size=16),
                                         return_data=True)
    np.testing.assert_allclose(outputs, out, atol=1e-6)
    np.testing.assert_array_equal(data, X)
    np.testing.assert_array_equal(label, y)
    assert model.predict(X, num_batch=1).shape == (16, GEN.CLASSES)
    # a (n, 1) label is flattened
    assert model.score(mx.nd.array(X), num_batch=1) == pytest.approx(
        np.mean(out[:16].argmax(axis=1) == 0))
    it = model._init_iter(X, y.reshape(-1, 1), is_train=False)
    assert it.provide_label[0].shape == (16,)


def test_callbacks_get_mxnets_arguments():
    X, y, _ = GEN.data()
    batches, epochs, evals = [], [], []
    model = _model(num_epoch=2, numpy_batch_size=10)
    model.fit(X, y, eval_data=(X[:20], y[:20]),
              batch_end_callback=[lambda p: batches.append((p.epoch, p.nbatch))],
              epoch_end_callback=lambda e, s, a, x: epochs.append((e, s is model.symbol,
                                                                   sorted(a), x)),
              eval_end_callback=lambda p: evals.append((p.epoch, p.nbatch,
                                                        p.eval_metric.get()[0])))
    assert batches == [(e, n) for e in range(2) for n in range(1, 5)]
    assert epochs == [(e, True, ['fc1_bias', 'fc1_weight', 'fc2_bias', 'fc2_weight'], {})
                      for e in range(2)]
    assert evals == [(0, 2, 'accuracy'), (1, 2, 'accuracy')]


def test_begin_epoch_and_initializer_for_missing_params():
    X, y, init = GEN.data()
    epochs = []
    model = _model(num_epoch=3, begin_epoch=2, numpy_batch_size=10,
                   arg_params={'fc1_weight': mx.nd.array(init['fc1_weight'])},
                   initializer=mx.init.Constant(0.5))
    model.fit(X, y, epoch_end_callback=lambda e, *_: epochs.append(e))
    assert epochs == [2]
    assert model.arg_params['fc2_bias'].shape == (GEN.CLASSES,)


def test_allow_extra_params():
    _, _, init = GEN.data()
    extra = {k: mx.nd.array(v) for k, v in init.items()}
    extra['unused'] = mx.nd.zeros((2,))
    model = _model(arg_params=dict(extra), allow_extra_params=True)
    assert 'unused' not in model.arg_params
    with pytest.raises(ValueError, match='Find name "unused" that is not in the arguments'):
        _model(arg_params=dict(extra)).predict(np.zeros((2, GEN.IN), np.float32))


def test_errors():
    X, y, _ = GEN.data()
    with pytest.warns(DeprecationWarning, match='FeedForward has been deprecated'):
        mx.model.FeedForward(GEN.network(mx))
    with pytest.raises(TypeError, match='num_epoch is None'):
        _model().fit(X, y)
    with pytest.raises(ValueError, match='y must be specified when X is numpy.ndarray'):
        _model(num_epoch=1).fit(X)
    with pytest.raises(ValueError, match='The numbers of data points and labels not equal'):
        _model(num_epoch=1).fit(X, y[:5])
    with pytest.raises(ValueError, match='Label must be 1D'):
        _model(num_epoch=1).fit(X, np.zeros((40, 2)))
    with pytest.raises(TypeError, match='X must be DataIter, NDArray or numpy.ndarray'):
        _model(num_epoch=1).fit(X.tolist(), y)
    with pytest.raises(TypeError, match='Eval data must be DataIter'):
        _model(num_epoch=1).fit(X, y, eval_data=X)
    with pytest.raises(ValueError, match='no parameters yet'):
        _model(arg_params=None).predict(X)
    with pytest.raises(ValueError, match='Find duplicated argument name "a"'):
        mx.model.FeedForward(mx.sym.Variable('a') + mx.sym.Variable('a'))
    with pytest.raises(TypeError, match='symbol must be a Symbol'):
        mx.model.FeedForward(3)


# ---- helpers -------------------------------------------------------------------------------------
def test_create_kvstore(monkeypatch):
    monkeypatch.delenv('MXNET_UPDATE_ON_KVSTORE', raising=False)
    params = {'w': mx.nd.zeros((3, 2))}
    assert mx.model._create_kvstore(None, 2, params) == (None, False)
    assert mx.model._create_kvstore('local', 1, params) == (None, False)
    kv, on_kv = mx.model._create_kvstore('local', 2, params)
    assert isinstance(kv, mx.kv.KVStore) and kv.type == 'local' and on_kv is True
    store = mx.kv.create('device')
    assert mx.model._create_kvstore(store, 1, params) == (store, True)
    big = {'w': types.SimpleNamespace(shape=(4097, 4097))}      # > 16M elements
    assert mx.model._create_kvstore('local', 2, big)[1] is False
    assert mx.model._create_kvstore('device', 2, big)[1] is True
    monkeypatch.setenv('MXNET_UPDATE_ON_KVSTORE', '0')
    assert mx.model._create_kvstore(store, 1, params) == (store, False)
    with pytest.raises(TypeError, match='kvstore must be KVStore, str or None'):
        mx.model._create_kvstore(3, 2, params)
    # Module picks its kvstore with the same function (one implementation)
    assert mx.module.module._create_kvstore is mx.model._create_kvstore
    assert not hasattr(mx.module.module, 'create_kvstore_for')


def _two_devices(values):
    return [[mx.nd.array(v, ctx=mx.cpu(k)) for k, v in enumerate(pair)] for pair in values]


@pytest.mark.parametrize('update_on_kvstore', [True, False])
def test_initialize_kvstore(update_on_kvstore):
    kv = mx.kv.create('local')
    params = _two_devices([(np.zeros(2), np.zeros(2)), (np.zeros(3), np.zeros(3))])
    arg = {'a': mx.nd.array([1, 2]), 'b': mx.nd.array([3, 4, 5])}
    mx.model._initialize_kvstore(kv, params, arg, ['a', 'b'], update_on_kvstore)
    for name, block in zip('ab', params):
        out = mx.nd.zeros(arg[name].shape)
        kv.pull(name, out=out)
        np.testing.assert_array_equal(out.asnumpy(), arg[name].asnumpy())
        for w in block:
            want = arg[name].asnumpy() if update_on_kvstore else np.zeros(arg[name].shape)
            np.testing.assert_array_equal(w.asnumpy(), want)


def test_update_params_sums_device_gradients():
    rng = np.random.RandomState(0)
    w = [rng.randn(3, 2), rng.randn(4)]
    g = [(rng.randn(3, 2), rng.randn(3, 2)), (rng.randn(4), rng.randn(4))]
    weights = _two_devices([(w[0], w[0]), (w[1], w[1]), (np.ones(2), np.ones(2))])
    grads = _two_devices(g) + [[None, None]]        # the third parameter has no gradient
    kv = mx.kv.create('local')
    names = ['p0', 'p1', 'p2']
    for name, block in zip(names, weights):
        kv.init(name, block[0])
    calls = []
    sgd = mx.optimizer.get_updater(mx.optimizer.create('sgd', learning_rate=0.5))

    def updater(index, grad, weight):
        calls.append(list(index))
        sgd(index, grad, weight)

    mx.model._update_params(weights, grads, updater, 2, kvstore=kv, param_names=names)
    assert calls == [[0, 2], [1, 3]]            # one call per device, index i*num_device+k
    for i in range(2):
        for k in range(2):
            np.testing.assert_allclose(grads[i][k].asnumpy(), g[i][0] + g[i][1], rtol=1e-5,
                                       atol=1e-6)
            np.testing.assert_allclose(weights[i][k].asnumpy(),
                                       w[i] - 0.5 * (g[i][0] + g[i][1]), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(weights[2][0].asnumpy(), np.ones(2))
    # without a kvstore every device applies its own gradient
    weights = _two_devices([(w[0], w[0])])
    grads = _two_devices([g[0]])
    mx.model._update_params(weights, grads, mx.optimizer.get_updater(
        mx.optimizer.create('sgd', learning_rate=0.5)), 2)
    for k in range(2):
        np.testing.assert_allclose(weights[0][k].asnumpy(), w[0] - 0.5 * g[0][k], rtol=1e-5,
                                   atol=1e-6)


def test_update_params_on_kvstore():
    rng = np.random.RandomState(1)
    w, g = rng.randn(3), (rng.randn(3), rng.randn(3))
    weights = _two_devices([(w, w), (np.ones(2), np.ones(2))])
    grads = _two_devices([g]) + [[None, None]]
    kv = mx.kv.create('local')
    kv.set_optimizer(mx.optimizer.create('sgd', learning_rate=0.25))
    mx.model._initialize_kvstore(kv, weights, {'a': mx.nd.array(w), 'b': mx.nd.ones(2)},
                                 ['a', 'b'], True)
    mx.model._update_params_on_kvstore(weights, grads, kv, ['a', 'b'])
    for k in range(2):
        np.testing.assert_allclose(weights[0][k].asnumpy(), w - 0.25 * (g[0] + g[1]),
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(weights[1][k].asnumpy(), np.ones(2))

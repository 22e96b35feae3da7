"""mx.optimizer: update rules against real MXNet 1.9.1 and independent numpy statements,
bookkeeping (registry, lr/wd multipliers, counters), the Updater and `.states` pickles.

Reference data: tests/golden/checkpoints (optim-*-expected.npz, *.states) and
tests/fixtures/optimizer/reference.{json,npz} written by make_reference.py under MXNet 1.9.1.
"""
import io
import json
import math
import os
import pickle
import pickletools
import warnings

import numpy as np
import pytest
import torch

import mxtorch as mx
from mxtorch import lr_scheduler, optimizer
from mxtorch.optimizer import serialization

from conftest import FIXTURES

REFERENCE = FIXTURES / 'optimizer'


def nd(a, dtype='float32', ctx=None):
    return mx.nd.array(np.asarray(a), ctx=ctx, dtype=dtype)


def state_arrays(state):
    """Flatten a state (None / NDArray / nested tuples) into {'/j/k': numpy}."""
    if state is None:
        return {}
    if isinstance(state, tuple):
        out = {}
        for j, s in enumerate(state):
            out.update({'/%d%s' % (j, k): v for k, v in state_arrays(s).items()})
        return out
    return {'': state.asnumpy()}


# ---------------------------------------------------------------------------------------------
# golden trajectories (Module.update under MXNet 1.9.1)
# ---------------------------------------------------------------------------------------------
def _golden_hyper(golden):
    with open(golden / 'checkpoints' / 'optim-hyperparams.json') as f:
        return json.load(f)['optimizers']


GOLDEN_TAGS = ['sgd', 'sgd_nomom_clip', 'adam', 'rmsprop', 'rmsprop_centered', 'adagrad', 'nag',
               'adam_clip', 'rmsprop_clip', 'adagrad_clip', 'nag_clip']


@pytest.mark.parametrize('tag', GOLDEN_TAGS)
def test_golden_trajectory(golden, tag):
    hyper = _golden_hyper(golden)[tag]
    effective = hyper['effective']
    z = np.load(golden / 'checkpoints' / ('optim-%s-expected.npz' % tag))
    idx2name = {int(k): v for k, v in effective['idx2name'].items()}
    opt = optimizer.create(hyper['optimizer'], param_idx2name=idx2name, **hyper['given_params'])
    assert type(opt).__name__ == effective['class']
    assert opt.wd_mult == effective['wd_mult'] and opt.lr_mult == effective['lr_mult']
    updater = optimizer.get_updater(opt)
    names = [idx2name[i] for i in sorted(idx2name)]
    weights = [nd(z['step0/param/' + n]) for n in names]
    for k in (1, 2, 3):
        grads = [nd(z['step%d/raw_grad/%s' % (k, n)]) for n in names]
        updater(list(range(len(names))), grads, weights)
        for n, w in zip(names, weights):
            np.testing.assert_allclose(w.asnumpy(), z['step%d/param/%s' % (k, n)], rtol=0,
                                       atol=1e-6, err_msg='%s step %d %s' % (tag, k, n))
    assert opt.num_update == hyper['num_update_after']
    for i, n in enumerate(names):
        state = state_arrays(updater.states[i])
        layout = hyper['state_layout'][n]
        if layout['kind'] == 'None':
            assert updater.states[i] is None
        elif layout['kind'] == 'tuple':
            assert isinstance(updater.states[i], tuple)
            assert len(updater.states[i]) == len(layout['items'])
        else:
            assert isinstance(updater.states[i], mx.nd.NDArray)
        for key, value in state.items():
            np.testing.assert_allclose(value, z['final/opt_state/' + n + key], rtol=0, atol=1e-6)


# ---------------------------------------------------------------------------------------------
# every optimizer against MXNet 1.9.1 (tests/fixtures/optimizer/make_reference.py)
# ---------------------------------------------------------------------------------------------
with open(REFERENCE / 'reference.json') as _f:
    REF = json.load(_f)
REF_ARRAYS = np.load(REFERENCE / 'reference.npz')


def make_reference_run(run):
    """The optimizer and updater of one reference run, built as make_reference.py built them."""
    spec = REF['runs'][run]
    kwargs = dict(spec['params'], param_idx2name=dict(enumerate(REF['names'])))
    if spec['options'].get('scheduler'):
        kwargs['lr_scheduler'] = lr_scheduler.FactorScheduler(
            base_lr=kwargs['learning_rate'], **REF['scheduler'])
    opt = optimizer.create(spec['optimizer'], **kwargs)
    opt.set_lr_mult(REF['lr_mult'])
    return opt, optimizer.get_updater(opt)


def reference_step_inputs(run, dtype):
    z = REF_ARRAYS
    names = REF['names']
    weights = [nd(z['%s/init/%s' % (run, n)], dtype) for n in names]
    grads = [[nd(z['%s/grad%d/%s' % (run, k, n)], dtype) for n in names] for k in (1, 2, 3)]
    return weights, grads


@pytest.mark.parametrize('run', sorted(REF['runs']))
def test_matches_mxnet(run):
    spec = REF['runs'][run]
    dtype = spec['options'].get('dtype', 'float32')
    atol = 1e-3 if dtype == 'float16' else 1e-6
    opt, updater = make_reference_run(run)
    weights, grads = reference_step_inputs(run, dtype)
    indices = list(range(len(weights)))
    for k in (1, 2, 3):
        updater(indices, grads[k - 1], weights)
        for n, w in zip(REF['names'], weights):
            assert w.dtype == np.dtype(dtype)
            np.testing.assert_allclose(w.asnumpy(), REF_ARRAYS['%s/step%d/%s' % (run, k, n)],
                                       rtol=0, atol=atol, err_msg='%s step %d %s' % (run, k, n))
    assert opt.num_update == spec['num_update']
    prefix = run + '/state/'
    expected = {k[len(prefix):]: REF_ARRAYS[k] for k in REF_ARRAYS.files if k.startswith(prefix)}
    got = {}
    for i, n in enumerate(REF['names']):
        got.update({n + k: v for k, v in state_arrays(updater.states[i]).items()})
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        np.testing.assert_allclose(got[key], value, rtol=1e-5, atol=1e-6, err_msg=key)


def test_reference_comparison_can_fail():
    opt, updater = make_reference_run('adam')
    opt.beta1 = 0.5
    weights, grads = reference_step_inputs('adam', 'float32')
    for step in grads:
        updater(list(range(3)), step, weights)
    assert np.abs(weights[0].asnumpy() - REF_ARRAYS['adam/step3/fc_weight']).max() > 1e-3


# ---------------------------------------------------------------------------------------------
# independent numpy statements of the rules the golden files do not cover
# ---------------------------------------------------------------------------------------------
R, WD, CLIP = 0.5, 0.02, 0.4


def clip(x):
    return np.clip(x, -CLIP, CLIP)


def np_adadelta(w, g, st, t, lr):
    rho, eps = 0.9, 1e-5
    g = clip(R * g)
    st['ag'] = rho * st.get('ag', 0) + (1 - rho) * g * g
    d = np.sqrt(st.get('ad', 0) + eps) / np.sqrt(st['ag'] + eps) * g
    st['ad'] = rho * st.get('ad', 0) + (1 - rho) * d * d
    return w - (d + WD * w)


def np_adamax(w, g, st, t, lr):
    b1, b2 = 0.9, 0.999
    g = clip(R * g + WD * w)
    st['m'] = b1 * st.get('m', 0) + (1 - b1) * g
    st['u'] = np.maximum(b2 * st.get('u', 0), np.abs(g))
    return w - lr / (1 - b1 ** t) * st['m'] / st['u']


def np_nadam(w, g, st, t, lr):
    b1, b2, eps, sd = 0.9, 0.999, 1e-8, 0.004
    g = clip(R * g + WD * w)
    mu_t = b1 * (1 - 0.5 * 0.96 ** (t * sd))
    mu_n = b1 * (1 - 0.5 * 0.96 ** ((t + 1) * sd))
    st['M'][0] *= mu_t                      # one running product for the whole optimizer
    m_sched, m_next = st['M'][0], st['M'][0] * mu_n
    st['m'] = b1 * st.get('m', 0) + (1 - b1) * g
    st['v'] = b2 * st.get('v', 0) + (1 - b2) * g * g
    m_bar = (1 - mu_t) * g / (1 - m_sched) + mu_n * st['m'] / (1 - m_next)
    return w - lr * m_bar / (np.sqrt(st['v'] / (1 - b2 ** t)) + eps)


def np_ftrl(w, g, st, t, lr):
    lamda1, beta = 0.01, 1.0
    g = clip(R * g)
    n = st.get('n', 0)
    st['z'] = st.get('z', 0) + g - (np.sqrt(n + g * g) - np.sqrt(n)) * w / lr
    st['n'] = n + g * g
    z = st['z']
    return np.where(np.abs(z) > lamda1,
                    (np.sign(z) * lamda1 - z) / ((beta + np.sqrt(st['n'])) / lr + WD), 0.0)


def np_signum(w, g, st, t, lr):
    mom, wd_lh = 0.9, 0.05
    st['m'] = mom * st.get('m', 0) - (1 - mom) * (WD * w + clip(R * g))
    return (1 - lr * wd_lh) * w + lr * np.sign(st['m'])


def np_signsgd(w, g, st, t, lr):
    return (1 - lr * WD) * w - lr * np.sign(clip(R * g))


def np_ftml(w, g, st, t, lr):
    b1, b2, eps = 0.6, 0.999, 1e-8
    g = clip(R * g + WD * w)
    st['v'] = b2 * st.get('v', 0) + (1 - b2) * g * g
    d_t = (1 - b1 ** t) / lr * (np.sqrt(st['v'] / (1 - b2 ** t)) + eps)
    st['z'] = b1 * st.get('z', 0) + (1 - b1) * g - (d_t - b1 * st.get('d', 0)) * w
    st['d'] = d_t
    return -st['z'] / d_t


def np_lamb(w, g, st, t, lr):
    b1, b2, eps = 0.9, 0.999, 1e-6
    g = clip(R * g)
    st['m'] = b1 * st.get('m', 0) + (1 - b1) * g
    st['v'] = b2 * st.get('v', 0) + (1 - b2) * g * g
    u = (st['m'] / (1 - b1 ** t)) / (np.sqrt(st['v'] / (1 - b2 ** t)) + eps) + WD * w
    r1, r2 = np.linalg.norm(w), np.linalg.norm(u)
    return w - lr * (r1 / r2 if r1 > 0 and r2 > 0 else 1.0) * u


def np_lars(w, g, st, t, lr):
    mom, eta = 0.9, 0.01
    w_norm, g_norm = np.linalg.norm(w), np.linalg.norm(R * g)
    lr = lr * eta * w_norm / (g_norm + WD * w_norm)
    st['m'] = mom * st.get('m', 0) - lr * (clip(R * g) + WD * w)
    return w + st['m']


def np_dcasgd(w, g, st, t, lr):
    lamda, mom = 0.5, 0.9
    g = clip(R * g)
    prev = st.get('prev', w)
    st['m'] = mom * st.get('m', 0) - lr * (g + WD * w + lamda * g * g * (w - prev))
    st['prev'] = w
    return w + st['m']


def np_test(w, g, st, t, lr):
    return w + R * g


NUMPY_RULES = {
    'adadelta': (np_adadelta, {}),
    'adamax': (np_adamax, {'learning_rate': 0.01}),
    'nadam': (np_nadam, {'learning_rate': 0.01}),
    'ftrl': (np_ftrl, {'learning_rate': 0.1}),
    'signum': (np_signum, {'learning_rate': 0.01, 'momentum': 0.9, 'wd_lh': 0.05}),
    'signsgd': (np_signsgd, {'learning_rate': 0.01, 'momentum': 0.0}),
    'ftml': (np_ftml, {'learning_rate': 0.01}),
    'lamb': (np_lamb, {'learning_rate': 0.01}),
    'lars': (np_lars, {'learning_rate': 0.1, 'momentum': 0.9, 'eta': 0.01}),
    'dcasgd': (np_dcasgd, {'learning_rate': 0.1, 'momentum': 0.9, 'lamda': 0.5}),
    'test': (np_test, {}),
}


@pytest.mark.parametrize('name', sorted(NUMPY_RULES))
def test_against_numpy(name):
    rule, params = NUMPY_RULES[name]
    opt_name = 'signum' if name == 'signsgd' else name
    clip_kw = {} if name == 'test' else {'clip_gradient': CLIP}
    opt = optimizer.create(opt_name, rescale_grad=R, wd=WD, **clip_kw, **params)
    updater = optimizer.get_updater(opt)
    rng = np.random.RandomState(3)
    shapes = [(4, 5), (6,)]
    w64 = [rng.normal(size=s) for s in shapes]
    weights = [nd(w) for w in w64]
    schedule = [1.0]            # Nadam's running product, shared by all parameters
    states = [{'M': schedule} for _ in shapes]
    lr = params.get('learning_rate', 0.01)
    for t in (1, 2, 3, 4):
        grads = [rng.normal(size=s) for s in shapes]
        for i in range(len(shapes)):     # parameters in index order, as the updater does them
            w64[i] = rule(w64[i], grads[i], states[i], t, lr)
        updater([0, 1], [nd(g) for g in grads], weights)
        for w, ref in zip(weights, w64):
            np.testing.assert_allclose(w.asnumpy(), ref, rtol=1e-4, atol=1e-5,
                                       err_msg='%s step %d' % (name, t))


def test_adadelta_rescales_the_gradient_in_place():
    opt = optimizer.AdaDelta(rescale_grad=0.5)
    grad = nd([2.0, -4.0])
    opt.update(0, nd([1.0, 1.0]), grad, opt.create_state(0, nd([1.0, 1.0])))
    np.testing.assert_array_equal(grad.asnumpy(), [1.0, -2.0])


def test_sgld_adds_gaussian_noise_of_std_sqrt_lr():
    lr = 0.04
    opt = optimizer.SGLD(learning_rate=lr, rescale_grad=2.0, wd=0.1)
    w0 = np.full(20000, 3.0)
    g = np.full(20000, 0.5)
    weight = nd(w0)
    opt.update(0, weight, nd(g), opt.create_state(0, weight))
    noise = weight.asnumpy() - (w0 - lr / 2 * (2.0 * g + 0.1 * w0))
    assert abs(noise.mean()) < 0.01
    assert abs(noise.std() - math.sqrt(lr)) < 0.01


def test_clip_gradient_zero_means_no_clipping():
    for name in ('sgd', 'adagrad', 'adam'):
        plain, zero = optimizer.create(name), optimizer.create(name, clip_gradient=0)
        w1, w2 = nd([1.0, 2.0]), nd([1.0, 2.0])
        plain.update(0, w1, nd([3.0, -5.0]), plain.create_state(0, w1))
        zero.update(0, w2, nd([3.0, -5.0]), zero.create_state(0, w2))
        np.testing.assert_array_equal(w1.asnumpy(), w2.asnumpy())


def test_rmsprop_clip_weights():
    opt = optimizer.RMSProp(learning_rate=10.0, clip_weights=0.5)
    w = nd([0.0, 0.2])
    opt.update(0, w, nd([-1.0, -1.0]), opt.create_state(0, w))
    np.testing.assert_allclose(w.asnumpy(), [0.5, 0.5])


# ---------------------------------------------------------------------------------------------
# aggregated (multi-tensor) updates equal one-by-one updates
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize('name, params', [
    ('sgd', {'momentum': 0.9}), ('sgd', {}), ('nag', {'momentum': 0.9}), ('nag', {}),
    ('adam', {}), ('lars', {'momentum': 0.9}), ('lamb', {}),
])
def test_aggregated_update_equals_one_by_one(name, params):
    kwargs = dict(learning_rate=0.05, wd=0.01, rescale_grad=0.3, clip_gradient=0.2,
                  param_idx2name={0: 'a_weight', 1: 'a_bias', 2: 'b_weight', 3: 'c_gamma',
                                  4: 'd_weight'}, **params)
    rng = np.random.RandomState(0)
    shapes = [(3, 4), (4,), (2, 3, 2), (5,), (7,)]
    inits = [rng.normal(size=s) for s in shapes]
    grads = [[rng.normal(size=s) for s in shapes] for _ in range(3)]
    together = optimizer.create(name, **kwargs)
    assert together.aggregate_num > 1
    single = optimizer.create(name, **kwargs)
    single.aggregate_num = 0
    results = []
    for opt in (together, single):
        updater = optimizer.get_updater(opt)
        weights = [nd(w) for w in inits]
        for step in grads:
            updater(list(range(len(shapes))), [nd(g) for g in step], weights)
        results.append(([w.asnumpy() for w in weights],
                        [state_arrays(updater.states[i]) for i in range(len(shapes))]))
    for a, b in zip(results[0][0], results[1][0]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    for a, b in zip(results[0][1], results[1][1]):
        assert sorted(a) == sorted(b)
        for key in a:
            np.testing.assert_allclose(a[key], b[key], rtol=1e-6, atol=1e-7)


def test_updater_chunks_by_aggregate_num_and_dtype():
    calls = []

    class Recording(optimizer.SGD):
        def update_multi_precision(self, index, weight, grad, state):
            calls.append((list(index), weight[0].dtype))
            super().update_multi_precision(index, weight, grad, state)

    opt = Recording(learning_rate=0.1)
    opt.aggregate_num = 2
    updater = optimizer.get_updater(opt)
    dtypes = ['float32', 'float64', 'float32', 'float32', 'float64']
    updater(list(range(5)), [nd([1.0], d) for d in dtypes], [nd([0.0], d) for d in dtypes])
    assert calls == [([0, 2], np.float32), ([3], np.float32), ([1, 4], np.float64)]


# ---------------------------------------------------------------------------------------------
# registry, multipliers, counters
# ---------------------------------------------------------------------------------------------
def test_create_is_case_insensitive_and_names_every_optimizer():
    assert type(optimizer.create('SGD')) is optimizer.SGD
    assert type(optimizer.create('RmsProp')) is optimizer.RMSProp
    assert type(optimizer.create('ccSGD')) is optimizer.ccSGD
    for name in ('sgd', 'signum', 'ftml', 'lars', 'lamb', 'dcasgd', 'nag', 'sgld', 'ccsgd',
                 'adam', 'adagrad', 'rmsprop', 'adadelta', 'ftrl', 'adamax', 'nadam', 'test'):
        assert name in optimizer.Optimizer.opt_registry
    with pytest.raises(ValueError, match='Cannot find optimizer nope'):
        optimizer.create('nope')


def test_defaults(monkeypatch):
    adam = optimizer.create('adam')
    assert (adam.lr, adam.beta1, adam.beta2, adam.epsilon) == (0.001, 0.9, 0.999, 1e-8)
    assert optimizer.create('adamax').lr == 0.002 and optimizer.create('ftrl').lr == 0.1
    assert optimizer.create('sgd').lr == 0.01
    assert optimizer.create('adagrad').float_stable_eps == 1e-7
    assert optimizer.create('lamb').aggregate_num == 45
    assert optimizer.create('sgd').aggregate_num >= 1024          # one call per model
    monkeypatch.setenv('MXNET_OPTIMIZER_AGGREGATION_SIZE', '4')
    assert optimizer.create('sgd').aggregate_num == 4


def test_register_user_optimizer_used_by_name():
    @optimizer.register
    class HalfStep(optimizer.Optimizer):
        def create_state(self, index, weight):
            return mx.nd.zeros(weight.shape, weight.context)

        def update(self, index, weight, grad, state):
            self._update_count(index)
            weight[:] = weight - 0.5 * self._get_lr(index) * grad
            state[:] = state + 1

    try:
        opt = optimizer.create('halfstep', learning_rate=1.0)
        assert isinstance(opt, HalfStep)
        updater = optimizer.get_updater(opt)
        weights = [nd([1.0, 1.0]), nd([2.0])]
        updater([0, 1], [nd([1.0, 2.0]), nd([4.0])], weights)
        np.testing.assert_allclose(weights[0].asnumpy(), [0.5, 0.0])
        np.testing.assert_allclose(weights[1].asnumpy(), [0.0])
        assert updater.states[1].asnumpy()[0] == 1.0 and opt.num_update == 1
        with pytest.warns(UserWarning, match='is overriding existing optimizer'):
            optimizer.register(type('HalfStep', (optimizer.Optimizer,), {}))
    finally:
        optimizer.Optimizer.opt_registry.pop('halfstep')


def test_sgd_subclass_update_override_is_bypassed_by_the_updater_as_mxnet():
    # MXNet 1.9.1: SGD's update_multi_precision (the Updater's path) runs SGD's own rule
    class Frozen(optimizer.SGD):
        def update(self, index, weight, grad, state):
            pass

    weights = [nd([1.0]), nd([2.0])]
    optimizer.get_updater(Frozen(learning_rate=1.0))([0, 1], [nd([1.0]), nd([1.0])], weights)
    assert [w.asnumpy()[0] for w in weights] == [0.0, 1.0]           # MXNet 1.9.1's values

    class FrozenBase(optimizer.Optimizer):                  # the base class goes through update
        def update(self, index, weight, grad, state):
            pass

    optimizer.get_updater(FrozenBase(learning_rate=1.0))([0, 1], [nd([1.0]), nd([1.0])], weights)
    assert [w.asnumpy()[0] for w in weights] == [0.0, 1.0]


def test_optimizer_without_rule_says_so():
    opt = optimizer.Optimizer()
    with pytest.raises(NotImplementedError, match='override update'):
        opt.update(0, nd([1.0]), nd([1.0]), None)


def test_param_idx2name_must_be_a_dict():
    with pytest.raises(TypeError, match='param_idx2name'):
        optimizer.SGD(param_idx2name=['a'])


class FakeSymbol:
    def attr_dict(self):
        return {'fc_weight': {'__lr_mult__': '2.0', '__wd_mult__': '0.5'},
                'fc_bias': {'__lr_mult__': '3'}, 'fc': {'num_hidden': '3'}}

    def list_arguments(self):
        return ['data', 'fc_weight', 'fc_bias']


def test_multipliers_from_names_and_symbol():
    opt = optimizer.SGD(wd=0.1, param_idx2name={0: 'a_weight', 1: 'a_bias', 2: 'bn_gamma',
                                                3: 'bn_beta', 4: 'x'})
    assert opt.wd_mult == {'a_bias': 0.0, 'bn_beta': 0.0, 'x': 0.0} and opt.lr_mult == {}
    assert [opt._get_wd(i) for i in range(5)] == [0.1, 0.0, 0.1, 0.0, 0.0]
    assert opt._get_wd('a_bias') == 0.0 and opt._get_wd(9) == 0.1
    opt.set_lr_mult({1: 5.0, 'a_weight': 2.0})
    assert opt._get_lr(1) == 0.05 and opt._get_lr(0) == 0.02 and opt._get_lr(2) == 0.01

    with_sym = optimizer.SGD(sym=FakeSymbol(), param_idx2name={0: 'fc_weight', 1: 'fc_bias'})
    assert with_sym.lr_mult == {'fc_weight': 2.0, 'fc_bias': 3.0}
    assert with_sym.wd_mult == {'fc_bias': 0.0, 'fc_weight': 0.5}
    assert optimizer.SGD(sym=FakeSymbol()).wd_mult == {'fc_weight': 0.5}
    lars = optimizer.LARS(param_idx2name={0: 'a_weight', 1: 'bn_gamma'})
    assert lars.wd_mult == {'bn_gamma': 0.0}


def test_param_dict_multipliers_come_first():
    class Param:
        lr_mult, wd_mult = 3.0, 0.0

    opt = optimizer.SGD(learning_rate=0.1, wd=0.5, param_dict={0: Param()})
    opt.set_lr_mult({0: 100.0})
    assert opt._get_lr(0) == pytest.approx(0.3) and opt._get_wd(0) == 0.0
    assert 'param_dict' not in opt.__getstate__()


def test_update_counts_per_index_and_per_device():
    opt = optimizer.Adam(begin_num_update=5)
    updater = optimizer.get_updater(opt)
    w0, w1 = nd([1.0]), nd([1.0], ctx=mx.cpu(1))
    updater(0, nd([1.0]), w0)
    updater(0, nd([1.0]), w0)
    updater(0, nd([1.0], ctx=mx.cpu(1)), w1)
    assert opt._all_index_update_counts == {0: {0: 7}, 1: {0: 6}}
    assert opt.num_update == 7


def test_bytes_index_is_decoded():
    updater = optimizer.get_updater(optimizer.SGD(momentum=0.9))
    updater(b'fc_weight', nd([1.0]), nd([1.0]))
    assert list(updater.states) == ['fc_weight']


def test_updater_list_lengths_must_match():
    updater = optimizer.get_updater(optimizer.SGD())
    with pytest.raises(ValueError, match='same length'):
        updater([0, 1], [nd([1.0])], [nd([1.0]), nd([1.0])])


# ---------------------------------------------------------------------------------------------
# states and multi-precision
# ---------------------------------------------------------------------------------------------
def kinds(state):
    if state is None:
        return None
    if isinstance(state, tuple):
        return tuple(kinds(s) for s in state)
    return np.dtype(state.dtype).name


@pytest.mark.parametrize('name, params, expected', [
    ('sgd', {}, None),
    ('sgd', {'momentum': 0.9}, 'float64'),
    ('nag', {'momentum': 0.9}, 'float64'),
    ('adam', {}, ('float64', 'float64')),
    ('adagrad', {}, 'float32'),
    ('rmsprop', {}, ('float32',)),
    ('rmsprop', {'centered': True}, ('float32', 'float32', 'float32')),
    ('adadelta', {}, ('float32', 'float32')),
    ('ftrl', {}, ('float32', 'float32')),
    ('adamax', {}, ('float64', 'float64')),
    ('nadam', {}, ('float64', 'float64')),
    ('ftml', {}, ('float64', 'float64', 'float64')),
    ('lamb', {}, ('float64', 'float64')),
    ('signum', {}, 'float64'),
    ('signum', {'momentum': 0.0}, None),
    ('dcasgd', {}, (None, 'float64')),
    ('lars', {'momentum': 0.9}, 'float64'),
    ('test', {}, 'float32'),
])
def test_state_layout(name, params, expected):
    opt = optimizer.create(name, **params)
    assert kinds(opt.create_state_multi_precision(0, nd([1.0, 2.0], 'float64'))) == expected


@pytest.mark.parametrize('name, params, expected', [
    ('sgd', {'momentum': 0.9}, ('float32', 'float32')),
    ('sgd', {}, (None, 'float32')),
    ('nag', {'momentum': 0.9}, ('float32', 'float32')),
    ('lars', {'momentum': 0.9}, ('float32', 'float32')),
    ('adam', {}, ('float32', ('float32', 'float32'))),
    ('signum', {}, ('float32', 'float32')),
    ('rmsprop', {'centered': True}, ('float32', ('float32', 'float32', 'float32'))),
])
def test_multi_precision_state_layout(name, params, expected):
    opt = optimizer.create(name, multi_precision=True, **params)
    state = opt.create_state_multi_precision(0, nd([1.0, 2.0], 'float16'))
    assert kinds(state) == expected
    master = state[1] if name in ('sgd', 'nag', 'lars') else state[0]
    np.testing.assert_array_equal(master.asnumpy(), [1.0, 2.0])


def test_multi_precision_weight_is_cast_of_master():
    opt = optimizer.SGD(learning_rate=0.1, momentum=0.9, multi_precision=True)
    updater = optimizer.get_updater(opt)
    weight = nd([1.0, -3.0, 1e-4], 'float16')
    for _ in range(5):
        updater(0, nd([1e-3, 2e-3, 1.0], 'float16'), weight)
    master = updater.states[0][1]
    assert weight.dtype == np.float16 and master.dtype == np.float32
    np.testing.assert_array_equal(weight.asnumpy(), master.asnumpy().astype(np.float16))
    assert master.asnumpy()[0] != 1.0 and master.asnumpy()[0] > 0.99


def test_float16_without_multi_precision_warns():
    with pytest.warns(UserWarning, match='multi_precision=True'):
        optimizer.SGD(momentum=0.9).create_state_multi_precision(0, nd([1.0], 'float16'))
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        optimizer.SGD(momentum=0.9).create_state_multi_precision(0, nd([1.0], 'float32'))


def test_malformed_multi_precision_state_is_reported():
    opt = optimizer.SGD(momentum=0.9, multi_precision=True)
    weight = nd([1.0], 'float16')
    with pytest.raises(ValueError, match='fp32 master'):
        opt.update_multi_precision(0, weight, nd([1.0], 'float16'), nd([0.0]))


def test_weights_are_updated_in_place():
    for name in ('sgd', 'nag', 'adam', 'adagrad', 'rmsprop', 'adadelta', 'adamax', 'nadam',
                 'ftrl', 'signum', 'ftml', 'lamb', 'lars', 'sgld', 'dcasgd', 'test'):
        opt = optimizer.create(name)
        weight = nd([1.0, 2.0])
        tensor = weight._tensor
        optimizer.get_updater(opt)(0, nd([0.5, -0.5]), weight)
        assert weight._tensor is tensor
        assert not np.array_equal(tensor.numpy(), [1.0, 2.0]), name


# ---------------------------------------------------------------------------------------------
# .states pickles
# ---------------------------------------------------------------------------------------------
def pickle_globals(data):
    """The (module, name) globals a protocol-4 pickle refers to."""
    strings, found = [], set()
    for op, arg, _ in pickletools.genops(data):
        if op.name in ('SHORT_BINUNICODE', 'BINUNICODE', 'UNICODE'):
            strings.append(arg)
        elif op.name == 'STACK_GLOBAL':
            found.add((strings[-2], strings[-1]))
        elif op.name == 'GLOBAL':
            found.add(tuple(arg.split(' ')))
    return found


@pytest.mark.parametrize('model', ['mlp', 'lenet_bn', 'resnet_tiny', 'lstm_lm', 'mixed_ops'])
def test_golden_states_files_load(golden, model):
    folder = golden / 'checkpoints'
    with open(folder / 'manifest.json') as f:
        index_to_param = json.load(f)['models'][model]['states_file']['index_to_param']
    train = np.load(folder / ('%s-train.npz' % model))
    updater = optimizer.get_updater(optimizer.SGD(momentum=0.9))
    updater.set_states((folder / ('%s-0003.states' % model)).read_bytes())
    assert sorted(updater.states) == sorted(int(k) for k in index_to_param)
    for index, name in index_to_param.items():
        state = updater.states[int(index)]
        assert isinstance(state, mx.nd.NDArray) and state.context == mx.cpu()
        np.testing.assert_array_equal(state.asnumpy(), train['opt_state/' + name])
    assert not any(updater.states_synced.values())


@pytest.mark.parametrize('run', sorted(k.split('/')[0] for k in REF_ARRAYS.files
                                       if k.endswith('/states_pickle')))
def test_mxnet_written_states_load(run):
    _, updater = make_reference_run(run)
    updater.set_states(REF_ARRAYS[run + '/states_pickle'].tobytes())
    for i, n in enumerate(REF['names']):
        for key, value in state_arrays(updater.states[i]).items():
            np.testing.assert_array_equal(value, REF_ARRAYS['%s/state/%s%s' % (run, n, key)])


def test_mxnet_dumped_optimizer_maps_onto_mxtorch_classes():
    run = 'sgd_clip_sched'
    opt, updater = make_reference_run(run)
    updater.set_states(REF_ARRAYS[run + '/states_pickle_dump'].tobytes())
    loaded = updater.optimizer
    assert type(loaded) is optimizer.SGD and loaded is not opt
    assert type(loaded.lr_scheduler) is lr_scheduler.FactorScheduler
    assert loaded.num_update == 3 and loaded._index_update_count == {0: 3, 1: 3, 2: 3}
    assert loaded._index_update_count is loaded._all_index_update_counts[0]
    assert loaded.clip_gradient == 0.3 and loaded.param_dict == {}
    assert loaded.wd_mult == {'fc_bias': 0.0} and loaded.lr_mult == {'bn_gamma': 0.5}
    assert loaded.learning_rate == pytest.approx(0.1 * 0.8 ** 2)
    weight = nd([1.0])
    updater(0, nd([1.0]), weight)          # the loaded optimizer keeps counting and updating
    assert loaded.num_update == 4
    # lr 0.1 * 0.8^3 at update 4; rescaled grad 0.5 clipped to 0.3; wd 0.01
    assert weight.asnumpy()[0] == pytest.approx(1.0 - 0.1 * 0.8 ** 3 * (0.3 + 0.01))


def test_written_pickle_has_mxnet_form():
    _, updater = make_reference_run('adam')
    weights, grads = reference_step_inputs('adam', 'float32')
    updater(list(range(3)), grads[0], weights)
    data = updater.get_states()
    assert pickle_globals(data) == {('mxnet.ndarray.ndarray', 'NDArray'), ('builtins', 'bytearray')}
    ops = [(op.name, arg) for op, arg, _ in pickletools.genops(data)]
    assert ops[0] == ('PROTO', 4)
    first = [name for name, _ in ops].index('STACK_GLOBAL')
    assert [name for name, _ in ops[first:first + 6]] == \
        ['STACK_GLOBAL', 'MEMOIZE', 'NONE', 'TUPLE1', 'MEMOIZE', 'REDUCE']
    record = next(arg for name, arg in ops if name in ('SHORT_BINBYTES', 'BINBYTES'))
    assert record == mx.nd.serialization.encode_record(updater.states[0][0])
    dumped = updater.get_states(dump_optimizer=True)
    assert ('mxnet.optimizer.optimizer', 'Adam') in pickle_globals(dumped)


@pytest.mark.parametrize('run', ['sgd_mom', 'sgd_clip_sched', 'adam', 'rmsprop_centered',
                                 'dcasgd', 'signsgd', 'sgd_mp', 'adam_mp', 'nadam', 'lars'])
def test_states_round_trip_resumes_identically(run):
    dtype = REF['runs'][run]['options'].get('dtype', 'float32')
    _, straight = make_reference_run(run)
    weights, grads = reference_step_inputs(run, dtype)
    for step in grads:
        straight(list(range(3)), step, weights)

    _, first = make_reference_run(run)
    resumed_weights, _ = reference_step_inputs(run, dtype)
    first(list(range(3)), grads[0], resumed_weights)
    _, second = make_reference_run(run)
    second.set_states(first.get_states(dump_optimizer=True))
    assert type(second.optimizer) is type(first.optimizer)
    for step in grads[1:]:
        second(list(range(3)), step, resumed_weights)
    for a, b in zip(weights, resumed_weights):
        np.testing.assert_array_equal(a.asnumpy(), b.asnumpy())
    for i in range(3):
        a, b = state_arrays(straight.states[i]), state_arrays(second.states[i])
        assert sorted(a) == sorted(b)
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])


def test_set_states_without_optimizer_keeps_it_and_syncs_context():
    opt = optimizer.SGD(momentum=0.9, learning_rate=0.1)
    updater = optimizer.get_updater(opt)
    updater(0, nd([1.0, 1.0]), nd([0.0, 0.0]))
    data = updater.get_states()
    other = optimizer.get_updater(optimizer.SGD(momentum=0.9, learning_rate=0.1))
    other.set_states(data)
    assert other.states_synced == {0: False}
    weight = nd([0.0, 0.0], ctx=mx.cpu(1))
    other(0, nd([1.0, 1.0], ctx=mx.cpu(1)), weight)
    assert other.states[0].context == mx.cpu(1) and other.states_synced == {0: True}
    np.testing.assert_allclose(other.states[0].asnumpy(), [-0.19, -0.19], rtol=1e-6)


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA device')
def test_loaded_states_move_to_the_gpu():
    updater = optimizer.get_updater(optimizer.Adam())
    updater.set_states(REF_ARRAYS['adam/states_pickle'].tobytes())
    weights = [nd(np.zeros(REF_ARRAYS['adam/init/' + n].shape), ctx=mx.gpu(0))
               for n in REF['names']]
    grads = [nd(np.ones(w.shape), ctx=mx.gpu(0)) for w in weights]
    updater(list(range(3)), grads, weights)
    assert all(s.context == mx.gpu(0) for i in range(3) for s in updater.states[i])


def call_pickle(module, name, args, state=b''):
    """A protocol-4 pickle calling global module.name with `args` (pickle opcodes of the
    argument tuple), then BUILD with `state` opcodes when given."""
    def text(value):
        raw = value.encode()
        return b'\x8c' + bytes([len(raw)]) + raw
    body = text(module) + text(name) + b'\x93' + args + b'R'
    if state:
        body += state + b'b'
    return b'\x80\x04' + body + b'.'


class Boom:
    def __reduce__(self):
        return (os.system, ('echo pwned > /dev/null',))


def test_foreign_globals_are_refused():
    for payload in (pickle.dumps({0: Boom()}, protocol=4), pickle.dumps({0: Boom()}, protocol=0),
                    pickle.dumps(io.BytesIO)):
        with pytest.raises(pickle.UnpicklingError, match='refusing to load global'):
            optimizer.get_updater(optimizer.SGD()).set_states(payload)


def test_refused_global_never_runs(tmp_path):
    marker = tmp_path / 'ran'

    class Exec:
        def __reduce__(self):
            return (exec, ('open(%r, "w").close()' % str(marker),))

    payload = pickle.dumps({0: Exec()})
    with pytest.raises(pickle.UnpicklingError, match='builtins.exec'):
        serialization.loads(payload)
    assert not marker.exists()
    pickle.loads(payload)               # the same bytes do run code under plain pickle
    assert marker.exists()


def test_array_pickles_are_checked():
    with pytest.raises(pickle.UnpicklingError, match=r'\(None,\)'):
        serialization.loads(call_pickle('mxnet.ndarray.ndarray', 'NDArray', b'K\x05\x85'))
    with pytest.raises(pickle.UnpicklingError, match='bytearray may only be rebuilt from bytes'):
        serialization.loads(call_pickle('builtins', 'bytearray', b'J\x00\xca\x9a;\x85'))
    with pytest.raises(pickle.UnpicklingError, match='handle'):
        serialization.loads(call_pickle('mxnet.ndarray.ndarray', 'NDArray', b'N\x85',
                                        b'}\x8c\x01xK\x01s'))
    with pytest.raises(TypeError, match='bytes'):
        serialization.loads('not bytes')


def test_sparse_and_old_array_names_load_densely():
    record = mx.nd.serialization.encode_record(nd([[1.0, 2.0]]))
    state = b'}\x8c\x06handleB' + len(record).to_bytes(4, 'little') + record + b's'
    for module, name in [('mxnet.ndarray', 'NDArray'),
                         ('mxnet.ndarray.sparse', 'RowSparseNDArray')]:
        arr = serialization.loads(call_pickle(module, name, b'N\x85', state))
        assert isinstance(arr, mx.nd.NDArray)
        np.testing.assert_array_equal(arr.asnumpy(), [[1.0, 2.0]])


def test_pickled_optimizer_objects_load_in_every_protocol():
    sched = lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=0.1)
    opt = optimizer.Adam(learning_rate=0.1, lr_scheduler=sched, param_idx2name={0: 'a_bias'})
    for protocol in (0, 2, 4):
        loaded = serialization.loads(pickle.dumps(opt, protocol=protocol))
        assert type(loaded) is optimizer.Adam and type(loaded.lr_scheduler) is type(sched)
        assert loaded.wd_mult == {'a_bias': 0.0} and vars(loaded.lr_scheduler) == vars(sched)


class Anchored(optimizer.SGD):
    """A user optimizer holding an array; registered only inside the test below."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.anchor = mx.nd.array([1.0, 2.0])


def test_registered_optimizer_with_array_attribute_round_trips():
    optimizer.register(Anchored)
    try:
        updater = optimizer.get_updater(Anchored(learning_rate=0.5))
        updater(0, nd([1.0]), nd([1.0]))
        other = optimizer.get_updater(optimizer.SGD())
        other.set_states(updater.get_states(dump_optimizer=True))
        assert type(other.optimizer) is Anchored
        np.testing.assert_array_equal(other.optimizer.anchor.asnumpy(), [1.0, 2.0])
    finally:
        optimizer.Optimizer.opt_registry.pop('anchored')
    with pytest.raises(pickle.UnpicklingError, match='refusing to load global'):
        optimizer.get_updater(optimizer.SGD()).set_states(pickle.dumps(Anchored()))


def test_states_pair_must_hold_an_optimizer():
    updater = optimizer.get_updater(optimizer.SGD())
    with pytest.raises(ValueError, match='Optimizer second'):
        updater.set_states(pickle.dumps(({}, 3)))
    with pytest.raises(ValueError, match='dict index -> state'):
        updater.set_states(pickle.dumps([1, 2]))
    assert updater.states == {} and type(updater.optimizer) is optimizer.SGD


# two updates with a row_sparse gradient holding rows 0 and 2 (MXNet 1.9.1, lr=0.1): the lazy
# rules change only those rows of the weight and state
_LAZY_EXPECTED = {
    'adam': [[-0.9142184, -0.37145323, -0.62855905], [-0.05702487, 0.08600592, 0.6284495]],
    'sgd': [[-0.8381429, -0.26591432, -0.9941857], [0.06647858, 0.24855715, 0.5028857]],
    'ftrl': [[-0.2980875, -0.19279358, -0.4029827], [-0.00915794, 0.0071452, 0.14120018]],
    'adagrad': [[-0.88499635, -0.4007179, -0.5992821], [-0.02785343, 0.11500429, 0.599282]],
}


@pytest.mark.parametrize('name,kwargs,w_stype', [
    ('adam', {'wd': 0.1}, 'default'), ('sgd', {'wd': 0.1, 'momentum': 0.9}, 'default'),
    ('ftrl', {'wd': 0.1}, 'row_sparse'), ('adagrad', {}, 'default')])
def test_lazy_row_sparse_updates_match_mxnet(name, kwargs, w_stype):
    w0 = (np.arange(12, dtype=np.float32).reshape(4, 3) - 5) / 7
    grad = mx.nd.sparse.row_sparse_array(
        (np.array([[0.5, -1, 2], [0.25, 0.1, -0.3]], dtype=np.float32), np.array([0, 2])),
        shape=(4, 3))
    opt = mx.optimizer.create(name, learning_rate=0.1, **kwargs)
    weight = mx.nd.array(w0).tostype(w_stype)
    state = opt.create_state_multi_precision(0, weight)
    for _ in range(2):
        opt.update_multi_precision(0, weight, grad, state)
    got = weight.asnumpy()
    np.testing.assert_allclose(got[[0, 2]], _LAZY_EXPECTED[name], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[[1, 3]], w0[[1, 3]])


def test_lazy_update_off_and_sparse_adagrad_decay():
    grad = mx.nd.sparse.row_sparse_array((np.ones((1, 2), dtype=np.float32), np.array([0])),
                                         shape=(2, 2))
    weight = mx.nd.ones((2, 2))
    opt = mx.optimizer.Adam(learning_rate=0.1, wd=0.1, lazy_update=False)
    opt.update(0, weight, grad, opt.create_state(0, weight))
    assert (weight.asnumpy() != 1).all()          # the absent row decays too
    opt = mx.optimizer.AdaGrad(learning_rate=0.1, wd=0.1)
    with pytest.raises(mx.MXNetError, match='does not support weight decay'):
        opt.update(0, weight, grad, opt.create_state(0, weight))


def test_lbsgd_matches_mxnet():
    import importlib.util
    spec = importlib.util.spec_from_file_location('gen_lbsgd', FIXTURES / 'gen_lbsgd.py')
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    expected = np.load(FIXTURES / 'lbsgd.npy')
    np.testing.assert_allclose(gen.lbsgd_runs(mx), expected, rtol=1e-6, atol=1e-6)
    assert isinstance(mx.optimizer.create('lbsgd'), mx.optimizer.LBSGD)

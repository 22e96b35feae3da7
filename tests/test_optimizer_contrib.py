"""The contrib update operators (AdamW, multi-tensor LAMB, group AdaGrad), the GroupAdaGrad
optimizer and NAG against MXNet 1.9.1's numbers (tests/fixtures/optimizer_contrib.npz, made
by tests/fixtures/gen_optimizer_contrib.py); the optimizer rules' hook (_rule_call)."""
import json
import os

import numpy as np
import pytest
import torch

import mxtorch as mx
from mxtorch import optimizer
from mxtorch.ops import optimizer_rules as rules

FIXTURE = os.path.join(os.path.dirname(__file__), 'fixtures', 'optimizer_contrib.npz')
DATA = np.load(FIXTURE)
META = json.loads(str(DATA['meta']))
CASES = [c for c in META if 'fn' in c]


def _tol(dtype):
    return dict(rtol=2e-3, atol=2e-3) if dtype == np.float16 else dict(rtol=2e-5, atol=1e-6)


def _lookup(path):
    obj = mx
    for part in path.split('.'):
        obj = getattr(obj, part)
    return obj


def _resolve(spec, nds):
    if isinstance(spec, list) and spec and spec[0] == 'array':
        return mx.nd.array(spec[1])
    if isinstance(spec, list):
        return [nds[k] for k in spec]
    if isinstance(spec, str):
        return nds[spec]
    return spec


@pytest.mark.parametrize('case', CASES, ids=[c['name'] for c in CASES])
def test_contrib_update_matches_mxnet(case):
    name = case['name']
    nds = {}
    for k in case['arrays']:
        init = DATA['%s/init/%s' % (name, k)]
        nds[k] = mx.nd.array(init, dtype=init.dtype)
    fn = _lookup(case['fn'])
    args = case['args']
    for step in range(case['steps']):
        kwargs = dict(case['params'])
        if 'lamb' in case['fn'] and 'step_count' not in kwargs:
            kwargs['step_count'] = [step + 1 + i for i in range(len(args[0]))]
        fn(*[_resolve(a, nds) for a in args], out=_resolve(case['out'], nds), **kwargs)
        for k, arr in nds.items():
            want = DATA['%s/step%d/%s' % (name, step, k)]
            assert arr.dtype == want.dtype and arr.shape == want.shape
            np.testing.assert_allclose(arr.asnumpy(), want, err_msg='%s step %d %s'
                                       % (name, step, k), **_tol(want.dtype))


def test_adamw_skips_on_non_finite_rescale_without_touching_states():
    w, m, v = mx.nd.ones((3,)), mx.nd.ones((3,)), mx.nd.ones((3,))
    for rescale in (float('inf'), float('nan'), 0.0, mx.nd.array([float('-inf')])):
        out = mx.nd.contrib.adamw_update(w, mx.nd.ones((3,)), m, v, rescale, lr=0.1, eta=1.0)
        for a in (out, w, m, v):
            assert (a.asnumpy() == 1).all()


def test_multi_ops_check_list_lengths():
    w = [mx.nd.ones((2,))]
    with pytest.raises(mx.MXNetError, match='learning rates'):
        mx.nd.contrib.multi_adamw_update(w, w, w, w, 1.0, lrs=[0.1, 0.2], wds=[0.], etas=[1.])
    with pytest.raises(mx.MXNetError, match='step counts'):
        mx.nd.contrib.multi_lamb_update(w, w, [mx.nd.zeros((2,))], [mx.nd.zeros((2,))],
                                        step_count=[1, 2], lrs=[0.1], wds=[0.])


def test_contrib_op_schemas():
    from mxtorch.ops import get_op
    op = get_op('_multi_mp_adamw_update')
    p = op.parse_params({'lrs': '(0.1, 0.2)', 'wds': '(0, 0)', 'etas': '(1, 1)',
                         'num_weights': '2'})
    assert op.input_names(p) == ['weight_0', 'grad_0', 'mean_0', 'var_0', 'weight32_0',
                                 'weight_1', 'grad_1', 'mean_1', 'var_1', 'weight32_1',
                                 'rescale_grad']
    assert get_op('_adamw_update').input_names(get_op('_adamw_update').parse_params(
        {'lr': 0.1, 'eta': 1})) == ['weight', 'grad', 'mean', 'var', 'rescale_grad']
    p = get_op('_multi_lamb_update').parse_params({'learning_rates': (0.1,), 'wds': (0,),
                                                   'step_count': (3,)})
    assert p.step_count == (3,) and p.epsilon == 1e-6 and p.num_tensors == 1
    assert get_op('_contrib_group_adagrad_update').aux_names(
        get_op('_contrib_group_adagrad_update').parse_params({'lr': 0.1})) == ['history']
    with pytest.raises(mx.MXNetError):
        mx.nd.contrib.group_adagrad_update(mx.nd.ones((2, 2)), mx.nd.ones((2, 2)),
                                           mx.nd.zeros((2, 1)), lr=0.1)


def test_mp_adamw_types():
    s = mx.sym.contrib.mp_adamw_update(mx.sym.var('w'), mx.sym.var('g'), mx.sym.var('m'),
                                       mx.sym.var('v'), mx.sym.var('w32'), mx.sym.var('r'),
                                       lr=0.1, eta=1.0)
    args, outs, _ = s.infer_type(w='float16')
    assert [np.dtype(t) for t in args] == [np.float16, np.float16] + [np.float32] * 4
    assert np.dtype(outs[0]) == np.float16


def _sparse_grad(step, key='group_adagrad_op'):
    vals = DATA['%s/step%d/grad_data' % (key, step)]
    rows = DATA['%s/step%d/grad_rows' % (key, step)]
    return mx.nd.sparse.row_sparse_array((vals, rows), shape=(5, 3))


def test_group_adagrad_operator_lazy_rows():
    meta = next(c for c in META if c['name'] == 'group_adagrad_op')
    w = mx.nd.array(DATA['group_adagrad_op/init/weight'])
    h = mx.nd.zeros((5, 1))
    for step in range(meta['steps']):
        mx.nd.contrib.group_adagrad_update(w, _sparse_grad(step), h, out=w, **meta['params'])
        np.testing.assert_allclose(w.asnumpy(), DATA['group_adagrad_op/step%d/weight' % step],
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(h.asnumpy(), DATA['group_adagrad_op/step%d/history' % step],
                                   rtol=1e-5)


def test_group_adagrad_optimizer():
    meta = next(c for c in META if c['name'] == 'group_adagrad_opt')
    opt = optimizer.create('groupadagrad', **meta['params'])
    assert isinstance(opt, optimizer.contrib.GroupAdaGrad)
    updater = optimizer.get_updater(opt)
    w = mx.nd.array(DATA['group_adagrad_op/init/weight'])
    for step in range(meta['steps']):
        if step == 1:
            g = _sparse_grad(step, 'group_adagrad_opt')
        else:
            g = mx.nd.array(DATA['group_adagrad_opt/step%d/grad_data' % step])
        updater(0, g, w)
        np.testing.assert_allclose(w.asnumpy(), DATA['group_adagrad_opt/step%d/weight' % step],
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(updater.states[0].asnumpy(),
                                   DATA['group_adagrad_opt/step%d/history' % step], rtol=1e-5)
    with pytest.raises(AssertionError):
        optimizer.contrib.GroupAdaGrad(wd=0.1).update(0, w, g, mx.nd.zeros((5, 1)))


def _nag_grads():
    return [DATA['nag/step%d/grad' % s] for s in range(3)]


def test_nag_operator_and_optimizer_match_mxnet():
    """MXNet's kernel reads the weight after writing the output: with out=weight (as
    mx.optimizer.NAG calls it) mom's weight decay uses the new weight, with a separate output
    the old one."""
    params = next(c for c in META if c['name'] == 'nag')['params']
    w, m = mx.nd.array(DATA['nag/init/weight']), mx.nd.array(DATA['nag/init/mom'])
    for step, g in enumerate(_nag_grads()):
        mx.nd.nag_mom_update(w, mx.nd.array(g), m, out=w, **params)
        np.testing.assert_allclose(w.asnumpy(), DATA['nag_op_out/step%d/weight' % step],
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(m.asnumpy(), DATA['nag_op_out/step%d/mom' % step],
                                   rtol=1e-5, atol=1e-6)
    w, m = mx.nd.array(DATA['nag/init/weight']), mx.nd.array(DATA['nag/init/mom'])
    for step, g in enumerate(_nag_grads()):
        w = mx.nd.nag_mom_update(w, mx.nd.array(g), m, **params)
        np.testing.assert_allclose(w.asnumpy(), DATA['nag_op_new/step%d/weight' % step],
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(m.asnumpy(), DATA['nag_op_new/step%d/mom' % step],
                                   rtol=1e-5, atol=1e-6)
    opt = optimizer.NAG(learning_rate=params['lr'], wd=params['wd'],
                        momentum=params['momentum'], rescale_grad=params['rescale_grad'],
                        clip_gradient=params['clip_gradient'])
    updater = optimizer.get_updater(opt)
    w = mx.nd.array(DATA['nag/init/weight'])
    for step, g in enumerate(_nag_grads()):
        updater(0, mx.nd.array(g), w)
        np.testing.assert_allclose(w.asnumpy(), DATA['nag_opt/step%d/weight' % step],
                                   rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(updater.states[0].asnumpy(),
                                   DATA['nag_opt/step%d/mom' % step], rtol=1e-5, atol=1e-6)


# ---- the rules' hook -------------------------------------------------------------------------
def test_rule_call_matches_update_and_counts():
    rng = np.random.RandomState(0)
    w0 = [rng.randn(3, 2).astype('float32'), rng.randn(4).astype('float32')]
    g0 = [rng.randn(3, 2).astype('float32'), rng.randn(4).astype('float32')]
    for name, kw in (('sgd', dict(momentum=0.9)), ('adam', {}), ('nag', dict(momentum=0.8)),
                     ('rmsprop', dict(centered=True)), ('lamb', {}), ('ftml', {}),
                     ('signum', {}), ('adagrad', {}), ('ftrl', {})):
        ref = optimizer.create(name, wd=0.01, clip_gradient=1.0, **kw)
        fused = optimizer.create(name, wd=0.01, clip_gradient=1.0, **kw)
        assert fused._has_rule()
        updater = optimizer.get_updater(ref)
        wr = [mx.nd.array(w) for w in w0]
        wf = [torch.tensor(w) for w in w0]
        states = [fused.create_state(i, mx.nd.array(w)) for i, w in enumerate(w0)]

        def tensors(s):
            if s is None:
                return None
            if isinstance(s, tuple):
                return tuple(tensors(x) for x in s)
            return s._tensor
        st = [tensors(s) for s in states]
        for _ in range(2):
            updater([0, 1], [mx.nd.array(g) for g in g0], wr)
            fused._rule_call([0, 1], wf, [torch.tensor(g) for g in g0], st)
        for a, b in zip(wr, wf):
            np.testing.assert_allclose(a.asnumpy(), b.numpy(), rtol=1e-6, atol=1e-7,
                                       err_msg=name)
        assert fused._index_update_count == {0: 2, 1: 2} and fused.num_update == 2


def test_custom_optimizers_have_no_rule():
    class Mine(optimizer.Optimizer):
        def update(self, index, weight, grad, state):
            weight[:] -= grad
    assert not Mine()._has_rule()
    assert not optimizer.Test()._has_rule() and not optimizer.LBSGD()._has_rule()
    with pytest.raises(NotImplementedError):
        Mine()._rule_call([0], [torch.ones(1)], [torch.ones(1)], [None])


def test_rules_trace_without_host_syncs():
    """A rule is plain torch on tensors and floats: it runs on meta tensors, which have no
    data to read back."""
    w = [torch.empty(3, 2, device='meta'), torch.empty(4, device='meta')]
    g = [torch.empty_like(x) for x in w]
    m = [torch.empty_like(x) for x in w]
    v = [torch.empty_like(x) for x in w]
    rules.sgd(w, g, m, [0.1, 0.2], [0.0, 0.01], 0.9, 1.0, 0.5)
    rules.nag(w, g, m, [0.1, 0.2], [0.0, 0.01], 0.9, 1.0, 0.5)
    rules.adam(w, g, m, v, [0.1, 0.2], [0.0, 0.01], clip=1.0)
    rules.adamw(w, g, m, v, [0.1, 0.2], [0.0, 0.01], [1.0, 1.0])
    rules.lamb(w, g, m, v, [0.1, 0.2], [0.0, 0.01], [1, 2], lower_bound=0.1)


def test_group_adagrad_with_no_stored_rows_changes_nothing():
    w, h = mx.nd.ones((3, 4)), mx.nd.zeros((3, 1))
    g = mx.nd.sparse.zeros('row_sparse', (3, 4))
    mx.nd.contrib.group_adagrad_update(w, g, h, lr=0.1, out=w)
    assert (w.asnumpy() == 1).all() and (h.asnumpy() == 0).all()


def test_group_adagrad_states_pickle_under_mxnet_names():
    saved = DATA['group_adagrad_opt/states_pickle'].tobytes()     # written by MXNet 1.9.1
    updater = optimizer.get_updater(optimizer.SGD())
    updater.set_states(saved)
    assert isinstance(updater.optimizer, optimizer.contrib.GroupAdaGrad)
    assert updater.optimizer.lr == 0.3 and updater.optimizer.float_stable_eps == 1e-3
    np.testing.assert_allclose(updater.states[0].asnumpy(),
                               DATA['group_adagrad_opt/step2/history'], rtol=1e-6)
    again = updater.get_states(dump_optimizer=True)
    assert b'mxnet.optimizer.contrib' in again and b'mxtorch' not in again


def test_rules_compile_to_one_graph():
    """torch.compile traces a rule whole (fullgraph: no graph break, no host read-back)."""
    w = [torch.randn(3, 2), torch.randn(4)]
    g = [torch.randn(3, 2), torch.randn(4)]
    m = [torch.zeros(3, 2), torch.zeros(4)]
    v = [torch.zeros(3, 2), torch.zeros(4)]

    def step():
        rules.sgd(w, g, m, [0.1, 0.2], [0.0, 0.01], 0.9, 1.0, 0.5)
        rules.lamb(w, g, m, v, [0.1, 0.2], [0.0, 0.01], [1, 2], lower_bound=0.1)
    compiled = torch.compile(step, backend='aot_eager', fullgraph=True)
    w_eager = [x.clone() for x in w]
    m_eager, v_eager = [x.clone() for x in m], [x.clone() for x in v]
    rules.sgd(w_eager, g, m_eager, [0.1, 0.2], [0.0, 0.01], 0.9, 1.0, 0.5)
    rules.lamb(w_eager, g, m_eager, v_eager, [0.1, 0.2], [0.0, 0.01], [1, 2], lower_bound=0.1)
    compiled()
    for a, b in zip(w, w_eager):
        torch.testing.assert_close(a, b)

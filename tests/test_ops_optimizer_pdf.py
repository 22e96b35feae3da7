"""Optimizer update operators and the _random_pdf_* operators against MXNet 1.9.1's numbers
(tests/fixtures/optimizer_pdf_ops.npz, made by tests/fixtures/gen_optimizer_pdf_ops.py)."""
import json
import os

import numpy as np
import pytest

import mxtorch as mx

FIXTURE = os.path.join(os.path.dirname(__file__), 'fixtures', 'optimizer_pdf_ops.npz')
DATA = np.load(FIXTURE)
META = json.loads(str(DATA['meta']))


def _tol(dtype):
    return dict(rtol=2e-3, atol=2e-3) if dtype == np.float16 else dict(rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize('case', META['optimizer'], ids=[c['name'] for c in META['optimizer']])
def test_optimizer_update_matches_mxnet(case):
    name, names, outs = case['name'], case['inputs'], case['outs']
    init = [DATA['%s/init/%s' % (name, k)] for k in names]
    arrays = [mx.nd.array(a, dtype=a.dtype) for a in init]
    fn = getattr(mx.nd, case['op'])
    for step in range(case['steps']):
        params = dict(case['params'])
        if case['op'] in ('ftml_update', 'lamb_update_phase1'):
            params['t'] = step + 1
        out = [arrays[names.index(k)] for k in outs]
        kwargs = {'out': out if len(out) > 1 else out[0]} if out else {}
        res = fn(*arrays, **params, **kwargs)
        res = res if isinstance(res, (list, tuple)) else [res]
        if not outs and case['op'] != 'lamb_update_phase1':     # the NAG cases: copy back
            arrays[0][:] = res[0]
        for i, r in enumerate(res):
            want = DATA['%s/step%d/out%d' % (name, step, i)]
            assert r.dtype == want.dtype and r.shape == want.shape
            np.testing.assert_allclose(r.asnumpy(), want, err_msg='%s out%d' % (name, i),
                                       **_tol(want.dtype))
        for k, a in zip(names, arrays):            # states (and weights via out=) in place
            want = DATA['%s/step%d/%s' % (name, step, k)]
            np.testing.assert_allclose(a.asnumpy(), want, err_msg='%s %s step %d' % (name, k, step),
                                       **_tol(want.dtype))


def test_update_returns_new_weight_and_mutates_states():
    w, g, mom = mx.nd.array([1.0, 2.0]), mx.nd.array([0.5, -0.5]), mx.nd.zeros(2)
    new = mx.nd.sgd_mom_update(w, g, mom, lr=0.1, momentum=0.9)
    np.testing.assert_allclose(w.asnumpy(), [1.0, 2.0])            # weight kept without out=
    np.testing.assert_allclose(mom.asnumpy(), [-0.05, 0.05], rtol=1e-6)
    np.testing.assert_allclose(new.asnumpy(), [0.95, 2.05], rtol=1e-6)
    mx.nd.sgd_mom_update(w, g, mom, lr=0.1, momentum=0.9, out=w)
    np.testing.assert_allclose(mom.asnumpy(), [-0.095, 0.095], rtol=1e-6)
    np.testing.assert_allclose(w.asnumpy(), [0.905, 2.095], rtol=1e-6)


def test_symbol_interface():
    s = mx.sym.adam_update(mx.sym.var('w'), mx.sym.var('g'), mx.sym.var('m'), mx.sym.var('v'),
                           lr=0.1, name='a')
    assert s.list_arguments() == ['w', 'g'] and s.list_auxiliary_states() == ['m', 'v']
    s = mx.sym.multi_mp_sgd_mom_update(lrs=(0.1, 0.1), wds=(0, 0), num_weights=2, name='a')
    assert s.list_arguments()[:4] == ['a_weight_0', 'a_grad_0', 'a_mom_0', 'a_weight32_0']
    assert s.list_outputs() == ['a_output0', 'a_output1']
    s = mx.sym.multi_sum_sq(mx.sym.var('x'), mx.sym.var('y'), num_arrays=2)
    assert s.infer_shape(x=(2, 3), y=(4,))[1] == [(2,)]
    s = mx.sym.mp_sgd_update(mx.sym.var('w'), mx.sym.var('g'), mx.sym.var('w32'), lr=0.1)
    _, out_types, aux_types = s.infer_type(w=np.float16)
    assert out_types == [np.float16] and aux_types == [np.float32]


def test_finite_checks_sum_sq_and_reset():
    a, b = mx.nd.array([1.0, 2.0]), mx.nd.array([[3.0], [np.inf]])
    assert mx.nd.all_finite(a).asnumpy().tolist() == [1.0]
    assert mx.nd.all_finite(b).dtype == np.float32
    assert mx.nd.all_finite(b).asnumpy().tolist() == [0.0]
    assert mx.nd.multi_all_finite(a, b, num_arrays=2).asnumpy().tolist() == [0.0]
    assert mx.nd.multi_all_finite(a, a, num_arrays=2).asnumpy().tolist() == [1.0]
    np.testing.assert_allclose(mx.nd.multi_sum_sq(a, mx.nd.array([3.0]), num_arrays=2).asnumpy(),
                               [5.0, 9.0])
    assert mx.nd.reset_arrays(a, b, num_arrays=2) == []
    assert not a.asnumpy().any() and not b.asnumpy().any()


@pytest.mark.parametrize('case', META['pdf'], ids=[c['name'] for c in META['pdf']])
@pytest.mark.parametrize('is_log', [False, True])
def test_pdf_values_and_gradients_match_mxnet(case, is_log):
    name = case['name']
    key = '%s/%s' % (name, 'log' if is_log else 'pdf')
    arrays = [mx.nd.array(DATA['%s/in/%s' % (name, k)]) for k in case['inputs']]
    for x in arrays:
        x.attach_grad()
    with mx.autograd.record():
        out = getattr(mx.nd, case['op'])(*arrays, is_log=is_log)
    out.backward(mx.nd.ones_like(out))
    want = DATA[key + '/out']
    assert out.shape == want.shape and out.dtype == want.dtype
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-4, atol=1e-6)
    for k, x in zip(case['inputs'], arrays):
        np.testing.assert_allclose(x.grad.asnumpy(), DATA['%s/grad/%s' % (key, k)], rtol=1e-3,
                                   atol=1e-5, err_msg='gradient w.r.t. %s' % k)

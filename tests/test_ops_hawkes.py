"""mx.nd.contrib.hawkesll: the Hawkes process log likelihood and its gradient, against numbers
from MXNet 1.9.1 (inputs and outputs below, printed by tests/fixtures/gen_graph_hawkes_det.py)."""
import numpy as np
import pytest

import mxtorch as mx
from mxtorch.base import MXNetError

LDA = [[1.3232202529907227, 1.5727840662002563], [1.4041451215744019, 1.3173247575759888],
       [1.1354821920394897, 1.4688411951065063]]
ALPHA, BETA = [0.2, 0.5], [1.0, 2.5]
STATE = [[0.4375872015953064, 0.891772985458374], [0.9636627435684204, 0.3834415078163147],
         [0.7917250394821167, 0.5288949012756348]]
LAGS = [[0.6112400889396667, 0.9330369830131531, 0.1639324575662613, 0.17841637134552002,
         0.11819655448198318],
        [0.8493578433990479, 0.8003410696983337, 0.8830109238624573, 0.9807565212249756,
         0.8192427158355713],
        [0.5153314471244812, 0.8024762868881226, 0.20644699037075043, 0.6759288907051086,
         0.2290179580450058]]
MARKS = [[1, 0, 1, 0, 0], [1, 1, 0, 1, 0], [1, 0, 0, 0, 0]]
VALID, MAX_TIME = [5.0, 3.0, 0.0], [6.0, 4.0, 2.0]
# MXNet 1.9.1's outputs, and gradients of sum(ll * [1, 2, -0.5])
LL = [-17.212753295898438, -11.349082946777344, -5.608227729797363]
OUT_STATE = [[0.047453273087739944, 2.357292760279961e-05],
             [0.2481994926929474, 0.0032036087941378355],
             [0.10714833438396454, 0.00356366578489542]]
G_LDA = [[-3.9682655334472656, -4.849715232849121], [-6.591010093688965, -5.206500053405762],
         [1.0, 1.0]]
G_ALPHA = [-4.813065052032471, -6.367750644683838]
G_BETA = [-0.037436820566654205, -0.22115519642829895]


def _inputs():
    return [mx.nd.array(LDA), mx.nd.array(ALPHA), mx.nd.array(BETA), mx.nd.array(STATE),
            mx.nd.array(LAGS), mx.nd.array(MARKS, dtype='int32'), mx.nd.array(VALID),
            mx.nd.array(MAX_TIME)]


def test_hawkesll_values_and_gradient():
    args = _inputs()
    for a in args[:4]:
        a.attach_grad()
    with mx.autograd.record():
        ll, state = mx.nd.contrib.hawkesll(*args)
        loss = (ll * mx.nd.array([1.0, 2.0, -0.5])).sum()
    loss.backward()
    np.testing.assert_allclose(ll.asnumpy(), LL, rtol=1e-6)
    np.testing.assert_allclose(state.asnumpy(), OUT_STATE, rtol=1e-5)
    np.testing.assert_allclose(args[0].grad.asnumpy(), G_LDA, rtol=1e-5)
    np.testing.assert_allclose(args[1].grad.asnumpy(), G_ALPHA, rtol=1e-5)
    np.testing.assert_allclose(args[2].grad.asnumpy(), G_BETA, rtol=1e-4)
    assert not args[3].grad.asnumpy().any()          # MXNet: zero gradient for the state


def test_hawkesll_out_state_passes_no_gradient():
    args = _inputs()
    args[0].attach_grad()
    with mx.autograd.record():
        _, state = mx.nd.contrib.hawkesll(*args)
        loss = state.sum()
    loss.backward()
    assert not args[0].grad.asnumpy().any()


def test_hawkesll_symbol_and_checks():
    names = ['lda', 'alpha', 'beta', 'state', 'lags', 'marks', 'vl', 'mt']
    s = mx.sym.contrib.hawkesll(*[mx.sym.Variable(n) for n in names])
    assert s.list_outputs() == ['hawkesll0_output', 'hawkesll0_out_state']
    shapes = dict(lda=(3, 2), alpha=(2,), beta=(2,), state=(3, 2), lags=(3, 5), marks=(3, 5),
                  vl=(3,), mt=(3,))
    assert s.infer_shape(**shapes)[1] == [(3,), (3, 2)]
    assert s.infer_type(lda='float32', marks='int32')[0][5] == np.int32
    exe = s.bind(mx.cpu(), dict(zip(names, _inputs())))
    np.testing.assert_allclose(exe.forward()[0].asnumpy(), LL, rtol=1e-6)
    args = _inputs()
    args[5] = args[5].astype('float32')
    with pytest.raises(MXNetError, match='int32'):
        mx.nd.contrib.hawkesll(*args)


def test_hawkesll_fractional_valid_length_counts_up():
    # MXNet 1.9.1: point j is used while j < valid_length (2.5 -> three points)
    args = [mx.nd.array([[1.0, 2.0]]), mx.nd.array([0.3, 0.4]), mx.nd.array([1.0, 2.0]),
            mx.nd.array([[0.1, 0.2]]), mx.nd.array([[0.5, 0.6, 0.7]]),
            mx.nd.array([[0, 1, 0]], dtype='int32'), mx.nd.array([2.5]), mx.nd.array([3.0])]
    np.testing.assert_allclose(mx.nd.contrib.hawkesll(*args)[0].asnumpy(), [-9.181208610534668],
                               rtol=1e-6)
    args[6] = mx.nd.array([2.0])
    np.testing.assert_allclose(mx.nd.contrib.hawkesll(*args)[0].asnumpy(), [-9.054729461669922],
                               rtol=1e-6)

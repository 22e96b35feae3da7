"""mx.gluon.rnn: fused layers and cells against NumPy recurrences, MXNet 1.9.1's parameter and
operator names, hybridized == imperative, valid_length, projection."""
import numpy as np
import pytest

import mxtorch as mx
from mxtorch import gluon


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _np_lstm(x, h, c, wi, wh, bi, bh, wr=None):
    """x (T, N, I); MXNet's gate order (i, f, c, o). Returns outputs (T, N, H|P), h, c."""
    outs = []
    for t in range(x.shape[0]):
        g = x[t] @ wi.T + bi + h @ wh.T + bh
        i, f, gg, o = np.split(g, 4, axis=1)
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(gg)
        h = _sigmoid(o) * np.tanh(c)
        if wr is not None:
            h = h @ wr.T
        outs.append(h)
    return np.stack(outs), h, c


def _np_gru(x, h, wi, wh, bi, bh):
    outs = []
    for t in range(x.shape[0]):
        xr, xz, xn = np.split(x[t] @ wi.T + bi, 3, axis=1)
        hr, hz, hn = np.split(h @ wh.T + bh, 3, axis=1)
        r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
        n = np.tanh(xn + r * hn)
        h = (1 - z) * n + z * h
        outs.append(h)
    return np.stack(outs), h


def _params(block):
    return {k: v.data().asnumpy() for k, v in block.collect_params().items()}


def test_lstm_layer_matches_numpy_bidirectional_two_layers():
    np.random.seed(0)
    layer = gluon.rnn.LSTM(5, num_layers=2, bidirectional=True, layout='NTC', prefix='lstm_')
    layer.initialize(mx.init.Uniform(0.5))
    x = np.random.uniform(-1, 1, (3, 4, 6)).astype(np.float32)        # N, T, C
    h0 = np.random.uniform(-1, 1, (4, 3, 5)).astype(np.float32)
    c0 = np.random.uniform(-1, 1, (4, 3, 5)).astype(np.float32)
    out, (hn, cn) = layer(mx.nd.array(x), [mx.nd.array(h0), mx.nd.array(c0)])
    p = _params(layer)
    seq = x.transpose(1, 0, 2)
    hs, cs = [], []
    for layer_i in range(2):
        outs = []
        for k, d in enumerate('lr'):
            w = [p['lstm_%s%d_%s' % (d, layer_i, n)]
                 for n in ('i2h_weight', 'h2h_weight', 'i2h_bias', 'h2h_bias')]
            s = seq if d == 'l' else seq[::-1]
            o, h, c = _np_lstm(s, h0[2 * layer_i + k], c0[2 * layer_i + k], *w)
            outs.append(o if d == 'l' else o[::-1])
            hs.append(h)
            cs.append(c)
        seq = np.concatenate(outs, axis=2)
    np.testing.assert_allclose(out.asnumpy(), seq.transpose(1, 0, 2), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(hn.asnumpy(), np.stack(hs), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(cn.asnumpy(), np.stack(cs), rtol=1e-4, atol=1e-5)


def test_gru_cell_unroll_matches_numpy_and_fused_layer():
    np.random.seed(1)
    cell = gluon.rnn.GRUCell(4, prefix='l0_')
    cell.initialize(mx.init.Uniform(0.5))
    x = np.random.uniform(-1, 1, (5, 2, 3)).astype(np.float32)        # T, N, C
    outs, states = cell.unroll(5, mx.nd.array(x), layout='TNC', merge_outputs=True)
    p = _params(cell)
    ref, h = _np_gru(x, np.zeros((2, 4), np.float32), p['l0_i2h_weight'], p['l0_h2h_weight'],
                     p['l0_i2h_bias'], p['l0_h2h_bias'])
    np.testing.assert_allclose(outs.asnumpy(), ref, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(states[0].asnumpy(), h, rtol=1e-4, atol=1e-5)
    fused = gluon.rnn.GRU(4, prefix='')
    fused.initialize()
    fused(mx.nd.array(x))
    for k, v in p.items():
        fused.collect_params()[k].set_data(mx.nd.array(v))
    np.testing.assert_allclose(fused(mx.nd.array(x)).asnumpy(), ref, rtol=1e-4, atol=1e-5)


def test_parameter_names_as_mxnet():
    layer = gluon.rnn.LSTM(4, num_layers=2, bidirectional=True, projection_size=3)
    layer.initialize()
    layer(mx.nd.ones((2, 3, 5)))
    shapes = {k: v.shape for k, v in layer.collect_params().items()}
    prefix = layer.prefix
    assert shapes[prefix + 'l0_i2h_weight'] == (16, 5)
    assert shapes[prefix + 'r1_i2h_weight'] == (16, 6)
    assert shapes[prefix + 'l1_h2h_weight'] == (16, 3)
    assert shapes[prefix + 'r0_h2r_weight'] == (3, 4)
    assert len(shapes) == 20
    keys = sorted(layer._collect_params_with_prefix())
    assert keys[:5] == ['_unfused.0.l_cell.h2h_bias', '_unfused.0.l_cell.h2h_weight',
                        '_unfused.0.l_cell.h2r_weight', '_unfused.0.l_cell.i2h_bias',
                        '_unfused.0.l_cell.i2h_weight']
    gru = gluon.rnn.GRU(4)
    assert sorted(gru._collect_params_with_prefix()) == [
        '_unfused.0.h2h_bias', '_unfused.0.h2h_weight', '_unfused.0.i2h_bias',
        '_unfused.0.i2h_weight']
    assert repr(layer) == 'LSTM(5 -> 4, TNC, num_layers=2, bidirectional)'
    assert repr(gru) == 'GRU(None -> 4, TNC)'
    zone = gluon.rnn.ZoneoutCell(gluon.rnn.RNNCell(3, prefix='rnn_'))
    assert zone.prefix == 'rnn_zoneout'
    assert sorted(zone.collect_params()) == ['rnn_h2h_bias', 'rnn_h2h_weight', 'rnn_i2h_bias',
                                             'rnn_i2h_weight']


def test_symbolic_unroll_names_and_shapes():
    cell = gluon.rnn.SequentialRNNCell()
    cell.add(gluon.rnn.LSTMCell(6, prefix='a_'))
    cell.add(gluon.rnn.ResidualCell(gluon.rnn.GRUCell(6, prefix='b_')))
    cell.add(gluon.rnn.RNNCell(6, prefix='c_'))
    inputs = [mx.sym.var('t%d' % i) for i in range(3)]
    outs, states = cell.unroll(3, inputs)
    group = mx.sym.Group(outs)
    assert group.list_outputs() == ['c_t0_out_output', 'c_t1_out_output', 'c_t2_out_output']
    _, out_shapes, _ = group.infer_shape(t0=(2, 5), t1=(2, 5), t2=(2, 5))
    assert out_shapes == [(2, 6)] * 3
    assert [s.name for s in cell.begin_state(func=mx.sym.zeros)][:2] == \
        ['a_begin_state_0', 'a_begin_state_1']
    bi = gluon.rnn.BidirectionalCell(gluon.rnn.LSTMCell(3, prefix='l_'),
                                     gluon.rnn.LSTMCell(3, prefix='r_'), output_prefix='bi_')
    outs, _ = bi.unroll(2, [mx.sym.var('x0'), mx.sym.var('x1')])
    assert mx.sym.Group(outs).list_outputs() == ['bi_t0_output', 'bi_t1_output']


@pytest.mark.parametrize('make', [lambda: gluon.rnn.LSTM(6, num_layers=2, bidirectional=True),
                                  lambda: gluon.rnn.GRU(6, layout='NTC'),
                                  lambda: gluon.rnn.RNN(6, activation='tanh')])
def test_layer_hybridized_equals_imperative(make):
    layer = make()
    layer.initialize(mx.init.Uniform(0.3))
    x = mx.nd.array(np.random.RandomState(2).uniform(-1, 1, (4, 3, 5)))
    x.attach_grad()
    with mx.autograd.record():
        out = layer(x)
    out.backward()
    ref_out, ref_dx = out.asnumpy(), x.grad.asnumpy()
    ref_dw = layer.l0_i2h_weight.grad().asnumpy().copy()
    layer.hybridize()
    with mx.autograd.record():
        out = layer(x)
    out.backward()
    np.testing.assert_allclose(out.asnumpy(), ref_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.asnumpy(), ref_dx, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(layer.l0_i2h_weight.grad().asnumpy(), ref_dw, rtol=1e-5,
                               atol=1e-6)


def test_cells_hybridized_equal_imperative():
    stack = gluon.rnn.HybridSequentialRNNCell()
    stack.add(gluon.rnn.LSTMCell(4, input_size=3))
    stack.add(gluon.rnn.GRUCell(4, input_size=4))
    stack.initialize(mx.init.Uniform(0.5))
    x = mx.nd.array(np.random.RandomState(3).uniform(-1, 1, (2, 5, 3)))
    ref, ref_states = stack.unroll(5, x, merge_outputs=True)
    stack.hybridize()
    out, states = stack.unroll(5, x, merge_outputs=True)
    np.testing.assert_allclose(out.asnumpy(), ref.asnumpy(), rtol=1e-5, atol=1e-6)
    for s, r in zip(states, ref_states):
        np.testing.assert_allclose(s.asnumpy(), r.asnumpy(), rtol=1e-5, atol=1e-6)


def test_unroll_valid_length_masks_and_stops_states():
    cell = gluon.rnn.BidirectionalCell(gluon.rnn.LSTMCell(3), gluon.rnn.LSTMCell(3))
    cell.initialize(mx.init.Uniform(0.5))
    x = mx.nd.array(np.random.RandomState(4).normal(size=(3, 4, 2)))
    lengths = [2, 4, 1]
    outs, states = cell.unroll(4, x, valid_length=mx.nd.array(lengths), merge_outputs=True,
                               layout='NTC')
    assert outs.shape == (3, 4, 6)
    for i, n in enumerate(lengths):
        one, one_states = cell.unroll(n, x[i:i + 1, :n], merge_outputs=True, layout='NTC')
        np.testing.assert_allclose(outs[i:i + 1, :n].asnumpy(), one.asnumpy(), rtol=1e-5,
                                   atol=1e-6)
        assert not outs[i, n:].asnumpy().any()
        for s, r in zip(states, one_states):
            np.testing.assert_allclose(s[i:i + 1].asnumpy(), r.asnumpy(), rtol=1e-5, atol=1e-6)


def test_lstmp_cell_matches_fused_projection_layer():
    np.random.seed(5)
    fused = gluon.rnn.LSTM(6, projection_size=3, prefix='p_')
    cell = gluon.contrib.rnn.LSTMPCell(6, projection_size=3, prefix='p_l0_')
    fused.initialize(mx.init.Uniform(0.5))
    cell.initialize()
    x = mx.nd.array(np.random.uniform(-1, 1, (4, 2, 5)))
    out = fused(x)                 # infers the input size
    for k, v in fused.collect_params().items():
        cell.collect_params()[k].set_data(v.data())
    ref, _ = cell.unroll(4, x, layout='TNC', merge_outputs=True)
    np.testing.assert_allclose(out.asnumpy(), ref.asnumpy(), rtol=1e-4, atol=1e-5)
    p = _params(fused)
    want, _, _ = _np_lstm(x.asnumpy(), np.zeros((2, 3)), np.zeros((2, 6)), p['p_l0_i2h_weight'],
                          p['p_l0_h2h_weight'], p['p_l0_i2h_bias'], p['p_l0_h2h_bias'],
                          p['p_l0_h2r_weight'])
    np.testing.assert_allclose(out.asnumpy(), want, rtol=1e-4, atol=1e-5)


def test_state_shape_checked_and_begin_state():
    layer = gluon.rnn.LSTM(4, num_layers=3)
    layer.initialize()
    states = layer.begin_state(2)
    assert [s.shape for s in states] == [(3, 2, 4), (3, 2, 4)]
    bad = [mx.nd.zeros((3, 1, 4)), mx.nd.zeros((3, 1, 4))]
    with pytest.raises(ValueError, match='Deferred initialization failed'):
        layer(mx.nd.ones((5, 2, 3)), bad)         # as MXNet: the shapes cannot be inferred
    layer(mx.nd.ones((5, 2, 3)))
    with pytest.raises(ValueError, match=r'Expecting \(3, 2, 4\), got \(3, 1, 4\)'):
        layer(mx.nd.ones((5, 2, 3)), bad)
    out, new_states = layer(mx.nd.ones((5, 2, 3)), states)
    assert out.shape == (5, 2, 4) and new_states[1].shape == (3, 2, 4)

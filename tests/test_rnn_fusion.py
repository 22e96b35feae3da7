"""The bind-time RNN fusion (mxtorch/ops/rnn_unroll.py): unrolled LSTM / GRU step cells run
as RNN operators with the same outputs and gradients as the step-by-step graph."""
import json

import numpy as np
import pytest

import mxtorch as mx
from mxtorch import autograd, gluon

N, EMBED, HIDDEN, VOCAB = 3, 6, 8, 20


def _cell(mode, prefix):
    return mx.rnn.LSTMCell(HIDDEN, prefix=prefix) if mode == 'lstm' else \
        mx.rnn.GRUCell(HIDDEN, prefix=prefix)


def _language_model(mode, steps, layers=2, begin_inputs=False, merge=True):
    """Embedding -> stacked unrolled cells -> FullyConnected; the loss and the last states."""
    embed = mx.sym.Embedding(mx.sym.Variable('data'), input_dim=VOCAB, output_dim=EMBED,
                             name='embed')
    stack = mx.rnn.SequentialRNNCell()
    for i in range(layers):
        stack.add(_cell(mode, '%s_l%d_' % (mode, i)))
    begin = stack.begin_state(func=mx.sym.Variable) if begin_inputs else None
    outputs, states = stack.unroll(steps, inputs=embed, begin_state=begin, merge_outputs=merge)
    if not merge:
        outputs = mx.sym.Concat(*[mx.sym.expand_dims(o, axis=1) for o in outputs], dim=1)
    pred = mx.sym.FullyConnected(mx.sym.Reshape(outputs, shape=(-1, HIDDEN)), num_hidden=VOCAB,
                                 name='pred')
    loss = mx.sym.make_loss(mx.sym.sum(mx.sym.square(pred)) / 100)
    return mx.sym.Group([loss] + [mx.sym.BlockGrad(s) for s in states])


def _bound(sym, fuse, monkeypatch, shapes):
    """The symbol bound with the fusion on or off, its arguments filled (seeded)."""
    monkeypatch.setenv('MXTORCH_FUSE_RNN', '1' if fuse else '0')
    ex = sym.simple_bind(mx.cpu(), **shapes)
    rng = np.random.RandomState(0)
    for name, arr in ex.arg_dict.items():
        arr[:] = rng.randint(0, VOCAB, arr.shape) if name == 'data' else \
            rng.uniform(-0.5, 0.5, arr.shape)
    return ex


def _run(sym, fuse, monkeypatch, shapes):
    """(executor, outputs, gradients) of one training pass with the fusion on or off."""
    ex = _bound(sym, fuse, monkeypatch, shapes)
    ex.forward(is_train=True)
    ex.backward()
    grads = {n: g.asnumpy() for n, g in ex.grad_dict.items() if g is not None}
    return ex, [o.asnumpy() for o in ex.outputs], grads


def _close(actual, expected, name=''):
    """Equal to 1e-5 of the array's scale (float32 sums in another order round differently)."""
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5 * scale, err_msg=name)


def _ops(sym):
    return [n['op'] for n in json.loads(sym.tojson())['nodes']]


def _check_same(sym, monkeypatch, shapes, fused_layers):
    ex, outs, grads = _run(sym, True, monkeypatch, shapes)
    _, ref_outs, ref_grads = _run(sym, False, monkeypatch, shapes)
    assert _ops(ex.get_optimized_symbol()).count('RNN') == fused_layers
    for out, ref in zip(outs, ref_outs):
        _close(out, ref)
    assert sorted(grads) == sorted(ref_grads)
    for name in grads:
        _close(grads[name], ref_grads[name], name)
    return ex


@pytest.mark.parametrize('mode', ['lstm', 'gru'])
@pytest.mark.parametrize('steps,begin_inputs,merge', [(5, False, True), (7, True, True),
                                                      (10, False, False)])
def test_unrolled_lm_matches_unfused(mode, steps, begin_inputs, merge, monkeypatch):
    sym = _language_model(mode, steps, begin_inputs=begin_inputs, merge=merge)
    shapes = {'data': (N, steps)}
    if begin_inputs:
        shapes.update({n: (N, HIDDEN) for n in sym.list_arguments() if 'begin_state' in n})
    ex = _check_same(sym, monkeypatch, shapes, fused_layers=2)
    ops = _ops(ex.get_optimized_symbol())
    assert 'SliceChannel' not in ops[:ops.index('RNN')]      # the embedding is not split
    assert ops.count('FullyConnected') == 1                 # only `pred` is left
    # the gradients reach the cells' own parameters
    assert sorted(ex.get_optimized_symbol().list_arguments()) == sorted(sym.list_arguments())


def test_disabled_leaves_graph(monkeypatch):
    sym = _language_model('lstm', 4)
    monkeypatch.setenv('MXTORCH_FUSE_RNN', '0')
    ex = sym.simple_bind(mx.cpu(), data=(N, 4))
    assert 'RNN' not in _ops(ex.get_optimized_symbol())


def test_step_inputs_without_split_are_stacked(monkeypatch):
    """Step inputs that are separate variables are stacked; the outputs stay a list."""
    cell = mx.rnn.LSTMCell(HIDDEN, prefix='lstm_')
    xs = [mx.sym.Variable('x%d' % t) for t in range(4)]
    outputs, _ = cell.unroll(4, inputs=xs, merge_outputs=False)
    sym = mx.sym.make_loss(mx.sym.sum(mx.sym.square(outputs[1]) + outputs[3]))
    _check_same(sym, monkeypatch, {'x%d' % t: (N, EMBED) for t in range(4)}, fused_layers=1)


def test_gate_read_elsewhere_is_not_fused(monkeypatch):
    """A step whose forget gate is also an output is not the fused operator's arithmetic."""
    cell = mx.rnn.LSTMCell(HIDDEN, prefix='lstm_')
    outputs, _ = cell.unroll(3, inputs=mx.sym.Variable('data'), merge_outputs=True)
    gate = outputs.get_internals()['lstm_t1_f_output']
    sym = mx.sym.Group([mx.sym.make_loss(mx.sym.sum(outputs)), mx.sym.BlockGrad(gate)])
    ex = _check_same(sym, monkeypatch, {'data': (N, 3, EMBED)}, fused_layers=0)
    assert ex.get_optimized_symbol().tojson() == sym.tojson()


def test_cell_state_read_mid_sequence_splits_the_chain(monkeypatch):
    """An intermediate c read outside ends a chain there: two fused chains."""
    cell = mx.rnn.LSTMCell(HIDDEN, prefix='lstm_')
    outputs, _ = cell.unroll(6, inputs=mx.sym.Variable('data'), merge_outputs=True)
    mid_c = outputs.get_internals()['lstm_t2_state_output']
    sym = mx.sym.Group([mx.sym.make_loss(mx.sym.sum(mx.sym.square(outputs))),
                        mx.sym.make_loss(mx.sym.sum(mid_c))])
    _check_same(sym, monkeypatch, {'data': (N, 6, EMBED)}, fused_layers=2)


def test_single_step_is_left_alone(monkeypatch):
    sym = _language_model('gru', 1, layers=1)
    ex = _check_same(sym, monkeypatch, {'data': (N, 1)}, fused_layers=0)
    assert ex.get_optimized_symbol().tojson() == sym.tojson()


class _GluonLM(gluon.HybridBlock):
    def __init__(self, mode, steps, **kwargs):
        super().__init__(**kwargs)
        self._steps = steps
        with self.name_scope():
            self.embed = gluon.nn.Embedding(VOCAB, EMBED)
            self.cells = gluon.rnn.HybridSequentialRNNCell()
            for _ in range(2):
                self.cells.add(gluon.rnn.LSTMCell(HIDDEN) if mode == 'lstm'
                               else gluon.rnn.GRUCell(HIDDEN))
            self.out = gluon.nn.Dense(VOCAB, flatten=False)

    def hybrid_forward(self, F, x):
        outputs, _ = self.cells.unroll(self._steps, self.embed(x), merge_outputs=True)
        return self.out(outputs)


@pytest.mark.parametrize('mode', ['lstm', 'gru'])
def test_hybridized_gluon_cells(mode, monkeypatch):
    x = mx.nd.array(np.random.RandomState(0).randint(0, VOCAB, (N, 6)))
    results = []
    for fuse in ('1', '0'):
        monkeypatch.setenv('MXTORCH_FUSE_RNN', fuse)
        mx.random.seed(1)                 # the same parameters, drawn at the first forward
        net = _GluonLM(mode, 6)
        net.initialize(mx.init.Uniform(0.5))
        net.hybridize()
        with autograd.record():
            y = net(x)
            loss = (y * y).sum()
        loss.backward()
        executor = list(net._cached.executors.values())[0]
        results.append((y.asnumpy(), [p.grad().asnumpy() for p in net.collect_params().values()],
                        _ops(executor.get_optimized_symbol()).count('RNN')))
    (y, grads, fused), (ref_y, ref_grads, unfused) = results
    assert (fused, unfused) == (2, 0)
    _close(y, ref_y)
    for g, ref in zip(grads, ref_grads):
        _close(g, ref)


def test_bidirectional_and_dropout_stacks(monkeypatch):
    """Reversed step inputs and per-step Dropout between layers are stacked in time; the
    numbers (inference: no dropout drawn) are the unfused graph's."""
    stack = mx.rnn.SequentialRNNCell()
    stack.add(mx.rnn.BidirectionalCell(_cell('lstm', 'fw_'), _cell('lstm', 'bw_')))
    stack.add(mx.rnn.DropoutCell(0.5))
    stack.add(_cell('gru', 'top_'))
    outputs, _ = stack.unroll(4, inputs=mx.sym.Variable('data'), merge_outputs=True)
    sym = mx.sym.make_loss(mx.sym.sum(mx.sym.square(outputs)))
    results = []
    for fuse in ('1', '0'):
        monkeypatch.setenv('MXTORCH_FUSE_RNN', fuse)
        ex = sym.simple_bind(mx.cpu(), data=(N, 4, EMBED))
        rng = np.random.RandomState(0)
        for arr in ex.arg_arrays:
            arr[:] = rng.uniform(-0.5, 0.5, arr.shape)
        ex.forward(is_train=False)
        results.append((ex.outputs[0].asnumpy(), _ops(ex.get_optimized_symbol()).count('RNN')))
    assert (results[0][1], results[1][1]) == (3, 0)
    _close(results[0][0], results[1][0])


def _monitored(sym, fuse, monkeypatch, shapes):
    """Every (name, value) a monitor sees over one training pass, and the partial-forward
    step count, with the fusion on or off."""
    ex = _bound(sym, fuse, monkeypatch, shapes)
    seen = []
    ex.set_monitor_callback(lambda name, arr: seen.append(
        (mx.base.py_str(name), mx.nd.NDArray(arr).asnumpy().copy())))
    ex.forward(is_train=True)
    ex.backward()
    grads = {n: g.asnumpy() for n, g in ex.grad_dict.items() if g is not None}
    ex.set_monitor_callback(None)
    steps = 0
    while ex.partial_forward(is_train=False, step=steps) > 0:
        steps += 1
    return seen, grads, steps + 1


def test_monitor_and_partial_forward_see_every_cell_step(monkeypatch):
    """A fused graph still reports each unrolled cell's values to a monitor, and
    partial_forward walks MXNet's nodes: step by step it runs the cells themselves."""
    sym = _language_model('lstm', 4, layers=1)
    shapes = {'data': (N, 4)}
    seen, grads, steps = _monitored(sym, True, monkeypatch, shapes)
    ref_seen, ref_grads, ref_steps = _monitored(sym, False, monkeypatch, shapes)
    assert [n for n, _ in seen] == [n for n, _ in ref_seen]
    assert any(n.endswith('t3_i2h_output') for n, _ in seen)
    for (name, value), (_, ref) in zip(seen, ref_seen):
        _close(value, ref, name)
    for name in grads:
        _close(grads[name], ref_grads[name], name)
    assert steps == ref_steps

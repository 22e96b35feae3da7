"""The fused RNN operator (ops/rnn.py) and mx.rnn (cells, BucketSentenceIter, RNN checkpoints):
numbers and gradients against MXNet 1.9.1 (tests/fixtures/rnn.npz, made by gen_rnn.py), cell
graphs byte-identical to MXNet's JSON, the golden lstm_lm checkpoint, fused vs unfused cells,
sequence lengths, state clipping, projection, dropout, numeric gradients and errors."""
import importlib.util
import json

import numpy as np
import pytest
import torch

import mxtorch as mx
import mxtorch.rnn  # noqa: F401  (binds mx.rnn until mxtorch/__init__.py imports it)
from mxtorch.base import MXNetError
from mxtorch.initializer import rnn_param_layout
from mxtorch.test_utils import check_numeric_gradient

from conftest import FIXTURES

_SPEC = importlib.util.spec_from_file_location('gen_rnn', FIXTURES / 'gen_rnn.py')
GEN = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(GEN)
FIXTURE = np.load(FIXTURES / 'rnn.npz')
META = json.loads(str(FIXTURE['meta']))
MODES = ('lstm', 'gru', 'rnn_tanh', 'rnn_relu')
TOLERANCE = {'float32': dict(rtol=1e-5, atol=1e-6), 'float64': dict(rtol=1e-10, atol=1e-12)}


def _nd(x, dtype='float32'):
    return mx.nd.array(np.asarray(x), dtype=dtype)


def _rnn_symbol(**params):
    return mx.sym.RNN(mx.sym.Variable('data'), name='rnn', **params)


def _bind(sym, values, grads=False, dtype='float32'):
    args = {n: _nd(values[n], dtype) for n in sym.list_arguments()}
    args_grad = {n: mx.nd.zeros(a.shape, dtype=dtype) for n, a in args.items()} if grads else None
    return sym.bind(mx.cpu(), args, args_grad=args_grad)


def _random_values(sym, rng, scale=0.6, **shapes):
    arg_shapes, _, _ = sym.infer_shape(**shapes)
    return {n: rng.uniform(-scale, scale, s) for n, s in zip(sym.list_arguments(), arg_shapes)}


# ---- the RNN operator against MXNet ------------------------------------------------------------
@pytest.mark.parametrize('index', range(len(META['ops'])),
                         ids=['%(mode)s-L%(num_layers)d-bi%(bidirectional)d-so%(state_outputs)d'
                              % c['params'] + '-' + c['dtype'] for c in META['ops']])
def test_rnn_operator_matches_mxnet(index):
    case = META['ops'][index]
    tag, dtype = 'op%d.' % index, case['dtype']
    sym = _rnn_symbol(state_size=GEN.H, **case['params'])
    assert sym.list_arguments() == case['arguments']
    assert sym.list_outputs() == case['outputs']
    arg_shapes, _, _ = sym.infer_shape(data=(GEN.T, GEN.N, GEN.I))
    assert [list(s) for s in arg_shapes] == case['arg_shapes']
    values = {n: FIXTURE[tag + 'in.' + n] for n in case['arguments']}
    exe = _bind(sym, values, grads=True, dtype=dtype)
    for k, out in enumerate(exe.forward(is_train=False)):
        assert out.dtype == np.dtype(dtype)
        np.testing.assert_allclose(out.asnumpy(), FIXTURE[tag + 'out.%d' % k], **TOLERANCE[dtype])
    outputs = exe.forward(is_train=True)
    exe.backward([_nd(FIXTURE[tag + 'head.%d' % k], dtype) for k in range(len(outputs))])
    for n in case['arguments']:
        want = FIXTURE[tag + 'grad.' + n]
        assert np.abs(want).max() > 0
        np.testing.assert_allclose(exe.grad_dict[n].asnumpy(), want, err_msg=n,
                                   **TOLERANCE[dtype])


def test_rnn_imperative_call_equals_the_bound_symbol():
    tag = 'op1.'
    names = META['ops'][1]['arguments']
    out = mx.nd.RNN(*[_nd(FIXTURE[tag + 'in.' + n]) for n in names], state_size=GEN.H,
                    num_layers=2, mode='lstm', bidirectional=True, state_outputs=True)
    for k in range(3):
        np.testing.assert_allclose(out[k].asnumpy(), FIXTURE[tag + 'out.%d' % k], rtol=1e-5,
                                   atol=1e-6)


@pytest.mark.parametrize('mode', MODES)
def test_rnn_numeric_gradient_float64(mode):
    sym = _rnn_symbol(state_size=2, num_layers=2, mode=mode, bidirectional=True,
                      state_outputs=True)
    values = _random_values(sym, np.random.RandomState(1), data=(2, 2, 2))
    check_numeric_gradient(sym, values, numeric_eps=1e-6, rtol=1e-5, atol=1e-8,
                           dtype=np.float64)


def test_shape_inference_fills_parameters_states_and_zero_batch_begin_states():
    layers, hidden = 2, 3
    begin = [mx.sym.zeros(shape=(layers * 2, 0, hidden)) for _ in range(2)]
    sym = mx.sym.RNN(mx.sym.Variable('data'), state=begin[0], state_cell=begin[1],
                     state_size=hidden, num_layers=layers, mode='lstm', bidirectional=True,
                     state_outputs=True, name='rnn')
    arg_shapes, out_shapes, _ = sym.infer_shape(data=(4, 5, 6))
    g, d, h = 4, 2, hidden
    size = g * h * d * (6 + h + 2) + (layers - 1) * g * h * d * (d * h + h + 2)
    assert arg_shapes == [(4, 5, 6), (size,)]
    assert out_shapes == [(4, 5, 6), (4, 5, 3), (4, 5, 3)]
    exe = sym.simple_bind(mx.cpu(), data=(4, 5, 6))
    exe.arg_dict['rnn_parameters'][:] = np.random.uniform(-1, 1, size)
    assert exe.forward()[0].shape == (4, 5, 6)
    gru = _rnn_symbol(state_size=3, num_layers=1, mode='gru', use_sequence_length=True)
    assert gru.list_arguments() == ['data', 'rnn_parameters', 'rnn_state',
                                    'rnn_sequence_length']
    assert gru.infer_shape(data=(4, 5, 6))[0][1:] == [(3 * 3 * (6 + 3 + 2),), (1, 5, 3), (5,)]
    proj = _rnn_symbol(state_size=5, num_layers=1, mode='lstm', projection_size=3,
                       state_outputs=True)
    # MXNet 1.9.1 infers these shapes too (its CPU kernels cannot run a projection)
    assert proj.infer_shape(data=(3, 2, 4)) == ([(3, 2, 4), (195,), (1, 2, 3), (1, 2, 5)],
                                                [(3, 2, 3), (1, 2, 3), (1, 2, 5)], [])


# ---- sequence lengths, clipping, projection, dropout ------------------------------------------
def _run(sym, values, is_train=False):
    return [o.asnumpy() for o in _bind(sym, values).forward(is_train=is_train)]


@pytest.mark.parametrize('mode', ['lstm', 'gru'])
def test_sequence_length_stops_each_sample_at_its_length(mode):
    params = dict(state_size=3, num_layers=2, mode=mode, bidirectional=True, state_outputs=True)
    full = _rnn_symbol(use_sequence_length=True, **params)
    values = _random_values(full, np.random.RandomState(2), data=(5, 3, 2))
    lengths = [5, 2, 3]
    values['rnn_sequence_length'] = np.array(lengths, dtype='float32')
    outputs = _run(full, values)
    single = _rnn_symbol(**params)
    for n, length in enumerate(lengths):
        alone = {'data': values['data'][:length, n:n + 1],
                 'rnn_parameters': values['rnn_parameters'],
                 'rnn_state': values['rnn_state'][:, n:n + 1]}
        if mode == 'lstm':
            alone['rnn_state_cell'] = values['rnn_state_cell'][:, n:n + 1]
        expected = _run(single, alone)
        np.testing.assert_allclose(outputs[0][:length, n:n + 1], expected[0], rtol=1e-5,
                                   atol=1e-6)
        assert not outputs[0][length:, n].any()
        for got, want in zip(outputs[1:], expected[1:]):
            np.testing.assert_allclose(got[:, n:n + 1], want, rtol=1e-5, atol=1e-6)
    values['rnn_sequence_length'] = np.array([5, 0, 3], dtype='float32')
    with pytest.raises(MXNetError, match=r'sequence_length entries must be in \[1, 5\]'):
        _run(full, values)


def _numpy_lstm(x, w, h, c, clip, hidden):
    """One unidirectional LSTM layer with the cell state clipped to `clip` every step."""
    inputs = x.shape[2]
    sigmoid = lambda v: 1 / (1 + np.exp(-v))   # noqa: E731
    w_ih = w[:4 * hidden * inputs].reshape(4 * hidden, inputs)
    offset = 4 * hidden * inputs
    w_hh = w[offset:offset + 4 * hidden * hidden].reshape(4 * hidden, hidden)
    offset += 4 * hidden * hidden
    b = w[offset:offset + 4 * hidden] + w[offset + 4 * hidden:]
    outputs = []
    for x_t in x:
        i, f, g, o = np.split(x_t @ w_ih.T + h @ w_hh.T + b, 4, axis=1)
        c = np.clip(sigmoid(f) * c + sigmoid(i) * np.tanh(g), *clip)
        h = sigmoid(o) * np.tanh(c)
        outputs.append(h)
    return np.stack(outputs), h, c


def test_lstm_state_clip_clamps_the_cell_state_every_step():
    params = dict(state_size=4, num_layers=1, mode='lstm', state_outputs=True)
    values = _random_values(_rnn_symbol(**params), np.random.RandomState(3), scale=2.0,
                            data=(4, 2, 3))
    clipped = _run(_rnn_symbol(lstm_state_clip_min=-0.2, lstm_state_clip_max=0.3, **params),
                   values)
    expected = _numpy_lstm(values['data'], values['rnn_parameters'], values['rnn_state'][0],
                           values['rnn_state_cell'][0], (-0.2, 0.3), 4)
    np.testing.assert_allclose(clipped[0], expected[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(clipped[2][0], expected[2], rtol=1e-5, atol=1e-6)
    assert np.abs(_run(_rnn_symbol(**params), values)[2]).max() > 0.3
    # the step loop equals torch's kernel when the bounds never bite (2 layers, bidirectional)
    wide = dict(params, num_layers=2, bidirectional=True)
    values = _random_values(_rnn_symbol(**wide), np.random.RandomState(4), data=(4, 2, 3))
    loop = _run(_rnn_symbol(lstm_state_clip_min=-1e9, lstm_state_clip_max=1e9, **wide), values)
    for got, want in zip(loop, _run(_rnn_symbol(**wide), values)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_lstm_state_clip_nan_replaces_nan_by_the_lower_bound():
    params = dict(state_size=2, num_layers=1, mode='lstm', state_outputs=True,
                  lstm_state_clip_min=-0.5, lstm_state_clip_max=0.5)
    values = _random_values(_rnn_symbol(**params), np.random.RandomState(5), data=(2, 1, 2))
    values['data'][0, 0, 0] = np.nan
    assert np.isnan(_run(_rnn_symbol(**params), values)[2]).all()
    cell = _run(_rnn_symbol(lstm_state_clip_nan=True, **params), values)[2]
    np.testing.assert_array_equal(cell, np.full_like(cell, -0.5))


@pytest.mark.filterwarnings('ignore:LSTM with projections is not supported')
def test_projection_matches_torch_lstm_with_proj_size():
    hidden, proj, inputs = 5, 3, 4
    sym = _rnn_symbol(state_size=hidden, num_layers=2, mode='lstm', bidirectional=True,
                      projection_size=proj, state_outputs=True)
    values = _random_values(sym, np.random.RandomState(6), data=(3, 2, inputs))
    outputs = _run(sym, values)
    net = torch.nn.LSTM(inputs, hidden, num_layers=2, bidirectional=True, proj_size=proj,
                        dtype=torch.float64)
    flat, offset = values['rnn_parameters'], 0
    names = [n for n in net._flat_weights_names if 'bias' not in n]
    names += [n for n in net._flat_weights_names if 'bias' in n]
    with torch.no_grad():       # the MXNet layout: weights (ih, hh, hr per layer/direction), biases
        for name in names:
            weight = getattr(net, name)
            weight.copy_(torch.from_numpy(flat[offset:offset + weight.numel()]).view_as(weight))
            offset += weight.numel()
        expected = net(torch.from_numpy(values['data']),
                       (torch.from_numpy(values['rnn_state']),
                        torch.from_numpy(values['rnn_state_cell'])))
    assert offset == flat.size
    np.testing.assert_allclose(outputs[0], expected[0].numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outputs[1], expected[1][0].numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outputs[2], expected[1][1].numpy(), rtol=1e-5, atol=1e-6)


def test_dropout_acts_between_layers_in_training_only():
    two = _rnn_symbol(state_size=8, num_layers=2, mode='gru', p=0.5)
    values = _random_values(two, np.random.RandomState(7), data=(3, 4, 5))
    without = _run(_rnn_symbol(state_size=8, num_layers=2, mode='gru'), values)[0]
    np.testing.assert_allclose(_run(two, values)[0], without, rtol=1e-6)
    assert np.abs(_run(two, values, is_train=True)[0] - without).max() > 1e-3
    one = _rnn_symbol(state_size=8, num_layers=1, mode='gru', p=0.5)
    values = _random_values(one, np.random.RandomState(8), data=(3, 4, 5))
    np.testing.assert_allclose(_run(one, values, is_train=True)[0], _run(one, values)[0],
                               rtol=1e-6)


@pytest.mark.parametrize('params, message', [
    (dict(mode='lstmp'), "Invalid parameter mode='lstmp'"),
    (dict(mode='gru', projection_size=2), 'projection_size needs mode=lstm, given mode=gru'),
    (dict(mode='lstm', projection_size=4), r'projection_size must be in \[1, state_size=4\)'),
    (dict(mode='gru', lstm_state_clip_min=-1.0, lstm_state_clip_max=1.0),
     'lstm_state_clip_min/max need mode=lstm, given mode=gru'),
    (dict(mode='lstm', lstm_state_clip_min=-1.0), 'must be given together'),
    (dict(mode='lstm', num_layers=0), 'num_layers must be >= 1, given 0'),
    (dict(mode='lstm', p=1.5), r'dropout p must be in \[0, 1\], given 1.5'),
])
def test_rnn_parameter_errors(params, message):
    with pytest.raises(MXNetError, match=message):
        _rnn_symbol(**dict(dict(state_size=4, num_layers=1), **params)).infer_shape(
            data=(2, 3, 4))


def test_wrong_parameter_size_is_an_error():
    sym = _rnn_symbol(state_size=4, num_layers=1, mode='gru')
    with pytest.raises(MXNetError, match='Shape inconsistent'):
        sym.infer_shape(data=(2, 3, 4), rnn_parameters=(10,))
    args = [mx.nd.zeros((2, 3, 4)), mx.nd.zeros((10,)), mx.nd.zeros((1, 3, 4))]
    with pytest.raises(MXNetError, match='parameters must have 120 elements for input size 4, '
                                         'given 10'):
        mx.nd.RNN(*args, state_size=4, num_layers=1, mode='gru')


# ---- cell graphs: byte-identical JSON and MXNet's inferred shapes -------------------------------
@pytest.mark.filterwarnings('ignore:NTC layout detected')
@pytest.mark.parametrize('name', sorted(GEN.GRAPHS))
def test_cell_graph_is_mxnets(name):
    record = META['graphs'][name]
    sym = GEN.build_graph(mx, name)
    assert sym.list_arguments() == record['arguments']
    assert sym.list_outputs() == record['outputs']
    assert sym.tojson() == record['json']
    arg_shapes, out_shapes, _ = sym.infer_shape(**GEN.GRAPHS[name][1])
    assert [list(s) for s in arg_shapes] == record['arg_shapes']
    assert [list(s) for s in out_shapes] == record['out_shapes']


def _build_lstm_lm():
    """build_lstm_lm of the golden make_golden.py."""
    with mx.name.NameManager():
        emb = mx.sym.Embedding(mx.sym.Variable('data'), input_dim=30, output_dim=8, name='embed')
        stack = mx.rnn.SequentialRNNCell()
        stack.add(mx.rnn.LSTMCell(num_hidden=16, prefix='lstm_l0_'))
        stack.add(mx.rnn.LSTMCell(num_hidden=16, prefix='lstm_l1_'))
        outputs, _ = stack.unroll(5, inputs=emb, merge_outputs=True, layout='NTC')
        pred = mx.sym.Reshape(outputs, shape=(-1, 16), name='pred_reshape')
        pred = mx.sym.FullyConnected(pred, num_hidden=30, name='pred')
        label = mx.sym.Reshape(mx.sym.Variable('softmax_label'), shape=(-1,),
                               name='label_reshape')
        return mx.sym.SoftmaxOutput(pred, label, name='softmax')


def test_golden_lstm_lm_checkpoint(golden):
    folder = golden / 'checkpoints'
    text = (folder / 'lstm_lm-symbol.json').read_text()
    assert _build_lstm_lm().tojson() == text
    exp = np.load(folder / 'lstm_lm-expected.npz')
    params = mx.nd.load(str(folder / 'lstm_lm-0003.params'))
    sym = mx.sym.load(str(folder / 'lstm_lm-symbol.json'))
    shapes = {k[6:]: exp[k].shape for k in exp.keys() if k.startswith('input/')}
    exe = sym.simple_bind(mx.cpu(), grad_req='write', **shapes)
    exe.copy_params_from({k[4:]: v for k, v in params.items() if k.startswith('arg:')}, {})
    for name in shapes:
        exe.arg_dict[name][:] = exp['input/' + name]
    close = dict(rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(exe.forward(is_train=False)[0].asnumpy(),
                               exp['eval_out/softmax_output'], **close)
    np.testing.assert_allclose(exe.forward(is_train=True)[0].asnumpy(),
                               exp['train_out/softmax_output'], **close)
    exe.backward()
    for key in exp.keys():
        if key.startswith('grad/'):
            np.testing.assert_allclose(exe.grad_dict[key[5:]].asnumpy(), exp[key],
                                       err_msg=key, **close)


# ---- weights: unpack/pack and fused vs unfused ------------------------------------------------
def _stored(kind, case):
    prefix = '%s.%s.' % (kind, case)
    return {k[len(prefix):]: FIXTURE[k] for k in FIXTURE.files if k.startswith(prefix)}


@pytest.mark.parametrize('case', sorted(GEN.unpack_cells(mx)))
def test_unpack_weights_matches_mxnet_and_pack_inverts_it(case):
    cell, _ = GEN.unpack_cells(mx)[case]
    packed = {n: _nd(a) for n, a in _stored('packed', case).items()}
    unpacked = cell.unpack_weights(packed)
    expected = _stored('unpack', case)
    assert sorted(unpacked) == sorted(expected)
    for name, array in unpacked.items():
        np.testing.assert_array_equal(array.asnumpy(), expected[name], err_msg=name)
    repacked = cell.pack_weights(unpacked)
    assert sorted(repacked) == sorted(packed)
    for name, array in repacked.items():
        np.testing.assert_array_equal(array.asnumpy(), packed[name].asnumpy(), err_msg=name)


def _flat_states(states):
    if isinstance(states, (list, tuple)):
        return [s for item in states for s in _flat_states(item)]
    return [states]


@pytest.mark.filterwarnings('ignore:NTC layout detected')
@pytest.mark.parametrize('mode', MODES)
def test_fused_cell_agrees_with_its_unfused_cells(mode):
    steps, batch, inputs, hidden = 3, 2, 4, 5
    fused = mx.rnn.FusedRNNCell(hidden, num_layers=2, mode=mode, bidirectional=True,
                                get_next_state=True, prefix='f_')
    data = mx.sym.Variable('data')
    outputs, states = fused.unroll(steps, data, layout='NTC', merge_outputs=True)
    fused_sym = mx.sym.Group([outputs] + states)
    values = _random_values(fused_sym, np.random.RandomState(9), data=(batch, steps, inputs))
    fused_out = _run(fused_sym, values)

    unfused = fused.unfuse()
    outputs, states = unfused.unroll(steps, data, layout='NTC', merge_outputs=True)
    unfused_sym = mx.sym.Group([outputs] + _flat_states(states))
    args = unfused.pack_weights(fused.unpack_weights({'f_parameters': _nd(values['f_parameters'])}))
    assert sorted(args) == sorted(n for n in unfused_sym.list_arguments() if n != 'data')
    unfused_values = {n: a.asnumpy() for n, a in args.items()}
    unfused_values['data'] = values['data']
    unfused_out = _run(unfused_sym, unfused_values)
    np.testing.assert_allclose(unfused_out[0], fused_out[0], rtol=1e-5, atol=1e-6)
    per_layer = 2 if mode == 'lstm' else 1          # unfused: [h, c] per layer and direction
    for k, fused_state in enumerate(fused_out[1:]):
        for layer_direction in range(4):
            np.testing.assert_allclose(unfused_out[1 + layer_direction * per_layer + k],
                                       fused_state[layer_direction], rtol=1e-5, atol=1e-6)
    back = fused.pack_weights(unfused.unpack_weights(args))
    np.testing.assert_array_equal(back['f_parameters'].asnumpy(), values['f_parameters']
                                  .astype('float32'))


# ---- unroll forms and the other cells ---------------------------------------------------------
def test_unroll_layouts_and_merge_forms_give_the_same_numbers():
    steps, batch, inputs = 3, 2, 4
    results = {}
    for layout in ('NTC', 'TNC'):
        for merge in (True, False):
            cell = mx.rnn.GRUCell(5, prefix='g_')
            outputs, _ = cell.unroll(steps, mx.sym.Variable('data'), layout=layout,
                                     merge_outputs=merge)
            assert isinstance(outputs, mx.sym.Symbol) == merge
            sym = outputs if merge else mx.sym.Group(outputs)
            results[layout, merge] = sym
    values = _random_values(results['NTC', True], np.random.RandomState(10),
                            data=(batch, steps, inputs))
    # (bound, each runs as one RNN operator: its kernel's rounding depends on the input's layout)
    reference = _run(results['NTC', True], values)[0]
    assert reference.shape == (batch, steps, 5)
    steps_ntc = _run(results['NTC', False], values)
    np.testing.assert_allclose(np.stack(steps_ntc, axis=1), reference, rtol=1e-6, atol=1e-7)
    values['data'] = values['data'].transpose(1, 0, 2)
    np.testing.assert_allclose(_run(results['TNC', True], values)[0].transpose(1, 0, 2),
                               reference, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(np.stack(_run(results['TNC', False], values), axis=1), reference,
                               rtol=1e-6, atol=1e-7)


def test_zoneout_is_the_base_cell_in_inference_and_residual_adds_the_input():
    data = mx.sym.Variable('data')
    base, _ = mx.rnn.LSTMCell(4, prefix='z_').unroll(3, data, merge_outputs=True)
    zoneout, _ = mx.rnn.ZoneoutCell(mx.rnn.LSTMCell(4, prefix='z_'), 0.5, 0.5).unroll(
        3, data, merge_outputs=True)
    values = _random_values(base, np.random.RandomState(11), data=(2, 3, 4))
    np.testing.assert_allclose(_run(zoneout, values)[0], _run(base, values)[0], rtol=1e-6)
    residual, _ = mx.rnn.ResidualCell(mx.rnn.LSTMCell(4, prefix='z_')).unroll(
        3, data, merge_outputs=True)
    np.testing.assert_allclose(_run(residual, values)[0], _run(base, values)[0] + values['data'],
                               rtol=1e-6)
    dropout, _ = mx.rnn.DropoutCell(0.5).unroll(3, data, merge_outputs=True)
    np.testing.assert_array_equal(_run(dropout, values)[0], values['data'].astype('float32'))


def test_states_begin_states_and_errors():
    lstm = mx.rnn.LSTMCell(4, prefix='a_')
    assert lstm.state_info == [{'shape': (0, 4), '__layout__': 'NC'}] * 2
    fused = mx.rnn.FusedRNNCell(4, num_layers=3, mode='gru', bidirectional=True)
    assert fused.state_shape == [(6, 0, 4)]
    assert fused.params.get('parameters').name == 'gru_parameters'
    with pytest.raises(NotImplementedError, match='FusedRNNCell cannot be stepped'):
        fused(mx.sym.Variable('x'), fused.begin_state())
    states = lstm.begin_state(func=mx.sym.Variable)
    assert [s.name for s in states] == ['a_begin_state_0', 'a_begin_state_1']
    assert states[0].attr('__shape__') == '(0, 4)'
    assert [s.name for s in lstm.begin_state()] == ['a_begin_state_2', 'a_begin_state_3']
    zoneout = mx.rnn.ZoneoutCell(lstm, zoneout_states=0.1)
    with pytest.raises(MXNetError, match='wrapped by a modifier cell'):
        lstm.begin_state()
    assert [s.name for s in zoneout.begin_state()] == ['a_begin_state_4', 'a_begin_state_5']
    with pytest.raises(MXNetError, match='base_cell must be a cell that can be stepped'):
        mx.rnn.ZoneoutCell(fused)
    bidirectional = mx.rnn.BidirectionalCell(mx.rnn.GRUCell(2, prefix='l_'),
                                             mx.rnn.GRUCell(2, prefix='r_'))
    with pytest.raises(NotImplementedError):
        bidirectional(mx.sym.Variable('x'), [])
    assert sorted(bidirectional.params._params) == [
        'l_h2h_bias', 'l_h2h_weight', 'l_i2h_bias', 'l_i2h_weight',
        'r_h2h_bias', 'r_h2h_weight', 'r_i2h_bias', 'r_i2h_weight']
    with pytest.raises(MXNetError, match='expected 3 input steps, given 2'):
        lstm.unroll(3, [mx.sym.Variable('x0'), mx.sym.Variable('x1')])
    with pytest.raises(MXNetError, match="layout must be 'TNC' or 'NTC', given 'NCT'"):
        fused.unroll(3, mx.sym.Variable('data'), layout='NCT')


# ---- checkpoints -------------------------------------------------------------------------------
def test_rnn_checkpoints_save_unpacked_and_load_packed(tmp_path):
    cell = mx.rnn.FusedRNNCell(3, num_layers=1, mode='lstm', prefix='f_')
    outputs, _ = cell.unroll(2, mx.sym.Variable('data'), layout='TNC', merge_outputs=True)
    size = 4 * 3 * (2 + 3 + 2)
    flat = mx.nd.array(np.random.RandomState(12).uniform(-1, 1, size))
    prefix = str(tmp_path / 'model')
    callback = mx.rnn.do_rnn_checkpoint(cell, prefix, period=2)
    callback(0, outputs, {'f_parameters': flat}, {})
    assert not (tmp_path / 'model-0001.params').exists()
    callback(1, outputs, {'f_parameters': flat}, {})
    saved = mx.nd.load(prefix + '-0002.params')
    pieces = rnn_param_layout(size, 3, 1, 'lstm', False)
    assert list(saved) == ['arg:f_' + name for name, _, _ in pieces]
    assert 'arg:f_l0_h2h_o_bias' in saved
    sym, args, aux = mx.rnn.load_rnn_checkpoint([cell], prefix, 2)
    assert sym.tojson() == outputs.tojson() and aux == {}
    np.testing.assert_array_equal(args['f_parameters'].asnumpy(), flat.asnumpy())


# ---- sentences ---------------------------------------------------------------------------------
@pytest.mark.parametrize('index', range(len(GEN.ENCODE_CALLS)))
def test_encode_sentences_matches_mxnet(index):
    kwargs = {k: (dict(v) if k == 'vocab' else v) for k, v in GEN.ENCODE_CALLS[index].items()}
    coded, vocab = mx.rnn.encode_sentences(GEN.SENTENCES, **kwargs)
    assert coded == META['encoded'][index]['coded']
    assert vocab == META['encoded'][index]['vocab']


def test_encode_sentences_rejects_unknown_words_of_a_given_vocab():
    with pytest.raises(MXNetError, match="word 'c' is not in the given vocab"):
        mx.rnn.encode_sentences([['a', 'c']], vocab={'a': 0})


def _expected_buckets(sentences, buckets, invalid):
    """{bucket length: sorted list of (data row, label row)} computed directly."""
    rows = {b: [] for b in buckets}
    for sentence in sentences:
        fits = [b for b in buckets if b >= len(sentence)]
        if not fits:
            continue
        length = min(fits)
        data = list(sentence) + [invalid] * (length - len(sentence))
        rows[length].append((tuple(data), tuple(data[1:] + [invalid])))
    return {b: sorted(r) for b, r in rows.items()}


@pytest.mark.parametrize('layout', ['NT', 'TN'])
def test_bucket_sentence_iter_pads_shifts_and_groups(layout, capsys):
    rng = np.random.RandomState(13)
    sentences = [list(rng.randint(1, 9, size=rng.choice([2, 3, 5, 7, 9]))) for _ in range(40)]
    batch_size = 3
    counts = np.bincount([len(s) for s in sentences])
    default = [n for n, c in enumerate(counts) if c >= batch_size]
    for buckets in (None, [4, 8]):
        it = mx.rnn.BucketSentenceIter(sentences, batch_size, buckets=buckets, invalid_label=-1,
                                       layout=layout)
        used = default if buckets is None else buckets
        discarded = sum(len(s) > max(used) for s in sentences)
        assert 'WARNING: discarded %d sentences' % discarded in capsys.readouterr().out
        assert it.default_bucket_key == max(used)
        shape = (batch_size, max(used)) if layout == 'NT' else (max(used), batch_size)
        assert it.provide_data[0].shape == shape and it.provide_data[0].name == 'data'
        assert it.provide_label[0].name == 'softmax_label'
        expected = _expected_buckets(sentences, used, -1)
        for _ in range(2):                       # two epochs, reshuffled by reset
            seen = {b: [] for b in used}
            for batch in it:
                data, label = batch.data[0].asnumpy(), batch.label[0].asnumpy()
                if layout == 'TN':
                    data, label = data.T, label.T
                assert data.shape == (batch_size, batch.bucket_key) and batch.pad == 0
                assert batch.provide_data[0].shape == batch.data[0].shape
                seen[batch.bucket_key].extend(
                    (tuple(d), tuple(l)) for d, l in zip(data.astype(int), label.astype(int)))
            for bucket, rows in expected.items():
                assert len(seen[bucket]) == len(rows) // batch_size * batch_size
                assert set(seen[bucket]) <= set(rows)
            it.reset()


def test_bucket_sentence_iter_rejects_bad_layouts():
    with pytest.raises(MXNetError, match="layout must be 'NT'"):
        mx.rnn.BucketSentenceIter([[1, 2]], 1, layout='TC')


# ---- convolutional cells ------------------------------------------------------------------------
_CONV_SPEC = importlib.util.spec_from_file_location('gen_conv_rnn', FIXTURES / 'gen_conv_rnn.py')
CONV_GEN = importlib.util.module_from_spec(_CONV_SPEC)
_CONV_SPEC.loader.exec_module(CONV_GEN)
CONV_FIXTURE = np.load(FIXTURES / 'conv_rnn.npz')


@pytest.mark.parametrize('case', sorted(CONV_GEN.CASES))
def test_conv_cells_match_mxnet(case):
    """Graph JSON, outputs and gradients of unrolled ConvRNN/ConvLSTM/ConvGRU cells against
    MXNet 1.9.1 (tests/fixtures/conv_rnn.npz, made by gen_conv_rnn.py)."""
    with mx.name.NameManager():
        sym = CONV_GEN.CASES[case][0](mx)
    assert sym.tojson() == str(CONV_FIXTURE['%s.json' % case])
    args = {name: mx.nd.array(CONV_FIXTURE['%s.arg.%s' % (case, name)])
            for name in sym.list_arguments()}
    grads = {name: mx.nd.zeros(value.shape) for name, value in args.items()}
    exe = sym.bind(mx.cpu(), args, args_grad=grads)
    exe.forward(is_train=True)
    exe.backward([mx.nd.array(CONV_FIXTURE['%s.head%d' % (case, k)])
                  for k in range(len(exe.outputs))])
    for k, out in enumerate(exe.outputs):
        np.testing.assert_allclose(out.asnumpy(), CONV_FIXTURE['%s.out%d' % (case, k)],
                                   rtol=1e-5, atol=1e-6)
    for name in args:
        np.testing.assert_allclose(grads[name].asnumpy(),
                                   CONV_FIXTURE['%s.grad.%s' % (case, name)], rtol=1e-4,
                                   atol=1e-5, err_msg=name)


def test_conv_cell_states_weights_and_errors():
    cell = mx.rnn.ConvLSTMCell((1, 3, 8, 8), 4, i2h_stride=(2, 2), prefix='c_')
    assert cell.state_info == [{'shape': (0, 4, 4, 4), '__layout__': 'NCHW'}] * 2
    assert [s.name for s in cell.begin_state()] == ['c_begin_state_0', 'c_begin_state_1']
    assert cell.params._params['c_i2h_bias'].attr('__init__') == 'zeros'
    rng = np.random.RandomState(0)
    packed = {'c_i2h_weight': rng.randn(16, 3, 3, 3), 'c_i2h_bias': rng.randn(16),
              'c_h2h_weight': rng.randn(16, 4, 3, 3), 'c_h2h_bias': rng.randn(16)}
    unpacked = cell.unpack_weights({k: mx.nd.array(v) for k, v in packed.items()})
    np.testing.assert_allclose(unpacked['c_i2h_f_weight'].asnumpy(),
                               packed['c_i2h_weight'][4:8], rtol=1e-6)
    repacked = cell.pack_weights(unpacked)
    for name, value in packed.items():
        np.testing.assert_allclose(repacked[name].asnumpy(), value, rtol=1e-6)
    gru = mx.rnn.ConvGRUCell((1, 3, 8, 8), 4)
    assert [s['shape'] for s in gru.state_info] == [(0, 4, 8, 8)]
    assert sorted(gru.params._params) == ['ConvGRU_h2h_bias', 'ConvGRU_h2h_weight',
                                          'ConvGRU_i2h_bias', 'ConvGRU_i2h_weight']
    with pytest.raises(MXNetError, match=r'h2h_kernel must be odd .* given \(2, 3\)'):
        mx.rnn.ConvRNNCell((1, 3, 8, 8), 4, h2h_kernel=(2, 3))
    with pytest.raises(MXNetError, match=r'h2h_dilate must be a pair of ints, given 2'):
        mx.rnn.ConvRNNCell((1, 3, 8, 8), 4, h2h_dilate=2)


def test_rnn_unroll_is_the_deprecated_spelling_of_unroll():
    cell = mx.rnn.RNNCell(3, prefix='r_')
    with pytest.warns(UserWarning, match='rnn_unroll is deprecated'):
        outputs, states = mx.rnn.rnn_unroll(cell, 2, input_prefix='in_')
    assert mx.sym.Group(outputs).list_arguments()[:2] == ['in_t0_data', 'r_i2h_weight']
    assert [o.name for o in outputs] == ['r_t0_out', 'r_t1_out'] and states == [outputs[-1]]


@pytest.mark.parametrize('kwargs, data, out, expected', [
    (dict(kernel=(3, 3), dilate=(1, 2)), (0, 3, 0, 0), (2, 4, 5, 6), (2, 3, 7, 10)),
    (dict(kernel=(3, 3), pad=(1, 0)), (0, 3, 0, 0), (2, 4, 5, 6), (2, 3, 5, 8)),
    (dict(kernel=(3,), pad=(0,)), (0, 3, 0), (2, 4, 7), (2, 3, 9)),
    (dict(kernel=(1, 1), layout='NHWC'), (0, 0, 0, 3), (2, 5, 6, 4), (2, 5, 6, 3)),
    (dict(kernel=(3, 3), stride=(2, 1)), (0, 3, 0, 0), (2, 4, 5, 6), (0, 3, 0, 0))])
def test_convolution_infers_its_data_shape_from_its_output(kwargs, data, out, expected):
    """What a zero-batch begin state of a conv cell relies on; MXNet 1.9.1's results: the batch
    and spatial sizes come back from the output when every stride is 1."""
    conv = mx.sym.Convolution(mx.sym.Variable('d', shape=data), num_filter=4, name='c',
                              **kwargs)
    shapes = (conv + mx.sym.Variable('y')).infer_shape_partial(y=out)[0]
    assert shapes[0] == expected


def test_custom_cell_uses_get_activation():
    # a cell written against MXNet's BaseRNNCell builds its activation with _get_activation
    class Cell(mx.rnn.BaseRNNCell):
        @property
        def state_info(self):
            return [{'shape': (0, 3), '__layout__': 'NC'}]

        def __call__(self, inputs, states):
            self._counter += 1
            out = self._get_activation(inputs + states[0], 'relu', name='t%d_out' % self._counter)
            return self._get_activation(out, mx.sym.sigmoid, name='t%d_sig' % self._counter), [out]

    outputs, _ = Cell(prefix='c_').unroll(2, [mx.sym.Variable('x%d' % i) for i in range(2)])
    group = mx.sym.Group(outputs)
    assert group.list_outputs() == ['t0_sig_output', 't1_sig_output']
    ex = group.bind(mx.cpu(), {'x0': mx.nd.array([[-1, 2, 0.5]]), 'x1': mx.nd.ones((1, 3)),
                               'c_begin_state_0': mx.nd.zeros((1, 3))})
    first = ex.forward()[0].asnumpy()
    np.testing.assert_allclose(first, 1 / (1 + np.exp(-np.maximum([[-1, 2, 0.5]], 0))), rtol=1e-6)

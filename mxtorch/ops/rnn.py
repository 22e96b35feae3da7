"""The fused recurrent operator `RNN`: a multi-layer, optionally bidirectional LSTM, GRU or
vanilla RNN over time-major data, all of its weights in one flat `parameters` vector.

The flat vector holds every weight matrix first -- per layer, per direction (forward, then
backward): W_ih (G*H, in), W_hh (G*H, P) and, with a projection, W_hr (P, H) -- then every bias
in the same order: b_ih (G*H), b_hh (G*H). Gate blocks are (i, f, g, o) for lstm and (r, z, n)
for gru, exactly torch's, so the forward slices the vector into views and calls torch's fused
kernels. Only the cell-state clipping of LSTMs has no torch kernel; it runs as a step loop.
"""
import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

from ..base import MXNetError
from .params import Bool, Enum, Float, Int
from .registry import OpDef, register
from .rnn_unroll import fuse_rnn_cells
from .shapes import ShapeError, first, merge, require

_GATES = {'lstm': 4, 'gru': 3, 'rnn_tanh': 1, 'rnn_relu': 1}
_KERNELS = {'lstm': torch._VF.lstm, 'gru': torch._VF.gru, 'rnn_tanh': torch._VF.rnn_tanh,
            'rnn_relu': torch._VF.rnn_relu}


# ---------------------------------------------------------------------------------------------
# sizes and checks
# ---------------------------------------------------------------------------------------------
def _directions(p):
    return 2 if p.bidirectional else 1


def _output_size(p):
    """Size of each direction's output and hidden state: the projection size, else H."""
    return p.projection_size or p.state_size


def _check_params(p):
    require(p.state_size >= 1, 'RNN: state_size must be >= 1, given %d', p.state_size)
    require(p.num_layers >= 1, 'RNN: num_layers must be >= 1, given %d', p.num_layers)
    require(0 <= p.p <= 1, 'RNN: dropout p must be in [0, 1], given %s', p.p)
    if p.projection_size is not None:
        require(p.mode == 'lstm', 'RNN: projection_size needs mode=lstm, given mode=%s', p.mode)
        require(0 < p.projection_size < p.state_size,
                'RNN: projection_size must be in [1, state_size=%d), given %d',
                p.state_size, p.projection_size)
    if _clips(p):
        require(p.mode == 'lstm', 'RNN: lstm_state_clip_min/max need mode=lstm, given mode=%s',
                p.mode)
        require(p.lstm_state_clip_min is not None and p.lstm_state_clip_max is not None,
                'RNN: lstm_state_clip_min and lstm_state_clip_max must be given together, '
                'given min=%s, max=%s', p.lstm_state_clip_min, p.lstm_state_clip_max)
        require(p.lstm_state_clip_min <= p.lstm_state_clip_max,
                'RNN: lstm_state_clip_min must be <= lstm_state_clip_max, given %s > %s',
                p.lstm_state_clip_min, p.lstm_state_clip_max)


def _clips(p):
    return p.lstm_state_clip_min is not None or p.lstm_state_clip_max is not None


def _layer_matrix_shapes(p, input_size):
    """[[shape of W_ih, W_hh(, W_hr)] for every (layer, direction)] in the flat order."""
    gh, h, out, d = _GATES[p.mode] * p.state_size, p.state_size, _output_size(p), _directions(p)
    shapes = []
    for layer in range(p.num_layers):
        in_size = input_size if layer == 0 else d * out
        matrices = [(gh, in_size), (gh, out)]
        if p.projection_size:
            matrices.append((out, h))
        shapes.extend([matrices] * d)
    return shapes


def parameter_size(p, input_size):
    """Number of elements of the flat parameter vector for data with `input_size` features."""
    matrices = _layer_matrix_shapes(p, input_size)
    weights = sum(rows * cols for group in matrices for rows, cols in group)
    return weights + len(matrices) * 2 * _GATES[p.mode] * p.state_size


# ---------------------------------------------------------------------------------------------
# the flat vector as torch's per-layer weights
# ---------------------------------------------------------------------------------------------
def _torch_weights(p, flat, input_size):
    """Views of `flat` in torch's order: per (layer, direction) W_ih, W_hh, b_ih, b_hh(, W_hr)."""
    expected = parameter_size(p, input_size)
    require(flat.numel() == expected, 'RNN: parameters must have %d elements for input size %d, '
            'given %d', expected, input_size, flat.numel())
    offset = 0

    def take(shape):
        nonlocal offset
        count = shape[0] * (shape[1] if len(shape) == 2 else 1)
        view = flat[offset:offset + count].view(shape)
        offset += count
        return view

    matrices = [[take(shape) for shape in group] for group in _layer_matrix_shapes(p, input_size)]
    gh = _GATES[p.mode] * p.state_size
    weights = []
    for w in matrices:
        b_ih, b_hh = take((gh,)), take((gh,))
        weights.extend([w[0], w[1], b_ih, b_hh] + w[2:])
    return weights


# ---------------------------------------------------------------------------------------------
# forward
# ---------------------------------------------------------------------------------------------
def _rnn(p, data, parameters, state, *rest, train):
    """Run the stacked recurrent network over data (T, N, I) from the begin states.

    Outputs `output` (T, N, D*P) and, with state_outputs, the last hidden state (L*D, N, P)
    and for lstm the last cell state (L*D, N, H). With use_sequence_length, sample n stops after
    sequence_length[n] steps: later outputs are 0 and the backward direction starts at its last
    valid step. Dropout with probability p acts between layers in training.
    """
    _check_params(p)
    state_cell = rest[0] if p.mode == 'lstm' else None
    lengths = rest[-1] if p.use_sequence_length else None
    weights = _torch_weights(p, parameters.reshape(-1), data.shape[2])
    hx = (state, state_cell) if p.mode == 'lstm' else state
    if _clips(p):
        output, h_n, c_n = _clipped_lstm(p, data, state, state_cell, weights, lengths, train)
    elif lengths is not None:
        output, h_n, c_n = _packed_kernel(p, data, hx, weights, lengths, train)
    else:
        result = _KERNELS[p.mode](data, hx, weights, True, p.num_layers, p.p, train,
                                  p.bidirectional, False)
        output, h_n, c_n = result if p.mode == 'lstm' else result + (None,)
    if not p.state_outputs:
        return output
    return (output, h_n, c_n) if p.mode == 'lstm' else (output, h_n)


def _valid_lengths(lengths, steps):
    lengths = lengths.reshape(-1).long()
    if not bool(((lengths >= 1) & (lengths <= steps)).all()):
        raise MXNetError('RNN: sequence_length entries must be in [1, %d] (the data length), '
                         'given %s' % (steps, lengths.tolist()))
    return lengths


def _packed_kernel(p, data, hx, weights, lengths, train):
    """torch's kernel over the packed valid steps of each sample."""
    lengths = _valid_lengths(lengths, data.shape[0])
    packed = pack_padded_sequence(data, lengths.cpu(), enforce_sorted=False)
    order, restore = packed.sorted_indices, packed.unsorted_indices
    sorted_hx = tuple(s.index_select(1, order) for s in hx) if p.mode == 'lstm' \
        else hx.index_select(1, order)
    result = _KERNELS[p.mode](packed.data, packed.batch_sizes, sorted_hx, weights, True,
                              p.num_layers, p.p, train, p.bidirectional)
    output, states = result[0], result[1:]
    output, _ = pad_packed_sequence(PackedSequence(output, packed.batch_sizes, order, restore),
                                    total_length=data.shape[0])
    states = [s.index_select(1, restore) for s in states]
    return output, states[0], states[1] if p.mode == 'lstm' else None


def _reverse_valid_steps(x, lengths):
    """x (T, N, ...) with the first lengths[n] steps of every sample reversed, the rest kept."""
    steps = torch.arange(x.shape[0], device=x.device).unsqueeze(1)
    index = torch.where(steps < lengths, lengths - 1 - steps, steps)
    return x.gather(0, index.reshape(index.shape + (1,) * (x.dim() - 2)).expand_as(x))


def _clipped_lstm(p, data, state, state_cell, weights, lengths, train):
    """The LSTM as a step loop that clamps the cell state to [clip_min, clip_max] each step
    (NaN becomes clip_min when lstm_state_clip_nan)."""
    steps = data.shape[0]
    lengths = (_valid_lengths(lengths, steps) if lengths is not None
               else torch.full((data.shape[1],), steps, dtype=torch.long)).to(data.device)
    valid = (torch.arange(steps, device=data.device).unsqueeze(1) < lengths).unsqueeze(2)
    per_direction = 5 if p.projection_size else 4
    d = _directions(p)
    x, h_last, c_last = data, [], []
    for layer in range(p.num_layers):
        outputs = []
        for direction in range(d):
            k = layer * d + direction
            w = weights[k * per_direction:(k + 1) * per_direction]
            seq = x if direction == 0 else _reverse_valid_steps(x, lengths)
            out, h, c = _lstm_steps(p, seq, state[k], state_cell[k], w, valid)
            outputs.append(out if direction == 0 else _reverse_valid_steps(out, lengths))
            h_last.append(h)
            c_last.append(c)
        x = torch.cat(outputs, dim=2) if d == 2 else outputs[0]
        if layer < p.num_layers - 1:
            x = F.dropout(x, p.p, training=train)
    return x, torch.stack(h_last), torch.stack(c_last)


def _lstm_steps(p, seq, h, c, w, valid):
    w_ih, w_hh, b_ih, b_hh = w[:4]
    projection = w[4] if len(w) == 5 else None
    gates_x = F.linear(seq, w_ih, b_ih)
    outputs = []
    for t in range(seq.shape[0]):
        i, f, g, o = (gates_x[t] + F.linear(h, w_hh, b_hh)).chunk(4, dim=1)
        new_c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        new_c = new_c.clamp(p.lstm_state_clip_min, p.lstm_state_clip_max)
        if p.lstm_state_clip_nan:
            new_c = torch.nan_to_num(new_c, nan=p.lstm_state_clip_min)
        new_h = torch.sigmoid(o) * torch.tanh(new_c)
        if projection is not None:
            new_h = F.linear(new_h, projection)
        h = torch.where(valid[t], new_h, h)
        c = torch.where(valid[t], new_c, c)
        outputs.append(torch.where(valid[t], new_h, torch.zeros_like(new_h)))
    return torch.stack(outputs), h, c


# ---------------------------------------------------------------------------------------------
# inference rules
# ---------------------------------------------------------------------------------------------
def _input_names(p):
    names = ['data', 'parameters', 'state']
    if p.mode == 'lstm':
        names.append('state_cell')
    if p.use_sequence_length:
        names.append('sequence_length')
    return names


def _output_names(p):
    if not p.state_outputs:
        return ['output']
    return ['output', 'state_output'] + (['statecell_output'] if p.mode == 'lstm' else [])


def _rnn_shape(p, ins, outs):
    """Fill the parameter size and the state shapes from data (T, N, I), or N from a state."""
    _check_params(p)
    data = ins[0]
    if data is None:
        return ins, outs
    require(len(data) == 3, 'RNN: data must be 3-D (T, N, I) time-major, given shape %s',
            tuple(data))
    batch = data[1] or next((s[1] for s in ins[2:4] if s is not None and len(s) == 3), 0)
    steps, input_size = data[0], data[2]
    layers = p.num_layers * _directions(p)
    out_size = _output_size(p)
    state = (layers, batch, out_size)
    new_ins = [merge(data, (steps, batch, input_size)),
               merge(ins[1], (parameter_size(p, input_size),) if input_size else None),
               merge(ins[2], state)]
    if p.mode == 'lstm':
        new_ins.append(merge(ins[3], (layers, batch, p.state_size)))
    if p.use_sequence_length:
        new_ins.append(merge(ins[-1], (batch,)))
    new_outs = [(steps, batch, _directions(p) * out_size), state,
                (layers, batch, p.state_size)][:len(outs)]
    return new_ins, [merge(o, n) for o, n in zip(outs, new_outs)]


def _rnn_type(p, ins, outs):
    """One float dtype for data, parameters, states and outputs; sequence_length keeps its own
    (data's when unknown)."""
    floats = ins[:-1] if p.use_sequence_length else ins
    dtype = first(*floats, *outs)
    for given in list(floats) + list(outs):
        if given is not None and given != dtype:
            raise ShapeError('RNN: data, parameters and states must share one dtype, given %s '
                             'and %s' % (dtype, given))
    new_ins = [dtype] * len(floats)
    if p.use_sequence_length:
        new_ins.append(first(ins[-1], dtype))
    return new_ins, [dtype] * len(outs)


register(OpDef('RNN', _rnn,
               params={'state_size': Int(), 'num_layers': Int(), 'bidirectional': Bool(False),
                       'mode': Enum(('gru', 'lstm', 'rnn_relu', 'rnn_tanh')), 'p': Float(0.0),
                       'state_outputs': Bool(False), 'projection_size': Int(None),
                       'lstm_state_clip_min': Float(None), 'lstm_state_clip_max': Float(None),
                       'lstm_state_clip_nan': Bool(False),
                       'use_sequence_length': Bool(False)},
               inputs=_input_names, outputs=_output_names, mode_dependent=True,
               infer_shape=_rnn_shape, infer_type=_rnn_type)).bind_rewrite = fuse_rnn_cells

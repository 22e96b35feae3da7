"""Fused recurrent layers of mx.gluon.rnn (RNN, LSTM, GRU) on the `RNN` operator.

Each (layer l, direction d in 'l'/'r') owns `<d><l>_i2h_weight`, `<d><l>_h2h_weight`,
`<d><l>_i2h_bias`, `<d><l>_h2h_bias` (and `<d><l>_h2r_weight` with an LSTM projection), as in
MXNet 1.9.1; the forward concatenates them, all weights then all biases, into the operator's
flat parameter vector.
"""
import re

from ... import ndarray, symbol
from ...ndarray.ndarray import NDArray
from ...symbol import Symbol
from ..block import HybridBlock
from . import rnn_cell

__all__ = ['RNN', 'LSTM', 'GRU']

_GATES = {'rnn_relu': 1, 'rnn_tanh': 1, 'lstm': 4, 'gru': 3}


class _RNNLayer(HybridBlock):
    """The fused multi-layer recurrent network over (T, N, C) or (N, T, C) data."""

    def __init__(self, hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                 i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                 h2h_bias_initializer, mode, projection_size, h2r_weight_initializer,
                 lstm_state_clip_min, lstm_state_clip_max, lstm_state_clip_nan, dtype,
                 use_sequence_length=False, **kwargs):
        super().__init__(**kwargs)
        assert layout in ('TNC', 'NTC'), \
            "Invalid layout %s; must be one of ['TNC' or 'NTC']" % layout
        self._hidden_size = hidden_size
        self._projection_size = projection_size if projection_size else None
        self._num_layers = num_layers
        self._mode = mode
        self._layout = layout
        self._dropout = dropout
        self._dir = 2 if bidirectional else 1
        self._input_size = input_size
        self._i2h_weight_initializer = i2h_weight_initializer
        self._h2h_weight_initializer = h2h_weight_initializer
        self._i2h_bias_initializer = i2h_bias_initializer
        self._h2h_bias_initializer = h2h_bias_initializer
        self._h2r_weight_initializer = h2r_weight_initializer
        self._lstm_state_clip_min = lstm_state_clip_min
        self._lstm_state_clip_max = lstm_state_clip_max
        self._lstm_state_clip_nan = lstm_state_clip_nan
        self._dtype = dtype
        self._use_sequence_length = use_sequence_length
        self.skip_states = None
        self._gates = _GATES[mode]
        rows, n_in, nh = self._gates * hidden_size, input_size, hidden_size
        n_out = self._projection_size or nh
        for i in range(num_layers):
            for d in ['l', 'r'][:self._dir]:
                self._register_param('%s%d_i2h_weight' % (d, i), (rows, n_in),
                                     i2h_weight_initializer, dtype)
                self._register_param('%s%d_h2h_weight' % (d, i), (rows, n_out),
                                     h2h_weight_initializer, dtype)
                self._register_param('%s%d_i2h_bias' % (d, i), (rows,),
                                     i2h_bias_initializer, dtype)
                self._register_param('%s%d_h2h_bias' % (d, i), (rows,),
                                     h2h_bias_initializer, dtype)
                if self._projection_size:
                    self._register_param('%s%d_h2r_weight' % (d, i), (n_out, nh),
                                         h2r_weight_initializer, dtype)
            n_in = n_out * self._dir

    def _register_param(self, name, shape, init, dtype):
        p = self.params.get(name, shape=shape, init=init, allow_deferred_init=True,
                            dtype=dtype)
        setattr(self, name, p)
        return p

    def __repr__(self):
        s = '%s(%s, %s' % (self.__class__.__name__, self._mapping(), self._layout)
        if self._num_layers != 1:
            s += ', num_layers=%d' % self._num_layers
        if self._dropout != 0:
            s += ', dropout=%s' % self._dropout
        if self._dir == 2:
            s += ', bidirectional'
        return s + ')'

    def _mapping(self):
        shape = self.l0_i2h_weight.shape
        return '%s -> %s' % (shape[1] if shape[1] else None, shape[0] // self._gates)

    def _collect_params_with_prefix(self, prefix=''):
        """Structural names as the unfused stack of cells would have them
        ('_unfused.0.l_cell.i2h_weight'), which save_parameters writes, as MXNet does."""
        if prefix:
            prefix += '.'
        pattern = re.compile(r'(l|r)(\d+)_(i2h|h2h|h2r)_(weight|bias)\Z')
        bidirectional = any(pattern.match(k).group(1) == 'r' for k in self._reg_params)

        def convert(key):
            d, layer, g, t = pattern.match(key).groups()
            if bidirectional:
                return '_unfused.%s.%s_cell.%s_%s' % (layer, d, g, t)
            return '_unfused.%s.%s_%s' % (layer, g, t)
        ret = {prefix + convert(key): val for key, val in self._reg_params.items()}
        for name, child in self._children.items():
            ret.update(child._collect_params_with_prefix(prefix + name))
        return ret

    def state_info(self, batch_size=0):
        raise NotImplementedError

    def _unfuse(self):
        """The same network as a HybridSequentialRNNCell of cells sharing these Parameters."""
        assert not self._projection_size, '_unfuse does not support projection layer yet!'
        assert not self._lstm_state_clip_min and not self._lstm_state_clip_max, \
            '_unfuse does not support state clipping yet!'
        make = {'rnn_relu': lambda **kw: rnn_cell.RNNCell(self._hidden_size, activation='relu',
                                                          **kw),
                'rnn_tanh': lambda **kw: rnn_cell.RNNCell(self._hidden_size, activation='tanh',
                                                          **kw),
                'lstm': lambda **kw: rnn_cell.LSTMCell(self._hidden_size, **kw),
                'gru': lambda **kw: rnn_cell.GRUCell(self._hidden_size, **kw)}[self._mode]
        stack = rnn_cell.HybridSequentialRNNCell(prefix=self.prefix, params=self.params)
        with stack.name_scope():
            n_in = self._input_size
            for i in range(self._num_layers):
                kwargs = {'input_size': n_in,
                          'i2h_weight_initializer': self._i2h_weight_initializer,
                          'h2h_weight_initializer': self._h2h_weight_initializer,
                          'i2h_bias_initializer': self._i2h_bias_initializer,
                          'h2h_bias_initializer': self._h2h_bias_initializer}
                if self._dir == 2:
                    stack.add(rnn_cell.BidirectionalCell(make(prefix='l%d_' % i, **kwargs),
                                                         make(prefix='r%d_' % i, **kwargs)))
                else:
                    stack.add(make(prefix='l%d_' % i, **kwargs))
                if self._dropout > 0 and i != self._num_layers - 1:
                    stack.add(rnn_cell.DropoutCell(self._dropout))
                n_in = self._hidden_size * self._dir
        return stack

    def cast(self, dtype):
        super().cast(dtype)
        self._dtype = dtype

    def begin_state(self, batch_size=0, func=ndarray.zeros, **kwargs):
        """Initial states `func(name='<prefix>h0_<i>', shape=..., dtype=..., **kwargs)`."""
        states = []
        for i, info in enumerate(self.state_info(batch_size)):
            info = dict(info, **kwargs) if info is not None else kwargs
            states.append(func(name='%sh0_%d' % (self.prefix, i), **info))
        return states

    def __call__(self, inputs, states=None, sequence_length=None, **kwargs):
        self.skip_states = states is None
        if states is None:
            if isinstance(inputs, NDArray):
                batch_size = inputs.shape[self._layout.find('N')]
                states = self.begin_state(batch_size, ctx=inputs.context, dtype=inputs.dtype)
            else:
                states = self.begin_state(0, func=symbol.zeros)
        if isinstance(states, (NDArray, Symbol)):
            states = [states]
        if self._use_sequence_length:
            return super().__call__(inputs, states, sequence_length, **kwargs)
        return super().__call__(inputs, states, **kwargs)

    def hybrid_forward(self, F, inputs, states, sequence_length=None, **kwargs):
        if F is ndarray:
            batch_size = inputs.shape[self._layout.find('N')]
            for state, info in zip(states, self.state_info(batch_size)):
                if state.shape != info['shape']:
                    raise ValueError('Invalid recurrent state shape. Expecting %s, got %s.'
                                     % (str(info['shape']), str(state.shape)))
        out = self._forward_kernel(F, inputs, states, sequence_length, **kwargs)
        return out[0] if self.skip_states else out

    def _flat_params(self, F, kwargs):
        groups = ['i2h', 'h2h'] + (['h2r'] if self._projection_size else [])
        flat = [kwargs['%s%d_%s_%s' % (d, layer, g, t)].reshape(-1)
                for t in ['weight', 'bias']
                for layer in range(self._num_layers)
                for d in ['l', 'r'][:self._dir]
                for g in groups if g != 'h2r' or t != 'bias']
        return F._internal._rnn_param_concat(*flat, dim=0)

    def _forward_kernel(self, F, inputs, states, sequence_length, **kwargs):
        if self._layout == 'NTC':
            inputs = F.swapaxes(inputs, 0, 1)
        params = self._flat_params(F, kwargs)
        args = list(states) + ([sequence_length] if self._use_sequence_length else [])
        rnn = F.RNN(inputs, params, *args, use_sequence_length=self._use_sequence_length,
                    state_size=self._hidden_size, projection_size=self._projection_size,
                    num_layers=self._num_layers, bidirectional=self._dir == 2,
                    p=self._dropout, state_outputs=True, mode=self._mode,
                    lstm_state_clip_min=self._lstm_state_clip_min,
                    lstm_state_clip_max=self._lstm_state_clip_max,
                    lstm_state_clip_nan=self._lstm_state_clip_nan)
        outputs = rnn[0]
        states = [rnn[1], rnn[2]] if self._mode == 'lstm' else [rnn[1]]
        if self._layout == 'NTC':
            outputs = F.swapaxes(outputs, 0, 1)
        return outputs, states

    def _layer_state_shape(self, batch_size, size):
        return {'shape': (self._num_layers * self._dir, batch_size, size), '__layout__': 'LNC',
                'dtype': self._dtype}


class RNN(_RNNLayer):
    """Multi-layer Elman RNN with tanh or relu; states [h] of shape (L*D, N, H)."""

    def __init__(self, hidden_size, num_layers=1, activation='relu', layout='TNC', dropout=0,
                 bidirectional=False, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', input_size=0,
                 dtype='float32', **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, 'rnn_' + activation, None, None, None, None,
                         False, dtype, **kwargs)

    def state_info(self, batch_size=0):
        return [self._layer_state_shape(batch_size, self._hidden_size)]


class LSTM(_RNNLayer):
    """Multi-layer LSTM (optionally with a projection and cell-state clipping); states [h, c]
    of shapes (L*D, N, P or H) and (L*D, N, H)."""

    def __init__(self, hidden_size, num_layers=1, layout='TNC', dropout=0, bidirectional=False,
                 input_size=0, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros',
                 projection_size=None, h2r_weight_initializer=None, state_clip_min=None,
                 state_clip_max=None, state_clip_nan=False, dtype='float32', **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, 'lstm', projection_size, h2r_weight_initializer,
                         state_clip_min, state_clip_max, state_clip_nan, dtype, **kwargs)

    def state_info(self, batch_size=0):
        return [self._layer_state_shape(batch_size, self._projection_size or self._hidden_size),
                self._layer_state_shape(batch_size, self._hidden_size)]


class GRU(_RNNLayer):
    """Multi-layer GRU; states [h] of shape (L*D, N, H)."""

    def __init__(self, hidden_size, num_layers=1, layout='TNC', dropout=0, bidirectional=False,
                 input_size=0, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', dtype='float32',
                 **kwargs):
        super().__init__(hidden_size, num_layers, layout, dropout, bidirectional, input_size,
                         i2h_weight_initializer, h2h_weight_initializer, i2h_bias_initializer,
                         h2h_bias_initializer, 'gru', None, None, None, None, False, dtype,
                         **kwargs)

    def state_info(self, batch_size=0):
        return [self._layer_state_shape(batch_size, self._hidden_size)]

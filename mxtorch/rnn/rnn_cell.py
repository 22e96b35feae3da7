"""Symbolic recurrent cells (mx.rnn): step cells that build one time step of a graph per call,
the fused cell over the RNN operator, and cells that combine or modify other cells.

Names are MXNet's, because checkpoints depend on them: a cell with prefix `p` owns the
variables `p + name` (RNNParams), its step t creates operators named `p t<t>_...`, and its
begin states are `p begin_state_<k>`. Auto-named operators (`_plus0`, `activation0`, ...) come
from the current NameManager, so a graph is only identical to MXNet's when the operators are
created in the same order -- which is why the step functions below compose their expressions
in a fixed order.
"""
import functools
import warnings

from .. import ndarray as nd
from .. import symbol
from ..base import MXNetError, numeric_types
from ..initializer import FusedRNN, LSTMBias, rnn_param_layout
from ..ops.registry import get_op
from ..ops.rnn import parameter_size

_GATE_NAMES = {'lstm': ('_i', '_f', '_c', '_o'), 'gru': ('_r', '_z', '_o'),
               'rnn_relu': ('',), 'rnn_tanh': ('',)}


class RNNParams:
    """The variables of one or more cells: `get(name)` makes `Variable(prefix + name)` once and
    returns the same symbol afterwards."""

    def __init__(self, prefix=''):
        self._prefix = prefix
        self._params = {}

    def get(self, name, **kwargs):
        name = self._prefix + name
        if name not in self._params:
            self._params[name] = symbol.Variable(name, **kwargs)
        return self._params[name]


# ---------------------------------------------------------------------------------------------
# sequences: a list of per-step symbols or one symbol with a time axis
# ---------------------------------------------------------------------------------------------
def _time_axis(layout):
    axis = layout.find('T')
    if axis < 0:
        raise MXNetError("unroll: layout must name the time axis 'T', given %r" % layout)
    return axis


def _format_sequence(length, inputs, layout, merge):
    """(inputs, time axis): merge=True makes one symbol with time on the layout's T axis,
    merge=False a list of `length` step symbols, merge=None leaves inputs as they are."""
    if inputs is None:
        raise MXNetError('unroll: inputs must be a Symbol or a list of Symbols, given None')
    axis = _time_axis(layout)
    if isinstance(inputs, symbol.Symbol):
        if merge is False:
            if len(inputs.list_outputs()) != 1:
                raise MXNetError('unroll: inputs must be a single-output Symbol, given a group '
                                 'of %d outputs; pass list(inputs) instead'
                                 % len(inputs.list_outputs()))
            inputs = list(symbol.split(inputs, axis=axis, num_outputs=length, squeeze_axis=1))
    else:
        if length is not None and len(inputs) != length:
            raise MXNetError('unroll: expected %d input steps, given %d' % (length, len(inputs)))
        if merge is True:
            steps = [symbol.expand_dims(step, axis=axis) for step in inputs]
            inputs = symbol.Concat(*steps, dim=axis)
    return inputs, axis


def _activation(data, activation, name=None):
    """Activation(act_type=activation) for a name, else the callable `activation(data, name=)`
    (name=None: an auto-named operator)."""
    kwargs = {} if name is None else {'name': name}
    return BaseRNNCell._get_activation(data, activation, **kwargs)


def _hidden_state_info(num_hidden, count):
    return [{'shape': (0, num_hidden), '__layout__': 'NC'} for _ in range(count)]


# ---------------------------------------------------------------------------------------------
# the base cell
# ---------------------------------------------------------------------------------------------
class BaseRNNCell:
    """A recurrent cell: `cell(inputs, states) -> (output, new states)` builds one step.

    prefix: prepended to the names of the cell's variables and operators.
    params: an RNNParams to take the variables from (shared between cells); by default the
    cell makes its own.
    """
    _gate_names = ()
    _cells = ()

    def __init__(self, prefix='', params=None):
        self._own_params = params is None
        self._params = RNNParams(prefix) if params is None else params
        self._prefix = prefix
        self._modified = False
        self.reset()

    def reset(self):
        """Restart the step and begin-state counters (of the child cells too)."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._cells:
            cell.reset()

    def __call__(self, inputs, states):
        raise NotImplementedError('%s cannot be stepped' % type(self).__name__)

    @staticmethod
    def _get_activation(inputs, activation, **kwargs):
        """Activation(act_type=activation) for a name, else `activation(inputs, **kwargs)`; for
        cells written against MXNet's BaseRNNCell."""
        if isinstance(activation, str):
            return symbol.Activation(inputs, act_type=activation, **kwargs)
        return activation(inputs, **kwargs)

    @property
    def params(self):
        """The cell's RNNParams; reading it marks them as shared."""
        self._own_params = False
        return self._params

    @property
    def state_info(self):
        """[{'shape': ..., '__layout__': ...}] of each state; 0 = filled by shape inference."""
        raise NotImplementedError

    @property
    def state_shape(self):
        return [info['shape'] for info in self.state_info]

    def begin_state(self, func=symbol.zeros, **kwargs):
        """The initial states: `func(name='<prefix>begin_state_<k>', shape=..., **kwargs)` each
        (mx.sym.zeros by default; mx.sym.Variable makes them inputs to feed)."""
        if self._modified:
            raise MXNetError('begin_state: cell %r is wrapped by a modifier cell (e.g. '
                             'ZoneoutCell); call the modifier cell instead' % self._prefix)
        states = []
        for info in self.state_info:
            self._init_counter += 1
            name = '%sbegin_state_%d' % (self._prefix, self._init_counter)
            states.append(func(name=name, **dict(kwargs, **(info or {}))))
        return states

    def unpack_weights(self, args):
        """args with each `<prefix>i2h|h2h_weight|bias` array split into one array per gate,
        named `<prefix>i2h<gate>_weight` etc. (the form saved by save_rnn_checkpoint)."""
        args = dict(args)
        if not self._gate_names:
            return args
        h = self._num_hidden
        for group in ('i2h', 'h2h'):
            weight = args.pop('%s%s_weight' % (self._prefix, group))
            bias = args.pop('%s%s_bias' % (self._prefix, group))
            for j, gate in enumerate(self._gate_names):
                rows = slice(j * h, (j + 1) * h)
                args['%s%s%s_weight' % (self._prefix, group, gate)] = weight[rows].copy()
                args['%s%s%s_bias' % (self._prefix, group, gate)] = bias[rows].copy()
        return args

    def pack_weights(self, args):
        """The inverse of unpack_weights: per-gate arrays concatenated back."""
        args = dict(args)
        if not self._gate_names:
            return args
        for group in ('i2h', 'h2h'):
            weights, biases = [], []
            for gate in self._gate_names:
                weights.append(args.pop('%s%s%s_weight' % (self._prefix, group, gate)))
                biases.append(args.pop('%s%s%s_bias' % (self._prefix, group, gate)))
            args['%s%s_weight' % (self._prefix, group)] = nd.concatenate(weights)
            args['%s%s_bias' % (self._prefix, group)] = nd.concatenate(biases)
        return args

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        """Step the cell `length` times -> (outputs, last states).

        inputs: one symbol with a time axis (split into steps) or a list of step symbols.
        merge_outputs: True -> one symbol stacked on the time axis; False or None -> a list.
        """
        self.reset()
        inputs, _ = _format_sequence(length, inputs, layout, False)
        states = self.begin_state() if begin_state is None else begin_state
        outputs = []
        for step in inputs:
            output, states = self(step, states)
            outputs.append(output)
        outputs, _ = _format_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _step_name(self):
        """Count a step and return its name prefix `<prefix>t<step>_`."""
        self._counter += 1
        return '%st%d_' % (self._prefix, self._counter)


# ---------------------------------------------------------------------------------------------
# step cells
# ---------------------------------------------------------------------------------------------
class _GatedCell(BaseRNNCell):
    """A cell with i2h and h2h FullyConnected weights producing len(_gate_names) * H values."""

    def __init__(self, num_hidden, prefix, params, i2h_bias_init=None):
        super().__init__(prefix=prefix, params=params)
        self._num_hidden = num_hidden
        self._i2h_weight = self._params.get('i2h_weight')
        self._i2h_bias = (self._params.get('i2h_bias') if i2h_bias_init is None
                          else self._params.get('i2h_bias', init=i2h_bias_init))
        self._h2h_weight = self._params.get('h2h_weight')
        self._h2h_bias = self._params.get('h2h_bias')

    def _i2h(self, inputs, name):
        return symbol.FullyConnected(data=inputs, weight=self._i2h_weight, bias=self._i2h_bias,
                                     num_hidden=self._num_hidden * len(self._gate_names),
                                     name=name)

    def _h2h(self, state, name):
        return symbol.FullyConnected(data=state, weight=self._h2h_weight, bias=self._h2h_bias,
                                     num_hidden=self._num_hidden * len(self._gate_names),
                                     name=name)


class RNNCell(_GatedCell):
    """h' = activation(W_i x + b_i + W_h h + b_h); one state."""
    _gate_names = ('',)

    def __init__(self, num_hidden, activation='tanh', prefix='rnn_', params=None):
        super().__init__(num_hidden, prefix, params)
        self._activation = activation

    @property
    def state_info(self):
        return _hidden_state_info(self._num_hidden, 1)

    def __call__(self, inputs, states):
        name = self._step_name()
        i2h = self._i2h(inputs, '%si2h' % name)
        h2h = self._h2h(states[0], '%sh2h' % name)
        output = _activation(i2h + h2h, self._activation, '%sout' % name)
        return output, [output]


class LSTMCell(_GatedCell):
    """The LSTM step with gates (i, f, c, o); states [h, c]. The i2h bias starts at
    LSTMBias(forget_bias) (forget gate = forget_bias, the rest 0)."""
    _gate_names = ('_i', '_f', '_c', '_o')

    def __init__(self, num_hidden, prefix='lstm_', params=None, forget_bias=1.0):
        super().__init__(num_hidden, prefix, params, i2h_bias_init=LSTMBias(forget_bias))

    @property
    def state_info(self):
        return _hidden_state_info(self._num_hidden, 2)

    def __call__(self, inputs, states):
        name = self._step_name()
        gates = self._i2h(inputs, '%si2h' % name) + self._h2h(states[0], '%sh2h' % name)
        i, f, c, o = symbol.SliceChannel(gates, num_outputs=4, name='%sslice' % name)
        in_gate = symbol.Activation(i, act_type='sigmoid', name='%si' % name)
        forget_gate = symbol.Activation(f, act_type='sigmoid', name='%sf' % name)
        candidate = symbol.Activation(c, act_type='tanh', name='%sc' % name)
        out_gate = symbol.Activation(o, act_type='sigmoid', name='%so' % name)
        next_c = symbol._internal._plus(forget_gate * states[1], in_gate * candidate,
                                        name='%sstate' % name)
        next_h = symbol._internal._mul(out_gate, symbol.Activation(next_c, act_type='tanh'),
                                       name='%sout' % name)
        return next_h, [next_h, next_c]


class GRUCell(_GatedCell):
    """The GRU step with gates (r, z, n): n = tanh(W_in x + b_in + r * (W_hn h + b_hn)),
    h' = (1 - z) * n + z * h; one state."""
    _gate_names = ('_r', '_z', '_o')

    def __init__(self, num_hidden, prefix='gru_', params=None):
        super().__init__(num_hidden, prefix, params)

    @property
    def state_info(self):
        return _hidden_state_info(self._num_hidden, 1)

    def __call__(self, inputs, states):
        name = self._step_name()
        prev_h = states[0]
        i2h = self._i2h(inputs, '%s_i2h' % name)
        h2h = self._h2h(prev_h, '%s_h2h' % name)
        i2h_r, i2h_z, i2h_n = symbol.SliceChannel(i2h, num_outputs=3, name='%s_i2h_slice' % name)
        h2h_r, h2h_z, h2h_n = symbol.SliceChannel(h2h, num_outputs=3, name='%s_h2h_slice' % name)
        reset = symbol.Activation(i2h_r + h2h_r, act_type='sigmoid', name='%s_r_act' % name)
        update = symbol.Activation(i2h_z + h2h_z, act_type='sigmoid', name='%s_z_act' % name)
        candidate = symbol.Activation(i2h_n + reset * h2h_n, act_type='tanh',
                                      name='%s_h_act' % name)
        next_h = symbol._internal._plus((1. - update) * candidate, update * prev_h,
                                        name='%sout' % name)
        return next_h, [next_h]


# ---------------------------------------------------------------------------------------------
# the fused cell
# ---------------------------------------------------------------------------------------------
class FusedRNNCell(BaseRNNCell):
    """A whole multi-layer (bidirectional) network as one RNN operator over the flat variable
    `<prefix>parameters`; it can only be unrolled. get_next_state: also return the last states.
    """

    def __init__(self, num_hidden, num_layers=1, mode='lstm', bidirectional=False, dropout=0.,
                 get_next_state=False, forget_bias=1.0, prefix=None, params=None):
        if mode not in _GATE_NAMES:
            raise MXNetError('FusedRNNCell: mode must be one of %s, given %r'
                             % (', '.join(sorted(_GATE_NAMES)), mode))
        super().__init__(prefix='%s_' % mode if prefix is None else prefix, params=params)
        self._num_hidden = num_hidden
        self._num_layers = num_layers
        self._mode = mode
        self._bidirectional = bidirectional
        self._dropout = dropout
        self._get_next_state = get_next_state
        self._directions = ['l', 'r'] if bidirectional else ['l']
        init = FusedRNN(None, num_hidden, num_layers, mode, bidirectional, forget_bias)
        self._parameter = self._params.get('parameters', init=init)

    @property
    def _gate_names(self):
        return _GATE_NAMES[self._mode]

    @property
    def state_info(self):
        shape = (len(self._directions) * self._num_layers, 0, self._num_hidden)
        count = 2 if self._mode == 'lstm' else 1
        return [{'shape': shape, '__layout__': 'LNC'} for _ in range(count)]

    def __call__(self, inputs, states):
        raise NotImplementedError('FusedRNNCell cannot be stepped. Please use unroll')

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        self.reset()
        inputs, axis = _format_sequence(length, inputs, layout, True)
        if axis not in (0, 1):
            raise MXNetError("FusedRNNCell.unroll: layout must be 'TNC' or 'NTC', given %r"
                             % layout)
        if axis == 1:
            warnings.warn('NTC layout detected. Consider using TNC for FusedRNNCell for faster '
                          'speed', stacklevel=2)
            inputs = symbol.swapaxes(inputs, dim1=0, dim2=1)
        states = self.begin_state() if begin_state is None else begin_state
        state_inputs = dict(zip(('state', 'state_cell'), states))
        rnn = symbol.RNN(data=inputs, parameters=self._parameter, state_size=self._num_hidden,
                         num_layers=self._num_layers, bidirectional=self._bidirectional,
                         p=self._dropout, state_outputs=self._get_next_state, mode=self._mode,
                         name=self._prefix + 'rnn', **state_inputs)
        outputs, states = rnn[0], []
        if self._get_next_state:
            states = list(rnn)[1:]
            for state in states:
                state._set_attr(__layout__='LNC')
        if axis == 1:
            outputs = symbol.swapaxes(outputs, dim1=0, dim2=1)
        outputs, _ = _format_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _layout(self, size):
        return rnn_param_layout(size, self._num_hidden, self._num_layers, self._mode,
                                self._bidirectional)

    def _parameter_size(self, input_size):
        p = get_op('RNN').parse_params({'state_size': self._num_hidden, 'mode': self._mode,
                                        'num_layers': self._num_layers,
                                        'bidirectional': self._bidirectional})
        return parameter_size(p, input_size)

    def unpack_weights(self, args):
        """args with `<prefix>parameters` sliced into `<prefix><l|r><layer>_<i2h|h2h><gate>_
        <weight|bias>` arrays (the ops.md RNN layout)."""
        args = dict(args)
        flat = args.pop(self._parameter.name)
        for name, offset, shape in self._layout(flat.size):
            count = shape[0] * (shape[1] if len(shape) == 2 else 1)
            args[self._prefix + name] = flat[offset:offset + count].reshape(shape).copy()
        return args

    def pack_weights(self, args):
        """The inverse of unpack_weights: the pieces concatenated into `<prefix>parameters`."""
        args = dict(args)
        first = '%sl0_i2h%s_weight' % (self._prefix, self._gate_names[0])
        if first not in args:
            raise MXNetError('FusedRNNCell.pack_weights: args must hold %s (the unpacked '
                             'weights), given %s' % (first, sorted(args)))
        size = self._parameter_size(args[first].shape[1])
        pieces = [args.pop(self._prefix + name).reshape((-1,))
                  for name, _, _ in self._layout(size)]
        args[self._parameter.name] = nd.concatenate(pieces)
        return args

    def unfuse(self):
        """The same network as step cells: a SequentialRNNCell of one cell per layer (a
        BidirectionalCell of two when bidirectional), DropoutCells between layers; the
        variable names match unpack_weights'."""
        def make(prefix):
            if self._mode == 'lstm':
                return LSTMCell(self._num_hidden, prefix=prefix)
            if self._mode == 'gru':
                return GRUCell(self._num_hidden, prefix=prefix)
            return RNNCell(self._num_hidden, activation=self._mode[len('rnn_'):], prefix=prefix)

        stack = SequentialRNNCell()
        for layer in range(self._num_layers):
            if self._bidirectional:
                stack.add(BidirectionalCell(
                    make('%sl%d_' % (self._prefix, layer)), make('%sr%d_' % (self._prefix, layer)),
                    output_prefix='%sbi_l%d_' % (self._prefix, layer)))
            else:
                stack.add(make('%sl%d_' % (self._prefix, layer)))
            if self._dropout > 0 and layer != self._num_layers - 1:
                stack.add(DropoutCell(self._dropout,
                                      prefix='%s_dropout%d_' % (self._prefix, layer)))
        return stack


# ---------------------------------------------------------------------------------------------
# cells of cells
# ---------------------------------------------------------------------------------------------
def _share_params(container, cells, override):
    """Put the container's variables into each child's RNNParams (when the container was given
    params) and collect the children's variables into the container's."""
    if override:
        for cell in cells:
            if not cell._own_params:
                raise MXNetError('%s: give params to the container or to its child cells, not '
                                 'both (cell %r has shared params)'
                                 % (type(container).__name__, cell._prefix))
            cell.params._params.update(container.params._params)
    for cell in cells:
        container.params._params.update(cell.params._params)


class SequentialRNNCell(BaseRNNCell):
    """Cells stacked one after the other: each cell's output is the next one's input; the
    states are those of all cells, concatenated."""

    def __init__(self, params=None):
        super().__init__(prefix='', params=params)
        self._override_cell_params = params is not None
        self._cells = []

    def add(self, cell):
        self._cells.append(cell)
        _share_params(self, [cell], self._override_cell_params)

    @property
    def state_info(self):
        return [info for cell in self._cells for info in cell.state_info]

    def begin_state(self, **kwargs):
        if self._modified:
            raise MXNetError('begin_state: this SequentialRNNCell is wrapped by a modifier cell; '
                             'call the modifier cell instead')
        return [state for cell in self._cells for state in cell.begin_state(**kwargs)]

    def unpack_weights(self, args):
        for cell in self._cells:
            args = cell.unpack_weights(args)
        return args

    def pack_weights(self, args):
        for cell in self._cells:
            args = cell.pack_weights(args)
        return args

    def _split_states(self, states):
        """states cut into one list per child cell."""
        per_cell, start = [], 0
        for cell in self._cells:
            count = len(cell.state_info)
            per_cell.append(states[start:start + count])
            start += count
        return per_cell

    def __call__(self, inputs, states):
        self._counter += 1
        next_states = []
        for cell, cell_states in zip(self._cells, self._split_states(states)):
            inputs, cell_states = cell(inputs, cell_states)
            next_states.extend(cell_states)
        return inputs, next_states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        self.reset()
        begin_state = self.begin_state() if begin_state is None else begin_state
        last = len(self._cells) - 1
        next_states = []
        for i, (cell, states) in enumerate(zip(self._cells, self._split_states(begin_state))):
            inputs, states = cell.unroll(length, inputs=inputs, begin_state=states, layout=layout,
                                         merge_outputs=merge_outputs if i == last else None)
            next_states.extend(states)
        return inputs, next_states


class DropoutCell(BaseRNNCell):
    """Dropout(p=dropout) on the inputs; no states."""

    def __init__(self, dropout, prefix='dropout_', params=None):
        if not isinstance(dropout, numeric_types):
            raise MXNetError('DropoutCell: dropout must be a number, given %r' % (dropout,))
        super().__init__(prefix, params)
        self.dropout = dropout

    @property
    def state_info(self):
        return []

    def __call__(self, inputs, states):
        if self.dropout > 0:
            inputs = symbol.Dropout(data=inputs, p=self.dropout)
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        self.reset()
        inputs, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, symbol.Symbol):
            return self(inputs, [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs)


class BidirectionalCell(BaseRNNCell):
    """Two cells over the sequence in both directions, outputs concatenated on the feature axis
    (`<output_prefix>t<i>` per step or `<output_prefix>out` merged). Unroll only; the returned
    states are [left states, right states]."""

    def __init__(self, l_cell, r_cell, params=None, output_prefix='bi_'):
        super().__init__('', params=params)
        self._output_prefix = output_prefix
        self._override_cell_params = params is not None
        _share_params(self, [l_cell, r_cell], self._override_cell_params)
        self._cells = [l_cell, r_cell]

    def unpack_weights(self, args):
        for cell in self._cells:
            args = cell.unpack_weights(args)
        return args

    def pack_weights(self, args):
        for cell in self._cells:
            args = cell.pack_weights(args)
        return args

    def __call__(self, inputs, states):
        raise NotImplementedError('Bidirectional cannot be stepped. Please use unroll')

    @property
    def state_info(self):
        return [info for cell in self._cells for info in cell.state_info]

    def begin_state(self, **kwargs):
        if self._modified:
            raise MXNetError('begin_state: this BidirectionalCell is wrapped by a modifier cell; '
                             'call the modifier cell instead')
        return [state for cell in self._cells for state in cell.begin_state(**kwargs)]

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        self.reset()
        inputs, axis = _format_sequence(length, inputs, layout, False)
        begin_state = self.begin_state() if begin_state is None else begin_state
        l_cell, r_cell = self._cells
        l_count = len(l_cell.state_info)
        l_outputs, l_states = l_cell.unroll(length, inputs=inputs,
                                            begin_state=begin_state[:l_count], layout=layout,
                                            merge_outputs=merge_outputs)
        r_outputs, r_states = r_cell.unroll(length, inputs=list(reversed(inputs)),
                                            begin_state=begin_state[l_count:], layout=layout,
                                            merge_outputs=merge_outputs)
        if merge_outputs is None:
            merge_outputs = (isinstance(l_outputs, symbol.Symbol)
                             and isinstance(r_outputs, symbol.Symbol))
            if not merge_outputs:
                l_outputs = self._as_steps(l_outputs, axis, length)
                r_outputs = self._as_steps(r_outputs, axis, length)
        if merge_outputs:
            r_outputs = symbol.reverse(r_outputs, axis=axis)
            outputs = symbol.Concat(l_outputs, r_outputs, dim=2,
                                    name='%sout' % self._output_prefix)
        else:
            outputs = [symbol.Concat(l_out, r_out, dim=1,
                                     name='%st%d' % (self._output_prefix, i))
                       for i, (l_out, r_out) in enumerate(zip(l_outputs, reversed(r_outputs)))]
        return outputs, [l_states, r_states]

    @staticmethod
    def _as_steps(outputs, axis, length):
        if isinstance(outputs, symbol.Symbol):
            return list(symbol.SliceChannel(outputs, axis=axis, num_outputs=length,
                                            squeeze_axis=1))
        return outputs


# ---------------------------------------------------------------------------------------------
# modifier cells
# ---------------------------------------------------------------------------------------------
class ModifierCell(BaseRNNCell):
    """A cell that wraps `base_cell` and changes what it computes; the base cell is marked
    modified, so its begin_state must be asked through the modifier."""

    def __init__(self, base_cell):
        super().__init__()
        base_cell._modified = True
        self.base_cell = base_cell

    @property
    def params(self):
        self._own_params = False
        return self.base_cell.params

    @property
    def state_info(self):
        return self.base_cell.state_info

    def begin_state(self, func=symbol.zeros, **kwargs):
        if self._modified:
            raise MXNetError('begin_state: this %s is wrapped by another modifier cell; call '
                             'the outer cell instead' % type(self).__name__)
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(func, **kwargs)
        finally:
            self.base_cell._modified = True

    def unpack_weights(self, args):
        return self.base_cell.unpack_weights(args)

    def pack_weights(self, args):
        return self.base_cell.pack_weights(args)

    def __call__(self, inputs, states):
        raise NotImplementedError


class ZoneoutCell(ModifierCell):
    """Zoneout: each output and state keeps its previous value where a Dropout mask of ones
    is 0 (probabilities zoneout_outputs / zoneout_states); in inference Dropout passes the
    ones, so the new values are always taken."""

    def __init__(self, base_cell, zoneout_outputs=0., zoneout_states=0.):
        if isinstance(base_cell, (FusedRNNCell, BidirectionalCell)):
            raise MXNetError('ZoneoutCell: base_cell must be a cell that can be stepped, given '
                             'a %s (unfuse a FusedRNNCell, or wrap the cells inside a '
                             'BidirectionalCell)' % type(base_cell).__name__)
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self.prev_output = None

    def reset(self):
        super().reset()
        self.prev_output = None

    def __call__(self, inputs, states):
        next_output, next_states = self.base_cell(inputs, states)
        prev_output = self.prev_output if self.prev_output is not None else symbol.zeros((0, 0))
        output = self._zoneout(self.zoneout_outputs, next_output, prev_output)
        states = [self._zoneout(self.zoneout_states, new, old)
                  for new, old in zip(next_states, states)]
        self.prev_output = output
        return output, states

    @staticmethod
    def _zoneout(p, new, old):
        if p == 0.:
            return new
        mask = symbol.Dropout(symbol.ones_like(new), p=p)
        return symbol.where(mask, new, old)


class ResidualCell(ModifierCell):
    """output = base output + input (`<output name>_plus_residual`); states unchanged."""

    def __call__(self, inputs, states):
        output, states = self.base_cell(inputs, states)
        return self._plus_inputs(output, inputs), states

    @staticmethod
    def _plus_inputs(output, inputs):
        return symbol.elemwise_add(output, inputs, name='%s_plus_residual' % output.name)

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None):
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs=inputs,
                                                    begin_state=begin_state, layout=layout,
                                                    merge_outputs=merge_outputs)
        finally:
            self.base_cell._modified = True
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, symbol.Symbol)
        inputs, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if merge_outputs:
            return self._plus_inputs(outputs, inputs), states
        return [self._plus_inputs(o, i) for o, i in zip(outputs, inputs)], states


# ---------------------------------------------------------------------------------------------
# convolutional cells
# ---------------------------------------------------------------------------------------------
def _pair(value, what):
    try:
        pair = tuple(int(v) for v in value)
    except TypeError:
        pair = ()
    if len(pair) != 2:
        raise MXNetError('%s must be a pair of ints, given %r' % (what, value))
    return pair


_LEAKY = functools.partial(symbol.LeakyReLU, act_type='leaky', slope=0.2)


class BaseConvRNNCell(BaseRNNCell):
    """A cell whose i2h and h2h transforms are Convolutions (on `conv_layout` images, NCHW by
    default) producing len(_gate_names) * num_hidden channels. input_shape: the shape of one
    step's input including a batch axis (its size is not used); the states have the shape of
    the i2h convolution's output, batch 0. h2h convolutions keep the state's size: odd kernels,
    stride 1, padding dilate * (kernel - 1) / 2."""
    _gate_names = ()
    _default_prefix = ''

    def __init__(self, input_shape, num_hidden, h2h_kernel=(3, 3), h2h_dilate=(1, 1),
                 i2h_kernel=(3, 3), i2h_stride=(1, 1), i2h_pad=(1, 1), i2h_dilate=(1, 1),
                 i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros',
                 activation=_LEAKY, prefix=None, params=None, conv_layout='NCHW'):
        super().__init__(prefix=self._default_prefix if prefix is None else prefix,
                         params=params)
        self._h2h_kernel = _pair(h2h_kernel, '%s: h2h_kernel' % type(self).__name__)
        if self._h2h_kernel[0] % 2 != 1 or self._h2h_kernel[1] % 2 != 1:
            raise MXNetError('%s: h2h_kernel must be odd (the state keeps its size), given %s'
                             % (type(self).__name__, str(self._h2h_kernel)))
        self._h2h_dilate = _pair(h2h_dilate, '%s: h2h_dilate' % type(self).__name__)
        self._h2h_pad = tuple(d * (k - 1) // 2 for d, k in zip(self._h2h_dilate,
                                                                self._h2h_kernel))
        self._i2h_kernel = tuple(i2h_kernel)
        self._i2h_stride = tuple(i2h_stride)
        self._i2h_pad = tuple(i2h_pad)
        self._i2h_dilate = tuple(i2h_dilate)
        self._num_hidden = num_hidden
        self._input_shape = tuple(input_shape)
        self._conv_layout = conv_layout
        self._activation = activation
        probe = symbol.Convolution(data=symbol.Variable('data'), num_filter=num_hidden,
                                   kernel=self._i2h_kernel, stride=self._i2h_stride,
                                   pad=self._i2h_pad, dilate=self._i2h_dilate,
                                   layout=conv_layout)
        out_shape = probe.infer_shape(data=self._input_shape)[1][0]
        self._state_shape = (0,) + tuple(out_shape[1:])
        self._iW = self._params.get('i2h_weight', init=i2h_weight_initializer)
        self._hW = self._params.get('h2h_weight', init=h2h_weight_initializer)
        self._iB = self._params.get('i2h_bias', init=i2h_bias_initializer)
        self._hB = self._params.get('h2h_bias', init=h2h_bias_initializer)

    @property
    def state_info(self):
        count = 2 if len(self._gate_names) == 4 else 1
        return [{'shape': self._state_shape, '__layout__': self._conv_layout}
                for _ in range(count)]

    def _conv_forward(self, inputs, states, name):
        filters = self._num_hidden * len(self._gate_names)
        i2h = symbol.Convolution(name='%si2h' % name, data=inputs, num_filter=filters,
                                 kernel=self._i2h_kernel, stride=self._i2h_stride,
                                 pad=self._i2h_pad, dilate=self._i2h_dilate, weight=self._iW,
                                 bias=self._iB, layout=self._conv_layout)
        h2h = symbol.Convolution(name='%sh2h' % name, data=states[0], num_filter=filters,
                                 kernel=self._h2h_kernel, dilate=self._h2h_dilate,
                                 pad=self._h2h_pad, stride=(1, 1), weight=self._hW,
                                 bias=self._hB, layout=self._conv_layout)
        return i2h, h2h


class ConvRNNCell(BaseConvRNNCell):
    """h' = activation(conv_i(x) + conv_h(h)); one state. activation: an Activation act_type
    or a callable (default LeakyReLU with slope 0.2)."""
    _gate_names = ('',)
    _default_prefix = 'ConvRNN_'

    def __call__(self, inputs, states):
        name = self._step_name()
        i2h, h2h = self._conv_forward(inputs, states, name)
        output = _activation(i2h + h2h, self._activation, '%sout' % name)
        return output, [output]


class ConvLSTMCell(BaseConvRNNCell):
    """The convolutional LSTM (Shi et al., NIPS 2015): gates (i, f, c, o) on the channel axis,
    `activation` in place of tanh for the candidate and the output; states [h, c]."""
    _gate_names = ('_i', '_f', '_c', '_o')
    _default_prefix = 'ConvLSTM_'

    def __call__(self, inputs, states):
        name = self._step_name()
        i2h, h2h = self._conv_forward(inputs, states, name)
        i, f, c, o = symbol.SliceChannel(i2h + h2h, num_outputs=4,
                                         axis=self._conv_layout.find('C'),
                                         name='%sslice' % name)
        in_gate = symbol.Activation(i, act_type='sigmoid', name='%si' % name)
        forget_gate = symbol.Activation(f, act_type='sigmoid', name='%sf' % name)
        candidate = _activation(c, self._activation, '%sc' % name)
        out_gate = symbol.Activation(o, act_type='sigmoid', name='%so' % name)
        next_c = symbol._internal._plus(forget_gate * states[1], in_gate * candidate,
                                        name='%sstate' % name)
        next_h = symbol._internal._mul(out_gate, _activation(next_c, self._activation),
                                       name='%sout' % name)
        return next_h, [next_h, next_c]


class ConvGRUCell(BaseConvRNNCell):
    """The convolutional GRU: gates (r, z, n) on the channel axis,
    n = activation(conv_in(x) + r * conv_hn(h)), h' = (1 - z) * n + z * h; one state."""
    _gate_names = ('_r', '_z', '_o')
    _default_prefix = 'ConvGRU_'

    def __call__(self, inputs, states):
        name = self._step_name()
        i2h, h2h = self._conv_forward(inputs, states, name)
        # the channel split uses SliceChannel's default axis 1 (as MXNet's cell does)
        i2h_r, i2h_z, i2h_n = symbol.SliceChannel(i2h, num_outputs=3, name='%s_i2h_slice' % name)
        h2h_r, h2h_z, h2h_n = symbol.SliceChannel(h2h, num_outputs=3, name='%s_h2h_slice' % name)
        reset = symbol.Activation(i2h_r + h2h_r, act_type='sigmoid', name='%s_r_act' % name)
        update = symbol.Activation(i2h_z + h2h_z, act_type='sigmoid', name='%s_z_act' % name)
        candidate = _activation(i2h_n + reset * h2h_n, self._activation, '%s_h_act' % name)
        next_h = symbol._internal._plus((1. - update) * candidate, update * states[0],
                                        name='%sout' % name)
        return next_h, [next_h]


def rnn_unroll(cell, length, inputs=None, begin_state=None, input_prefix='', layout='NTC'):
    """Deprecated: cell.unroll(length, inputs, begin_state, layout) (inputs None: the step
    variables `<input_prefix>t<i>_data`)."""
    warnings.warn('rnn_unroll is deprecated. Please call cell.unroll directly.', stacklevel=2)
    if inputs is None:
        inputs = [symbol.Variable('%st%d_data' % (input_prefix, i)) for i in range(length)]
    return cell.unroll(length=length, inputs=inputs, begin_state=begin_state, layout=layout)

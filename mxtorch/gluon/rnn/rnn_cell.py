"""Recurrent cells of mx.gluon.rnn: one time step per call, `unroll` over a sequence.

A cell works on NDArrays (imperatively, or hybridized through its traced graph) and on Symbols
alike. Its Parameters are `<prefix>i2h_weight`, `<prefix>h2h_weight`, `<prefix>i2h_bias`,
`<prefix>h2h_bias`; step t names its operators `<prefix>t<t>_...` (the output of step t is
`<prefix>t<t>_out`), as MXNet 1.9.1 does, so traced graphs and exported files carry MXNet's
names. Gate order in the stacked weights is MXNet's: (i, f, c, o) for LSTM, (r, z, n) for GRU.
"""
from ... import ndarray, symbol
from ...base import numeric_types
from ...ndarray.ndarray import NDArray
from ...symbol import Symbol
from ..block import Block, HybridBlock
from ..utils import _indent

__all__ = ['RecurrentCell', 'HybridRecurrentCell', 'RNNCell', 'LSTMCell', 'GRUCell',
           'SequentialRNNCell', 'HybridSequentialRNNCell', 'DropoutCell', 'ModifierCell',
           'ZoneoutCell', 'ResidualCell', 'BidirectionalCell']

_TENSORS = (Symbol, NDArray)


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _steps(x):
    """A split's result as a list of steps (a grouped Symbol gives its outputs)."""
    if isinstance(x, Symbol):
        return list(x) if len(x.list_outputs()) > 1 else [x]
    return _as_list(x)


# ---------------------------------------------------------------------------------------------
# sequences: one tensor with a time axis, or a list of per-step tensors
# ---------------------------------------------------------------------------------------------
def _format_sequence(length, inputs, layout, merge, in_layout=None):
    """(inputs, time axis, F, batch size) with inputs as one tensor laid out as `layout`
    (merge=True), a list of `length` steps (merge=False) or as given (merge=None)."""
    assert inputs is not None, \
        'unroll(inputs=None) has been deprecated. Please create input variables outside unroll.'
    axis = layout.find('T')
    batch_axis = layout.find('N')
    in_axis = in_layout.find('T') if in_layout is not None else axis
    batch_size = 0
    if isinstance(inputs, Symbol):
        F = symbol
        if merge is False:
            assert len(inputs.list_outputs()) == 1, \
                "unroll doesn't allow grouped symbol as input. Please convert to list with " \
                'list(inputs) first or let unroll handle splitting.'
            inputs = list(symbol.split(inputs, axis=in_axis, num_outputs=length,
                                       squeeze_axis=1))
    elif isinstance(inputs, NDArray):
        F = ndarray
        batch_size = inputs.shape[batch_axis]
        if merge is False:
            assert length is None or length == inputs.shape[in_axis]
            inputs = _as_list(ndarray.split(inputs, axis=in_axis,
                                            num_outputs=inputs.shape[in_axis], squeeze_axis=1))
    else:
        assert length is None or len(inputs) == length
        if isinstance(inputs[0], Symbol):
            F = symbol
        else:
            F = ndarray
            batch_size = inputs[0].shape[0]
        if merge is True:
            inputs = F.stack(*inputs, axis=axis)
            in_axis = axis
    if isinstance(inputs, _TENSORS) and axis != in_axis:
        inputs = F.swapaxes(inputs, dim1=axis, dim2=in_axis)
    return inputs, axis, F, batch_size


def _get_begin_state(cell, F, begin_state, inputs, batch_size):
    """begin_state, or zeros from cell.begin_state (on the inputs' context for NDArrays)."""
    if begin_state is not None:
        return begin_state
    if F is ndarray:
        ctx = inputs.context if isinstance(inputs, _TENSORS) else inputs[0].context
        with ctx:
            return cell.begin_state(func=F.zeros, batch_size=batch_size)
    return cell.begin_state(func=F.zeros, batch_size=batch_size)


def _mask_sequence_variable_length(F, data, length, valid_length, time_axis, merge):
    """Steps at or past each sample's valid length set to 0 (one tensor, or a list of steps
    when merge is False)."""
    assert valid_length is not None
    if not isinstance(data, _TENSORS):
        data = F.stack(*data, axis=time_axis)
    outputs = F.SequenceMask(data, sequence_length=valid_length, use_sequence_length=True,
                             axis=time_axis)
    if not merge:
        outputs = _steps(F.split(outputs, num_outputs=length, axis=time_axis,
                                 squeeze_axis=True))
    return outputs


def _reverse_sequences(sequences, unroll_step, valid_length=None):
    """The list of steps reversed (within each sample's valid length, when given)."""
    F = symbol if isinstance(sequences[0], Symbol) else ndarray
    if valid_length is None:
        return list(reversed(sequences))
    reversed_seq = F.SequenceReverse(F.stack(*sequences, axis=0), sequence_length=valid_length,
                                     use_sequence_length=True)
    if unroll_step > 1 or F is symbol:
        return _steps(F.split(reversed_seq, axis=0, num_outputs=unroll_step,
                              squeeze_axis=True))
    return [reversed_seq[0]]


def _cells_state_info(cells, batch_size):
    return sum([c.state_info(batch_size) for c in cells], [])


def _cells_begin_state(cells, **kwargs):
    return sum([c.begin_state(**kwargs) for c in cells], [])


def _check_unmodified(cell):
    assert not cell._modified, \
        'After applying modifier cells (e.g. ZoneoutCell) the base cell cannot be called ' \
        'directly. Call the modifier cell instead.'


# ---------------------------------------------------------------------------------------------
# base classes
# ---------------------------------------------------------------------------------------------
class RecurrentCell(Block):
    """Abstract recurrent cell: `cell(x_t, states) -> (output_t, states)`, `unroll`,
    `begin_state`/`state_info`."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._modified = False
        self.reset()

    def reset(self):
        """Reset the step counters before building or running another sequence."""
        self._init_counter = -1
        self._counter = -1
        for cell in self._children.values():
            cell.reset()

    def state_info(self, batch_size=0):
        """[{'shape': ..., '__layout__': ...}] of the states."""
        raise NotImplementedError()

    def begin_state(self, batch_size=0, func=ndarray.zeros, **kwargs):
        """The initial states made by `func(name=..., shape=..., **kwargs)` (mx.nd.zeros by
        default; mx.sym.zeros / mx.sym.var for graphs)."""
        _check_unmodified(self)
        states = []
        for info in self.state_info(batch_size):
            self._init_counter += 1
            info = dict(info, **kwargs) if info is not None else kwargs
            states.append(func(name='%sbegin_state_%d' % (self._prefix, self._init_counter),
                               **info))
        return states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        """Run the cell over `length` steps of `inputs` (one tensor laid out as `layout`, or
        a list of steps). Returns (outputs, states): outputs merged into one tensor
        (merge_outputs=True) or a list of steps; with valid_length, the states are each
        sample's last valid step's and later outputs are 0."""
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size)
        outputs, all_states = [], []
        for i in range(length):
            output, states = self(inputs[i], states)
            outputs.append(output)
            if valid_length is not None:
                all_states.append(states)
        if valid_length is not None:
            states = [F.SequenceLast(F.stack(*per_step, axis=0), sequence_length=valid_length,
                                     use_sequence_length=True, axis=0)
                      for per_step in zip(*all_states)]
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis,
                                                     True)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        return outputs, states

    def _get_activation(self, F, inputs, activation, **kwargs):
        """`activation` applied: a name ('tanh', 'relu', any Activation act_type), a LeakyReLU
        block, or a callable."""
        from ..nn import LeakyReLU
        named = {'tanh': F.tanh, 'relu': F.relu, 'sigmoid': F.sigmoid,
                 'softsign': F.softsign}.get(activation) if isinstance(activation, str) else None
        if named is not None:
            return named(inputs, **kwargs)
        if isinstance(activation, str):
            return F.Activation(inputs, act_type=activation, **kwargs)
        if isinstance(activation, LeakyReLU):
            return F.LeakyReLU(inputs, act_type='leaky', slope=activation._alpha, **kwargs)
        return activation(inputs, **kwargs)

    def forward(self, inputs, states):
        """One time step: (output, new states)."""
        self._counter += 1
        return super().forward(inputs, states)


class HybridRecurrentCell(RecurrentCell, HybridBlock):
    """A recurrent cell whose step is a hybrid_forward (hybridizable)."""

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError


def _mapping_repr(cell):
    shape = cell.i2h_weight.shape
    return '%s -> %s' % (shape[1] if shape[1] else None, shape[0])


class _GatedCell(HybridRecurrentCell):
    """A cell with i2h/h2h weights and biases of `gates * hidden_size` rows."""
    _gates = 1

    def __init__(self, hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                 i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        rows = self._gates * hidden_size
        for name, shape, init in (('i2h_weight', (rows, input_size), i2h_weight_initializer),
                                  ('h2h_weight', (rows, hidden_size), h2h_weight_initializer),
                                  ('i2h_bias', (rows,), i2h_bias_initializer),
                                  ('h2h_bias', (rows,), h2h_bias_initializer)):
            setattr(self, name, self.params.get(name, shape=shape, init=init,
                                                allow_deferred_init=True))

    def __repr__(self):
        return '%s(%s)' % (self.__class__.__name__, _mapping_repr(self))

    def _i2h_h2h(self, F, inputs, h, i2h_weight, h2h_weight, i2h_bias, h2h_bias, prefix):
        rows = self._gates * self._hidden_size
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=rows,
                               name=prefix + 'i2h')
        h2h = F.FullyConnected(data=h, weight=h2h_weight, bias=h2h_bias, num_hidden=rows,
                               name=prefix + 'h2h')
        return i2h, h2h


class RNNCell(_GatedCell):
    """Elman cell: h_t = activation(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh)."""
    _gates = 1

    def __init__(self, hidden_size, activation='tanh', i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer='zeros',
                 h2h_bias_initializer='zeros', input_size=0, prefix=None, params=None):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)
        self._activation = activation

    def state_info(self, batch_size=0):
        return [{'shape': (batch_size, self._hidden_size), '__layout__': 'NC'}]

    def _alias(self):
        return 'rnn'

    def __repr__(self):
        return '%s(%s, %s)' % (self.__class__.__name__, _mapping_repr(self), self._activation)

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = 't%d_' % self._counter
        i2h, h2h = self._i2h_h2h(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias,
                                 h2h_bias, prefix)
        total = F.elemwise_add(i2h, h2h, name=prefix + 'plus0')
        output = self._get_activation(F, total, self._activation, name=prefix + 'out')
        return output, [output]


class LSTMCell(_GatedCell):
    """Long short-term memory cell; states [h, c]; gates (i, f, c, o) in the stacked weights."""
    _gates = 4

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', input_size=0,
                 prefix=None, params=None, activation='tanh', recurrent_activation='sigmoid'):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)
        self._activation = activation
        self._recurrent_activation = recurrent_activation

    def state_info(self, batch_size=0):
        return [{'shape': (batch_size, self._hidden_size), '__layout__': 'NC'},
                {'shape': (batch_size, self._hidden_size), '__layout__': 'NC'}]

    def _alias(self):
        return 'lstm'

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = 't%d_' % self._counter
        i2h, h2h = self._i2h_h2h(F, inputs, states[0], i2h_weight, h2h_weight, i2h_bias,
                                 h2h_bias, prefix)
        gates = F.elemwise_add(i2h, h2h, name=prefix + 'plus0')
        sliced = F.SliceChannel(gates, num_outputs=4, name=prefix + 'slice')
        rec, act = self._recurrent_activation, self._activation
        in_gate = self._get_activation(F, sliced[0], rec, name=prefix + 'i')
        forget_gate = self._get_activation(F, sliced[1], rec, name=prefix + 'f')
        in_transform = self._get_activation(F, sliced[2], act, name=prefix + 'c')
        out_gate = self._get_activation(F, sliced[3], rec, name=prefix + 'o')
        next_c = F.elemwise_add(F.elemwise_mul(forget_gate, states[1], name=prefix + 'mul0'),
                                F.elemwise_mul(in_gate, in_transform, name=prefix + 'mul1'),
                                name=prefix + 'state')
        next_h = F.elemwise_mul(out_gate, F.Activation(next_c, act_type=act,
                                                       name=prefix + 'activation0'),
                                name=prefix + 'out')
        return next_h, [next_h, next_c]


class GRUCell(_GatedCell):
    """Gated recurrent unit (Cho et al.); gates (r, z, n) in the stacked weights."""
    _gates = 3

    def __init__(self, hidden_size, i2h_weight_initializer=None, h2h_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', input_size=0,
                 prefix=None, params=None):
        super().__init__(hidden_size, i2h_weight_initializer, h2h_weight_initializer,
                         i2h_bias_initializer, h2h_bias_initializer, input_size, prefix, params)

    def state_info(self, batch_size=0):
        return [{'shape': (batch_size, self._hidden_size), '__layout__': 'NC'}]

    def _alias(self):
        return 'gru'

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = 't%d_' % self._counter
        prev_h = states[0]
        i2h, h2h = self._i2h_h2h(F, inputs, prev_h, i2h_weight, h2h_weight, i2h_bias,
                                 h2h_bias, prefix)
        i2h_r, i2h_z, i2h = F.SliceChannel(i2h, num_outputs=3, name=prefix + 'i2h_slice')
        h2h_r, h2h_z, h2h = F.SliceChannel(h2h, num_outputs=3, name=prefix + 'h2h_slice')
        reset_gate = F.Activation(F.elemwise_add(i2h_r, h2h_r, name=prefix + 'plus0'),
                                  act_type='sigmoid', name=prefix + 'r_act')
        update_gate = F.Activation(F.elemwise_add(i2h_z, h2h_z, name=prefix + 'plus1'),
                                   act_type='sigmoid', name=prefix + 'z_act')
        candidate = F.Activation(
            F.elemwise_add(i2h, F.elemwise_mul(reset_gate, h2h, name=prefix + 'mul0'),
                           name=prefix + 'plus2'),
            act_type='tanh', name=prefix + 'h_act')
        ones = F.ones_like(update_gate, name=prefix + 'ones_like0')
        next_h = F.elemwise_add(
            F.elemwise_mul(F.elemwise_sub(ones, update_gate, name=prefix + 'minus0'), candidate,
                           name=prefix + 'mul1'),
            F.elemwise_mul(update_gate, prev_h, name=prefix + 'mul20'),
            name=prefix + 'out')
        return next_h, [next_h]


# ---------------------------------------------------------------------------------------------
# stacks
# ---------------------------------------------------------------------------------------------
class _StackMixin:
    """Cells applied one after another at each step; states are the cells' states in order."""

    def __repr__(self):
        return '%s(\n%s\n)' % (self.__class__.__name__,
                               '\n'.join('(%s): %s' % (i, _indent(repr(m), 2))
                                         for i, m in self._children.items()))

    def add(self, cell):
        """Append a cell."""
        self.register_child(cell)

    def state_info(self, batch_size=0):
        return _cells_state_info(self._children.values(), batch_size)

    def begin_state(self, **kwargs):
        _check_unmodified(self)
        return _cells_begin_state(self._children.values(), **kwargs)

    def __call__(self, inputs, states):
        self._counter += 1
        assert all(not isinstance(c, BidirectionalCell) for c in self._children.values())
        next_states, p = [], 0
        for cell in self._children.values():
            n = len(cell.state_info())
            inputs, state = cell(inputs, states[p:p + n])
            p += n
            next_states.extend(state)
        return inputs, next_states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, _, F, batch_size = _format_sequence(length, inputs, layout, None)
        begin_state = _get_begin_state(self, F, begin_state, inputs, batch_size)
        cells = list(self._children.values())
        next_states, p = [], 0
        for i, cell in enumerate(cells):
            n = len(cell.state_info())
            inputs, states = cell.unroll(length, inputs=inputs, begin_state=begin_state[p:p + n],
                                         layout=layout,
                                         merge_outputs=None if i < len(cells) - 1
                                         else merge_outputs,
                                         valid_length=valid_length)
            p += n
            next_states.extend(states)
        return inputs, next_states

    def __getitem__(self, i):
        return self._children[str(i)]

    def __len__(self):
        return len(self._children)


class SequentialRNNCell(_StackMixin, RecurrentCell):
    """A stack of cells (any RecurrentCell)."""

    def hybrid_forward(self, *args, **kwargs):
        raise NotImplementedError


class HybridSequentialRNNCell(_StackMixin, HybridRecurrentCell):
    """A stack of HybridRecurrentCells (usable inside a HybridBlock)."""

    def hybrid_forward(self, F, inputs, states):
        return self.__call__(inputs, states)


# ---------------------------------------------------------------------------------------------
# dropout and modifiers
# ---------------------------------------------------------------------------------------------
class DropoutCell(HybridRecurrentCell):
    """Dropout with probability `rate` (shared along `axes`) on the inputs; no states."""

    def __init__(self, rate, axes=(), prefix=None, params=None):
        super().__init__(prefix, params)
        assert isinstance(rate, numeric_types), 'rate must be a number'
        self._rate = rate
        self._axes = axes

    def __repr__(self):
        return '%s(rate=%s, axes=%s)' % (self.__class__.__name__, self._rate, self._axes)

    def state_info(self, batch_size=0):
        return []

    def _alias(self):
        return 'dropout'

    def hybrid_forward(self, F, inputs, states):
        if self._rate > 0:
            inputs = F.Dropout(data=inputs, p=self._rate, axes=self._axes,
                               name='t%d_fwd' % self._counter)
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, _, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if isinstance(inputs, _TENSORS):
            return self.hybrid_forward(F, inputs, begin_state if begin_state else [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs, valid_length=None)


class ModifierCell(HybridRecurrentCell):
    """A cell wrapping `base_cell` (which it owns; the base cell can no longer be called on its
    own). Parameters are the base cell's."""

    def __init__(self, base_cell):
        assert not base_cell._modified, \
            'Cell %s is already modified. One cell cannot be modified twice' % base_cell.name
        base_cell._modified = True
        super().__init__(prefix=base_cell.prefix + self._alias(), params=None)
        self.base_cell = base_cell

    @property
    def params(self):
        return self.base_cell.params

    def state_info(self, batch_size=0):
        return self.base_cell.state_info(batch_size)

    def begin_state(self, func=symbol.zeros, **kwargs):
        _check_unmodified(self)
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(func=func, **kwargs)
        finally:
            self.base_cell._modified = True

    def hybrid_forward(self, F, inputs, states):
        raise NotImplementedError

    def __repr__(self):
        return '%s(%s)' % (self.__class__.__name__, self.base_cell)


class ZoneoutCell(ModifierCell):
    """Zoneout: each output/state unit keeps its previous value with probability
    zoneout_outputs/zoneout_states (in training)."""

    def __init__(self, base_cell, zoneout_outputs=0., zoneout_states=0.):
        assert not isinstance(base_cell, BidirectionalCell), \
            "BidirectionalCell doesn't support zoneout since it doesn't support step. " \
            'Please add ZoneoutCell to the cells underneath instead.'
        assert not isinstance(base_cell, SequentialRNNCell) or \
            not getattr(base_cell, '_bidirectional', False), \
            "Bidirectional SequentialRNNCell doesn't support zoneout. " \
            'Please add ZoneoutCell to the cells underneath instead.'
        super().__init__(base_cell)
        self.zoneout_outputs = zoneout_outputs
        self.zoneout_states = zoneout_states
        self._prev_output = None

    def __repr__(self):
        return '%s(p_out=%s, p_state=%s, %s)' % (self.__class__.__name__, self.zoneout_outputs,
                                                 self.zoneout_states, self.base_cell)

    def _alias(self):
        return 'zoneout'

    def reset(self):
        super().reset()
        self._prev_output = None

    def hybrid_forward(self, F, inputs, states):
        next_output, next_states = self.base_cell(inputs, states)

        def keep_new(p, like):
            return F.Dropout(F.ones_like(like), p=p)
        prev_output = self._prev_output
        if prev_output is None:
            prev_output = F.zeros_like(next_output)
        p_out, p_state = self.zoneout_outputs, self.zoneout_states
        output = F.where(keep_new(p_out, next_output), next_output, prev_output) \
            if p_out != 0. else next_output
        if p_state != 0.:
            next_states = [F.where(keep_new(p_state, new), new, old)
                           for new, old in zip(next_states, states)]
        self._prev_output = output
        return output, next_states


class ResidualCell(ModifierCell):
    """output = base_cell's output + the input."""

    def hybrid_forward(self, F, inputs, states):
        output, states = self.base_cell(inputs, states)
        output = F.elemwise_add(output, inputs, name='t%d_fwd' % self._counter)
        return output, states

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(length, inputs=inputs,
                                                    begin_state=begin_state, layout=layout,
                                                    merge_outputs=merge_outputs,
                                                    valid_length=valid_length)
        finally:
            self.base_cell._modified = True
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, _TENSORS)
        inputs, axis, F, _ = _format_sequence(length, inputs, layout, merge_outputs)
        if valid_length is not None:
            inputs = _mask_sequence_variable_length(F, inputs, length, valid_length, axis,
                                                    merge_outputs)
        if merge_outputs:
            return F.elemwise_add(outputs, inputs), states
        return [F.elemwise_add(o, i) for o, i in zip(outputs, inputs)], states


class BidirectionalCell(HybridRecurrentCell):
    """l_cell over the sequence and r_cell over it reversed; outputs concatenated (only
    `unroll`, no stepping)."""

    def __init__(self, l_cell, r_cell, output_prefix='bi_'):
        super().__init__(prefix='', params=None)
        self.register_child(l_cell, 'l_cell')
        self.register_child(r_cell, 'r_cell')
        self._output_prefix = output_prefix

    def __call__(self, inputs, states):
        raise NotImplementedError('Bidirectional cannot be stepped. Please use unroll')

    def __repr__(self):
        return '%s(forward=%s, backward=%s)' % (self.__class__.__name__,
                                                 self._children['l_cell'],
                                                 self._children['r_cell'])

    def state_info(self, batch_size=0):
        return _cells_state_info(self._children.values(), batch_size)

    def begin_state(self, **kwargs):
        _check_unmodified(self)
        return _cells_begin_state(self._children.values(), **kwargs)

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, False)
        reversed_inputs = _reverse_sequences(inputs, length, valid_length)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size)
        l_cell, r_cell = self._children.values()
        n_left = len(l_cell.state_info(batch_size))
        l_outputs, l_states = l_cell.unroll(length, inputs=inputs, begin_state=states[:n_left],
                                            layout=layout, merge_outputs=merge_outputs,
                                            valid_length=valid_length)
        r_outputs, r_states = r_cell.unroll(length, inputs=reversed_inputs,
                                            begin_state=states[n_left:], layout=layout,
                                            merge_outputs=False, valid_length=valid_length)
        reversed_r = _reverse_sequences(r_outputs, length, valid_length)
        if merge_outputs is None:
            merge_outputs = isinstance(l_outputs, _TENSORS)
            l_outputs, _, _, _ = _format_sequence(None, l_outputs, layout, merge_outputs)
            reversed_r, _, _, _ = _format_sequence(None, reversed_r, layout, merge_outputs)
        if merge_outputs:
            reversed_r = F.stack(*reversed_r, axis=axis) \
                if not isinstance(reversed_r, _TENSORS) else reversed_r
            outputs = F.concat(l_outputs, reversed_r, dim=2, name='%sout' % self._output_prefix)
        else:
            outputs = [F.concat(l_o, r_o, dim=1, name='%st%d' % (self._output_prefix, i))
                       for i, (l_o, r_o) in enumerate(zip(l_outputs, reversed_r))]
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis,
                                                     merge_outputs)
        return outputs, l_states + r_states

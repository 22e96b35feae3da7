"""Extra recurrent cells of mx.gluon.contrib.rnn: VariationalDropoutCell, LSTMPCell, and
`dynamic_unroll` (the cell run by contrib.foreach)."""
from ...rnn.rnn_cell import (BidirectionalCell, HybridRecurrentCell, ModifierCell,
                             SequentialRNNCell, _TENSORS, _as_list, _format_sequence,
                             _get_begin_state, _mask_sequence_variable_length)

__all__ = ['VariationalDropoutCell', 'LSTMPCell']


class VariationalDropoutCell(ModifierCell):
    """Variational dropout (Gal & Ghahramani): one dropout mask per sequence for the inputs,
    the first state and the outputs, reused at every step."""

    def __init__(self, base_cell, drop_inputs=0., drop_states=0., drop_outputs=0.):
        assert not drop_states or not isinstance(base_cell, BidirectionalCell), \
            "BidirectionalCell doesn't support variational state dropout. " \
            'Please add VariationalDropoutCell to the cells underneath instead.'
        assert not drop_states or not isinstance(base_cell, SequentialRNNCell) or \
            not getattr(base_cell, '_bidirectional', False), \
            "Bidirectional SequentialRNNCell doesn't support variational state dropout. " \
            'Please add VariationalDropoutCell to the cells underneath instead.'
        super().__init__(base_cell)
        self.drop_inputs = drop_inputs
        self.drop_states = drop_states
        self.drop_outputs = drop_outputs
        self.drop_inputs_mask = None
        self.drop_states_mask = None
        self.drop_outputs_mask = None

    def _alias(self):
        return 'vardrop'

    def reset(self):
        super().reset()
        self.drop_inputs_mask = None
        self.drop_states_mask = None
        self.drop_outputs_mask = None

    def hybrid_forward(self, F, inputs, states):
        if self.drop_states and self.drop_states_mask is None:
            self.drop_states_mask = F.Dropout(F.ones_like(states[0]), p=self.drop_states)
        if self.drop_inputs and self.drop_inputs_mask is None:
            self.drop_inputs_mask = F.Dropout(F.ones_like(inputs), p=self.drop_inputs)
        if self.drop_states:
            states = list(states)
            states[0] = states[0] * self.drop_states_mask
        if self.drop_inputs:
            inputs = inputs * self.drop_inputs_mask
        next_output, next_states = self.base_cell(inputs, states)
        if self.drop_outputs and self.drop_outputs_mask is None:
            self.drop_outputs_mask = F.Dropout(F.ones_like(next_output), p=self.drop_outputs)
        if self.drop_outputs:
            next_output = next_output * self.drop_outputs_mask
        return next_output, next_states

    def __repr__(self):
        return '%s(p_out = %s, p_state = %s)' % (self.__class__.__name__, self.drop_outputs,
                                                 self.drop_states)

    def unroll(self, length, inputs, begin_state=None, layout='NTC', merge_outputs=None,
               valid_length=None):
        if self.drop_states:
            return super().unroll(length, inputs, begin_state, layout, merge_outputs,
                                  valid_length=valid_length)
        self.reset()
        inputs, axis, F, batch_size = _format_sequence(length, inputs, layout, True)
        states = _get_begin_state(self, F, begin_state, inputs, batch_size)
        if self.drop_inputs:
            inputs = F.Dropout(inputs, p=self.drop_inputs, axes=(axis,))
        outputs, states = self.base_cell.unroll(length, inputs, states, layout,
                                                merge_outputs=True, valid_length=valid_length)
        if self.drop_outputs:
            outputs = F.Dropout(outputs, p=self.drop_outputs, axes=(axis,))
        if merge_outputs is None:
            merge_outputs = isinstance(outputs, _TENSORS)
        outputs, _, _, _ = _format_sequence(length, outputs, layout, merge_outputs)
        if valid_length is not None:
            outputs = _mask_sequence_variable_length(F, outputs, length, valid_length, axis,
                                                     merge_outputs)
        return outputs, states


class LSTMPCell(HybridRecurrentCell):
    """LSTM with a projection of the hidden state (Sak et al. 2014): states [r, c] of sizes
    projection_size and hidden_size; r = W_hr (o * tanh(c))."""

    def __init__(self, hidden_size, projection_size, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, h2r_weight_initializer=None,
                 i2h_bias_initializer='zeros', h2h_bias_initializer='zeros', input_size=0,
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._hidden_size = hidden_size
        self._input_size = input_size
        self._projection_size = projection_size
        rows = 4 * hidden_size
        for name, shape, init in (
                ('i2h_weight', (rows, input_size), i2h_weight_initializer),
                ('h2h_weight', (rows, projection_size), h2h_weight_initializer),
                ('h2r_weight', (projection_size, hidden_size), h2r_weight_initializer),
                ('i2h_bias', (rows,), i2h_bias_initializer),
                ('h2h_bias', (rows,), h2h_bias_initializer)):
            setattr(self, name, self.params.get(name, shape=shape, init=init,
                                                allow_deferred_init=True))

    def state_info(self, batch_size=0):
        return [{'shape': (batch_size, self._projection_size), '__layout__': 'NC'},
                {'shape': (batch_size, self._hidden_size), '__layout__': 'NC'}]

    def _alias(self):
        return 'lstmp'

    def __repr__(self):
        shape = self.i2h_weight.shape
        return '%s(%s -> %s -> %s)' % (self.__class__.__name__, shape[1] if shape[1] else None,
                                       shape[0], self.h2r_weight.shape[0])

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, h2r_weight, i2h_bias,
                       h2h_bias):
        prefix = 't%d_' % self._counter
        rows = self._hidden_size * 4
        i2h = F.FullyConnected(data=inputs, weight=i2h_weight, bias=i2h_bias, num_hidden=rows,
                               name=prefix + 'i2h')
        h2h = F.FullyConnected(data=states[0], weight=h2h_weight, bias=h2h_bias,
                               num_hidden=rows, name=prefix + 'h2h')
        sliced = F.SliceChannel(i2h + h2h, num_outputs=4, name=prefix + 'slice')
        in_gate = F.Activation(sliced[0], act_type='sigmoid', name=prefix + 'i')
        forget_gate = F.Activation(sliced[1], act_type='sigmoid', name=prefix + 'f')
        in_transform = F.Activation(sliced[2], act_type='tanh', name=prefix + 'c')
        out_gate = F.Activation(sliced[3], act_type='sigmoid', name=prefix + 'o')
        next_c = F.elemwise_add(forget_gate * states[1], in_gate * in_transform,
                                name=prefix + 'state')
        hidden = F.elemwise_mul(out_gate, F.Activation(next_c, act_type='tanh'),
                                name=prefix + 'hidden')
        next_r = F.FullyConnected(data=hidden, num_hidden=self._projection_size,
                                  weight=h2r_weight, no_bias=True, name=prefix + 'out')
        return next_r, [next_r, next_c]


def dynamic_unroll(cell, inputs, begin_state, drop_inputs=0, drop_outputs=0, layout='TNC',
                   valid_length=None):
    """Run `cell` over the time axis of `inputs` with contrib.foreach (one graph node for the
    whole loop when symbolic). Returns (outputs laid out as `layout`, final states); with
    valid_length the states stop at each sample's last valid step and later outputs are 0."""
    inputs, axis, F, _ = _format_sequence(0, inputs, layout, True)
    axes = None
    if axis != 0:
        axes = list(range(len(layout)))
        axes[0], axes[axis] = axes[axis], axes[0]
        inputs = F.transpose(inputs, axes=axes)
    states = begin_state
    if drop_inputs:
        inputs = F.Dropout(inputs, p=drop_inputs, axes=(axis,))
    if valid_length is None:
        def loop_body(step, states):
            return cell(step, states)
    else:
        states = list(_as_list(states)) + [F.zeros((1,))]

        def loop_body(step, states):
            cell_states, iter_no = states[:-1], states[-1]
            out, new_states = cell(step, cell_states)
            keep = F.broadcast_greater(valid_length, iter_no)
            new_states = [F.where(keep, new, old) for new, old in zip(new_states, cell_states)]
            return out, new_states + [iter_no + 1]
    outputs, states = F.contrib.foreach(loop_body, inputs, states)
    if drop_outputs:
        outputs = F.Dropout(outputs, p=drop_outputs, axes=(axis,))
    if axes is not None:
        outputs = F.transpose(outputs, axes)
    if valid_length is not None:
        outputs = F.SequenceMask(outputs, sequence_length=valid_length,
                                 use_sequence_length=True, axis=axis)
        return outputs, states[:-1]
    return outputs, states

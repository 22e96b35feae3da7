"""Convolutional recurrent cells of mx.gluon.contrib.rnn (Shi et al. 2015): the RNN, LSTM and
GRU steps with Convolution in place of FullyConnected, in 1, 2 and 3 spatial dimensions.

`input_shape` is one sample's shape without the batch axis, e.g. (C, W) for 'NCW'; the states
keep the input-to-state convolution's output size (h2h convolutions are 'same'-padded, so the
h2h kernel must be odd). Parameters: i2h_weight (G*H, C, *kernel), h2h_weight, i2h_bias,
h2h_bias, as in MXNet 1.9.1.
"""
from ....base import numeric_types
from ...rnn.rnn_cell import HybridRecurrentCell

__all__ = ['Conv1DRNNCell', 'Conv2DRNNCell', 'Conv3DRNNCell',
           'Conv1DLSTMCell', 'Conv2DLSTMCell', 'Conv3DLSTMCell',
           'Conv1DGRUCell', 'Conv2DGRUCell', 'Conv3DGRUCell']

_LAYOUTS = {1: 'NCW', 2: 'NCHW', 3: 'NCDHW'}


def _conv_out_size(dims, kernels, pads, dilates):
    """Spatial output size of a stride-1 convolution (0 stays unknown)."""
    return tuple(x + 2 * p - d * (k - 1) if x else 0
                 for x, k, p, d in zip(dims, kernels, pads, dilates))


class _BaseConvRNNCell(HybridRecurrentCell):
    """Shapes, parameters and the two convolutions shared by the convolutional cells."""
    _gates = 1
    _dims = 1

    def __init__(self, input_shape, hidden_channels, i2h_kernel, h2h_kernel, i2h_pad=None,
                 i2h_dilate=None, h2h_dilate=None, i2h_weight_initializer=None,
                 h2h_weight_initializer=None, i2h_bias_initializer='zeros',
                 h2h_bias_initializer='zeros', conv_layout=None, activation='tanh',
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        dims = self._dims
        i2h_pad = (0,) * dims if i2h_pad is None else i2h_pad
        i2h_dilate = (1,) * dims if i2h_dilate is None else i2h_dilate
        h2h_dilate = (1,) * dims if h2h_dilate is None else h2h_dilate
        conv_layout = conv_layout or _LAYOUTS[dims]
        specs = [i2h_kernel, i2h_pad, i2h_dilate, h2h_kernel, h2h_dilate]
        assert all(isinstance(s, int) or len(s) == dims for s in specs), \
            'For {dims}D convolution, the convolution settings can only be either int or ' \
            'list/tuple of length {dims}'.format(dims=dims)

        def tup(v):
            return (v,) * dims if isinstance(v, numeric_types) else tuple(v)
        self._hidden_channels = hidden_channels
        self._input_shape = input_shape
        self._conv_layout = conv_layout
        self._activation = activation
        self._i2h_kernel, self._i2h_pad, self._i2h_dilate = tup(i2h_kernel), tup(i2h_pad), \
            tup(i2h_dilate)
        self._h2h_kernel, self._h2h_dilate = tup(h2h_kernel), tup(h2h_dilate)
        self._stride = (1,) * dims
        assert all(k % 2 == 1 for k in self._h2h_kernel), \
            'Only support odd number, get h2h_kernel= %s' % str(h2h_kernel)
        self._h2h_pad = tuple(d * (k - 1) // 2 for d, k in zip(self._h2h_dilate,
                                                                self._h2h_kernel))
        self._channel_axis = conv_layout.find('C')
        channels_first = self._channel_axis == 1
        self._in_channels = input_shape[self._channel_axis - 1]
        spatial = input_shape[1:] if channels_first else input_shape[:-1]
        out_size = _conv_out_size(spatial, self._i2h_kernel, self._i2h_pad, self._i2h_dilate)
        rows = hidden_channels * self._gates
        if channels_first:
            i2h_shape = (rows, self._in_channels) + self._i2h_kernel
            h2h_shape = (rows, hidden_channels) + self._h2h_kernel
            self._state_shape = (hidden_channels,) + out_size
        else:
            i2h_shape = (rows,) + self._i2h_kernel + (self._in_channels,)
            h2h_shape = (rows,) + self._h2h_kernel + (hidden_channels,)
            self._state_shape = out_size + (hidden_channels,)
        for name, shape, init in (('i2h_weight', i2h_shape, i2h_weight_initializer),
                                  ('h2h_weight', h2h_shape, h2h_weight_initializer),
                                  ('i2h_bias', (rows,), i2h_bias_initializer),
                                  ('h2h_bias', (rows,), h2h_bias_initializer)):
            setattr(self, name, self.params.get(name, shape=shape, init=init,
                                                allow_deferred_init=True))

    def __repr__(self):
        shape = self.i2h_weight.shape
        in_channels = shape[1 if self._channel_axis == 1 else -1]
        return '%s(%s -> %s, %s, %s)' % (self.__class__.__name__, in_channels or None,
                                         shape[0], self._activation, self._conv_layout)

    def _state(self, batch_size):
        return {'shape': (batch_size,) + self._state_shape, '__layout__': self._conv_layout}

    def state_info(self, batch_size=0):
        return [self._state(batch_size)]

    def _conv_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias,
                      prefix):
        filters = self._hidden_channels * self._gates
        i2h = F.Convolution(data=inputs, num_filter=filters, kernel=self._i2h_kernel,
                            stride=self._stride, pad=self._i2h_pad, dilate=self._i2h_dilate,
                            weight=i2h_weight, bias=i2h_bias, layout=self._conv_layout,
                            name=prefix + 'i2h')
        h2h = F.Convolution(data=states[0], num_filter=filters, kernel=self._h2h_kernel,
                            dilate=self._h2h_dilate, pad=self._h2h_pad, stride=self._stride,
                            weight=h2h_weight, bias=h2h_bias, layout=self._conv_layout,
                            name=prefix + 'h2h')
        return i2h, h2h


class _ConvRNNCell(_BaseConvRNNCell):
    _gates = 1

    def _alias(self):
        return 'conv_rnn'

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = 't%d_' % self._counter
        i2h, h2h = self._conv_forward(F, inputs, states, i2h_weight, h2h_weight, i2h_bias,
                                      h2h_bias, prefix)
        output = self._get_activation(F, i2h + h2h, self._activation, name=prefix + 'out')
        return output, [output]


class _ConvLSTMCell(_BaseConvRNNCell):
    _gates = 4

    def state_info(self, batch_size=0):
        return [self._state(batch_size), self._state(batch_size)]

    def _alias(self):
        return 'conv_lstm'

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = 't%d_' % self._counter
        i2h, h2h = self._conv_forward(F, inputs, states, i2h_weight, h2h_weight, i2h_bias,
                                      h2h_bias, prefix)
        sliced = F.SliceChannel(i2h + h2h, num_outputs=4, name=prefix + 'slice',
                                axis=self._channel_axis)
        in_gate = F.Activation(sliced[0], act_type='sigmoid', name=prefix + 'i')
        forget_gate = F.Activation(sliced[1], act_type='sigmoid', name=prefix + 'f')
        in_transform = self._get_activation(F, sliced[2], self._activation, name=prefix + 'c')
        out_gate = F.Activation(sliced[3], act_type='sigmoid', name=prefix + 'o')
        next_c = F.elemwise_add(forget_gate * states[1], in_gate * in_transform,
                                name=prefix + 'state')
        next_h = F.elemwise_mul(out_gate, self._get_activation(F, next_c, self._activation),
                                name=prefix + 'out')
        return next_h, [next_h, next_c]


class _ConvGRUCell(_BaseConvRNNCell):
    _gates = 3

    def _alias(self):
        return 'conv_gru'

    def hybrid_forward(self, F, inputs, states, i2h_weight, h2h_weight, i2h_bias, h2h_bias):
        prefix = 't%d_' % self._counter
        i2h, h2h = self._conv_forward(F, inputs, states, i2h_weight, h2h_weight, i2h_bias,
                                      h2h_bias, prefix)
        i2h_r, i2h_z, i2h = F.SliceChannel(i2h, num_outputs=3, name=prefix + 'i2h_slice',
                                           axis=self._channel_axis)
        h2h_r, h2h_z, h2h = F.SliceChannel(h2h, num_outputs=3, name=prefix + 'h2h_slice',
                                           axis=self._channel_axis)
        reset_gate = F.Activation(i2h_r + h2h_r, act_type='sigmoid', name=prefix + 'r_act')
        update_gate = F.Activation(i2h_z + h2h_z, act_type='sigmoid', name=prefix + 'z_act')
        candidate = self._get_activation(F, i2h + reset_gate * h2h, self._activation,
                                         name=prefix + 'h_act')
        next_h = F.elemwise_add((1. - update_gate) * candidate, update_gate * states[0],
                                name=prefix + 'out')
        return next_h, [next_h]


class Conv1DRNNCell(_ConvRNNCell):
    """1-D convolutional RNN cell (layout 'NCW' or 'NWC')."""
    _dims = 1


class Conv2DRNNCell(_ConvRNNCell):
    """2-D convolutional RNN cell (layout 'NCHW' or 'NHWC')."""
    _dims = 2


class Conv3DRNNCell(_ConvRNNCell):
    """3-D convolutional RNN cell (layout 'NCDHW' or 'NDHWC')."""
    _dims = 3


class Conv1DLSTMCell(_ConvLSTMCell):
    """1-D convolutional LSTM cell."""
    _dims = 1


class Conv2DLSTMCell(_ConvLSTMCell):
    """2-D convolutional LSTM cell."""
    _dims = 2


class Conv3DLSTMCell(_ConvLSTMCell):
    """3-D convolutional LSTM cell."""
    _dims = 3


class Conv1DGRUCell(_ConvGRUCell):
    """1-D convolutional GRU cell."""
    _dims = 1


class Conv2DGRUCell(_ConvGRUCell):
    """2-D convolutional GRU cell."""
    _dims = 2


class Conv3DGRUCell(_ConvGRUCell):
    """3-D convolutional GRU cell."""
    _dims = 3

"""Deformable convolution layers of mx.gluon.contrib.cnn (Dai et al. 2017, Zhu et al. 2018).

A plain Convolution computes the sampling offsets (and, for the modulated version, the
modulation masks) from the input; the deformable convolution operator then samples the input
at the offset positions. Parameters: offset_weight, offset_bias, deformable_conv_weight,
deformable_conv_bias, as in MXNet 1.9.1.
"""
from .... import symbol
from ....base import numeric_types
from ...block import HybridBlock
from ...nn import Activation

__all__ = ['DeformableConvolution', 'ModulatedDeformableConvolution']


class _DeformableBase(HybridBlock):
    """Shared set-up: `offset_per_position` offset channels per kernel position and group."""
    _offset_per_position = 2

    def __init__(self, channels, kernel_size=(1, 1), strides=(1, 1), padding=(0, 0),
                 dilation=(1, 1), groups=1, num_deformable_group=1, layout='NCHW',
                 use_bias=True, in_channels=0, activation=None, weight_initializer=None,
                 bias_initializer='zeros', offset_weight_initializer='zeros',
                 offset_bias_initializer='zeros', offset_use_bias=True, op_name=None, adj=None,
                 prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        assert layout in ('NCHW', 'NHWC'), "Only supports 'NCHW' and 'NHWC' layout for now"
        if isinstance(kernel_size, numeric_types):
            kernel_size = (kernel_size,) * 2
        n = len(kernel_size)
        strides, padding, dilation = [(v,) * n if isinstance(v, numeric_types) else v
                                      for v in (strides, padding, dilation)]
        self._channels = channels
        self._in_channels = in_channels
        self._op_name = op_name
        positions = kernel_size[0] * kernel_size[1] * num_deformable_group
        self.offset_split_index = 2 * positions
        common = {'kernel': kernel_size, 'stride': strides, 'dilate': dilation, 'pad': padding,
                  'num_group': groups, 'layout': layout}
        self._kwargs_offset = dict(common, num_filter=self._offset_per_position * positions,
                                   no_bias=not offset_use_bias)
        self._kwargs_deformable_conv = dict(common, num_filter=channels,
                                            num_deformable_group=num_deformable_group,
                                            no_bias=not use_bias)
        if adj:
            self._kwargs_offset['adj'] = adj
            self._kwargs_deformable_conv['adj'] = adj
        with self.name_scope():
            dshape = [0] * (n + 2)
            dshape[layout.find('N')] = 1
            dshape[layout.find('C')] = in_channels
            offset = symbol.Convolution(symbol.var('data', shape=tuple(dshape)),
                                        **self._kwargs_offset)
            offset_shapes = offset.infer_shape_partial()[0]
            self.offset_weight = self.params.get('offset_weight', shape=offset_shapes[1],
                                                 init=offset_weight_initializer,
                                                 allow_deferred_init=True)
            self.offset_bias = self.params.get(
                'offset_bias', shape=offset_shapes[2], init=offset_bias_initializer,
                allow_deferred_init=True) if offset_use_bias else None
            wshape = [0] * (n + 2)
            wshape[0], wshape[2], wshape[3] = channels, kernel_size[0], kernel_size[1]
            self.deformable_conv_weight = self.params.get(
                'deformable_conv_weight', shape=tuple(wshape), init=weight_initializer,
                allow_deferred_init=True)
            self.deformable_conv_bias = self.params.get(
                'deformable_conv_bias', shape=(channels,), init=bias_initializer,
                allow_deferred_init=True) if use_bias else None
            self.act = Activation(activation, prefix=activation + '_') if activation else None

    def _offsets(self, F, x, offset_weight, offset_bias):
        args = [x, offset_weight] + ([offset_bias] if offset_bias is not None else [])
        return F.Convolution(*args, cudnn_off=True, **self._kwargs_offset)

    def _finish(self, out):
        return self.act(out) if self.act else out

    def __repr__(self):
        kw = self._kwargs_deformable_conv
        n = len(kw['kernel'])
        s = '%s(%s, kernel_size=%s, stride=%s' % (self.__class__.__name__, '{mapping}',
                                                  kw['kernel'], kw['stride'])
        if kw['pad'] != (0,) * n:
            s += ', padding=%s' % (kw['pad'],)
        if kw['dilate'] != (1,) * n:
            s += ', dilation=%s' % (kw['dilate'],)
        if kw['num_group'] != 1:
            s += ', groups=%s' % kw['num_group']
        if self.deformable_conv_bias is None:
            s += ', bias=False'
        if self.act:
            s += ', %s' % self.act
        shape = self.deformable_conv_weight.shape
        return (s + ')').format(mapping='%s -> %s' % (shape[1] if shape[1] else None, shape[0]))


class DeformableConvolution(_DeformableBase):
    """2-D deformable convolution: learnt per-position sampling offsets."""

    def __init__(self, channels, kernel_size=(1, 1), strides=(1, 1), padding=(0, 0),
                 dilation=(1, 1), groups=1, num_deformable_group=1, layout='NCHW',
                 use_bias=True, in_channels=0, activation=None, weight_initializer=None,
                 bias_initializer='zeros', offset_weight_initializer='zeros',
                 offset_bias_initializer='zeros', offset_use_bias=True,
                 op_name='DeformableConvolution', adj=None, prefix=None, params=None):
        super().__init__(channels, kernel_size, strides, padding, dilation, groups,
                         num_deformable_group, layout, use_bias, in_channels, activation,
                         weight_initializer, bias_initializer, offset_weight_initializer,
                         offset_bias_initializer, offset_use_bias, op_name, adj, prefix, params)

    def _alias(self):
        return 'deformable_conv'

    def hybrid_forward(self, F, x, offset_weight, deformable_conv_weight, offset_bias=None,
                       deformable_conv_bias=None):
        offset = self._offsets(F, x, offset_weight, offset_bias)
        kwargs = {} if deformable_conv_bias is None else {'bias': deformable_conv_bias}
        out = F.contrib.DeformableConvolution(data=x, offset=offset,
                                              weight=deformable_conv_weight, name='fwd',
                                              **kwargs, **self._kwargs_deformable_conv)
        return self._finish(out)


class ModulatedDeformableConvolution(_DeformableBase):
    """Deformable convolution v2: offsets plus a modulation mask (2 * sigmoid) per sample
    position."""
    _offset_per_position = 3

    def __init__(self, channels, kernel_size=(1, 1), strides=(1, 1), padding=(0, 0),
                 dilation=(1, 1), groups=1, num_deformable_group=1, layout='NCHW',
                 use_bias=True, in_channels=0, activation=None, weight_initializer=None,
                 bias_initializer='zeros', offset_weight_initializer='zeros',
                 offset_bias_initializer='zeros', offset_use_bias=True,
                 op_name='ModulatedDeformableConvolution', adj=None, prefix=None, params=None):
        super().__init__(channels, kernel_size, strides, padding, dilation, groups,
                         num_deformable_group, layout, use_bias, in_channels, activation,
                         weight_initializer, bias_initializer, offset_weight_initializer,
                         offset_bias_initializer, offset_use_bias, op_name, adj, prefix, params)

    def _alias(self):
        return 'modulated_deformable_conv'

    def hybrid_forward(self, F, x, offset_weight, deformable_conv_weight, offset_bias=None,
                       deformable_conv_bias=None):
        offset = self._offsets(F, x, offset_weight, offset_bias)
        offset_t = F.slice_axis(offset, axis=1, begin=0, end=self.offset_split_index)
        mask = F.sigmoid(F.slice_axis(offset, axis=1, begin=self.offset_split_index,
                                      end=None)) * 2
        kwargs = {} if deformable_conv_bias is None else {'bias': deformable_conv_bias}
        out = F.contrib.ModulatedDeformableConvolution(data=x, offset=offset_t, mask=mask,
                                                       weight=deformable_conv_weight,
                                                       name='fwd', **kwargs,
                                                       **self._kwargs_deformable_conv)
        return self._finish(out)

"""Convolution, transposed convolution, pooling and padding layers of mx.gluon.nn."""
from ...base import numeric_types
from ..block import HybridBlock
from .activations import Activation

__all__ = ['Conv1D', 'Conv2D', 'Conv3D', 'Conv1DTranspose', 'Conv2DTranspose',
           'Conv3DTranspose', 'MaxPool1D', 'MaxPool2D', 'MaxPool3D', 'AvgPool1D', 'AvgPool2D',
           'AvgPool3D', 'GlobalMaxPool1D', 'GlobalMaxPool2D', 'GlobalMaxPool3D',
           'GlobalAvgPool1D', 'GlobalAvgPool2D', 'GlobalAvgPool3D', 'ReflectionPad2D']


def _tuple(value, n):
    return (value,) * n if isinstance(value, numeric_types) else tuple(value)


def _weight_shape(op_name, layout, channels, in_channels, groups, kernel):
    """The weight's shape, 0 where in_channels is not known yet."""
    if op_name == 'Deconvolution':
        return (in_channels, channels // groups) + tuple(kernel)
    per_group = in_channels // groups if in_channels else 0
    if layout.find('C') == 1:
        return (channels, per_group) + tuple(kernel)
    return (channels,) + tuple(kernel) + (per_group,)


class _Conv(HybridBlock):
    """Convolution (op_name 'Convolution') or its transpose ('Deconvolution')."""

    def __init__(self, channels, kernel_size, strides, padding, dilation, groups, layout,
                 in_channels=0, activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer='zeros', op_name='Convolution', adj=None, prefix=None,
                 params=None):
        super().__init__(prefix=prefix, params=params)
        with self.name_scope():
            self._channels = channels
            self._in_channels = in_channels
            n = len(kernel_size)
            strides, padding, dilation = (_tuple(v, n) for v in (strides, padding, dilation))
            self._op_name = op_name
            self._kwargs = {'kernel': kernel_size, 'stride': strides, 'dilate': dilation,
                            'pad': padding, 'num_filter': channels, 'num_group': groups,
                            'no_bias': not use_bias, 'layout': layout}
            if adj is not None:
                self._kwargs['adj'] = adj
            self.weight = self.params.get(
                'weight', shape=_weight_shape(op_name, layout, channels, in_channels, groups,
                                              kernel_size),
                init=weight_initializer, allow_deferred_init=True)
            if use_bias:
                self.bias = self.params.get('bias', shape=(channels,), init=bias_initializer,
                                            allow_deferred_init=True)
            else:
                self.bias = None
            self.act = Activation(activation, prefix=activation + '_') \
                if activation is not None else None

    def hybrid_forward(self, F, x, weight, bias=None):
        op = getattr(F, self._op_name)
        if bias is None:
            out = op(x, weight, name='fwd', **self._kwargs)
        else:
            out = op(x, weight, bias, name='fwd', **self._kwargs)
        if self.act is not None:
            out = self.act(out)
        return out

    def _alias(self):
        return 'conv'

    def __repr__(self):
        k = self._kwargs
        s = '%s(%s, kernel_size=%s, stride=%s' % (
            self.__class__.__name__, self._mapping(), k['kernel'], k['stride'])
        n = len(k['kernel'])
        if k['pad'] != (0,) * n:
            s += ', padding=%s' % (k['pad'],)
        if k['dilate'] != (1,) * n:
            s += ', dilation=%s' % (k['dilate'],)
        if hasattr(self, 'out_pad') and self.out_pad != (0,) * n:
            s += ', output_padding=%s' % (self.out_pad,)
        if k['num_group'] != 1:
            s += ', groups=%s' % k['num_group']
        if self.bias is None:
            s += ', bias=False'
        if self.act:
            s += ', %s' % self.act
        return s + ')'

    def _mapping(self):
        shape = self.weight.shape
        return '%s -> %s' % (shape[1] if shape[1] else None, shape[0])


def _conv_class(name, dims, layouts, transpose):
    default_layout = layouts[0]

    def __init__(self, channels, kernel_size, strides=(1,) * dims, padding=(0,) * dims,
                 *rest, **kwargs):
        if transpose:
            names = ['output_padding', 'dilation', 'groups', 'layout', 'activation',
                     'use_bias', 'weight_initializer', 'bias_initializer', 'in_channels']
        else:
            names = ['dilation', 'groups', 'layout', 'activation', 'use_bias',
                     'weight_initializer', 'bias_initializer', 'in_channels']
        opts = dict(zip(names, rest))
        for key in names:
            if key in kwargs:
                opts[key] = kwargs.pop(key)
        layout = opts.get('layout', default_layout)
        assert layout in layouts, 'Only supports %s layout for now' % (
            ' and '.join("'%s'" % l for l in layouts))
        kernel_size = _tuple(kernel_size, dims)
        assert len(kernel_size) == dims, \
            'kernel_size must be a number or a list of %d ints' % dims
        common = dict(in_channels=opts.get('in_channels', 0),
                      activation=opts.get('activation'), use_bias=opts.get('use_bias', True),
                      weight_initializer=opts.get('weight_initializer'),
                      bias_initializer=opts.get('bias_initializer', 'zeros'))
        dilation = opts.get('dilation', (1,) * dims)
        groups = opts.get('groups', 1)
        if transpose:
            output_padding = _tuple(opts.get('output_padding', (0,) * dims), dims)
            _Conv.__init__(self, channels, kernel_size, strides, padding, dilation, groups,
                           layout, op_name='Deconvolution', adj=output_padding, **common,
                           **kwargs)
            self.outpad = output_padding
        else:
            _Conv.__init__(self, channels, kernel_size, strides, padding, dilation, groups,
                           layout, **common, **kwargs)
    doc = '%dD %sconvolution layer (layouts %s).' % (dims, 'transposed ' if transpose else '',
                                                     ', '.join(layouts))
    return type(name, (_Conv,), {'__init__': __init__, '__doc__': doc})


Conv1D = _conv_class('Conv1D', 1, ('NCW', 'NWC'), False)
Conv2D = _conv_class('Conv2D', 2, ('NCHW', 'NHWC'), False)
Conv3D = _conv_class('Conv3D', 3, ('NCDHW', 'NDHWC'), False)
Conv1DTranspose = _conv_class('Conv1DTranspose', 1, ('NCW', 'NWC'), True)
Conv2DTranspose = _conv_class('Conv2DTranspose', 2, ('NCHW', 'NHWC'), True)
Conv3DTranspose = _conv_class('Conv3DTranspose', 3, ('NCDHW', 'NDHWC'), True)


class _Pooling(HybridBlock):
    """Max or average pooling (global_pool: over the whole spatial extent)."""

    def __init__(self, pool_size, strides, padding, ceil_mode, global_pool, pool_type, layout,
                 count_include_pad=None, **kwargs):
        super().__init__(**kwargs)
        if strides is None:
            strides = pool_size
        n = len(pool_size)
        strides, padding = _tuple(strides, n), _tuple(padding, n)
        self._kwargs = {'kernel': pool_size, 'stride': strides, 'pad': padding,
                        'global_pool': global_pool, 'pool_type': pool_type, 'layout': layout,
                        'pooling_convention': 'full' if ceil_mode else 'valid'}
        if count_include_pad is not None:
            self._kwargs['count_include_pad'] = count_include_pad

    def _alias(self):
        return 'pool'

    def hybrid_forward(self, F, x):
        return F.Pooling(x, name='fwd', **self._kwargs)

    def __repr__(self):
        k = self._kwargs
        return ('%s(size=%s, stride=%s, padding=%s, ceil_mode=%s, global_pool=%s, '
                'pool_type=%s, layout=%s)' % (
                    self.__class__.__name__, k['kernel'], k['stride'], k['pad'],
                    k['pooling_convention'] == 'full', k['global_pool'], k['pool_type'],
                    k['layout']))


def _pool_class(name, dims, layouts, pool_type, global_pool):
    default_layout = layouts[0]

    if global_pool:
        def __init__(self, layout=default_layout, **kwargs):
            assert layout in layouts, 'Only supports %s layout for now' % (
                ' and '.join("'%s'" % l for l in layouts))
            _Pooling.__init__(self, (1,) * dims, None, 0, True, True, pool_type, layout,
                              **kwargs)
    elif pool_type == 'max':
        def __init__(self, pool_size=(2,) * dims if dims > 1 else 2, strides=None, padding=0,
                     layout=default_layout, ceil_mode=False, **kwargs):
            assert layout in layouts, 'Only supports %s layout for now' % (
                ' and '.join("'%s'" % l for l in layouts))
            pool_size = _tuple(pool_size, dims)
            assert len(pool_size) == dims, \
                'pool_size must be a number or a list of %d ints' % dims
            _Pooling.__init__(self, pool_size, strides, padding, ceil_mode, False, 'max',
                              layout, **kwargs)
    else:
        def __init__(self, pool_size=(2,) * dims if dims > 1 else 2, strides=None, padding=0,
                     ceil_mode=False, layout=default_layout, count_include_pad=True,
                     **kwargs):
            assert layout in layouts, 'Only supports %s layout for now' % (
                ' and '.join("'%s'" % l for l in layouts))
            pool_size = _tuple(pool_size, dims)
            assert len(pool_size) == dims, \
                'pool_size must be a number or a list of %d ints' % dims
            _Pooling.__init__(self, pool_size, strides, padding, ceil_mode, False, 'avg',
                              layout, count_include_pad, **kwargs)
    return type(name, (_Pooling,), {'__init__': __init__,
                                    '__doc__': '%dD %s%s pooling.' % (
                                        dims, 'global ' if global_pool else '', pool_type)})


MaxPool1D = _pool_class('MaxPool1D', 1, ('NCW', 'NWC'), 'max', False)
MaxPool2D = _pool_class('MaxPool2D', 2, ('NCHW', 'NHWC'), 'max', False)
MaxPool3D = _pool_class('MaxPool3D', 3, ('NCDHW', 'NDHWC'), 'max', False)
AvgPool1D = _pool_class('AvgPool1D', 1, ('NCW', 'NWC'), 'avg', False)
AvgPool2D = _pool_class('AvgPool2D', 2, ('NCHW', 'NHWC'), 'avg', False)
AvgPool3D = _pool_class('AvgPool3D', 3, ('NCDHW', 'NDHWC'), 'avg', False)
GlobalMaxPool1D = _pool_class('GlobalMaxPool1D', 1, ('NCW', 'NWC'), 'max', True)
GlobalMaxPool2D = _pool_class('GlobalMaxPool2D', 2, ('NCHW', 'NHWC'), 'max', True)
GlobalMaxPool3D = _pool_class('GlobalMaxPool3D', 3, ('NCDHW', 'NDHWC'), 'max', True)
GlobalAvgPool1D = _pool_class('GlobalAvgPool1D', 1, ('NCW', 'NWC'), 'avg', True)
GlobalAvgPool2D = _pool_class('GlobalAvgPool2D', 2, ('NCHW', 'NHWC'), 'avg', True)
GlobalAvgPool3D = _pool_class('GlobalAvgPool3D', 3, ('NCDHW', 'NDHWC'), 'avg', True)


class ReflectionPad2D(HybridBlock):
    """Pad the two spatial axes of NCHW input by reflection."""

    def __init__(self, padding=0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(padding, numeric_types):
            padding = (0, 0, 0, 0, padding, padding, padding, padding)
        assert len(padding) == 8
        self._padding = padding

    def hybrid_forward(self, F, x):
        return F.pad(x, mode='reflect', pad_width=self._padding)

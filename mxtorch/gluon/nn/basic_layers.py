"""Basic layers of mx.gluon.nn: containers, Dense, Dropout, normalisation, Embedding, lambdas."""
import warnings

import numpy as np

from ... import ndarray, symbol
from ..block import Block, HybridBlock
from ..utils import _indent
from .activations import Activation

__all__ = ['Sequential', 'HybridSequential', 'Dense', 'Dropout', 'Embedding', 'BatchNorm',
           'BatchNormReLU', 'InstanceNorm', 'LayerNorm', 'GroupNorm', 'Flatten', 'Lambda',
           'HybridLambda', 'Identity']


def _sequential_repr(block):
    modstr = '\n'.join('  (%s): %s' % (key, _indent(repr(child), 2))
                       for key, child in block._children.items())
    return '%s(\n%s\n)' % (block.__class__.__name__, modstr)


def _run_in_order(children, x, args):
    for child in children:
        x = child(x, *args)
        args = []
        if isinstance(x, (tuple, list)):
            args = x[1:]
            x = x[0]
    if args:
        x = tuple([x] + list(args))
    return x


class _Chain:
    """What Sequential and HybridSequential share: add, indexing/slicing, len and repr."""

    def add(self, *blocks):
        for block in blocks:
            self.register_child(block)

    def __repr__(self):
        return _sequential_repr(self)

    def __getitem__(self, key):
        layers = list(self._children.values())[key]
        if isinstance(layers, list):
            net = type(self)(prefix=self._prefix)
            with net.name_scope():
                net.add(*layers)
            return net
        return layers

    def __len__(self):
        return len(self._children)


class Sequential(_Chain, Block):
    """Children run one after another."""

    def forward(self, x, *args):
        return _run_in_order(self._children.values(), x, args)

    def hybridize(self, active=True, **kwargs):
        if self._children and all(isinstance(c, HybridBlock) for c in self._children.values()):
            warnings.warn("All children of this Sequential layer '%s' are HybridBlocks. Consider "
                          'using HybridSequential for the best performance.' % self.prefix,
                          stacklevel=2)
        super().hybridize(active, **kwargs)


class HybridSequential(_Chain, HybridBlock):
    """Children (HybridBlocks) run one after another; hybridizable as a whole."""

    def hybrid_forward(self, F, x, *args):
        return _run_in_order(self._children.values(), x, args)


class Dense(HybridBlock):
    """activation(dot(x, weight.T) + bias); x is flattened to 2-d first unless flatten=False
    (then the last axis is transformed). in_units=0 defers the weight's shape to the first
    input."""

    def __init__(self, units, activation=None, use_bias=True, flatten=True, dtype='float32',
                 weight_initializer=None, bias_initializer='zeros', in_units=0, **kwargs):
        super().__init__(**kwargs)
        self._flatten = flatten
        with self.name_scope():
            self._units = units
            self._in_units = in_units
            self.weight = self.params.get('weight', shape=(units, in_units),
                                          init=weight_initializer, dtype=dtype,
                                          allow_deferred_init=True)
            if use_bias:
                self.bias = self.params.get('bias', shape=(units,), init=bias_initializer,
                                            dtype=dtype, allow_deferred_init=True)
            else:
                self.bias = None
            self.act = Activation(activation, prefix=activation + '_') \
                if activation is not None else None

    def hybrid_forward(self, F, x, weight, bias=None):
        out = F.FullyConnected(x, weight, bias, no_bias=bias is None, num_hidden=self._units,
                               flatten=self._flatten, name='fwd')
        if self.act is not None:
            out = self.act(out)
        return out

    def __repr__(self):
        shape = self.weight.shape
        return '%s(%s -> %s, %s)' % (self.__class__.__name__, shape[1] if shape[1] else None,
                                     shape[0], self.act if self.act else 'linear')


class Dropout(HybridBlock):
    """Zero elements with probability `rate` while training (scaling the rest by
    1/(1-rate)); `axes` share one mask."""

    def __init__(self, rate, axes=(), **kwargs):
        super().__init__(**kwargs)
        self._rate = rate
        self._axes = axes

    def hybrid_forward(self, F, x):
        if self._rate > 0:
            return F.Dropout(x, p=self._rate, axes=self._axes, name='fwd', cudnn_off=False)
        return F.identity(x)

    def __repr__(self):
        return '%s(p = %s, axes=%s)' % (self.__class__.__name__, self._rate, self._axes)


class _BatchNorm(HybridBlock):
    """What BatchNorm and BatchNormReLU share: gamma/beta over `axis`, running statistics
    (running_mean/running_var, updated while training); with `fuse_relu` the graph node is
    `_contrib_BatchNormWithReLU` (BatchNorm then relu), as MXNet's."""

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False, fuse_relu=False, beta_initializer='zeros',
                 gamma_initializer='ones', running_mean_initializer='zeros',
                 running_variance_initializer='ones', in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {'axis': axis, 'eps': epsilon, 'momentum': momentum,
                        'fix_gamma': not scale, 'use_global_stats': use_global_stats}
        self._axis = axis
        self.fuse_relu = fuse_relu
        if in_channels != 0:
            self.in_channels = in_channels
        with self.name_scope():
            self.gamma = self.params.get('gamma', grad_req='write' if scale else 'null',
                                         shape=(in_channels,), init=gamma_initializer,
                                         allow_deferred_init=True, differentiable=scale)
            self.beta = self.params.get('beta', grad_req='write' if center else 'null',
                                        shape=(in_channels,), init=beta_initializer,
                                        allow_deferred_init=True, differentiable=center)
            self.running_mean = self.params.get('running_mean', grad_req='null',
                                                shape=(in_channels,),
                                                init=running_mean_initializer,
                                                allow_deferred_init=True, differentiable=False)
            self.running_var = self.params.get('running_var', grad_req='null',
                                               shape=(in_channels,),
                                               init=running_variance_initializer,
                                               allow_deferred_init=True, differentiable=False)

    def cast(self, dtype):
        if np.dtype(dtype).name == 'float16':
            dtype = 'float32'
        super().cast(dtype)

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        batch_norm = F.contrib.BatchNormWithReLU if self.fuse_relu else F.BatchNorm
        return batch_norm(x, gamma, beta, running_mean, running_var, name='fwd',
                          **self._kwargs)

    def __repr__(self):
        in_channels = self.gamma.shape[0]
        content = ', '.join('%s=%r' % (k, v) for k, v in self._kwargs.items())
        return '%s(%s, in_channels=%s)' % (self.__class__.__name__, content,
                                           in_channels if in_channels else None)


class BatchNorm(_BatchNorm):
    """Batch normalisation over `axis` with learnt gamma/beta and running statistics
    (running_mean/running_var, updated while training)."""

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False, beta_initializer='zeros', gamma_initializer='ones',
                 running_mean_initializer='zeros', running_variance_initializer='ones',
                 in_channels=0, **kwargs):
        super().__init__(axis=axis, momentum=momentum, epsilon=epsilon, center=center,
                         scale=scale, use_global_stats=use_global_stats, fuse_relu=False,
                         beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
                         running_mean_initializer=running_mean_initializer,
                         running_variance_initializer=running_variance_initializer,
                         in_channels=in_channels, **kwargs)


class BatchNormReLU(_BatchNorm):
    """BatchNorm followed by relu, one `_contrib_BatchNormWithReLU` node (prefix
    `batchnormrelu<N>_`, parameters gamma/beta/running_mean/running_var as BatchNorm's)."""

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False, beta_initializer='zeros', gamma_initializer='ones',
                 running_mean_initializer='zeros', running_variance_initializer='ones',
                 in_channels=0, **kwargs):
        super().__init__(axis=axis, momentum=momentum, epsilon=epsilon, center=center,
                         scale=scale, use_global_stats=use_global_stats, fuse_relu=True,
                         beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
                         running_mean_initializer=running_mean_initializer,
                         running_variance_initializer=running_variance_initializer,
                         in_channels=in_channels, **kwargs)


class Embedding(HybridBlock):
    """Rows of a learnt (input_dim, output_dim) table picked by integer indices."""

    def __init__(self, input_dim, output_dim, dtype='float32', weight_initializer=None,
                 sparse_grad=False, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {'input_dim': input_dim, 'output_dim': output_dim, 'dtype': dtype,
                        'sparse_grad': sparse_grad}
        with self.name_scope():
            self.weight = self.params.get('weight', shape=(input_dim, output_dim),
                                          init=weight_initializer, dtype=dtype,
                                          allow_deferred_init=True,
                                          grad_stype='row_sparse' if sparse_grad else 'default')

    def hybrid_forward(self, F, x, weight):
        return F.Embedding(x, weight, name='fwd', **self._kwargs)

    def __repr__(self):
        return '%s(%s -> %s, %s)' % (self.__class__.__name__, self._kwargs['input_dim'],
                                     self._kwargs['output_dim'], self._kwargs['dtype'])


class Flatten(HybridBlock):
    """(N, ...) -> (N, prod(...))."""

    def hybrid_forward(self, F, x):
        return F.Flatten(x)

    def __repr__(self):
        return self.__class__.__name__


class _Norm(HybridBlock):
    """gamma/beta over `in_channels` (deferred when 0)."""

    def _gamma_beta(self, center, scale, beta_initializer, gamma_initializer, in_channels):
        with self.name_scope():
            self.gamma = self.params.get('gamma', grad_req='write' if scale else 'null',
                                         shape=(in_channels,), init=gamma_initializer,
                                         allow_deferred_init=True)
            self.beta = self.params.get('beta', grad_req='write' if center else 'null',
                                        shape=(in_channels,), init=beta_initializer,
                                        allow_deferred_init=True)

    def __repr__(self):
        in_channels = self.gamma.shape[0]
        content = ', '.join('%s=%r' % (k, v) for k, v in self._kwargs.items())
        return '%s(%s, in_channels=%s)' % (self.__class__.__name__, content, in_channels)


class InstanceNorm(_Norm):
    """Normalise each sample and channel over the remaining axes."""

    def __init__(self, axis=1, epsilon=1e-5, center=True, scale=False,
                 beta_initializer='zeros', gamma_initializer='ones', in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {'eps': epsilon, 'axis': axis, 'center': center, 'scale': scale}
        self._axis = axis
        self._epsilon = epsilon
        self._gamma_beta(center, scale, beta_initializer, gamma_initializer, in_channels)

    def hybrid_forward(self, F, x, gamma, beta):
        if self._axis == 1:
            return F.InstanceNorm(x, gamma, beta, name='fwd', eps=self._epsilon)
        x = x.swapaxes(1, self._axis)
        return F.InstanceNorm(x, gamma, beta, name='fwd',
                              eps=self._epsilon).swapaxes(1, self._axis)


class LayerNorm(_Norm):
    """Normalise over `axis` (the last by default) per sample."""

    def __init__(self, axis=-1, epsilon=1e-5, center=True, scale=True,
                 beta_initializer='zeros', gamma_initializer='ones', in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {'eps': epsilon, 'axis': axis, 'center': center, 'scale': scale}
        self._axis = axis
        self._epsilon = epsilon
        self._gamma_beta(center, scale, beta_initializer, gamma_initializer, in_channels)

    def hybrid_forward(self, F, data, gamma, beta):
        return F.LayerNorm(data, gamma=gamma, beta=beta, axis=self._axis, eps=self._epsilon)


class GroupNorm(_Norm):
    """Normalise over groups of channels per sample."""

    def __init__(self, num_groups=1, epsilon=1e-5, center=True, scale=True,
                 beta_initializer='zeros', gamma_initializer='ones', in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {'eps': epsilon, 'num_groups': num_groups, 'center': center,
                        'scale': scale}
        self._num_groups = num_groups
        self._epsilon = epsilon
        self._gamma_beta(center, scale, beta_initializer, gamma_initializer, in_channels)

    def hybrid_forward(self, F, data, gamma, beta):
        return F.GroupNorm(data, gamma=gamma, beta=beta, num_groups=self._num_groups,
                           eps=self._epsilon)


class Lambda(Block):
    """A Block around a function (or the name of an mx.nd function)."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            assert hasattr(ndarray, function), \
                'Function name %s is not found in ndarray.' % function
            self._func_impl = getattr(ndarray, function)
        elif callable(function):
            self._func_impl = function
        else:
            raise ValueError('Unrecognized function in lambda: %s of type %s'
                             % (function, type(function)))

    def forward(self, *args):
        return self._func_impl(*args)

    def __repr__(self):
        return '%s(%s)' % (self.__class__.__name__, self._func_impl.__name__)


class HybridLambda(HybridBlock):
    """A HybridBlock around function(F, x, ...) (or the name of a function in both mx.nd and
    mx.sym)."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            assert hasattr(ndarray, function) and hasattr(symbol, function), \
                'Function name %s is not found in symbol/ndarray.' % function
            funcs = {symbol: getattr(symbol, function), ndarray: getattr(ndarray, function)}
            self._func = lambda F, *args: funcs[F](*args)
            self._func_name = function
        elif callable(function):
            self._func = function
            self._func_name = function.__name__
        else:
            raise ValueError('Unrecognized function in lambda: %s of type %s'
                             % (function, type(function)))

    def hybrid_forward(self, F, x, *args):
        return self._func(F, x, *args)

    def __repr__(self):
        return '%s(%s)' % (self.__class__.__name__, self._func_name)


class Identity(HybridBlock):
    """Returns its input."""

    def hybrid_forward(self, F, x):
        return x

"""Extra layers of mx.gluon.contrib.nn: parallel containers, Identity, SparseEmbedding,
SyncBatchNorm and the PixelShuffle upsamplers."""
import warnings

from .... import context, ndarray
from ...block import Block, HybridBlock
from ...nn import BatchNorm, HybridSequential, Sequential

__all__ = ['Concurrent', 'HybridConcurrent', 'Identity', 'SparseEmbedding', 'SyncBatchNorm',
           'PixelShuffle1D', 'PixelShuffle2D', 'PixelShuffle3D']


class Concurrent(Sequential):
    """Every child on the same input; the outputs concatenated along `axis`."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def forward(self, x):
        return ndarray.concat(*[block(x) for block in self._children.values()], dim=self.axis)


class HybridConcurrent(HybridSequential):
    """Concurrent of HybridBlocks (hybridizable)."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def hybrid_forward(self, F, x):
        return F.concat(*[block(x) for block in self._children.values()], dim=self.axis)


class Identity(HybridBlock):
    """Returns its input (a placeholder branch, e.g. a residual shortcut in a Concurrent)."""

    def hybrid_forward(self, F, x):
        return x


class SparseEmbedding(Block):
    """Embedding whose weight is stored row_sparse and gets a row_sparse gradient: only the
    rows looked up are pulled and updated."""

    def __init__(self, input_dim, output_dim, dtype='float32', weight_initializer=None,
                 **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {'input_dim': input_dim, 'output_dim': output_dim, 'dtype': dtype,
                        'sparse_grad': True}
        self.weight = self.params.get('weight', shape=(input_dim, output_dim),
                                      init=weight_initializer, dtype=dtype,
                                      grad_stype='row_sparse', stype='row_sparse')

    def forward(self, x):
        weight = self.weight.row_sparse_data(x)
        return ndarray.Embedding(x, weight, name='fwd', **self._kwargs)

    def __repr__(self):
        return '%s(%d -> %d, %s)' % (self.__class__.__name__, self._kwargs['input_dim'],
                                     self._kwargs['output_dim'], self._kwargs['dtype'])


class SyncBatchNorm(BatchNorm):
    """BatchNorm whose statistics are meant to be shared by `num_devices` devices (the
    contrib.SyncBatchNorm operator; on one process it is BatchNorm over axis 1)."""

    def __init__(self, in_channels=0, num_devices=None, momentum=0.9, epsilon=1e-5,
                 center=True, scale=True, use_global_stats=False, beta_initializer='zeros',
                 gamma_initializer='ones', running_mean_initializer='zeros',
                 running_variance_initializer='ones', **kwargs):
        super().__init__(axis=1, momentum=momentum, epsilon=epsilon, center=center,
                         scale=scale, use_global_stats=use_global_stats,
                         beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
                         running_mean_initializer=running_mean_initializer,
                         running_variance_initializer=running_variance_initializer,
                         in_channels=in_channels, **kwargs)
        if num_devices is None:
            warnings.warn('Caution using SyncBatchNorm: if not using all the GPUs, please '
                          'mannually set num_devices', UserWarning)
            num_devices = max(context.num_gpus(), 1)
        self._kwargs = {'eps': epsilon, 'momentum': momentum, 'fix_gamma': not scale,
                        'use_global_stats': use_global_stats, 'ndev': num_devices,
                        'key': self.prefix}

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        return F.contrib.SyncBatchNorm(x, gamma, beta, running_mean, running_var, name='fwd',
                                       **self._kwargs)


def _factors(factor, n):
    try:
        return (int(factor),) * n
    except TypeError:
        factors = tuple(int(f) for f in factor)
        assert len(factors) == n, 'wrong length {}'.format(len(factors))
        return factors


class PixelShuffle1D(HybridBlock):
    """(N, C*f, W) -> (N, C, W*f): channel groups interleaved along the width."""

    def __init__(self, factor):
        super().__init__()
        self._factor = int(factor)

    def hybrid_forward(self, F, x):
        f = self._factor
        x = F.reshape(x, (0, -4, -1, f, 0))           # N, C, f, W
        x = F.transpose(x, (0, 1, 3, 2))              # N, C, W, f
        return F.reshape(x, (0, 0, -3))               # N, C, W*f

    def __repr__(self):
        return '%s(%s)' % (self.__class__.__name__, self._factor)


class PixelShuffle2D(HybridBlock):
    """(N, C*f1*f2, H, W) -> (N, C, H*f1, W*f2)."""

    def __init__(self, factor):
        super().__init__()
        self._factors = _factors(factor, 2)

    def hybrid_forward(self, F, x):
        f1, f2 = self._factors
        x = F.reshape(x, (0, -4, -1, f1 * f2, 0, 0))  # N, C, f1*f2, H, W
        x = F.reshape(x, (0, 0, -4, f1, f2, 0, 0))    # N, C, f1, f2, H, W
        x = F.transpose(x, (0, 1, 4, 2, 5, 3))        # N, C, H, f1, W, f2
        return F.reshape(x, (0, 0, -3, -3))           # N, C, H*f1, W*f2

    def __repr__(self):
        return '%s(%s)' % (self.__class__.__name__, self._factors)


class PixelShuffle3D(HybridBlock):
    """(N, C*f1*f2*f3, D, H, W) -> (N, C, D*f1, H*f2, W*f3)."""

    def __init__(self, factor):
        super().__init__()
        self._factors = _factors(factor, 3)

    def hybrid_forward(self, F, x):
        f1, f2, f3 = self._factors
        x = F.reshape(x, (0, -4, -1, f1 * f2 * f3, 0, 0, 0))   # N, C, f1*f2*f3, D, H, W
        x = F.reshape(x, (0, 0, -4, f1, f2 * f3, 0, 0, 0))     # N, C, f1, f2*f3, D, H, W
        x = F.reshape(x, (0, 0, 0, -4, f2, f3, 0, 0, 0))       # N, C, f1, f2, f3, D, H, W
        x = F.transpose(x, (0, 1, 5, 2, 6, 3, 7, 4))           # N, C, D, f1, H, f2, W, f3
        return F.reshape(x, (0, 0, -3, -3, -3))                # N, C, D*f1, H*f2, W*f3

    def __repr__(self):
        return '%s(%s)' % (self.__class__.__name__, self._factors)

"""mx.npx.random: MXNet's extra samplers for mx.np arrays (torch's generator)."""
import numpy as np
import torch

from ..base import integer_types
from ..context import current_context
from ..ndarray.ndarray import NDArray
from ..numpy.multiarray import wrap
from ..numpy.random import _size


def seed(seed_state, ctx='all'):
    from .. import random as _random
    _random.seed(seed_state, ctx)


def bernoulli(prob=None, logit=None, size=None, dtype=None, ctx=None, out=None):
    if (prob is None) == (logit is None):
        raise ValueError('bernoulli: give exactly one of prob and logit')
    ctx = ctx or current_context()
    p = prob if logit is None else None
    if p is None:
        p = torch.sigmoid(logit._tensor) if isinstance(logit, NDArray) else torch.sigmoid(
            torch.tensor(float(logit)))
    elif isinstance(p, NDArray):
        p = p._tensor
    else:
        p = torch.tensor(float(p))
    shape = _size(size, p)
    result = torch.bernoulli(p.to(ctx.torch_device, torch.float32).expand(shape))
    from ..base import torch_dtype
    result = result.to(torch_dtype(dtype if dtype is not None else 'float32'))
    if out is not None:
        out._tensor.copy_(result)
        return out
    return wrap(result, ctx)


def _batched(name, sampler, names, first, second, batch_shape, dtype, ctx):
    """`sampler` (mx.np.random's) drawing batch_shape + broadcast(first, second).shape values,
    after MXNet's checks: a float dtype, parameter shapes that broadcast, and (normal_n) a
    scale that is not negative."""
    from ..base import MXNetError
    dtype = 'float32' if dtype is None else dtype
    if str(np.dtype(dtype)) not in ('float16', 'float32', 'float64'):
        raise MXNetError("%s: Invalid Input: %r, valid values are: {'float16', 'float32', "
                         "'float64'} (dtype)" % (name, str(np.dtype(dtype))))
    if batch_shape is None or batch_shape == ():
        batch_shape = ()
    elif isinstance(batch_shape, integer_types):
        batch_shape = (int(batch_shape),)
    else:
        batch_shape = tuple(int(s) for s in batch_shape)
    shapes = [tuple(v.shape) if isinstance(v, NDArray) else () for v in (first, second)]
    try:
        param_shape = tuple(torch.broadcast_shapes(*shapes))
    except RuntimeError:
        raise MXNetError('%s: operands could not be broadcast together with shapes %s (%s) and '
                         '%s (%s)' % (name, shapes[0], names[0], shapes[1], names[1])) from None
    if name == 'normal_n':
        scale = second.asnumpy() if isinstance(second, NDArray) else np.asarray(second)
        if (scale < 0).any():
            raise ValueError('normal_n: scale < 0 (got %s)' % (second,))
    return sampler(first, second, size=batch_shape + param_shape, dtype=dtype, ctx=ctx)


def uniform_n(low=0.0, high=1.0, batch_shape=None, dtype=None, ctx=None):
    """Uniform draws in [low, high): batch_shape + broadcast(low, high).shape of them (low and
    high numbers or arrays); dtype float16/float32 (default)/float64."""
    from ..numpy.random import uniform
    return _batched('uniform_n', uniform, ('low', 'high'), low, high, batch_shape, dtype, ctx)


def normal_n(loc=0.0, scale=1.0, batch_shape=None, dtype=None, ctx=None):
    """Normal draws of mean loc and standard deviation scale: batch_shape +
    broadcast(loc, scale).shape of them (numbers or arrays); dtype float16/float32
    (default)/float64."""
    from ..numpy.random import normal
    return _batched('normal_n', normal, ('loc', 'scale'), loc, scale, batch_shape, dtype, ctx)

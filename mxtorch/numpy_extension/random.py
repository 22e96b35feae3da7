"""mx.npx.random: MXNet's extra samplers for mx.np arrays (torch's generator)."""
import torch

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

"""mx.np.random: NumPy's sampling functions on torch's generator (seed with mx.random.seed or
mx.np.random.seed). The streams are torch's, not MXNet's: the same seed gives other numbers."""
import numpy as _onp
import torch

from ..base import torch_dtype, integer_types
from ..context import current_context
from ..ndarray.ndarray import NDArray
from .multiarray import wrap, _grad_scope


def seed(seed_state, ctx='all'):
    from .. import random as _random
    _random.seed(seed_state, ctx)


def _param(value, device, dtype):
    if isinstance(value, NDArray):
        return value._tensor.to(device, dtype)
    return torch.as_tensor(_onp.asarray(value), dtype=dtype, device=device)


def _size(size, *params):
    if size is None:
        return tuple(torch.broadcast_shapes(*[tuple(p.shape) for p in params])) if params else ()
    return (int(size),) if isinstance(size, integer_types) else tuple(int(s) for s in size)


def _finish(t, ctx, out):
    if out is not None:
        out._tensor.copy_(t)
        return out
    return wrap(t, ctx)


def _continuous(name, sample, defaults):
    """A sampler of `name` whose parameters (names and defaults in `defaults`) may be scalars
    or arrays; `sample(size, *params)` draws with torch."""
    names = list(defaults)

    def func(*args, size=None, dtype=None, ctx=None, out=None, **kwargs):
        values = dict(defaults)
        values.update(zip(names, args))
        extra = list(args[len(names):])       # NumPy's order: the parameters, then size
        if len(extra) > 4:
            raise TypeError('%s() takes at most %d positional arguments' % (name, len(names) + 4))
        size, dtype, ctx, out = (extra + [size, dtype, ctx, out][len(extra):])[:4]
        for key in list(kwargs):
            if key not in values:
                raise TypeError('%s() got an unexpected keyword argument %r' % (name, key))
            values[key] = kwargs.pop(key)
        ctx = ctx or next((v.context for v in values.values() if isinstance(v, NDArray)),
                          current_context())
        dt = torch_dtype(dtype if dtype is not None else 'float32')
        params = [_param(values[n], ctx.torch_device, dt) for n in names]
        shape = _size(size, *params)
        with _grad_scope():
            result = sample(shape, ctx.torch_device, *[p.expand(shape) if p.dim() else p
                                                       for p in params]).to(dt)
        return _finish(result, ctx, out)
    func.__name__ = func.__qualname__ = name
    func.__doc__ = 'Samples of the %s distribution (parameters %s), shape `size`.' % (
        name, ', '.join(names))
    return func


def _rand(shape, device):
    return torch.rand(shape, device=device)


uniform = _continuous('uniform', lambda s, d, lo, hi: lo + (hi - lo) * _rand(s, d),
                      {'low': 0.0, 'high': 1.0})
normal = _continuous('normal', lambda s, d, mu, sd: mu + sd * torch.randn(s, device=d),
                     {'loc': 0.0, 'scale': 1.0})
lognormal = _continuous('lognormal', lambda s, d, mu, sd: torch.exp(
    mu + sd * torch.randn(s, device=d)), {'mean': 0.0, 'sigma': 1.0})
exponential = _continuous('exponential', lambda s, d, scale: -scale * torch.log1p(
    -_rand(s, d)), {'scale': 1.0})
gamma = _continuous('gamma', lambda s, d, k, theta: torch._standard_gamma(
    k.expand(s).contiguous()) * theta, {'shape': 1.0, 'scale': 1.0})
beta = _continuous('beta', lambda s, d, a, b: torch.distributions.Beta(
    a.expand(s), b.expand(s)).sample(), {'a': 1.0, 'b': 1.0})
logistic = _continuous('logistic', lambda s, d, mu, sc: mu + sc * torch.logit(_rand(s, d)),
                       {'loc': 0.0, 'scale': 1.0})
gumbel = _continuous('gumbel', lambda s, d, mu, sc: mu - sc * torch.log(
    -torch.log(_rand(s, d))), {'loc': 0.0, 'scale': 1.0})
laplace = _continuous('laplace', lambda s, d, mu, sc: torch.distributions.Laplace(
    mu.expand(s), sc.expand(s)).sample(), {'loc': 0.0, 'scale': 1.0})
rayleigh = _continuous('rayleigh', lambda s, d, sc: sc * torch.sqrt(
    -2 * torch.log1p(-_rand(s, d))), {'scale': 1.0})
weibull = _continuous('weibull', lambda s, d, a: torch.pow(-torch.log1p(-_rand(s, d)), 1 / a),
                      {'a': 1.0})
pareto = _continuous('pareto', lambda s, d, a: torch.pow(1 - _rand(s, d), -1 / a) - 1,
                     {'a': 1.0})
power = _continuous('power', lambda s, d, a: torch.pow(_rand(s, d), 1 / a), {'a': 1.0})
chisquare = _continuous('chisquare', lambda s, d, df: 2 * torch._standard_gamma(
    (df / 2).expand(s).contiguous()), {'df': 1.0})


def rand(*size, **kwargs):
    return uniform(size=size, **kwargs)


def randn(*size, **kwargs):
    return normal(size=size, **kwargs)


def randint(low, high=None, size=None, dtype=None, ctx=None, out=None):
    if high is None:
        low, high = 0, low
    ctx = ctx or current_context()
    t = torch.randint(int(low), int(high), _size(size), device=ctx.torch_device,
                      dtype=torch_dtype(dtype if dtype is not None else 'int64'))
    return _finish(t, ctx, out)


def choice(a, size=None, replace=True, p=None, ctx=None, out=None):
    ctx = ctx or (a.context if isinstance(a, NDArray) else current_context())
    n = int(a) if isinstance(a, integer_types) else a.shape[0]
    shape = _size(size)
    count = int(_onp.prod(shape)) if shape else 1
    if p is None:
        if replace:
            idx = torch.randint(0, n, (count,), device=ctx.torch_device)
        else:
            if count > n:
                raise ValueError('Cannot take a larger sample than population when '
                                 "'replace=False'")
            idx = torch.randperm(n, device=ctx.torch_device)[:count]
    else:
        weights = p._tensor if isinstance(p, NDArray) else torch.as_tensor(_onp.asarray(p))
        idx = torch.multinomial(weights.to(ctx.torch_device, torch.float64), count,
                                replacement=replace)
    idx = idx.reshape(shape)
    result = idx if isinstance(a, integer_types) else a._tensor[idx]
    return _finish(result, ctx, out)


def shuffle(x):
    """Shuffle `x` in place along its first axis."""
    with torch.no_grad():
        perm = torch.randperm(x.shape[0], device=x._tensor.device)
        x._tensor.copy_(x._tensor[perm])


def permutation(x):
    if isinstance(x, integer_types):
        return wrap(torch.randperm(int(x), device=current_context().torch_device))
    result = x.copy()
    shuffle(result)
    return result


def multinomial(n, pvals, size=None):
    probs = pvals._tensor if isinstance(pvals, NDArray) else torch.as_tensor(
        _onp.asarray(pvals), dtype=torch.float64)
    shape = _size(size)
    dist = torch.distributions.Multinomial(int(n), probs=probs.double())
    return wrap(dist.sample(shape).to(torch.int64))


def multivariate_normal(mean, cov, size=None, check_valid=None, tol=None):
    m = mean._tensor if isinstance(mean, NDArray) else torch.as_tensor(_onp.asarray(mean))
    c = cov._tensor if isinstance(cov, NDArray) else torch.as_tensor(_onp.asarray(cov))
    dist = torch.distributions.MultivariateNormal(m.double(), c.double())
    return wrap(dist.sample(_size(size)).to(m.dtype if m.is_floating_point() else torch.float32))

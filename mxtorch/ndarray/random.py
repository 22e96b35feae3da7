"""mx.nd.random: sampling functions (torch's generator; seed with mx.random.seed)."""
from ..base import MXNetError
from ..ops.registry import get_op
from .ndarray import NDArray, invoke_parsed


def _sample(op_name, ctx, out, **params):
    op = get_op(op_name)
    p = op.parse_params({k: v for k, v in params.items() if v is not None})
    return invoke_parsed(op, p, [], out=out, ctx=ctx)


def _shape_of(shape, out):
    if shape is None and out is not None:
        return out.shape
    return shape if shape is not None else (1,)


def _dispatch(name, names, values, shape, dtype, ctx, out):
    """Scalar parameters -> _random_<name>; NDArray parameters -> _sample_<name> (all must be
    NDArrays then, as in MXNet)."""
    if any(isinstance(v, NDArray) for v in values):
        if not all(isinstance(v, NDArray) for v in values):
            raise MXNetError('Distribution parameters must all have the same type, but got %s'
                             % ', '.join('%s=%s' % (n, type(v).__name__)
                                         for n, v in zip(names, values)))
        op = get_op('_sample_' + name)
        params = {'shape': () if shape is None else shape}
        if dtype is not None:
            params['dtype'] = dtype
        return invoke_parsed(op, op.parse_params(params), list(values), out=out)
    return _sample('_random_' + name, ctx, out, shape=_shape_of(shape, out), dtype=dtype,
                   **dict(zip(names, values)))


def uniform(low=0, high=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    return _dispatch('uniform', ('low', 'high'), (low, high), shape, dtype, ctx, out)


def normal(loc=0, scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    return _dispatch('normal', ('loc', 'scale'), (loc, scale), shape, dtype, ctx, out)


def randn(*shape, **kwargs):
    """Normal draws of the given shape: randn(2, 3, loc=0, scale=1, dtype=..., ctx=...)."""
    loc = kwargs.pop('loc', 0)
    scale = kwargs.pop('scale', 1)
    return normal(loc, scale, shape=shape, **kwargs)


def exponential(scale=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Exponential draws of mean `scale` (MXNet's operators take the rate lam = 1/scale)."""
    lam = 1.0 / scale
    return _dispatch('exponential', ('lam',), (lam,), shape, dtype, ctx, out)


def gamma(alpha=1, beta=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Gamma draws of shape alpha and scale beta."""
    return _dispatch('gamma', ('alpha', 'beta'), (alpha, beta), shape, dtype, ctx, out)


def poisson(lam=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    return _dispatch('poisson', ('lam',), (lam,), shape, dtype, ctx, out)


def negative_binomial(k=1, p=1, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    """Failures before the k-th success, with success probability p."""
    return _dispatch('negative_binomial', ('k', 'p'), (k, p), shape, dtype, ctx, out)


def generalized_negative_binomial(mu=1, alpha=1, shape=None, dtype=None, ctx=None, out=None,
                                  **kwargs):
    """Counts of mean mu and variance mu + alpha * mu^2."""
    return _dispatch('generalized_negative_binomial', ('mu', 'alpha'), (mu, alpha), shape,
                     dtype, ctx, out)


def randint(low, high, shape=None, dtype=None, ctx=None, out=None, **kwargs):
    return _sample('_random_randint', ctx, out, low=low, high=high, shape=_shape_of(shape, out),
                   dtype=dtype)


def multinomial(data, shape=(), get_prob=False, out=None, dtype='int32', **kwargs):
    op = get_op('_sample_multinomial')
    p = op.parse_params({'shape': shape, 'get_prob': get_prob, 'dtype': dtype})
    return invoke_parsed(op, p, [data], out=out)


def shuffle(data, **kwargs):
    op = get_op('_shuffle')
    return invoke_parsed(op, op.parse_params({}), [data])


def seed(seed_state, ctx='all'):
    from ..random import seed as _seed
    _seed(seed_state, ctx)

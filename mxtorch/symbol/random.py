"""mx.sym.random: symbolic samplers."""
from .register import create


def _dispatch(name, names, values, shape, dtype, kwargs):
    """Scalar parameters -> _random_<name>; Symbol parameters -> _sample_<name>."""
    from ..base import MXNetError
    from .symbol import Symbol
    if any(isinstance(v, Symbol) for v in values):
        if not all(isinstance(v, Symbol) for v in values):
            raise MXNetError('Distribution parameters must all have the same type, but got %s'
                             % ', '.join('%s=%s' % (n, type(v).__name__)
                                         for n, v in zip(names, values)))
        params = dict(kwargs)
        if shape is not None:
            params['shape'] = shape
        if dtype is not None:
            params['dtype'] = dtype
        return create('_sample_' + name, list(values), params, func_name='_sample_' + name)
    return create('_random_' + name, [], dict(kwargs, shape=shape, dtype=dtype,
                                              **dict(zip(names, values))),
                  func_name='_random_' + name)


def uniform(low=0, high=1, shape=None, dtype=None, **kwargs):
    return _dispatch('uniform', ('low', 'high'), (low, high), shape, dtype, kwargs)


def normal(loc=0, scale=1, shape=None, dtype=None, **kwargs):
    return _dispatch('normal', ('loc', 'scale'), (loc, scale), shape, dtype, kwargs)


def randn(*shape, **kwargs):
    """Normal draws of the given shape: randn(2, 3, loc=0, scale=1, dtype=...); loc and scale
    numbers (-> _random_normal) or both Symbols (-> _sample_normal, one draw of `shape` each)."""
    from .symbol import Symbol
    loc = kwargs.pop('loc', 0)
    scale = kwargs.pop('scale', 1)
    dtype = kwargs.pop('dtype', None)
    for name, value in (('loc', loc), ('scale', scale)):
        if not isinstance(value, (int, float, Symbol)):
            raise AssertionError('randn: %s must be an int, a float or a Symbol, got %s'
                                 % (name, type(value).__name__))
    return normal(loc, scale, shape=shape, dtype=dtype, **kwargs)


def exponential(scale=1, shape=None, dtype=None, **kwargs):
    """Exponential draws of mean `scale` (the operators take the rate lam = 1/scale)."""
    return _dispatch('exponential', ('lam',), (1.0 / scale,), shape, dtype, kwargs)


def gamma(alpha=1, beta=1, shape=None, dtype=None, **kwargs):
    return _dispatch('gamma', ('alpha', 'beta'), (alpha, beta), shape, dtype, kwargs)


def poisson(lam=1, shape=None, dtype=None, **kwargs):
    return _dispatch('poisson', ('lam',), (lam,), shape, dtype, kwargs)


def negative_binomial(k=1, p=1, shape=None, dtype=None, **kwargs):
    return _dispatch('negative_binomial', ('k', 'p'), (k, p), shape, dtype, kwargs)


def generalized_negative_binomial(mu=1, alpha=1, shape=None, dtype=None, **kwargs):
    return _dispatch('generalized_negative_binomial', ('mu', 'alpha'), (mu, alpha), shape,
                     dtype, kwargs)


def randint(low, high, shape=None, dtype=None, **kwargs):
    return create('_random_randint', [], dict(kwargs, low=low, high=high, shape=shape,
                                              dtype=dtype), func_name='_random_randint')


def multinomial(data, shape=(), get_prob=False, dtype='int32', **kwargs):
    return create('_sample_multinomial', [data], dict(kwargs, shape=shape, get_prob=get_prob,
                                                      dtype=dtype), func_name='_sample_multinomial')


def shuffle(data, **kwargs):
    return create('_shuffle', [data], kwargs, func_name='_shuffle')

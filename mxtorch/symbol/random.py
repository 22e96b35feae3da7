"""mx.sym.random: symbolic samplers."""
from .register import create


def uniform(low=0, high=1, shape=None, dtype=None, **kwargs):
    return create('_random_uniform', [], dict(kwargs, low=low, high=high, shape=shape,
                                              dtype=dtype), func_name='_random_uniform')


def normal(loc=0, scale=1, shape=None, dtype=None, **kwargs):
    return create('_random_normal', [], dict(kwargs, loc=loc, scale=scale, shape=shape,
                                             dtype=dtype), func_name='_random_normal')


def randint(low, high, shape=None, dtype=None, **kwargs):
    return create('_random_randint', [], dict(kwargs, low=low, high=high, shape=shape,
                                              dtype=dtype), func_name='_random_randint')


def multinomial(data, shape=(), get_prob=False, dtype='int32', **kwargs):
    return create('_sample_multinomial', [data], dict(kwargs, shape=shape, get_prob=get_prob,
                                                      dtype=dtype), func_name='_sample_multinomial')


def shuffle(data, **kwargs):
    return create('_shuffle', [data], kwargs, func_name='_shuffle')

"""Exponential, gamma, Poisson, negative binomial and generalized negative binomial samplers
(_random_* with scalar parameters, _sample_* with array parameters, mx.nd.random.* and
mx.sym.random.*): names, shapes and dtypes as MXNet 1.9.1 gives them (checked against it when
written), and the distributions of the draws (moments, and chi-square tests for the discrete
ones), with fixed seeds."""
import math

import numpy as np
import pytest

import mxtorch as mx
from mxtorch import test_utils as tu

N = 200000


@pytest.fixture(autouse=True)
def _seed():
    mx.random.seed(1234)


def test_names_shapes_and_dtypes_follow_mxnet():
    nd = mx.nd
    assert nd.random.gamma(2, 3).shape == (1,)
    assert nd.random.poisson(3, shape=(2, 2)).dtype == np.float32
    assert nd.random.poisson(3, shape=(2,), dtype='float64').dtype == np.float64
    assert nd.random.negative_binomial(3, 0.4, shape=4).shape == (4,)
    alpha = nd.array([1, 2], dtype='float64')
    g = nd.random.gamma(alpha, nd.array([1, 1], dtype='float64'), shape=3)
    assert g.shape == (2, 3) and g.dtype == np.float32
    assert nd.random.exponential(nd.array([1, 2])).shape == (2,)
    assert nd._internal._sample_poisson(nd.array([[1, 2]]), shape=(3,)).shape == (1, 2, 3)
    assert nd.sample_generalized_negative_binomial(nd.array([2.0]), nd.array([0.5]),
                                                   shape=(5,)).shape == (1, 5)
    assert nd.random_negative_binomial(k=2, p=0.5, shape=(3,)).shape == (3,)
    with pytest.raises(mx.base.MXNetError):
        nd.random.gamma(nd.array([1.0]), 2.0)
    s = mx.sym.random.gamma(mx.sym.var('a'), mx.sym.var('b'), shape=(3,), name='g')
    assert s.list_arguments() == ['a', 'b'] and s.list_outputs() == ['g_output']
    assert s.infer_shape(a=(2,))[1] == [(2, 3)]
    assert s.infer_type(a=np.float64)[:2] == ([np.float64, np.float64], [np.float32])
    s = mx.sym.random.poisson(lam=2, shape=(3, 4))
    assert s.list_arguments() == [] and s.infer_shape()[1] == [(3, 4)]
    assert s.infer_type()[1] == [np.float32]
    # mx.nd.random.exponential takes the scale (mean); the operators the rate lam = 1/scale
    s = mx.sym.random.exponential(scale=2, shape=(3, 4))
    assert '"lam": "0.5"' in s.tojson()


def _moments(samples, mean, var, rel=0.03):
    samples = np.asarray(samples, dtype=np.float64).ravel()
    assert abs(samples.mean() - mean) < rel * abs(mean) + 1e-3, (samples.mean(), mean)
    assert abs(samples.var() - var) < 2 * rel * var + 1e-3, (samples.var(), var)


def test_continuous_moments_scalar_and_array_parameters():
    nd = mx.nd
    _moments(nd.random.exponential(2.0, shape=(N,)).asnumpy(), 2.0, 4.0)
    _moments(nd._internal._random_exponential(lam=4.0, shape=(N,)).asnumpy(), 0.25, 0.0625)
    _moments(nd.random.gamma(2.0, 3.0, shape=(N,)).asnumpy(), 6.0, 18.0)
    _moments(nd.random.gamma(0.5, 1.0, shape=(N,), dtype='float64').asnumpy(), 0.5, 0.5)
    alpha, beta = nd.array([0.7, 5.0]), nd.array([2.0, 0.5])
    draws = nd.random.gamma(alpha, beta, shape=(N,)).asnumpy()
    for i, (a, b) in enumerate([(0.7, 2.0), (5.0, 0.5)]):
        _moments(draws[i], a * b, a * b * b)
    draws = nd.random.exponential(nd.array([0.5, 3.0]), shape=(N,)).asnumpy()
    for i, scale in enumerate([0.5, 3.0]):
        _moments(draws[i], scale, scale ** 2)


def _chi_square(draws, pmf, nbuckets):
    """Chi-square over values 0..nbuckets-2 and a tail bucket (>= nbuckets-1)."""
    probs = [pmf(k) for k in range(nbuckets - 1)]
    probs.append(1.0 - sum(probs))
    gen = lambda n: np.minimum(draws(n), nbuckets - 1)   # noqa: E731
    tu.verify_generator(gen, list(range(nbuckets)), probs, nsamples=N, nrepeat=3)


def _poisson_pmf(lam):
    return lambda k: math.exp(k * math.log(lam) - lam - math.lgamma(k + 1))


def _nb_pmf(k, p):
    return lambda x: math.exp(math.lgamma(x + k) - math.lgamma(k) - math.lgamma(x + 1)
                              + k * math.log(p) + x * math.log1p(-p))


def test_poisson_distribution():
    nd = mx.nd
    _chi_square(lambda n: nd.random.poisson(3.5, shape=(n,)).asnumpy(), _poisson_pmf(3.5), 12)
    _chi_square(lambda n: nd.random.poisson(nd.array([0.5, 6.0]), shape=(n,)).asnumpy()[1],
                _poisson_pmf(6.0), 16)
    values = nd.random.poisson(3.5, shape=(1000,)).asnumpy()
    assert (values == np.round(values)).all() and values.min() >= 0


def test_negative_binomial_distributions():
    nd = mx.nd
    _chi_square(lambda n: nd.random.negative_binomial(3, 0.4, shape=(n,)).asnumpy(),
                _nb_pmf(3, 0.4), 16)
    _chi_square(lambda n: nd.random.negative_binomial(nd.array([3.0, 1.0]), nd.array([0.4, 0.7]),
                                                      shape=(n,)).asnumpy()[1],
                _nb_pmf(1, 0.7), 8)
    # generalized: mean mu, variance mu + alpha mu^2, i.e. NB(k=1/alpha, p=1/(1+alpha mu))
    mu, alpha = 2.0, 0.5
    _chi_square(lambda n: nd.random.generalized_negative_binomial(mu, alpha, shape=(n,)).asnumpy(),
                _nb_pmf(1 / alpha, 1 / (1 + alpha * mu)), 12)
    draws = nd.random.generalized_negative_binomial(nd.array([2.0, 4.0]), nd.array([0.0, 0.25]),
                                                    shape=(N,)).asnumpy()
    _moments(draws[0], 2.0, 2.0)                                 # alpha = 0: Poisson
    _moments(draws[1], 4.0, 4.0 + 0.25 * 16)


def test_seeded_draws_repeat():
    draws = []
    for _ in range(2):
        mx.random.seed(7)
        draws.append(mx.nd.random.gamma(2.0, 1.0, shape=(5,)).asnumpy().tolist() +
                     mx.nd.random.poisson(mx.nd.array([1.0, 9.0]), shape=3).asnumpy().ravel()
                     .tolist())
    assert draws[0] == draws[1]


def test_symbolic_sampling_binds_and_runs():
    lam = mx.sym.var('lam')
    s = mx.sym.random.poisson(lam, shape=(N // 10,))
    ex = s.bind(mx.cpu(), {'lam': mx.nd.array([2.0, 5.0])})
    out = ex.forward()[0].asnumpy()
    assert out.shape == (2, N // 10)
    _moments(out[1], 5.0, 5.0, rel=0.05)

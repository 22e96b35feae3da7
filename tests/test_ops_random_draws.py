"""_random_randint, _sample_multinomial and _shuffle: output names, shapes and dtypes as MXNet
1.9.1 gives them (checked against it when written), and the distributions of the draws
(chi-square tests from mx.test_utils)."""
import numpy as np
import pytest

import mxtorch as mx
from mxtorch import test_utils as tu


def test_names_shapes_and_dtypes_follow_mxnet():
    p = mx.nd.array([[0.1, 0.2, 0.7], [0.5, 0.5, 0.0]])
    assert mx.nd.sample_multinomial(p).shape == (2,)
    assert mx.nd.sample_multinomial(p, shape=4).dtype == np.int32
    samples, logp = mx.nd.sample_multinomial(p, shape=(2, 2), get_prob=True)
    assert samples.shape == logp.shape == (2, 2, 2) and logp.dtype == np.float32
    assert mx.nd.sample_multinomial(mx.nd.array([0.2, 0.8])).shape == (1,)
    assert mx.nd.sample_multinomial(mx.nd.array([0.2, 0.8]), shape=3,
                                    dtype='float32').dtype == np.float32
    sym = mx.sym.sample_multinomial(mx.sym.var('p'), shape=3, get_prob=True, name='m')
    assert sym.list_outputs() == ['m_output0', 'm_output1']
    assert sym.infer_shape(p=(2, 3))[1] == [(2, 3), (2, 3)]
    assert sym.infer_type(p=np.float32)[1] == [np.int32, np.float32]
    assert mx.nd.random.randint(0, 5, shape=(3,)).dtype == np.int32
    assert mx.nd.random.randint(-3, 5, shape=(2, 2), dtype='int64').dtype == np.int64
    assert mx.nd.random.randint(0, 5).shape == (1,)
    assert mx.sym.random.randint(0, 4, shape=(2, 3)).infer_type()[1] == [np.int32]
    assert mx.sym.shuffle(mx.sym.var('x'), name='s').infer_shape(x=(4, 2))[1] == [(4, 2)]


def test_randint_is_uniform_over_low_to_high():
    draws = lambda n: mx.nd.random.randint(-2, 3, shape=(n,)).asnumpy()   # noqa: E731
    values = draws(1000)
    assert values.min() >= -2 and values.max() <= 2
    tu.verify_generator(draws, [-2, -1, 0, 1, 2], [0.2] * 5, nsamples=20000, nrepeat=3)


def test_multinomial_follows_each_row_and_log_probabilities():
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])
    for row in range(2):
        draws = lambda n, r=row: mx.nd.sample_multinomial(                # noqa: E731
            mx.nd.array(probs), shape=n).asnumpy()[r]
        tu.verify_generator(draws, [0, 1, 2], list(probs[row]), nsamples=20000, nrepeat=3)
    samples, logp = mx.nd.sample_multinomial(mx.nd.array(probs), shape=50, get_prob=True)
    chosen = np.take_along_axis(probs, samples.asnumpy().astype(int), axis=1)
    np.testing.assert_allclose(logp.asnumpy(), np.log(chosen), rtol=1e-6)


def test_multinomial_log_probability_gradient():
    # d log p[k] / d p = 1/p[k] at every sampled k (the REINFORCE use of get_prob)
    probs = mx.nd.array([[0.2, 0.3, 0.5]])
    probs.attach_grad()
    with mx.autograd.record():
        samples, logp = mx.nd.sample_multinomial(probs, shape=6, get_prob=True)
    logp.backward()
    counts = np.bincount(samples.asnumpy().astype(int).ravel(), minlength=3)
    np.testing.assert_allclose(probs.grad.asnumpy()[0], counts / np.array([0.2, 0.3, 0.5]),
                               rtol=1e-5)


@pytest.mark.parametrize('dtype', ['float32', 'float64', 'int32'])
def test_shuffle_permutes_rows_uniformly(dtype):
    x = mx.nd.array(np.arange(8).reshape(4, 2), dtype=dtype)
    out = mx.nd.shuffle(x).asnumpy()
    assert out.dtype == np.dtype(dtype)
    assert sorted(map(tuple, out.tolist())) == sorted(map(tuple, x.asnumpy().tolist()))
    assert (out[:, 1] - out[:, 0] == 1).all()                 # rows move whole
    first = lambda n: np.array([mx.nd.random.shuffle(mx.nd.arange(3)).asnumpy()[0]  # noqa: E731
                                for _ in range(n)])
    tu.verify_generator(first, [0, 1, 2], [1 / 3] * 3, nsamples=600, nrepeat=3)

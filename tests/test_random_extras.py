"""Random samplers' ctx attribute and rand_zipfian (MXNet 1.9.1's behaviour)."""
import math

import numpy as np

import mxtorch as mx


def test_samplers_take_ctx_as_an_attribute():
    sym = mx.sym.random.uniform(shape=(2,), ctx=mx.cpu(), name='u')
    assert sym.attr_dict()['u']['ctx'] == 'cpu(0)'                 # as MXNet writes it
    out = sym.bind(mx.cpu(), {}).forward()[0].asnumpy()
    assert out.shape == (2,) and ((0 <= out) & (out < 1)).all()
    assert mx.sym.random.normal(shape=(3,), ctx=mx.cpu()).infer_shape()[1] == [(3,)]


def test_rand_zipfian_counts_match_the_log_uniform_law():
    mx.random.seed(7)
    true = mx.nd.array([1, 3, 7]).astype('int32')
    sampled, count_true, count_sampled = mx.nd.contrib.rand_zipfian(true, 1000, 20)
    assert sampled.dtype == np.int64 and sampled.shape == (1000,)
    law = lambda c: np.log((c + 2.0) / (c + 1.0)) / math.log(21) * 1000
    np.testing.assert_allclose(count_true.asnumpy(), law(np.array([1, 3, 7])))
    np.testing.assert_allclose(count_sampled.asnumpy(), law(sampled.asnumpy()))
    freq = np.bincount(sampled.asnumpy(), minlength=20)
    np.testing.assert_allclose(freq, law(np.arange(20)), atol=35)   # sampling noise
    outs = mx.sym.Group(list(mx.sym.contrib.rand_zipfian(mx.sym.var('t'), 5, 20)))
    got = outs.bind(mx.cpu(), {'t': true}).forward()
    assert [o.shape for o in got] == [(5,), (3,), (5,)] and got[0].dtype == np.int64

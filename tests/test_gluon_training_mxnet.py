"""A Gluon training loop (Dense, BatchNorm, relu, Dense; SGD with momentum and Adam; one and
two contexts) reaches MXNet 1.9.1's parameters within 1e-5, imperative and hybridized
(tests/fixtures/gluon_training.npz, made by gen_gluon_training.py with the real MXNet)."""
import importlib.util

import numpy as np
import pytest

import mxtorch as mx
from conftest import FIXTURES

_SPEC = importlib.util.spec_from_file_location('gen_gluon_training',
                                               FIXTURES / 'gen_gluon_training.py')
gen = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(gen)


@pytest.fixture(scope='module')
def reference():
    return dict(np.load(FIXTURES / 'gluon_training.npz'))


@pytest.mark.parametrize('hybridize', [False, True], ids=['imperative', 'hybridized'])
@pytest.mark.parametrize('name', sorted(gen.CASES))
def test_training_reaches_mxnet_parameters(name, hybridize, reference):
    params, losses = gen.run(mx, name, hybridize)
    np.testing.assert_allclose(losses, reference['%s.loss' % name], rtol=1e-5, atol=1e-6)
    assert sorted(params) == sorted(k[len(name) + 1:] for k in reference
                                    if k.startswith(name + '.') and not k.endswith('.loss'))
    for pname, value in params.items():
        np.testing.assert_allclose(value, reference['%s.%s' % (name, pname)], rtol=1e-5,
                                   atol=1e-5, err_msg=pname)


def test_hybridized_equals_imperative_exactly_enough():
    imperative, _ = gen.run(mx, 'adam', False)
    hybridized, _ = gen.run(mx, 'adam', True)
    for pname in imperative:
        np.testing.assert_allclose(hybridized[pname], imperative[pname], rtol=1e-6, atol=1e-7,
                                   err_msg=pname)


def test_a_positional_none_input_is_an_absent_input():
    # MXNet's own layers call F.FullyConnected(x, weight, None, no_bias=True, ...)
    x, w = mx.nd.ones((2, 3)), mx.nd.ones((4, 3))
    assert mx.nd.FullyConnected(x, w, None, no_bias=True, num_hidden=4).shape == (2, 4)
    sym = mx.sym.FullyConnected(mx.sym.var('x'), mx.sym.var('w'), None, no_bias=True,
                                num_hidden=4)
    assert sym.list_arguments() == ['x', 'w']
    with pytest.raises(mx.MXNetError, match='bias'):
        mx.nd.FullyConnected(x, w, None, num_hidden=4)

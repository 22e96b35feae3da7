"""Module on sparse data: csr batches through DataParallelExecutorGroup on one and two contexts,
row_sparse weights given to init_params, Module.prepare pulling the rows a batch needs through
kvstore.row_sparse_pull, and a factorization machine trained by Module.fit, against MXNet 1.9.1
(fixtures/sparse_module.npz, made by fixtures/gen_sparse_module.py, whose runs are replayed
here on mxtorch)."""
import pathlib
import sys
import warnings

import numpy as np
import pytest

import mxtorch as mx

FIXTURES = pathlib.Path(__file__).parent / 'fixtures'
sys.path.insert(0, str(FIXTURES))
import gen_sparse_module as gen  # noqa: E402

gen.mx = mx
EXPECTED = np.load(FIXTURES / 'sparse_module.npz')


@pytest.fixture(scope='module')
def got():
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return gen.results()


def _close(a, b, name):
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5, err_msg=name)


@pytest.mark.parametrize('case', ['one', 'adam', 'two', 'linear'])
def test_fit_matches_mxnet(got, case):
    keys = [k for k in EXPECTED.files if k.startswith(case + '_')]
    assert keys
    for k in keys:
        if k.endswith('stypes'):
            assert got[k].tolist() == EXPECTED[k].tolist(), k
        else:
            _close(got[k], EXPECTED[k], k)


def test_forward_backward_two_contexts(got):
    for k in (k for k in EXPECTED.files if k.startswith('fb_')):
        if k.startswith(('fb_gradstype', 'fb_gradrows')):
            assert got[k].tolist() == EXPECTED[k].tolist(), k
        else:
            _close(got[k], EXPECTED[k], k)

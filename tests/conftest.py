"""Shared test fixtures: the golden files made by real MXNet 1.9.1 live in tests/golden (made by
tests/golden/make_golden.py; MXTORCH_GOLDEN points the tests at another copy)."""
import json
import os
import pathlib

import numpy as np
import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
GOLDEN = pathlib.Path(os.environ.get('MXTORCH_GOLDEN', ROOT / 'tests' / 'golden'))
FIXTURES = ROOT / 'tests' / 'fixtures'



def assert_matches(got, want, what, tol):
    """got (NumPy) has MXNet's dtype and shape and its values within atol=tol, rtol=10*tol."""
    assert got.dtype == want.dtype, '%s: dtype %s, MXNet %s' % (what, got.dtype, want.dtype)
    assert got.shape == want.shape, '%s: shape %s, MXNet %s' % (what, got.shape, want.shape)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol * 10,
                               atol=tol, err_msg=what)


class OpCases:
    """An operator fixture made by tests/fixtures/gen_ops_*.py: a JSON 'meta' entry whose
    'cases' are numbered, and arrays stored as c<index>.<kind>.<suffix>."""

    def __init__(self, filename):
        self.data = np.load(FIXTURES / filename)
        self.meta = json.loads(str(self.data['meta']))
        self.cases = self.meta['cases']

    def arrays(self, index, kind):
        """{suffix: array} of the entries c<index>.<kind>.<suffix>."""
        prefix = 'c%d.%s.' % (index, kind)
        return {k[len(prefix):]: self.data[k] for k in self.data.files if k.startswith(prefix)}

    def listed(self, index, kind):
        """The entries c<index>.<kind>.0, .1, ... in order."""
        found = self.arrays(index, kind)
        return [found[str(k)] for k in range(len(found))]

    def check_bound(self, index, symbol, is_train, assert_close):
        """Bind `symbol` (its operator named 'op') to case `index`'s inputs and aux states, run
        forward (is_train) and, where the case has gradients, backward with its head gradients;
        assert_close(got, want, what) each output, gradient and aux state after the pass."""
        import mxtorch as mx

        def nd(value):
            return mx.nd.array(value, dtype=value.dtype)
        case = self.cases[index]
        inputs = self.arrays(index, 'in')
        args = {n: nd(inputs[n]) for n in case['inputs']}
        grads = {n: mx.nd.zeros(v.shape, dtype=v.dtype) for n, v in inputs.items()}
        aux = {'op_' + n: nd(v) for n, v in self.arrays(index, 'aux').items()}
        exe = symbol.bind(mx.cpu(), args, args_grad=grads if case['backward'] else None,
                          grad_req='write' if case['backward'] else 'null', aux_states=aux)
        outputs = exe.forward(is_train=is_train)
        for k, want in enumerate(self.listed(index, 'out')):
            assert_close(outputs[k].asnumpy(), want, 'output %d' % k)
        if case['backward']:
            exe.backward([nd(h) for h in self.listed(index, 'head')])
            for name, want in self.arrays(index, 'grad').items():
                assert_close(grads[name].asnumpy(), want, 'gradient of %s' % name)
        for name, want in self.arrays(index, 'auxafter').items():
            assert_close(aux['op_' + name].asnumpy(), want, 'aux state %s after the pass' % name)

    def case_id(self, index):
        case = self.cases[index]
        params = ','.join('%s=%s' % kv for kv in sorted(case['params'].items()))
        dtypes = case.get('dtype') or ','.join(
            self.data['c%d.in.%s' % (index, n)].dtype.name for n in case['inputs'])
        return '%d-%s(%s)-%s' % (index, case['op'], params, dtypes)


torch.set_num_threads(min(2, torch.get_num_threads()))


@pytest.fixture
def golden():
    if not GOLDEN.is_dir():
        pytest.fail('golden files not found at %s (set MXTORCH_GOLDEN to their folder)' % GOLDEN)
    return GOLDEN


@pytest.fixture(autouse=True)
def _seed():
    import mxtorch as mx
    mx.random.seed(0)
    np.random.seed(0)

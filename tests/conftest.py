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

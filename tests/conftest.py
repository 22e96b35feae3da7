"""Shared test fixtures: the golden files made by real MXNet 1.9.1 live in ../shared/golden."""
import os
import pathlib

import numpy as np
import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
GOLDEN = pathlib.Path(os.environ.get('MXTORCH_GOLDEN', ROOT.parent / 'shared' / 'golden'))
FIXTURES = ROOT / 'tests' / 'fixtures'

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

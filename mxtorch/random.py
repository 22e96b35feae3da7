"""mx.random: seeding, and the sampling functions of mx.nd.random."""
import numpy as np
import torch


def seed(seed_state, ctx='all'):
    """Seed the generator every mxtorch sampler draws from (torch's)."""
    if not isinstance(seed_state, (int, np.integer)):
        raise ValueError('seed_state must be an integer, got %s' % type(seed_state).__name__)
    torch.manual_seed(int(seed_state))


def __getattr__(name):
    from .ndarray import random as _nd_random
    return getattr(_nd_random, name)

"""mx.random: seeding, and the sampling functions of mx.nd.random."""
import numpy as np
import torch


def seed(seed_state, ctx='all'):
    """Seed the generators every mxtorch sampler draws from (torch's, CPU and CUDA)."""
    if not isinstance(seed_state, (int, np.integer)):
        raise ValueError('seed_state must be an integer, got %s' % type(seed_state).__name__)
    torch.default_generator.manual_seed(int(seed_state))
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(int(seed_state))


def __getattr__(name):
    from .ndarray import random as _nd_random
    return getattr(_nd_random, name)

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


def _generator_state(device):
    """The state of torch's generator for torch `device` (what seed() seeds)."""
    if device.type == 'cuda':
        return torch.cuda.get_rng_state(device)
    return torch.get_rng_state()


def _set_generator_state(device, state):
    if device.type == 'cuda':
        torch.cuda.set_rng_state(state, device)
    else:
        torch.set_rng_state(state)


def __getattr__(name):
    from .ndarray import random as _nd_random
    return getattr(_nd_random, name)

"""mx.gluon.contrib.data: extra samplers."""
from .sampler import *           # noqa: F401,F403

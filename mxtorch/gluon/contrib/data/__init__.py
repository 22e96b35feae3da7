"""mx.gluon.contrib.data: extra samplers and the text (language-model) datasets."""
from . import text  # noqa: F401
from .sampler import *           # noqa: F401,F403

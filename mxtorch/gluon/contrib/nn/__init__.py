"""mx.gluon.contrib.nn: extra layers."""
from .basic_layers import *      # noqa: F401,F403

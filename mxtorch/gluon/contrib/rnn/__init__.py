"""mx.gluon.contrib.rnn: extra recurrent cells."""
from .rnn_cell import *          # noqa: F401,F403

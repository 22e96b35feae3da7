"""mx.gluon.contrib.rnn: extra recurrent cells."""
from . import conv_rnn_cell, rnn_cell
from .conv_rnn_cell import *     # noqa: F401,F403
from .rnn_cell import *          # noqa: F401,F403

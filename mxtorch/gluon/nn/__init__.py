"""mx.gluon.nn: neural network layers."""
from .activations import *      # noqa: F401,F403
from .basic_layers import *     # noqa: F401,F403
from .conv_layers import *      # noqa: F401,F403
from ..block import Block, HybridBlock, SymbolBlock   # noqa: F401

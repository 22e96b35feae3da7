"""mx.gluon: the imperative/hybrid neural network API (Block, HybridBlock, Parameter,
Trainer, losses, layers, data loading) on mxtorch's NDArray, autograd, Symbol and Executor."""
from .parameter import (Parameter, Constant, ParameterDict, DeferredInitializationError,
                        tensor_types)
from .block import Block, HybridBlock, SymbolBlock
from . import nn
from . import rnn
from . import loss
from . import utils
from . import data
from .trainer import Trainer
from . import contrib
from . import model_zoo
from ..ndarray.ndarray import NDArray as _NDArray
from ..symbol import Symbol as _Symbol

tensor_types = (_Symbol, _NDArray)

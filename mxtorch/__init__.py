"""mxtorch: Apache MXNet 1.x's symbolic stack (NDArray, Symbol, Executor, Module) on PyTorch.

    import mxtorch as mx      # in place of `import mxnet as mx`
"""
__mxtorch_version__ = '0.1.0'   # this package's own release
__version__ = '1.9.1'           # the MXNet release whose API it implements: toolkits that check
                                #   mx.__version__ (GluonCV, GluonNLP) see a 1.x MXNet

from . import cpu_threads as _cpu_threads
_cpu_threads.configure()     # before anything imports torch: OpenMP reads its wait policy then
from . import cpu_memory as _cpu_memory
_cpu_memory.configure()      # freed CPU buffers kept for reuse (no page faults every step)

from .base import MXNetError, NotImplementedForSymbol
from .context import Context, cpu, gpu, cpu_pinned, current_context, num_gpus
from . import context, base, ops, autograd, random
from . import ndarray
from . import ndarray as nd
from . import name, attribute
from .attribute import AttrScope
from . import symbol
from . import symbol as sym
from . import symbol as symbol
from . import executor
from . import initializer
from . import initializer as init
from . import optimizer, lr_scheduler
from . import metric
from . import io
from . import recordio
from . import image
from . import image as img
from . import kvstore
from . import kvstore as kv
from . import model
from . import callback
from . import monitor
from . import monitor as mon
from . import executor_manager
from . import rnn
from . import visualization
from . import visualization as viz
from . import module
from . import module as mod
from . import test_utils
from . import operator  # noqa: A004  (mx.operator: Python custom operators)
from . import random as rnd
from . import contrib, engine, log, profiler, registry, runtime, util
from . import error, libinfo, notebook
from .util import is_np_shape, set_np_shape, np_shape, use_np_shape
from .util import is_np_array, np_array, use_np_array, use_np, set_np, reset_np
from . import numpy, numpy_extension
from . import numpy as np
from . import numpy_extension as npx
from . import gluon

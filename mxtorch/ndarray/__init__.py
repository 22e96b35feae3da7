"""mx.nd: NDArray, its creation functions, file I/O and one function per registered operator."""
from .. import ops as _ops  # noqa: F401  (registers every operator)
from . import _internal, op, contrib, linalg, image, utils
from .ndarray import (NDArray, array, empty, zeros, ones, full, arange, concatenate, moveaxis,
                      waitall, from_numpy, from_torch, onehot_encode, invoke,
                      to_dlpack_for_read, to_dlpack_for_write, from_dlpack,
                      add, subtract, multiply, divide, true_divide, modulo, power, maximum,
                      minimum, equal, not_equal, greater, greater_equal, lesser, lesser_equal,
                      logical_and, logical_or, logical_xor, eye, linspace, split_v2, histogram,
                      imdecode)
from .serialization import save, load, load_frombuffer
from .cached_op import CachedOp
op.CachedOp = _internal.CachedOp = CachedOp     # where MXNet defines it
from .register import generated_functions as _generated_functions, METHOD_OPS, make_method
from .register import make_function as _make_function


def _install():
    functions = _generated_functions()
    handwritten = set(globals())
    for name, fn in functions.items():
        setattr(op, name, fn)
        if name.startswith('_'):
            setattr(_internal, name, fn)
        for prefix, module in (('_contrib_', contrib), ('_linalg_', linalg),
                               ('_image_', image)):
            if name.startswith(prefix):     # named after the short name, as MXNet's
                short = name[len(prefix):]
                setattr(module, short, _make_function(_ops.get_op(name), short))
        if not name.startswith('_') and name not in handwritten:
            globals()[name] = fn
    for name in METHOD_OPS:
        if name in functions and not hasattr(NDArray, name):
            setattr(NDArray, name, make_method(functions[name]))


_install()
from . import random  # noqa: E402  (after the generated functions it builds on)
from . import sparse  # noqa: E402
from .sparse import CSRNDArray, RowSparseNDArray, BaseSparseNDArray  # noqa: E402
sparse._install_functions(_generated_functions())


def __getattr__(name):
    # mx.nd.np / mx.nd.npx: MXNet's NumPy interface, as F.np / F.npx in hybrid_forward
    if name in ('np', 'numpy'):
        from .. import numpy
        return numpy
    if name in ('npx', 'numpy_extension'):
        from .. import numpy_extension
        return numpy_extension
    raise AttributeError("module 'mxtorch.ndarray' has no attribute %r" % name)

"""mx.nd: NDArray, its creation functions, file I/O and one function per registered operator."""
from .. import ops as _ops  # noqa: F401  (registers every operator)
from . import _internal, op, contrib, linalg
from .ndarray import (NDArray, array, empty, zeros, ones, full, arange, concatenate, moveaxis,
                      waitall, from_numpy, from_torch, onehot_encode, invoke)
from .serialization import save, load, load_frombuffer
from .register import generated_functions as _generated_functions, METHOD_OPS, make_method


def _install():
    functions = _generated_functions()
    handwritten = set(globals())
    for name, fn in functions.items():
        setattr(op, name, fn)
        if name.startswith('_'):
            setattr(_internal, name, fn)
        for prefix, module in (('_contrib_', contrib), ('_linalg_', linalg)):
            if name.startswith(prefix):
                setattr(module, name[len(prefix):], fn)
        if not name.startswith('_') and name not in handwritten:
            globals()[name] = fn
    for name in METHOD_OPS:
        if name in functions and not hasattr(NDArray, name):
            setattr(NDArray, name, make_method(functions[name]))


_install()
from . import random  # noqa: E402  (after the generated functions it builds on)

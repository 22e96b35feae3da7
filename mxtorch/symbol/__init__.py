"""mx.sym / mx.symbol: Symbol, Variable, Group, load/load_json and one function per operator."""
from .. import ops as _ops  # noqa: F401  (registers every operator)
from . import _internal, op, contrib, linalg, image
from .symbol import Symbol, var, Variable, Group, load, load_json
from .symbol import (zeros, ones, full, arange, eye, linspace, split_v2, maximum, minimum,
                     hypot, power, pow, histogram, _split_v2_params)  # noqa: A004
from .register import generated_functions as _generated_functions, create as _create
from .register import make_function as _make_function


def _install():
    from ..ndarray.register import METHOD_OPS, make_method
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
                setattr(module, short, _make_function(name, short))
        if not name.startswith('_') and name not in handwritten:
            globals()[name] = fn
    for name in METHOD_OPS:
        if name in functions and name not in Symbol.__dict__:
            setattr(Symbol, name, make_method(functions[name]))


_install()
from . import random  # noqa: E402
from . import sparse  # noqa: E402

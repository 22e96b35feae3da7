"""mx.sym.sparse: MXNet's `_sparse_*` operators under their short names (sparse storage is a
property of arrays, not of the graph: the same operators run, storage types follow the bound
arrays)."""
from .symbol import Symbol as _Symbol


def _install():
    from . import register
    from ..ops.sparse import sparse_functions
    for short, name in sparse_functions().items():     # MXNet's `_sparse_<op>` operators
        globals().setdefault(short, register.make_function(name, short))


def zeros(stype, shape, dtype=None, **kwargs):
    from . import zeros as dense_zeros
    return dense_zeros(shape, dtype=dtype, **kwargs)


_install()
del _Symbol

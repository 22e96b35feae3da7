"""mx.sym.sparse: the operator functions under their sparse names (sparse storage is a property
of arrays, not of the graph: the same operators run, storage types follow the bound arrays)."""
from .symbol import Symbol as _Symbol


def _install():
    from . import register
    for name, fn in register.generated_functions().items():
        if not name.startswith('_'):
            globals().setdefault(name, fn)
    globals()['retain'] = register.make_function('_sparse_retain', 'retain')
    globals()['square_sum'] = register.make_function('_square_sum', 'square_sum')


def zeros(stype, shape, dtype=None, **kwargs):
    from . import zeros as dense_zeros
    return dense_zeros(shape, dtype=dtype, **kwargs)


_install()
del _Symbol

"""mx.nd: NDArray, its creation functions, file I/O and one function per registered operator."""
from .. import ops as _ops  # noqa: F401  (registers every operator)
from . import _internal, op, contrib, linalg, image
from .ndarray import (NDArray, array, empty, zeros, ones, full, arange, concatenate, moveaxis,
                      waitall, from_numpy, from_torch, onehot_encode, invoke,
                      to_dlpack_for_read, to_dlpack_for_write, from_dlpack)
from .serialization import save, load, load_frombuffer
from .cached_op import CachedOp
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


# ---------------------------------------------------------------------------------------------
# Element-wise helpers taking NDArrays or scalars on either side (mx.nd.maximum(x, 0), ...)
# ---------------------------------------------------------------------------------------------
def _ufunc(func_name, array_op, scalar_op, rscalar_op, python_fn):
    from ..base import numeric_types

    def helper(lhs, rhs):
        if isinstance(lhs, NDArray) and isinstance(rhs, NDArray):
            return invoke(array_op, [lhs, rhs])
        if isinstance(lhs, NDArray) and isinstance(rhs, numeric_types):
            return invoke(scalar_op, [lhs], scalar=float(rhs))
        if isinstance(lhs, numeric_types) and isinstance(rhs, NDArray):
            return invoke(rscalar_op, [rhs], scalar=float(lhs))
        if isinstance(lhs, numeric_types) and isinstance(rhs, numeric_types):
            return python_fn(lhs, rhs)
        raise TypeError('%s: type %s and %s not supported (NDArray or scalar expected)'
                        % (func_name, type(lhs).__name__, type(rhs).__name__))
    helper.__name__ = helper.__qualname__ = func_name
    helper.__doc__ = ('Element-wise %s of two NDArrays (broadcasting) or of an NDArray and a '
                      'scalar.' % func_name)
    return helper


def _install_ufuncs():
    import builtins
    import operator
    table = (
        ('add', 'broadcast_add', '_plus_scalar', '_plus_scalar', operator.add),
        ('subtract', 'broadcast_sub', '_minus_scalar', '_rminus_scalar', operator.sub),
        ('multiply', 'broadcast_mul', '_mul_scalar', '_mul_scalar', operator.mul),
        ('divide', 'broadcast_div', '_div_scalar', '_rdiv_scalar', operator.truediv),
        ('true_divide', 'broadcast_div', '_div_scalar', '_rdiv_scalar', operator.truediv),
        ('modulo', 'broadcast_mod', '_mod_scalar', '_rmod_scalar', operator.mod),
        ('power', 'broadcast_power', '_power_scalar', '_rpower_scalar', operator.pow),
        ('maximum', 'broadcast_maximum', '_maximum_scalar', '_maximum_scalar', builtins.max),
        ('minimum', 'broadcast_minimum', '_minimum_scalar', '_minimum_scalar', builtins.min),
        ('equal', 'broadcast_equal', '_equal_scalar', '_equal_scalar',
         lambda x, y: 1 if x == y else 0),
        ('not_equal', 'broadcast_not_equal', '_not_equal_scalar', '_not_equal_scalar',
         lambda x, y: 1 if x != y else 0),
        ('greater', 'broadcast_greater', '_greater_scalar', '_lesser_scalar',
         lambda x, y: 1 if x > y else 0),
        ('greater_equal', 'broadcast_greater_equal', '_greater_equal_scalar',
         '_lesser_equal_scalar', lambda x, y: 1 if x >= y else 0),
        ('lesser', 'broadcast_lesser', '_lesser_scalar', '_greater_scalar',
         lambda x, y: 1 if x < y else 0),
        ('lesser_equal', 'broadcast_lesser_equal', '_lesser_equal_scalar',
         '_greater_equal_scalar', lambda x, y: 1 if x <= y else 0),
        ('logical_and', 'broadcast_logical_and', '_logical_and_scalar', '_logical_and_scalar',
         lambda x, y: 1 if x and y else 0),
        ('logical_or', 'broadcast_logical_or', '_logical_or_scalar', '_logical_or_scalar',
         lambda x, y: 1 if x or y else 0),
        ('logical_xor', 'broadcast_logical_xor', '_logical_xor_scalar', '_logical_xor_scalar',
         lambda x, y: 1 if bool(x) != bool(y) else 0),
    )
    for name, array_op, scalar_op, rscalar_op, python_fn in table:
        if name not in globals():
            globals()[name] = _ufunc(name, array_op, scalar_op, rscalar_op, python_fn)


_install_ufuncs()


# ---------------------------------------------------------------------------------------------
# Creation and splitting helpers with MXNet's Python signatures
# ---------------------------------------------------------------------------------------------
def eye(N, M=0, k=0, ctx=None, dtype=None, **kwargs):
    """An N x M array (M = N when 0) with ones on diagonal k."""
    return invoke('_eye', [], ctx=ctx, N=N, M=M, k=k, dtype=dtype or 'float32')


def linspace(start, stop, num, endpoint=True, ctx=None, dtype='float32'):
    """`num` evenly spaced values from start to stop (stop included when endpoint)."""
    return invoke('_linspace', [], ctx=ctx, start=start, stop=stop, num=num, endpoint=endpoint,
                  dtype=dtype or 'float32')


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Split `ary` along `axis` into equal sections (an int) or at the given indices."""
    from ..symbol import _split_v2_params
    if isinstance(indices_or_sections, int) and (
            indices_or_sections <= 0 or ary.shape[axis] % indices_or_sections):
        raise ValueError('split_v2: array split does not result in an equal division: axis %d '
                         'of size %d into %d sections'
                         % (axis, ary.shape[axis], indices_or_sections))
    return invoke('_split_v2', [ary], axis=axis, squeeze_axis=squeeze_axis,
                  **_split_v2_params(indices_or_sections))


NDArray.split_v2 = lambda self, *args, **kwargs: split_v2(self, *args, **kwargs)


def histogram(a, bins=10, range=None):
    """(counts, bin edges) of a's values: `bins` equal bins over `range` (an int; without a
    range, over a's min..max), or the bins whose edges the NDArray `bins` holds."""
    if isinstance(bins, NDArray):
        return invoke('_histogram', [a, bins])
    if isinstance(bins, int) and not isinstance(bins, bool):
        if range is None:
            import warnings
            warnings.warn("range is not specified, using numpy's result to ensure consistency "
                          "with numpy")
            import numpy
            counts, edges = numpy.histogram(a.asnumpy(), bins=bins)
            return array(counts, ctx=a.context), array(edges, ctx=a.context)
        return invoke('_histogram', [a], bin_cnt=bins, range=range)
    raise ValueError('histogram: bins must be an integer or an NDArray, got %s'
                     % type(bins).__name__)


def __getattr__(name):
    # mx.nd.np / mx.nd.npx: MXNet's NumPy interface, as F.np / F.npx in hybrid_forward
    if name in ('np', 'numpy'):
        from .. import numpy
        return numpy
    if name in ('npx', 'numpy_extension'):
        from .. import numpy_extension
        return numpy_extension
    raise AttributeError("module 'mxtorch.ndarray' has no attribute %r" % name)

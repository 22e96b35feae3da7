"""mx.sym / mx.symbol: Symbol, Variable, Group, load/load_json and one function per operator."""
from .. import ops as _ops  # noqa: F401  (registers every operator)
from . import _internal, op, contrib, linalg, image
from .symbol import Symbol, var, Variable, Group, load, load_json
from .register import generated_functions as _generated_functions, create as _create
from .register import make_function as _make_function
from ..base import numeric_types as _numeric


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


def _creation(op_name, shape, dtype, kwargs, **params):
    return _create(op_name, [], dict(kwargs, shape=shape, dtype=dtype or 'float32', **params),
                   func_name=op_name)


def zeros(shape, dtype=None, **kwargs):
    return _creation('_zeros', shape, dtype, kwargs)


def ones(shape, dtype=None, **kwargs):
    return _creation('_ones', shape, dtype, kwargs)


def full(shape, val, dtype=None, **kwargs):
    return _creation('_full', shape, dtype, kwargs, value=val)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=False, name=None, dtype=None):
    return _create('_arange', [], dict(start=start, stop=stop, step=step, repeat=repeat,
                                       infer_range=infer_range, dtype=dtype or 'float32',
                                       name=name), func_name='_arange')


def eye(N, M=0, k=0, dtype=None, **kwargs):
    return _create('_eye', [], dict(kwargs, N=N, M=M, k=k, dtype=dtype or 'float32'),
                   func_name='_eye')


def linspace(start, stop, num, endpoint=True, name=None, dtype=None):
    """`num` evenly spaced values from start to stop (included when endpoint)."""
    return _create('_linspace', [], dict(start=start, stop=stop, num=num, endpoint=endpoint,
                                         dtype=dtype or 'float32', name=name),
                   func_name='_linspace')


def _split_v2_params(indices_or_sections):
    """MXNet's split_v2 arguments as _split_v2's params: an int is a number of equal sections,
    a tuple the split points (0 is prepended)."""
    if isinstance(indices_or_sections, int):
        return {'indices': (), 'sections': indices_or_sections}
    if isinstance(indices_or_sections, (tuple, list)):
        # a list, as MXNet's helper passes it (the JSON attr reads "[0, 2]")
        return {'indices': [0] + list(indices_or_sections), 'sections': 0}
    raise ValueError('split_v2: indices_or_sections must be an int or a tuple, got %r'
                     % (indices_or_sections,))


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Split `ary` along `axis` into equal sections (an int) or at the given indices."""
    return _create('_split_v2', [ary], dict(_split_v2_params(indices_or_sections), axis=axis,
                                            squeeze_axis=squeeze_axis), func_name='_split_v2')


def _binary_helper(array_op, scalar_op, python_fn, rscalar_op=None):
    def helper(left, right):
        if isinstance(left, Symbol) and isinstance(right, Symbol):
            return _create(array_op, [left, right], {})
        if isinstance(left, Symbol) and isinstance(right, _numeric):
            return _create(scalar_op, [left], {'scalar': right})
        if isinstance(left, _numeric) and isinstance(right, Symbol):
            return _create(rscalar_op or scalar_op, [right], {'scalar': left})
        if isinstance(left, _numeric) and isinstance(right, _numeric):
            return python_fn(left, right)
        raise TypeError('types (%s, %s) not supported' % (type(left), type(right)))
    return helper


maximum = _binary_helper('_Maximum', '_MaximumScalar', max)
minimum = _binary_helper('_Minimum', '_MinimumScalar', min)
hypot = _binary_helper('_Hypot', '_HypotScalar', lambda a, b: (a * a + b * b) ** 0.5)
power = _binary_helper('_Power', '_PowerScalar', pow, '_RPowerScalar')
pow = power  # noqa: A001  (MXNet's name)


Symbol.split_v2 = lambda self, *args, **kwargs: split_v2(self, *args, **kwargs)


def histogram(a, bins=10, range=None, **kwargs):
    """(counts, bin edges) of a's values: `bins` equal bins over `range` (both required for an
    int), or the bins whose edges the Symbol `bins` holds."""
    if isinstance(bins, Symbol):
        return _create('_histogram', [], dict(kwargs, data=a, bins=bins), func_name='_histogram')
    if isinstance(bins, int) and not isinstance(bins, bool):
        if range is None:
            raise ValueError('histogram: range is required in symbol mode')
        return _create('_histogram', [], dict(kwargs, data=a, bin_cnt=bins, range=range),
                       func_name='_histogram')
    raise ValueError('histogram: bins must be an integer or a Symbol, got %s'
                     % type(bins).__name__)

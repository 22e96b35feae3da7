"""Generate `mx.nd.<op>` functions and NDArray methods from the operator registry."""
from ..base import MXNetError
from ..ops.calling import split_call, assign_inputs
from ..ops.signature import describe
from ..ops.registry import all_ops
from .ndarray import NDArray, invoke_dense, invoke_parsed, _dense_suffices


def _is_array(x):
    return isinstance(x, NDArray)


class _Slot:
    """Stands for the array argument at `source` (a position or a keyword) while a call's
    shape is worked out once for all the calls that share it."""
    __slots__ = ('source',)

    def __init__(self, source):
        self.source = source


def _is_slot(x):
    return isinstance(x, _Slot)


def _signature(args, kwargs):
    """A call's shape: each array argument's class, each other argument's type and value.
    Raises TypeError for unhashable values (lists), which are parsed at every call."""
    return (tuple([a.__class__ if isinstance(a, NDArray) else (a.__class__, a) for a in args]),
            tuple([(k, v.__class__ if isinstance(v, NDArray) else (v.__class__, v))
                   for k, v in kwargs.items()]))


def _plan(op, func_name, args, kwargs):
    """(parsed params, where each input comes from: a position in args or a keyword, whether
    the inputs (plain NDArrays: dense) take the dense kernel straight away)."""
    given = args, kwargs
    args = [_Slot(i) if isinstance(a, NDArray) else a for i, a in enumerate(args)]
    kwargs = {k: _Slot(k) if isinstance(v, NDArray) else v for k, v in kwargs.items()}
    raw, arrays, array_kw = split_call(op, args, kwargs, _is_slot)
    p = op.parse_params(raw)
    slots, names = assign_inputs(op, p, arrays, array_kw, 'NDArrays')
    missing = [n for n, s in zip(names, slots) if s is None]
    if missing:
        raise MXNetError('%s: missing input array(s) %s' % (func_name, ', '.join(missing)))
    sources = tuple(s.source for s in slots)
    inputs = [given[s.source.__class__ is not int][s.source] for s in slots]
    dense = all(x.__class__ is NDArray for x in inputs) and _dense_suffices(op, p, inputs)
    return p, sources, dense


def make_function(op, func_name):
    plans = {}      # call signature -> plan; a call parses its parameters once per signature

    def function(*args, out=None, name=None, ctx=None, **kwargs):
        try:
            key = _signature(args, kwargs)
            plan = plans.get(key)
        except TypeError:                   # unhashable parameter values: no plan kept
            key = plan = None
        if plan is None:
            if op.variadic and len(args) == 1 and isinstance(args[0], (list, tuple)):
                key = None                  # a list of the inputs (add_n([a, b]))
                args = list(args[0]) if all(_is_array(a) for a in args[0]) else args
            plan = _plan(op, func_name, args, kwargs)
            if key is not None and len(plans) < 256:
                plans[key] = plan
        p, sources, dense = plan
        inputs = [args[s] if s.__class__ is int else kwargs[s] for s in sources]
        if dense and out is None:
            return invoke_dense(op, p, inputs, ctx=ctx)
        return invoke_parsed(op, p, inputs, out=out, ctx=ctx)
    function.__name__ = func_name
    function.__qualname__ = func_name
    return describe(function, op, 'nd')


def generated_functions():
    """{name: function} for every registered operator name and alias."""
    return {name: make_function(op, name) for name, op in all_ops().items()}


# Operators that are also NDArray (and Symbol) methods: `x.sum(axis=1)`, `x.exp()`, ...
METHOD_OPS = (
    'sum', 'nansum', 'prod', 'nanprod', 'mean', 'max', 'min', 'norm', 'argmax', 'argmin',
    'argmax_channel', 'abs', 'sign', 'round', 'rint', 'fix', 'floor', 'ceil', 'trunc', 'square',
    'sqrt', 'rsqrt', 'cbrt', 'rcbrt', 'exp', 'expm1', 'log', 'log10', 'log2', 'log1p', 'sin',
    'cos', 'tan', 'arcsin', 'arccos', 'arctan', 'sinh', 'cosh', 'tanh', 'arcsinh', 'arccosh',
    'arctanh', 'degrees', 'radians', 'relu', 'sigmoid', 'softmax', 'log_softmax', 'softmin',
    'reciprocal', 'clip', 'transpose', 'flatten', 'expand_dims', 'squeeze', 'tile', 'repeat',
    'pad', 'swapaxes', 'flip', 'split', 'slice', 'slice_axis', 'slice_like', 'take', 'pick',
    'broadcast_to',
    'one_hot', 'topk', 'sort', 'argsort', 'reshape_like', 'broadcast_axes', 'broadcast_like',
    'zeros_like', 'ones_like', 'diag', 'depth_to_space', 'space_to_depth', 'shape_array',
    'size_array',
)


def make_method(function):
    def method(self, *args, **kwargs):
        return function(self, *args, **kwargs)
    method.__name__ = function.__name__
    method.__doc__ = function.__doc__
    return method

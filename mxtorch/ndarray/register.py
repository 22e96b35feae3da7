"""Generate `mx.nd.<op>` functions and NDArray methods from the operator registry."""
from ..base import MXNetError
from ..ops.calling import split_call, assign_inputs
from ..ops.signature import describe
from ..ops.registry import all_ops
from .ndarray import NDArray, invoke_parsed


def _is_array(x):
    return isinstance(x, NDArray)


def make_function(op, func_name):
    def function(*args, out=None, name=None, ctx=None, **kwargs):
        raw, arrays, array_kw = split_call(op, args, kwargs, _is_array)
        p = op.parse_params(raw)
        slots, names = assign_inputs(op, p, arrays, array_kw, 'NDArrays')
        missing = [n for n, s in zip(names, slots) if s is None]
        if missing:
            raise MXNetError('%s: missing input array(s) %s' % (func_name, ', '.join(missing)))
        return invoke_parsed(op, p, slots, out=out, ctx=ctx)
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

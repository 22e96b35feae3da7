"""mx.operator: operators written in Python, used through mx.sym.Custom / mx.nd.Custom.

    class Softmax(mx.operator.CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux): ...
        def backward(self, req, out_grad, in_data, out_data, in_grad, aux): ...

    @mx.operator.register('softmax')
    class SoftmaxProp(mx.operator.CustomOpProp):
        def list_arguments(self): return ['data', 'label']
        def infer_shape(self, in_shape): return in_shape, [in_shape[0]], []
        def create_operator(self, ctx, shapes, dtypes): return Softmax()

The op's arrays are NDArrays; forward/backward run inside a torch.autograd.Function
(ops/custom.py), so they take part in executors and mx.autograd alike.
"""
import collections
import ctypes  # noqa: F401  (MXNet's mx.operator exports these; `from mxnet.operator import *`
import itertools  # scripts use ctypes, NDArrayHandle, NDArray, py_str from it)
import warnings

from . import context, symbol  # noqa: F401
from .base import MXNetError, NDArrayHandle, c_str, check_call, mx_float, mx_int, mx_uint, \
    py_str  # noqa: F401
from .ndarray import NDArray  # noqa: F401
from .ops import custom as _custom


class CustomOp:
    """Base class of a Python operator's computation."""

    def __init__(self):
        pass

    def forward(self, is_train, req, in_data, out_data, aux):
        """Compute out_data from in_data (use self.assign to honour req)."""
        raise NotImplementedError('%s must implement forward' % type(self).__name__)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        """Compute in_grad from out_grad (use self.assign to honour req)."""
        raise NotImplementedError('%s must implement backward' % type(self).__name__)

    def assign(self, dst, req, src):
        """dst = src ('write'/'inplace'), dst += src ('add'), nothing ('null')."""
        if req == 'null':
            return
        if req in ('write', 'inplace'):
            dst[:] = src
        elif req == 'add':
            dst[:] = dst + src
        else:
            raise MXNetError('CustomOp.assign: req must be null, write, inplace or add, got %r'
                             % (req,))


class CustomOpProp:
    """Base class of a Python operator's description: its inputs, outputs, shapes and types.

    need_top_grad: False for loss-like operators, whose backward does not use out_grad."""

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad

    def list_arguments(self):
        return ['data']

    def list_outputs(self):
        return ['output']

    def list_auxiliary_states(self):
        return []

    def infer_shape(self, in_shape):
        """(argument shapes, output shapes, aux shapes); default: outputs like the first input."""
        return (in_shape, [in_shape[0]] * len(self.list_outputs()),
                [in_shape[0]] * len(self.list_auxiliary_states()))

    def infer_type(self, in_type):
        """(argument types, output types, aux types); default: all the first input's type."""
        return (in_type, [in_type[0]] * len(self.list_outputs()),
                [in_type[0]] * len(self.list_auxiliary_states()))

    def infer_storage_type(self, in_stype):
        return (in_stype, ['default'] * len(self.list_outputs()),
                ['default'] * len(self.list_auxiliary_states()))

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        deps = []
        if self.need_top_grad_:
            deps.extend(out_grad)
        deps.extend(in_data)
        deps.extend(out_data)
        return deps

    def create_operator(self, ctx, in_shapes, in_dtypes):
        """The CustomOp that computes this operator."""
        raise NotImplementedError('%s must implement create_operator' % type(self).__name__)


def register(reg_name):
    """Class decorator: register a CustomOpProp subclass as op_type `reg_name`."""
    def do_register(prop_cls):
        if not (isinstance(prop_cls, type) and issubclass(prop_cls, CustomOpProp)):
            raise MXNetError('mx.operator.register(%r): expected a CustomOpProp subclass, got %r'
                             % (reg_name, prop_cls))
        _custom.PROPS[reg_name] = prop_cls
        # a re-registered name gets fresh props and ops
        for cache in (_custom._PROP_CACHE, _custom._OP_CACHE):
            for key in [k for k in cache if dict(k if cache is _custom._PROP_CACHE
                                                 else k[0]).get('op_type') == reg_name]:
                del cache[key]
        return prop_cls
    return do_register


def get_all_registered_operators():
    """Names (and aliases) of every registered operator, as MXNet's operator registry lists them
    (Python operators run through the one 'Custom' operator)."""
    from .ops.registry import all_ops
    return sorted(all_ops())


OperatorArguments = collections.namedtuple('OperatorArguments', ['narg', 'names', 'types'])


def get_operator_arguments(op_name):
    """An operator's arguments: its array inputs ('NDArray-or-Symbol'), then its parameters with
    MXNet's type strings."""
    from .ops.params import Params
    from .ops.registry import get_op
    op = get_op(op_name)
    if op.variadic:
        names, types = ['args'], ['NDArray-or-Symbol[]']
    else:
        defaults = Params({k: (None if v.required else v.default) for k, v in op.params.items()})
        try:
            names = op.input_names(defaults)
        except Exception:       # noqa: BLE001  (inputs that need a required parameter's value)
            names = []
        types = ['NDArray-or-Symbol'] * len(names)
    params = [k for k in op.params if k != op.variadic]
    names = list(names) + params
    types = types + [op.params[k].type_string() for k in params]
    return OperatorArguments(len(names), names, types)


# ---- MXNet's deprecated Python operators (PythonOp / NumpyOp / NDArrayOp) -----------------------
# Each instance becomes a Custom operator of its own: get_symbol registers a CustomOpProp that
# runs the instance's forward/backward (on NumPy arrays for NumpyOp, NDArrays for NDArrayOp).
class PythonOp:
    """Base class of MXNet's old-style Python operators (superseded by CustomOp)."""
    _instances = itertools.count()

    def __init__(self, need_top_grad=True):
        self.need_top_grad_ = need_top_grad
        self._op_type = None

    def __call__(self, *args, **kwargs):
        return self.get_symbol(*args, **kwargs)

    def get_symbol(self, *args, **kwargs):
        """A symbol applying this operator to the argument symbols: MXNet's node of a NumpyOp
        or NDArrayOp, naming this object, which runs it through a Custom operator."""
        from .ops.internal import python_op_symbol
        if self._op_type is None:
            self._op_type = '_legacy_python_op_%d' % next(PythonOp._instances)
            register(self._op_type)(_legacy_prop(self))
        return python_op_symbol(self, isinstance(self, NumpyOp), args, kwargs)

    def forward(self, in_data, out_data):
        out_data[0][:] = in_data[0]

    def backward(self, out_grad, in_data, out_data, in_grad):
        in_grad[0][:] = 1.0

    def infer_shape(self, in_shape):
        return in_shape, [in_shape[0]]

    def list_outputs(self):
        return ['output']

    def list_arguments(self):
        return ['data']

    def need_top_grad(self):
        return self.need_top_grad_

    def _call(self, method, groups):
        getattr(self, method)(**groups)


class NDArrayOp(PythonOp):
    """An old-style Python operator computing on NDArrays."""

    def __init__(self, need_top_grad=True):
        super().__init__(need_top_grad)
        warnings.warn('NDArrayOp has been deprecated. Please use CustomOp')


class NumpyOp(PythonOp):
    """An old-style Python operator computing on NumPy arrays (written in place)."""

    def __init__(self, need_top_grad=True):
        super().__init__(need_top_grad)
        warnings.warn('NumpyOp has been deprecated. Please use CustomOp')

    def _call(self, method, groups):
        views = {k: [a.asnumpy() for a in arrays] for k, arrays in groups.items()}
        getattr(self, method)(**views)
        written = 'out_data' if method == 'forward' else 'in_grad'
        for arr, value in zip(groups[written], views[written]):
            arr[:] = value


def _legacy_prop(pyop):
    class Bridge(CustomOp):
        def forward(self, is_train, req, in_data, out_data, aux):
            pyop._call('forward', {'in_data': in_data, 'out_data': out_data})

        def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
            pyop._call('backward', {'out_grad': out_grad, 'in_data': in_data,
                                    'out_data': out_data, 'in_grad': in_grad})

    class Prop(CustomOpProp):
        def __init__(self):
            super().__init__(need_top_grad=pyop.need_top_grad())

        def list_arguments(self):
            return pyop.list_arguments()

        def list_outputs(self):
            return pyop.list_outputs()

        def infer_shape(self, in_shape):
            args, outs = pyop.infer_shape(in_shape)[:2]
            return args, outs, []

        def create_operator(self, ctx, shapes, dtypes):
            return Bridge()
    return Prop

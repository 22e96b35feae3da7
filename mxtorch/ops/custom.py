"""Custom: operators written in Python (mx.operator.CustomOp / CustomOpProp, mx.operator.register).

`mx.sym.Custom(*inputs, op_type='name', **kwargs)` looks the registered CustomOpProp up by
op_type and builds it with the remaining keyword arguments as strings (as MXNet does). The prop
names the inputs, outputs and auxiliary states and infers shapes and types; its CustomOp computes
forward and backward on NDArrays. Here the op runs inside a torch.autograd.Function, so its
`backward` is the gradient both in executors and under mx.autograd. A prop with
need_top_grad=False (a loss) needs no head gradient: backward gets ones.
"""
import contextlib

import torch

from .. import profiler
from ..base import MXNetError, np_dtype, torch_dtype
from .params import Param
from .registry import OpDef, register

PROPS = {}            # op_type -> CustomOpProp subclass (filled by mx.operator.register)
_PROP_CACHE = {}      # (op_type, kwargs) -> prop instance
_OP_CACHE = {}        # (prop key, input shapes, dtypes) -> CustomOp instance


class _Kwarg(Param):
    """Any keyword argument of a Custom op: kept as the string MXNet would pass to the prop."""
    kind = 'string'

    def parse(self, value):
        return str(value)

    def _parse(self, value):
        return str(value)


class _Schema(dict):
    """op_type is required; every other key is a string argument of the prop."""

    def get(self, key, default=None):
        found = dict.get(self, key)
        return found if found is not None else _Kwarg()


def _prop_key(p):
    return tuple(sorted((k, v) for k, v in p.items()))


def get_prop(p):
    key = _prop_key(p)
    prop = _PROP_CACHE.get(key)
    if prop is None:
        cls = PROPS.get(p.op_type)
        if cls is None:
            raise MXNetError('Custom: op_type=%r is not registered (use mx.operator.register); '
                             'registered: %s' % (p.op_type, sorted(PROPS) or 'none'))
        prop = cls(**{k: v for k, v in p.items() if k != 'op_type'})
        if len(_PROP_CACHE) < 1024:
            _PROP_CACHE[key] = prop
    return prop


def _three(result, what, n_aux):
    """(args, outputs, aux) from a prop's infer_shape/infer_type (aux may be left out)."""
    result = list(result)
    if len(result) == 2:
        result.append([None] * n_aux)
    if len(result) != 3:
        raise MXNetError('Custom: %s must return (inputs, outputs[, aux]), got %r' % (what, result))
    return [list(r) for r in result]


def _custom_shape(p, ins, outs):
    prop = get_prop(p)
    n_args = len(prop.list_arguments())
    n_aux = len(prop.list_auxiliary_states())
    if all(s is None for s in ins[:n_args]):
        return ins, outs
    # like MXNet, the prop sees unknown input shapes as empty lists; a prop that cannot
    # work from what is known yet (it raises) leaves the shapes for a later pass
    given = [list(s) if s is not None and all(s) else [] for s in ins[:n_args]]
    try:
        args, out, aux = _three(prop.infer_shape(given), 'infer_shape', n_aux)
    except MXNetError:
        raise
    except Exception:               # noqa: BLE001  (user code: any failure means "not yet")
        if all(given):
            raise
        return ins, outs

    def shape(s):
        s = tuple(int(d) for d in s) if s is not None else ()
        return s if s and all(s) else None
    new_ins = [shape(s) for s in args] + [shape(s) for s in aux]
    return ([n if n is not None else old for n, old in zip(new_ins, ins)],
            [shape(s) for s in out])


def _custom_type(p, ins, outs):
    prop = get_prop(p)
    n_args = len(prop.list_arguments())
    n_aux = len(prop.list_auxiliary_states())
    if any(t is None for t in ins[:n_args]):
        return ins, outs
    args, out, aux = _three(prop.infer_type([np_dtype(t).type for t in ins[:n_args]]),
                            'infer_type', n_aux)
    dtype = lambda t: np_dtype(t) if t is not None else None
    return [dtype(t) for t in args] + [dtype(t) for t in aux], [dtype(t) for t in out]


def _wrap(tensor):
    from ..ndarray.ndarray import from_torch
    return from_torch(tensor)


@contextlib.contextmanager
def _as_mxnet_error(op_type, phase):
    """An exception in the Python operator's code reaches the caller as an MXNetError (MXNet's
    engine reports the Python traceback that way)."""
    try:
        yield
    except MXNetError:
        raise
    except Exception as err:      # noqa: BLE001  (whatever the user's code raised)
        raise MXNetError('Error in CustomOp %s of %s: %s: %s'
                         % (phase, op_type, type(err).__name__, err)) from err


class _CustomFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, op, op_type, is_train, n_args, out_specs, *tensors):
        in_data = [_wrap(t.detach()) for t in tensors[:n_args]]
        aux = [_wrap(t.detach()) for t in tensors[n_args:]]
        device = tensors[0].device if tensors else torch.device('cpu')
        out_data = [_wrap(torch.zeros(shape, dtype=dtype, device=device))
                    for shape, dtype in out_specs]
        with profiler.custom_operator(op_type), _as_mxnet_error(op_type, 'forward'):
            op.forward(is_train=is_train, req=['write'] * len(out_data), in_data=in_data,
                       out_data=out_data, aux=aux)
        ctx.op, ctx.op_type, ctx.n_args = op, op_type, n_args
        ctx.in_data, ctx.out_data, ctx.aux = in_data, out_data, aux
        return tuple(o._tensor.clone() for o in out_data)

    @staticmethod
    def backward(ctx, *grads):
        in_data = ctx.in_data
        out_grad = [_wrap(g.contiguous() if g is not None else torch.zeros_like(o._tensor))
                    for g, o in zip(grads, ctx.out_data)]
        in_grad = [_wrap(torch.zeros_like(x._tensor)) for x in in_data]
        req = ['write' if ctx.needs_input_grad[5 + i] else 'null' for i in range(ctx.n_args)]
        with profiler.custom_operator(ctx.op_type, backward=True), \
                _as_mxnet_error(ctx.op_type, 'backward'):
            ctx.op.backward(req=req, out_grad=out_grad, in_data=in_data, out_data=ctx.out_data,
                            in_grad=in_grad, aux=ctx.aux)
        return ((None,) * 5 + tuple(g._tensor for g in in_grad) +
                (None,) * len(ctx.aux))


def _custom_forward(p, *tensors, train=False):
    """Run the registered CustomOp's forward (and, under autograd, its backward)."""
    prop = get_prop(p)
    n_args = len(prop.list_arguments())
    n_aux = len(prop.list_auxiliary_states())
    if len(tensors) != n_args + n_aux:
        raise MXNetError('Custom(op_type=%s): %d inputs given, the prop lists %d arguments and %d '
                         'auxiliary states' % (p.op_type, len(tensors), n_args, n_aux))
    in_shapes = [list(t.shape) for t in tensors[:n_args]]
    in_types = [np_dtype(t.dtype).type for t in tensors[:n_args]]
    _, out_shapes, _ = _three(prop.infer_shape(in_shapes), 'infer_shape', n_aux)
    _, out_types, _ = _three(prop.infer_type(in_types), 'infer_type', n_aux)
    out_specs = tuple((tuple(int(d) for d in s), torch_dtype(t))
                      for s, t in zip(out_shapes, out_types))
    key = (_prop_key(p), tuple(map(tuple, in_shapes)), tuple(np_dtype(t).name for t in in_types))
    op = _OP_CACHE.get(key)
    if op is None:
        from ..context import cpu
        op = prop.create_operator(cpu(), in_shapes, in_types)
        if len(_OP_CACHE) < 1024:
            _OP_CACHE[key] = op
    outs = _CustomFunction.apply(op, p.op_type, bool(train), n_args, out_specs, *tensors)
    return outs[0] if len(outs) == 1 else tuple(outs)


_CUSTOM = OpDef('Custom', _custom_forward, params={'op_type': _Kwarg()},
               inputs=lambda p: tuple(get_prop(p).list_arguments()),
               aux=lambda p: tuple(get_prop(p).list_auxiliary_states()),
               outputs=lambda p: tuple(get_prop(p).list_outputs()),
               mode_dependent=True, infer_shape=_custom_shape, infer_type=_custom_type,
               head_grad=lambda p: 'required' if get_prop(p).need_top_grad_ else 'ones')
_CUSTOM.params = _Schema(_CUSTOM.params)       # any other keyword goes to the prop
_CUSTOM.traceable = False                      # the user's Python runs as written
register(_CUSTOM)

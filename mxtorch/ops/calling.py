"""How a generated `mx.nd.<op>` / `mx.sym.<op>` call maps its arguments onto an operator.

MXNet's generated functions take the array inputs first (positionally, in declared order, or by
input name) and then the parameters (positionally in schema order, or by keyword):
`mx.nd.clip(x, 0, 1)`, `mx.sym.FullyConnected(data=x, num_hidden=10)`. Variadic operators
(Concat, add_n, ...) take only positional arrays and fill their count parameter themselves.
"""
from ..base import MXNetError


def split_call(op, args, kwargs, is_array):
    """-> (raw params dict, positional arrays, keyword arrays dict)."""
    args = list(args)
    if op.variadic and len(args) == 1 and isinstance(args[0], (list, tuple)) \
            and all(is_array(a) for a in args[0]):
        args = list(args[0])
    n_arrays = 0
    while n_arrays < len(args) and (is_array(args[n_arrays]) or args[n_arrays] is None):
        n_arrays += 1
    if n_arrays < len(args):
        # Nones right before parameter values are parameters; at the end of the call they
        # stand for absent inputs (FullyConnected(x, w, None, no_bias=True)), as in MXNet
        while n_arrays and args[n_arrays - 1] is None:
            n_arrays -= 1
    arrays = args[:n_arrays]
    extra = args[n_arrays:]
    params = {}
    array_kw = {}
    for key, value in kwargs.items():
        if is_array(value):
            array_kw[key] = value
        elif value is not None or key in op.params:
            params[key] = value
    if extra:
        if op.variadic:
            raise MXNetError('%s takes its inputs as positional arrays only; got a %s'
                             % (op.name, type(extra[0]).__name__))
        names = [k for k in op.params if k not in params]
        if len(extra) > len(names):
            raise MXNetError('%s got %d positional parameters but has only %d (%s)'
                             % (op.name, len(extra), len(names), ', '.join(names)))
        for key, value in zip(names, extra):
            params[key] = value
    if op.variadic and op.variadic not in params:
        params[op.variadic] = len(arrays)
    params = {k: v for k, v in params.items() if v is not None or op.params[k].optional}
    return params, arrays, array_kw


def assign_inputs(op, p, arrays, array_kw, what):
    """Order arrays by the op's input names -> (list with None for missing, names)."""
    names = op.input_names(p)
    arrays = list(arrays)
    while len(arrays) > len(names) and arrays[-1] is None:
        arrays.pop()                  # absent optional inputs (a bias with no_bias=True)
    if len(arrays) > len(names):
        raise MXNetError('%s takes %d inputs (%s), got %d positional %s'
                         % (op.name, len(names), ', '.join(names), len(arrays), what))
    slots = list(arrays) + [None] * (len(names) - len(arrays))
    for key, value in array_kw.items():
        if key not in names:
            raise MXNetError("%s has no input named '%s'; its inputs are %s"
                             % (op.name, key, ', '.join(names)))
        i = names.index(key)
        if slots[i] is not None:
            raise MXNetError("%s got input '%s' twice" % (op.name, key))
        slots[i] = value
    return slots, names

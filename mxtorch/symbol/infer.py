"""Shape and dtype inference over a symbol's graph.

Inference is iterative and bidirectional, as in MXNet: each operator's rule sees the partial
shapes of its inputs and outputs and may fill either side (weights from data, a label from the
prediction, the unknown batch dim of a begin state from its consumer); passes run forward and
backward until nothing changes. An operator without a shape rule gets its output shapes by
running its forward on meta tensors once its inputs are known.
"""
import ast
import warnings

import numpy as np
import torch

from ..base import MXNetError, CODE_DTYPES, np_dtype, torch_dtype
from ..ops.shapes import ShapeError, first, known, merge, same_type, fmt
from ..util import is_np_shape
from .graph import topo_order

MAX_ROUNDS = 32


def _node_error(node, err):
    return MXNetError('Error in operator %s: %s' % (node.name, err))


def _meta_outputs(node, ins, in_types):
    """Output (shapes, dtypes) of an op by running its forward on meta tensors."""
    op, p = node.op, node.params
    tensors = [torch.empty(s, dtype=torch_dtype(first(t, 'float32')), device='meta')
               for s, t in zip(ins, in_types)]
    kwargs = {}
    if op.mode_dependent:
        kwargs['train'] = False
    if op.creation:
        kwargs.update(device='meta', out_shape=None)
    try:
        with torch.no_grad():
            result = op.forward(p, *tensors, **kwargs)
    except MXNetError as err:
        raise _node_error(node, err) from None
    except (RuntimeError, ValueError, IndexError, TypeError) as err:
        shapes = ', '.join('%s=%s' % (n, fmt(s)) for n, s in zip(node.input_names(), ins))
        raise _node_error(node, 'shapes %s are not compatible: %s' % (shapes, err)) from None
    results = result if isinstance(result, tuple) else (result,)
    return [tuple(r.shape) for r in results], [np_dtype(r.dtype) for r in results]


class _Table:
    """Partial shapes (or dtypes) of every output entry, keyed by (id(node), index)."""

    def __init__(self, merge_fn):
        self.values = {}
        self.changed = []           # keys whose value changed since the caller last looked
        self._merge = merge_fn

    def get(self, entry):
        return self.values.get((id(entry[0]), entry[1]))

    def put(self, node, key, value):
        if value is None:
            return
        old = self.values.get(key)
        if old is not None and (old is value or old == value):
            return                          # (the common case: nothing new)
        try:
            new = self._merge(old, value)
        except ShapeError as err:
            raise _node_error(node, err) from None
        if old is None or new != old:      # (np.dtype('float64') == None is True)
            self.values[key] = new
            self.changed.append(key)


def _merge_type(provided, inferred):
    if provided is None:
        return inferred
    if inferred is None or provided == inferred:
        return provided
    raise ShapeError('Type inconsistent, Provided = %s, inferred type=%s' % (provided, inferred))


def _apply_rule(node, table, rule):
    ins = [table.get(e) for e in node.inputs]
    outs = [table.values.get((id(node), k)) for k in range(node.num_outputs())]
    try:
        new_ins, new_outs = rule(node.params, ins, outs)
    except (ShapeError, MXNetError) as err:
        raise _node_error(node, err) from None
    for entry, value in zip(node.inputs, new_ins):
        table.put(entry[0], (id(entry[0]), entry[1]), value)
    for k, value in enumerate(new_outs):
        table.put(node, (id(node), k), value)


def _fixpoint(order, table, step):
    """Forward and backward passes over the operators until nothing changes, as MXNet's; a
    pass applies a rule only to an operator one of whose entries another rule changed since
    it last ran (all at first), so a pass that would change nothing is not run at all."""
    ops = [n for n in order if n.op is not None]
    users = {}                  # id(node) -> the operators reading or writing its outputs
    for node in ops:
        users.setdefault(id(node), []).append(id(node))
        for child, _ in node.inputs:
            users.setdefault(id(child), []).append(id(node))
    dirty = {id(n) for n in ops}
    changed = table.changed
    changed.clear()
    for _ in range(MAX_ROUNDS):
        for pass_ops in (ops, ops[::-1]):
            for node in pass_ops:
                me = id(node)
                if me not in dirty:
                    continue
                dirty.discard(me)
                step(node)
                if changed:
                    for key in changed:
                        dirty.update(users[key[0]])
                    dirty.discard(me)
                    changed.clear()
        if not dirty:
            break


def infer_graph_shapes(order, given, types=None):
    """{(id(node), index): partial shape} for every entry; `given` maps id(variable) -> shape."""
    table = _Table(merge)
    for node in order:
        if node.op is None:
            hint = _shape_hint(node)
            shape = given.get(id(node))
            if hint is not None and not known(shape):
                shape = hint           # as MXNet: a complete given shape wins over __shape__,
            table.put(node, (id(node), 0), shape)       # a partial one does not
    types = types or {}

    def step(node):
        if node.op.infer_shape is not None:
            _apply_rule(node, table, node.op.infer_shape)
            return
        if known(table.values.get((id(node), 0))):
            return
        ins = [table.get(e) for e in node.inputs]
        if all(known(s) for s in ins):
            in_types = [types.get((id(e[0]), e[1])) for e in node.inputs]
            shapes, _ = _meta_outputs(node, ins, in_types)
            for k, s in enumerate(shapes):
                table.put(node, (id(node), k), s)
    _fixpoint(order, table, step)
    return table.values


def complete_zero_size_shapes(order, shapes, types):
    """Under NumPy-shape semantics a 0 dim is a real size, which inference (where 0 means
    unknown) cannot tell: with every variable's shape given (a bind), each entry left partial
    gets its exact shape by running its operator on meta tensors of its inputs' shapes.
    Updates and returns `shapes`."""
    for node in order:
        if node.op is None or all(known(shapes.get((id(node), k)))
                                  for k in range(node.num_outputs())):
            continue
        ins = [shapes.get((id(n), k)) for n, k in node.inputs]
        if any(s is None for s in ins):
            continue
        in_types = [types.get((id(n), k)) for n, k in node.inputs]
        out_shapes, _ = _meta_outputs(node, ins, in_types)
        for k, shape in enumerate(out_shapes):
            shapes[(id(node), k)] = shape
    return shapes


def infer_graph_types(order, given):
    """{(id(node), index): dtype or None}; `given` maps id(variable) -> dtype."""
    table = _Table(_merge_type)
    for node in order:
        if node.op is None:
            dt = given.get(id(node))
            if dt is None and '__dtype__' in node.attrs:
                code = int(node.attrs['__dtype__'])
                dt = CODE_DTYPES.get(code) if code >= 0 else None
            table.put(node, (id(node), 0), dt)

    def step(node):
        _apply_rule(node, table, node.op.infer_type or same_type)
    _fixpoint(order, table, step)
    return table.values


def infer_call(op, p, tensors):
    """Shapes and dtypes operator `op` (parameters `p`) infers for its outputs on these input
    tensors, as lists indexed by output: the one-node graph of an imperative call. MXNetError
    where inference finds the inputs wrong."""
    from .graph import Node
    variables = [Node(None, name) for name in op.input_names(p)[:len(tensors)]]
    node = Node(op, op.name, {}, [(v, 0) for v in variables])
    node._params, node._params_attrs = p, {}
    order = variables + [node]
    shapes = infer_graph_shapes(order, {id(v): tuple(t.shape)
                                        for v, t in zip(variables, tensors)})
    types = infer_graph_types(order, {id(v): np_dtype(t.dtype)
                                      for v, t in zip(variables, tensors)})
    outputs = range(op.num_outputs(p))
    return [shapes.get((id(node), k)) for k in outputs], [types.get((id(node), k))
                                                         for k in outputs]


def _shape_hint(node):
    text = node.attrs.get('__shape__')
    if not text:
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        raise MXNetError('Variable %s has an unreadable __shape__ attribute %r'
                         % (node.name, text)) from None
    return _unknown_as_zero(value if isinstance(value, (tuple, list)) else (value,))


def _unknown_as_zero(shape):
    """Inference's form of a shape: an unknown dim (-1 under NumPy-shape semantics) is 0."""
    return tuple(max(int(d), 0) for d in shape)


def _as_reported(shape, partial):
    """A shape as MXNet reports it: under NumPy-shape semantics an unknown shape is None and an
    unknown dim -1; otherwise (legacy) 0s mark unknown dims and () an unknown shape."""
    if is_np_shape():
        return None if shape is None else tuple(d if d > 0 else -1 for d in shape)
    return () if shape is None and partial else shape


# ---------------------------------------------------------------------------------------------
# Symbol.infer_shape / infer_type
# ---------------------------------------------------------------------------------------------
def _given_by_name(symbol, args, kwargs, convert, what):
    """Map user-given values (positional in list_arguments order, or by name) onto nodes."""
    if args and kwargs:
        raise ValueError('Can only specify known argument %ss either by positional or kwargs '
                         'way.' % what)
    arguments, aux = symbol._variables()
    given = {}
    if args:
        if len(args) > len(arguments):
            raise MXNetError('infer_%s: %d positional values for %d arguments'
                             % (what, len(args), len(arguments)))
        for node, value in zip(arguments, args):
            if value is not None:
                given[id(node)] = convert(node.name, value)
        return given
    by_name = {}
    for node in arguments + aux:
        by_name.setdefault(node.name, []).append(node)
    for key, value in kwargs.items():
        if key not in by_name:
            raise MXNetError('Keyword argument name %s not found.\nCandidate arguments:\n\t%s'
                             % (key, '\n\t'.join(n.name for n in arguments)))
        if value is None:
            continue
        for node in by_name[key]:
            given[id(node)] = convert(key, value)
    return given


def _as_shape(name, value):
    if not isinstance(value, tuple):
        raise TypeError("Arguments need to be shapes (tuple), but '%s' is %s." % (name, type(value)))
    return _unknown_as_zero(value)


def infer_shape(symbol, args, kwargs, partial):
    order = symbol._nodes()
    arguments, aux = symbol._variables()
    given = _given_by_name(symbol, args, kwargs, _as_shape, 'shape')
    try:
        table = infer_graph_shapes(order, given)
    except MXNetError:
        print('infer_shape error. Arguments:')
        for node in arguments:
            if id(node) in given:
                print('  %s: %s' % (node.name, given[id(node)]))
        raise
    arg_shapes = [table.get((id(n), 0)) for n in arguments]
    aux_shapes = [table.get((id(n), 0)) for n in aux]
    out_shapes = [table.get((id(n), i)) for n, i in symbol._entries]
    if partial:
        return tuple([_as_reported(s, True) for s in shapes]
                     for shapes in (arg_shapes, out_shapes, aux_shapes))
    unknown = [(n.name, s) for n, s in zip(arguments + aux, arg_shapes + aux_shapes)
               if not known(s)]
    if unknown or not all(known(s) for s in out_shapes):
        lines = ['%s: %s' % (name, _as_reported(s, True)) for name, s in unknown[:10]]
        if len(unknown) > 10:
            lines.append('...')
        warnings.warn('Cannot decide shape for the following arguments (0s in shape means '
                      'unknown dimensions). Consider providing them as input:\n\t'
                      + '\n\t'.join(lines), stacklevel=3)
        return None, None, None
    return arg_shapes, out_shapes, aux_shapes


def _as_dtype(name, value):
    try:
        return np_dtype(value)
    except TypeError:
        raise TypeError("Argument '%s' needs a dtype, got %r" % (name, value)) from None


def infer_type(symbol, args, kwargs, partial):
    order = symbol._nodes()
    arguments, aux = symbol._variables()
    given = _given_by_name(symbol, args, kwargs, _as_dtype, 'type')
    table = infer_graph_types(order, given)
    as_type = lambda t: None if t is None else t.type   # noqa: E731  (numpy type classes)
    arg_types = [table.get((id(n), 0)) for n in arguments]
    aux_types = [table.get((id(n), 0)) for n in aux]
    out_types = [table.get((id(n), i)) for n, i in symbol._entries]
    if not partial and any(t is None for t in arg_types + aux_types + out_types):
        names = [n.name for n, t in zip(arguments + aux, arg_types + aux_types) if t is None]
        warnings.warn('Cannot decide type for the following arguments. Consider providing them '
                      'as input:\n\t' + '\n\t'.join('%s: None' % n for n in names), stacklevel=3)
        return None, None, None
    return ([as_type(t) for t in arg_types], [as_type(t) for t in out_types],
            [as_type(t) for t in aux_types])

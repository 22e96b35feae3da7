"""Symbolic control flow: _foreach, _while_loop and _cond, operator nodes that carry subgraphs.

A node's subgraphs (Symbols, node.subgraphs; in MXNet's JSON the node's "subgraphs" list) reach
the forward as `p.subgraphs`. Each step runs a subgraph by running its operators in order on
torch tensors (run_graph), so autograd differentiates through the loop as it ran. The inputs of
a subgraph are its list_inputs(); the *_locs parameters say which node input feeds which of
them, as MXNet 1.9.1 writes them:

* _foreach(body; data..., states..., free...): in_data_locs / in_state_locs / remain_locs are
  the body's input positions of the sliced data, the states and the other inputs; the outputs
  are the num_out_data per-step outputs stacked on axis 0, then the final states.
* _while_loop(cond, func; inputs...): the loop variables are the first len(func_var_locs)
  inputs; cond_input_locs / func_input_locs pick each subgraph's inputs from the node's current
  inputs, func_var_locs the func inputs that are loop variables. The outputs are the per-step
  outputs stacked and padded with zeros to max_iterations rows, then the final variables.
* _cond(pred, then, else; inputs...): cond/then/else_input_locs pick each subgraph's inputs.

The builders (foreach, while_loop, cond) make these nodes from Python functions over Symbols,
for mx.sym.contrib.
"""
import torch

from ..base import MXNetError
from .params import Int, Shape
from .registry import OpDef, get_op, register
from .shapes import require


class Subgraphs(tuple):
    """The subgraph Symbols of a node (hashed by identity: Symbols compare elementwise)."""
    __hash__ = object.__hash__

    def __eq__(self, other):
        return self is other


# ---------------------------------------------------------------------------------------------
# running a subgraph
# ---------------------------------------------------------------------------------------------
def run_graph(symbol, inputs, train):
    """The outputs (a list of tensors) of `symbol` with its list_inputs() bound to `inputs`."""
    from ..symbol.graph import topo_order
    order = topo_order(symbol._entries)
    variables = [n for n in order if n.op is None]
    require(len(variables) == len(inputs), 'subgraph takes %d inputs, got %d', len(variables),
            len(inputs))
    values = {(id(n), 0): x for n, x in zip(variables, inputs)}
    device = inputs[0].device if inputs else torch.device('cpu')
    for node in order:
        if node.op is None:
            continue
        fn = node.op.bind_forward(node.params, train, device)
        result = fn(*[values[(id(c), k)] for c, k in node.inputs])
        result = result if isinstance(result, (tuple, list)) else (result,)
        for k, value in enumerate(result):
            values[(id(node), k)] = value
    return [values[(id(n), k)] for n, k in symbol._entries]


def _graphs(p, count, op):
    graphs = p.get('subgraphs')
    require(graphs is not None and len(graphs) == count, '%s needs %d subgraphs, got %s', op,
            count, None if graphs is None else len(graphs))
    return graphs


def _foreach(p, *inputs, train=False):
    (body,) = _graphs(p, 1, '_foreach')
    n_data, n_states = len(p.in_data_locs), len(p.in_state_locs)
    data, states = inputs[:n_data], list(inputs[n_data:n_data + n_states])
    free = inputs[n_data + n_states:]
    slots = [None] * (n_data + n_states + len(free))
    for loc, x in zip(p.remain_locs, free):
        slots[loc] = x
    steps = data[0].shape[0] if data else 0
    columns = [[] for _ in range(p.num_out_data)]
    for t in range(steps):
        for loc, x in zip(p.in_data_locs, data):
            slots[loc] = x[t]
        for loc, x in zip(p.in_state_locs, states):
            slots[loc] = x
        outs = run_graph(body, slots, train)
        for column, value in zip(columns, outs[:p.num_out_data]):
            column.append(value)
        states = outs[p.num_out_data:]
    return _single([torch.stack(c) for c in columns] + list(states))


def _while_loop(p, *inputs, train=False):
    cond, func = _graphs(p, 2, '_while_loop')
    current = list(inputs)
    n_vars = len(p.func_var_locs)
    columns = [[] for _ in range(p.num_out_data)]
    for _ in range(p.max_iterations):
        (flag,) = run_graph(cond, [current[i] for i in p.cond_input_locs], train)
        if not bool(flag.reshape(-1)[0]):
            break
        outs = run_graph(func, [current[i] for i in p.func_input_locs], train)
        for column, value in zip(columns, outs[:p.num_out_data]):
            column.append(value)
        # loop variable k feeds func input func_var_locs[k], i.e. node input
        # func_input_locs[func_var_locs[k]]
        for k, value in enumerate(outs[p.num_out_data:p.num_out_data + n_vars]):
            current[p.func_input_locs[p.func_var_locs[k]]] = value
    if columns and not columns[0]:        # no step ran: the outputs' shapes by inference
        given = [tuple(inputs[i].shape) for i in p.func_input_locs]
        _, shapes = _subgraph_infer(func, given, 'shape')
        from ..base import np_dtype
        _, dtypes = _subgraph_infer(func, [np_dtype(inputs[i].dtype) for i in p.func_input_locs],
                                    'type')
        for column, shape, dtype in zip(columns, shapes, dtypes):
            require(shape is not None, '_while_loop: no step ran and the shape of its outputs '
                    'cannot be inferred')
            column.append(torch.zeros(shape, dtype=_torch_dtype(dtype, inputs[0].dtype)))
        columns = [[c[0]] for c in columns]
        zero_steps = True
    else:
        zero_steps = False
    results = []
    for column in columns:
        out = torch.stack(column)
        if zero_steps:
            out = out[:0]
        pad = p.max_iterations - out.shape[0]
        if pad:
            out = torch.cat([out, out.new_zeros((pad,) + tuple(out.shape[1:]))])
        results.append(out)
    final = [current[p.func_input_locs[loc]] for loc in p.func_var_locs]
    return _single(results + final)


def _torch_dtype(dtype, default):
    from ..base import torch_dtype
    return default if dtype is None else torch_dtype(dtype)


def _cond(p, *inputs, train=False):
    pred, then, other = _graphs(p, 3, '_cond')
    (flag,) = run_graph(pred, [inputs[i] for i in p.cond_input_locs], train)
    branch, locs = (then, p.then_input_locs) if bool(flag.reshape(-1)[0]) else \
        (other, p.else_input_locs)
    return _single(run_graph(branch, [inputs[i] for i in locs], train))


def _single(outs):
    return tuple(outs) if len(outs) != 1 else outs[0]


# ---------------------------------------------------------------------------------------------
# shape and type inference through the subgraphs
# ---------------------------------------------------------------------------------------------
def _subgraph_infer(graph, given, kind):
    """(input shapes/types in list_inputs order, output shapes/types) of a subgraph given some
    of its inputs' (by position)."""
    from ..symbol.graph import topo_order
    from ..symbol.infer import infer_graph_shapes, infer_graph_types
    order = topo_order(graph._entries)
    variables = [n for n in order if n.op is None]
    known = {id(v): g for v, g in zip(variables, given) if g is not None}
    table = (infer_graph_shapes if kind == 'shape' else infer_graph_types)(order, known)
    return ([table.get((id(v), 0)) for v in variables],
            [table.get((id(n), k)) for n, k in graph._entries])


def _usable(shape):
    return shape is not None and (len(shape) == 0 or all(shape))


def _fill(ins, node_locs, found):
    """ins with what the subgraph found for them: unknown types, unknown or partial shapes."""
    ins = list(ins)
    for i, value in zip(node_locs, found):
        if value is None:
            continue
        if not isinstance(value, tuple):
            ins[i] = value if ins[i] is None else ins[i]
        elif _usable(value) and (ins[i] is None or not _usable(ins[i])):
            ins[i] = value
    return ins


def _foreach_infer(kind):
    def rule(p, ins, outs):
        (body,) = _graphs(p, 1, '_foreach')
        n_data, n_states = len(p.in_data_locs), len(p.in_state_locs)
        locs = list(p.in_data_locs) + list(p.in_state_locs) + list(p.remain_locs)
        given = [None] * len(locs)
        for i, loc in enumerate(locs):
            value = ins[i]
            if kind == 'shape' and i < n_data and value is not None:
                value = tuple(value[1:])
            given[loc] = value
        found, results = _subgraph_infer(body, given, kind)
        back = []
        for i, loc in enumerate(locs):
            value = found[loc]
            if kind == 'shape' and i < n_data:
                value = None    # a slice's shape does not give the data's length
            back.append(value)
        ins = _fill(ins, range(len(locs)), back)
        if kind == 'shape':
            steps = ins[0][0] if n_data and ins[0] is not None else 0
            outs = [None if r is None else ((steps,) + tuple(r) if i < p.num_out_data else r)
                    for i, r in enumerate(results)]
        else:
            outs = results
        return ins, outs
    return rule


def _while_infer(kind):
    def rule(p, ins, outs):
        cond, func = _graphs(p, 2, '_while_loop')
        given = [ins[i] for i in p.func_input_locs]
        found, results = _subgraph_infer(func, given, kind)
        ins = _fill(ins, p.func_input_locs, found)
        cfound, _ = _subgraph_infer(cond, [ins[i] for i in p.cond_input_locs], kind)
        ins = _fill(ins, p.cond_input_locs, cfound)
        if kind == 'shape':
            results = [None if r is None else ((p.max_iterations,) + tuple(r)
                                               if i < p.num_out_data else r)
                       for i, r in enumerate(results)]
        return ins, results
    return rule


def _cond_infer(kind):
    def rule(p, ins, outs):
        pred, then, other = _graphs(p, 3, '_cond')
        results = None
        for graph, locs in ((then, p.then_input_locs), (other, p.else_input_locs)):
            found, branch = _subgraph_infer(graph, [ins[i] for i in locs], kind)
            ins = _fill(ins, locs, found)
            if results is None or any(r is None for r in results):
                results = branch
        return ins, results
    return rule


def _count(p, subgraphs):
    return ['data%d' % i for i in range(p.num_args - subgraphs)]


def _outputs(p):
    return ['output%d' % i for i in range(p.num_outputs)]


_LOCS = Shape(())
register(OpDef('_foreach', _foreach, mode_dependent=True,
               params={'num_args': Int(), 'num_outputs': Int(), 'num_out_data': Int(),
                       'in_state_locs': _LOCS, 'in_data_locs': _LOCS, 'remain_locs': _LOCS},
               inputs=lambda p: _count(p, 1), outputs=_outputs,
               infer_shape=_foreach_infer('shape'), infer_type=_foreach_infer('type')))
register(OpDef('_while_loop', _while_loop, mode_dependent=True,
               params={'num_args': Int(), 'num_outputs': Int(), 'num_out_data': Int(),
                       'max_iterations': Int(), 'cond_input_locs': _LOCS,
                       'func_input_locs': _LOCS, 'func_var_locs': _LOCS},
               inputs=lambda p: _count(p, 2), outputs=_outputs,
               infer_shape=_while_infer('shape'), infer_type=_while_infer('type')))
register(OpDef('_cond', _cond, mode_dependent=True,
               params={'num_args': Int(), 'num_outputs': Int(), 'cond_input_locs': _LOCS,
                       'then_input_locs': _LOCS, 'else_input_locs': _LOCS},
               inputs=lambda p: _count(p, 3), outputs=_outputs,
               infer_shape=_cond_infer('shape'), infer_type=_cond_infer('type')))
for _op in (get_op('_foreach'), get_op('_while_loop'), get_op('_cond')):
    _op.traceable = False       # they run sub-executors: compiled plans call them as they are


# ---------------------------------------------------------------------------------------------
# building the nodes from Python functions over Symbols (mx.sym.contrib)
# ---------------------------------------------------------------------------------------------
def _subgraph_name(base):
    """A fresh subgraph name (foreach0, foreach1, ...; counted in AttrScope._subgraph_names, as
    MXNet), prefixed by the enclosing subgraph's."""
    from ..attribute import AttrScope
    outer = AttrScope._active().get({}).get('__subgraph_name__', '')
    if outer:
        base = outer + '$' + base
    AttrScope._subgraph_names[base] += 1
    return '%s%d' % (base, AttrScope._subgraph_names[base] - 1)


def _flatten(value, what):
    """(list of single-output Symbols, format to regroup them)."""
    from ..symbol.symbol import Symbol
    if isinstance(value, Symbol):
        if len(value._entries) != 1:
            raise MXNetError('%s must be Symbols of one output each' % what)
        return [value], None
    if not isinstance(value, (list, tuple)):
        raise MXNetError('%s should be a Symbol or a nested list of Symbols, got %s'
                         % (what, type(value).__name__))
    flat, fmt = [], []
    for item in value:
        items, sub = _flatten(item, what)
        flat.extend(items)
        fmt.append(sub)
    return flat, fmt


def _regroup(flat, fmt):
    if fmt is None:
        return flat.pop(0)
    return [_regroup(flat, sub) for sub in fmt]


def _entry_name(symbol):
    node, index = symbol._entries[0]
    return '%s-%d' % (node.name, index)


def _placeholders(symbols):
    from ..symbol import var
    return [var(_entry_name(s)) for s in symbols]


def _subgraph(outputs, name):
    """A Group of the outputs, each an operator of this subgraph (identity where it is an input
    or outside), with what comes from outside cut into variables: (group, {variable name: outer
    entry})."""
    from ..symbol.graph import Node
    from ..symbol.register import create
    from ..symbol.symbol import Symbol

    def inside(node):
        return node.op is not None and node.attrs.get('__subgraph_name__') == name
    inputs = set(Symbol([e for s in outputs for e in s._entries]).list_inputs())
    heads = []
    for s in outputs:
        node = s._entries[0][0]
        if not inside(node) or s.name in inputs:
            s = create('_copy', [s], {}, func_name='identity')
        heads.append(s._entries[0])
    cut, memo, seen, stack = {}, {}, set(), [n for n, _ in heads]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for i, (child, k) in enumerate(node.inputs):
            if child.op is None:
                continue
            if inside(child):
                stack.append(child)
                continue
            if (id(child), k) not in memo:
                var_name = child.output_names()[k] if k < len(child.output_names()) else \
                    '%s_output%d' % (child.name, k)
                memo[(id(child), k)] = Node(None, var_name)
                cut[var_name] = (child, k)
            node.inputs[i] = (memo[(id(child), k)], 0)
    group = Symbol(heads)
    names = group.list_inputs()
    if len(set(names)) != len(names):
        raise MXNetError("The inputs of the subgraph don't have unique names: %s" % names)
    return group, cut


def _outer_entries(graph, cut, bound):
    """The outer entry feeding each input of a subgraph: bound ({name: entry}: placeholders),
    cut variables, else the (free) variable itself."""
    from ..symbol.graph import topo_order
    entries = []
    for node in topo_order(graph._entries):
        if node.op is None:
            entries.append(bound.get(node.name) or cut.get(node.name) or (node, 0))
    return entries


def _make_node(op_name, attrs, inputs, graphs):
    from ..attribute import AttrScope
    from ..name import NameManager
    from ..symbol.graph import Node
    from ..symbol.symbol import Symbol
    from .registry import get_op
    op = get_op(op_name)
    text = AttrScope._active().get({})
    text.update((k, str(list(v)) if isinstance(v, (list, tuple)) else str(v))
                for k, v in attrs.items())
    node = Node(op, NameManager.current.get(None, op_name), text, inputs, graphs)
    return [Symbol([(node, i)]) for i in range(node.num_outputs())]


def foreach(body, data, init_states, name='foreach'):
    """Symbolic foreach: body(data slices, states) -> (outputs, new states) over axis 0."""
    from ..attribute import AttrScope
    flat_data, data_fmt = _flatten(data, 'foreach data')
    flat_states, state_fmt = _flatten(init_states, 'foreach init_states')
    sub = _subgraph_name(name)
    with AttrScope(__subgraph_name__=sub):
        slices = _placeholders(flat_data)
        states = _placeholders(flat_states)
        outs, new_states = body(_regroup(list(slices), data_fmt),
                                _regroup(list(states), state_fmt))
        outs, out_fmt = _flatten(outs, 'foreach outputs')
        new_states, new_fmt = _flatten(new_states, 'foreach states')
        if new_fmt != state_fmt:
            raise MXNetError('The input and output loop_vars have different format')
        graph, cut = _subgraph(outs + new_states, sub)
    names = graph.list_inputs()
    data_names = [_entry_name(s) for s in flat_data]
    state_names = [_entry_name(s) for s in flat_states]
    for what, wanted in (('data', data_names), ('state', state_names)):
        for n in wanted:
            if n not in names:
                raise AssertionError('the %s arrays have to be used in the loop body' % what)
    bound = {n: s._entries[0] for n, s in zip(data_names + state_names,
                                              flat_data + flat_states)}
    entries = _outer_entries(graph, cut, bound)
    remain = [i for i, n in enumerate(names) if n not in data_names and n not in state_names]
    inputs = [s._entries[0] for s in flat_data + flat_states] + [entries[i] for i in remain]
    result = _make_node('_foreach', {
        'num_args': len(inputs) + 1, 'num_outputs': len(outs) + len(new_states),
        'num_out_data': len(outs), 'in_data_locs': [names.index(n) for n in data_names],
        'in_state_locs': [names.index(n) for n in state_names], 'remain_locs': remain},
        inputs, [graph])
    return (_regroup(result[:len(outs)], out_fmt), _regroup(result[len(outs):], state_fmt))


def _union(graphs_and_cuts, bound, share_variables):
    """Node inputs and each subgraph's input locations. The loop variables (bound) are shared
    between the subgraphs; with share_variables (cond) free variables of one name too. Other
    inputs, cut entries above all, get an input each even where two feed on one outer entry
    (a loop variable's update must not reach a free use of its initial value)."""
    inputs, where, locs = [], {}, []
    for graph, cut in graphs_and_cuts:
        mine = []
        for name, entry in zip(graph.list_inputs(), _outer_entries(graph, cut, bound)):
            if name in bound:
                key = ('bound', name)
            elif share_variables and name not in cut:
                key = ('variable', name)
            else:
                key = ('own', len(inputs))
            if key not in where:
                where[key] = len(inputs)
                inputs.append(entry)
            mine.append(where[key])
        locs.append(mine)
    return inputs, locs


def while_loop(cond, func, loop_vars, max_iterations=None, name='while_loop'):
    """Symbolic while_loop: while cond(*vars): (outputs, vars) = func(*vars), at most
    max_iterations steps."""
    from ..attribute import AttrScope
    if max_iterations is None:
        raise ValueError('max_iterations should be specified')
    max_iterations = int(max_iterations.asscalar() if hasattr(max_iterations, 'asscalar')
                         else max_iterations)
    flat_vars, var_fmt = _flatten(loop_vars, 'while loop_vars')
    if not flat_vars:
        raise ValueError('loop_vars should contain at least one element')
    var_names = [_entry_name(s) for s in flat_vars]

    def subgraph(base, fn):
        sub = _subgraph_name(base)
        with AttrScope(__subgraph_name__=sub):
            placeholders = _regroup(_placeholders(flat_vars), var_fmt)
            placeholders = placeholders if isinstance(placeholders, list) else [placeholders]
            outs, new_vars = fn(placeholders)
            graph, cut = _subgraph(outs + new_vars, sub)
        return graph, cut, len(outs), len(outs) + len(new_vars)

    def run_cond(vs):
        result = cond(*vs)
        from ..symbol.symbol import Symbol
        if not isinstance(result, Symbol):
            raise ValueError('Return of cond must be a Symbol')
        return [], [result]

    def run_func(vs):
        step, new = func(*vs)
        step, run_func.out_fmt = _flatten([] if step is None else list(step)
                                          if isinstance(step, tuple) else step, 'while output')
        new, _ = _flatten([] if new is None else list(new) if isinstance(new, tuple) else new,
                          'while loop_vars')
        if len(new) != len(flat_vars):
            raise ValueError('The number of loop_vars should be consistent during the loop')
        return step, new

    cond_g, cond_cut, _, _ = subgraph(name + '_cond', run_cond)
    func_g, func_cut, n_out, n_all = subgraph(name + '_func', run_func)
    bound = {n: s._entries[0] for n, s in zip(var_names, flat_vars)}
    inputs, (cond_locs, func_locs) = _union([(cond_g, cond_cut), (func_g, func_cut)], bound,
                                              False)
    func_names = func_g.list_inputs()
    var_locs = []
    for k, n in enumerate(var_names):
        if n not in func_names:
            raise ValueError("The %d-th loop_var doesn't involve into the computation" % (k + 1))
        var_locs.append(func_names.index(n))
    result = _make_node('_while_loop', {
        'num_args': len(inputs) + 2, 'num_outputs': n_all, 'num_out_data': n_out,
        'max_iterations': max_iterations, 'cond_input_locs': cond_locs,
        'func_input_locs': func_locs, 'func_var_locs': var_locs}, inputs, [cond_g, func_g])
    return _regroup(result[:n_out], run_func.out_fmt), _regroup(result[n_out:], var_fmt)


def cond(pred, then_func, else_func, name='cond'):
    """Symbolic if-then-else: then_func() if pred (a one-element Symbol) else else_func()."""
    from ..attribute import AttrScope

    def subgraph(base, fn):
        sub = _subgraph_name(base)
        with AttrScope(__subgraph_name__=sub):
            outs, fmt = _flatten(fn(), 'cond outputs')
            graph, cut = _subgraph(outs, sub)
        return graph, cut, len(outs), fmt

    pred_g, pred_cut, _, _ = subgraph(name + '_pred', lambda: pred)
    then_g, then_cut, n_then, fmt = subgraph(name + '_then', then_func)
    else_g, else_cut, n_else, _ = subgraph(name + '_else', else_func)
    if n_then != n_else:
        raise MXNetError('cond: then_func gives %d outputs and else_func %d' % (n_then, n_else))
    inputs, (pred_locs, then_locs, else_locs) = _union(
        [(pred_g, pred_cut), (then_g, then_cut), (else_g, else_cut)], {}, True)
    result = _make_node('_cond', {
        'num_args': len(inputs) + 3, 'num_outputs': n_then, 'cond_input_locs': pred_locs,
        'then_input_locs': then_locs, 'else_input_locs': else_locs}, inputs,
        [pred_g, then_g, else_g])
    return _regroup(result, fmt)

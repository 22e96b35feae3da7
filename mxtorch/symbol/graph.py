"""The graph a Symbol points into: Nodes and the walks over them.

A Node is a variable (`op is None`) or an operator instance: its OpDef, a name, its attrs (all
strings, as in MXNet's JSON: operator parameters and `__x__` attributes) and its inputs, a list of
(node, output index) entries. Control-flow operators also carry subgraphs (Symbols), which their
parsed params hold as `subgraphs`. Nodes are shared between symbols, as in MXNet, so setting an
attribute on a node is seen by every symbol that contains it.
"""
from ..base import MXNetError


class Node:
    __slots__ = ('op', 'name', 'attrs', 'inputs', 'subgraphs', '_params', '_params_attrs')

    def __init__(self, op, name, attrs=None, inputs=(), subgraphs=()):
        self.op = op
        self.name = name
        self.attrs = dict(attrs or {})
        self.inputs = list(inputs)
        self.subgraphs = list(subgraphs)
        self._params = None
        self._params_attrs = None

    @property
    def is_variable(self):
        return self.op is None

    @property
    def params(self):
        """Parsed operator parameters (re-parsed when attrs change)."""
        if self.op is None:
            return None
        if self._params is None or self._params_attrs != self.attrs:
            try:
                self._params = self.op.parse_params(self.attrs)
                if self.subgraphs:
                    from ..ops.control_flow import Subgraphs
                    self._params = type(self._params)(self._params,
                                                      subgraphs=Subgraphs(self.subgraphs))
            except MXNetError as err:
                raise MXNetError('Error in operator %s: %s' % (self.name, err)) from None
            self._params_attrs = dict(self.attrs)
        return self._params

    def num_outputs(self):
        return 1 if self.op is None else self.op.num_outputs(self.params)

    def num_visible_outputs(self):
        return 1 if self.op is None else self.op.num_visible_outputs(self.params)

    def output_names(self):
        """Visible output names as list_outputs shows them."""
        if self.op is None:
            return [self.name]
        prefix = self.name + '_' if self.name else ''      # (atomic symbols have no name)
        return [prefix + n for n in self.op.visible_output_names(self.params)]

    def input_names(self):
        return self.op.input_names(self.params)

    def aux_inputs(self):
        """The (node, output) entries bound to the inputs this operator mutates."""
        return [self.inputs[k] for k in self.op.aux_positions(self.params, len(self.inputs))]

    def num_args(self):
        """How many inputs are arguments (the rest are auxiliary states)."""
        return len(self.op.arg_names(self.params))

    def __repr__(self):
        return '<Node %s %s>' % (self.op.name if self.op else 'Variable', self.name)


def topo_order(heads):
    """Depth-first post-order over the nodes reachable from `heads` (inputs in order), each once.

    This is MXNet's node order: of its JSON, list_arguments and get_internals.
    """
    order, seen = [], set()
    for head, _ in heads:
        if id(head) in seen:
            continue
        seen.add(id(head))
        stack = [(head, iter(head.inputs))]
        while stack:
            node, it = stack[-1]
            for child, _ in it:
                if id(child) not in seen:
                    seen.add(id(child))
                    stack.append((child, iter(child.inputs)))
                    break
            else:
                stack.pop()
                order.append(node)
    return order


def mutated_variables(order):
    """ids of variable nodes some operator mutates (bound to an aux input)."""
    mutated = set()
    for node in order:
        if node.op is not None:
            for child, _ in node.aux_inputs():
                mutated.add(id(child))
    return mutated


def copy_graph(heads, replace=None):
    """Copy every node reachable from heads; `replace` maps id(variable node) -> entry."""
    replace = replace or {}
    memo = {}
    for node in topo_order(heads):
        if id(node) in replace:
            continue
        memo[id(node)] = Node(node.op, node.name, node.attrs,
                              [_copied(e, memo, replace) for e in node.inputs], node.subgraphs)
    return [_copied(e, memo, replace) for e in heads]


def _copied(entry, memo, replace):
    node, index = entry
    if id(node) in replace:
        return replace[id(node)]
    return (memo[id(node)], index)

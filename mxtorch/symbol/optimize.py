"""Graph passes run when a symbol is bound: the operators' own rewrites (their `bind_rewrite`
rules, e.g. unrolled recurrent cells fused into one recurrent operator, ops/rnn_unroll.py), then
common-subexpression elimination.

As MXNet (MXNET_ELIMINATE_COMMON_EXPR, on unless set to 0), two operator nodes with one
operator, the same attributes and the same inputs compute the same values, so the later one is
dropped and its consumers read the earlier one. Nodes that draw random numbers, behave
differently in training, update auxiliary states or create arrays from nothing are kept. Where
merging leaves two outputs of the graph on one value, a copy keeps them apart.
"""
import os

from ..ops.elemwise import COPY_OP
from ..ops.registry import canonical_ops
from .graph import Node, topo_order


def enabled():
    return os.environ.get('MXNET_ELIMINATE_COMMON_EXPR', '1') != '0'


def _mergeable(node):
    op = node.op
    return not (op.random or op.mode_dependent or op.creation or op.update_aux is not None
                or len(node.inputs) > node.num_args())


def fuse(symbol, shapes):
    """Bind-time fusions MXNet's executor does not do: every operator's `bind_rewrite` rule
    in turn (unrolled LSTM/GRU cells as one recurrent operator, ops/rnn_unroll.py;
    MXTORCH_FUSE_RNN=0 turns that one off). `symbol` itself if none applies; `shapes` gets the
    new nodes' shapes."""
    for op in canonical_ops().values():
        if op.bind_rewrite is not None:
            symbol = op.bind_rewrite(symbol, shapes)
    return symbol


def eliminate_common_expr(symbol, shapes=None):
    """The symbol with repeated subexpressions computed once (`symbol` itself if none), as
    MXNet's bind does (MXNET_ELIMINATE_COMMON_EXPR=0 turns it off at bind)."""
    return _merge_common(symbol, shapes)


def mxnet_passes(symbol, shapes):
    """The bind-time passes MXNet itself runs (common-subexpression elimination, unless
    MXNET_ELIMINATE_COMMON_EXPR=0)."""
    return _merge_common(symbol, shapes) if enabled() else symbol


def _merge_common(symbol, shapes=None):
    """The symbol with repeated subexpressions computed once (`symbol` itself if none). Nodes
    whose inputs did not change are kept; `shapes` ({(id(node), k): shape}), if given, gets
    the entries of the new nodes too."""
    from .symbol import Symbol
    memo, canonical, merged = {}, {}, False
    for node in topo_order(symbol._entries):
        if node.op is None:
            memo[id(node)] = node
            continue
        inputs = [(memo[id(child)], k) for child, k in node.inputs]
        key = None
        if _mergeable(node):
            key = (node.op.name, tuple(sorted(node.attrs.items())),
                   tuple((id(child), k) for child, k in inputs))
            if key in canonical:
                memo[id(node)] = canonical[key]
                merged = True
                continue
        if all(n is c for (n, _), (c, _) in zip(inputs, node.inputs)):
            new = node
        else:
            new = Node(node.op, node.name, node.attrs, inputs)
            if shapes is not None:
                for k in range(node.num_outputs()):
                    if (id(node), k) in shapes:
                        shapes[(id(new), k)] = shapes[(id(node), k)]
        if key is not None:
            canonical[key] = new
        memo[id(node)] = new
    if not merged:
        return symbol
    entries, last = [], {}
    for node, k in symbol._entries:
        entry = (memo[id(node)], k)
        key = (id(entry[0]), k)
        # outputs that were one value before merging stay one (MXNet copies only new ones)
        if key in last and last[key][1] != (id(node), k):
            prev = last[key][0]
            copy = Node(COPY_OP, '%s_%d_copy' % (prev[0].name, prev[1]), {}, [prev])
            if shapes is not None and (id(prev[0]), prev[1]) in shapes:
                shapes[(id(copy), 0)] = shapes[(id(prev[0]), prev[1])]
            last[key] = ((copy, 0), (id(node), k))
            entries.append((copy, 0))
            continue
        last[key] = (entry, (id(node), k))
        entries.append(entry)
    return Symbol(entries)

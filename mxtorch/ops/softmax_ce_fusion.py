"""The bind-time rewrite of `_softmax_cross_entropy_per_sample` (its `bind_rewrite` rule, run by
symbol/optimize.fuse): Gluon's SoftmaxCrossEntropyLoss graph (sparse labels, no weights),

    mean(_mul_scalar(pick(log_softmax(data, axis=a), label, axis=a, keepdims=True), -1),
         axis=b, exclude=True)

becomes one `_softmax_cross_entropy_per_sample(data, label, axis=a, batch_axis=b)` node, which
computes the same values and gradients (a 2-d batch: torch's cross_entropy, log_softmax and
nll_loss in one pass). Only where the chain's intermediate values are read by nothing else
(not by another node, not as outputs of the graph) and every attribute is the loss's: plain
log_softmax (no temperature, dtype or length), pick in 'clip' mode, a negation by -1 and a
mean over all axes but one. The saved graph (export, tojson) is the original.

MXTORCH_FUSE_LOSS=0 turns the rewrite off.
"""
import os

from .registry import get_op
from .rnn_unroll import _Graph


def enabled():
    return os.environ.get('MXTORCH_FUSE_LOSS', '1') != '0'


def _only_input(graph, node, op):
    """The node feeding `node`'s first input, when it runs `op` and `node` alone reads it."""
    entry = node.inputs[0]
    source = entry[0]
    if source.op is not op or entry[1] != 0 or graph.only_reader(entry) is not node:
        return None
    return source


def _match(graph, mean, ops):
    """(data entry, label entry, axis, batch_axis) where `mean` ends the loss chain, else None."""
    negate, pick, log_softmax = ops
    p = mean.params
    if not p.exclude or p.keepdims or p.axis is None or len(p.axis) != 1:
        return None
    neg = _only_input(graph, mean, negate)
    if neg is None or neg.params.scalar != -1.0:
        return None
    picked = _only_input(graph, neg, pick)
    if picked is None or not picked.params.keepdims or picked.params.mode != 'clip' or \
            picked.params.axis is None:
        return None
    logp = _only_input(graph, picked, log_softmax)
    q = logp.params if logp is not None else None
    if q is None or q.temperature not in (None, 1.0) or q.dtype not in (None, 'None') or \
            q.use_length:
        return None
    shape = graph.shapes.get((id(logp.inputs[0][0]), logp.inputs[0][1]))
    if not shape:
        return None
    ndim = len(shape)
    if not (-ndim <= q.axis < ndim and -ndim <= picked.params.axis < ndim and
            -ndim <= p.axis[0] < ndim) or q.axis % ndim != picked.params.axis % ndim:
        return None
    return logp.inputs[0], picked.inputs[1], q.axis, p.axis[0]


def fuse_softmax_cross_entropy(symbol, shapes):
    """`symbol` with each softmax cross-entropy chain as one `_softmax_cross_entropy_per_sample`
    node (itself if none, or when MXTORCH_FUSE_LOSS=0); `shapes` gets the new nodes' shapes."""
    if not enabled():
        return symbol
    from ..symbol.graph import topo_order
    mean = get_op('mean')
    means = [n for n in topo_order(symbol._entries) if n.op is mean]
    if not means:                    # (most graphs: no reader map built)
        return symbol
    graph = _Graph(symbol, shapes)
    ops = (get_op('_mul_scalar'), get_op('pick'), get_op('log_softmax'))
    found = {}
    for node in means:
        match = _match(graph, node, ops)
        if match is not None:
            found[id(node)] = match
    if not found:
        return symbol
    from ..symbol.graph import Node
    from ..symbol.symbol import Symbol
    fused_op = get_op('_softmax_cross_entropy_per_sample')
    memo = {}

    def entry(e):
        return (memo[id(e[0])], e[1])

    for node in graph.order:
        if node.op is None:
            memo[id(node)] = node
            continue
        if id(node) in found:
            data, label, axis, batch_axis = found[id(node)]
            new = Node(fused_op, node.name, {'axis': str(axis), 'batch_axis': str(batch_axis)},
                       [entry(data), entry(label)])
        else:
            inputs = [entry(e) for e in node.inputs]
            if all(a[0] is b[0] for a, b in zip(inputs, node.inputs)):
                memo[id(node)] = node
                continue
            new = Node(node.op, node.name, node.attrs, inputs, node.subgraphs)
        for k in range(node.num_outputs()):
            if (id(node), k) in shapes:
                shapes[(id(new), k)] = shapes[(id(node), k)]
        memo[id(node)] = new
    return Symbol([entry(e) for e in symbol._entries])

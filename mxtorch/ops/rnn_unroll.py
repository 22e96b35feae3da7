"""The RNN operator's bind-time rewrite (its `bind_rewrite` rule, run by symbol/optimize.fuse):
a recurrent cell unrolled step by step becomes one fused RNN operator.

mx.rnn.LSTMCell / GRUCell and gluon.rnn.LSTMCell / GRUCell (hybridized), unrolled over T steps,
build T copies of one step -- i2h and h2h FullyConnected, the gate slices and activations and
the elementwise state update -- all reading the same four weights. Run step by step that is
~10 small operators per step; the RNN operator runs the same arithmetic in one kernel call.

A step is recognised only when its arithmetic is exactly the fused operator's (same gate
order: lstm (i, f, g, o), gru (r, z, n)) and its intermediate values are read by nothing but
the step itself. Steps linked through their states (c for lstm, h for gru) with the same
weights form a chain; a chain of two or more steps is replaced by

    RNN(data=<the step inputs, time-major>, parameters=Concat(W_ih, W_hh, b_ih, b_hh),
        state=<h0>, state_cell=<c0>, mode, state_size=H, num_layers=1)

whose output, split along time, feeds every reader of a step's h; the last c comes from the
operator's state output. The flat parameter vector is built in the graph from the original
weight variables, so gradients reach them unchanged. The step inputs are the split tensor
itself where they are the pieces of one split (or the time slices of a fused chain below, for
stacked layers), and the merged outputs (Concat of expand_dims, or stack, of every step's h)
become the operator's output itself. Anything else is left as it is.

MXTORCH_FUSE_RNN=0 turns the rewrite off.
"""
import os

from .registry import get_op


def enabled():
    return os.environ.get('MXTORCH_FUSE_RNN', '1') != '0'


# ---------------------------------------------------------------------------------------------
# reading the graph
# ---------------------------------------------------------------------------------------------
class _Graph:
    """The nodes of a symbol with, for every output entry, the nodes that read it."""

    def __init__(self, symbol, shapes):
        from ..symbol.graph import topo_order
        self.order = topo_order(symbol._entries)
        self.readers = {}
        for node in self.order:
            for child, k in node.inputs:
                self.readers.setdefault((id(child), k), []).append(node)
        self.heads = {(id(n), k) for n, k in symbol._entries}
        self.shapes = shapes

    def readers_of(self, entry):
        return self.readers.get((id(entry[0]), entry[1]), [])

    def only_reader(self, entry):
        """The one node reading `entry` (once), or None."""
        readers = self.readers_of(entry)
        if len(readers) != 1 or (id(entry[0]), entry[1]) in self.heads:
            return None
        return readers[0]

    def read_only_within(self, entry, nodes):
        return (id(entry[0]), entry[1]) not in self.heads and \
            all(id(r) in nodes for r in self.readers_of(entry))

    def shape(self, entry):
        return self.shapes.get((id(entry[0]), entry[1]))


def _is(node, name):
    return node is not None and node.op is not None and node.op.name == name


def _operands(node, name):
    """The two input entries of a binary `name` node, else None."""
    if _is(node, name) and len(node.inputs) == 2:
        return node.inputs
    return None


def _other(pair, entry):
    """The operand of `pair` that is not `entry` (None if entry is not in pair)."""
    if pair is None:
        return None
    if pair[0] == entry:
        return pair[1]
    if pair[1] == entry:
        return pair[0]
    return None


def _activation(node, kind):
    """node applies sigmoid/tanh (Activation or the named unary operator) -> its input."""
    if node is None or node.op is None or len(node.inputs) != 1:
        return None
    if node.op.name == kind or (node.op.name == 'Activation' and node.params.act_type == kind):
        return node.inputs[0]
    return None


def _gate_split(node, gates):
    """node splits its input into `gates` blocks along axis 1 (not squeezed)."""
    return _is(node, 'SliceChannel') and node.params.num_outputs == gates and \
        node.params.axis in (1, -1) and not node.params.squeeze_axis


def _dense(graph, entry, rows):
    """entry is a FullyConnected with a bias over 2-D data giving `rows` values -> the node."""
    node = entry[0]
    if not _is(node, 'FullyConnected') or node.params.no_bias or node.params.num_hidden != rows \
            or len(node.inputs) != 3:
        return None
    shape = graph.shape(node.inputs[0])
    if shape is None or len(shape) != 2 or 0 in shape:
        return None
    return node


class _Step:
    """One matched step: its nodes, the two FullyConnected nodes, its state entries."""

    def __init__(self, nodes, dense, h_prev, h, c_prev=None, c=None):
        self.nodes = nodes                  # {id: node} of everything the step computes
        self.dense = dense                  # (i2h, h2h) when known, else the two in any order
        self.h_prev, self.h = h_prev, h
        self.c_prev, self.c = c_prev, c

    def weights(self, dense):
        return tuple(dense.inputs[1:3])


# ---------------------------------------------------------------------------------------------
# one step
# ---------------------------------------------------------------------------------------------
def _lstm_step(graph, split):
    """The LSTM step around a 4-way gate split, or None. The i2h / h2h roles are left open."""
    if not _gate_split(split, 4):
        return None
    add = split.inputs[0][0]
    gates = _operands(add, 'elemwise_add')
    if gates is None or graph.only_reader((add, 0)) is not split:
        return None
    acts = [graph.only_reader((split, k)) for k in range(4)]
    kinds = ('sigmoid', 'sigmoid', 'tanh', 'sigmoid')
    if any(_activation(a, kind) != (split, k) for k, (a, kind) in enumerate(zip(acts, kinds))):
        return None
    in_gate, forget, cand, out_gate = [(a, 0) for a in acts]
    mul_ig = graph.only_reader(in_gate)
    if _other(_operands(mul_ig, 'elemwise_mul'), in_gate) != cand or \
            graph.only_reader(cand) is not mul_ig:
        return None
    mul_f = graph.only_reader(forget)
    c_prev = _other(_operands(mul_f, 'elemwise_mul'), forget)
    state = graph.only_reader((mul_f, 0))
    if c_prev is None or _other(_operands(state, 'elemwise_add'), (mul_f, 0)) != (mul_ig, 0) \
            or graph.only_reader((mul_ig, 0)) is not state:
        return None
    mul_h = graph.only_reader(out_gate)
    tanh_c = _other(_operands(mul_h, 'elemwise_mul'), out_gate)
    if tanh_c is None or _activation(tanh_c[0], 'tanh') != (state, 0) or \
            graph.only_reader(tanh_c) is not mul_h:
        return None
    hidden = graph.shape((mul_h, 0))
    if hidden is None or len(hidden) != 2:
        return None
    dense = [_dense(graph, e, 4 * hidden[1]) for e in gates]
    if None in dense or dense[0] is dense[1] or any(e[1] != 0 for e in gates) or \
            any(graph.only_reader((d, 0)) is not add for d in dense):
        return None
    if graph.shape(c_prev) != hidden or graph.shape((state, 0)) != hidden:
        return None
    nodes = {id(n): n for n in dense + [add, split] + acts +
             [mul_ig, mul_f, state, tanh_c[0], mul_h]}
    return _Step(nodes, tuple(dense), None, (mul_h, 0), c_prev, (state, 0))


def _one_minus(graph, node, z):
    """node computes 1 - z (_rminus_scalar, or ones_like(z) - z) -> the nodes, else None."""
    if _is(node, '_rminus_scalar') and node.params.scalar == 1 and node.inputs[0] == z:
        return [node]
    pair = _operands(node, 'elemwise_sub')
    if pair is not None and pair[1] == z and _is(pair[0][0], 'ones_like') and \
            pair[0][0].inputs[0] == z and graph.only_reader(pair[0]) is node:
        return [node, pair[0][0]]
    return None


def _gru_step(graph, split_x):
    """The GRU step whose input-side 3-way gate split is `split_x`, or None."""
    if not _gate_split(split_x, 3):
        return None
    add_n = graph.only_reader((split_x, 2))
    mul_r = _other(_operands(add_n, 'elemwise_add'), (split_x, 2))
    if mul_r is None or mul_r[1] != 0 or not _is(mul_r[0], 'elemwise_mul'):
        return None
    mul_r = mul_r[0]
    reset, split_h = None, None
    for a, b in (mul_r.inputs, mul_r.inputs[::-1]):
        if _gate_split(b[0], 3) and b[1] == 2 and b[0] is not split_x:
            reset, split_h = a, b[0]
    if split_h is None or graph.only_reader((split_h, 2)) is not mul_r or \
            graph.only_reader((mul_r, 0)) is not add_n:
        return None
    sums = []
    for k in (0, 1):
        node = graph.only_reader((split_x, k))
        if _other(_operands(node, 'elemwise_add'), (split_x, k)) != (split_h, k) or \
                graph.only_reader((split_h, k)) is not node:
            return None
        sums.append(node)
    r_act, z_act = graph.only_reader((sums[0], 0)), graph.readers_of((sums[1], 0))
    if _activation(r_act, 'sigmoid') != (sums[0], 0) or (r_act, 0) != reset or \
            graph.only_reader(reset) is not mul_r or len(z_act) != 1 or \
            _activation(z_act[0], 'sigmoid') != (sums[1], 0):
        return None
    z = (z_act[0], 0)
    n_act = graph.only_reader((add_n, 0))
    if _activation(n_act, 'tanh') != (add_n, 0):
        return None
    n = (n_act, 0)
    mul_n = graph.only_reader(n)
    minus = _other(_operands(mul_n, 'elemwise_mul'), n)
    out = graph.only_reader((mul_n, 0))
    mul_z = _other(_operands(out, 'elemwise_add'), (mul_n, 0))
    if minus is None or mul_z is None or not _is(mul_z[0], 'elemwise_mul') or \
            graph.only_reader(mul_z) is not out:
        return None
    minus_nodes = _one_minus(graph, minus[0], z)
    h_prev = _other(mul_z[0].inputs, z)
    if minus_nodes is None or h_prev is None or graph.only_reader(minus) is not mul_n:
        return None
    allowed = {id(n) for n in minus_nodes} | {id(mul_z[0])}      # each reads z once
    if not graph.read_only_within(z, allowed) or len(graph.readers_of(z)) != len(allowed):
        return None
    hidden = graph.shape((out, 0))
    if hidden is None or len(hidden) != 2 or graph.shape(h_prev) != hidden:
        return None
    dense = [_dense(graph, s.inputs[0], 3 * hidden[1]) for s in (split_x, split_h)]
    if None in dense or any(s.inputs[0][1] != 0 or graph.only_reader(s.inputs[0]) is not s
                            for s in (split_x, split_h)) or dense[1].inputs[0] != h_prev:
        return None
    nodes = {id(n): n for n in dense + [split_x, split_h, add_n, mul_r, r_act, z_act[0], n_act,
                                        mul_n, out, mul_z[0]] + sums + minus_nodes}
    return _Step(nodes, tuple(dense), h_prev, (out, 0))


# ---------------------------------------------------------------------------------------------
# chains of steps
# ---------------------------------------------------------------------------------------------
class _Chain:
    def __init__(self, mode, steps, weights):
        self.mode = mode
        self.steps = steps
        self.weights = weights          # (W_ih, b_ih, W_hh, b_hh) entries
        self.nodes = {}
        for step in steps:
            self.nodes.update(step.nodes)

    @property
    def inputs(self):
        """The entries the chain reads from outside: step inputs, begin states, weights."""
        first = self.steps[0]
        states = [first.h_prev] + ([first.c_prev] if self.mode == 'lstm' else [])
        return [s.dense[0].inputs[0] for s in self.steps] + states + list(self.weights)


def _lstm_chains(graph, steps):
    """Chains of LSTM steps linked by c (and h), all with one set of weights."""
    by_c_prev = {}
    for step in steps:
        by_c_prev.setdefault((id(step.c_prev[0]), step.c_prev[1]), []).append(step)
    successor, has_pred = {}, set()
    for step in steps:
        nxt = by_c_prev.get((id(step.c[0]), step.c[1]), [])
        if len(nxt) != 1:
            continue
        nxt = nxt[0]
        h2h = [d for d in nxt.dense if d.inputs[0] == step.h]
        if len(h2h) != 1:
            continue
        i2h = nxt.dense[1] if h2h[0] is nxt.dense[0] else nxt.dense[0]
        roles = _roles(step, nxt.weights(i2h), nxt.weights(h2h[0]))
        c_readers = {id(r) for r in graph.readers_of(step.c)}
        if roles is None or not graph.read_only_within(step.c, set(step.nodes) | set(nxt.nodes)) \
                or len(c_readers) != 2:
            continue
        successor[id(step)] = (nxt, (i2h, h2h[0]), roles)
        has_pred.add(id(nxt))
    chains = []
    for step in steps:
        if id(step) in has_pred or id(step) not in successor:
            continue
        chain = [step]
        while id(chain[-1]) in successor:      # (linked steps have equal weights: _roles)
            nxt, nxt_roles, roles = successor[id(chain[-1])]
            chain[-1].dense = roles
            nxt.dense = nxt_roles
            chain.append(nxt)
        for s in chain:
            s.h_prev = s.dense[1].inputs[0]
        weights = step.weights(step.dense[0]) + step.weights(step.dense[1])
        chains.append(_Chain('lstm', chain, weights))
    return chains


def _roles(step, i2h_weights, h2h_weights):
    """step's dense nodes ordered (i2h, h2h) by their weights, or None."""
    a, b = step.dense
    if step.weights(a) == i2h_weights and step.weights(b) == h2h_weights:
        return (a, b)
    if step.weights(b) == i2h_weights and step.weights(a) == h2h_weights:
        return (b, a)
    return None


def _gru_chains(graph, steps):
    """Chains of GRU steps linked by h, all with one set of weights."""
    by_h_prev = {}
    for step in steps:
        by_h_prev.setdefault((id(step.h_prev[0]), step.h_prev[1]), []).append(step)
    weights = {id(s): s.weights(s.dense[0]) + s.weights(s.dense[1]) for s in steps}
    successor, has_pred = {}, set()
    for step in steps:
        nxt = [s for s in by_h_prev.get((id(step.h[0]), step.h[1]), [])
               if weights[id(s)] == weights[id(step)]]
        if len(nxt) == 1:
            successor[id(step)] = nxt[0]
            has_pred.add(id(nxt[0]))
    chains = []
    for step in steps:
        if id(step) in has_pred or id(step) not in successor:
            continue
        chain = [step]
        while id(chain[-1]) in successor:
            chain.append(successor[id(chain[-1])])
        chains.append(_Chain('gru', chain, weights[id(step)]))
    return chains


def _find_chains(graph):
    lstm, gru = [], []
    for node in graph.order:
        if _is(node, 'SliceChannel'):
            step = _lstm_step(graph, node) if node.params.num_outputs == 4 else \
                _gru_step(graph, node) if node.params.num_outputs == 3 else None
            if step is not None:
                (lstm if step.c is not None else gru).append(step)
    chains = _lstm_chains(graph, lstm) + _gru_chains(graph, gru)
    return [c for c in chains if len(c.steps) >= 2 and _disjoint(c)]


def _disjoint(chain):
    """No step reads another step's intermediate values except through the states."""
    return sum(len(s.nodes) for s in chain.steps) == len(chain.nodes)


# ---------------------------------------------------------------------------------------------
# the rewrite
# ---------------------------------------------------------------------------------------------
class _Rewriter:
    """Rebuilds the graph with every chain replaced by its RNN operator."""

    def __init__(self, graph, chains):
        self.graph = graph
        self.owner = {i: c for c in chains for i in c.nodes}
        self.step_of = {}           # (id(node), k) of a chain's h_t -> (chain, t)
        for chain in chains:
            for t, step in enumerate(chain.steps):
                self.step_of[(id(step.h[0]), step.h[1])] = (chain, t)
        self.merged = {}            # id(node) merging a chain's outputs -> (chain, axis)
        for node in graph.order:
            found = self._merge_of(node)
            if found is not None:
                self.merged[id(node)] = found
        self.memo = {}              # id(old node) -> new node
        self.fused = {}             # id(chain) -> its RNN node
        self.made = []              # the new nodes, in creation order

    def _sequence(self, entries):
        """The chain whose step outputs h_0 .. h_T-1 are exactly `entries`, else None."""
        found = [self.step_of.get((id(n), k)) for n, k in entries]
        if not found or found[0] is None:
            return None
        chain = found[0][0]
        if len(entries) != len(chain.steps) or \
                any(f is None or f != (chain, t) for t, f in enumerate(found)):
            return None
        return chain

    def _merge_of(self, node):
        """Concat(expand_dims(h_t, a)..., dim=a) or stack(h_t..., axis=a) of all of a chain's
        steps in order, a in (0, 1) -> (chain, a), else None."""
        if _is(node, 'Concat'):
            axis, steps = node.params.dim, []
            for e, _ in node.inputs:
                if not _is(e, 'expand_dims') or e.params.axis != axis:
                    return None
                steps.append(e.inputs[0])
        elif _is(node, 'stack'):
            axis, steps = node.params.axis, node.inputs
        else:
            return None
        chain = self._sequence(steps)
        return (chain, axis) if chain is not None and axis in (0, 1) else None

    # ---- walking ---------------------------------------------------------------------------
    def run(self, heads):
        for item in self._order(heads):
            if isinstance(item, _Chain):
                self._fuse(item)
            elif id(item) in self.merged:
                self.memo[id(item)] = self._merged(item)
            else:
                self.memo[id(item)] = self._rebuild(item)
        return [self.entry(e) for e in heads]

    def _order(self, heads):
        """Nodes outside chains and the chains themselves, each after what it reads."""
        def item(node):
            return self.owner.get(id(node), node)

        def deps(it):
            if id(it) in self.merged:
                return [self.merged[id(it)][0]]
            return [item(n) for n, _ in it.inputs]

        order, seen = [], set()
        for head, _ in heads:
            root = item(head)
            if id(root) in seen:
                continue
            seen.add(id(root))
            stack = [(root, iter(deps(root)))]
            while stack:
                it, children = stack[-1]
                for child in children:
                    if id(child) not in seen:
                        seen.add(id(child))
                        stack.append((child, iter(deps(child))))
                        break
                else:
                    stack.pop()
                    order.append(it)
        return order

    def entry(self, entry):
        """The new graph's entry for an old one."""
        node, k = entry
        if (id(node), k) in self.step_of:
            chain, t = self.step_of[(id(node), k)]
            return self._step_output(chain, t)
        if id(node) in self.owner:          # a chain's last c (the only other value read)
            return self._last_cell(self.owner[id(node)])
        return (self.memo[id(node)], k)

    def _rebuild(self, node):
        if node.op is None:
            return node
        inputs = [self.entry(e) for e in node.inputs]
        if all(a[0] is b[0] for a, b in zip(inputs, node.inputs)):
            return node
        from ..symbol.graph import Node
        new = Node(node.op, node.name, node.attrs, inputs, node.subgraphs)
        shapes = self.graph.shapes
        for k in range(node.num_outputs()):
            if (id(node), k) in shapes:
                shapes[(id(new), k)] = shapes[(id(node), k)]
        return new

    def _op(self, name, inputs, attrs, node_name):
        from ..symbol.graph import Node
        node = Node(get_op(name), node_name, {k: str(v) for k, v in attrs.items()}, inputs)
        self.made.append(node)
        return node

    # ---- a chain's values --------------------------------------------------------------------
    def _merged(self, node):
        chain, axis = self.merged[id(node)]
        output = (self.fused[id(chain)], 0)
        if axis == 0:
            return output[0]
        return self._op('SwapAxis', [output], {'dim1': 0, 'dim2': 1}, node.name)

    def _step_output(self, chain, t):
        """h_t: the last one from the state output, the others from the output split."""
        rnn, key = self.fused[id(chain)], (id(chain), t == len(chain.steps) - 1)
        if key not in self.memo:
            if key[1]:
                self.memo[key] = self._op('squeeze', [(rnn, 1)], {'axis': 0},
                                          rnn.name + '_last_hidden')
            else:
                self.memo[key] = self._op('SliceChannel', [(rnn, 0)],
                                          {'num_outputs': len(chain.steps), 'axis': 0,
                                           'squeeze_axis': True}, rnn.name + '_steps')
        return (self.memo[key], 0 if key[1] else t)

    def _last_cell(self, chain):
        key = (id(chain), 'c')
        if key not in self.memo:
            rnn = self.fused[id(chain)]
            self.memo[key] = self._op('squeeze', [(rnn, 2)], {'axis': 0}, rnn.name + '_last_cell')
        return (self.memo[key], 0)

    def _data(self, old_xs, name):
        """The step inputs as one time-major (T, N, I) entry."""
        below = self._sequence(old_xs)
        if below is not None:
            return (self.fused[id(below)], 0)
        split = old_xs[0][0]
        if _is(split, 'SliceChannel') and split.params.squeeze_axis and \
                split.params.num_outputs == len(old_xs) and \
                all(s is split for s, _ in old_xs) and \
                [k for _, k in old_xs] == list(range(len(old_xs))):
            shape = self.graph.shape(split.inputs[0]) or ()
            axis = split.params.axis % len(shape) if shape else None
            whole = self.entry(split.inputs[0])
            if len(shape) == 3 and axis == 0:
                return whole
            if len(shape) == 3 and axis == 1:
                return (self._op('SwapAxis', [whole], {'dim1': 0, 'dim2': 1}, name + '_data'), 0)
        xs = [self.entry(x) for x in old_xs]
        return (self._op('stack', xs, {'axis': 0, 'num_args': len(xs)}, name + '_data'), 0)

    def _fuse(self, chain):
        w_ih, b_ih, w_hh, b_hh = [self.entry(e) for e in chain.weights]
        first = chain.steps[0]
        name = _name(chain)
        data = self._data([s.dense[0].inputs[0] for s in chain.steps], name)
        flat = [(self._op('Reshape', [w], {'shape': (-1,)}, '%s_%s_flat' % (name, tag)), 0)
                for w, tag in ((w_ih, 'i2h'), (w_hh, 'h2h'))]
        params = self._op('Concat', flat + [b_ih, b_hh], {'dim': 0, 'num_args': 4},
                          name + '_parameters')
        states = [first.h_prev] + ([first.c_prev] if chain.mode == 'lstm' else [])
        states = [(self._op('expand_dims', [self.entry(s)], {'axis': 0},
                            '%s_begin_state%d' % (name, k)), 0) for k, s in enumerate(states)]
        self.fused[id(chain)] = self._op(
            'RNN', [data, (params, 0)] + states,
            {'state_size': self.graph.shape(first.h)[1], 'num_layers': 1, 'mode': chain.mode,
             'state_outputs': True}, name)


def _name(chain):
    """`<prefix>rnn` from the h2h weight variable `<prefix>h2h_weight`, else from the step."""
    weight = chain.weights[2][0]
    if weight.op is None and weight.name.endswith('h2h_weight'):
        return weight.name[:-len('h2h_weight')] + 'fused_rnn'
    return chain.steps[0].dense[1].name + '_fused_rnn'


def _infer_new(made, shapes):
    """Shapes of the new nodes' outputs (their inputs' shapes are known), into `shapes`."""
    for node in made:
        ins = [shapes.get((id(c), k)) for c, k in node.inputs]
        outs = [None] * node.num_outputs()
        if node.op.infer_shape is None or any(s is None for s in ins):
            continue
        _, outs = node.op.infer_shape(node.params, ins, outs)
        for k, s in enumerate(outs):
            if s is not None:
                shapes[(id(node), k)] = tuple(s)


def fuse_rnn_cells(symbol, shapes):
    """`symbol` with its unrolled LSTM / GRU chains run as RNN operators (itself if none, or
    when MXTORCH_FUSE_RNN=0). `shapes` ({(id(node), k): shape} of the bound graph) gets the new
    nodes' shapes."""
    if not enabled():
        return symbol
    graph = _Graph(symbol, shapes)
    if not any(_is(n, 'SliceChannel') and n.params.num_outputs in (3, 4) for n in graph.order):
        return symbol
    chains = _find_chains(graph)
    if not chains:
        return symbol
    rewriter = _Rewriter(graph, chains)
    entries = rewriter.run(symbol._entries)
    _infer_new(rewriter.made, shapes)
    from ..symbol.symbol import Symbol
    return Symbol(entries)

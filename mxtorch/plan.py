"""A plan: the flat list of steps a bound graph runs, and the Python source generated from it.

Plan.from_symbol orders a Symbol's operator nodes topologically and gives each a Step: its input
and output value names, and a factory of its torch callable (made per train/infer mode and device).
Plan.source is one flat function, readable like torch.fx code:

    def forward(data, fc1_weight, fc1_bias, softmax_label):
        fc1_output = FullyConnected_fc1(data, fc1_weight, fc1_bias)
        ...
        return (softmax_output,), (), ((fc2_output, softmax_label, softmax_output),)

It returns the heads, the outputs of the steps that update auxiliary states (BatchNorm's batch
statistics), and for each loss step its inputs and output (whose declared gradient seeds
backward). The Executor runs it (compiler.py may compile its generated function); fusion.py
rewrites it for inference. A Plan is data: no arrays, no state.
"""
import keyword
import re

from .symbol.graph import topo_order


class Step:
    """One call of the plan: `outputs = fn(*inputs)`, fn made by `make_fn(train, device)`.

    `node` is the graph node the step computes (monitoring names outputs after it); `kind` is
    its operator's name, or what a fused step (fusion.py) computes; `aux_positions`
    (update_aux ops) index the aux arrays the step's statistics update.
    """
    __slots__ = ('node', 'inputs', 'outputs', 'fn_name', 'make_fn', 'aux_positions', 'kind',
                 'fused')

    def __init__(self, node, inputs, outputs, fn_name, make_fn, aux_positions=None, kind=None):
        self.node = node
        self.inputs = inputs              # value names of the inputs
        self.outputs = outputs            # value names of all outputs (hidden included)
        self.fn_name = fn_name
        self.make_fn = make_fn
        self.aux_positions = aux_positions
        self.fused = kind is not None
        self.kind = kind or node.op.name

    @property
    def op(self):
        return self.node.op

    @property
    def params(self):
        return self.node.params


def _identifier(name, taken):
    base = re.sub(r'\W', '_', name) or 'v'
    if base[0].isdigit() or keyword.iskeyword(base):
        base = '_' + base
    ident, n = base, 1
    while ident in taken:
        ident = '%s_%d' % (base, n)
        n += 1
    taken.add(ident)
    return ident


def _op_factory(op, params, out_shape, plain=False):
    return lambda train, device: op.bind_forward(params, train, device, out_shape, plain)


def _placed(make_fn, devices, node):
    """make_fn for a node placed by group2ctx: it runs on its own device and, where an input
    comes from another device, copies it there first (nothing changes on one device)."""
    own = devices.get(id(node))
    moves = [devices.get(id(child), own) != own for child, _ in node.inputs]
    if own is None:
        return make_fn
    if not any(moves):
        return lambda train, device: make_fn(train, own)

    def make(train, device):
        fn = make_fn(train, own)
        return lambda *xs: fn(*[x.to(own) if move else x for x, move in zip(xs, moves)])
    return make


def _declares_loss(node):
    """A loss operator whose declared gradient replaces autograd's (and any head gradient)."""
    return node.op.loss_gradient is not None and node.op.head_grad(node.params) == 'ignored'


class Plan:
    """A flat list of steps over named values, and the Python source generated from it."""

    def __init__(self, input_names, steps, heads, stat_steps=(), loss_steps=()):
        self.input_names = input_names
        self.steps = steps
        self.heads = heads
        self.stat_steps = list(stat_steps)
        self.loss_steps = list(loss_steps)
        self.source = self._generate()

    @classmethod
    def from_symbol(cls, symbol, arg_nodes, aux_nodes, shapes, devices=None):
        """One step per operator node, in MXNet's topological order. `devices` ({id(node):
        torch device}, group2ctx placement) runs each step on its node's device, its inputs
        copied there from other devices."""
        order = topo_order(symbol._entries)
        taken = set()
        input_names = [_identifier(n.name, taken) for n in arg_nodes + aux_nodes]
        value = {}
        for node, name in zip(arg_nodes + aux_nodes, input_names):
            value[(id(node), 0)] = name
        aux_index = {id(n): i for i, n in enumerate(aux_nodes)}
        steps = []
        for node in order:
            if node.op is None:
                continue
            out_names = node.op.output_names(node.params)
            outputs = [_identifier('%s_%s' % (node.name, o), taken) for o in out_names]
            for k, name in enumerate(outputs):
                value[(id(node), k)] = name
            aux_positions = None
            if node.op.update_aux is not None:
                aux_positions = [aux_index.get(id(child)) for child, _ in
                                 node.inputs[node.num_args():]]
            fn_name = _identifier('%s_%s' % (node.op.name.lstrip('_'), node.name), taken)
            make_fn = _op_factory(node.op, node.params, shapes.get((id(node), 0)),
                                  plain=_declares_loss(node))
            if devices is not None:
                make_fn = _placed(make_fn, devices, node)
            steps.append(Step(node, [value[(id(c), k)] for c, k in node.inputs], outputs,
                              fn_name, make_fn, aux_positions))
        heads = [value[(id(n), k)] for n, k in symbol._entries]
        return cls(input_names, steps, heads,
                   [s for s in steps if s.aux_positions is not None],
                   [s for s in steps if _declares_loss(s.node)])

    def _generate(self):
        last_use = {}
        for i, step in enumerate(self.steps):
            for name in step.inputs:
                last_use[name] = i
        losses = ['(%s)' % ''.join(v + ', ' for v in s.inputs + s.outputs[:1])
                  for s in self.loss_steps]
        keep = set(self.heads) | {o for s in self.stat_steps for o in s.outputs} | \
            {v for s in self.loss_steps for v in s.inputs + s.outputs[:1]}
        lines = ['def forward(%s):' % ', '.join(self.input_names)]
        for i, step in enumerate(self.steps):
            call = '%s(%s)' % (step.fn_name, ', '.join(step.inputs))
            if len(step.outputs) == 1:
                lines.append('    %s = %s' % (step.outputs[0], call))
            else:
                lines.append('    %s = %s' % (', '.join(step.outputs), call))
            dead = sorted({n for n in step.inputs if last_use.get(n) == i and n not in keep})
            if dead:
                lines.append('    del %s' % ', '.join(dead))
        stats = ['(%s)' % ''.join(o + ', ' for o in s.outputs) for s in self.stat_steps]
        lines.append('    return (%s), (%s), (%s)' % (''.join(h + ', ' for h in self.heads),
                                                      ''.join(s + ', ' for s in stats),
                                                      ''.join(v + ', ' for v in losses)))
        return '\n'.join(lines) + '\n'

    def compile(self, train, device):
        """The generated function with each step's callable made for `train` and `device`."""
        namespace = {s.fn_name: s.make_fn(train, device) for s in self.steps}
        key = (self.source, train)          # graphs of one structure share the compiled code
        code = _COMPILED.get(key)
        if code is None:
            if len(_COMPILED) >= 512:
                _COMPILED.clear()
            code = _COMPILED[key] = compile(
                self.source, '<mxtorch executor %s>' % ('train' if train else 'infer'), 'exec')
        exec(code, namespace)     # the source is generated above from the plan, never user text
        return namespace['forward'], namespace


_COMPILED = {}      # (generated source, train) -> code object

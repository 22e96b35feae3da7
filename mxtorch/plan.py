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

Training on the CPU, a plan with channel-first 2-D convolutions runs them on channels-last
activations (Plan.channels_last_source): oneDNN's convolutions, forward and backward, are up to
3x faster so (16-channel 32x32 maps, batch 32), where they have CHANNELS_LAST_ROWS output
positions (batch x height x width) or more; with fewer (deep layers at small batches: 18 to 512
positions, 1.1-1.6x slower) they stay channel-first. The data a convolution takes is converted
once, the operators that keep the layout (OpDef.keeps_layout: BatchNorm, activations,
element-wise sums, pooling) run on it as it lies, and any other operator, a head or a loss gets
it channel-first again; the values are the same either way, to float rounding, and recorded
imperatively a Convolution runs as the plan would (ops/conv.py), so that a hybridized block
gives the numbers of the same block run imperatively.
"""
import collections
import keyword
import re

from .ops.conv import channels_last_pays, to_channels_last as _to_channels_last
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


def _to_channel_first(x):
    return x.contiguous()


# one call of generated code: outputs = fn_name(*inputs)
_Call = collections.namedtuple('_Call', 'fn_name inputs outputs')
_LAYOUT_FNS = {'_to_channels_last': _to_channels_last, '_to_channel_first': _to_channel_first}


def _channels_last_calls(steps, heads, losses, taken, shapes):
    """(calls, heads, losses) of a training source that runs channel-first 2-D convolutions of
    CHANNELS_LAST_ROWS output positions or more (`shapes`: the values' shapes) on channels-last
    data, converted unless it is channels-last already; ops that keep the layout pass it on,
    every other input (smaller convolutions', heads and loss values too) is made channel-first
    first. None where no convolution runs channels-last."""
    def convolution(step):
        """None for other ops; whether a channel-first 2-D convolution runs channels-last."""
        rule = step.op.conv_geometry
        geometry = rule(step.params) if rule is not None else None
        if geometry is None or geometry.rank != 2:
            return None
        shape = shapes.get(step.outputs[0])
        return shape is not None and len(shape) == 4 and channels_last_pays(shape)

    if not any(convolution(s) for s in steps):
        return None
    last = set()                  # values that are channels-last
    converted = {}                # (value, fn name) -> the converted value's name
    calls = []

    def convert(name, fn_name):
        key = (name, fn_name)
        if key not in converted:
            converted[key] = _identifier('%s_%s' % (name, 'cl' if fn_name == '_to_channels_last'
                                                    else 'cf'), taken)
            calls.append(_Call(fn_name, [name], [converted[key]]))
        return converted[key]

    def channel_first(names):
        return [convert(n, '_to_channel_first') if n in last else n for n in names]

    for step in steps:
        inputs = list(step.inputs)
        runs = convolution(step)
        if runs:
            if inputs[0] not in last:
                inputs[0] = convert(inputs[0], '_to_channels_last')
            last.add(step.outputs[0])
        elif runs is None and step.op.keeps_layout is not None and \
                step.op.keeps_layout(step.params):
            if any(n in last for n in inputs):
                last.add(step.outputs[0])
        else:
            inputs = channel_first(inputs)
        calls.append(_Call(step.fn_name, inputs, step.outputs))
    return calls, channel_first(heads), [channel_first(v) for v in losses]


def _declares_loss(node):
    """A loss operator whose declared gradient replaces autograd's (and any head gradient)."""
    return node.op.loss_gradient is not None and node.op.head_grad(node.params) == 'ignored'


class Plan:
    """A flat list of steps over named values, and the Python source generated from it."""

    def __init__(self, input_names, steps, heads, stat_steps=(), loss_steps=(),
                 value_shapes=None):
        self.input_names = input_names
        self.value_shapes = value_shapes or {}      # value name -> shape, where known
        self.steps = steps
        self.heads = heads
        self.stat_steps = list(stat_steps)
        self.loss_steps = list(loss_steps)
        self.source = self._generate(steps, heads, self._loss_values())
        self._channels_last = None

    def _loss_values(self):
        """Per loss step, the values the generated function returns for it: its inputs and
        output."""
        return [s.inputs + s.outputs[:1] for s in self.loss_steps]

    @property
    def channels_last_source(self):
        """The training source with channel-first 2-D convolutions on channels-last data (see
        _channels_last_calls); None where the plan has none."""
        if self._channels_last is None:
            taken = set(self.input_names) | {v for s in self.steps for v in s.outputs} | \
                {s.fn_name for s in self.steps} | set(_LAYOUT_FNS)
            found = _channels_last_calls(self.steps, self.heads, self._loss_values(), taken,
                                         self.value_shapes)
            self._channels_last = self._generate(*found) if found is not None else False
        return self._channels_last or None

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
                   [s for s in steps if _declares_loss(s.node)],
                   {name: shapes.get(key) for key, name in value.items()})

    def _generate(self, calls, heads, losses):
        """The source of `calls` (steps, or objects with their fn_name, inputs and outputs),
        returning `heads`, the statistics steps' outputs and the values of each loss step."""
        last_use = {}
        for i, step in enumerate(calls):
            for name in step.inputs:
                last_use[name] = i
        keep = set(heads) | {o for s in self.stat_steps for o in s.outputs} | \
            {v for values in losses for v in values}
        losses = ['(%s)' % ''.join(v + ', ' for v in values) for values in losses]
        lines = ['def forward(%s):' % ', '.join(self.input_names)]
        for i, step in enumerate(calls):
            call = '%s(%s)' % (step.fn_name, ', '.join(step.inputs))
            if len(step.outputs) == 1:
                lines.append('    %s = %s' % (step.outputs[0], call))
            else:
                lines.append('    %s = %s' % (', '.join(step.outputs), call))
            dead = sorted({n for n in step.inputs if last_use.get(n) == i and n not in keep})
            if dead:
                lines.append('    del %s' % ', '.join(dead))
        stats = ['(%s)' % ''.join(o + ', ' for o in s.outputs) for s in self.stat_steps]
        lines.append('    return (%s), (%s), (%s)' % (''.join(h + ', ' for h in heads),
                                                      ''.join(s + ', ' for s in stats),
                                                      ''.join(v + ', ' for v in losses)))
        return '\n'.join(lines) + '\n'

    def compile(self, train, device, channels_last=False):
        """The generated function with each step's callable made for `train` and `device`
        (channels_last: the channels_last_source where there is one, for training)."""
        namespace = {s.fn_name: s.make_fn(train, device) for s in self.steps}
        source = self.source
        if channels_last and train and self.channels_last_source is not None:
            source = self.channels_last_source
            namespace.update(_LAYOUT_FNS)
        key = (source, train)          # graphs of one structure share the compiled code
        code = _COMPILED.get(key)
        if code is None:
            if len(_COMPILED) >= 512:
                _COMPILED.clear()
            code = _COMPILED[key] = compile(
                source, '<mxtorch executor %s>' % ('train' if train else 'infer'), 'exec')
        exec(code, namespace)     # the source is generated above from the plan, never user text
        return namespace['forward'], namespace


_COMPILED = {}      # (generated source, train) -> code object

"""A bound graph's training call as two traced graphs, forward and backward, run without
autograd's tape.

The executor's training call is its plan's forward, recorded by autograd, then a backward seeded
with the loss operators' declared gradients and the head gradients given. For a static graph
that whole call can be traced once: `trace` runs it under make_fx on fake tensors (no real
computation, no data-dependent Python), which gives one joint graph of aten operators (the
plan's kernels and the backward autograd would run), then splits it where the forward ends:

    forward graph:  arguments, auxiliary states -> heads, statistics, saved values
    backward graph: saved values, head gradients -> the arguments' gradients

Between the two, only the saved values are kept. The graphs run as generated Python (torch.fx
code) with no autograd bookkeeping; their matrix products take the backend gemm.py chooses for
each shape (oneDNN where it is faster, now for every product of the backward too, where the
eager call pays an autograd Function for it), no-op nodes (detach, t of t) are dropped, and
operators with a public torch function are called through it (a microsecond less each). The
result is checked once against the eager call on copies of the inputs (values, statistics and
gradients to float rounding) before it is used; anything that fails (an operator the tracer
cannot follow, a mismatch) leaves the executor on its eager path, said once at debug level.
"""
import contextlib
import logging
import math
import operator
import time

import torch
import torch.fx as fx

from .ops import gemm
from .random import _generator_state, _set_generator_state

_LOG = logging.getLogger(__name__)
_ATEN = torch.ops.aten
_NOOPS = {_ATEN.detach.default, _ATEN.alias.default}
_LINEAR = torch.ops.mkldnn._linear_pointwise.default if hasattr(torch.ops.mkldnn,
                                                                '_linear_pointwise') else None
RTOL, ATOL = 1e-4, 1e-5
KEEP_BELOW = 0.97       # the traced call is used only when at least this much faster
MIN_ROUNDS_WITHIN = 2.0     # seconds within which compare() times three rounds at least


class Joint:
    """The traced forward and backward of one training call."""

    def __init__(self, fw, bw, n_heads, stat_sizes, grad_mask, tangent_heads, tangent_specs,
                 tangent_shapes):
        self.fw, self.bw = fw.fn, bw.fn
        self.code = fw.code + bw.code         # (their generated source)
        self.tangent_specs = tangent_specs    # (dtype, device) of each head gradient taken
        self.tangent_shapes = tangent_shapes  # and its shape
        self.other_heads = [k for k in range(n_heads) if k not in tangent_heads]
        self.n_heads = n_heads
        self.stat_sizes = stat_sizes          # outputs of each statistics step
        self.grad_mask = grad_mask            # per leaf: whether it gets a gradient
        self.tangent_heads = tangent_heads    # heads whose given gradient the backward takes

    def forward(self, inputs):
        """(heads, statistics, saved) for the arguments and auxiliary states `inputs`."""
        with torch.no_grad():
            return self.split(self.fw(*inputs))

    def split(self, out):
        """(heads, statistics, saved) from the outputs of the forward graph."""
        heads = out[:self.n_heads]
        stats, k = [], self.n_heads
        for size in self.stat_sizes:
            stats.append(tuple(out[k:k + size]))
            k += size
        return heads, stats, out[k:]

    def backward(self, saved, tangents):
        """Gradients of the leaves (None where a leaf gets none) from the saved values and the
        head gradients of `tangent_heads`."""
        tangents = [t.to(dtype=dtype, device=device)
                    for t, (dtype, device) in zip(tangents, self.tangent_specs)]
        with torch.no_grad():
            return self.run_backward(saved, tangents)

    def run_backward(self, saved, tangents):
        """backward() for head gradients of the tangents' dtypes and devices already, in
        torch's no-grad mode."""
        grads = iter(self.bw(*saved, *tangents))
        return [next(grads) if has else None for has in self.grad_mask]


def trace(forward, inputs, leaf_positions, seeds, tangents):
    """A Joint for `forward` (the plan's training function) called on tensors like `inputs`,
    with gradients for the inputs at `leaf_positions`; `seeds(heads, losses, tangent)` gives
    the backward's (outputs, their gradients), where tangent(k) gives head k's gradient, a
    tensor like tangents[k]. None where the graph cannot be split (raises where it cannot be
    traced)."""
    from torch.fx.experimental.proxy_tensor import make_fx
    tangent_heads = []
    layout = []             # the outputs: number of heads, of each step's statistics, grad mask

    def tangent_for(tangents):
        def tangent(k):
            tangent_heads.append(k)
            return tangents[k]
        return tangent

    def joint(primals, tangents):
        primals = list(primals)
        leaves = []
        for i in leaf_positions:
            primals[i] = primals[i].detach().requires_grad_()
            leaves.append(primals[i])
        with torch.enable_grad():
            heads, stats, losses = forward(*primals)
            outs, grads = seeds(heads, losses, tangent_for(tangents))
            found = torch.autograd.grad(outs, leaves, grads, allow_unused=True) if outs \
                else [None] * len(leaves)
        layout.extend([len(heads), [len(s) for s in stats], [g is not None for g in found]])
        return list(heads) + [v for s in stats for v in s] + [g for g in found if g is not None]

    state = torch.random.get_rng_state()
    try:
        gm = make_fx(joint, tracing_mode='fake', _allow_non_fake_inputs=True)(
            list(inputs), list(tangents))
    finally:
        torch.random.set_rng_state(state)
    return _split(gm, len(inputs), tangent_heads, *layout)


def _split(gm, n_inputs, tangent_heads, n_heads, stat_sizes, grad_mask):
    graph = gm.graph
    placeholders = [n for n in graph.nodes if n.op == 'placeholder']
    primals, tangents = placeholders[:n_inputs], placeholders[n_inputs:]
    tangent_heads = sorted(set(tangent_heads))
    tangents = [tangents[k] for k in tangent_heads]
    if any(_mutates(n) for n in graph.nodes):
        return None                     # (in-place writes: order matters beyond data flow)
    _clean(graph)
    output = next(n for n in graph.nodes if n.op == 'output')
    values = list(output.args[0])
    n_fwd = n_heads + sum(stat_sizes)
    fwd_outs, grads = values[:n_fwd], values[n_fwd:]
    if any(not isinstance(v, fx.Node) for v in values):
        return None
    forward_nodes = _ancestors(fwd_outs) | set(primals)
    backward_nodes = [n for n in graph.nodes if n.op not in ('placeholder', 'output')
                      and n not in forward_nodes]
    later = set(backward_nodes) | set(grads)
    saved = [n for n in graph.nodes if n in forward_nodes and
             (n in later or any(u in later for u in n.users))]
    fw = _graph_module(gm, primals, [n for n in graph.nodes if n in forward_nodes],
                       fwd_outs + saved)
    bw = _graph_module(gm, saved + tangents, backward_nodes, grads)
    specs = [(_val(t).dtype, _val(t).device) for t in tangents]
    return Joint(fw, bw, n_heads, stat_sizes, grad_mask, tangent_heads, specs,
                 [tuple(_val(t).shape) for t in tangents])


def _mutates(node):
    """Whether `node` writes in place into a value that something else can see: an input, a
    constant, or a value with other users (a write into a fresh value that only it uses, as
    bernoulli_ into an empty mask, is data flow like any other)."""
    if node.op != 'call_function' or not isinstance(node.target, torch._ops.OpOverload) or \
            not node.target._schema.is_mutable:
        return False
    for i, arg in enumerate(node.target._schema.arguments):
        if arg.alias_info is None or not arg.alias_info.is_write:
            continue
        value = node.args[i] if i < len(node.args) else node.kwargs.get(arg.name)
        if not isinstance(value, fx.Node) or value.op != 'call_function' or \
                len(value.users) != 1:
            return True
    return False


def _ancestors(nodes):
    seen, stack = set(), list(nodes)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        stack.extend(node.all_input_nodes)
    return seen


def _clean(graph):
    """Drop nodes that change nothing without autograd (detach, alias, t of t)."""
    for node in list(graph.nodes):
        if node.op != 'call_function':
            continue
        if node.target in _NOOPS:
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)
        elif node.target is _ATEN.t.default and isinstance(node.args[0], fx.Node) and \
                node.args[0].target is _ATEN.t.default:
            node.replace_all_uses_with(node.args[0].args[0])
            graph.erase_node(node)
        elif node.target in (_ATEN.view.default, _ATEN.reshape.default) and \
                _val(node) is not None and _val(node.args[0]) is not None and \
                tuple(_val(node.args[0]).shape) == tuple(_val(node).shape):
            node.replace_all_uses_with(node.args[0])     # a view to the shape it has
            graph.erase_node(node)
        elif node.target in (_ATEN.view.default, _ATEN.reshape.default) and \
                _dropped_dims_sum(node.args[0], _val(node)):
            src = node.args[0]          # (a view of a sum keeping its dimensions: a bias's
            with graph.inserting_before(node):      # gradient of its own memory instead)
                new = graph.call_function(_ATEN.sum.dim_IntList,
                                          (src.args[0], src.args[1], False), dict(src.kwargs))
            new.meta = dict(node.meta)
            node.replace_all_uses_with(new)
            graph.erase_node(node)
    graph.eliminate_dead_code()


def _dropped_dims_sum(node, val):
    """Whether `node` is a sum over dimensions kept as 1s, used once, whose result viewed
    without those dimensions has the shape of `val`."""
    if not isinstance(node, fx.Node) or node.target is not _ATEN.sum.dim_IntList or \
            len(node.users) != 1 or len(node.args) != 3 or node.args[2] is not True or \
            val is None or _val(node) is None:
        return False
    rank = _val(node).dim()
    dims = {d % rank for d in node.args[1]} if node.args[1] else set(range(rank))
    kept = [n for d, n in enumerate(_val(node).shape) if d not in dims]
    return tuple(kept) == tuple(val.shape)


def _graph_module(gm, inputs, nodes, outputs):
    """The function of `nodes` (in order) from `inputs` to the tuple `outputs` (a _Code), its
    products on gemm's backends and its operators called through their public torch
    functions where they have one."""
    graph = fx.Graph()
    env = {}
    for node in inputs:
        env[node] = graph.placeholder(node.name)
        env[node].meta = dict(node.meta)
    for node in nodes:
        if node not in env:
            env[node] = graph.node_copy(node, lambda n: env[n])
    graph.output(tuple(env[n] for n in outputs))
    _gemm_backends(graph)
    _clean(graph)
    _public_calls(graph)
    graph.eliminate_dead_code()
    return _Code(graph, gm)


class _Code:
    """A graph as one generated Python function, readable like torch.fx's code but with less
    between the operators: each is called through a name bound to its C++ entry point (a
    public torch function, or the OpOverload's own `_op`: no Python frame, no attribute
    lookups), other constants are bound by name, and values are dropped after their last use.
    Called like the function; `code` is its source."""

    def __init__(self, graph, root):
        namespace, names, params, lines = {}, {}, [], []
        nodes = list(graph.nodes)
        last_use = {}
        for i, node in enumerate(nodes):
            for value in node.all_input_nodes:
                last_use[value] = i

        def bind(obj, hint='c'):
            name = '%s%d' % (hint, len(namespace))
            namespace[name] = obj
            return name

        def render(arg):
            if isinstance(arg, fx.Node):
                return names[arg]
            if isinstance(arg, (list, tuple)):
                inner = ''.join(render(a) + ', ' for a in arg)
                return '[%s]' % inner if isinstance(arg, list) else '(%s)' % inner
            if arg is None or isinstance(arg, (bool, int, str)) or \
                    (isinstance(arg, float) and math.isfinite(arg)):
                return repr(arg)
            return bind(arg)        # dtypes, devices, memory formats, inf/nan, ...

        for i, node in enumerate(nodes):
            if node.op == 'placeholder':
                names[node] = 'v%d' % i
                params.append(names[node])
                continue
            if node.op == 'output':
                lines.append('    return %s' % render(node.args[0]))
                break
            if node.op == 'get_attr':
                value = root
                for part in node.target.split('.'):
                    value = getattr(value, part)
                names[node] = bind(value, 'k')
                continue
            if node.op != 'call_function':
                raise ValueError('unexpected graph node %s' % node.format_node())
            target = node.target
            if target is operator.getitem:
                expr = '%s[%s]' % (render(node.args[0]), render(node.args[1]))
            else:
                fn = target._op if isinstance(target, torch._ops.OpOverload) else target
                name = getattr(target, '__name__', 'f').split('.')[0].lstrip('_') or 'f'
                args = [render(a) for a in node.args] + \
                    ['%s=%s' % (k, render(v)) for k, v in node.kwargs.items()]
                expr = '%s(%s)' % (bind(fn, name + '_'), ', '.join(args))
            names[node] = 'v%d' % i
            lines.append('    %s = %s' % (names[node], expr))
            dead = sorted({names[n] for n in node.all_input_nodes
                           if last_use.get(n) == i and n.op in ('placeholder', 'call_function')})
            if dead:
                lines.append('    del %s' % ', '.join(dead))
        self.code = 'def forward(%s):\n%s\n' % (', '.join(params), '\n'.join(lines))
        exec(compile(self.code, '<mxtorch joint>', 'exec'), namespace)  # generated above
        self.fn = namespace['forward']


def _val(node):
    return node.meta.get('val') if isinstance(node, fx.Node) else None


def _gemm_backends(graph):
    """mm / addmm with a 1-D bias on oneDNN where gemm.py would compute them there."""
    if _LINEAR is None:
        return
    mode = gemm._mode()
    for node in list(graph.nodes):
        if node.op != 'call_function' or node.kwargs or \
                node.target not in (_ATEN.mm.default, _ATEN.addmm.default):
            continue
        bias, a, b = (None,) + tuple(node.args) if node.target is _ATEN.mm.default \
            else tuple(node.args)
        vals = [_val(a), _val(b), _val(bias) if bias is not None else None]
        if vals[0] is None or vals[1] is None or (bias is not None and
                                                  (vals[2] is None or vals[2].dim() != 1)):
            continue
        real = [_real(v) if v is not None else None for v in vals]
        if not (gemm._eligible(real[0], real[1].t(), real[2], mode) and
                gemm._use_onednn(real[0], real[1].t(), real[2], mode)):
            continue
        with graph.inserting_before(node):
            weight = graph.call_function(_ATEN.t.default, (b,))
            new = graph.call_function(_LINEAR, (a, weight, bias, 'none', [], ''))
        new.meta = dict(node.meta)
        node.replace_all_uses_with(new)
        graph.erase_node(node)


def _real(fake):
    """A real tensor with `fake`'s shape, strides and dtype (random values), for timing."""
    out = torch.empty_strided(tuple(fake.shape), tuple(fake.stride()), dtype=fake.dtype,
                              device=fake.device)
    gen = torch.Generator(device=out.device).manual_seed(0)   # (not the global stream)
    return out.normal_(generator=gen) if out.is_floating_point() else out.zero_()


def _public_calls(graph):
    """Operators with a public torch function of the same name called through it (the Python
    binding picks the same overload for the same arguments, a microsecond faster than the
    OpOverload)."""
    functions = torch._C._VariableFunctions
    for node in graph.nodes:
        target = node.target
        if node.op == 'call_function' and isinstance(target, torch._ops.OpOverload) and \
                target.namespace == 'aten':
            public = getattr(functions, target.overloadpacket.__name__, None)
            if public is not None:
                node.target = public


def compare(joint, forward, inputs, leaf_positions, seeds, tangents, node=False, budget=0.3):
    """(agrees, seconds traced, seconds eager): whether the traced graphs give the eager call's
    heads, statistics and gradients on copies of `inputs` (both from the same random state),
    and the best time of each (interleaved rounds, up to seven within `budget` seconds but at
    least three unless they take over MIN_ROUNDS_WITHIN seconds: the least disturbed on a busy
    machine, where one round of a slow call is a coin toss;
    node=True times the traced call as one autograd node differentiated by leaf_grads, as
    Gluon's blocks run it)."""
    device = next((x.device for x in inputs if x.is_cuda), torch.device('cpu'))
    state = _generator_state(device)
    copies = [x.detach().clone() for x in inputs]

    def eager():
        primals = list(copies)
        leaves = []
        for i in leaf_positions:
            primals[i] = primals[i].detach().requires_grad_()
            leaves.append(primals[i])
        with torch.enable_grad():
            heads, stats, losses = forward(*primals)
            outs, grads = seeds(heads, losses, lambda k: tangents[k])
            found = torch.autograd.grad(outs, leaves, grads, allow_unused=True) if outs \
                else [None] * len(leaves)
        return heads, stats, found

    def traced():
        heads, stats, saved = joint.forward(copies)
        return heads, stats, joint.backward(saved, [tangents[k] for k in joint.tangent_heads])

    def as_node():
        primals = list(copies)
        for i in leaf_positions:
            primals[i] = primals[i].detach().requires_grad_()
        with torch.enable_grad():
            heads = call(joint, forward, None, leaf_positions, primals)
        leaf_grads([heads[k] for k in joint.tangent_heads],
                   [tangents[k] for k in joint.tangent_heads], False)
    if device.type == 'cuda':    # a GPU's kernels run asynchronously: time them to their end
        clock = _synced_clock(device)
    else:
        clock = time.thread_time if torch.get_num_threads() == 1 else time.perf_counter
    times = ([], [])
    try:
        got = traced()
        _set_generator_state(device, state)
        ref = eager()
        (as_node if node else traced)()          # (warm-up: first calls of new kernels)
        begin = time.perf_counter()
        for _ in range(7):
            for fn, spent in zip((as_node if node else traced, eager), times):
                _set_generator_state(device, state)
                start = clock()
                fn()
                spent.append(clock() - start)
            elapsed = time.perf_counter() - begin
            if elapsed > budget and (len(times[0]) >= 3 or elapsed > MIN_ROUNDS_WITHIN):
                break
    finally:
        _set_generator_state(device, state)
    pairs = list(zip(got[0], ref[0])) + \
        [(a, b) for s, r in zip(got[1], ref[1]) for a, b in zip(s, r)] + list(zip(got[2], ref[2]))
    return all(_close(a, b) for a, b in pairs), min(times[0]), min(times[1])


def _synced_clock(device):
    def clock():
        torch.cuda.synchronize(device)
        return time.perf_counter()
    return clock


def _close(a, b):
    if a is None or b is None:
        return a is None and b is None or (a if a is not None else b).abs().max() == 0
    b = b.detach()
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if not a.is_floating_point():
        return torch.equal(a, b)
    return torch.allclose(a, b, rtol=RTOL, atol=ATOL, equal_nan=True)


_RECORDED = [False]     # whether a traced call was recorded as an autograd node yet


class _Call(torch.autograd.Function):
    """A Joint as one node of a larger autograd graph (a hybridized Gluon block's call inside
    record()): the forward graph now, the backward graph when the head gradients arrive, then
    `after(stats)` unless it is None (BatchNorm's moving statistics change in the backward, as
    in MXNet). Under create_graph the backward recomputes the call eagerly, so that its
    gradients can be differentiated again."""

    @staticmethod
    def forward(ctx, joint, eager, after, leaf_positions, *tensors):  # pylint: disable=arguments-differ
        heads, stats, saved = joint.split(joint.fw(*tensors))    # (autograd runs it no_grad)
        _RECORDED[0] = True
        ctx.joint, ctx.eager, ctx.after, ctx.leaf_positions = joint, eager, after, leaf_positions
        ctx.stats, ctx.saved, ctx.n = stats, saved, len(tensors)
        ctx.save_for_backward(*tensors)
        if joint.other_heads:
            ctx.mark_non_differentiable(*[heads[k] for k in joint.other_heads])
        return heads

    @staticmethod
    def backward(ctx, *head_grads):  # pylint: disable=arguments-differ
        joint = ctx.joint
        given = [head_grads[k] for k in joint.tangent_heads]
        if torch.is_grad_enabled():
            tensors = ctx.saved_tensors
            with torch.enable_grad():
                heads = ctx.eager(*tensors)[0]
                found = torch.autograd.grad([heads[k] for k in joint.tangent_heads],
                                            [tensors[i] for i in ctx.leaf_positions], given,
                                            create_graph=True, allow_unused=True)
        else:
            if ctx.saved is None:
                raise RuntimeError(_SPENT)
            found = joint.backward(ctx.saved, given)
        if ctx.after is not None:
            ctx.after(ctx.stats)
        grads = [None] * ctx.n
        for i, g in zip(ctx.leaf_positions, found):
            grads[i] = g
        return (None, None, None, None) + tuple(grads)


# torch.autograd.Function.apply less its Python prologue (functorch's unwrapping of dead
# wrappers, which only tensors of a functorch transform can be)
_APPLY = super(torch.autograd.Function, _Call).apply
_FUNCTORCH_ACTIVE = torch._C._are_functorch_transforms_active


def call(joint, eager, after, leaf_positions, tensors):
    """The heads of `joint` on `tensors`, recorded by autograd as one node (see _Call)."""
    if _FUNCTORCH_ACTIVE():
        return _Call.apply(joint, eager, after, leaf_positions, *tensors)
    return _APPLY(joint, eager, after, leaf_positions, *tensors)


_NODE = _Call._backward_cls
_EDGE = torch.autograd.graph.GradientEdge
_ENGINE = getattr(torch.autograd.Variable, '_execution_engine', None)
_ACCUMULATE = 'AccumulateGrad'
MAX_NATIVE = 16     # autograd nodes above the traced calls that leaf_grads walks at most
_SPENT = ('Trying to backward through the graph a second time (or directly access saved '
          'tensors after they have already been freed); specify retain_graph=True the first '
          'time')


def leaf_grads(heads, grads, retain_graph, scope=contextlib.nullcontext):
    """The gradients of `heads` (seeded with `grads`) for the leaves of their graph, without
    torch's engine where the graph is traced calls (_Call nodes) down to the leaves, with at
    most MAX_NATIVE other autograd nodes above them (a loss computed operator by operator):
    those run as one torch.autograd.grad call that stops at the traced calls, then each
    call's backward graph runs directly, in order, its gradients passed on by the graph's
    edges (`scope()`: the context the operators' backward runs in). A dict id(leaf tensor)
    -> (leaf, gradient), or None where the graph is of another shape (any other node below a
    traced call, a leaf reached from an operator, a head that is a leaf); nothing has run
    then."""
    if not _RECORDED[0]:            # (no traced call was ever recorded: imperative graphs)
        return None
    seeds, top, top_grads, frontier = {}, [], [], []
    for head, g in zip(heads, grads):
        fn = head.grad_fn
        if fn.__class__ is _NODE:
            _add(seeds, (fn, head.output_nr), g)
        elif fn is None:
            return None
        else:
            top.append(head)
            top_grads.append(g)
    if top and not _frontier([h.grad_fn for h in top], frontier):
        return None
    order = _call_order([fn for fn, _ in seeds] + [fn for fn, _ in frontier])
    if order is None:
        return None
    if top:
        edges = tuple(_EDGE(fn, k) for fn, k in frontier)
        with scope():
            if _ENGINE is None:
                found = torch.autograd.grad(top, edges, top_grads, retain_graph=retain_graph,
                                            allow_unused=True)
            else:   # the engine torch.autograd.grad calls (heads and gradients are checked)
                found = _ENGINE.run_backward(tuple(top), tuple(top_grads), retain_graph,
                                             False, edges, True, False)
        for edge, g in zip(frontier, found):
            if g is not None:
                _add(seeds, edge, g)
    out = {}
    with torch.no_grad():
        for fn, edges in order:
            if fn.saved is None:
                raise RuntimeError(_SPENT)
            joint = fn.joint
            given = []
            for k, shape, (dtype, device) in zip(joint.tangent_heads, joint.tangent_shapes,
                                                 joint.tangent_specs):
                g = seeds.pop((fn, k), None)
                given.append(torch.zeros(shape, dtype=dtype, device=device) if g is None
                             else g)
            found = joint.run_backward(fn.saved, given)
            if fn.after is not None:
                fn.after(fn.stats)
            if not retain_graph:
                fn.saved = fn.stats = None
            for i, g in zip(fn.leaf_positions, found):
                nxt, k = edges[i]
                if g is None or nxt is None:
                    continue
                if nxt.__class__ is _NODE:
                    _add(seeds, (nxt, k), g)
                else:
                    key = id(nxt.variable)
                    old = out.get(key)
                    out[key] = (nxt.variable, g) if old is None else (old[0], old[1] + g)
    return out


def _add(table, key, g):
    old = table.get(key)
    table[key] = g if old is None else old + g


def _frontier(fns, frontier):
    """Collect in `frontier` the (traced call node, output) edges that the autograd nodes
    above them (`fns` and what they lead to) reach; False where those reach a leaf or number
    more than MAX_NATIVE."""
    seen, stack = set(), list(fns)
    edges = set()
    while stack:
        fn = stack.pop()
        if fn in seen:
            continue
        seen.add(fn)
        if len(seen) > MAX_NATIVE:
            return False
        for nxt, k in fn.next_functions:
            if nxt is None:
                continue
            if nxt.__class__ is _NODE:
                if (nxt, k) not in edges:
                    edges.add((nxt, k))
                    frontier.append((nxt, k))
            elif nxt.__class__.__name__ == _ACCUMULATE:
                return False
            else:
                stack.append(nxt)
    return bool(frontier)


def _call_order(fns):
    """The traced call nodes below `fns` with their edges (next_functions), each before the
    calls whose outputs it takes (a reverse post-order), or None where one leads to another
    kind of node."""
    order, done = [], set()
    for root in fns:
        stack = [(root, None)]
        while stack:
            fn, edges = stack.pop()
            if edges is not None:
                order.append((fn, edges))
                continue
            if fn in done:
                continue
            if fn.__class__ is not _NODE or getattr(fn, 'joint', None) is None:
                return None
            done.add(fn)
            edges = fn.next_functions
            stack.append((fn, edges))
            for nxt, _ in edges:
                if nxt is not None and nxt not in done and \
                        nxt.__class__.__name__ != _ACCUMULATE:
                    stack.append((nxt, None))
    order.reverse()
    return order

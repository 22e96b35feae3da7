"""Gradients through integer arrays, as MXNet gives them.

MXNet differentiates integer arrays like any other: an int32 array can attach_grad (its gradient
is int32), Cast to or from an integer type passes the head gradient straight back, and outputs
that are indices or comparisons have zero gradient. Torch's autograd refuses integer tensors.

Here an integer tensor that carries gradient has a float64 *shadow* (`tensor._mx_shadow`): a
tensor of its values that is in torch's graph. An operator run on an input with a shadow, or
giving an integer output from an input that requires gradient, runs as usual for its values and
once more on the shadows for the graph (a dtype conversion is the identity there); each result
keeps its exact values and takes its gradient from that second run. Backward starts from a head's
shadow and reads an integer variable's gradient off its shadow leaf, cast to the variable's dtype.
"""
import torch

SHADOW_DTYPE = torch.float64


def shadow(tensor):
    """The shadow of an integer tensor that carries gradient, else None."""
    return getattr(tensor, '_mx_shadow', None)


def graph_tensor(tensor):
    """The tensor standing for `tensor` in torch's graph: its shadow if it has one."""
    s = getattr(tensor, '_mx_shadow', None)
    return tensor if s is None else s


def attach(tensor):
    """Make integer `tensor` a variable: a fresh shadow leaf that takes gradients."""
    leaf = tensor.detach().to(SHADOW_DTYPE).requires_grad_()
    tensor._mx_shadow = leaf
    return leaf


def forget(tensor):
    if getattr(tensor, '_mx_shadow', None) is not None:
        del tensor._mx_shadow


def carries_grad(tensor):
    return tensor.requires_grad or getattr(tensor, '_mx_shadow', None) is not None


def involved(tensors, results):
    """Whether results computed from tensors need linking: an input has a shadow, or an input
    requires gradient and a result is outside torch's graph (an integer result, or one of an
    operator torch does not differentiate: MXNet's gradient through it is zero)."""
    needs = False
    for t in tensors:
        if getattr(t, '_mx_shadow', None) is not None:
            return True
        needs = needs or t.requires_grad
    return needs and any(not r.requires_grad for r in results)


class _Carry(torch.autograd.Function):
    """`value` as it is, standing in torch's graph for `graph` (of the same shape): its gradient
    goes to `graph`, in graph's dtype; the gradient of an integer value (`integer`: its dtype)
    is first truncated to that dtype, as MXNet's integer backward arithmetic has it."""

    @staticmethod
    def forward(ctx, value, graph, integer=None):  # pylint: disable=arguments-differ
        ctx.dtype, ctx.integer = graph.dtype, integer
        return value.clone()

    @staticmethod
    def backward(ctx, grad):  # pylint: disable=arguments-differ
        if ctx.integer is not None:
            grad = grad.to(ctx.integer)
        return None, grad.to(ctx.dtype), None


def _zero_link(value, sources):
    """A float tensor shaped like value, in torch's graph with a zero gradient for `sources`."""
    anchor = sum(s.reshape(-1)[:1].sum() * 0 for s in sources)
    return torch.zeros(value.shape, dtype=SHADOW_DTYPE, device=value.device) + anchor


def follow(fn, tensors, results, converts=False, integer_gradient=True):
    """`results` (a list) of fn(*tensors), each linked into torch's graph by fn run again with the
    inputs' shadows in place of the inputs (converts: fn is a dtype conversion, result k of input
    k, whose graph is the identity); a result with no graph that way has a zero gradient, as
    have integer results of an op without `integer_gradient`.
    Floating results become tensors in the graph; integer ones get a shadow. Returns the list
    of results to use."""
    subs = [graph_tensor(t) for t in tensors]
    sources = [s for s in subs if s.requires_grad]
    if not sources:
        return results
    with torch.enable_grad():
        if converts:
            graphs = [s if s.is_floating_point() else None for s in subs[:len(results)]]
        elif all(s is t for s, t in zip(subs, tensors)) or not (
                integer_gradient or any(r.is_floating_point() for r in results)):
            graphs = []           # no shadows: running fn again would give the same graph
        else:
            try:
                out = fn(*subs)
            except (RuntimeError, TypeError, ValueError, IndexError):
                out = ()          # the op does not run on floats: no gradient path
            graphs = list(out) if isinstance(out, (tuple, list)) else [out]
    linked = []
    for k, r in enumerate(results):
        g = graphs[k] if k < len(graphs) else None
        if g is None or not g.requires_grad or tuple(g.shape) != tuple(r.shape):
            if r.requires_grad:          # (its own graph, from floating inputs, stands)
                linked.append(r)
                continue
            g = _zero_link(r, sources)
        if r.is_floating_point() or r.is_complex():
            linked.append(_Carry.apply(r.detach(), g))
        else:
            r = r.detach()
            r._mx_shadow = _Carry.apply(r.to(SHADOW_DTYPE), g, r.dtype)
            linked.append(r)
    return linked


def wrap_step(fn, converts=False, integer_gradient=True):
    """A plan step's callable that links its results as `follow` does when involved."""
    def step(*tensors):
        out = fn(*tensors)
        single = not isinstance(out, (tuple, list))
        results = [out] if single else list(out)
        if not torch.is_grad_enabled() or not involved(tensors, results):
            return out
        linked = follow(fn, tensors, results, converts, integer_gradient)
        return linked[0] if single else type(out)(linked)
    return step


def wrap_plan_steps(namespace, steps):
    """Make a compiled plan's step callables (namespace[step.fn_name]) link their results."""
    for step in steps:
        op = getattr(step.node, 'op', None)
        namespace[step.fn_name] = wrap_step(namespace[step.fn_name],
                                            getattr(op, 'converts_dtype', False),
                                            getattr(op, 'integer_gradient', True))

"""Rewrites of an inference plan (plan.Plan) into fewer, faster steps.

Inference never updates auxiliary states and needs no gradients, so a bound graph can be
simplified the way MXNet's oneDNN subgraph backend simplifies it:

* a convolution chain — Convolution -> [BatchNorm] -> [+ another value] -> [ReLU], each link
  read by nothing else — becomes one step: the BatchNorm folded into the convolution's weight and
  bias (W' = W * gamma / sqrt(var + eps), b' = (b - mean) * gamma / sqrt(var + eps) + beta), the
  sum and the ReLU applied as post-operations; on CPU it runs oneDNN's fused convolution with
  weights packed once into its blocked layout, elsewhere a channels-last convolution with
  in-place sum and ReLU;
* a BatchNorm no convolution took (DenseNet's and pre-activation ResNets' BN -> ReLU -> conv)
  runs as one addcmul with scale and shift worked once, its ReLU (or clip) in place;
* any other ReLU whose input has no other reader runs in place on that input's producer.

The rewritten plan's inference function then runs as one traced TorchScript graph where that is
valid (inference_graph.py): no Python between the operators. Traced for oneDNN Graph's fuser
instead (`inference_graph.plain()`), the fused steps record the plain ATen operators it
recognises (convolution, add, out-of-place ReLU / clamp, batch_norm for an affine map) on the
folded weights, without layout copies or prepacked weights: the fuser picks its own (a
Deconvolution, which it leaves to ATen, keeps its prepacked oneDNN call).

Derived weights (folded, packed) are recomputed only when a source parameter changed (torch's
tensor version counters). Each rule is a function `rule(steps, uses) -> steps`, where `uses`
counts the readers of every value. What an operator is to these rules comes from its OpDef
(ops/registry.py): `conv_geometry`, `inference_affine`, `sum_of_two`, `pointwise_act` and
`fresh_output`; no operator is named here.
"""
import functools
import os
from typing import List, Optional

import torch
import torch.nn.functional as F

from . import inference_graph
from .plan import Plan, Step


def enabled():
    """MXTORCH_FUSE=0 turns the inference rewrites off (compare MXNET_SUBGRAPH_BACKEND=NONE)."""
    return os.environ.get('MXTORCH_FUSE', '1') != '0'


def optimize_for_inference(plan):
    """A Plan computing the same heads as `plan` (in inference mode) with fewer steps."""
    steps = list(plan.steps)
    for rule in (fuse_convolutions, fuse_deconvolutions, fuse_affine, fuse_relu):
        steps = rule(steps, _uses(steps, plan.heads))
    steps = keep_constant_values(steps, plan.input_names, set(plan.heads) | {
        v for s in plan.loss_steps for v in s.inputs + s.outputs})
    return InferencePlan(plan.input_names, steps, plan.heads,
                         loss_steps=[s for s in steps if s in plan.loss_steps])


class InferencePlan(Plan):
    """The rewritten plan; its inference function runs as one traced graph where that is
    valid and pays (inference_graph.py)."""

    def compile(self, train, device):
        forward, namespace = super().compile(train, device)
        if not train and inference_graph.enabled() and all(
                s.op.traceable and (not s.op.random or s.op.mode_dependent)
                for s in self.steps):     # (Dropout: the identity at inference)
            forward = inference_graph.GraphForward(forward, len(self.steps))
        return forward, namespace


def _uses(steps, heads):
    uses = {}
    for step in steps:
        for name in step.inputs:
            uses[name] = uses.get(name, 0) + 1
    for name in heads:
        uses[name] = uses.get(name, 0) + 1
    return uses


def _readers(steps):
    readers = {}
    for step in steps:
        for name in step.inputs:
            readers.setdefault(name, []).append(step)
    return readers


class _Cached:
    """derive(*sources, *extra), recomputed only when a source tensor or `extra` changed."""

    def __init__(self, derive):
        self._derive = derive
        self._key = None
        self._value = None

    def __call__(self, *sources, extra=()):
        key = extra + tuple((t._version, t.data_ptr()) for t in sources if t is not None)
        settled = key == self._key
        if not settled:
            with torch.no_grad():
                self._value = self._derive(*sources, *extra)
            self._key = key
        inference_graph.note(sources, self._value, settled)
        return self._value


_LAST = {4: torch.channels_last, 5: torch.channels_last_3d}


def _channels_last(x):
    """x with channels innermost (4-D and 5-D; others as they are)."""
    layout = _LAST.get(x.dim())
    if layout is not None and not x.is_contiguous(memory_format=layout):
        return x.contiguous(memory_format=layout)
    return x


# ---------------------------------------------------------------------------------------------
# Convolution chains
# ---------------------------------------------------------------------------------------------
def _activation(step):
    """What a convolution chain can apply as its last post-operation: ('relu', []) or, for a
    clip whose bounds are ordered (ReLU6), ('hardtanh', [a_min, a_max]); None otherwise."""
    rule = step.op.pointwise_act
    return None if rule is None or step.fused else rule(step.params)


def _is_relu(step):
    act = _activation(step)
    return act is not None and act[0] == 'relu'


def _foldable(step, uses):
    """step's per-channel affine map at inference (folded into a convolution before it), or
    None; its hidden outputs must be unread."""
    rule = step.op.inference_affine
    if rule is None or step.fused or any(uses.get(n) for n in step.outputs[1:]):
        return None
    return rule(step.params)


def _chain_from(conv, readers, uses, claimed):
    """[conv, (bn, its affine map) or None, (add step, other value) or None, relu or clip or
    None] starting at conv; steps another chain claimed end the chain."""
    links = [conv, None, None, None]
    value = conv.outputs[0]

    def only_reader():
        found = readers.get(value, [])
        if len(found) == 1 and uses.get(value) == 1 and id(found[0]) not in claimed:
            return found[0]
        return None
    step = only_reader()
    affine = step is not None and step.inputs[0] == value and _foldable(step, uses)
    if affine:
        links[1], value = (step, affine), step.outputs[0]
        step = only_reader()
    if step is not None and step.op.sum_of_two and not step.fused:
        other = step.inputs[1] if step.inputs[0] == value else step.inputs[0]
        if other != value:
            links[2], value = (step, other), step.outputs[0]
            step = only_reader()
    if step is not None and _activation(step) is not None:
        links[3] = step
    return links


def fuse_convolutions(steps, uses):
    """Every channel-first 2-D or 3-D Convolution with its BatchNorm / sum / ReLU (or clip)
    links becomes one step placed where its last link was."""
    readers = _readers(steps)
    replace, dropped, claimed = {}, set(), set()
    for conv in steps:
        rule = conv.op.conv_geometry
        geometry = None if rule is None or conv.fused else rule(conv.params)
        if geometry is None or geometry.rank not in (2, 3):
            continue
        conv_step, bn, add, act = _chain_from(conv, readers, uses, claimed)
        links = [s for s in (conv_step, bn and bn[0], add and add[0], act) if s is not None]
        claimed.update(id(s) for s in links)
        last = links[-1]
        inputs = conv.inputs + (bn[0].inputs[1:] if bn else []) + ([add[1]] if add else [])
        act = act and _activation(act)
        name = conv.fn_name + ''.join(suffix for link, suffix in (
            (bn, '_bn'), (add, '_sum'), (act, act and ('_relu' if act[0] == 'relu' else '_clip')))
            if link)
        replace[id(last)] = Step(last.node, inputs, last.outputs[:1], name,
                                 _conv_chain_factory(geometry, bn and bn[1],
                                                     add is not None, act),
                                 kind=conv.kind)
        dropped.update(id(s) for s in links[:-1])
    return [replace.get(id(s), s) for s in steps if id(s) not in dropped]


def _conv_chain_factory(geometry, affine, with_sum, act):
    """geometry: the convolution's (its conv_geometry rule); affine: the folded map (an
    inference_affine rule's) or None; act: the last post-operation, as _activation gives it,
    or None."""
    rank, stride, pad, dilate, groups, has_bias = geometry
    conv = F.conv2d if rank == 2 else F.conv3d

    def make_fn(train, device):
        folded = _Cached(_fold(affine)) if affine is not None else None
        onednn = torch.device(device).type == 'cpu' and _onednn_available(rank)
        packed = _Cached(functools.partial(_pack, pad=pad, stride=stride, dilate=dilate,
                                           groups=groups)) if onednn else None
        plain_weight = _Cached(_channels_last)

        def conv_chain(data, weight, *rest):
            rest = list(rest)
            bias = rest.pop(0) if has_bias else None
            other = rest.pop() if with_sum else None
            if folded is not None:
                weight, bias = folded(weight, bias, *rest)
            if inference_graph.plain():      # traced for oneDNN Graph: the ATen pattern
                out = conv(data, weight, bias, stride, pad, dilate, groups)
                return _apply(out if other is None else out + other, act, in_place=False)
            x = _channels_last(data)
            if packed is not None and x.dtype == torch.float32:
                return _onednn_conv(x, packed(weight, extra=(tuple(x.shape),)), bias, other,
                                    act, pad, stride, dilate, groups)
            out = conv(x, plain_weight(weight), bias, stride, pad, dilate, groups)
            if other is not None:
                out.add_(other)
            return _apply(out, act)
        return conv_chain
    return make_fn


def _fold(affine):
    """(weight, bias, *the map's params) -> the convolution's weight and bias with the
    per-channel affine map applied: W' = W * scale, b' = shift."""
    def derive(weight, bias, *params):
        scale, shift = affine(bias, *params)
        return weight * scale.reshape((-1,) + (1,) * (weight.dim() - 1)), shift
    return derive


# ---------------------------------------------------------------------------------------------
# Transposed convolutions (upsampling heads: SimplePose, CenterNet)
# ---------------------------------------------------------------------------------------------
def fuse_deconvolutions(steps, uses):
    """A channel-first 2-D Deconvolution runs as oneDNN's transposed convolution on
    channels-last data with its weight packed once (PyTorch's conv_transpose2d on CPU is 1.3-2x
    slower for a 4x4, stride 2 upsampling)."""
    kept = []
    for step in steps:
        rule = step.op.deconv_geometry
        geometry = None if rule is None or step.fused else rule(step.params)
        if geometry is None or geometry.groups != 1:
            kept.append(step)
            continue
        kept.append(Step(step.node, step.inputs, step.outputs, step.fn_name,
                         _deconv_factory(geometry, step.make_fn), kind=step.kind))
    return kept


def _deconv_factory(geometry, make_plain):
    stride, pad, adj, dilate, groups, _ = geometry

    def make_fn(train, device):
        plain = make_plain(train, device)
        if torch.device(device).type != 'cpu' or not _onednn_transposed_available():
            return plain
        packed = _Cached(functools.partial(_pack_transposed, pad=pad, adj=adj, stride=stride,
                                           dilate=dilate, groups=groups))

        def deconv(data, weight, bias=None):
            # (also in a graph for oneDNN Graph: its fuser leaves transposed convolutions to
            # ATen's, which repacks the weight every call: 3-4x this one's time)
            if data.dtype != torch.float32 or data.dim() != 4 or weight.dtype != data.dtype:
                return plain(data, weight) if bias is None else plain(data, weight, bias)
            x = _channels_last(data)
            ops = _scripted() if torch.jit.is_tracing() else _EAGER
            return ops[2](x, packed(weight, extra=(tuple(x.shape),)), bias, pad, adj, stride,
                          dilate, groups)
        return deconv
    return make_fn


def _pack_transposed(weight, input_shape, pad, adj, stride, dilate, groups):
    return torch.ops.mkldnn._reorder_convolution_transpose_weight(
        weight.contiguous(), pad, adj, stride, dilate, groups, list(input_shape))


@functools.lru_cache(maxsize=None)
def _onednn_transposed_available():
    """True when PyTorch's oneDNN transposed convolution works here (checked once)."""
    try:
        gen = torch.Generator().manual_seed(0)           # (not the global stream)
        x = _channels_last(torch.randn(1, 3, 4, 5, generator=gen))
        w = torch.randn(3, 2, 4, 4, generator=gen)
        b = torch.randn(2, generator=gen)
        args = ([1, 1], [1, 0], [2, 2], [1, 1], 1)
        got = _deconv_unary(x, _pack_transposed(w, x.shape, *args), b, *args)
        want = F.conv_transpose2d(x, w, b, 2, 1, [1, 0], 1, 1)
        return got.shape == want.shape and bool(torch.allclose(got, want, atol=1e-5))
    except (AttributeError, RuntimeError):
        return False


# ---------------------------------------------------------------------------------------------
# Per-channel affine maps left alone (BatchNorm not after a convolution: DenseNet, pre-activation
# ResNets)
# ---------------------------------------------------------------------------------------------
def fuse_affine(steps, uses):
    """A step with an inference affine map (BatchNorm) that no convolution took runs as
    x * scale + shift (one addcmul; scale and shift worked once from its parameters), with the
    ReLU or clip that is its only reader applied in place."""
    readers = _readers(steps)
    replace, dropped = {}, set()
    for step in steps:
        affine = _foldable(step, uses)
        if not affine or id(step) in dropped:
            continue
        found = readers.get(step.outputs[0], [])
        act_step = found[0] if len(found) == 1 and uses.get(step.outputs[0]) == 1 and \
            _activation(found[0]) is not None else None
        act = act_step and _activation(act_step)
        last = act_step or step
        suffix = '' if act is None else '_relu' if act[0] == 'relu' else '_clip'
        replace[id(last)] = Step(last.node, step.inputs, last.outputs[:1],
                                 step.fn_name + suffix,
                                 _affine_factory(affine, act, step.make_fn), kind=step.kind)
        if act_step is not None:
            dropped.add(id(step))
    return [replace.get(id(s), s) for s in steps if id(s) not in dropped]


def _affine_factory(affine, act, make_plain):
    def derive(*params_and_rank):
        *params, rank = params_and_rank
        scale, shift = affine(None, *params)
        shape = (1, -1) + (1,) * (rank - 2)
        return scale.reshape(shape), shift.reshape(shape)

    def make_fn(train, device):
        plain = make_plain(train, device)
        per_channel = _Cached(derive)

        def affine_map(x, *params):
            if x.dim() < 2 or not x.dtype.is_floating_point or \
                    any(p.dtype != x.dtype for p in params):
                return _apply(plain(x, *params)[0], act)
            scale, shift = per_channel(*params, extra=(x.dim(),))
            if inference_graph.plain():
                return _apply(_plain_affine(x, scale, shift), act, in_place=False)
            return _apply(torch.addcmul(shift, x, scale), act)
        return affine_map
    return make_fn


def _plain_affine(x, scale, shift):
    """x * scale + shift for oneDNN Graph, as the batch normalisation it is (mean 0, variance 1,
    no epsilon: exactly that product and sum). (Written as a multiplication and an addition,
    its fuser computes them in place on x where x is still read after them: wrong values.)"""
    scale, shift = scale.reshape(-1), shift.reshape(-1)
    return F.batch_norm(x, torch.zeros_like(scale), torch.ones_like(scale), scale, shift,
                        False, 0.0, 0.0)


# ---------------------------------------------------------------------------------------------
# oneDNN's fused convolution (PyTorch's mkldnn ops, as its own inductor uses them)
# ---------------------------------------------------------------------------------------------
def _pack(weight, input_shape, pad, stride, dilate, groups):
    """The weight in oneDNN's blocked layout for inputs of input_shape."""
    return torch.ops.mkldnn._reorder_convolution_weight(weight.contiguous(), pad, stride,
                                                        dilate, groups, list(input_shape))


def _apply(out, act, in_place=True):
    """The post-operation `act` on out, in place unless not in_place (oneDNN Graph's fuser
    matches only the out-of-place operators)."""
    if act is None:
        return out
    if not in_place:
        return torch.relu(out) if act[0] == 'relu' else torch.clamp(out, *act[1])
    return torch.relu_(out) if act[0] == 'relu' else out.clamp_(*act[1])


def _onednn_conv(x, packed_weight, bias, other, act, pad, stride, dilate, groups):
    ops = _scripted() if torch.jit.is_tracing() else _EAGER
    if other is None:
        return ops[0](x, packed_weight, bias, pad, stride, dilate, groups,
                      act[0] if act else 'none', act[1] if act and act[1] else [])
    relu = act is not None and act[0] == 'relu'     # oneDNN fuses only ReLU after a sum
    out = ops[1](x, _channels_last(other), packed_weight, bias, pad, stride, dilate, groups,
                 'relu' if relu else None)
    return out if relu else _apply(out, act)


def _conv_unary(x: torch.Tensor, w: torch.Tensor, b: Optional[torch.Tensor], pad: List[int],
                stride: List[int], dilate: List[int], groups: int, attr: str,
                bounds: List[float]) -> torch.Tensor:
    scalars: List[Optional[number]] = [None]        # noqa: F821 - TorchScript's type
    if len(bounds) == 2:
        low: Optional[number] = bounds[0]           # noqa: F821
        high: Optional[number] = bounds[1]          # noqa: F821
        scalars = [low, high]
    return torch.ops.mkldnn._convolution_pointwise(x, w, b, pad, stride, dilate, groups, attr,
                                                   scalars, '')


def _conv_binary(x: torch.Tensor, other: torch.Tensor, w: torch.Tensor, b: Optional[torch.Tensor],
                 pad: List[int], stride: List[int], dilate: List[int], groups: int,
                 unary: Optional[str]) -> torch.Tensor:
    scalars: List[Optional[number]] = [None]        # noqa: F821
    return torch.ops.mkldnn._convolution_pointwise(      # the .binary overload
        x, other, w, b, pad, stride, dilate, groups, 'add', None, unary, scalars, '')


def _deconv_unary(x: torch.Tensor, w: torch.Tensor, b: Optional[torch.Tensor], pad: List[int],
                  adj: List[int], stride: List[int], dilate: List[int],
                  groups: int) -> torch.Tensor:
    scalars: List[Optional[number]] = [None]        # noqa: F821
    return torch.ops.mkldnn._convolution_transpose_pointwise(
        x, w, b, pad, adj, stride, dilate, groups, 'none', scalars, '')


_EAGER = (_conv_unary, _conv_binary, _deconv_unary)


@functools.lru_cache(maxsize=None)
def _scripted():
    """_EAGER as TorchScript functions, for code being traced (inference_graph.py): the tracer
    cannot record a list of optional scalars, a TorchScript call can."""
    return tuple(torch.jit.script(f) for f in _EAGER)


@functools.lru_cache(maxsize=None)
def _onednn_available(rank=2):
    """True when PyTorch's oneDNN fused convolution of `rank` spatial dims works here (checked
    once per rank, on a tiny case)."""
    try:
        gen = torch.Generator().manual_seed(0)           # (not the global stream)
        x = _channels_last(torch.randn((1, 2) + (4,) * rank, generator=gen))
        w = torch.randn((3, 2) + (3,) * rank, generator=gen)
        ones = [1] * rank
        packed = _pack(w, x.shape, ones, ones, ones, 1)
        got = _onednn_conv(x, packed, None, torch.ones((1, 3) + (4,) * rank), ('relu', []),
                           ones, ones, ones, 1)
        want = torch.relu((F.conv2d if rank == 2 else F.conv3d)(x, w, None, 1, 1) + 1)
        return bool(torch.allclose(got, want, atol=1e-5))
    except (AttributeError, RuntimeError):
        return False


# ---------------------------------------------------------------------------------------------
# Values computed from the parameters alone
# ---------------------------------------------------------------------------------------------
_MAX_SOURCES = 4


def keep_constant_values(steps, input_names, exposed):
    """A step computed from at most _MAX_SOURCES of the plan's inputs (and nothing else) keeps
    its value between calls while those inputs stay unchanged (their version counters): the
    parameters a graph concatenates, stacks or transposes every call (GluonNLP's attention
    weights) are worked once. The inputs a step depends on are passed to it after its own
    (the generated call names them); a step whose inputs changed between its first two calls
    (one reading the data) stops looking. Fused, random, untraceable (custom Python) and
    exposed steps (heads, losses) are left as they are: a head may be written by its
    reader."""
    sources = {name: (name,) for name in input_names}
    kept = []
    for step in steps:
        found = set()
        for name in step.inputs:
            got = sources.get(name)
            found.update(('',) if got is None else got)       # '': too many, or unknown
        mine = tuple(sorted(found)) if len(found) <= _MAX_SOURCES and '' not in found else None
        for name in step.outputs:
            sources[name] = mine
        if mine is None or step.fused or step.op.random or not step.op.traceable or \
                step.aux_positions is not None or any(o in exposed for o in step.outputs):
            kept.append(step)
            continue
        kept.append(Step(step.node, step.inputs + list(mine), step.outputs, step.fn_name,
                         _kept_factory(step.make_fn, len(step.inputs))))
    return kept


def _kept_factory(make_fn, count):
    def make(train, device):
        return _KeptValue(make_fn(train, device), count)
    return make


class _KeptValue:
    """fn(*args[:count]), kept while args[count:] (the plan inputs it depends on) stay unchanged:
    'probe' (first call) -> 'kept' when the next call sees the same inputs, else 'volatile'
    (computed every call from then on); a change while kept goes back to probing."""

    def __init__(self, fn, count):
        self.fn, self.count = fn, count
        self.state, self.key, self.value = 'new', None, None

    def __call__(self, *args):
        if self.state == 'volatile':
            return self.fn(*args[:self.count])
        key = tuple((t._version, t.data_ptr()) if isinstance(t, torch.Tensor) else id(t)
                    for t in args[self.count:])
        if self.state == 'kept' and key == self.key:
            inference_graph.note(args[self.count:], self.value, True)
            return self.value
        inference_graph.note((), None, False)
        value = self.fn(*args[:self.count])
        if self.state == 'probe' and key == self.key:
            self.state, self.value = 'kept', value
        elif self.state == 'probe':
            self.state, self.key = 'volatile', None
        else:                                   # first call, or kept inputs changed
            self.state, self.key, self.value = 'probe', key, None
        return value


# ---------------------------------------------------------------------------------------------
# In-place ReLU after other producers
# ---------------------------------------------------------------------------------------------
def _then_relu(make_fn):
    def make(train, device):
        fn = make_fn(train, device)

        def with_relu(*args):
            if inference_graph.plain():
                return torch.relu(fn(*args))
            return torch.relu_(fn(*args))
        return with_relu
    return make


def fuse_relu(steps, uses):
    """A ReLU over the fresh single-use output of an FC, BatchNorm or addition (an op whose
    `fresh_output` is set; convolutions were handled above) runs in place as part of that
    step."""
    producers = {name: step for step in steps for name in step.outputs}
    fused, dropped = {}, set()
    for relu in steps:
        if not _is_relu(relu):
            continue
        producer = producers.get(relu.inputs[0])
        if producer is None or producer.fused or id(producer) in fused or \
                len(producer.outputs) != 1 or uses.get(relu.inputs[0]) != 1 or \
                not producer.op.fresh_output:
            continue
        fused[id(producer)] = Step(relu.node, producer.inputs, relu.outputs,
                                   producer.fn_name + '_relu', _then_relu(producer.make_fn),
                                   kind=producer.kind)
        dropped.add(id(relu))
    return [fused.get(id(s), s) for s in steps if id(s) not in dropped]

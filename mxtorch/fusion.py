"""Rewrites of an inference plan (executor.Plan) into fewer, faster steps.

Inference never updates auxiliary states and needs no gradients, so a bound graph can be
simplified the way MXNet's oneDNN subgraph backend simplifies it:

* BatchNorm after a Convolution is folded into the convolution's weight and bias
  (W' = W * gamma / sqrt(var + eps), b' = (b - mean) * gamma / sqrt(var + eps) + beta),
  recomputed only when one of those parameters changed (torch's tensor version counters);
* a ReLU whose input has no other consumer is applied in place on the producer's fresh output;
* 4-D convolutions run in channels-last memory format (faster with oneDNN and cuDNN), with the
  weights converted once per parameter change.

Each rule is a function `rule(steps, uses) -> steps`; `uses` counts consumers of every value.
"""
import os

import torch

from .executor import Plan, Step

_CHANNEL_FIRST = (None, 'NCW', 'NCHW', 'NCDHW')
_FRESH = ('Convolution', 'FullyConnected', 'BatchNorm', 'elemwise_add', 'broadcast_add')


def enabled():
    """MXTORCH_FUSE=0 turns the inference rewrites off (compare MXNET_SUBGRAPH_BACKEND=NONE)."""
    return os.environ.get('MXTORCH_FUSE', '1') != '0'


def optimize_for_inference(plan):
    """A Plan computing the same heads as `plan` (in inference mode) with fewer steps."""
    steps = list(plan.steps)
    for rule in (fold_batchnorm, use_channels_last, fuse_relu):
        steps = rule(steps, _uses(steps, plan.heads))
    return Plan(plan.input_names, steps, plan.heads,
                loss_steps=[s for s in steps if s in plan.loss_steps])


def _uses(steps, heads):
    uses = {}
    for step in steps:
        for name in step.inputs:
            uses[name] = uses.get(name, 0) + 1
    for name in heads:
        uses[name] = uses.get(name, 0) + 1
    return uses


def _producers(steps):
    return {name: step for step in steps for name in step.outputs}


class _Cached:
    """Derived tensors (folded or re-laid-out weights) recomputed when their sources change."""

    def __init__(self, derive):
        self._derive = derive
        self._key = None
        self._value = None

    def __call__(self, *sources):
        key = tuple((t._version, t.data_ptr()) for t in sources if t is not None)
        if key != self._key:
            with torch.no_grad():
                self._value = self._derive(*sources)
            self._key = key
        return self._value


def _channels_last(weight):
    return weight.contiguous(memory_format=torch.channels_last) if weight.dim() == 4 else weight


def _as_channels_last(data):
    if data.dim() == 4 and not data.is_contiguous(memory_format=torch.channels_last):
        return data.contiguous(memory_format=torch.channels_last)
    return data


# ---------------------------------------------------------------------------------------------
# Convolution + BatchNorm
# ---------------------------------------------------------------------------------------------
def _folded_weights(conv_params, bn_params):
    def derive(weight, bias, gamma, beta, mean, var):
        scale = torch.rsqrt(var + bn_params.eps)
        if not bn_params.fix_gamma:
            scale = scale * gamma
        folded_w = weight * scale.reshape((-1,) + (1,) * (weight.dim() - 1))
        folded_b = beta + ((bias if bias is not None else 0) - mean) * scale
        return _channels_last(folded_w), folded_b
    return derive


def _conv_bn_factory(conv, bn):
    conv_forward, conv_params = conv.op.forward, conv.params
    has_bias = not conv_params.no_bias

    def make_fn(train, device):
        folded = _Cached(_folded_weights(conv_params, bn.params))

        def conv_bn(data, weight, *rest):
            bias = rest[0] if has_bias else None
            w, b = folded(weight, bias, *rest[-4:])
            return conv_forward(conv_params, _as_channels_last(data), w, b)
        return conv_bn
    return make_fn


def fold_batchnorm(steps, uses):
    """Convolution -> BatchNorm (channel axis 1, nothing else reading the convolution or the
    BatchNorm statistics) becomes one convolution with folded weights."""
    producers = _producers(steps)
    fused, dropped = {}, set()
    for bn in steps:
        if bn.kind != 'BatchNorm' or bn.fused or bn.params.axis != 1 or \
                bn.params.output_mean_var:
            continue
        conv = producers.get(bn.inputs[0])
        if conv is None or conv.kind != 'Convolution' or conv.fused or \
                conv.params.layout not in _CHANNEL_FIRST or uses.get(bn.inputs[0]) != 1 or \
                any(uses.get(name) for name in bn.outputs[1:]):
            continue
        fused[id(conv)] = Step(bn.node, conv.inputs + bn.inputs[1:], bn.outputs[:1],
                               conv.fn_name + '_bn', _conv_bn_factory(conv, bn),
                               kind='Convolution')
        dropped.add(id(bn))
    return [fused.get(id(s), s) for s in steps if id(s) not in dropped]


# ---------------------------------------------------------------------------------------------
# Channels-last convolutions
# ---------------------------------------------------------------------------------------------
def _conv_channels_last_factory(conv):
    forward, params = conv.op.forward, conv.params

    def make_fn(train, device):
        weight_cl = _Cached(_channels_last)

        def conv_cl(data, weight, *bias):
            return forward(params, _as_channels_last(data), weight_cl(weight), *bias)
        return conv_cl
    return make_fn


def use_channels_last(steps, uses):
    """Plain 2-D channel-first convolutions run channels-last (folded ones already do)."""
    result = []
    for step in steps:
        if step.kind == 'Convolution' and not step.fused and \
                step.params.layout in _CHANNEL_FIRST and len(step.params.kernel) == 2:
            step = Step(step.node, step.inputs, step.outputs, step.fn_name + '_cl',
                        _conv_channels_last_factory(step), kind='Convolution')
        result.append(step)
    return result


# ---------------------------------------------------------------------------------------------
# In-place ReLU
# ---------------------------------------------------------------------------------------------
def _then_relu(make_fn):
    def make(train, device):
        fn = make_fn(train, device)

        def with_relu(*args):
            return torch.relu_(fn(*args))
        return with_relu
    return make


def _is_relu(step):
    return not step.fused and (step.kind == 'relu' or (
        step.kind == 'Activation' and step.params.act_type == 'relu'))


def fuse_relu(steps, uses):
    """A ReLU over the fresh single-use output of a convolution, FC, BatchNorm or addition runs
    in place as part of that step."""
    producers = _producers(steps)
    fused, dropped = {}, set()
    for relu in steps:
        if not _is_relu(relu):
            continue
        producer = producers.get(relu.inputs[0])
        if producer is None or id(producer) in fused or len(producer.outputs) != 1 or \
                uses.get(relu.inputs[0]) != 1 or producer.kind not in _FRESH:
            continue
        fused[id(producer)] = Step(relu.node, producer.inputs, relu.outputs,
                                   producer.fn_name + '_relu', _then_relu(producer.make_fn),
                                   kind=producer.kind)
        dropped.add(id(relu))
    return [fused.get(id(s), s) for s in steps if id(s) not in dropped]

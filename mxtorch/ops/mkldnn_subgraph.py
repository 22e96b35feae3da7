"""MXNet's MKL-DNN fused operators, as graphs that MXNet 1.9.1 writes after fusion
(`get_backend_symbol('MKLDNN')`, quantize_model_mkldnn) hold them: `_sg_mkldnn_conv` and
`_sg_mkldnn_fully_connected` carry their float layers (conv [+ bn] [+ act] [+ sum], fc [+ act])
as a subgraph; `_sg_mkldnn_selfatt_qk` / `_valatt` are the interleaved attention matmuls.

They run as the equivalent computation: the subgraph in float32, on dequantized inputs where
quantized=True (int8/uint8 inputs are followed by their min/max inputs, in input order), the
result then given as MKL-DNN gives it: float32 (enable_float_output), int8/uint8 over the
calibrated range (uint8 when it starts at zero or above), or int32 over a range of one step per
product of the inputs' steps, for a following requantize. Results agree with the wheel's int8
kernels up to their rounding.
"""
import torch

from ..base import np_dtype
from .control_flow import _subgraph_infer, run_graph
from .params import Bool, Float, Int
from .quantization import (INT32_RANGE, MKLDNN_STEPS, STEPS, real_range, saturate,
                           steps_per_unit, _f32)
from .registry import OpDef, get_op, register
from .shapes import require

_QUANT = {'quantized': Bool(False), 'enable_float_output': Bool(False),
          'min_calib_range': Float(None), 'max_calib_range': Float(None)}
_CONV = dict(_QUANT, with_bn=Bool(False), with_act=Bool(False), with_sum=Bool(False),
             with_postsum_act=Bool(False), dedup_sum=Bool(False))
_FC = dict(_QUANT, with_eltwise=Bool(False), with_sum=Bool(False),
           channel_wise_quantize=Bool(False))
_INT = (torch.int8, torch.uint8)
STEPS_WEIGHT = 127.5


def _subgraph(p, op):
    graphs = p.get('subgraphs')
    require(graphs is not None and len(graphs) == 1, '%s needs one subgraph, got %s', op,
            None if graphs is None else len(graphs))
    return graphs[0]


def _variables(graph):
    from ..symbol.graph import topo_order
    order = topo_order(graph._entries)
    mutated = set()
    for node in order:
        if node.op is not None:
            for child, _ in node.inputs[node.num_args():]:
                mutated.add(id(child))
    return [(n.name, id(n) in mutated) for n in order if n.op is None]


def _calibrated(p):
    return p.min_calib_range is not None and p.max_calib_range is not None


def _out_dtype(p):
    return torch.uint8 if p.min_calib_range >= 0 else torch.int8


def _dequantize_inputs(values, ranges, weight_like):
    """Float values of the int inputs (each followed by a min/max pair in `ranges`); the
    one-step value of each, for the int32 output's range."""
    out, steps, k = [], [], 0
    for i, v in enumerate(values):
        if v.dtype in _INT:
            real = real_range(ranges[k], ranges[k + 1])
            n = STEPS[v.dtype] if i in weight_like else MKLDNN_STEPS[v.dtype]
            out.append(v.float() * (real / n))
            steps.append(real / n)
            k += 2
        else:
            out.append(v.float())
    return out, steps


def _quantized_result(p, y, per_step, dtype=None):
    if p.enable_float_output:
        return y
    if _calibrated(p):
        lo, hi = _f32(p.min_calib_range).to(y.device), _f32(p.max_calib_range).to(y.device)
        dtype = dtype or _out_dtype(p)
        q = saturate(y * steps_per_unit(MKLDNN_STEPS[dtype], real_range(lo, hi)), dtype)
        return q, lo, hi
    q = torch.round(y.double() / per_step.double()).clamp(-INT32_RANGE, INT32_RANGE)
    top = per_step * INT32_RANGE
    return q.to(torch.int32), -top, top


def _sum_dtype(p, values):
    """The int type of a quantized conv's sum operand: MKL-DNN adds onto it in place, so the
    output keeps that type (a uint8 operand gives a uint8 output, negatives clipped to 0, even
    where the calibrated range would make it int8)."""
    if p.get('with_sum') and _calibrated(p):
        ints = [v.dtype for v in values[1:] if v.dtype in _INT]
        if ints:
            return ints[-1]
    return None


def _int8_conv_graph(graph, floats, data, data_step):
    """The float subgraph of a quantized conv, its Convolution (with a following BatchNorm
    folded into it) computed as MKL-DNN does: weights quantized per output channel to int8 over
    their own range, the bias to int32 at the data's times the weights' scale, an exact
    integer accumulation, then back to float for the rest (activation, sum). Closer to the
    wheel than the float weights (0.4% of a first layer's uint8 outputs one step off, not 10%:
    the wheel's results there sit a little lower, by up to 0.12 steps, for reasons not found)."""
    from ..symbol.graph import topo_order
    order = topo_order(graph._entries)
    env = {(id(n), 0): x for n, x in zip([n for n in order if n.op is None], floats)}

    def get(entry):
        return env[(id(entry[0]), entry[1])]
    conv = next(n for n in order if n.op is not None and n.op.name == 'Convolution')
    bn = next((n for n in order if n.op is not None and n.op.name == 'BatchNorm'
               and n.inputs[0][0] is conv), None)
    weight = get(conv.inputs[1])
    shape = (-1,) + (1,) * (weight.dim() - 1)
    bias = torch.zeros(weight.shape[0]) if conv.params.no_bias else get(conv.inputs[2])
    if bn is not None:
        gamma, beta, mean, var = (get(e) for e in bn.inputs[1:5])
        if bn.params.fix_gamma:
            gamma = torch.ones_like(gamma)
        scale = gamma / torch.sqrt(var + bn.params.eps)
        weight, bias = weight * scale.reshape(shape), (bias - mean) * scale + beta
    w_scale = STEPS_WEIGHT / weight.abs().flatten(1).amax(1).clamp(min=1e-30)
    w_q = saturate(weight * w_scale.reshape(shape), torch.int8)
    b_q = torch.round(bias / data_step * w_scale)
    # integer products summed in float32: exact while below 2^24, within 1e-7 beyond
    acc = get_op('Convolution').bind_forward(conv.params, False, data.device)(
        data.float(), w_q.float(), b_q)
    y = acc * (data_step / w_scale).reshape((1,) + shape[:-1])
    env[(id(bn or conv), 0)] = y
    for node in order:
        if node.op is None or node is conv or node is bn:
            continue
        result = node.op.bind_forward(node.params, False, data.device)(
            *[get(e) for e in node.inputs])
        for k, value in enumerate(result if isinstance(result, (tuple, list)) else (result,)):
            env[(id(node), k)] = value
    return get(graph._entries[0])


def _fused(op_name, weight_index):
    def forward(p, *inputs):
        graph = _subgraph(p, op_name)
        n = len(_variables(graph))
        values, ranges = list(inputs[:n]), inputs[n:]
        if not p.quantized:
            return run_graph(graph, values, False)[0]
        floats, steps = _dequantize_inputs(values, ranges, (weight_index,))
        if values[weight_index].dtype in _INT:
            weight_step = steps[1]
        else:                      # float weights (conv): one int8 step of their own range
            weight_step = floats[weight_index].abs().max().reshape(1) / STEPS[torch.int8]
        if op_name == '_sg_mkldnn_conv' and _calibrated(p) and values[0].dtype in _INT:
            y = _int8_conv_graph(graph, floats, values[0], steps[0])
        else:
            y = run_graph(graph, floats, False)[0]
        return _quantized_result(p, y, steps[0] * weight_step, _sum_dtype(p, values))
    forward.__doc__ = 'the fused float subgraph, on dequantized inputs where quantized'
    return forward


def _names(p, op_name, aux):
    graph = _subgraph(p, op_name)
    return tuple(n for n, mutated in _variables(graph) if mutated == aux)


def _quant_names(p, op_name):
    """Range inputs of a quantized node, a (min, max) pair per int input: data's, a conv's
    sum operand's (with_sum), a fully connected node's weight and bias (a conv's weights stay
    float)."""
    if not p.quantized:
        return ()
    names = _names(p, op_name, False)
    if op_name.endswith('connected'):
        quantized = ('data',) + tuple(names[1:])
    else:
        quantized = ('data', 'sum') if p.with_sum else ('data',)
    return tuple(r for n in quantized for r in ('min_' + n, 'max_' + n))


def _arg_names(p, op_name):
    # the subgraph's variables in its order, then a quantized node's range inputs: a fused
    # BatchNorm's moving statistics keep their place there (before a sum operand and the
    # ranges) and are the graph's aux states all the same (mutated_args)
    return tuple(n for n, _ in _variables(_subgraph(p, op_name))) + _quant_names(p, op_name)


def _outputs(p):
    if p.quantized and not p.enable_float_output:
        return ('output', 'min_output', 'max_output')
    return ('output',)


def _fused_shape(name):
    def infer_shape(p, ins, outs):
        n = len(_variables(_subgraph(p, name)))
        found, results = _subgraph_infer(_subgraph(p, name), list(ins[:n]), 'shape')
        new = [f if f is not None else s for f, s in zip(found, ins[:n])]
        extra = [(1,)] * (len(ins) - n)
        return new + extra, [results[0]] + [(1,)] * (len(outs) - 1)
    return infer_shape


def _out_type(p):
    if not p.quantized or p.enable_float_output:
        return np_dtype('float32')
    if _calibrated(p):
        return np_dtype('uint8' if p.min_calib_range >= 0 else 'int8')
    return np_dtype('int32')


def _fused_type(name, weight_index):
    def infer_type(p, ins, outs):
        n = len(_variables(_subgraph(p, name)))
        f32 = np_dtype('float32')
        new = [t if t is not None else f32 for t in ins[:n]]
        if p.quantized:
            new[0] = ins[0] or np_dtype('int8')
            # a fully connected node's int8 weight and bias come with their ranges (a conv's
            # weights stay float; its other ranges are a sum operand's)
            if name.endswith('connected') and len(ins) - n > 2:
                new[1:3] = [ins[i] or np_dtype('int8') for i in (1, 2)][:n - 1]
        return new + [f32] * (len(ins) - n), [_out_type(p)] + [f32] * (len(outs) - 1)
    return infer_type


def _register_fused(name, params, weight_index):
    # int8 inputs come with ranges after the subgraph's own inputs; the count of range inputs
    # follows the node (a conv's float weights have none)
    op = OpDef(name, _fused(name, weight_index), params=params,
               inputs=lambda p: _arg_names(p, name), outputs=_outputs,
               infer_shape=_fused_shape(name), infer_type=_fused_type(name, weight_index),
               differentiable=False)
    op.mutated_args = lambda p: _names(p, name, True)
    register(op)


_register_fused('_sg_mkldnn_conv', _CONV, 1)
_register_fused('_sg_mkldnn_fully_connected', _FC, 1)


def _selfatt(float_name, count):
    float_op = get_op(float_name)

    def forward(p, *inputs):
        values, ranges = list(inputs[:count]), inputs[count:]
        if not p.quantized:
            return float_op.forward(p, *[v.float() for v in values])
        floats, steps = _dequantize_inputs(values, ranges, ())
        y = float_op.forward(p, *floats)
        per_step = steps[0] * (steps[1] if len(steps) > 1 else steps[0])
        return _quantized_result(p, y, per_step)
    return forward


def _selfatt_inputs(names, ranges):
    return lambda p: names + (ranges if p.quantized else ())


register(OpDef('_sg_mkldnn_selfatt_qk',
               _selfatt('_contrib_interleaved_matmul_selfatt_qk', 1),
               params=dict(_QUANT, heads=Int()),
               inputs=_selfatt_inputs(('queries_keys_values',), ('min_qkv', 'max_qkv')),
               outputs=_outputs, differentiable=False))
register(OpDef('_sg_mkldnn_selfatt_valatt',
               _selfatt('_contrib_interleaved_matmul_selfatt_valatt', 2),
               params=dict(_QUANT, heads=Int()),
               inputs=_selfatt_inputs(('queries_keys_values', 'attention'),
                                      ('min_qkv', 'max_qkv', 'min_attention', 'max_attention')),
               outputs=_outputs, differentiable=False))

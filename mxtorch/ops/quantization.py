"""Quantization (`_contrib_quantize`, `_contrib_dequantize`, as mx.nd/sym.contrib.*): float32
to int8 (symmetric: the range is +-max(|min_range|, |max_range|), 127 steps) or uint8 (affine
over [min_range, max_range], 255 steps), and back; MXNet's portable CPU kernels (round half away
from zero; MKL-DNN builds of MXNet differ for uint8). The range outputs are float32, shape (1,)."""
import torch

from ..base import np_dtype
from .params import Enum
from .registry import OpDef, register
from .shapes import merge


def _real_range(lo, hi):
    return torch.maximum(lo.abs(), hi.abs())


def _quantize(p, data, min_range, max_range):
    """(quantized data, its min, its max)."""
    lo, hi = min_range.float().reshape(1), max_range.float().reshape(1)
    x = data.float()
    if p.out_type == 'int8':
        real = _real_range(lo, hi)
        scaled = torch.clamp(x.abs() * (127.0 / real) + 0.5, max=127.0)
        q = (torch.sign(x) * torch.floor(scaled)).to(torch.int8)
        return q, -real, real.clone()
    scaled = (x - lo) * (255.0 / (hi - lo)) + 0.5
    q = torch.floor(torch.clamp(scaled, 0.0, 255.0)).to(torch.uint8)
    return q, lo.clone(), hi.clone()


def _dequantize(p, data, min_range, max_range):
    """float32 values of int8 / uint8 data quantized over [min_range, max_range]."""
    lo, hi = min_range.float().reshape(1), max_range.float().reshape(1)
    q = data.float()
    if data.dtype == torch.int8:
        return q * (_real_range(lo, hi) / 127.0)
    return lo + q * ((hi - lo) / 255.0)


def _range_shapes(ins, outs):
    return [ins[0], merge(ins[1], (1,)), merge(ins[2], (1,))]


register(OpDef('_contrib_quantize', _quantize, inputs=('data', 'min_range', 'max_range'),
               params={'out_type': Enum(('int8', 'uint8'), 'uint8')},
               outputs=('output0', 'output1', 'output2'), differentiable=False,
               infer_shape=lambda p, ins, outs: (_range_shapes(ins, outs),
                                                 [ins[0], (1,), (1,)]),
               infer_type=lambda p, ins, outs: ([np_dtype('float32')] * 3,
                                                [np_dtype(p.out_type), np_dtype('float32'),
                                                 np_dtype('float32')])))
register(OpDef('_contrib_dequantize', _dequantize, inputs=('data', 'min_range', 'max_range'),
               params={'out_type': Enum(('float32',), 'float32')}, differentiable=False,
               infer_shape=lambda p, ins, outs: (_range_shapes(ins, outs), [ins[0]]),
               infer_type=lambda p, ins, outs: ([ins[0], np_dtype('float32'),
                                                 np_dtype('float32')], [np_dtype('float32')])))

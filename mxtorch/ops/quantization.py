"""Quantization conversions, as mx.nd/sym.contrib.*: `_contrib_quantize` / `_contrib_dequantize`
(float32 <-> int8/uint8 over a given range), `_contrib_quantize_v2` (over a calibrated range or
the data's own), `_contrib_quantize_asym` (uint8 with a scale and a shift), `_contrib_requantize`
(int32 -> int8/uint8) and `_contrib_calibrate_entropy` (the KL-divergence threshold of a
histogram).

Two conventions live in MXNet 1.9.1's CPU wheel, an MKL-DNN build:
* `_contrib_quantize` / `_contrib_dequantize` follow MXNet's portable kernels here: int8 is
  symmetric over +-max(|min|, |max|) with 127 steps, rounded half away from zero; uint8 is
  affine over [min, max] with 255 steps. (The wheel's MKL-DNN kernels use the uint8 convention
  below and divide int8 by 127.5 in dequantize.)
* the int8 graph operators (`quantize_v2`, `requantize`, and the quantized layers in
  quantized_nn.py) follow the wheel's MKL-DNN kernels: quantize_v2 maps a real range
  r = max(|min|, |max|) to 127.5 int8 steps (saturated to [-128, 127]) or 255.5 uint8 steps
  from zero (saturated to [0, 255]), rounded half to even; requantize to 127 / 255 steps.
  int32 values span their range r over 2^31 - 1 steps.
"""
import numpy as np
import torch

from ..base import np_dtype
from .params import Enum, Float, Int
from .registry import OpDef, register
from .shapes import merge, require

INT32_RANGE = float(2 ** 31 - 1)
# steps of a real range r in the MKL-DNN kernels' int8 / uint8 (see the module doc)
MKLDNN_STEPS = {torch.int8: 127.5, torch.uint8: 255.5}
# steps of int8 / uint8 in requantize and in the ranges of the quantized layers' outputs
STEPS = {torch.int8: 127.0, torch.uint8: 255.0}
_LIMITS = {torch.int8: (-128, 127), torch.uint8: (0, 255)}


def real_range(lo, hi):
    """max(|lo|, |hi|) of two range tensors (or floats), a float32 tensor of shape (1,)."""
    lo, hi = (torch.as_tensor(v, dtype=torch.float32).reshape(1) for v in (lo, hi))
    return torch.maximum(lo.abs(), hi.abs())


def saturate(values, dtype):
    """values (float) rounded half to even and clamped into int8 / uint8."""
    low, high = _LIMITS[dtype]
    return torch.clamp(torch.round(values), low, high).to(dtype)


def steps_per_unit(steps, real):
    """steps / real in float32 (a true division: torch's scalar / tensor multiplies by the
    reciprocal, which can be one ulp off)."""
    return torch.full_like(real, steps) / real


def to_steps(x, real, dtype):
    """float x over the real range `real` as int8 / uint8 steps (MKL-DNN's convention)."""
    return saturate(x.float() * steps_per_unit(MKLDNN_STEPS[dtype], real), dtype)


def _f32(value):
    return torch.tensor([value], dtype=torch.float32)


# ---------------------------------------------------------------------------------------------
# quantize / dequantize (portable kernels)
# ---------------------------------------------------------------------------------------------
def _quantize(p, data, min_range, max_range):
    """(quantized data, its min, its max)."""
    lo, hi = min_range.float().reshape(1), max_range.float().reshape(1)
    x = data.float()
    if p.out_type == 'int8':
        real = real_range(lo, hi)
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
        return q * (real_range(lo, hi) / 127.0)
    return lo + q * ((hi - lo) / 255.0)


def range_shapes(p, ins, outs):
    """(data, min, max) -> (output, min, max): the ranges have shape (1,)."""
    return [ins[0]] + [merge(s, (1,)) for s in ins[1:]], [ins[0], (1,), (1,)]


def _quantize_type(p, ins, outs):
    return [np_dtype('float32')] * 3, [np_dtype(p.out_type), np_dtype('float32'),
                                       np_dtype('float32')]


def _dequantize_type(p, ins, outs):
    data = ins[0]
    require(data is None or data in (np_dtype('int8'), np_dtype('uint8')),
            'dequantize: the input data type must be int8 or uint8, got %s', data)
    return [data, np_dtype('float32'), np_dtype('float32')], [np_dtype('float32')]


register(OpDef('_contrib_quantize', _quantize, inputs=('data', 'min_range', 'max_range'),
               params={'out_type': Enum(('int8', 'uint8'), 'uint8')},
               outputs=('output0', 'output1', 'output2'), differentiable=False,
               infer_shape=range_shapes, infer_type=_quantize_type))
register(OpDef('_contrib_dequantize', _dequantize, inputs=('data', 'min_range', 'max_range'),
               params={'out_type': Enum(('float32',), 'float32')}, differentiable=False,
               infer_shape=lambda p, ins, outs: (range_shapes(p, ins, outs)[0], [ins[0]]),
               infer_type=_dequantize_type))


# ---------------------------------------------------------------------------------------------
# quantize_v2, requantize
# ---------------------------------------------------------------------------------------------
_OUT_TYPE = Enum(('auto', 'int8', 'uint8'), 'int8')
_CALIB = {'min_calib_range': Float(None), 'max_calib_range': Float(None)}


def calibrated(p):
    return p.min_calib_range is not None and p.max_calib_range is not None


def out_dtype(p):
    """int8 or uint8 (torch) of an out_type parameter: auto is uint8 where a calibrated range
    starts at zero or above."""
    if p.out_type == 'uint8' or (p.out_type == 'auto' and calibrated(p) and
                                 p.min_calib_range >= 0):
        return torch.uint8
    return torch.int8


def _quantize_v2(p, data):
    """data over the calibrated range, else over the data's own min and max. Outputs the range
    that the result spans: +-r for int8; the range itself for uint8 (MKL-DNN's, whose steps
    start at zero whatever its min). int8 / uint8 data passes through, spanning the calibrated
    range or its own steps (+-127.5, or 0 to 255.5)."""
    if data.dtype in _LIMITS:
        if calibrated(p):
            return data, _f32(p.min_calib_range), _f32(p.max_calib_range)
        top = _f32(MKLDNN_STEPS[data.dtype])
        return data, (-top if data.dtype == torch.int8 else torch.zeros(1)), top
    if calibrated(p):
        lo, hi = _f32(p.min_calib_range), _f32(p.max_calib_range)
    else:
        lo, hi = data.min().float().reshape(1), data.max().float().reshape(1)
    dtype = out_dtype(p)
    real = real_range(lo, hi)
    q = to_steps(data, real, dtype)
    if dtype == torch.int8:
        return q, -real, real.clone()
    return q, lo, hi


def _v2_type(p, ins, outs):
    if ins[0] in (np_dtype('int8'), np_dtype('uint8')):
        return [ins[0]], [ins[0], np_dtype('float32'), np_dtype('float32')]
    return [np_dtype('float32')], [np_dtype(str(out_dtype(p)).split('.')[-1]),
                                   np_dtype('float32'), np_dtype('float32')]


register(OpDef('_contrib_quantize_v2', _quantize_v2, params=dict(_CALIB, out_type=_OUT_TYPE),
               outputs=('output0', 'output1', 'output2'), differentiable=False,
               infer_shape=lambda p, ins, outs: (ins, [ins[0], (1,), (1,)]),
               infer_type=_v2_type))


def _requantize(p, data, min_range, max_range):
    """int32 data spanning +-max(|min_range|, |max_range|) as int8 / uint8 over the calibrated
    range, else over the range of the data's own values."""
    require(data.dtype == torch.int32, 'requantize: data must be int32, got %s',
            str(data.dtype).split('.')[-1])
    in_real = real_range(min_range, max_range)
    per_step = in_real / INT32_RANGE
    if calibrated(p):
        lo, hi = _f32(p.min_calib_range), _f32(p.max_calib_range)
    else:
        lo = data.min().float().reshape(1) * per_step
        hi = data.max().float().reshape(1) * per_step
    dtype = out_dtype(p)
    real = real_range(lo, hi)
    scale = steps_per_unit(STEPS[dtype], real) * per_step
    q = saturate(data.float() * scale, dtype)
    return q, (-real if dtype == torch.int8 else torch.zeros_like(real)), real.clone()


def _requantize_type(p, ins, outs):
    require(ins[0] is None or ins[0] == np_dtype('int32'),
            'requantize: data must be int32, got %s', ins[0])
    return [np_dtype('int32'), np_dtype('float32'), np_dtype('float32')], \
        [np_dtype(str(out_dtype(p)).split('.')[-1]), np_dtype('float32'), np_dtype('float32')]


register(OpDef('_contrib_requantize', _requantize, inputs=('data', 'min_range', 'max_range'),
               params=dict(_CALIB, out_type=_OUT_TYPE), outputs=('output0', 'output1', 'output2'),
               differentiable=False, infer_shape=range_shapes, infer_type=_requantize_type))


# ---------------------------------------------------------------------------------------------
# quantize_asym
# ---------------------------------------------------------------------------------------------
def _quantize_asym(p, data):
    """uint8 q = round(x * scale + shift): [min, max] (calibrated, else the data's) onto
    [0, 255]; outputs q, scale and shift."""
    if calibrated(p):
        lo, hi = _f32(p.min_calib_range), _f32(p.max_calib_range)
    else:
        lo, hi = data.min().float().reshape(1), data.max().float().reshape(1)
    scale = 255.0 / (hi - lo)
    shift = 255.0 - hi * scale
    return saturate(data.float() * scale + shift, torch.uint8), scale, shift


register(OpDef('_contrib_quantize_asym', _quantize_asym, params=dict(_CALIB),
               outputs=('output', 'scale', 'shift'), differentiable=False,
               infer_shape=lambda p, ins, outs: (ins, [ins[0], (1,), (1,)]),
               infer_type=lambda p, ins, outs: ([np_dtype('float32')], [
                   np_dtype('uint8'), np_dtype('float32'), np_dtype('float32')])))


# ---------------------------------------------------------------------------------------------
# calibrate_entropy
# ---------------------------------------------------------------------------------------------
def _smooth(p, eps=1e-4):
    """p with its zeros raised to eps and the mass taken off the non-zeros; None if all are
    zero."""
    zeros = p == 0
    n_zeros = int(zeros.sum())
    n_nonzeros = p.size - n_zeros
    if not n_nonzeros:
        return None
    eps1 = eps * float(n_zeros) / float(n_nonzeros)
    return p.astype(np.float32) + np.where(zeros, np.float32(eps), np.float32(-eps1))


def _kl(p, q):
    """KL(p || q) of two positive histograms, normalised; in float32 summed in order (as
    MXNet's kernel: the choice between near-equal thresholds depends on it)."""
    p, q = p.astype(np.float32), q.astype(np.float32)
    p = p / np.cumsum(p, dtype=np.float32)[-1]
    q = q / np.cumsum(q, dtype=np.float32)[-1]
    terms = (p * np.log((p / q).astype(np.float32))).astype(np.float32)
    return float(np.cumsum(terms, dtype=np.float32)[-1])


def _entropy_threshold(hist, edges, num_quantized_bins):
    """(threshold, divergence) minimising KL(reference || quantized) over symmetric windows
    of the histogram (TensorRT's calibration)."""
    num_bins = hist.size
    zero_bin = num_bins // 2
    half_q = num_quantized_bins // 2
    best = (np.inf, 0.0)
    for i in range(half_q, zero_bin + 1):
        start, stop = zero_bin - i, zero_bin + i + 1
        threshold = float(edges[stop])
        sliced = hist[start:stop].astype(np.float64)
        ref = sliced.copy()
        ref[0] += hist[:start].sum()
        ref[-1] += hist[stop:].sum()
        nonzero = sliced != 0          # the window's own bins, before the outliers
        merged = sliced.size // num_quantized_bins
        cut = merged * num_quantized_bins
        totals = sliced[:cut].reshape(num_quantized_bins, merged).sum(axis=1)
        counts = nonzero[:cut].reshape(num_quantized_bins, merged).sum(axis=1)
        totals[-1] += sliced[cut:].sum()      # the last merged bin takes the remainder
        counts[-1] += nonzero[cut:].sum()
        widths = np.full(num_quantized_bins, merged)
        widths[-1] += sliced.size - cut
        cand = np.repeat(np.where(counts > 0, totals / np.maximum(counts, 1), 0.0), widths)
        cand[ref == 0] = 0
        ps, qs = _smooth(ref), _smooth(cand)
        divergence = np.inf if ps is None or qs is None else _kl(ps, qs)
        if divergence < best[0]:
            best = (divergence, threshold)
    return best[1], best[0]


def _calibrate_entropy(p, hist, hist_edges):
    threshold, divergence = _entropy_threshold(hist.detach().cpu().double().numpy(),
                                               hist_edges.detach().cpu().double().numpy(),
                                               p.num_quantized_bins)
    return _f32(threshold).to(hist.device), _f32(divergence).to(hist.device)


def _entropy_shape(p, ins, outs):
    hist = ins[0]
    require(hist is None or len(hist) == 1, 'calibrate_entropy: hist must be 1-D, got %s', hist)
    edges = merge(ins[1], (hist[0] + 1,)) if hist is not None and hist[0] else ins[1]
    return [hist, edges], [(1,), (1,)]


register(OpDef('_contrib_calibrate_entropy', _calibrate_entropy,
               inputs=('hist', 'hist_edges'), params={'num_quantized_bins': Int(255)},
               outputs=('threshold', 'divergence'), differentiable=False,
               infer_shape=_entropy_shape,
               infer_type=lambda p, ins, outs: ([np_dtype('float32')] * 2,
                                                [np_dtype('float32')] * 2)))

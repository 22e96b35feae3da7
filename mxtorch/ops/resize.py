"""Resizing operators of mx.contrib: AdaptiveAvgPooling2D and BilinearResize2D (NCHW data).

AdaptiveAvgPooling2D averages, for output cell i of n over an input axis of size s, the input
rows floor(i*s/n) .. ceil((i+1)*s/n) - 1 (torch's adaptive pooling does the same).
BilinearResize2D interpolates bilinearly, with the corner pixels aligned (align_corners) or
with half-pixel centres; its output size comes from `mode`:

* size: (height, width), or (floor(h*scale_height), floor(w*scale_width)) when scales are given;
* odd_scale: an odd size s becomes floor((s-1)*scale)+1, an even one floor(s*scale);
* like: the height and width of the second input `like` (which gets no gradient);
* to_even_down / to_even_up / to_odd_down / to_odd_up: each size moved by one to the nearest
  even (odd) size below (above) it, unless already even (odd).
"""
import torch
import torch.nn.functional as F

from .params import Bool, Enum, Float, Int, Shape
from .registry import OpDef, register
from .shapes import merge, require, same_type


def _check_nchw(op, shape):
    require(len(shape) == 4, '%s: data must be 4-D (batch, channel, height, width), got %d-D',
            op, len(shape))


def _pool_size(p):
    size = tuple(p.output_size)
    require(len(size) in (0, 1, 2), 'AdaptiveAvgPooling2D: output_size=%s must have 1 or 2 '
            'entries', size)
    if not size:
        return (1, 1)
    size = size * 2 if len(size) == 1 else size
    require(all(s > 0 for s in size), 'AdaptiveAvgPooling2D: output_size=%s must be positive',
            size)
    return size


def _adaptive_avg_pool(p, data):
    _check_nchw('AdaptiveAvgPooling2D', data.shape)
    return F.adaptive_avg_pool2d(data, _pool_size(p))


def _adaptive_avg_pool_shape(p, ins, outs):
    if ins[0] is None:
        return ins, outs
    _check_nchw('AdaptiveAvgPooling2D', ins[0])
    return ins, [merge(outs[0], tuple(ins[0][:2]) + _pool_size(p))]


register(OpDef('_contrib_AdaptiveAvgPooling2D', _adaptive_avg_pool,
               params={'output_size': Shape(())}, infer_shape=_adaptive_avg_pool_shape))


# ---------------------------------------------------------------------------------------------
# BilinearResize2D
# ---------------------------------------------------------------------------------------------
_MODES = ('like', 'odd_scale', 'size', 'to_even_down', 'to_even_up', 'to_odd_down', 'to_odd_up')
_PARITY = {'to_even_down': (0, -1), 'to_even_up': (0, 1), 'to_odd_down': (1, -1),
           'to_odd_up': (1, 1)}


def _scales(p):
    require(p.scale_height is not None and p.scale_width is not None,
            'BilinearResize2D: mode=%s with scales needs both scale_height and scale_width '
            '(got scale_height=%s, scale_width=%s)', p.mode, p.scale_height, p.scale_width)
    return p.scale_height, p.scale_width


def _resized(p, size, like_size):
    """(height, width) of the output for input (height, width) `size`; like_size: the `like`
    input's (height, width) or None when unknown."""
    if p.mode == 'size':
        if p.scale_height is None and p.scale_width is None:
            return p.height, p.width
        return tuple(int(s * f) for s, f in zip(size, _scales(p)))
    if p.mode == 'odd_scale':
        return tuple(int((s - 1) * f) + 1 if s % 2 else int(s * f)
                     for s, f in zip(size, _scales(p)))
    if p.mode == 'like':
        return like_size
    parity, step = _PARITY[p.mode]
    return tuple(s if s % 2 == parity else s + step for s in size)


def _bilinear_resize(p, data, like=None):
    _check_nchw('BilinearResize2D', data.shape)
    if like is not None:
        _check_nchw('BilinearResize2D', like.shape)
    size = _resized(p, tuple(data.shape[2:]), None if like is None else tuple(like.shape[2:]))
    require(all(s > 0 for s in size), 'BilinearResize2D: the output size %s must be positive',
            size)
    out = F.interpolate(data if data.is_floating_point() else data.double(), size=size,
                        mode='bilinear', align_corners=p.align_corners)
    return out.to(data.dtype)


def _bilinear_resize_shape(p, ins, outs):
    data = ins[0]
    if data is None:
        return ins, outs
    _check_nchw('BilinearResize2D', data)
    like = ins[1] if p.mode == 'like' else None
    if p.mode == 'like' and (like is None or not all(like[2:])):
        return ins, outs
    size = _resized(p, tuple(data[2:]), None if like is None else tuple(like[2:]))
    if p.mode not in ('size', 'like') and not all(data[2:]):
        size = (0, 0)
    return ins, [merge(outs[0], tuple(data[:2]) + tuple(size))]


def _bilinear_resize_type(p, ins, outs):
    in_types, out_types = same_type(p, ins[:1], outs)
    return in_types + list(ins[1:]), out_types


register(OpDef('_contrib_BilinearResize2D', _bilinear_resize,
               params={'height': Int(1), 'width': Int(1), 'scale_height': Float(None),
                       'scale_width': Float(None), 'mode': Enum(_MODES, 'size'),
                       'align_corners': Bool(True)},
               inputs=lambda p: ('data', 'like') if p.mode == 'like' else ('data',),
               infer_shape=_bilinear_resize_shape, infer_type=_bilinear_resize_type))

"""Spatial operators: Convolution, Deconvolution, Pooling, UpSampling, LRN, ROIPooling, Crop,
Pad, depth_to_space / space_to_depth, GridGenerator / BilinearSampler / SpatialTransformer,
Correlation.

Shapes in the rules are channel-first internally; channel-last layouts (NWC, NHWC, NDHWC) move
the channel axis on the way in and out. Geometry checks raise MXNetError naming the operator and
the parameter, in shape inference and in imperative calls alike. The checked geometry of a
(params, shape) pair is cached: forward passes run it every step.

Several operators have hidden outputs, as in MXNet 1.9.1 (they count in a symbol's JSON): max
Pooling's workspace, LRN's normaliser, ROIPooling's argmax, the sampling grids, Correlation's
padded inputs. Where MXNet leaves them as kernel scratch (max Pooling's workspace) they are
zeros here.
"""
import collections
import functools
import os

import torch
import torch.nn.functional as F

from .. import inference_graph
from ..base import np_dtype
from .params import Bool, Enum, Float, Int, Shape
from .registry import OpDef, register
from .shapes import known, merge, require, same_type

_CONV = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
_CONV_T = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}
_MAX_POOL = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}
_AVG_POOL = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}

_LAYOUT_RANK = {'NCW': 1, 'NWC': 1, 'NCHW': 2, 'NHWC': 2, 'NCDHW': 3, 'NDHWC': 3}
_CHANNEL_LAST = ('NWC', 'NHWC', 'NDHWC')
_CONV_LAYOUTS = ('NCDHW', 'NCHW', 'NCW', 'NDHWC', 'NHWC')
_BILINEAR_INIT = '["bilinear", {}]'


def _hidden_zeros(like, dtype):
    """A hidden output MXNet uses as kernel scratch: zeros shaped like `like`, no memory."""
    return torch.zeros((), dtype=dtype, device=like.device).expand(like.shape)


def _int32_index_type(p, ins, outs):
    """One dtype for the inputs and the output; hidden index outputs are int32."""
    in_types, (dtype,) = same_type(p, ins, outs[:1])
    return in_types, [dtype] + [np_dtype('int32')] * (len(outs) - 1)


class _NamedVariadicOp(OpDef):
    """A variadic operator (the call fills `num_args`) whose inputs keep names that depend on its
    params, as MXNet lists them: UpSampling's bilinear data/weight, Crop's data/crop_like."""

    def arg_names(self, p):
        return list(self._inputs(p))


# ---------------------------------------------------------------------------------------------
# Layout and geometry helpers
# ---------------------------------------------------------------------------------------------
def _channel_first(shape, layout):
    shape = tuple(shape)
    if layout in _CHANNEL_LAST:
        return (shape[0], shape[-1]) + shape[1:-1]
    return shape


def _channel_last_if(shape, layout):
    """A channel-first shape written in `layout`."""
    shape = tuple(shape)
    if layout in _CHANNEL_LAST:
        return (shape[0],) + shape[2:] + (shape[1],)
    return shape


def _check_4d(op, shape, what='data'):
    require(len(shape) == 4, '%s: %s must be 4-D (batch, channel, y, x), got %d-D', op, what,
            len(shape))


def _check_rank(op, p, ndim):
    """Spatial rank of `ndim`-D data, checked against the kernel length and the layout."""
    rank = len(p.kernel)
    require(1 <= rank <= 3, '%s: kernel must have 1, 2 or 3 entries, got kernel=%s', op,
            p.kernel)
    require(ndim == rank + 2, '%s: kernel=%s expects %d-D data (batch, channel and %d spatial '
            'dims), got %d-D data', op, p.kernel, rank + 2, rank, ndim)
    if p.get('layout') is not None:
        require(_LAYOUT_RANK[p.layout] == rank, '%s: layout=%s expects %d-D data, got %d-D data',
                op, p.layout, _LAYOUT_RANK[p.layout] + 2, ndim)
    return rank


def _per_dim(op, p, name, rank, fill, extra_ignored=False):
    """A stride/dilate/pad/adj tuple: `fill` for every dim when empty, else one entry per dim
    (extra_ignored: entries past the kernel's rank are ignored, as MXNet's Pooling does)."""
    value = p[name]
    if not value:
        return (fill,) * rank
    if extra_ignored:
        value = value[:rank]
    require(len(value) == rank, '%s: %s=%s must have one entry per kernel dim (kernel=%s)',
            op, name, value, p.kernel)
    return tuple(value)


def window_geometry(op, p, ndim):
    """(kernel, stride, dilate, pad) of a sliding window (Convolution, Deconvolution, im2col)
    over `ndim`-D data, checked."""
    rank = _check_rank(op, p, ndim)
    stride = _per_dim(op, p, 'stride', rank, 1)
    dilate = _per_dim(op, p, 'dilate', rank, 1)
    pad = _per_dim(op, p, 'pad', rank, 0)
    require(all(s > 0 for s in stride), '%s: stride=%s must be positive', op, stride)
    require(all(d > 0 for d in dilate), '%s: dilate=%s must be positive', op, dilate)
    require(all(k > 0 for k in p.kernel), '%s: kernel=%s must be positive', op, p.kernel)
    return tuple(p.kernel), stride, dilate, pad


def _conv_geometry(op, p, ndim):
    """(kernel, stride, dilate, pad) of Convolution/Deconvolution on `ndim`-D data."""
    geometry = window_geometry(op, p, ndim)
    require(p.num_group > 0 and p.num_filter % p.num_group == 0, '%s: num_filter=%d must be a '
            'multiple of num_group=%d', op, p.num_filter, p.num_group)
    return geometry


def _check_groups(op, channels, num_group):
    require(not channels or channels % num_group == 0, '%s: the %d input channels must be a '
            'multiple of num_group=%d', op, channels, num_group)


def _weight_shape(out_channels, in_channels, kernel, layout):
    """Weight shape: (out, in, *kernel), or (out, *kernel, in) for channel-last layouts."""
    if layout in _CHANNEL_LAST:
        return (out_channels,) + tuple(kernel) + (in_channels,)
    return (out_channels, in_channels) + tuple(kernel)


# ---------------------------------------------------------------------------------------------
# Convolution
# ---------------------------------------------------------------------------------------------
def _conv_out_size(x, k, s, d, pad):
    span = d * (k - 1) + 1
    require(span <= x + 2 * pad, 'Convolution: the dilated kernel (%d) exceeds the padded '
            'input (%d)', span, x + 2 * pad)
    return (x + 2 * pad - span) // s + 1


@functools.lru_cache(maxsize=4096)
def _conv_shapes(p, data):
    """(kernel, stride, dilate, pad, weight shape, output shape) of Convolution for a
    channel-first data shape (0 = unknown dim), checked."""
    kernel, stride, dilate, pad = _conv_geometry('Convolution', p, len(data))
    _check_groups('Convolution', data[1], p.num_group)
    spatial = tuple(_conv_out_size(x, k, s, d, pd) if x else 0
                    for x, k, s, d, pd in zip(data[2:], kernel, stride, dilate, pad))
    weight = _weight_shape(p.num_filter, data[1] // p.num_group, kernel, p.layout)
    return kernel, stride, dilate, pad, weight, (data[0], p.num_filter) + spatial


def _check_weight(op, weight, expected):
    require(tuple(weight.shape) == tuple(expected), '%s: weight must have shape %s for this '
            'data and these params, got %s', op, tuple(expected), tuple(weight.shape))


# Training layout (plan.py's channels-last plans; a recorded Convolution follows them)
def channels_last_enabled():
    """Whether training plans may run channels-last (MXTORCH_CHANNELS_LAST, read at bind:
    1 by default, 0 keeps every value channel-first)."""
    return os.environ.get('MXTORCH_CHANNELS_LAST', '1').strip().lower() not in \
        ('0', 'off', 'false', 'no')


CHANNELS_LAST_ROWS = 1024


def channels_last_pays(shape):
    """Whether a 2-D convolution with this (channel-first) output shape runs channels-last in
    training: CHANNELS_LAST_ROWS output positions or more. Recorded imperatively, a Convolution
    does the same (_recorded_channels_last): hybridized and imperative give the same numbers."""
    return shape[0] * shape[2] * shape[3] >= CHANNELS_LAST_ROWS


def to_channels_last(x):
    """4-D x laid out channels-last (a copy unless it is). With one channel or 1x1 maps,
    channel-first data counts as channels-last-contiguous as it lies, yet torch's kernels read
    it as channel-first: it is restrided as channels-last over the same memory (each element
    keeps its position), so that the convolution after it runs and returns channels-last."""
    y = x.contiguous(memory_format=torch.channels_last)
    if y.stride(1) != 1:
        _, c, h, w = y.shape
        y = y.as_strided(y.shape, (c * h * w, 1, w * c, c), y.storage_offset())
    return y


def _laid_out_channels_last(x):
    return x.stride(1) == 1 and x.is_contiguous(memory_format=torch.channels_last)


def _keeps_layout(p):
    """keeps_layout of Convolution and Pooling: channel-first ones (torch's kernels return
    channels-last data channels-last)."""
    return p.layout not in _CHANNEL_LAST


def _recorded_channels_last(data, weight, out_shape):
    """Whether a channel-first convolution recorded for autograd in training mode on the CPU
    runs on a channels-last copy of its data: a 2-D one whose output a training plan would
    compute channels-last (channels_last_pays), unless its data is channels-last already."""
    if not (len(out_shape) == 4 and data.device.type == 'cpu' and torch.is_grad_enabled()
            and (data.requires_grad or weight.requires_grad)):
        return False
    from .. import autograd                   # (which imports the operators)
    return (autograd.is_training() and channels_last_pays(out_shape) and channels_last_enabled()
            and not _laid_out_channels_last(data))


def _convolution(p, data, weight, bias=None):
    """N-D convolution (1 to 3 spatial dims) with stride, dilation, zero padding and groups."""
    kernel, stride, dilate, pad, weight_shape, out_shape = _conv_shapes(
        p, _channel_first(data.shape, p.layout))
    _check_weight('Convolution', weight, weight_shape)
    channel_last = p.layout in _CHANNEL_LAST
    if not channel_last and _recorded_channels_last(data, weight, out_shape):
        # as a training plan runs it (plan.py): the same oneDNN kernels, so the same numbers
        # recorded imperatively as hybridized
        return F.conv2d(to_channels_last(data), weight, bias, stride, pad, dilate,
                        p.num_group).contiguous()
    if channel_last:
        data, weight = data.movedim(-1, 1), weight.movedim(-1, 1)
    out = _CONV[len(kernel)](data, weight, bias, stride, pad, dilate, p.num_group)
    return out.movedim(1, -1) if channel_last else out


def _convolution_backfill(p, data, out):
    """Channel-first data with what the known output tells, as MXNet 1.9.1 infers it: with
    every stride 1, the batch size and the spatial sizes (out + dilated kernel - 1 - 2 pad);
    with another stride, nothing."""
    kernel, stride, dilate, pad = _conv_geometry('Convolution', p, len(data))
    if any(s != 1 for s in stride):
        return tuple(data)
    filled = [data[0] or out[0], data[1]]
    for x, y, k, d, pd in zip(data[2:], out[2:], kernel, dilate, pad):
        filled.append(x or (y + d * (k - 1) - 2 * pd if y else 0))
    return tuple(filled)


def _convolution_shape(p, ins, outs):
    if ins[0] is None:
        return ins, outs
    if outs[0] is not None and not known(ins[0]) and len(outs[0]) == len(ins[0]):
        ins = [_channel_last_if(_convolution_backfill(
            p, _channel_first(ins[0], p.layout), _channel_first(outs[0], p.layout)),
            p.layout)] + list(ins[1:])
    weight, out = _conv_shapes(p, _channel_first(ins[0], p.layout))[4:]
    new = [ins[0], merge(ins[1], weight)]
    if not p.no_bias:
        new.append(merge(ins[2], (p.num_filter,)))
    return new, [merge(outs[0], _channel_last_if(out, p.layout))]


def _conv_inputs(p):
    return ('data', 'weight') if p.no_bias else ('data', 'weight', 'bias')


_CUDNN_TUNE = Enum(('None', 'fastest', 'limited_workspace', 'off'), 'None')

ConvGeometry = collections.namedtuple(
    'ConvGeometry', 'rank stride pad dilate groups has_bias')


def _conv_fusable_geometry(p):
    """A channel-first Convolution's geometry, in the lists torch's kernels take (fused
    convolution chains, fusion.py); None for channel-last layouts."""
    if p.layout not in (None, 'NCW', 'NCHW', 'NCDHW'):
        return None
    rank = len(p.kernel)
    return ConvGeometry(rank, list(p.stride or (1,) * rank), list(p.pad or (0,) * rank),
                        list(p.dilate or (1,) * rank), p.num_group, not p.no_bias)


_CONVOLUTION = OpDef('Convolution', _convolution,
                     params={'kernel': Shape(), 'stride': Shape(()), 'dilate': Shape(()),
                             'pad': Shape(()), 'num_filter': Int(lower=1), 'num_group': Int(1),
                             'workspace': Int(1024), 'no_bias': Bool(False),
                             'cudnn_tune': _CUDNN_TUNE, 'cudnn_off': Bool(False),
                             'layout': Enum(_CONV_LAYOUTS, None)},
                     inputs=_conv_inputs, infer_shape=_convolution_shape)
_CONVOLUTION.conv_geometry = _conv_fusable_geometry
_CONVOLUTION.fresh_output = True
_CONVOLUTION.keeps_layout = _keeps_layout
register(_CONVOLUTION)


# ---------------------------------------------------------------------------------------------
# Deconvolution
# ---------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=4096)
def _deconv_geometry(p, data):
    """(kernel, stride, dilate, pad, adj, output spatial sizes) for a channel-first data shape.

    A non-zero target_shape entry fixes that output dim: the full output (no pad) minus the
    target is split into pad = ceil(total / 2) on both sides and adj = total % 2.
    """
    kernel, stride, dilate, pad = _conv_geometry('Deconvolution', p, len(data))
    rank = len(kernel)
    adj = _per_dim('Deconvolution', p, 'adj', rank, 0)
    target = p.target_shape or (0,) * rank
    require(len(target) == rank, 'Deconvolution: target_shape=%s must have one entry per kernel '
            'dim (kernel=%s)', p.target_shape, p.kernel)
    pads, adjs, sizes = [], [], []
    for x, k, s, d, pd, a, t in zip(data[2:], kernel, stride, dilate, pad, adj, target):
        full = s * (x - 1) + d * (k - 1) + 1
        if t and x:
            require(full >= t, 'Deconvolution: target_shape=%s is too big for the input: at '
                    'most %d in that dim', p.target_shape, full)
            pd, a = (full - t + 1) // 2, (full - t) % 2
        require(a < s, 'Deconvolution: adj=%s must be smaller than stride=%s', adj, stride)
        size = full - 2 * pd + a
        require(not x or size > 0, 'Deconvolution: pad=%s leaves no output for an input of '
                'size %d', pad, x)
        pads.append(pd)
        adjs.append(a)
        sizes.append(size if x else 0)
    return kernel, stride, dilate, tuple(pads), tuple(adjs), tuple(sizes)


def _deconv_weight_shape(p, data, kernel):
    _check_groups('Deconvolution', data[1], p.num_group)
    return _weight_shape(data[1], p.num_filter // p.num_group, kernel, p.layout)


def _deconvolution(p, data, weight, bias=None):
    """Transposed convolution (the gradient of Convolution w.r.t. its data); adj adds cells at
    the end of each output dim, target_shape picks pad/adj to reach an exact output size."""
    shape = _channel_first(data.shape, p.layout)
    kernel, stride, dilate, pad, adj, _ = _deconv_geometry(p, shape)
    _check_weight('Deconvolution', weight, _deconv_weight_shape(p, shape, kernel))
    channel_last = p.layout in _CHANNEL_LAST
    if channel_last:
        data, weight = data.movedim(-1, 1), weight.movedim(-1, 1)
    out = _CONV_T[len(kernel)](data, weight, bias, stride, pad, adj, p.num_group, dilate)
    return out.movedim(1, -1) if channel_last else out


def _deconvolution_shape(p, ins, outs):
    if ins[0] is None:
        return ins, outs
    data = _channel_first(ins[0], p.layout)
    kernel, _, _, _, _, spatial = _deconv_geometry(p, data)
    weight = _deconv_weight_shape(p, data, kernel)
    new = [ins[0], merge(ins[1], weight)]
    if not p.no_bias:
        new.append(merge(ins[2], (p.num_filter,)))
    out = _channel_last_if((data[0], p.num_filter) + spatial, p.layout)
    return new, [merge(outs[0], out)]


DeconvGeometry = collections.namedtuple(
    'DeconvGeometry', 'stride pad adj dilate groups has_bias')


def _deconv_fusable_geometry(p):
    """A channel-first 2-D Deconvolution's geometry, in the lists torch's kernels take
    (fusion.py); None for other ranks and layouts and where target_shape picks pad and adj."""
    if p.layout not in (None, 'NCHW') or len(p.kernel) != 2 or any(p.target_shape or ()):
        return None
    return DeconvGeometry(list(p.stride or (1, 1)), list(p.pad or (0, 0)),
                          list(p.adj or (0, 0)), list(p.dilate or (1, 1)), p.num_group,
                          not p.no_bias)


_DECONVOLUTION = OpDef('Deconvolution', _deconvolution,
                       params={'kernel': Shape(), 'stride': Shape(()), 'dilate': Shape(()),
                               'pad': Shape(()), 'adj': Shape(()), 'target_shape': Shape(()),
                               'num_filter': Int(lower=1), 'num_group': Int(1),
                               'workspace': Int(512), 'no_bias': Bool(True),
                               'cudnn_tune': _CUDNN_TUNE, 'cudnn_off': Bool(False),
                               'layout': Enum(_CONV_LAYOUTS, None)},
                       inputs=_conv_inputs, infer_shape=_deconvolution_shape)
_DECONVOLUTION.deconv_geometry = _deconv_fusable_geometry
register(_DECONVOLUTION)


# ---------------------------------------------------------------------------------------------
# Pooling
# ---------------------------------------------------------------------------------------------
def _pool_out_size(x, k, s, pad, convention):
    if convention == 'valid':
        return (x + 2 * pad - k) // s + 1
    if convention == 'full':
        return -(-(x + 2 * pad - k) // s) + 1
    return -(-x // s)                                  # same


def _torch_pool_size(x, k, s, pad, ceil_mode):
    """Output size torch's pooling gives (it drops a last window starting in the right pad)."""
    span = x + 2 * pad - k
    size = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (size - 1) * s >= x + pad:
        size -= 1
    return size


# The windows of one Pooling call; torch_alike: torch's pooling (implicit padding, ceil_mode for
# the full/same conventions) has exactly these windows.
_Windows = collections.namedtuple('_Windows', 'kernel stride pad sizes torch_alike')


@functools.lru_cache(maxsize=4096)
def _pool_windows(p, data):
    """The checked _Windows of Pooling on a channel-first data shape (0 = unknown dim)."""
    ndim = len(data)
    require(3 <= ndim <= 5, 'Pooling: data must be 3-D, 4-D or 5-D (batch, channel and 1 to 3 '
            'spatial dims), got %d-D data', ndim)
    require(p.pool_type != 'lp' or p.p_value in (1, 2, 3), 'Pooling: pool_type=lp needs p_value '
            'in 1, 2, 3, got p_value=%s', p.p_value)
    rank = ndim - 2
    if p.global_pool:
        if p.layout is not None:
            require(_LAYOUT_RANK[p.layout] == rank, 'Pooling: layout=%s expects %d-D data, got '
                    '%d-D data', p.layout, _LAYOUT_RANK[p.layout] + 2, ndim)
        return _Windows(tuple(data[2:]), (1,) * rank, (0,) * rank, (1,) * rank, False)
    _check_rank('Pooling', p, ndim)
    kernel = tuple(p.kernel)
    stride = _per_dim('Pooling', p, 'stride', rank, 1, extra_ignored=True)
    pad = _per_dim('Pooling', p, 'pad', rank, 0, extra_ignored=True)
    require(all(s > 0 for s in stride), 'Pooling: stride=%s must be positive', stride)
    require(all(0 <= pd < k for pd, k in zip(pad, kernel)), 'Pooling: pad=%s must be smaller '
            'than kernel=%s', pad, kernel)
    require(p.pooling_convention != 'same' or not any(pad), 'Pooling: pooling_convention=same '
            'takes no pad, got pad=%s', pad)
    sizes = []
    for x, k, s, pd in zip(data[2:], kernel, stride, pad):
        require(not x or k <= x + 2 * pd, 'Pooling: kernel=%s exceeds the padded input %s',
                kernel, tuple(data[2:]))
        sizes.append(_pool_out_size(x, k, s, pd, p.pooling_convention) if x else 0)
    ceil_mode = p.pooling_convention != 'valid'
    torch_alike = all(pd <= k // 2 and _torch_pool_size(x, k, s, pd, ceil_mode) == size
                      for x, k, s, pd, size in zip(data[2:], kernel, stride, pad, sizes))
    return _Windows(kernel, stride, pad, tuple(sizes), torch_alike)


def _explicit_pad(x, w, value=0.0):
    """x padded so that plain (unpadded) windows give exactly w.sizes outputs; negative right
    padding crops cells no window reaches."""
    widths = []
    for n, k, s, pd, size in zip(x.shape[2:], w.kernel, w.stride, w.pad, w.sizes):
        widths.append((pd, (size - 1) * s + k - n - pd))
    return F.pad(x, [v for pair in reversed(widths) for v in pair], value=value)


def _window_sums(x, w):
    padded = _explicit_pad(x, w)
    if len(w.kernel) == 1:          # avg_pool1d has no divisor_override: pool 1 x k in 2-D
        return F.avg_pool2d(padded.unsqueeze(2), (1,) + w.kernel, (1,) + w.stride,
                            divisor_override=1).squeeze(2)
    return _AVG_POOL[len(w.kernel)](padded, w.kernel, w.stride, divisor_override=1)


def _window_counts(x, w, include_pad):
    """Avg divisor per output cell: window cells inside the padded input (include_pad) or inside
    the input; an empty window divides by 1 (its sum is 0)."""
    counts = None
    rank = len(w.kernel)
    for axis, (n, k, s, pd, size) in enumerate(zip(x.shape[2:], w.kernel, w.stride, w.pad,
                                                    w.sizes)):
        start = torch.arange(size, device=x.device) * s - pd
        end = torch.clamp(start + k, max=n + pd)
        if not include_pad:
            start, end = start.clamp(min=0), end.clamp(max=n)
        count = (end - start).clamp(min=0).reshape([size if a == axis else 1
                                                    for a in range(rank)])
        counts = count if counts is None else counts * count
    return counts.clamp(min=1).to(x.dtype)


def _channels_last_pays(x):
    """Whether 2-D max pooling of x runs faster through torch's channels-last CPU kernel
    (vectorised over channels; the channel-first one walks each plane one cell at a time):
    float CPU batches of 4 or more channels and 8192 or more values (measured 2-5x on larger
    ones, the layout copies included; on smaller ones the copies cost more than they save); not
    while traced for export or compiled, where the plain operator is what is wanted (an
    inference graph's trace keeps it)."""
    return (x.dim() == 4 and x.shape[1] >= 4 and x.numel() >= 8192 and x.device.type == 'cpu'
            and x.dtype in (torch.float32, torch.float64)
            and not ((torch.jit.is_tracing() and not inference_graph.capturing())
                     or torch.compiler.is_compiling()))


def _max_pool2d_channels_last(x, kernel, stride, pad=0, ceil_mode=False):
    """torch's 2-D max pooling, computed on a channels-last copy of x. Its argmax indices (the
    first maximum of each window in row-major order, as MXNet's gradient takes) pick the
    outputs from x itself, so the gradient (gather's: scattered onto those cells, summed where
    windows overlap) and its own derivatives are max pooling's."""
    if not (x.requires_grad and torch.is_grad_enabled()):
        return F.max_pool2d(x.contiguous(memory_format=torch.channels_last), kernel, stride, pad,
                            ceil_mode=ceil_mode).contiguous()
    with torch.no_grad():
        out, index = F.max_pool2d(x.contiguous(memory_format=torch.channels_last), kernel,
                                  stride, pad, ceil_mode=ceil_mode, return_indices=True)
    return x.flatten(2).gather(2, index.contiguous().flatten(2)).view(out.shape)


def _max_pool(p, x, w):
    """Max over windows; padding and cells past it act as the dtype's lowest value."""
    pool = _MAX_POOL[len(w.kernel)]
    # (channels-last data, a training plan's, is pooled by that kernel as it lies)
    if len(w.kernel) == 2 and _channels_last_pays(x) and not _laid_out_channels_last(x):
        pool = _max_pool2d_channels_last
    if w.torch_alike:
        return pool(x, w.kernel, w.stride, w.pad, ceil_mode=p.pooling_convention != 'valid')
    return pool(_explicit_pad(x, w, torch.finfo(x.dtype).min), w.kernel, w.stride)


def _avg_pool(p, x, w):
    include_pad = p.count_include_pad is not False
    # torch's 3-D avg pooling refuses an input smaller than the kernel, even a padded one
    small = len(w.kernel) == 3 and any(n < k for n, k in zip(x.shape[2:], w.kernel))
    if w.torch_alike and not small:
        return _AVG_POOL[len(w.kernel)](x, w.kernel, w.stride, w.pad,
                                        ceil_mode=p.pooling_convention != 'valid',
                                        count_include_pad=include_pad)
    return _window_sums(x, w) / _window_counts(x, w, include_pad)


def _sum_pool(p, x, w):
    return _window_sums(x, w)


def _lp_root(sums, p_value):
    if p_value == 1:
        return sums
    if p_value == 2:
        return sums.sqrt()
    return sums.sign() * sums.abs().pow(1.0 / 3)


def _lp_pool(p, x, w):
    """(sum of x^p)^(1/p) over windows, p in 1, 2, 3 (no absolute value, a real cube root)."""
    return _lp_root(_window_sums(x.pow(p.p_value), w), p.p_value)


_WINDOW_POOLS = {'max': _max_pool, 'avg': _avg_pool, 'sum': _sum_pool, 'lp': _lp_pool}


def _global_pool(p, x):
    planes = tuple(range(2, x.dim()))     # reduced where they lie: a channels-last x is not
    if p.pool_type == 'avg':              # copied to flatten it
        return x.mean(dim=planes, keepdim=True)
    if p.pool_type == 'sum':
        return x.sum(dim=planes, keepdim=True)
    if p.pool_type == 'max' and not (torch.is_grad_enabled() and x.requires_grad):
        return x.amax(dim=planes, keepdim=True)
    flat = x.flatten(2)
    if p.pool_type == 'max':
        out = flat.max(dim=2).values          # the gradient goes to one maximum, as MXNet's
    else:
        out = _lp_root(flat.pow(p.p_value).sum(dim=2), p.p_value)
    return out.reshape(tuple(x.shape[:2]) + (1,) * (x.dim() - 2))


def _pooling_outputs(p):
    """MXNet's oneDNN build gives max pooling (1 to 3-D kernel, channel-first) a hidden int32
    workspace output."""
    if p.pool_type == 'max' and 1 <= len(p.kernel) <= 3 and p.layout not in _CHANNEL_LAST:
        return ('output', 'workspace')
    return ('output',)


def _pooling(p, data):
    """Max/avg/sum/lp pooling over 1 to 3 spatial dims with MXNet's window conventions: valid
    (floor), full (ceil: windows may run past the padded input and are clipped) or same; the avg
    divisor counts the clipped window's cells in the padded input (count_include_pad, default) or
    in the input. global_pool pools each whole plane."""
    channel_last = p.layout in _CHANNEL_LAST
    x = data.movedim(-1, 1) if channel_last else data
    windows = _pool_windows(p, tuple(x.shape))
    if p.global_pool:
        out = _global_pool(p, x)
    else:
        out = _WINDOW_POOLS[p.pool_type](p, x, windows)
    out = out.movedim(1, -1) if channel_last else out
    if len(_pooling_outputs(p)) == 2:
        return out, _hidden_zeros(out, torch.int32)
    return out


def _pooling_shape(p, ins, outs):
    if ins[0] is None:
        return ins, outs
    data = _channel_first(ins[0], p.layout)
    sizes = _pool_windows(p, data).sizes
    out = merge(outs[0], _channel_last_if(data[:2] + sizes, p.layout))
    return ins, [out] * len(outs)


register(OpDef('Pooling', _pooling,
               params={'kernel': Shape(()), 'pool_type': Enum(('avg', 'lp', 'max', 'sum'), 'max'),
                       'global_pool': Bool(False), 'cudnn_off': Bool(False),
                       'pooling_convention': Enum(('full', 'same', 'valid'), 'valid'),
                       'stride': Shape(()), 'pad': Shape(()), 'p_value': Int(None),
                       'count_include_pad': Bool(None),
                       'layout': Enum(_CONV_LAYOUTS + ('NWC',), None)},
               outputs=_pooling_outputs, visible_outputs=1, infer_shape=_pooling_shape,
               infer_type=_int32_index_type)).keeps_layout = _keeps_layout


# ---------------------------------------------------------------------------------------------
# UpSampling
# ---------------------------------------------------------------------------------------------
def _bilinear_kernel(scale):
    return 2 * scale - scale % 2


def _bilinear_pad(scale):
    return scale // 2                                  # ceil((scale - 1) / 2)


def _upsampling_inputs(p):
    if p.sample_type == 'bilinear':
        return ('data', 'weight')
    return tuple('arg%d' % i for i in range(p.num_args))


def _nearest_out_shape(p, shapes):
    """Output shape of nearest UpSampling for known input shapes."""
    _check_4d('UpSampling', shapes[0])
    n, c, h, w = shapes[0]
    out_h, out_w = h * p.scale, w * p.scale
    channels = 0
    for shape in shapes:
        _check_4d('UpSampling', shape, 'every input')
        require(out_h % shape[2] == 0 and out_h // shape[2] * shape[3] == out_w, 'UpSampling: '
                'every input must be an integer scale-down of the output size (%d, %d) '
                '(scale=%d), got %s', out_h, out_w, p.scale, tuple(shape))
        if p.multi_input_mode == 'sum':
            require(shape[1] == c, 'UpSampling: multi_input_mode=sum needs equal channels, '
                    'got %d and %d', c, shape[1])
        channels += shape[1]
    return (n, c if p.multi_input_mode == 'sum' else channels, out_h, out_w)


def _repeat_nearest(x, out_h, out_w):
    n, c, h, w = x.shape
    f = out_h // h
    if f == 1:
        return x
    return x[:, :, :, None, :, None].expand(n, c, h, f, w, f).reshape(n, c, out_h, out_w)


def _upsampling(p, *inputs):
    """nearest: every input repeated up to the first input's size x scale, then concatenated on
    channels (or summed); bilinear: a depthwise transposed convolution with the weight input
    (kernel 2s - s%2, stride s, pad ceil((s-1)/2))."""
    if p.sample_type == 'bilinear':
        data, weight = inputs
        _check_4d('UpSampling', data.shape)
        k = _bilinear_kernel(p.scale)
        _check_weight('UpSampling', weight, (data.shape[1], 1, k, k))
        return F.conv_transpose2d(data, weight, None, p.scale, _bilinear_pad(p.scale),
                                  groups=data.shape[1])
    _, _, out_h, out_w = _nearest_out_shape(p, [tuple(x.shape) for x in inputs])
    scaled = [_repeat_nearest(x, out_h, out_w) for x in inputs]
    if len(scaled) == 1:
        return scaled[0]
    if p.multi_input_mode == 'concat':
        return torch.cat(scaled, dim=1)
    out = scaled[0]
    for x in scaled[1:]:
        out = out + x
    return out


def _upsampling_shape(p, ins, outs):
    first = ins[0]
    if first is None:
        return ins, outs
    _check_4d('UpSampling', first)
    n, c, h, w = first
    if p.sample_type == 'bilinear':
        k = _bilinear_kernel(p.scale)
        out = (n, c, h * p.scale, w * p.scale)
        return [first, merge(ins[1], (c, 1, k, k))], [merge(outs[0], out)]
    if not all(known(s) for s in ins):
        return ins, outs
    return ins, [merge(outs[0], _nearest_out_shape(p, ins))]


register(_NamedVariadicOp(
    'UpSampling', _upsampling,
    params={'scale': Int(lower=1), 'num_filter': Int(0),
            'sample_type': Enum(('bilinear', 'nearest')),
            'multi_input_mode': Enum(('concat', 'sum'), 'concat'), 'num_args': Int(),
            'workspace': Int(512)},
    inputs=_upsampling_inputs, variadic='num_args', infer_shape=_upsampling_shape,
    # MXNet tags the second input for bilinear init whatever the mode (nearest: arg1)
    init_hints={'weight': _BILINEAR_INIT, 'arg1': _BILINEAR_INIT}))


# ---------------------------------------------------------------------------------------------
# LRN
# ---------------------------------------------------------------------------------------------
def _check_lrn(p, shape):
    _check_4d('LRN', shape)
    require(p.nsize > 0, 'LRN: nsize must be positive, got nsize=%d', p.nsize)


def _lrn(p, data):
    """x * norm^(-beta), norm = knorm + alpha / nsize * (sum of x^2 over the channels within
    (nsize-1)//2 of each channel). Outputs (out, norm); norm is hidden."""
    _check_lrn(p, data.shape)
    half = (p.nsize - 1) // 2
    n, c = data.shape[:2]
    squares = F.pad((data * data).reshape(n, 1, c, -1), (0, 0, half, half))
    sums = F.avg_pool2d(squares, (2 * half + 1, 1), 1, divisor_override=1).reshape(data.shape)
    norm = p.knorm + (p.alpha / p.nsize) * sums
    return data * norm.pow(-p.beta), norm


def _lrn_shape(p, ins, outs):
    data = merge(ins[0], outs[0])
    if data is not None:
        _check_lrn(p, data)
    return [data], [data, data]


register(OpDef('LRN', _lrn,
               params={'alpha': Float(1e-4), 'beta': Float(0.75), 'knorm': Float(2.0),
                       'nsize': Int()},
               outputs=('output', 'tmp_norm'), visible_outputs=1, infer_shape=_lrn_shape))


# ---------------------------------------------------------------------------------------------
# ROIPooling
# ---------------------------------------------------------------------------------------------
def _round_half_away(x):
    return torch.sign(x) * torch.floor(x.abs() + 0.5)


def _roi_bins(starts, ends, pooled, size):
    """(bin starts, bin ends) of shape (R, pooled): [floor(i * len / pooled),
    ceil((i+1) * len / pooled)) shifted by the roi start and clipped to [0, size]."""
    length = (ends - starts + 1).clamp(min=1)
    bin_size = (length / pooled).unsqueeze(1)
    i = torch.arange(pooled, device=starts.device, dtype=starts.dtype)
    lo = torch.floor(i * bin_size) + starts.unsqueeze(1)
    hi = torch.ceil((i + 1) * bin_size) + starts.unsqueeze(1)
    return lo.clamp(0, size), hi.clamp(0, size)


def _roi_pooling(p, data, rois):
    """Max pooling of each roi [batch_index, x1, y1, x2, y2] (scaled by spatial_scale, rounded)
    into pooled_size bins; empty bins give 0. Outputs (out, maxidx): the hidden maxidx holds the
    flat index y * width + x of each maximum (-1 for empty bins)."""
    _check_roi(p, tuple(data.shape), tuple(rois.shape))
    pooled_h, pooled_w = p.pooled_size
    height, width = data.shape[2:]
    corners = _round_half_away(rois[:, 1:] * p.spatial_scale)
    h_lo, h_hi = _roi_bins(corners[:, 1], corners[:, 3], pooled_h, height)
    w_lo, w_hi = _roi_bins(corners[:, 0], corners[:, 2], pooled_w, width)
    rows = torch.arange(height, device=data.device, dtype=rois.dtype)
    cols = torch.arange(width, device=data.device, dtype=rois.dtype)
    in_col = (cols >= w_lo.unsqueeze(2)) & (cols < w_hi.unsqueeze(2))     # (R, PW, W)
    features = data[rois[:, 0].long()]                                    # (R, C, H, W)
    inf = float('inf')
    maxima, indices = [], []
    for ph in range(pooled_h):                         # a loop over bins, not elements
        in_row = (rows >= h_lo[:, ph:ph + 1]) & (rows < h_hi[:, ph:ph + 1])   # (R, H)
        row_max, row_arg = torch.where(in_row[:, None, :, None], features, -inf).max(dim=2)
        cells = torch.where(in_col[:, None], row_max.unsqueeze(2), -inf)      # (R, C, PW, W)
        best, col = cells.max(dim=3)                                          # (R, C, PW)
        maxima.append(best)
        indices.append(row_arg.gather(2, col) * width + col)
    empty = ((h_hi <= h_lo).unsqueeze(2) | (w_hi <= w_lo).unsqueeze(1)).unsqueeze(1)
    out = torch.where(empty, 0.0, torch.stack(maxima, dim=2))             # (R, C, PH, PW)
    maxidx = torch.where(empty, -1, torch.stack(indices, dim=2)).to(torch.int32)
    return out, maxidx


def _check_roi(p, data, rois):
    require(len(p.pooled_size) == 2, 'ROIPooling: pooled_size must have 2 entries (height, '
            'width), got pooled_size=%s', p.pooled_size)
    _check_4d('ROIPooling', data)
    require(len(rois) == 2 and rois[1] in (0, 5), 'ROIPooling: rois must be 2-D (num_rois, 5), '
            'got shape %s', rois)


def _roi_pooling_shape(p, ins, outs):
    data, rois = ins
    if data is None or rois is None:
        return ins, outs
    _check_roi(p, data, rois)
    out = merge(outs[0], (rois[0], data[1]) + tuple(p.pooled_size))
    return [data, merge(rois, (rois[0], 5))], [out, out]


register(OpDef('ROIPooling', _roi_pooling,
               params={'pooled_size': Shape(), 'spatial_scale': Float()},
               inputs=('data', 'rois'), outputs=('output', 'maxidx'), visible_outputs=1,
               infer_shape=_roi_pooling_shape, infer_type=_int32_index_type))


# ---------------------------------------------------------------------------------------------
# Crop
# ---------------------------------------------------------------------------------------------
def _crop_window(p, data, like):
    """(y, x, height, width) of the crop of a 4-D data shape."""
    require(p.num_args in (1, 2), 'Crop: num_args must be 1 or 2, got num_args=%d', p.num_args)
    _check_4d('Crop', data)
    if like is not None:
        _check_4d('Crop', like, 'crop_like')
        height, width = like[2:]
    else:
        require(len(p.h_w) == 2 and min(p.h_w) >= 1, 'Crop: h_w must be 2 positive sizes, '
                'got h_w=%s', p.h_w)
        height, width = p.h_w
    if p.center_crop:
        y, x = (data[2] - height) // 2, (data[3] - width) // 2
    else:
        require(len(p.offset) == 2, 'Crop: offset must have 2 entries, got offset=%s', p.offset)
        y, x = p.offset
    require(y >= 0 and x >= 0 and y + height <= data[2] and x + width <= data[3],
            'Crop: the crop of %dx%d at offset (%d, %d) does not fit the data %s',
            height, width, y, x, tuple(data))
    return y, x, height, width


def _crop(p, data, crop_like=None):
    """The (h, w) window of a 4-D input at `offset` (or centred); h, w from h_w or crop_like."""
    like = tuple(crop_like.shape) if crop_like is not None else None
    y, x, height, width = _crop_window(p, tuple(data.shape), like)
    return data[:, :, y:y + height, x:x + width]


def _crop_shape(p, ins, outs):
    data = ins[0]
    like = ins[1] if p.num_args == 2 else None
    if data is None or not all(data[2:]) or (p.num_args == 2 and like is None):
        return ins, outs
    _, _, height, width = _crop_window(p, data, like)
    return ins, [merge(outs[0], tuple(data[:2]) + (height, width))]


register(_NamedVariadicOp(
    'Crop', _crop,
    params={'num_args': Int(), 'offset': Shape((0, 0)), 'h_w': Shape((0, 0)),
            'center_crop': Bool(False)},
    inputs=lambda p: ('data', 'crop_like') if p.num_args == 2 else ('data',),
    variadic='num_args', infer_shape=_crop_shape))


# ---------------------------------------------------------------------------------------------
# Pad
# ---------------------------------------------------------------------------------------------
_PAD_MODES = {'constant': 'constant', 'edge': 'replicate', 'reflect': 'reflect'}


def _pad_widths(p, shape):
    """[(before, after)] per spatial axis of 4-D/5-D data, checked."""
    ndim = len(shape)
    require(ndim in (4, 5), 'Pad: data must be 4-D or 5-D, got %d-D data', ndim)
    require(len(p.pad_width) == 2 * ndim, 'Pad: pad_width must have 2 entries per axis (%d), '
            'got pad_width=%s', 2 * ndim, p.pad_width)
    require(not any(p.pad_width[:4]), 'Pad: only spatial axes are padded; the first 4 entries '
            'of pad_width must be 0, got pad_width=%s', p.pad_width)
    widths = list(zip(p.pad_width[4::2], p.pad_width[5::2]))
    if p.mode == 'reflect':
        require(all(max(w) < n for w, n in zip(widths, shape[2:]) if n), 'Pad: mode=reflect '
                'needs pads smaller than the axis, got pad_width=%s for %s', p.pad_width, shape)
    return widths


def _pad(p, data):
    """Pad the spatial axes: constant value, edge (repeat the border) or reflect (mirror
    without repeating the border)."""
    widths = _pad_widths(p, tuple(data.shape))
    flat = [w for pair in reversed(widths) for w in pair]
    if p.mode == 'constant':
        return F.pad(data, flat, value=p.constant_value)
    return F.pad(data, flat, mode=_PAD_MODES[p.mode])


def _pad_shape(p, ins, outs):
    data = ins[0]
    if data is None:
        return ins, outs
    widths = _pad_widths(p, data)
    out = tuple(data[:2]) + tuple(n + a + b if n else 0 for n, (a, b) in zip(data[2:], widths))
    return ins, [merge(outs[0], out)]


register(OpDef('Pad', _pad,
               params={'mode': Enum(('constant', 'edge', 'reflect')), 'pad_width': Shape(),
                       'constant_value': Float(0.0)},
               infer_shape=_pad_shape, aliases=('pad',)))


# ---------------------------------------------------------------------------------------------
# depth_to_space / space_to_depth
# ---------------------------------------------------------------------------------------------
def _check_block(op, p, shape, to_space):
    require(p.block_size > 0, '%s: block_size must be positive, got %d', op, p.block_size)
    _check_4d(op, shape)
    b = p.block_size
    if to_space:
        require(not shape[1] or shape[1] % (b * b) == 0, '%s: the %d channels must be a '
                'multiple of block_size^2 = %d', op, shape[1], b * b)
    else:
        require(all(not n or n % b == 0 for n in shape[2:]), '%s: height and width %s must be '
                'multiples of block_size=%d', op, tuple(shape[2:]), b)


def _depth_to_space(p, data):
    """(N, C, H, W) -> (N, C/b^2, H*b, W*b); channel blocks are ordered (row, column, channel)."""
    _check_block('depth_to_space', p, data.shape, True)
    n, c, h, w = data.shape
    b = p.block_size
    blocks = data.reshape(n, b, b, c // (b * b), h, w).permute(0, 3, 4, 1, 5, 2)
    return blocks.reshape(n, c // (b * b), h * b, w * b)


def _space_to_depth(p, data):
    """(N, C, H, W) -> (N, C*b^2, H/b, W/b), the inverse of depth_to_space."""
    _check_block('space_to_depth', p, data.shape, False)
    n, c, h, w = data.shape
    b = p.block_size
    blocks = data.reshape(n, c, h // b, b, w // b, b).permute(0, 3, 5, 1, 2, 4)
    return blocks.reshape(n, c * b * b, h // b, w // b)


def _block_shape(op, to_space):
    def rule(p, ins, outs):
        data = ins[0]
        if data is None:
            return ins, outs
        _check_block(op, p, data, to_space)
        n, c, h, w = data
        b = p.block_size
        if to_space:
            out = (n, c // (b * b), h * b, w * b)
        else:
            out = (n, c * b * b, h // b, w // b)
        return ins, [merge(outs[0], out)]
    return rule


register(OpDef('depth_to_space', _depth_to_space, params={'block_size': Int()},
               infer_shape=_block_shape('depth_to_space', True)))
register(OpDef('space_to_depth', _space_to_depth, params={'block_size': Int()},
               infer_shape=_block_shape('space_to_depth', False)))


# ---------------------------------------------------------------------------------------------
# GridGenerator, BilinearSampler, SpatialTransformer
# ---------------------------------------------------------------------------------------------
def _target_points(height, width, like):
    """(3, H*W) homogeneous target points (x, y, 1), x fastest, corners at -1 and 1."""
    ys, xs = torch.meshgrid(torch.linspace(-1, 1, height, dtype=like.dtype, device=like.device),
                            torch.linspace(-1, 1, width, dtype=like.dtype, device=like.device),
                            indexing='ij')
    return torch.stack([xs.reshape(-1), ys.reshape(-1), torch.ones_like(xs).reshape(-1)])


def _affine_grid(theta, height, width):
    """(target points (3, H*W), source points (N, 2, H*W)): each (N, 6) row of theta is a 2x3
    affine map of the target grid's normalised coordinates."""
    target = _target_points(height, width, theta)
    return target, theta.reshape(-1, 2, 3) @ target


def _pixel_grid(height, width, like):
    """(2, H, W) pixel coordinates: x (column) then y (row)."""
    ys, xs = torch.meshgrid(torch.arange(height, dtype=like.dtype, device=like.device),
                            torch.arange(width, dtype=like.dtype, device=like.device),
                            indexing='ij')
    return torch.stack([xs, ys])


def _check_grid_input(p, shape):
    if p.transform_type == 'affine':
        require(len(shape) == 2 and shape[1] in (0, 6), 'GridGenerator: transform_type=affine '
                'needs data of shape (batch, 6), got %s', tuple(shape))
        require(len(p.target_shape) == 2 and min(p.target_shape) > 0, 'GridGenerator: '
                'transform_type=affine needs target_shape=(height, width), got %s',
                p.target_shape)
    else:
        require(len(shape) == 4 and shape[1] in (0, 2), 'GridGenerator: transform_type=warp '
                'needs data of shape (batch, 2, height, width), got %s', tuple(shape))


def _grid_generator(p, data):
    """Sampling grid (N, 2, H, W) of (x, y) in [-1, 1] for BilinearSampler: affine (data holds
    2x3 matrices, H, W = target_shape) or warp (data is a per-pixel flow in pixels, the border
    pixels at -1 and 1). Outputs (grid, hidden target points: (3, H*W) or pixels (2, H, W))."""
    _check_grid_input(p, data.shape)
    if p.transform_type == 'affine':
        height, width = p.target_shape
        target, source = _affine_grid(data, height, width)
        return source.reshape(-1, 2, height, width), target
    height, width = data.shape[2:]
    pixels = _pixel_grid(height, width, data)
    scale = torch.tensor([(width - 1) / 2, (height - 1) / 2], dtype=data.dtype,
                         device=data.device).reshape(2, 1, 1)
    return (data + pixels) / scale - 1, pixels


def _grid_generator_shape(p, ins, outs):
    data = ins[0]
    if data is None:
        return ins, outs
    _check_grid_input(p, data)
    if p.transform_type == 'affine':
        height, width = p.target_shape
        grid = merge(outs[0], (data[0], 2, height, width))
        return [merge(data, (0, 6))], [grid, (3, height * width)]
    grid = merge(outs[0], data)
    return [merge(data, (0, 2, 0, 0))], [grid, (2,) + tuple(grid[2:])]


register(OpDef('GridGenerator', _grid_generator,
               params={'transform_type': Enum(('affine', 'warp')), 'target_shape': Shape((0, 0))},
               outputs=('output', 'grid_dst'), visible_outputs=1,
               infer_shape=_grid_generator_shape))


def _sample_bilinear(data, points):
    """data sampled at points (N, H, W, 2) of (x, y) in [-1, 1] (-1 and 1 are the centres of
    the border pixels); points outside read zeros."""
    return F.grid_sample(data, points, mode='bilinear', padding_mode='zeros', align_corners=True)


def _bilinear_sampler(p, data, grid):
    """Bilinear sampling of data (N, C, H, W) at the grid's (x, y) points. Outputs (out, hidden
    grid as (N, H, W, 2))."""
    _check_4d('BilinearSampler', data.shape)
    _check_4d('BilinearSampler', grid.shape, 'grid')
    points = grid.permute(0, 2, 3, 1)
    return _sample_bilinear(data, points), points


def _bilinear_sampler_shape(p, ins, outs):
    data, grid = ins
    if data is None or grid is None:
        return ins, outs
    _check_4d('BilinearSampler', data)
    _check_4d('BilinearSampler', grid, 'grid')
    grid = merge(grid, (data[0], 2, 0, 0))
    out = merge(outs[0], tuple(data[:2]) + grid[2:])
    return [data, grid], [out, (grid[0],) + grid[2:] + (2,)]


register(OpDef('BilinearSampler', _bilinear_sampler, params={'cudnn_off': Bool(None)},
               inputs=('data', 'grid'), outputs=('output', 'tmp'), visible_outputs=1,
               infer_shape=_bilinear_sampler_shape))


def _check_transformer(p, data, loc):
    _check_4d('SpatialTransformer', data)
    require(len(p.target_shape) == 2 and min(p.target_shape) > 0, 'SpatialTransformer: '
            'target_shape must be (height, width), got %s', p.target_shape)
    require(loc is None or (len(loc) == 2 and loc[1] in (0, 6)), 'SpatialTransformer: loc must '
            'have shape (batch, 6), got %s', loc)


def _spatial_transformer(p, data, loc):
    """Affine warp of data: bilinear samples at the affine grid of loc's 2x3 matrices over a
    target_shape output. Outputs (out, hidden target points (3, H*W), hidden source points
    (N, 2, H*W))."""
    _check_transformer(p, tuple(data.shape), tuple(loc.shape))
    height, width = p.target_shape
    target, source = _affine_grid(loc, height, width)
    points = source.transpose(1, 2).reshape(-1, height, width, 2)
    return _sample_bilinear(data, points), target, source


def _spatial_transformer_shape(p, ins, outs):
    data, loc = ins
    if data is None:
        return ins, outs
    _check_transformer(p, data, loc)
    height, width = p.target_shape
    out = merge(outs[0], tuple(data[:2]) + (height, width))
    return ([data, merge(loc, (data[0], 6))],
            [out, (3, height * width), (data[0], 2, height * width)])


register(OpDef('SpatialTransformer', _spatial_transformer,
               params={'target_shape': Shape((0, 0)), 'transform_type': Enum(('affine',)),
                       'sampler_type': Enum(('bilinear',)), 'cudnn_off': Bool(None)},
               inputs=('data', 'loc'), outputs=('output', 'grid_dst', 'grid_src'),
               visible_outputs=1, infer_shape=_spatial_transformer_shape))


# ---------------------------------------------------------------------------------------------
# Correlation
# ---------------------------------------------------------------------------------------------
# The output grid of one Correlation call: out (N, D*D, out_h, out_w) with D = 2 * radius + 1
# displacements per axis, `radius` steps of stride2.
_CorrelationGrid = collections.namedtuple('_CorrelationGrid', 'out_h out_w radius')


def _correlation_grid(p, shape):
    _check_4d('Correlation', shape, 'data1 and data2')
    require(p.kernel_size > 0 and p.stride1 > 0 and p.stride2 > 0, 'Correlation: kernel_size, '
            'stride1 and stride2 must be positive, got %d, %d, %d', p.kernel_size, p.stride1,
            p.stride2)
    border = p.max_displacement + (p.kernel_size - 1) // 2
    out_h, out_w = (-(-(n + 2 * p.pad_size - 2 * border) // p.stride1) for n in shape[2:])
    require(out_h >= 1 and out_w >= 1, 'Correlation: max_displacement=%d and kernel_size=%d '
            'leave no output for input %s padded by pad_size=%d', p.max_displacement,
            p.kernel_size, tuple(shape), p.pad_size)
    return _CorrelationGrid(out_h, out_w, p.max_displacement // p.stride2)


def _correlation(p, data1, data2):
    """For every displacement (dy, dx) within max_displacement (steps of stride2, row-major),
    the mean over a kernel_size window and the channels of data1 * data2 shifted by it (or
    |data1 - data2| when is_multiply is false), at stride1 over both zero-padded inputs.
    Outputs (out, hidden padded data1 and data2 as (N, H, W, C))."""
    grid = _correlation_grid(p, tuple(data1.shape))
    k, s1, md = p.kernel_size, p.stride1, p.max_displacement
    first = F.pad(data1, [p.pad_size] * 4)
    second = F.pad(data2, [p.pad_size] * 4)
    span_h, span_w = (grid.out_h - 1) * s1 + k, (grid.out_w - 1) * s1 + k
    window = first[:, :, md:md + span_h, md:md + span_w]
    maps = []
    for dy in range(-grid.radius, grid.radius + 1):      # a loop over displacements
        for dx in range(-grid.radius, grid.radius + 1):
            y, x = md + dy * p.stride2, md + dx * p.stride2
            shifted = second[:, :, y:y + span_h, x:x + span_w]
            if p.is_multiply:
                maps.append((window * shifted).sum(dim=1))
            else:
                diff = window - shifted      # |diff| whose gradient at a tie is +1 (MXNet's)
                maps.append(torch.where(diff >= 0, diff, -diff).sum(dim=1))
    cells = torch.stack(maps, dim=1)
    if k > 1 or s1 > 1:
        cells = F.avg_pool2d(cells, k, s1, divisor_override=1)
    out = cells / (k * k * data1.shape[1])
    return out, first.permute(0, 2, 3, 1), second.permute(0, 2, 3, 1)


def _correlation_shape(p, ins, outs):
    data = merge(ins[0], ins[1])
    if data is None or not known(data):
        return [data, data], outs
    grid = _correlation_grid(p, data)
    width = 2 * grid.radius + 1
    out = merge(outs[0], (data[0], width * width, grid.out_h, grid.out_w))
    padded = (data[0],) + tuple(n + 2 * p.pad_size for n in data[2:]) + (data[1],)
    return [data, data], [out, padded, padded]


register(OpDef('Correlation', _correlation,
               params={'kernel_size': Int(1), 'max_displacement': Int(1), 'stride1': Int(1),
                       'stride2': Int(1), 'pad_size': Int(0), 'is_multiply': Bool(True)},
               inputs=('data1', 'data2'), outputs=('output', 'tmp1', 'tmp2'),
               visible_outputs=1, infer_shape=_correlation_shape))

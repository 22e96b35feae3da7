"""Region-of-interest pooling by bilinear sampling (mx.contrib): ROIAlign (with position-
sensitive and half-pixel `aligned` variants) and RROIAlign (rotated regions).

A region's bin of a pooled_size grid averages grid_h x grid_w bilinear samples, grid =
sample_ratio, or ceil(region size / pooled size) when sample_ratio <= 0. A sample more than one
pixel outside the map is 0; otherwise it is clamped to the map. Regions whose batch index is
negative give 0. Gradients reach the data only (MXNet gives the regions none).

ROIAlign's samples form a product grid, so a bin's average is Ay @ data @ Ax^T with one
(pooled_h x H) and one (pooled_w x W) weight matrix per region, nonzero only over the window of
the map the region's samples touch: two batched matmuls per chunk of regions over those
windows, gathered from the map (work in proportion to the regions' areas, not the map's).
"""
import math

import torch

from .params import Bool, Float, Int, Shape
from .registry import OpDef, register
from .shapes import merge, require

_CHUNK = 128          # regions per matmul: bounds the temporary (chunk, C, pooled_h, W)
_CHUNK_ELEMENTS = 1 << 23     # elements of the map windows ROIAlign gathers at once


def _wide(x):
    return x if x.dtype == torch.float64 else x.float()


def _pooled(op, p):
    size = tuple(p.pooled_size)
    require(len(size) == 2 and all(s > 0 for s in size), '%s: pooled_size=%s must be two '
            'positive sizes (height, width)', op, size)
    return size


def _grid(op, p, sample_ratio, size, pooled):
    """Samples per bin along one axis, per region (a long tensor)."""
    if sample_ratio > 0:
        return torch.full_like(size, sample_ratio, dtype=torch.long)
    return torch.ceil(size / pooled).long()


def _axis_weights(start, bin_size, grid, pooled, length):
    """(R, pooled, length) weights: entry [r, i, j] is the share of map row j in the average of
    the samples of bin i of region r along one axis (divided by the grid size)."""
    regions = start.shape[0]
    most = max(int(grid.max()), 1) if regions else 1
    bins = torch.arange(pooled, dtype=start.dtype, device=start.device)
    steps = torch.arange(most, dtype=start.dtype, device=start.device)
    g = grid.to(start.dtype).clamp(min=1)[:, None, None]
    pos = start[:, None, None] + bins[None, :, None] * bin_size[:, None, None] + \
        (steps[None, None, :] + 0.5) * bin_size[:, None, None] / g
    used = (steps[None, None, :] < grid[:, None, None]) & (pos >= -1.0) & (pos <= length)
    pos = pos.clamp(min=0)
    low = pos.floor().long()
    top = low >= length - 1
    low = torch.where(top, torch.full_like(low, length - 1), low)
    high = torch.where(top, low, low + 1)
    pos = torch.where(top, low.to(pos.dtype), pos)
    frac = pos - low.to(pos.dtype)
    share = used.to(pos.dtype) / g
    weights = torch.zeros(regions, pooled, length, dtype=start.dtype, device=start.device)
    weights.scatter_add_(2, low.reshape(regions, pooled, -1), ((1 - frac) * share).reshape(
        regions, pooled, -1))
    weights.scatter_add_(2, high.reshape(regions, pooled, -1), (frac * share).reshape(
        regions, pooled, -1))
    return weights


def _windows(weights):
    """Per region, the first map row of its weights' nonzero span along one axis and the span's
    length (0 where every sample falls outside the map)."""
    used = weights.ne(0).any(dim=1)                    # (R, length)
    length = used.shape[1]
    first = used.to(torch.uint8).argmax(dim=1)
    last = length - 1 - used.flip(1).to(torch.uint8).argmax(dim=1)
    return first, torch.where(used.any(dim=1), last - first + 1, torch.zeros_like(first))


def _window_weights(weights, first, size):
    """(R, pooled, size) weights of the map rows first .. first + size - 1 (0 past the map)."""
    rows = first[:, None] + torch.arange(size, device=first.device)
    inside = rows < weights.shape[2]
    rows = rows.clamp(max=weights.shape[2] - 1)
    picked = weights.gather(2, rows[:, None, :].expand(-1, weights.shape[1], -1))
    return picked * inside[:, None, :].to(weights.dtype), rows


def _pool_windows(x, index, ay, ax):
    """out[r, c] = ay[r] @ x[index[r], c] @ ax[r]^T, each region reading only the window of the
    map its weights cover: regions sorted by window area, gathered from a channels-last copy of
    the map in chunks (the gathered windows bound by _CHUNK_ELEMENTS), two batched matmuls per
    chunk. Regions of a negative (or missing) batch index, or of no window, give 0."""
    regions, (batch, channels) = index.shape[0], x.shape[:2]
    out = x.new_zeros((regions, channels, ay.shape[1], ax.shape[1]))
    with torch.no_grad():
        y0, hs = _windows(ay)
        x0, ws = _windows(ax)
        valid = (index >= 0) & (index < batch) & (hs > 0) & (ws > 0)
        order = torch.nonzero(valid).flatten()
        order = order[torch.argsort(hs[order] * ws[order], stable=True)]
        sizes = (hs[order] * ws[order]).tolist()
    if not sizes:
        return out
    maps = x.permute(0, 2, 3, 1)                # (B, H, W, C): a window is rows of channels
    if not maps.is_contiguous():
        maps = maps.contiguous()
    picked, pieces, start = [], [], 0
    while start < len(sizes):
        stop = start + 1            # ascending areas: the last one bounds the chunk's windows
        while stop < len(sizes) and stop - start < _CHUNK and \
                (stop + 1 - start) * sizes[stop] * channels <= _CHUNK_ELEMENTS:
            stop += 1
        sel = order[start:stop]
        with torch.no_grad():
            wy, rows = _window_weights(ay[sel], y0[sel], int(hs[sel].max()))
            wx, cols = _window_weights(ax[sel], x0[sel], int(ws[sel].max()))
        crops = maps[index[sel][:, None, None], rows[:, :, None], cols[:, None, :]]  # r,h,w,c
        rows_pooled = torch.matmul(wy.to(x.dtype), crops.flatten(2))   # (r, ph, w * c)
        rows_pooled = rows_pooled.reshape(len(sel), wy.shape[1], cols.shape[1], channels)
        pieces.append(torch.einsum('rpwc,rqw->rcpq', rows_pooled, wx.to(x.dtype)))
        picked.append(sel)
        start = stop
    return out.index_copy(0, torch.cat(picked), torch.cat(pieces))


def _check_inputs(op, data, rois, columns):
    require(data.dim() == 4, '%s: data must be 4-D (batch, channel, height, width), got shape '
            '%s', op, tuple(data.shape))
    require(rois.dim() == 2 and rois.shape[1] == columns, '%s: rois must be 2-D (regions, %d), '
            'got shape %s', op, columns, tuple(rois.shape))


def _roi_align(p, data, rois):
    op = 'ROIAlign'
    _check_inputs(op, data, rois, 5)
    ph, pw = _pooled(op, p)
    batch, channels, height, width = data.shape
    if p.position_sensitive:
        require(channels % (ph * pw) == 0, '%s: position_sensitive needs channels (%d) to be a '
                'multiple of pooled_h * pooled_w = %d', op, channels, ph * pw)
    with torch.no_grad():
        r = _wide(rois.detach())
        index = r[:, 0].long()
        offset = 0.5 if p.aligned else 0.0
        x1, y1 = r[:, 1] * p.spatial_scale - offset, r[:, 2] * p.spatial_scale - offset
        roi_w, roi_h = r[:, 3] * p.spatial_scale - offset - x1, \
            r[:, 4] * p.spatial_scale - offset - y1
        if not p.aligned:
            roi_w, roi_h = roi_w.clamp(min=1), roi_h.clamp(min=1)
        ay = _axis_weights(y1, roi_h / ph, _grid(op, p, p.sample_ratio, roi_h, ph), ph, height)
        ax = _axis_weights(x1, roi_w / pw, _grid(op, p, p.sample_ratio, roi_w, pw), pw, width)
    out = _pool_windows(_wide(data), index, ay, ax)
    if p.position_sensitive:
        out = out.reshape(rois.shape[0], channels // (ph * pw), ph * pw, ph * pw)
        out = out.diagonal(dim1=2, dim2=3).reshape(rois.shape[0], -1, ph, pw)
    return out.to(data.dtype)


def _roi_shape(op, columns, channel_div):
    def rule(p, ins, outs):
        data, rois = ins
        if rois is not None:
            require(len(rois) == 2, '%s: rois must be 2-D (regions, %d)', op, columns)
            rois = merge(rois, (0, columns))
        if data is None or rois is None:
            return [data, rois], outs
        require(len(data) == 4, '%s: data must be 4-D (batch, channel, height, width)', op)
        ph, pw = _pooled(op, p)
        channels = data[1] // (ph * pw) if channel_div(p) else data[1]
        return [data, rois], [merge(outs[0], (rois[0], channels, ph, pw))]
    return rule


register(OpDef('_contrib_ROIAlign', _roi_align,
               params={'pooled_size': Shape(), 'spatial_scale': Float(), 'sample_ratio': Int(-1),
                       'position_sensitive': Bool(False), 'aligned': Bool(False)},
               inputs=('data', 'rois'),
               infer_shape=_roi_shape('ROIAlign', 5, lambda p: p.position_sensitive)))


# ---------------------------------------------------------------------------------------------
# RROIAlign: regions (batch index, centre x, centre y, width, height, angle in degrees)
# ---------------------------------------------------------------------------------------------
def bilinear_gather(image, y, x, inside_only=False):
    """Samples of image (C, H, W) at float positions y, x (any equal shapes): (C, *y.shape).
    Positions more than one pixel outside give 0 (inside_only: positions outside [0, H) x
    [0, W)); others are clamped to the map."""
    channels, height, width = image.shape
    if inside_only:
        valid = (y >= 0) & (y < height) & (x >= 0) & (x < width)
    else:
        valid = (y >= -1.0) & (y <= height) & (x >= -1.0) & (x <= width)
    y, x = y.clamp(min=0), x.clamp(min=0)
    y0, x0 = y.floor().long(), x.floor().long()
    ytop, xtop = y0 >= height - 1, x0 >= width - 1
    y0 = torch.where(ytop, torch.full_like(y0, height - 1), y0)
    x0 = torch.where(xtop, torch.full_like(x0, width - 1), x0)
    y1, x1 = torch.where(ytop, y0, y0 + 1), torch.where(xtop, x0, x0 + 1)
    y = torch.where(ytop, y0.to(y.dtype), y)
    x = torch.where(xtop, x0.to(x.dtype), x)
    ly, lx = y - y0.to(y.dtype), x - x0.to(x.dtype)
    flat = image.reshape(channels, -1)
    out = 0
    for yy, xx, w in ((y0, x0, (1 - ly) * (1 - lx)), (y0, x1, (1 - ly) * lx),
                      (y1, x0, ly * (1 - lx)), (y1, x1, ly * lx)):
        out = out + flat[:, (yy * width + xx).reshape(-1)].reshape((channels,) + y.shape) * \
            (w * valid).to(image.dtype)
    return out


def _rroi_align(p, data, rois):
    op = 'RROIAlign'
    _check_inputs(op, data, rois, 6)
    ph, pw = _pooled(op, p)
    x = _wide(data)
    out = []
    r = _wide(rois.detach())
    for k in range(rois.shape[0]):
        b, cx, cy, w, h, angle = (float(v) for v in r[k])
        if b < 0:
            out.append(x.new_zeros((data.shape[1], ph, pw)))
            continue
        w, h = max(w * p.spatial_scale, 1.0), max(h * p.spatial_scale, 1.0)
        gh = p.sampling_ratio if p.sampling_ratio > 0 else math.ceil(h / ph)
        gw = p.sampling_ratio if p.sampling_ratio > 0 else math.ceil(w / pw)
        ys = -h / 2 + (torch.arange(ph * gh, dtype=x.dtype) + 0.5) * (h / ph / gh)
        xs = -w / 2 + (torch.arange(pw * gw, dtype=x.dtype) + 0.5) * (w / pw / gw)
        yy, xx = torch.meshgrid(ys, xs, indexing='ij')
        theta = math.radians(angle)
        sy = yy * math.cos(theta) - xx * math.sin(theta) + cy * p.spatial_scale
        sx = yy * math.sin(theta) + xx * math.cos(theta) + cx * p.spatial_scale
        samples = bilinear_gather(x[int(b)], sy.to(x.device), sx.to(x.device))
        out.append(samples.reshape(-1, ph, gh, pw, gw).mean(dim=(2, 4)))
    if not out:
        return data.new_zeros((0, data.shape[1], ph, pw))
    return torch.stack(out).to(data.dtype)


register(OpDef('_contrib_RROIAlign', _rroi_align,
               params={'pooled_size': Shape(), 'spatial_scale': Float(),
                       'sampling_ratio': Int(-1)},
               inputs=('data', 'rois'), infer_shape=_roi_shape('RROIAlign', 6, lambda p: False)))


# ---------------------------------------------------------------------------------------------
# PSROIPooling (R-FCN): position-sensitive average pooling over integer bins
# ---------------------------------------------------------------------------------------------
def _bin_masks(start, size, pooled, length):
    """(R, pooled, length) 0/1 masks of the map rows inside each bin: floor(start + i * bin) to
    ceil(start + (i+1) * bin), clipped to the map."""
    bins = torch.arange(pooled, dtype=start.dtype, device=start.device)
    step = (size / pooled)[:, None]
    low = torch.floor(start[:, None] + bins[None] * step).clamp(0, length)
    high = torch.ceil(start[:, None] + (bins[None] + 1) * step).clamp(0, length)
    rows = torch.arange(length, dtype=start.dtype, device=start.device)
    return ((rows[None, None] >= low[..., None]) & (rows[None, None] < high[..., None])).to(
        start.dtype)


def _psroi_pooling(p, data, rois):
    op = 'PSROIPooling'
    _check_inputs(op, data, rois, 5)
    pooled = p.pooled_size
    group = p.group_size or pooled
    batch, channels, height, width = data.shape
    require(channels == p.output_dim * group * group, '%s: data must have output_dim * '
            'group_size^2 = %d channels, got %d', op, p.output_dim * group * group, channels)
    with torch.no_grad():
        r = _wide(rois.detach())
        index = r[:, 0].long()
        x1, y1 = torch.round(r[:, 1]) * p.spatial_scale, torch.round(r[:, 2]) * p.spatial_scale
        x2 = (torch.round(r[:, 3]) + 1) * p.spatial_scale
        y2 = (torch.round(r[:, 4]) + 1) * p.spatial_scale
        my = _bin_masks(y1, (y2 - y1).clamp(min=0.1), pooled, height)
        mx = _bin_masks(x1, (x2 - x1).clamp(min=0.1), pooled, width)
        area = my.sum(-1)[:, :, None] * mx.sum(-1)[:, None, :]
        cell = (torch.arange(pooled) * group // pooled).tolist()
        # data channel of (output channel c, bin ph, pw): (c * group + gh) * group + gw
        chan = torch.tensor([[[(c * group + cell[i]) * group + cell[j] for j in range(pooled)]
                              for i in range(pooled)] for c in range(p.output_dim)])
    x = _wide(data)
    out = x.new_zeros((rois.shape[0], p.output_dim, pooled, pooled))
    for b in range(batch):
        chosen = (index == b).nonzero().flatten()
        for start in range(0, chosen.numel(), _CHUNK):
            sel = chosen[start:start + _CHUNK]
            rows = torch.einsum('rph,chw->rcpw', my[sel].to(x.dtype), x[b])
            sums = torch.einsum('rcpw,rqw->rcpq', rows, mx[sel].to(x.dtype))
            picked = sums.reshape(len(sel), channels, pooled * pooled)[
                :, chan.reshape(p.output_dim, -1).to(sums.device),
                torch.arange(pooled * pooled, device=sums.device)]
            picked = picked.reshape(len(sel), p.output_dim, pooled, pooled)
            a = area[sel].to(x.dtype)[:, None]
            out = out.index_copy(0, sel, torch.where(a > 0, picked / a.clamp(min=1),
                                                     torch.zeros_like(picked)))
    return out.to(data.dtype)


def _psroi_shape(p, ins, outs):
    data, rois = ins
    rois = merge(rois, (0, 5)) if rois is not None else None
    if rois is None:
        return [data, rois], outs
    return [data, rois], [merge(outs[0], (rois[0], p.output_dim, p.pooled_size,
                                          p.pooled_size))]


register(OpDef('_contrib_PSROIPooling', _psroi_pooling,
               params={'spatial_scale': Float(), 'output_dim': Int(), 'pooled_size': Int(),
                       'group_size': Int(0)},
               inputs=('data', 'rois'), infer_shape=_psroi_shape))

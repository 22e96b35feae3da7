"""DeformablePSROIPooling (Deformable R-FCN, mx.contrib): position-sensitive ROI pooling whose
bins are shifted by learned offsets (`trans`, scaled by trans_std and the region's size), each bin
the average of sample_per_part^2 bilinear samples that fall within half a pixel of the map.

As MXNet's kernel: sample positions are clamped to the map for the interpolation, but the offsets'
gradient ignores that clamp (the interpolation's slope at the clamped point); regions get no
gradient. The hidden second output `top_count` is the number of samples each bin averaged.
"""
import torch

from .params import Bool, Float, Int
from .registry import OpDef, register
from .shapes import merge, require

_OP = 'DeformablePSROIPooling'


def _inputs(p):
    return ('data', 'rois') if p.no_trans else ('data', 'rois', 'trans')


def _bilinear(flat, base, y, x, width):
    """Samples of flat maps at (y, x); base: the offset of each sample's map in flat."""
    y0, x0 = y.detach().floor(), x.detach().floor()
    y1, x1 = y.detach().ceil(), x.detach().ceil()
    dy, dx = y - y0, x - x0

    def at(yy, xx):
        return flat[base + (yy.long() * width + xx.long())]
    return ((1 - dx) * (1 - dy) * at(y0, x0) + (1 - dx) * dy * at(y1, x0) +
            dx * (1 - dy) * at(y0, x1) + dx * dy * at(y1, x1))


def _deformable_psroi(p, data, rois, trans=None):
    require(data.dim() == 4, '%s: data must be (batch, channel, height, width), got shape %s',
            _OP, tuple(data.shape))
    require(rois.dim() == 2 and rois.shape[1] == 5, '%s: rois must be (regions, 5), got shape '
            '%s', _OP, tuple(rois.shape))
    batch, channels, height, width = data.shape
    pooled, group, spp = p.pooled_size, p.group_size, p.sample_per_part
    part = p.part_size or pooled
    require(group > 0 and pooled > 0 and spp > 0, '%s: group_size, pooled_size and '
            'sample_per_part must be positive', _OP)
    require(channels == p.output_dim * group * group, '%s: data must have output_dim * '
            'group_size^2 = %d channels, got %d', _OP, p.output_dim * group * group, channels)
    regions = rois.shape[0]
    if p.no_trans:
        num_classes = 1
    else:
        require(trans is not None and trans.dim() == 4 and trans.shape[0] == regions and
                trans.shape[1] % 2 == 0 and tuple(trans.shape[2:]) == (part, part),
                '%s: trans must be (%d, 2 * classes, %d, %d), got shape %s', _OP, regions, part,
                part, None if trans is None else tuple(trans.shape))
        num_classes = trans.shape[1] // 2
    per_class = p.output_dim // num_classes
    require(per_class > 0, '%s: output_dim=%d is smaller than the %d classes of trans', _OP,
            p.output_dim, num_classes)
    dtype = data.dtype if data.dtype == torch.float64 else torch.float32
    r = rois.detach().to(dtype)
    index = r[:, 0].long().clamp(0, batch - 1)
    scale = p.spatial_scale
    x_start = torch.round(r[:, 1]) * scale - 0.5
    y_start = torch.round(r[:, 2]) * scale - 0.5
    roi_w = ((torch.round(r[:, 3]) + 1) * scale - 0.5 - x_start).clamp(min=0.1)
    roi_h = ((torch.round(r[:, 4]) + 1) * scale - 0.5 - y_start).clamp(min=0.1)
    bin_w, bin_h = roi_w / pooled, roi_h / pooled
    cells = torch.arange(pooled, dtype=dtype)
    part_of = torch.floor(cells / pooled * part).long()                     # (P,)
    group_of = torch.floor(cells * group / pooled).long().clamp(0, group - 1)
    out_ch = torch.arange(p.output_dim)
    cls = out_ch // per_class                                                 # (C',)
    if p.no_trans:
        tx = ty = torch.zeros(regions, p.output_dim, pooled, pooled, dtype=dtype)
    else:
        t = trans.to(dtype) * p.trans_std
        # (R, C', P, P): the offsets of each output channel's class at each bin's part cell
        tx = t[:, (2 * cls)[:, None, None], part_of[None, :, None], part_of[None, None, :]]
        ty = t[:, (2 * cls + 1)[:, None, None], part_of[None, :, None], part_of[None, None, :]]
    steps = torch.arange(spp, dtype=dtype)
    # sample positions (R, C', P, P, S, S): ph indexes rows (y), pw columns (x)
    w0 = (cells[None, None, None, :] * bin_w[:, None, None, None] + x_start[:, None, None, None]
          + tx * roi_w[:, None, None, None])
    h0 = (cells[None, None, :, None] * bin_h[:, None, None, None] + y_start[:, None, None, None]
          + ty * roi_h[:, None, None, None])
    w = w0[..., None, None] + steps[None, :] * (bin_w / spp)[:, None, None, None, None, None]
    h = h0[..., None, None] + steps[:, None] * (bin_h / spp)[:, None, None, None, None, None]
    inside = ((w >= -0.5) & (w <= width - 0.5) & (h >= -0.5) & (h <= height - 0.5)).detach()
    w = w + (w.detach().clamp(0, width - 1) - w.detach())       # clamp, slope kept for trans
    h = h + (h.detach().clamp(0, height - 1) - h.detach())
    chan = (out_ch[:, None, None] * group + group_of[None, :, None]) * group + \
        group_of[None, None, :]                                               # (C', P, P)
    base = ((index[:, None, None, None] * channels + chan[None]) * height * width)[..., None,
                                                                                  None]
    flat = data.to(dtype).reshape(-1)
    values = _bilinear(flat, base.expand(w.shape), h, w, width) * inside.to(dtype)
    count = inside.to(dtype).sum((-1, -2))
    out = values.sum((-1, -2)) / count.clamp(min=1)
    return out.to(data.dtype), count.to(data.dtype)


def _deformable_psroi_shape(p, ins, outs):
    rois = merge(ins[1], (0, 5)) if ins[1] is not None else None
    ins = [ins[0], rois] + list(ins[2:])
    if rois is None or not rois[0]:
        return ins, outs
    shape = (rois[0], p.output_dim, p.pooled_size, p.pooled_size)
    if not p.no_trans and ins[2] is not None:
        part = p.part_size or p.pooled_size
        ins[2] = merge(ins[2], (rois[0], ins[2][1], part, part))
    return ins, [merge(outs[0], shape), merge(outs[1], shape)]


register(OpDef('_contrib_DeformablePSROIPooling', _deformable_psroi,
               params={'spatial_scale': Float(), 'output_dim': Int(), 'group_size': Int(),
                       'pooled_size': Int(), 'part_size': Int(0), 'sample_per_part': Int(1),
                       'trans_std': Float(0.0), 'no_trans': Bool(False)},
               inputs=_inputs, outputs=('output', 'top_count'), visible_outputs=1,
               infer_shape=_deformable_psroi_shape))

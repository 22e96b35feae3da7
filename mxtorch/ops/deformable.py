"""DeformableConvolution (DCNv1, mx.contrib): each kernel tap samples the input at its regular
position shifted by a learned offset, bilinearly, then the convolution weights apply to those
samples. As MXNet's DCNv1 kernels, a sample outside [0, H) x [0, W) is 0 and one in the last
row/column's cell takes that row/column (no partial weights past the border; DCNv2's
ModulatedDeformableConvolution differs there). Gradients are autograd's through the sampling,
to data, offset, weight and bias."""
import torch

from .contrib import _mdc_shape, columns_conv, deformable_geometry, deformable_positions
from .params import Bool, Enum, Int, Shape
from .registry import OpDef, register
from .roi_align import bilinear_gather

_OP = 'DeformableConvolution'


def _deformable_conv(p, data, offset, weight, bias=None):
    kernel, stride, dilate, pad, out_h, out_w, taps = deformable_geometry(_OP, p, data, offset)
    batch, channels, height, width = data.shape
    dg, groups = p.num_deformable_group, p.num_group
    y, x = deformable_positions(kernel, stride, dilate, pad, out_h, out_w, data, offset, dg)
    per_group = channels // dg
    samples = torch.stack([torch.cat([
        bilinear_gather(data[b, g * per_group:(g + 1) * per_group], y[b, g], x[b, g],
                        inside_only=True) for g in range(dg)]) for b in range(batch)])
    return columns_conv(samples, weight, bias, p.num_filter, groups, (out_h, out_w))


def _deformable_conv_shape(p, ins, outs):
    new_ins, new_outs = _mdc_shape(p, [ins[0], ins[1], None] + list(ins[2:]), outs)
    return [new_ins[0], new_ins[1]] + list(new_ins[3:]), new_outs


register(OpDef('_contrib_DeformableConvolution', _deformable_conv,
               params={'kernel': Shape(), 'stride': Shape(()), 'dilate': Shape(()),
                       'pad': Shape(()), 'num_filter': Int(), 'num_group': Int(1),
                       'num_deformable_group': Int(1), 'workspace': Int(1024),
                       'no_bias': Bool(False), 'layout': Enum(('NCDHW', 'NCHW', 'NCW'), None)},
               inputs=lambda p: ('data', 'offset', 'weight') + (() if p.no_bias else ('bias',)),
               infer_shape=_deformable_conv_shape))

"""Other mx.contrib operators: gradientmultiplier and ModulatedDeformableConvolution (DCNv2).

ModulatedDeformableConvolution samples the input at each kernel tap shifted by a learned
offset (bilinear, zero outside the image) and scaled by a learned mask, then applies the
convolution weights to those samples; its gradients are autograd's through the sampling.
"""
import torch

from .conv import window_geometry
from .params import Bool, Enum, Float, Int, Shape
from .registry import OpDef, register
from .shapes import merge, require, same_shape


class _ScaleGradient(torch.autograd.Function):
    """Identity forward; the gradient is multiplied by `scale`."""

    @staticmethod
    def forward(ctx, x, scale):  # pylint: disable=arguments-differ
        ctx.scale = scale
        return x.clone()

    @staticmethod
    def backward(ctx, dy):  # pylint: disable=arguments-differ
        return dy * ctx.scale, None


def _gradient_multiplier(p, data):
    return _ScaleGradient.apply(data, p.scalar)


register(OpDef('_contrib_gradientmultiplier', _gradient_multiplier,
               params={'scalar': Float(1.0), 'is_int': Bool(True)}, infer_shape=same_shape))


# ---------------------------------------------------------------------------------------------
# ModulatedDeformableConvolution
# ---------------------------------------------------------------------------------------------
_OP = 'ModulatedDeformableConvolution'


def _out_size(size, kernel, stride, dilate, pad):
    return (size + 2 * pad - (dilate * (kernel - 1) + 1)) // stride + 1


def _sample(data, y, x):
    """Bilinear samples of data (B, G, C, H, W) at positions y, x (B, G, P): (B, G, C, P);
    positions at or beyond one pixel outside the image give 0, missing corners count as 0."""
    b, g, c, h, w = data.shape
    flat = data.reshape(b, g, c, h * w)
    inside = (y > -1) & (y < h) & (x > -1) & (x < w)
    y0, x0 = torch.floor(y), torch.floor(x)
    out = 0
    for dy in (0, 1):
        for dx in (0, 1):
            yy, xx = y0 + dy, x0 + dx
            weight = (1 - (y - yy).abs()) * (1 - (x - xx).abs())
            ok = inside & (yy >= 0) & (yy < h) & (xx >= 0) & (xx < w)
            index = (yy.clamp(0, h - 1) * w + xx.clamp(0, w - 1)).long()
            values = torch.gather(flat, 3, index[:, :, None, :].expand(b, g, c, index.shape[-1]))
            out = out + values * (weight * ok)[:, :, None, :]
    return out


def deformable_geometry(op, p, data, offset):
    """Checked (kernel, stride, dilate, pad, out_h, out_w, taps) of a deformable convolution
    (DCNv1 and DCNv2 share them): NCHW data, channels divisible by the groups, offsets of
    2 * taps per deformable group at every output position."""
    require(data.dim() == 4, '%s: only 2-D (NCHW) data is supported, got shape %s', op,
            tuple(data.shape))
    kernel, stride, dilate, pad = window_geometry(op, p, 4)
    batch, channels, height, width = data.shape
    dg, groups = p.num_deformable_group, p.num_group
    require(channels % dg == 0 and channels % groups == 0, '%s: the %d input channels must be a '
            'multiple of num_deformable_group=%d and num_group=%d', op, channels, dg, groups)
    out_h = _out_size(height, kernel[0], stride[0], dilate[0], pad[0])
    out_w = _out_size(width, kernel[1], stride[1], dilate[1], pad[1])
    taps = kernel[0] * kernel[1]
    require(tuple(offset.shape) == (batch, dg * 2 * taps, out_h, out_w), '%s: offset must have '
            'shape %s, got %s', op, (batch, dg * 2 * taps, out_h, out_w), tuple(offset.shape))
    return kernel, stride, dilate, pad, out_h, out_w, taps


def deformable_positions(kernel, stride, dilate, pad, out_h, out_w, data, offset, dg):
    """Where a deformable convolution samples: y, x (B, dg, K, Ho, Wo), each kernel tap's place
    in its strided, dilated, padded window plus the tap's offset (in data's dtype)."""
    dev, dt = data.device, data.dtype
    taps = kernel[0] * kernel[1]
    ky, kx = torch.meshgrid(torch.arange(kernel[0], device=dev, dtype=dt) * dilate[0],
                            torch.arange(kernel[1], device=dev, dtype=dt) * dilate[1],
                            indexing='ij')
    oy = torch.arange(out_h, device=dev, dtype=dt) * stride[0] - pad[0]
    ox = torch.arange(out_w, device=dev, dtype=dt) * stride[1] - pad[1]
    base_y = ky.reshape(taps, 1, 1) + oy.reshape(1, out_h, 1)            # (K, Ho, 1)
    base_x = kx.reshape(taps, 1, 1) + ox.reshape(1, 1, out_w)            # (K, 1, Wo)
    off = offset.reshape(data.shape[0], dg, taps, 2, out_h, out_w)
    return base_y + off[:, :, :, 0], base_x + off[:, :, :, 1]


def _modulated_deformable_conv(p, data, offset, mask, weight, bias=None):
    kernel, stride, dilate, pad, out_h, out_w, taps = deformable_geometry(_OP, p, data, offset)
    batch, channels, height, width = data.shape
    dg, groups = p.num_deformable_group, p.num_group
    require(tuple(mask.shape) == (batch, dg * taps, out_h, out_w), '%s: mask must have shape '
            '%s, got %s', _OP, (batch, dg * taps, out_h, out_w), tuple(mask.shape))
    y, x = deformable_positions(kernel, stride, dilate, pad, out_h, out_w, data, offset, dg)
    y, x = y.reshape(batch, dg, -1), x.reshape(batch, dg, -1)
    samples = _sample(data.reshape(batch, dg, channels // dg, height, width), y, x)
    samples = samples * mask.reshape(batch, dg, 1, -1)
    return columns_conv(samples, weight, bias, p.num_filter, groups, (out_h, out_w))


def columns_conv(samples, weight, bias, num_filter, groups, out_hw):
    """The convolution of sampled columns: samples (B, C, K, Ho*Wo) (C channels, K kernel taps)
    grouped as (B, G, C/G*K, Ho*Wo) times weight (G, F/G, C/G*K), plus bias: (B, F, Ho, Wo)."""
    batch = samples.shape[0]
    cols = samples.reshape(batch, groups, -1, out_hw[0] * out_hw[1])
    w = weight.reshape(groups, num_filter // groups, -1)
    out = torch.einsum('gfk,bgkp->bgfp', w, cols).reshape(batch, num_filter, *out_hw)
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    return out


def _mdc_shape(p, ins, outs):
    data = ins[0]
    if data is None or len(data) != 4 or not all(data[2:]):
        return ins, outs
    kernel, stride, dilate, pad = window_geometry(_OP, p, 4)
    out_h = _out_size(data[2], kernel[0], stride[0], dilate[0], pad[0])
    out_w = _out_size(data[3], kernel[1], stride[1], dilate[1], pad[1])
    taps = kernel[0] * kernel[1]
    dg = p.num_deformable_group
    new = [data, merge(ins[1], (data[0], dg * 2 * taps, out_h, out_w)),
           merge(ins[2], (data[0], dg * taps, out_h, out_w)),
           merge(ins[3], (p.num_filter, data[1] // p.num_group) + tuple(kernel))]
    if not p.no_bias:
        new.append(merge(ins[4], (p.num_filter,)))
    return new, [merge(outs[0], (data[0], p.num_filter, out_h, out_w))]


register(OpDef('_contrib_ModulatedDeformableConvolution', _modulated_deformable_conv,
               params={'kernel': Shape(), 'stride': Shape(()), 'dilate': Shape(()),
                       'pad': Shape(()), 'num_filter': Int(), 'num_group': Int(1),
                       'num_deformable_group': Int(1), 'workspace': Int(1024),
                       'no_bias': Bool(False), 'im2col_step': Int(64),
                       'layout': Enum(('NCDHW', 'NCHW', 'NCW'), None)},
               inputs=lambda p: ('data', 'offset', 'mask', 'weight') +
               (() if p.no_bias else ('bias',)),
               infer_shape=_mdc_shape))

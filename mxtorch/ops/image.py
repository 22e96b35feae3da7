"""Image operators: mx.nd.image.* / mx.sym.image.* (`_image_<name>`) and the OpenCV-backed
`_cv*` operators under mx.image (decode, read, resize, border).

Images are HWC (height, width, channels) or NHWC, except `normalize` (CHW / NCHW, what
`to_tensor` makes). As in MXNet 1.9.1:

* results keep the input dtype (to_tensor: float32); an integer result is the real-valued
  result clamped to the type's range and truncated (uint8 1.3 * 172 = 223), except
  normalize's, which is truncated and wrapped as a C cast (uint8 -29 -> 227);
* the colour operators take a (h, w, 1 or 3) image; brightness scales it, contrast blends it
  with the mean grey level of the image, saturation blends each pixel with 0.114 * its last
  channel (MXNet's kernel keeps only the blue term of its grey value), hue rotates each RGB
  pixel's hue by alpha * 360 degrees (lightness and saturation kept);
* random_lighting / adjust_lighting add AlexNet's PCA noise: eigvec @ (alpha * eigval);
* hue, lighting (1-channel images) and color_jitter with every factor 0 leave their output
  unwritten, which MXNet returns as zeros. (MXNet's flips also leave the middle column / row of
  an odd width / height unwritten, i.e. garbage; here they are flipped properly.)

Random factors are drawn from torch's generator (what mx.random.seed seeds), not MXNet's stream.
Resizing, decoding and borders use OpenCV (the `image` extra: opencv-python-headless).
"""
import numpy as np
import torch

from ..base import MXNetError
from .optimizer_ops import FloatTuple
from .params import Bool, Float, Int, Shape, Str
from .registry import OpDef, register
from .shapes import merge, require


def cv2():
    """The OpenCV module, or a clear error saying how to install it."""
    try:
        import cv2 as module
    except ImportError:
        raise MXNetError('image operators need OpenCV: pip install "mxtorch[image]" '
                         '(opencv-python-headless)') from None
    return module


def _like(values, dtype):
    """Real-valued result `values` in `dtype`: integers clamped to their range and truncated."""
    if dtype.is_floating_point:
        return values.to(dtype)
    info = torch.iinfo(dtype)
    return values.clamp(info.min, info.max).trunc().to(dtype)


def _wrapped(values, dtype):
    """`values` in `dtype` as a C cast makes it: integers truncated and wrapped (normalize)."""
    if dtype.is_floating_point:
        return values.to(dtype)
    return values.trunc().to(torch.int64).to(dtype)


def _real(x):
    return x if x.is_floating_point() else x.to(torch.float32)


def _uniform(low, high):
    return float(torch.empty(()).uniform_(low, high)) if high > low else float(low)


def _hwc(op, shape, batch=False):
    ok = len(shape) == 3 or (batch and len(shape) == 4)
    require(ok, '%s: input image must have shape (height, width, channels)%s, but got %s',
            op, ', or (N, height, width, channels)' if batch else '', tuple(shape))


def _channels(op, shape):
    _hwc(op, shape)
    require(shape[-1] in (1, 3), '%s: the last dimension of input image must be the channel '
            'dimension with either 1 or 3 elements, but got input with shape %s',
            op, tuple(shape))


def _to_numpy(x):
    return x.detach().cpu().numpy()


def _from_numpy(a, like):
    return torch.from_numpy(np.ascontiguousarray(a)).to(like.device)


# ---------------------------------------------------------------------------------------------
# to_tensor, normalize
# ---------------------------------------------------------------------------------------------
def _to_tensor(p, data):
    _hwc('to_tensor', data.shape, batch=True)
    out = data.to(torch.float32) / 255.0
    return out.permute(2, 0, 1) if data.dim() == 3 else out.permute(0, 3, 1, 2)


def _to_tensor_shape(p, ins, outs):
    if ins[0] is None:
        return ins, outs
    _hwc('to_tensor', ins[0], batch=True)
    s = ins[0]
    out = (s[2], s[0], s[1]) if len(s) == 3 else (s[0], s[3], s[1], s[2])
    return ins, [merge(outs[0], out)]


register(OpDef('_image_to_tensor', _to_tensor, infer_shape=_to_tensor_shape,
               infer_type=lambda p, ins, outs: (ins, [np.dtype('float32')])))


def _normalize_stats(p, shape):
    require(len(shape) in (3, 4), 'normalize: input tensor must have shape (channels, height, '
            'width), or (N, channels, height, width), but got %s', tuple(shape))
    c = shape[-3]
    require(c in (1, 3), 'normalize: the first dimension of input tensor must be the channel '
            'dimension with either 1 or 3 elements, but got input with shape %s', tuple(shape))
    for key in ('mean', 'std'):
        v = p[key]
        require(len(v) in (1, c), 'normalize: invalid %s for input with shape %s. %s must have '
                'either 1 or %d elements, but got %s', key, tuple(shape), key, c, list(v))
    def pick(v):
        return list(v) * c if len(v) == 1 else list(v)[:c]
    return pick(p.mean), pick(p.std)


def _normalize(p, data):
    mean, std = _normalize_stats(p, data.shape)
    view = (-1, 1, 1)
    x = _real(data)
    mean = torch.tensor(mean, dtype=x.dtype, device=x.device).view(view)
    std = torch.tensor(std, dtype=x.dtype, device=x.device).view(view)
    return _wrapped((x - mean) / std, data.dtype)


def _normalize_shape(p, ins, outs):
    if ins[0] is not None:
        _normalize_stats(p, ins[0])
    s = merge(ins[0], outs[0])
    return [s], [s]


register(OpDef('_image_normalize', _normalize, infer_shape=_normalize_shape,
               params={'mean': FloatTuple((0.0, 0.0, 0.0, 0.0)),
                       'std': FloatTuple((1.0, 1.0, 1.0, 1.0))}))


# ---------------------------------------------------------------------------------------------
# resize, crop, flips
# ---------------------------------------------------------------------------------------------
_INTERPS = (0, 1, 2, 3, 4)


def _resized_hw(p, h, w):
    size = tuple(p.size)
    require(len(size) in (1, 2), 'resize: size must be (width, height) or one number, got %s',
            size)
    require(all(s > 0 for s in size), 'resize: size %s must be positive', size)
    if len(size) == 2:
        return size[1], size[0]
    if not p.keep_ratio:
        return size[0], size[0]
    if h > w:
        return size[0] * h // w, size[0]
    return size[0], size[0] * w // h


def resize_image(img, w, h, interp):
    """One HWC numpy image resized to (h, w) by OpenCV (interp: cv2's flag)."""
    require(interp in _INTERPS, 'resize: interp=%s is not an OpenCV interpolation (0-4)',
            interp)
    require(w > 0 and h > 0, 'resize: the new size (w=%s, h=%s) must be positive', w, h)
    out = cv2().resize(img, (int(w), int(h)), interpolation=int(interp))
    return out.reshape(int(h), int(w), img.shape[2]) if img.ndim == 3 else out


def _resize(p, data):
    _hwc('resize', data.shape, batch=True)
    h, w = _resized_hw(p, data.shape[-3], data.shape[-2])
    a = _to_numpy(data)
    if a.ndim == 3:
        return _from_numpy(resize_image(a, w, h, p.interp), data)
    return _from_numpy(np.stack([resize_image(x, w, h, p.interp) for x in a]), data)


def _resize_shape(p, ins, outs):
    s = ins[0]
    if s is None or not (s[-3] and s[-2]):
        return ins, outs
    _hwc('resize', s, batch=True)
    h, w = _resized_hw(p, s[-3], s[-2])
    return ins, [merge(outs[0], tuple(s[:-3]) + (h, w, s[-1]))]


register(OpDef('_image_resize', _resize, infer_shape=_resize_shape, differentiable=False,
               params={'size': Shape(()), 'keep_ratio': Bool(False), 'interp': Int(1)}))


def _check_crop(p, shape):
    _hwc('crop', shape, batch=True)
    require(p.height > 0 and p.width > 0, 'crop: height and width must be greater than 0')
    require(p.x >= 0 and p.y >= 0, 'crop: x and y must not be negative')
    require(p.y + p.height <= shape[-3], 'crop: y + height should not be greater than input '
            'height')
    require(p.x + p.width <= shape[-2], 'crop: x + width should not be greater than input width')


def _crop(p, data):
    _check_crop(p, data.shape)
    return data[..., p.y:p.y + p.height, p.x:p.x + p.width, :]


def _crop_shape(p, ins, outs):
    s = ins[0]
    if s is None:
        return ins, outs
    _check_crop(p, s)
    return ins, [merge(outs[0], tuple(s[:-3]) + (p.height, p.width, s[-1]))]


register(OpDef('_image_crop', _crop, infer_shape=_crop_shape,
               params={'x': Int(), 'y': Int(), 'width': Int(), 'height': Int()}))


def _flip(axis, check, chance):
    def forward(p, data):
        check(data.shape)
        if chance and float(torch.rand(())) >= 0.5:
            return data.clone()
        return data.flip(axis)
    return forward


for _name, _axis in (('left_right', 1), ('top_bottom', 0)):
    register(OpDef('_image_flip_' + _name,
                   _flip(_axis, lambda s, n=_name: _hwc('flip_' + n, s), False)))
    register(OpDef('_image_random_flip_' + _name, random=True,
                   forward=_flip(_axis, lambda s, n=_name: _channels('random_flip_' + n, s),
                                 True)))


# ---------------------------------------------------------------------------------------------
# colour: brightness, contrast, saturation, hue, jitter, lighting
# ---------------------------------------------------------------------------------------------
_GRAY = (0.299, 0.587, 0.114)


def _brightness(x, alpha):
    return x * alpha


def _contrast(x, alpha):
    gray = x if x.shape[-1] == 1 else (x * x.new_tensor(_GRAY)).sum(-1, keepdim=True)
    return x * alpha + gray.mean() * (1 - alpha)


def _saturation(x, alpha):
    if x.shape[-1] == 1:
        return x
    return x * alpha + (x[..., 2:3] * _GRAY[2]) * (1 - alpha)


def _hue(x, alpha):
    """Rotate the hue of RGB pixels by alpha * 360 degrees (max and min of each pixel kept)."""
    if x.shape[-1] != 3:
        return torch.zeros_like(x)
    r, g, b = x.unbind(-1)
    hi, lo = x.max(-1).values, x.min(-1).values
    d = hi - lo
    safe = torch.where(d > 0, d, torch.ones_like(d))
    h = torch.where(hi == r, torch.remainder((g - b) / safe, 6),
                    torch.where(hi == g, (b - r) / safe + 2, (r - g) / safe + 4))
    h = torch.where(d > 0, h, torch.zeros_like(h))
    h = torch.remainder(h + alpha * 6.0, 6.0)
    k = torch.floor(h).clamp(0, 5)
    mid = d * (1 - torch.abs(torch.remainder(h, 2.0) - 1))
    zero = torch.zeros_like(d)
    table = [(d, mid, zero), (mid, d, zero), (zero, d, mid), (zero, mid, d), (mid, zero, d),
             (d, zero, mid)]
    out = [zero.clone() for _ in range(3)]
    for i, row in enumerate(table):
        sel = k == i
        out = [torch.where(sel, v, o) for v, o in zip(row, out)]
    return torch.stack(out, -1) + lo.unsqueeze(-1)


def _random_factor(adjust, check_name):
    def forward(p, data):
        _channels(check_name, data.shape)
        return _like(adjust(_real(data), _uniform(p.min_factor, p.max_factor)), data.dtype)
    return forward


_FACTORS = {'min_factor': Float(lower=0.0), 'max_factor': Float(lower=0.0)}
for _name, _adjust in (('brightness', _brightness), ('contrast', _contrast),
                       ('saturation', _saturation), ('hue', _hue)):
    register(OpDef('_image_random_' + _name, _random_factor(_adjust, 'random_' + _name),
                   params=dict(_FACTORS), random=True))


def _color_jitter(p, data):
    _channels('random_color_jitter', data.shape)
    x = _real(data)
    steps = [(f, v) for f, v in ((_brightness, p.brightness), (_contrast, p.contrast),
                                 (_saturation, p.saturation), (_hue, p.hue)) if v > 0]
    if not steps:
        return torch.zeros_like(data)
    for i in torch.randperm(len(steps)).tolist():
        adjust, v = steps[i]
        x = adjust(x, _uniform(-v, v) if adjust is _hue else _uniform(1 - v, 1 + v))
    return _like(x, data.dtype)


register(OpDef('_image_random_color_jitter', _color_jitter, random=True,
               params={k: Float(lower=0.0) for k in ('brightness', 'contrast', 'saturation',
                                                       'hue')}))

_EIGVAL = (55.46, 4.794, 1.148)
_EIGVEC = ((-0.5675, 0.7192, 0.4009), (-0.5808, -0.0045, -0.8140), (-0.5836, -0.6948, 0.4203))


def _lighting(data, alpha):
    _channels('adjust_lighting', data.shape)
    if data.shape[-1] != 3:
        return torch.zeros_like(data)
    x = _real(data)
    rgb = x.new_tensor(_EIGVEC) @ (x.new_tensor(alpha) * x.new_tensor(_EIGVAL))
    return _like(x + rgb, data.dtype)


def _adjust_lighting(p, data):
    require(len(p.alpha) == 3, 'adjust_lighting: alpha must have 3 values, got %s',
            list(p.alpha))
    return _lighting(data, p.alpha)


def _random_lighting(p, data):
    alpha = torch.empty(3).normal_(0, p.alpha_std) if p.alpha_std > 0 else torch.zeros(3)
    return _lighting(data, alpha.tolist())


register(OpDef('_image_adjust_lighting', _adjust_lighting, params={'alpha': FloatTuple()}))
register(OpDef('_image_random_lighting', _random_lighting, random=True,
               params={'alpha_std': Float(0.05)}))


# ---------------------------------------------------------------------------------------------
# OpenCV operators of mx.image: decode, read, resize, border
# ---------------------------------------------------------------------------------------------
def decode_bytes(buf, flag=1, to_rgb=True):
    """A numpy HWC uint8 image from encoded bytes (flag 0: grey, 1: colour, -1: unchanged)."""
    require(len(buf) > 0, 'imdecode: the image buffer is empty')
    img = cv2().imdecode(np.frombuffer(bytes(buf), dtype=np.uint8), int(flag))
    require(img is not None, 'imdecode: decoding failed: the buffer is not an image OpenCV can '
            'read')
    if img.ndim == 2:
        img = img[:, :, None]
    elif to_rgb and img.shape[2] >= 3:
        img = img[:, :, [2, 1, 0] + list(range(3, img.shape[2]))]
    return img


def _imdecode_op(p, buf):
    data = _to_numpy(buf).astype(np.uint8).tobytes()
    return _from_numpy(decode_bytes(data, p.flag, p.to_rgb), buf)


def _imread_op(p, device, out_shape=None):
    try:
        with open(p.filename, 'rb') as f:
            data = f.read()
    except OSError as err:
        raise MXNetError('imread: cannot read image file %s: %s' % (p.filename, err)) from None
    return torch.from_numpy(np.ascontiguousarray(decode_bytes(data, p.flag, p.to_rgb))).to(
        device)


_DECODE = {'flag': Int(1), 'to_rgb': Bool(True)}
register(OpDef('_cvimdecode', _imdecode_op, inputs=('buf',), params=dict(_DECODE),
               differentiable=False, infer_type=lambda p, ins, outs: (ins, [np.dtype('uint8')])))
register(OpDef('_cvimread', _imread_op, inputs=(), creation=True, differentiable=False,
               params=dict(filename=Str(), **_DECODE),
               infer_type=lambda p, ins, outs: (ins, [np.dtype('uint8')])))


def _cvimresize(p, src):
    a = _to_numpy(src)
    require(a.ndim == 3, 'imresize: src must be an (h, w, c) image, got shape %s', a.shape)
    return _from_numpy(resize_image(a, p.w, p.h, p.interp), src)


def _cvimresize_shape(p, ins, outs):
    if ins[0] is None:
        return ins, outs
    return ins, [merge(outs[0], (p.h, p.w, ins[0][2]))]


register(OpDef('_cvimresize', _cvimresize, inputs=('src',), infer_shape=_cvimresize_shape,
               differentiable=False, params={'w': Int(), 'h': Int(), 'interp': Int(1)}))


def make_border(img, top, bot, left, right, border_type=0, value=0.0, values=()):
    """cv2.copyMakeBorder of one HWC numpy image; `values` (one per channel) or `value`."""
    require(min(top, bot, left, right) >= 0, 'copyMakeBorder: border sizes must not be '
            'negative, got top=%s bot=%s left=%s right=%s', top, bot, left, right)
    require(border_type & ~16 in (0, 1, 2, 3, 4), 'copyMakeBorder: type=%s is not an OpenCV '
            'border type (0-4, optionally + 16 for BORDER_ISOLATED)', border_type)
    fill = [float(v) for v in values] if len(values) else [float(value)] * 4
    out = cv2().copyMakeBorder(img, int(top), int(bot), int(left), int(right),
                               int(border_type), value=fill)
    return out.reshape(out.shape[0], out.shape[1], -1)


def _copy_make_border(p, src):
    a = _to_numpy(src)
    require(a.ndim == 3, 'copyMakeBorder: src must be an (h, w, c) image, got shape %s',
            a.shape)
    return _from_numpy(make_border(a, p.top, p.bot, p.left, p.right, p.type, p.value,
                                   p['values']), src)


def _border_shape(p, ins, outs):
    s = ins[0]
    if s is None:
        return ins, outs
    out = (s[0] + p.top + p.bot if s[0] else 0, s[1] + p.left + p.right if s[1] else 0, s[2])
    return ins, [merge(outs[0], out)]


register(OpDef('_cvcopyMakeBorder', _copy_make_border, inputs=('src',), differentiable=False,
               infer_shape=_border_shape,
               params={'top': Int(), 'bot': Int(), 'left': Int(), 'right': Int(),
                       'type': Int(0), 'value': Float(0.0), 'values': FloatTuple(())}))


def _legacy_imdecode(p, mean):
    """MXNet's deprecated `_imdecode` kernel (mx.nd.imdecode): the encoded image in the string
    attribute str_img (its first `size` bytes when size > 0), decoded by OpenCV as stored
    (IMREAD_UNCHANGED: BGR order, alpha kept; grey when c == 1), cut to the rectangle
    (x0, y0)-(x1, y1) unless y1 == y0, its first c channels as a (c, h, w) array of mean's
    dtype, minus `mean` (a (c, h, w) array; an empty one: no mean). As the kernel, pixels are
    read a byte per channel value (a 16-bit image's bytes, as they lie)."""
    import ast
    text = p.str_img
    raw = ast.literal_eval(text) if text[:2] in ("b'", 'b"') else text.encode('utf-8')
    raw = raw[:p.size] if p.size > 0 else raw
    require(len(raw) > 0, '_imdecode: the image buffer str_img is empty')
    img = cv2().imdecode(np.frombuffer(raw, dtype=np.uint8), 0 if p.c == 1 else -1)
    require(img is not None, '_imdecode: OpenCV failed to decode image (str_img is not an '
            'encoded image OpenCV can read)')
    img = img.reshape(img.shape[0], img.shape[1], -1)
    rows, cols, nch = img.shape
    require(1 <= p.c <= nch, '_imdecode: c=%s channels asked for, but the image has %d',
            p.c, nch)
    x0, y0, x1, y1 = p.x0, p.y0, p.x1, p.y1
    if y1 == y0:
        x0, x1, y0, y1 = 0, cols, 0, rows
    require(0 <= x0 <= x1 <= cols and 0 <= y0 < y1 <= rows, '_imdecode: clip rectangle '
            '(x0, y0, x1, y1) = (%d, %d, %d, %d) is not inside the %dx%d image',
            p.x0, p.y0, p.x1, p.y1, cols, rows)
    row_bytes = np.ascontiguousarray(img).view(np.uint8).reshape(rows, -1)
    columns = np.arange(x0, x1)[:, None] * nch + np.arange(p.c)[None, :]
    pixels = row_bytes[y0:y1][:, columns].transpose(2, 0, 1)         # (c, h, w)
    out = torch.from_numpy(np.ascontiguousarray(pixels)).to(mean.device, mean.dtype)
    if mean.numel():
        require(tuple(mean.shape) == tuple(out.shape), '_imdecode: mean must have the decoded '
                'image\'s shape (c, h, w) = %s, got %s', tuple(out.shape), tuple(mean.shape))
        out = out - mean
    return out


register(OpDef('_imdecode', _legacy_imdecode, inputs=('mean',), differentiable=False,
               params={'index': Int(0), 'x0': Int(0), 'y0': Int(0), 'x1': Int(0), 'y1': Int(0),
                       'c': Int(3), 'size': Int(0), 'str_img': Str('')},
               infer_type=lambda p, ins, outs: (ins, [ins[0] if ins[0] is not None
                                                      else np.dtype('float32')])))

"""mx.image: decoding, resizing and cropping HWC images, augmenters and ImageIter.

Images are HWC NDArrays (uint8 as decoded, float32 after CastAug). Decoding, resizing and
borders run OpenCV through the `_cv*` operators (the `image` extra). Random choices use
Python's `random` and NumPy's generator, as MXNet's Python code does.
"""
import json
import logging
import numbers
import os
import random

import numpy as np

from .. import io, recordio
from .. import ndarray as nd
from ..base import MXNetError
from ..ndarray import _internal

__all__ = ['imread', 'imresize', 'imdecode', 'scale_down', 'copyMakeBorder', 'resize_short',
           'fixed_crop', 'random_crop', 'center_crop', 'color_normalize', 'random_size_crop',
           'imrotate', 'random_rotate', 'Augmenter', 'SequentialAug', 'ResizeAug',
           'ForceResizeAug', 'RandomCropAug', 'RandomSizedCropAug', 'CenterCropAug',
           'RandomOrderAug', 'BrightnessJitterAug', 'ContrastJitterAug', 'SaturationJitterAug',
           'HueJitterAug', 'ColorJitterAug', 'LightingAug', 'ColorNormalizeAug',
           'RandomGrayAug', 'HorizontalFlipAug', 'CastAug', 'CreateAugmenter', 'ImageIter']

_EIGVAL = np.array([55.46, 4.794, 1.148])
_EIGVEC = np.array([[-0.5675, 0.7192, 0.4009],
                    [-0.5808, -0.0045, -0.8140],
                    [-0.5836, -0.6948, 0.4203]])


# ---------------------------------------------------------------------------------------------
# functions
# ---------------------------------------------------------------------------------------------
def imread(filename, *args, **kwargs):
    """Read an image file into an HWC uint8 NDArray (flag=1 colour, 0 grey; to_rgb=True)."""
    return _internal._cvimread(filename, *args, **kwargs)


def imdecode(buf, *args, **kwargs):
    """Decode an encoded image (bytes, bytearray, uint8 numpy array or NDArray) to HWC uint8.

    flag=1 colour (0: grey, -1: as stored), to_rgb=True (False keeps OpenCV's BGR order)."""
    if not isinstance(buf, nd.NDArray):
        if not isinstance(buf, (bytes, bytearray, np.ndarray)):
            raise ValueError('buf must be of type bytes, bytearray or numpy.ndarray, if you '
                             'would like to input type str, please convert to bytes')
        buf = nd.array(np.frombuffer(buf, dtype=np.uint8), dtype=np.uint8)
    return _internal._cvimdecode(buf, *args, **kwargs)


def imresize(src, w, h, *args, **kwargs):
    """Resize an HWC image to width w and height h (interp: OpenCV's 0-4, default 1)."""
    return _internal._cvimresize(src, w, h, *args, **kwargs)


def copyMakeBorder(src, top, bot, left, right, *args, **kwargs):  # noqa: N802 (MXNet's name)
    """Pad an HWC image with OpenCV's border types (0 constant, 1 replicate, 2 reflect,
    3 wrap, 4 reflect_101); `values` per channel or `value` for constant borders."""
    return _internal._cvcopyMakeBorder(src, top, bot, left, right, *args, **kwargs)


def scale_down(src_size, size):
    """(w, h) of `size` shrunk, keeping its aspect ratio, to fit in src_size (w, h)."""
    w, h = size
    src_w, src_h = src_size
    if src_h < h:
        w, h = float(w * src_h) / h, src_h
    if src_w < w:
        w, h = src_w, float(h * src_w) / w
    return int(w), int(h)


def _get_interp_method(interp, sizes=()):
    """An OpenCV interpolation 0-4 for `interp`: 9 chooses by the (old_h, old_w, new_h, new_w)
    sizes (cubic to enlarge, area to shrink, else bilinear), 10 a random one."""
    if interp == 9:
        if not sizes:
            return 2
        old_h, old_w, new_h, new_w = sizes
        if new_h > old_h and new_w > old_w:
            return 2
        if new_h < old_h and new_w < old_w:
            return 3
        return 1
    if interp == 10:
        return random.randint(0, 4)
    if interp not in (0, 1, 2, 3, 4):
        raise ValueError('Unknown interp method %d' % interp)
    return interp


def resize_short(src, size, interp=2):
    """Resize so that the shorter edge is `size`, keeping the aspect ratio."""
    h, w = src.shape[0], src.shape[1]
    new_h, new_w = (size * h // w, size) if h > w else (size, size * w // h)
    return imresize(src, new_w, new_h, interp=_get_interp_method(interp, (h, w, new_h, new_w)))


def fixed_crop(src, x0, y0, w, h, size=None, interp=2):
    """Crop (x0, y0, w, h), then resize to `size` (w, h) when given and different."""
    out = src[y0:y0 + h, x0:x0 + w]
    if size is not None and (w, h) != tuple(size):
        out = imresize(out, size[0], size[1],
                       interp=_get_interp_method(interp, (h, w, size[1], size[0])))
    return out


def random_crop(src, size, interp=2):
    """Crop a random region of `size` (w, h), scaled down to fit; (out, (x0, y0, w, h))."""
    h, w = src.shape[0], src.shape[1]
    new_w, new_h = scale_down((w, h), size)
    x0 = random.randint(0, w - new_w)
    y0 = random.randint(0, h - new_h)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def center_crop(src, size, interp=2):
    """Crop the central region of `size` (w, h), scaled down to fit; (out, (x0, y0, w, h))."""
    h, w = src.shape[0], src.shape[1]
    new_w, new_h = scale_down((w, h), size)
    x0, y0 = int((w - new_w) / 2), int((h - new_h) / 2)
    return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def color_normalize(src, mean, std=None):
    """(src - mean) / std, in place on src."""
    if mean is not None:
        src -= mean
    if std is not None:
        src /= std
    return src


def random_size_crop(src, size, area, ratio, interp=2, **kwargs):
    """Crop a random region of area fraction in `area` (a number: (area, 1)) and aspect ratio
    in `ratio` (log-uniform), resized to `size`; 10 tries, then a center crop."""
    if 'min_area' in kwargs:
        area = kwargs.pop('min_area')
    if kwargs:
        raise TypeError('unexpected keyword arguments for random_size_crop: %s'
                        % ', '.join(kwargs))
    h, w = src.shape[0], src.shape[1]
    if isinstance(area, numbers.Number):
        area = (area, 1.0)
    for _ in range(10):
        target = random.uniform(area[0], area[1]) * h * w
        aspect = np.exp(random.uniform(np.log(ratio[0]), np.log(ratio[1])))
        new_w = int(round(np.sqrt(target * aspect)))
        new_h = int(round(np.sqrt(target / aspect)))
        if new_w <= w and new_h <= h:
            x0 = random.randint(0, w - new_w)
            y0 = random.randint(0, h - new_h)
            return fixed_crop(src, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)
    return center_crop(src, size, interp)


def imrotate(src, rotation_degrees, zoom_in=False, zoom_out=False):
    """Rotate float32 CHW images (or an NCHW batch with one angle each) counter-clockwise by
    `rotation_degrees` about their centres, bilinearly, zeros outside. zoom_in scales so that
    no empty corner shows, zoom_out so that the whole image stays in view."""
    import torch
    import torch.nn.functional as F
    if zoom_in and zoom_out:
        raise ValueError('`zoom_in` and `zoom_out` cannot be both True')
    if src.dtype != np.float32:
        raise TypeError('Only `float32` images are supported by this function')
    single = src.ndim == 3
    if single:
        if not isinstance(rotation_degrees, numbers.Number):
            raise TypeError('When a single image is passed the rotation angle is required to '
                            'be a scalar.')
    elif src.ndim != 4:
        raise ValueError('Only 3D and 4D are supported by this function')
    x = src._tensor.unsqueeze(0) if single else src._tensor
    n, _, h, w = x.shape
    if isinstance(rotation_degrees, numbers.Number):
        angles = torch.full((n,), float(rotation_degrees), dtype=torch.float32)
    else:
        angles = torch.as_tensor(np.asarray(rotation_degrees.asnumpy()
                                            if isinstance(rotation_degrees, nd.NDArray)
                                            else rotation_degrees), dtype=torch.float32)
    if angles.numel() != n:
        raise ValueError('The number of images must be equal to the number of rotation angles')
    rad = (angles * np.pi / 180).to(x.device).view(n, 1, 1)
    hc, wc = (h - 1) / 2.0, (w - 1) / 2.0
    ys = (torch.arange(h, dtype=torch.float32, device=x.device) - hc).view(1, h, 1)
    xs = (torch.arange(w, dtype=torch.float32, device=x.device) - wc).view(1, 1, w)
    cos, sin = torch.cos(rad), torch.sin(rad)
    gx = (xs * cos - ys * sin) / wc
    gy = (xs * sin + ys * cos) / hc
    scale = torch.ones(n, 1, 1, device=x.device)
    if zoom_in or zoom_out:
        radius = float(np.hypot(h, w))
        corner = float(np.arctan(h / w))
        turn = rad.abs()
        span_x = torch.maximum((radius * torch.cos(corner + turn)).abs(),
                               (radius * torch.cos(corner - turn)).abs())
        span_y = torch.maximum((radius * torch.sin(corner + turn)).abs(),
                               (radius * torch.sin(corner - turn)).abs())
        if zoom_out:
            scale = torch.maximum(span_x / w, span_y / h)
        else:
            scale = torch.minimum(w / span_x, h / span_y)
    grid = torch.stack([gx * scale, gy * scale], -1)
    out = F.grid_sample(x, grid, mode='bilinear', padding_mode='zeros', align_corners=True)
    return nd.from_torch(out[0] if single else out, ctx=src.context)


def random_rotate(src, angle_limits, zoom_in=False, zoom_out=False):
    """imrotate by angles drawn uniformly from angle_limits (one per image of a batch)."""
    if src.ndim == 3:
        angles = np.random.uniform(*angle_limits)
    else:
        angles = nd.array(np.random.uniform(*angle_limits, size=src.shape[0]))
    return imrotate(src, angles, zoom_in=zoom_in, zoom_out=zoom_out)


# ---------------------------------------------------------------------------------------------
# augmenters
# ---------------------------------------------------------------------------------------------
class Augmenter:
    """An image transform: __call__(src) -> the transformed HWC image; dumps() -> JSON."""

    def __init__(self, **kwargs):
        self._kwargs = {}
        for key, value in kwargs.items():
            if isinstance(value, nd.NDArray):
                value = value.asnumpy()
            if isinstance(value, np.ndarray):
                value = value.tolist()
            self._kwargs[key] = value

    def dumps(self):
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __call__(self, src):
        raise NotImplementedError('Must override implementation.')


class SequentialAug(Augmenter):
    """The augmenters `ts` one after another."""

    def __init__(self, ts):
        super().__init__()
        self.ts = ts

    def dumps(self):
        return [type(self).__name__.lower(), [t.dumps() for t in self.ts]]

    def __call__(self, src):
        for t in self.ts:
            src = t(src)
        return src


class RandomOrderAug(SequentialAug):
    """The augmenters `ts` in a random order."""

    def __call__(self, src):
        random.shuffle(self.ts)
        return super().__call__(src)


class _Sized(Augmenter):
    def __init__(self, size, interp=2):
        super().__init__(size=size, interp=interp)
        self.size, self.interp = size, interp


class ResizeAug(_Sized):
    """Resize the shorter edge to `size`."""

    def __call__(self, src):
        return resize_short(src, self.size, self.interp)


class ForceResizeAug(_Sized):
    """Resize to `size` (w, h), whatever the aspect ratio."""

    def __call__(self, src):
        sizes = (src.shape[0], src.shape[1], self.size[1], self.size[0])
        return imresize(src, self.size[0], self.size[1],
                        interp=_get_interp_method(self.interp, sizes))


class RandomCropAug(_Sized):
    """A random crop of `size` (w, h)."""

    def __call__(self, src):
        return random_crop(src, self.size, self.interp)[0]


class CenterCropAug(_Sized):
    """The central crop of `size` (w, h)."""

    def __call__(self, src):
        return center_crop(src, self.size, self.interp)[0]


class RandomSizedCropAug(Augmenter):
    """random_size_crop with an area fraction in `area` and aspect ratio in `ratio`."""

    def __init__(self, size, area, ratio, interp=2, **kwargs):
        super().__init__(size=size, area=area, ratio=ratio, interp=interp)
        self.area = kwargs.pop('min_area', area)
        if kwargs:
            raise TypeError('unexpected keyword arguments for RandomSizedCropAug: %s'
                            % ', '.join(kwargs))
        self.size, self.ratio, self.interp = size, ratio, interp

    def __call__(self, src):
        return random_size_crop(src, self.size, self.area, self.ratio, self.interp)[0]


class BrightnessJitterAug(Augmenter):
    """Scale by 1 + U(-brightness, brightness)."""

    def __init__(self, brightness):
        super().__init__(brightness=brightness)
        self.brightness = brightness

    def __call__(self, src):
        src *= 1.0 + random.uniform(-self.brightness, self.brightness)
        return src


class ContrastJitterAug(Augmenter):
    """Blend with the image's mean grey level, factor 1 + U(-contrast, contrast)."""

    def __init__(self, contrast):
        super().__init__(contrast=contrast)
        self.contrast = contrast
        self.coef = nd.array([[[0.299, 0.587, 0.114]]])

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.contrast, self.contrast)
        weighted = src * self.coef
        gray = 3.0 * (1.0 - alpha) / weighted.size * nd.sum(weighted)
        src *= alpha
        src += gray
        return src


class SaturationJitterAug(Augmenter):
    """Blend each pixel with its grey value, factor 1 + U(-saturation, saturation)."""

    def __init__(self, saturation):
        super().__init__(saturation=saturation)
        self.saturation = saturation
        self.coef = nd.array([[[0.299, 0.587, 0.114]]])

    def __call__(self, src):
        alpha = 1.0 + random.uniform(-self.saturation, self.saturation)
        gray = nd.sum(src * self.coef, axis=2, keepdims=True) * (1.0 - alpha)
        src *= alpha
        src += gray
        return src


class HueJitterAug(Augmenter):
    """Rotate the hue by U(-hue, hue) * 180 degrees in YIQ space."""
    _TO_YIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.321],
                        [0.211, -0.523, 0.311]])
    _FROM_YIQ = np.array([[1.0, 0.956, 0.621], [1.0, -0.272, -0.647], [1.0, -1.107, 1.705]])

    def __init__(self, hue):
        super().__init__(hue=hue)
        self.hue = hue
        self.tyiq, self.ityiq = self._TO_YIQ, self._FROM_YIQ

    def __call__(self, src):
        angle = random.uniform(-self.hue, self.hue) * np.pi
        c, s = np.cos(angle), np.sin(angle)
        turn = np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])
        t = self._FROM_YIQ.dot(turn).dot(self._TO_YIQ).T
        return nd.dot(src, nd.array(t))


class ColorJitterAug(RandomOrderAug):
    """Brightness, contrast and saturation jitter (those > 0) in a random order."""

    def __init__(self, brightness, contrast, saturation):
        ts = []
        if brightness > 0:
            ts.append(BrightnessJitterAug(brightness))
        if contrast > 0:
            ts.append(ContrastJitterAug(contrast))
        if saturation > 0:
            ts.append(SaturationJitterAug(saturation))
        super().__init__(ts)


class LightingAug(Augmenter):
    """AlexNet's PCA noise: add eigvec @ (alpha * eigval), alpha ~ N(0, alphastd)."""

    def __init__(self, alphastd, eigval, eigvec):
        super().__init__(alphastd=alphastd, eigval=eigval, eigvec=eigvec)
        self.alphastd, self.eigval, self.eigvec = alphastd, eigval, eigvec

    def __call__(self, src):
        alpha = np.random.normal(0, self.alphastd, size=(3,))
        src += nd.array(np.dot(self.eigvec * alpha, self.eigval))
        return src


class ColorNormalizeAug(Augmenter):
    """(src - mean) / std."""

    def __init__(self, mean, std):
        super().__init__(mean=mean, std=std)
        self.mean = mean if mean is None or isinstance(mean, nd.NDArray) else nd.array(mean)
        self.std = std if std is None or isinstance(std, nd.NDArray) else nd.array(std)

    def __call__(self, src):
        return color_normalize(src, self.mean, self.std)


class RandomGrayAug(Augmenter):
    """With probability p, replace each pixel by its grey value in every channel."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p
        self.mat = nd.array([[0.21, 0.21, 0.21], [0.72, 0.72, 0.72], [0.07, 0.07, 0.07]])

    def __call__(self, src):
        return nd.dot(src, self.mat) if random.random() < self.p else src


class HorizontalFlipAug(Augmenter):
    """With probability p, mirror left-right."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src):
        return nd.flip(src, axis=1) if random.random() < self.p else src


class CastAug(Augmenter):
    """Cast to `typ` (float32)."""

    def __init__(self, typ='float32'):
        super().__init__(type=typ)
        self.typ = typ

    def __call__(self, src):
        return src.astype(self.typ)


def CreateAugmenter(data_shape, resize=0, rand_crop=False, rand_resize=False,  # noqa: N802
                    rand_mirror=False, mean=None, std=None, brightness=0, contrast=0,
                    saturation=0, hue=0, pca_noise=0, rand_gray=0, inter_method=2):
    """The standard augmenter list for data_shape (c, h, w): resize, crop, mirror, cast,
    colour jitter, hue, PCA noise, grey, normalisation (mean/std True: ImageNet's)."""
    augs = []
    if resize > 0:
        augs.append(ResizeAug(resize, inter_method))
    crop = (data_shape[2], data_shape[1])
    if rand_resize:
        if not rand_crop:
            raise ValueError('rand_resize needs rand_crop')
        augs.append(RandomSizedCropAug(crop, 0.08, (3.0 / 4.0, 4.0 / 3.0), inter_method))
    elif rand_crop:
        augs.append(RandomCropAug(crop, inter_method))
    else:
        augs.append(CenterCropAug(crop, inter_method))
    if rand_mirror:
        augs.append(HorizontalFlipAug(0.5))
    augs.append(CastAug())
    if brightness or contrast or saturation:
        augs.append(ColorJitterAug(brightness, contrast, saturation))
    if hue:
        augs.append(HueJitterAug(hue))
    if pca_noise > 0:
        augs.append(LightingAug(pca_noise, _EIGVAL, _EIGVEC))
    if rand_gray > 0:
        augs.append(RandomGrayAug(rand_gray))
    mean = nd.array([123.68, 116.28, 103.53]) if mean is True else _check_stat('mean', mean)
    std = nd.array([58.395, 57.12, 57.375]) if std is True else _check_stat('std', std)
    if mean is not None or std is not None:
        augs.append(ColorNormalizeAug(mean, std))
    return augs


def _check_stat(name, value):
    if value is not None and not (isinstance(value, (np.ndarray, nd.NDArray))
                                  and value.shape[0] in (1, 3)):
        raise ValueError('%s must be True, None or an array of 1 or 3 values' % name)
    return value


# ---------------------------------------------------------------------------------------------
# ImageIter
# ---------------------------------------------------------------------------------------------
class ImageIter(io.DataIter):
    """Batches of augmented images from a RecordIO file (path_imgrec, with path_imgidx for
    random access), an image list file (path_imglist: `index<TAB>label...<TAB>path` lines) or
    a Python list (imglist: [label(s)..., path]) with images under path_root.

    last_batch_handle: 'pad' (fill the last batch from the start), 'discard', or 'roll_over'
    (the short last batch is completed by the next epoch's first images). Extra keyword
    arguments go to CreateAugmenter when aug_list is None."""

    def __init__(self, batch_size, data_shape, label_width=1, path_imgrec=None,
                 path_imglist=None, path_root=None, path_imgidx=None, shuffle=False,
                 part_index=0, num_parts=1, aug_list=None, imglist=None, data_name='data',
                 label_name='softmax_label', dtype='float32', last_batch_handle='pad',
                 **kwargs):
        super().__init__(batch_size)
        if not (path_imgrec or path_imglist or isinstance(imglist, list)):
            raise ValueError('ImageIter needs path_imgrec, path_imglist or an imglist list')
        if dtype not in ('int32', 'float32', 'int64', 'float64'):
            raise ValueError('%s label not supported' % dtype)
        if last_batch_handle not in ('pad', 'discard', 'roll_over'):
            raise ValueError('last_batch_handle must be pad, discard or roll_over, got %s'
                             % last_batch_handle)
        self.imgrec, self.imgidx = None, None
        if path_imgrec:
            if path_imgidx:
                self.imgrec = recordio.MXIndexedRecordIO(path_imgidx, path_imgrec, 'r')
                self.imgidx = list(self.imgrec.keys)
            else:
                self.imgrec = recordio.MXRecordIO(path_imgrec, 'r')
        keys = None
        self.imglist = None
        if path_imglist:
            self.imglist, keys = {}, []
            with open(path_imglist) as fin:
                for line in fin:
                    fields = line.strip().split('\t')
                    if len(fields) < 2:
                        continue
                    key = int(fields[0])
                    self.imglist[key] = (nd.array(fields[1:-1], dtype=dtype), fields[-1])
                    keys.append(key)
        elif isinstance(imglist, list):
            self.imglist, keys = {}, []
            for i, item in enumerate(imglist):
                key = str(i + 1)
                if len(item) > 2:
                    label = nd.array(item[:-1], dtype=dtype)
                elif isinstance(item[0], numbers.Number):
                    label = nd.array([item[0]], dtype=dtype)
                else:
                    label = nd.array(item[0], dtype=dtype)
                self.imglist[key] = (label, item[-1])
                keys.append(key)
        self.path_root = path_root
        self.check_data_shape(data_shape)
        self.provide_data = [io.DataDesc(data_name, (batch_size,) + tuple(data_shape))]
        label_shape = (batch_size, label_width) if label_width > 1 else (batch_size,)
        self.provide_label = [io.DataDesc(label_name, label_shape)]
        self.batch_size, self.data_shape = batch_size, tuple(data_shape)
        self.label_width, self.shuffle = label_width, shuffle
        if self.imgrec is None:
            self.seq = keys
        elif shuffle or num_parts > 1 or path_imgidx:
            if self.imgidx is None:
                raise ValueError('shuffle or num_parts > 1 need path_imgidx')
            self.seq = self.imgidx
        else:
            self.seq = None
        if num_parts > 1:
            if not 0 <= part_index < num_parts:
                raise ValueError('part_index %d out of range for num_parts %d'
                                 % (part_index, num_parts))
            per = len(self.seq) // num_parts
            self.seq = self.seq[part_index * per:(part_index + 1) * per]
        self.auglist = CreateAugmenter(data_shape, **kwargs) if aug_list is None else aug_list
        self.cur = 0
        self._allow_read = True
        self.last_batch_handle = last_batch_handle
        self.num_image = len(self.seq) if self.seq is not None else None
        self._cache = None          # (data, label, filled) of a rolled-over short batch
        self.reset()

    def reset(self):
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.last_batch_handle != 'roll_over' or self._cache is None:
            if self.imgrec is not None:
                self.imgrec.reset()
            self.cur = 0
            self._allow_read = True

    def hard_reset(self):
        """Reset, dropping a rolled-over partial batch."""
        if self.seq is not None and self.shuffle:
            random.shuffle(self.seq)
        if self.imgrec is not None:
            self.imgrec.reset()
        self.cur = 0
        self._allow_read = True
        self._cache = None

    def next_sample(self):
        """(label, encoded image bytes) of the next image; StopIteration at the end."""
        if not self._allow_read:
            raise StopIteration
        if self.seq is None:
            record = self.imgrec.read()
            if record is None:
                if self.last_batch_handle != 'discard':
                    self.imgrec.reset()
                raise StopIteration
            header, img = recordio.unpack(record)
            return header.label, img
        if self.cur >= self.num_image:
            if self.last_batch_handle != 'discard':
                self.cur = 0
            raise StopIteration
        idx = self.seq[self.cur]
        self.cur += 1
        if self.imgrec is not None:
            header, img = recordio.unpack(self.imgrec.read_idx(idx))
            return (header.label if self.imglist is None else self.imglist[idx][0]), img
        label, fname = self.imglist[idx]
        return label, self.read_image(fname)

    def _batchify(self, data, label, start=0):
        """Fill data/label from slot `start`; the number of slots filled."""
        i = start
        try:
            while i < self.batch_size:
                lab, raw = self.next_sample()
                img = self.imdecode(raw)
                try:
                    self.check_valid_image(img)
                except RuntimeError as err:
                    logging.debug('Invalid image, skipping: %s', err)
                    continue
                img = self.augmentation_transform(img)
                data[i] = self.postprocess_data(img)
                label[i] = lab
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def next(self):
        if self._cache is not None:
            data, label, filled = self._cache
        else:
            data, label = self._new_batch()
            filled = self._batchify(data, label)
        pad = self.batch_size - filled
        if pad:
            if self.last_batch_handle == 'discard':
                raise StopIteration
            if self.last_batch_handle == 'roll_over' and self._cache is None:
                self._cache = (data, label, filled)
                raise StopIteration
            self._batchify(data, label, filled)
            if self.last_batch_handle == 'pad':
                self._allow_read = False
            else:
                self._cache = None
        return io.DataBatch([data], [label], pad=pad)

    def _new_batch(self):
        """The (data, label) arrays a batch is filled into."""
        c, h, w = self.data_shape
        return nd.zeros((self.batch_size, c, h, w)), nd.empty(self.provide_label[0].shape)

    def check_data_shape(self, data_shape):
        if len(data_shape) != 3:
            raise ValueError('data_shape should have length 3, with dimensions CxHxW')
        if data_shape[0] != 3:
            raise ValueError('This iterator expects inputs to have 3 channels.')

    def check_valid_image(self, data):
        if len(data[0].shape) == 0:
            raise RuntimeError('Data shape is wrong')

    def imdecode(self, s):
        """Decode one image; a RuntimeError naming the image when it is broken."""
        try:
            return imdecode(s)
        except (MXNetError, ValueError) as err:
            where = self.cur % self.num_image - 1 if self.num_image else self.cur - 1
            idx = self.seq[where] if self.seq is not None else where
            name = 'filename: %s' % self.imglist[idx][1] if self.imglist is not None \
                else 'index: %s' % idx
            raise RuntimeError('Broken image %s, %s' % (name, err)) from None

    def read_image(self, fname):
        with open(os.path.join(self.path_root or '', fname), 'rb') as fin:
            return fin.read()

    def augmentation_transform(self, data):
        for aug in self.auglist:
            data = aug(data)
        return data

    def postprocess_data(self, datum):
        return nd.transpose(datum, axes=(2, 0, 1))

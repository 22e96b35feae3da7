"""gluon.data.vision.transforms: image transforms as Blocks (HWC images in, CHW after ToTensor).

The hybridizable ones run the mx.nd.image / mx.sym.image operators; the others (crops, rotation)
use mx.image on NDArrays.
"""
import random

import numpy as np

from .... import image
from ....base import numeric_types
from ...block import Block, HybridBlock
from ...nn import Sequential, HybridSequential

__all__ = ['Compose', 'Cast', 'ToTensor', 'Normalize', 'Rotate', 'RandomRotation',
           'RandomResizedCrop', 'CropResize', 'CenterCrop', 'Resize', 'RandomFlipLeftRight',
           'RandomFlipTopBottom', 'RandomBrightness', 'RandomContrast', 'RandomSaturation',
           'RandomHue', 'RandomColorJitter', 'RandomLighting', 'RandomApply']


class Compose(Sequential):
    """The transforms in sequence; runs of consecutive HybridBlocks are hybridized together."""

    def __init__(self, transforms):
        super().__init__()
        run = []
        for t in list(transforms) + [None]:
            if isinstance(t, HybridBlock):
                run.append(t)
                continue
            if len(run) == 1:
                self.add(run[0])
            elif run:
                chain = HybridSequential()
                for h in run:
                    chain.add(h)
                chain.hybridize()
                self.add(chain)
            run = []
            if t is not None:
                self.add(t)


class Cast(HybridBlock):
    """Cast to dtype."""

    def __init__(self, dtype='float32'):
        super().__init__()
        self._dtype = dtype

    def hybrid_forward(self, F, x):
        return F.cast(x, self._dtype)


class ToTensor(HybridBlock):
    """HWC (or NHWC) [0, 255] to CHW (NCHW) float32 in [0, 1]."""

    def hybrid_forward(self, F, x):
        return F.image.to_tensor(x)


class Normalize(HybridBlock):
    """(x - mean) / std per channel of CHW (NCHW) tensors."""

    def __init__(self, mean=0.0, std=1.0):
        super().__init__()
        self._mean, self._std = mean, std

    def hybrid_forward(self, F, x):
        return F.image.normalize(x, self._mean, self._std)


def _require_float32(x):
    if x.dtype != np.float32:
        raise TypeError('This transformation only supports float32. Consider calling it after '
                        'ToTensor')


class Rotate(Block):
    """Rotate CHW (NCHW) float32 images by rotation_degrees (see mx.image.imrotate)."""

    def __init__(self, rotation_degrees, zoom_in=False, zoom_out=False):
        super().__init__()
        self._args = (rotation_degrees, zoom_in, zoom_out)

    def forward(self, x):
        _require_float32(x)
        return image.imrotate(x, *self._args)


class RandomRotation(Block):
    """Rotate by an angle drawn from angle_limits, with probability rotate_with_proba."""

    def __init__(self, angle_limits, zoom_in=False, zoom_out=False, rotate_with_proba=1.0):
        super().__init__()
        lower, upper = angle_limits
        if lower >= upper:
            raise ValueError('`angle_limits` must be an ordered tuple')
        if not 0 <= rotate_with_proba <= 1:
            raise ValueError('Probability of rotating the image should be between 0 and 1')
        self._args = (angle_limits, zoom_in, zoom_out)
        self._proba = rotate_with_proba

    def forward(self, x):
        if np.random.random() > self._proba:
            return x
        _require_float32(x)
        return image.random_rotate(x, *self._args)


def _pair(size):
    return (size, size) if isinstance(size, numeric_types) else size


class RandomResizedCrop(Block):
    """A random crop (area fraction in scale, aspect ratio in ratio) resized to size."""

    def __init__(self, size, scale=(0.08, 1.0), ratio=(3.0 / 4.0, 4.0 / 3.0), interpolation=1):
        super().__init__()
        self._args = (_pair(size), scale, ratio, interpolation)

    def forward(self, x):
        return image.random_size_crop(x, *self._args)[0]


class CropResize(HybridBlock):
    """Crop (x, y, width, height), then resize to size (w, h) when given."""

    def __init__(self, x, y, width, height, size=None, interpolation=None):
        super().__init__()
        self._box = (x, y, width, height)
        self._size, self._interpolation = size, interpolation

    def hybrid_forward(self, F, x):
        out = F.image.crop(x, *self._box)
        if self._size:
            out = F.image.resize(out, self._size, False, self._interpolation)
        return out


class CenterCrop(Block):
    """The central crop of size (w, h), scaled down to fit and resized to size."""

    def __init__(self, size, interpolation=1):
        super().__init__()
        self._args = (_pair(size), interpolation)

    def forward(self, x):
        return image.center_crop(x, *self._args)[0]


class Resize(HybridBlock):
    """Resize to size (w, h), or the shorter edge to size with keep_ratio."""

    def __init__(self, size, keep_ratio=False, interpolation=1):
        super().__init__()
        self._size, self._keep, self._interpolation = size, keep_ratio, interpolation

    def hybrid_forward(self, F, x):
        return F.image.resize(x, self._size, self._keep, self._interpolation)


class _Unary(HybridBlock):
    _op = None

    def hybrid_forward(self, F, x):
        return getattr(F.image, self._op)(x)


class RandomFlipLeftRight(_Unary):
    """Mirror left-right with probability 0.5."""
    _op = 'random_flip_left_right'


class RandomFlipTopBottom(_Unary):
    """Flip top-bottom with probability 0.5."""
    _op = 'random_flip_top_bottom'


class _Factor(HybridBlock):
    _op = None

    def __init__(self, amount):
        super().__init__()
        self._args = (max(0, 1 - amount), 1 + amount)

    def hybrid_forward(self, F, x):
        return getattr(F.image, self._op)(x, *self._args)


class RandomBrightness(_Factor):
    """Scale brightness by a factor in [max(0, 1 - brightness), 1 + brightness]."""
    _op = 'random_brightness'


class RandomContrast(_Factor):
    """Contrast factor in [max(0, 1 - contrast), 1 + contrast]."""
    _op = 'random_contrast'


class RandomSaturation(_Factor):
    """Saturation factor in [max(0, 1 - saturation), 1 + saturation]."""
    _op = 'random_saturation'


class RandomHue(_Factor):
    """Hue factor in [max(0, 1 - hue), 1 + hue]."""
    _op = 'random_hue'


class RandomColorJitter(HybridBlock):
    """Brightness, contrast, saturation and hue jitter in a random order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0):
        super().__init__()
        self._args = (brightness, contrast, saturation, hue)

    def hybrid_forward(self, F, x):
        return F.image.random_color_jitter(x, *self._args)


class RandomLighting(HybridBlock):
    """AlexNet-style PCA lighting noise with standard deviation alpha."""

    def __init__(self, alpha):
        super().__init__()
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.image.random_lighting(x, self._alpha)


class RandomApply(Sequential):
    """Apply `transforms` with probability p."""

    def __init__(self, transforms, p=0.5):
        super().__init__()
        self.transforms, self.p = transforms, p

    def forward(self, x):
        if self.p < random.random():
            return x
        return self.transforms(x)

"""The default detection augmentation of ImageDetRecordIter, on one HWC RGB uint8 image and its
raw record label ([header_width, object_width, extra header..., objects...], boxes normalised
to [0, 1]), with a NumPy random generator.

The steps, in MXNet 1.9.1's order and with its parameter meanings:

* `resize` > 0 sets the shorter edge first (`inter_method`);
* colour: with probability `random_hue_prob` / `random_saturation_prob` /
  `random_illumination_prob`, H, S and L (OpenCV's HLS) move by a random whole amount up to
  `max_random_hue` / `_saturation` / `_illumination`; with `random_contrast_prob` the pixels
  are scaled by 1 + u, |u| <= `max_random_contrast` (rounded, saturated to 0..255);
* `rand_mirror_prob`: horizontal flip (x0, x1 -> 1 - x1, 1 - x0);
* `rand_pad_prob` with `max_pad_scale` > 1: a canvas s times the image's size
  (1 <= s <= max_pad_scale; no padding below 1.05) filled with `fill_value`, the image at a
  random spot of it;
* `rand_crop_prob`: the crop samplers (`num_crop_sampler` of them; each `*_crop_*` tuple gives
  one value per sampler, or one for all) are tried in random order; a sampler draws up to
  `max_crop_trials` boxes of side scale in [min, max]_crop_scales and aspect ratio from
  [min, max]_crop_aspect_ratios (relative to the image's) and takes the first box that keeps an object: objects whose centre is
  outside the box are dropped (crop_emit_mode 'center'), or those with at most
  `emit_overlap_thresh` of their area inside ('overlap'); and, when the sampler sets them
  (min > 0 or max < 1), some object must have its IoU (`*_crop_overlaps`), box coverage
  (`*_crop_sample_coverages`) and object coverage (`*_crop_object_coverages`) with the box
  within those ranges;
* the result fits `data_shape` as `resize_mode` says: 'force' resizes to it, 'fit' scales it,
  keeping its aspect ratio, until it touches data_shape, 'shrink' does so only for an image
  larger than data_shape. The iterator places a smaller result at the top left of a zero image.

Objects with an empty box are dropped when the label is read. Box edges are clipped at 0 (left,
top) and 1 (right, bottom) when the image is cropped or padded.
The random draws are NumPy's, not MXNet's (its C++ random stream cannot be reproduced).
"""
import ast

import numpy as np

from ..base import MXNetError

_SAMPLER_KEYS = ('min_crop_scales', 'max_crop_scales', 'min_crop_aspect_ratios',
                 'max_crop_aspect_ratios', 'min_crop_overlaps', 'max_crop_overlaps',
                 'min_crop_sample_coverages', 'max_crop_sample_coverages',
                 'min_crop_object_coverages', 'max_crop_object_coverages', 'max_crop_trials')


def _cv2():
    from ..ops.image import cv2
    return cv2()


def _inter(method, rng, old, new):
    """OpenCV interpolation flag of inter_method (9: by direction, 10: random)."""
    if method == 9:
        if new[0] > old[0] and new[1] > old[1]:
            return 2
        return 3 if new[0] < old[0] and new[1] < old[1] else 1
    return int(rng.randint(0, 5)) if method == 10 else method


def resize(img, width, height, method, rng):
    out = _cv2().resize(img, (int(width), int(height)),
                        interpolation=_inter(method, rng, img.shape[:2], (height, width)))
    return out.reshape(int(height), int(width), -1)


def _floats(value, name):
    """The list of numbers of a tuple parameter, given as numbers or as their text."""
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value.strip() or '()')
        except (ValueError, SyntaxError):
            raise MXNetError("ImageDetRecordIter: Invalid Parameter format for %s expect "
                             "tuple of <float> but value='%s'" % (name, value)) from None
    return [float(v) for v in np.atleast_1d(value)]


def _intersections(box, boxes):
    """Areas of the intersections of `box` (x0, y0, x1, y1) with each row of `boxes`."""
    w = np.clip(np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0]), 0, None)
    h = np.clip(np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1]), 0, None)
    return w * h


class DetLabel:
    """The raw label of one record: its header and an (n, object_width) object table."""

    def __init__(self, raw):
        raw = np.asarray(raw, dtype=np.float32)
        head = int(raw[0]) if raw.size else 0
        width = int(raw[1]) if raw.size > 1 else 0
        if raw.size < 7 or head < 2 or width < 5 or (raw.size - head) % width:
            raise MXNetError('ImageDetRecordIter: a label is [header_width >= 2, object_width '
                             '>= 5, extra header..., objects...] with at least one object, got '
                             '%d values %s' % (raw.size, raw[:8].tolist()))
        self.header = raw[:head].copy()
        objects = raw[head:].reshape(-1, width)
        valid = (objects[:, 3] > objects[:, 1]) & (objects[:, 4] > objects[:, 2])
        self.objects = objects[valid].copy()

    def boxes(self):
        return self.objects[:, 1:5]

    def to_array(self):
        return np.concatenate([self.header, self.objects.ravel()]).astype(np.float32)

    def mirror(self):
        boxes = self.boxes()
        boxes[:, [0, 2]] = 1 - boxes[:, [2, 0]]

    def project(self, box):
        """Express the boxes in the frame of `box` (x0, y0, x1, y1): left/top clipped at 0,
        right/bottom at 1."""
        boxes = self.boxes()
        bw, bh = box[2] - box[0], box[3] - box[1]
        boxes[:, 0] = np.maximum(0, (boxes[:, 0] - box[0]) / bw)
        boxes[:, 1] = np.maximum(0, (boxes[:, 1] - box[1]) / bh)
        boxes[:, 2] = np.minimum(1, (boxes[:, 2] - box[0]) / bw)
        boxes[:, 3] = np.minimum(1, (boxes[:, 3] - box[1]) / bh)

    def try_crop(self, box, s, emit_mode, emit_thresh):
        """Crop to `box` when sampler `s` accepts it; False (nothing changed) otherwise."""
        boxes = self.boxes()
        if len(boxes) == 0:
            return True
        inter = _intersections(box, boxes)
        gt_area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
        bounds = [(s['min_crop_%s' % k], s['max_crop_%s' % k])
                  for k in ('overlaps', 'sample_coverages', 'object_coverages')]
        if any(lo > 0 or hi < 1 for lo, hi in bounds):
            area = (box[2] - box[0]) * (box[3] - box[1])
            ok = np.ones(len(boxes), bool)
            for value, (lo, hi) in zip((inter / (area + gt_area - inter), inter / area,
                                        inter / gt_area), bounds):
                if lo > 0 or hi < 1:
                    ok &= (value >= lo) & (value <= hi)
            if not ok.any():
                return False
        if emit_mode == 'center':
            cx, cy = (boxes[:, 0] + boxes[:, 2]) * 0.5, (boxes[:, 1] + boxes[:, 3]) * 0.5
            keep = (cx >= box[0]) & (cx < box[2]) & (cy >= box[1]) & (cy < box[3])
        else:
            keep = inter / gt_area > emit_thresh
        if not keep.any():
            return False
        self.objects = self.objects[keep]
        self.project(box)
        return True


class DetAugmenter:
    """Callable (img, raw_label, rng) -> (img, raw_label); parameters as in the module doc."""

    def __init__(self, p):
        self.p = p
        if p['resize_mode'] not in ('force', 'fit', 'shrink'):
            raise MXNetError("ImageDetRecordIter: resize_mode must be 'force', 'fit' or "
                             "'shrink', got '%s'" % p['resize_mode'])
        if p['crop_emit_mode'] not in ('center', 'overlap'):
            raise MXNetError("ImageDetRecordIter: crop_emit_mode must be 'center' or "
                             "'overlap', got '%s'" % p['crop_emit_mode'])
        if p['emit_overlap_thresh'] < 0:
            raise MXNetError('ImageDetRecordIter: emit_overlap_thresh must be >= 0')
        self.samplers = self._samplers(p)

    @staticmethod
    def _samplers(p):
        count = p['num_crop_sampler']
        values = {}
        for key in _SAMPLER_KEYS:
            vals = _floats(p[key], key)
            if len(vals) == 1 and count > 1:
                vals = vals * count
            if count > 0 and len(vals) != count:
                raise MXNetError('ImageDetRecordIter: %s gives %d values for %d crop samplers'
                                 % (key, len(vals), count))
            values[key] = vals
        samplers = [{key: values[key][i] for key in _SAMPLER_KEYS} for i in range(count)]
        for s in samplers:
            if not (0 <= s['min_crop_scales'] < s['max_crop_scales'] <= 1):
                raise MXNetError('ImageDetRecordIter: crop scales need 0 <= min_crop_scales < '
                                 'max_crop_scales <= 1, got %s, %s'
                                 % (s['min_crop_scales'], s['max_crop_scales']))
            for kind in ('aspect_ratios', 'overlaps', 'sample_coverages', 'object_coverages'):
                lo, hi = s['min_crop_' + kind], s['max_crop_' + kind]
                if hi < lo or (kind == 'aspect_ratios' and lo < 0):
                    raise MXNetError('ImageDetRecordIter: max_crop_%s (%s) is below '
                                     'min_crop_%s (%s)' % (kind, hi, kind, lo))
        return samplers

    def __call__(self, img, raw, rng):
        p = self.p
        label = DetLabel(raw)
        if p['resize'] > 0:
            rows, cols = img.shape[:2]
            n = p['resize']
            if rows > cols:
                img = resize(img, n, n * rows // cols, p['inter_method'], rng)
            else:
                img = resize(img, n * cols // rows, n, p['inter_method'], rng)
        img = self._colour(np.ascontiguousarray(img), rng)
        if p['rand_mirror_prob'] > 0 and rng.uniform() < p['rand_mirror_prob']:
            img = img[:, ::-1]
            label.mirror()
        if p['rand_pad_prob'] > 0 and p['max_pad_scale'] > 1 and \
                rng.uniform() < p['rand_pad_prob']:
            img = self._pad(img, label, rng)
        if p['rand_crop_prob'] > 0 and self.samplers and rng.uniform() < p['rand_crop_prob']:
            img = self._crop(img, label, rng)
        return self._fit(img, rng), label.to_array()

    def _colour(self, img, rng):
        p = self.p
        if max(p['random_hue_prob'], p['random_saturation_prob'],
               p['random_illumination_prob'], p['random_contrast_prob']) <= 0:
            return img
        hue, sat, light, contrast = rng.uniform(-1, 1, 4) * [
            p['max_random_hue'], p['max_random_saturation'], p['max_random_illumination'],
            p['max_random_contrast']]
        use = rng.uniform(size=4) < [p['random_hue_prob'], p['random_saturation_prob'],
                                     p['random_illumination_prob'], p['random_contrast_prob']]
        delta = [int(hue) * use[0], int(light) * use[2], int(sat) * use[1]]     # H, L, S
        contrast = contrast * use[3]
        if any(delta) and img.shape[2] == 3:
            cv2 = _cv2()
            hls = cv2.cvtColor(img, cv2.COLOR_RGB2HLS).astype(np.int32)
            for c, top in ((0, 180), (1, 255), (2, 255)):
                hls[:, :, c] = np.clip(hls[:, :, c] + delta[c], 0, top)
            img = cv2.cvtColor(hls.astype(np.uint8), cv2.COLOR_HLS2RGB)
        if abs(contrast) > 1e-3:
            img = np.clip(np.rint(img.astype(np.float32) * np.float32(1 + contrast)), 0, 255)
            img = img.astype(np.uint8)
        return img

    def _pad(self, img, label, rng):
        scale = rng.uniform(1, self.p['max_pad_scale'])
        if scale < 1.05:
            return img
        x0, y0 = rng.uniform(0, scale - 1, 2)
        rows, cols = img.shape[:2]
        left, top = int(x0 * cols), int(y0 * rows)
        right, bottom = int((scale - x0 - 1) * cols), int((scale - y0 - 1) * rows)
        canvas = np.full((top + rows + bottom, left + cols + right, img.shape[2]),
                         self.p['fill_value'], dtype=img.dtype)
        canvas[top:top + rows, left:left + cols] = img
        label.project((-x0, -y0, scale - x0, scale - y0))
        return canvas

    def _crop(self, img, label, rng):
        rows, cols = img.shape[:2]
        p = self.p
        for i in rng.permutation(len(self.samplers)):
            s = self.samplers[i]
            for _ in range(int(s['max_crop_trials'])):
                x0, y0, w, h = self._crop_box(s, cols / rows, rng)
                if label.try_crop((x0, y0, x0 + w, y0 + h), s, p['crop_emit_mode'],
                                  p['emit_overlap_thresh']):
                    left, top = int(x0 * cols), int(y0 * rows)
                    return img[top:top + max(int(h * rows), 1),
                               left:left + max(int(w * cols), 1)]
        return img

    @staticmethod
    def _crop_box(s, img_ratio, rng):
        """(x0, y0, width, height) of a random box of sampler `s`: width/height ratio r
        uniform within the sampler's range (relative to the image's) and within
        [scale^2, 1/scale^2], side scale * sqrt(r) and scale / sqrt(r), each at most 1."""
        scale = rng.uniform(s['min_crop_scales'], s['max_crop_scales']) + 1e-12
        lo = max(s['min_crop_aspect_ratios'] / img_ratio, scale * scale)
        hi = min(s['max_crop_aspect_ratios'] / img_ratio, 1 / (scale * scale))
        ratio = np.sqrt(lo + (hi - lo) * rng.uniform())
        width, height = min(1.0, scale * ratio), min(1.0, scale / ratio)
        return rng.uniform(0, 1 - width), rng.uniform(0, 1 - height), width, height

    def _fit(self, img, rng):
        _, height, width = self.p['data_shape']
        rows, cols = img.shape[:2]
        mode = self.p['resize_mode']
        if mode == 'force':
            new_h, new_w = height, width
        elif mode == 'shrink' and rows <= height and cols <= width:
            return img
        else:
            ratio = min(np.float32(height) / np.float32(rows),
                        np.float32(width) / np.float32(cols))
            new_h, new_w = int(ratio * np.float32(rows)), int(ratio * np.float32(cols))
        return resize(img, max(new_w, 1), max(new_h, 1), self.p['inter_method'], rng)

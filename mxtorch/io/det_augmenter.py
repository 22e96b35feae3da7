"""The default detection augmentation of ImageDetRecordIter, on one HWC RGB uint8 image and its
raw record label ([header_width, object_width, extra header..., objects...], boxes normalised
to [0, 1]), with a NumPy random generator.

The steps, in MXNet 1.9.1's order and with its parameter meanings:

* `resize` > 0 sets the shorter edge first (`inter_method`);
* `rand_mirror_prob`: horizontal flip (x0, x1 -> 1 - x1, 1 - x0);
* `rand_pad_prob` with `max_pad_scale` > 1: the image is placed at a random spot of a canvas up
  to `max_pad_scale` times its size, filled with `fill_value`;
* `rand_crop_prob`: the crop samplers (`num_crop_sampler` of them; each `*_crop_*` tuple gives
  one value per sampler, or one for all) are tried in random order; a sampler draws up to
  `max_crop_trials` boxes of side scale in [min, max]_crop_scales and aspect ratio in
  [min, max]_crop_aspect_ratios, and takes the first one for which some object satisfies the
  IoU (`*_crop_overlaps`), box-coverage (`*_crop_sample_coverages`) and object-coverage
  (`*_crop_object_coverages`) ranges and that keeps at least one object: objects are dropped
  when their centre is outside the box (crop_emit_mode 'center') or when less than
  `emit_overlap_thresh` of them is inside ('overlap'); the others are clipped to the box;
* colour: `random_hue_prob` / `random_saturation_prob` / `random_illumination_prob` shift
  H, S and L by a random amount up to `max_random_hue` / `_saturation` / `_illumination`;
  `random_contrast_prob` scales the pixels by 1 + u, |u| <= `max_random_contrast`;
* the result fits `data_shape` as `resize_mode` says: 'force' resizes to it, 'fit' scales it,
  keeping its aspect ratio, until it touches data_shape, 'shrink' does so only for an image
  larger than data_shape. The iterator places a smaller result at the top left of a zero image.

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


def _iou_parts(box, boxes):
    """intersection areas of `box` (x0, y0, x1, y1) with each row of `boxes`."""
    w = np.clip(np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0]), 0, None)
    h = np.clip(np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1]), 0, None)
    return w * h


class DetLabel:
    """The raw label of one record: its header and an (n, object_width) object table."""

    def __init__(self, raw):
        raw = np.asarray(raw, dtype=np.float32)
        if raw.size < 2:
            raise MXNetError('ImageDetRecordIter: a label needs at least a header width and an '
                             'object width, got %d values' % raw.size)
        head, width = int(raw[0]), int(raw[1])
        if head < 2 or width < 5 or (raw.size - head) % width:
            raise MXNetError('ImageDetRecordIter: label of %d values does not hold a %d-value '
                             'header and %d-value objects' % (raw.size, head, width))
        self.header = raw[:head].copy()
        self.objects = raw[head:].reshape(-1, width).copy()

    def boxes(self):
        return self.objects[:, 1:5]

    def to_array(self):
        return np.concatenate([self.header, self.objects.ravel()]).astype(np.float32)

    def mirror(self):
        boxes = self.boxes()
        boxes[:, [0, 2]] = 1 - boxes[:, [2, 0]]

    def project(self, box):
        """Express the boxes in the frame of `box` (x0, y0, x1, y1), clipped to it."""
        boxes = self.boxes()
        bw, bh = box[2] - box[0], box[3] - box[1]
        boxes[:, [0, 2]] = np.clip((boxes[:, [0, 2]] - box[0]) / bw, 0, 1)
        boxes[:, [1, 3]] = np.clip((boxes[:, [1, 3]] - box[1]) / bh, 0, 1)

    def try_crop(self, box, s, emit_mode, emit_thresh):
        """Crop to `box` when sampler `s` accepts it; False (nothing changed) otherwise."""
        boxes = self.boxes()
        if len(boxes) == 0:
            return True
        inter = _iou_parts(box, boxes)
        area = (box[2] - box[0]) * (box[3] - box[1])
        gt_area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
        ok = np.ones(len(boxes), bool)
        for value, lo, hi in ((inter / np.maximum(area + gt_area - inter, 1e-12),
                               s['min_crop_overlaps'], s['max_crop_overlaps']),
                              (inter / max(area, 1e-12),
                               s['min_crop_sample_coverages'], s['max_crop_sample_coverages']),
                              (inter / np.maximum(gt_area, 1e-12),
                               s['min_crop_object_coverages'], s['max_crop_object_coverages'])):
            if lo > 0 or hi < 1:
                ok &= (value >= lo) & (value <= hi)
        if not ok.any():
            return False
        if emit_mode == 'center':
            cx, cy = (boxes[:, 0] + boxes[:, 2]) / 2, (boxes[:, 1] + boxes[:, 3]) / 2
            keep = (cx >= box[0]) & (cx < box[2]) & (cy >= box[1]) & (cy < box[3])
        else:
            keep = inter / np.maximum(gt_area, 1e-12) > emit_thresh
        if not keep.any():
            return False
        self.objects = self.objects[keep]
        self.project(box)
        return True


class DetAugmenter:
    """Callable (img, raw_label, rng) -> (img, raw_label); parameters as in the module doc."""

    def __init__(self, p):
        self.p = p
        self.samplers = self._samplers(p)

    @staticmethod
    def _samplers(p):
        count = p['num_crop_sampler']
        values = {}
        for key in _SAMPLER_KEYS:
            vals = _floats(p[key], key)
            if len(vals) == 1:
                vals = vals * count
            if len(vals) != count:
                raise MXNetError('ImageDetRecordIter: %s gives %d values for %d crop samplers'
                                 % (key, len(vals), count))
            values[key] = vals
        return [{key: values[key][i] for key in _SAMPLER_KEYS} for i in range(count)]

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
        if p['rand_mirror_prob'] > 0 and rng.uniform() < p['rand_mirror_prob']:
            img = img[:, ::-1]
            label.mirror()
        if p['rand_pad_prob'] > 0 and p['max_pad_scale'] > 1 and \
                rng.uniform() < p['rand_pad_prob']:
            img = self._pad(img, label, rng)
        if p['rand_crop_prob'] > 0 and self.samplers and rng.uniform() < p['rand_crop_prob']:
            img = self._crop(img, label, rng)
        img = self._colour(np.ascontiguousarray(img), rng)
        return self._fit(img, rng), label.to_array()

    def _pad(self, img, label, rng):
        rows, cols = img.shape[:2]
        scale = rng.uniform(1, self.p['max_pad_scale'])
        width, height = int(cols * scale), int(rows * scale)
        left = int(rng.randint(0, width - cols + 1))
        top = int(rng.randint(0, height - rows + 1))
        fill = self.p['fill_value']
        canvas = np.full((height, width, img.shape[2]), fill, dtype=img.dtype)
        canvas[top:top + rows, left:left + cols] = img
        label.project((-left / cols, -top / rows, (width - left) / cols, (height - top) / rows))
        return canvas

    def _crop(self, img, label, rng):
        rows, cols = img.shape[:2]
        p = self.p
        for i in rng.permutation(len(self.samplers)):
            s = self.samplers[i]
            for _ in range(int(s['max_crop_trials'])):
                box = self._crop_box(s, cols / rows, rng)
                x0, y0 = int(box[0] * cols), int(box[1] * rows)
                x1, y1 = int(box[2] * cols), int(box[3] * rows)
                if x1 <= x0 or y1 <= y0:
                    continue
                if label.try_crop(box, s, p['crop_emit_mode'], p['emit_overlap_thresh']):
                    return img[y0:y1, x0:x1]
        return img

    @staticmethod
    def _crop_box(s, img_ratio, rng):
        scale = rng.uniform(s['min_crop_scales'], s['max_crop_scales'])
        lo = max(s['min_crop_aspect_ratios'] / img_ratio, scale * scale)
        hi = min(s['max_crop_aspect_ratios'] / img_ratio, 1 / max(scale * scale, 1e-12))
        ratio = np.sqrt(rng.uniform(lo, hi) if hi > lo else lo)
        width, height = min(1.0, scale * ratio), min(1.0, scale / ratio)
        x0, y0 = rng.uniform(0, 1 - width), rng.uniform(0, 1 - height)
        return (x0, y0, x0 + width, y0 + height)

    def _colour(self, img, rng):
        p = self.p
        delta = [0, 0, 0]     # H, L, S
        for slot, prob, most in ((0, 'random_hue_prob', 'max_random_hue'),
                                 (2, 'random_saturation_prob', 'max_random_saturation'),
                                 (1, 'random_illumination_prob', 'max_random_illumination')):
            if p[prob] > 0 and rng.uniform() < p[prob]:
                delta[slot] = int(rng.uniform(-1, 1) * p[most])
        if any(delta) and img.shape[2] == 3:
            cv2 = _cv2()
            hls = cv2.cvtColor(img, cv2.COLOR_RGB2HLS).astype(np.int32)
            for c, top in ((0, 180), (1, 255), (2, 255)):
                hls[:, :, c] = np.clip(hls[:, :, c] + delta[c], 0, top)
            img = cv2.cvtColor(hls.astype(np.uint8), cv2.COLOR_HLS2RGB)
        if p['random_contrast_prob'] > 0 and rng.uniform() < p['random_contrast_prob']:
            alpha = 1 + rng.uniform(-p['max_random_contrast'], p['max_random_contrast'])
            img = np.clip(np.rint(img.astype(np.float32) * alpha), 0, 255).astype(np.uint8)
        return img

    def _fit(self, img, rng):
        _, height, width = self.p['data_shape']
        rows, cols = img.shape[:2]
        mode = self.p['resize_mode']
        if mode == 'force' or (rows, cols) == (height, width):
            new_h, new_w = height, width
        elif mode == 'shrink' and rows <= height and cols <= width:
            return img
        elif width * rows < height * cols:         # width is the tighter side
            new_h, new_w = int(rows * width / cols), width
        else:
            new_h, new_w = height, int(cols * height / rows)
        if (new_h, new_w) == (rows, cols):
            return img
        return resize(img, max(new_w, 1), max(new_h, 1), self.p['inter_method'], rng)

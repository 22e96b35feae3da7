"""mx.image.detection (also mx.image.det): augmenters that transform an image together with its
object boxes, and ImageDetIter, the detection iterator.

A label is an (objects, width >= 5) float array, one row per object: class id, then xmin, ymin,
xmax, ymax as fractions of the image's width and height, then any extra columns. A raw label
(as stored in .lst files, RecordIO headers or imglist entries) is
`header_width, object_width, [more header...], object rows...` and is parsed into that array.

Random choices use Python's `random` in the order MXNet's Python code makes them, so that a
seeded `random` gives MXNet's crops, pads and flips.
"""
import json
import logging
import math
import random
import warnings

import numpy as np

from .. import io
from .. import ndarray as nd
from .image import (_EIGVAL, _EIGVEC, Augmenter, CastAug, ColorJitterAug, ColorNormalizeAug,
                    ForceResizeAug, HueJitterAug, ImageIter, LightingAug, RandomGrayAug,
                    ResizeAug, _check_stat, copyMakeBorder, fixed_crop)

__all__ = ['DetAugmenter', 'DetBorrowAug', 'DetRandomSelectAug', 'DetHorizontalFlipAug',
           'DetRandomCropAug', 'DetRandomPadAug', 'CreateMultiRandCropAugmenter',
           'CreateDetAugmenter', 'ImageDetIter']


# ---------------------------------------------------------------------------------------------
# augmenters
# ---------------------------------------------------------------------------------------------
class DetAugmenter:
    """Base class: __call__(src, label) -> (src, label)."""

    def __init__(self, **kwargs):
        self._kwargs = {k: v.asnumpy().tolist() if isinstance(v, nd.NDArray)
                        else v.tolist() if isinstance(v, np.ndarray) else v
                        for k, v in kwargs.items()}

    def dumps(self):
        """The augmenter as a JSON string: [class name in lower case, its arguments]."""
        return json.dumps([type(self).__name__.lower(), self._kwargs])

    def __call__(self, src, label):
        raise NotImplementedError('Must override implementation.')


class DetBorrowAug(DetAugmenter):
    """A classification Augmenter used for detection: the image changes, the boxes do not."""

    def __init__(self, augmenter):
        if not isinstance(augmenter, Augmenter):
            raise TypeError('Borrowing from invalid Augmenter')
        super().__init__(augmenter=augmenter.dumps())
        self.augmenter = augmenter

    def dumps(self):
        return [type(self).__name__.lower(), self.augmenter.dumps()]

    def __call__(self, src, label):
        return self.augmenter(src), label


class DetRandomSelectAug(DetAugmenter):
    """One augmenter of aug_list, picked at random; none with probability skip_prob."""

    def __init__(self, aug_list, skip_prob=0):
        super().__init__(skip_prob=skip_prob)
        aug_list = list(aug_list) if isinstance(aug_list, (list, tuple)) else [aug_list]
        if not all(isinstance(a, DetAugmenter) for a in aug_list):
            raise ValueError('Allow DetAugmenter in list only')
        self.aug_list = aug_list
        self.skip_prob = skip_prob if aug_list else 1

    def dumps(self):
        return [type(self).__name__.lower(), [a.dumps() for a in self.aug_list]]

    def __call__(self, src, label):
        if random.random() < self.skip_prob:
            return src, label
        random.shuffle(self.aug_list)
        return self.aug_list[0](src, label)


class DetHorizontalFlipAug(DetAugmenter):
    """With probability p, mirror the image left-right and the boxes with it."""

    def __init__(self, p):
        super().__init__(p=p)
        self.p = p

    def __call__(self, src, label):
        if random.random() < self.p:
            src = nd.flip(src, axis=1)
            self._flip_label(label)
        return src, label

    @staticmethod
    def _flip_label(label):
        """xmin, xmax <- 1 - xmax, 1 - xmin, in place."""
        label[:, 1], label[:, 3] = 1.0 - label[:, 3], 1.0 - label[:, 1]


def _as_range(value, what, owner):
    if isinstance(value, (tuple, list)):
        return tuple(value)
    logging.info('Using fixed %s: %s in %s', what, value, owner)
    return (value, value)


def _box_areas(boxes):
    """Areas of (xmin, ymin, xmax, ymax, ...) rows; 0 for empty boxes."""
    return np.maximum(0, boxes[:, 2] - boxes[:, 0]) * np.maximum(0, boxes[:, 3] - boxes[:, 1])


def _proposal_heights(area, ratio):
    return int(round(math.sqrt(area / ratio)))


class DetRandomCropAug(DetAugmenter):
    """Crop a random region (its aspect ratio and area fraction within the ranges) that covers
    more than min_object_covered of every box it touches; boxes left with no more than
    min_eject_coverage of their area are dropped. Up to max_attempts tries, else no crop."""

    def __init__(self, min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33),
                 area_range=(0.05, 1.0), min_eject_coverage=0.3, max_attempts=50):
        aspect_ratio_range = _as_range(aspect_ratio_range, 'aspect ratio', 'DetRandomCropAug')
        area_range = _as_range(area_range, 'area range', 'DetRandomCropAug')
        super().__init__(min_object_covered=min_object_covered,
                         aspect_ratio_range=aspect_ratio_range, area_range=area_range,
                         min_eject_coverage=min_eject_coverage, max_attempts=max_attempts)
        self.min_object_covered = min_object_covered
        self.min_eject_coverage = min_eject_coverage
        self.max_attempts = max_attempts
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = area_range
        self.enabled = False
        if area_range[1] <= 0 or area_range[0] > area_range[1]:
            warnings.warn('Skip DetRandomCropAug due to invalid area_range: %s' % (area_range,))
        elif aspect_ratio_range[0] > aspect_ratio_range[1] or aspect_ratio_range[0] <= 0:
            warnings.warn('Skip DetRandomCropAug due to invalid aspect_ratio_range: %s'
                          % (aspect_ratio_range,))
        else:
            self.enabled = True

    def __call__(self, src, label):
        crop = self._random_crop_proposal(label, src.shape[0], src.shape[1])
        if crop:
            x, y, w, h, label = crop
            src = fixed_crop(src, x, y, w, h, None)
        return src, label

    def _covers_enough(self, label, x0, y0, x1, y1, width, height):
        """Whether the crop (pixels) covers more than min_object_covered of each box it meets."""
        if (x1 - x0) * (y1 - y0) < 2:
            return False
        boxes = label[:, 1:]
        areas = _box_areas(boxes)
        boxes, areas = boxes[areas * width * height > 2], areas[areas * width * height > 2]
        if not len(boxes):
            return False
        left = np.maximum(boxes[:, 0], x0 / width)
        right = np.minimum(boxes[:, 2], x1 / width)
        top = np.maximum(boxes[:, 1], y0 / height)
        bottom = np.minimum(boxes[:, 3], y1 / height)
        inter = np.where((left < right) & (top < bottom), (right - left) * (bottom - top), 0)
        coverage = inter / areas
        coverage = coverage[coverage > 0]
        return coverage.size > 0 and coverage.min() > self.min_object_covered

    def _update_labels(self, label, crop_box, height, width):
        """Boxes in the crop's coordinates; None when no box keeps enough of itself."""
        x, y, w, h = crop_box[0] / width, crop_box[1] / height, \
            crop_box[2] / width, crop_box[3] / height
        out = label.copy()
        out[:, (1, 3)] = (out[:, (1, 3)] - x) / w
        out[:, (2, 4)] = (out[:, (2, 4)] - y) / h
        out[:, 1:5] = np.clip(out[:, 1:5], 0, 1)
        coverage = _box_areas(out[:, 1:]) * w * h / _box_areas(label[:, 1:])
        keep = (out[:, 3] > out[:, 1]) & (out[:, 4] > out[:, 2]) & \
            (coverage > self.min_eject_coverage)
        return out[keep] if keep.any() else None

    def _random_crop_proposal(self, label, height, width):
        """(x, y, w, h, new label) of an acceptable crop, or () after max_attempts."""
        if not self.enabled or height <= 0 or width <= 0:
            return ()
        min_area = self.area_range[0] * height * width
        max_area = self.area_range[1] * height * width
        for _ in range(self.max_attempts):
            ratio = random.uniform(*self.aspect_ratio_range)
            if ratio <= 0:
                continue
            h = _proposal_heights(min_area, ratio)
            max_h = _proposal_heights(max_area, ratio)
            if round(max_h * ratio) > width:       # the largest height whose width fits
                max_h = int((width + 0.4999999) / ratio)
            max_h = min(max_h, height)
            h = min(h, max_h)
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            if w * h < min_area:                     # rounding: step into the area range
                h += 1
                w = int(round(h * ratio))
            if w * h > max_area:
                h -= 1
                w = int(round(h * ratio))
            if not (min_area <= w * h <= max_area and 0 <= w <= width and 0 <= h <= height):
                continue
            y = random.randint(0, max(0, height - h))
            x = random.randint(0, max(0, width - w))
            if self._covers_enough(label, x, y, x + w, y + h, width, height):
                new_label = self._update_labels(label, (x, y, w, h), height, width)
                if new_label is not None:
                    return x, y, w, h, new_label
        return ()


class DetRandomPadAug(DetAugmenter):
    """Place the image at a random spot of a larger canvas (aspect ratio and area, relative to
    the image, within the ranges) filled with pad_val; the boxes follow."""

    def __init__(self, aspect_ratio_range=(0.75, 1.33), area_range=(1.0, 3.0),
                 max_attempts=50, pad_val=(128, 128, 128)):
        aspect_ratio_range = _as_range(aspect_ratio_range, 'aspect ratio', 'DetRandomPadAug')
        area_range = _as_range(area_range, 'area range', 'DetRandomPadAug')
        super().__init__(aspect_ratio_range=aspect_ratio_range, area_range=area_range,
                         max_attempts=max_attempts, pad_val=pad_val)
        self.pad_val = pad_val
        self.aspect_ratio_range = aspect_ratio_range
        self.area_range = area_range
        self.max_attempts = max_attempts
        self.enabled = False
        if area_range[1] <= 1.0 or area_range[0] > area_range[1]:
            warnings.warn('Skip DetRandomPadAug due to invalid parameters: %s' % (area_range,))
        elif aspect_ratio_range[0] <= 0 or aspect_ratio_range[0] > aspect_ratio_range[1]:
            warnings.warn('Skip DetRandomPadAug due to invalid aspect_ratio_range: %s'
                          % (aspect_ratio_range,))
        else:
            self.enabled = True

    def __call__(self, src, label):
        height, width = src.shape[0], src.shape[1]
        pad = self._random_pad_proposal(label, height, width)
        if pad:
            x, y, w, h, label = pad
            values = self.pad_val if isinstance(self.pad_val, (tuple, list)) \
                else (self.pad_val,) * src.shape[2]
            src = copyMakeBorder(src, y, h - y - height, x, w - x - width, 16, values=values)
        return src, label

    @staticmethod
    def _update_labels(label, pad_box, height, width):
        out = label.copy()
        out[:, (1, 3)] = (out[:, (1, 3)] * width + pad_box[0]) / pad_box[2]
        out[:, (2, 4)] = (out[:, (2, 4)] * height + pad_box[1]) / pad_box[3]
        return out

    def _random_pad_proposal(self, label, height, width):
        """(x, y, w, h, new label): the image's place in a canvas of w x h; () if none."""
        if not self.enabled or height <= 0 or width <= 0:
            return ()
        min_area = self.area_range[0] * height * width
        max_area = self.area_range[1] * height * width
        for _ in range(self.max_attempts):
            ratio = random.uniform(*self.aspect_ratio_range)
            if ratio <= 0:
                continue
            h = _proposal_heights(min_area, ratio)
            max_h = _proposal_heights(max_area, ratio)
            if round(h * ratio) < width:            # the canvas must be as wide as the image
                h = int((width + 0.499999) / ratio)
            h = min(max(h, height), max_h)
            if h < max_h:
                h = random.randint(h, max_h)
            w = int(round(h * ratio))
            if h - height < 2 or w - width < 2:
                continue                            # marginal padding is not helpful
            y = random.randint(0, max(0, h - height))
            x = random.randint(0, max(0, w - width))
            return x, y, w, h, self._update_labels(label, (x, y, w, h), height, width)
        return ()


def CreateMultiRandCropAugmenter(min_object_covered=0.1,  # noqa: N802 (MXNet's name)
                                 aspect_ratio_range=(0.75, 1.33), area_range=(0.05, 1.0),
                                 min_eject_coverage=0.3, max_attempts=50, skip_prob=0):
    """A DetRandomSelectAug over DetRandomCropAugs: each argument may be a list (one value per
    augmenter); single values are shared by all."""
    params = [p if isinstance(p, list) else [p] for p in
              (min_object_covered, aspect_ratio_range, area_range, min_eject_coverage,
               max_attempts)]
    count = max(len(p) for p in params)
    for p in params:
        if len(p) not in (1, count):
            raise ValueError('CreateMultiRandCropAugmenter: parameter lists must have one '
                             'length (%d) or a single value, got %r' % (count, p))
    params = [p * count if len(p) == 1 else p for p in params]
    augs = [DetRandomCropAug(min_object_covered=moc, aspect_ratio_range=arr, area_range=ar,
                             min_eject_coverage=mec, max_attempts=ma)
            for moc, arr, ar, mec, ma in zip(*params)]
    return DetRandomSelectAug(augs, skip_prob=skip_prob)


def CreateDetAugmenter(data_shape, resize=0, rand_crop=0, rand_pad=0,  # noqa: N802
                       rand_gray=0, rand_mirror=False, mean=None, std=None, brightness=0,
                       contrast=0, saturation=0, pca_noise=0, hue=0, inter_method=2,
                       min_object_covered=0.1, aspect_ratio_range=(0.75, 1.33),
                       area_range=(0.05, 3.0), min_eject_coverage=0.3, max_attempts=50,
                       pad_val=(127, 127, 127)):
    """The standard detection augmenters for data_shape (c, h, w): resize, random crops
    (probability rand_crop), mirror, random pad (rand_pad), force resize, cast, colour jitter,
    hue, PCA noise, grey, normalisation (mean/std True: ImageNet's)."""
    augs = []
    if resize > 0:
        augs.append(DetBorrowAug(ResizeAug(resize, inter_method)))
    if rand_crop > 0:
        augs.append(CreateMultiRandCropAugmenter(min_object_covered, aspect_ratio_range,
                                                 area_range, min_eject_coverage, max_attempts,
                                                 skip_prob=1 - rand_crop))
    if rand_mirror > 0:
        augs.append(DetHorizontalFlipAug(0.5))
    if rand_pad > 0:       # as late as possible: padding makes the image larger
        pad = DetRandomPadAug(aspect_ratio_range, (1.0, area_range[1]), max_attempts, pad_val)
        augs.append(DetRandomSelectAug([pad], 1 - rand_pad))
    augs.append(DetBorrowAug(ForceResizeAug((data_shape[2], data_shape[1]), inter_method)))
    augs.append(DetBorrowAug(CastAug()))
    if brightness or contrast or saturation:
        augs.append(DetBorrowAug(ColorJitterAug(brightness, contrast, saturation)))
    if hue:
        augs.append(DetBorrowAug(HueJitterAug(hue)))
    if pca_noise > 0:
        augs.append(DetBorrowAug(LightingAug(pca_noise, _EIGVAL, _EIGVEC)))
    if rand_gray > 0:
        augs.append(DetBorrowAug(RandomGrayAug(rand_gray)))
    mean = np.array([123.68, 116.28, 103.53]) if mean is True else _check_stat('mean', mean)
    std = np.array([58.395, 57.12, 57.375]) if std is True else _check_stat('std', std)
    if mean is not None or std is not None:
        augs.append(DetBorrowAug(ColorNormalizeAug(mean, std)))
    return augs


# ---------------------------------------------------------------------------------------------
# ImageDetIter
# ---------------------------------------------------------------------------------------------
class ImageDetIter(ImageIter):
    """Batches of augmented images and their boxes, from the sources ImageIter reads.

    The label batch is (batch_size, max objects, object width), padded with -1 rows; the
    object count is the largest in the data set (label_shape, found by reading every label
    once). Extra keyword arguments go to CreateDetAugmenter when aug_list is None."""

    def __init__(self, batch_size, data_shape, path_imgrec=None, path_imglist=None,
                 path_root=None, path_imgidx=None, shuffle=False, part_index=0, num_parts=1,
                 aug_list=None, imglist=None, data_name='data', label_name='label',
                 last_batch_handle='pad', **kwargs):
        super().__init__(batch_size=batch_size, data_shape=data_shape, path_imgrec=path_imgrec,
                         path_imglist=path_imglist, path_root=path_root,
                         path_imgidx=path_imgidx, shuffle=shuffle, part_index=part_index,
                         num_parts=num_parts, aug_list=[], imglist=imglist,
                         data_name=data_name, label_name=label_name,
                         last_batch_handle=last_batch_handle)
        self.auglist = CreateDetAugmenter(data_shape, **kwargs) if aug_list is None \
            else aug_list
        self.label_shape = self._estimate_label_shape()
        self.provide_label = [io.DataDesc(label_name, (self.batch_size,) + self.label_shape)]

    # ---- labels ------------------------------------------------------------------------------
    def _check_valid_label(self, label):
        if len(label.shape) != 2 or label.shape[1] < 5:
            raise RuntimeError('Label with shape (1+, 5+) required, %s received.' % str(label))
        valid = (label[:, 0] >= 0) & (label[:, 3] > label[:, 1]) & (label[:, 4] > label[:, 2])
        if not valid.any():
            raise RuntimeError('Invalid label occurs.')

    def _parse_label(self, label):
        """The (objects, object width) array of a raw label, objects with empty boxes left
        out; RuntimeError for a malformed label or one with no valid object."""
        raw = (label.asnumpy() if isinstance(label, nd.NDArray) else np.asarray(label)).ravel()
        if raw.size < 7:
            raise RuntimeError('Label shape is invalid: ' + str(raw.shape))
        header_width, obj_width = int(raw[0]), int(raw[1])
        if obj_width <= 0 or (raw.size - header_width) % obj_width != 0:
            raise RuntimeError('Label shape %s inconsistent with annotation width %d.'
                               % (str(raw.shape), obj_width))
        out = raw[header_width:].reshape(-1, obj_width)
        out = out[(out[:, 3] > out[:, 1]) & (out[:, 4] > out[:, 2])]
        if not len(out):
            raise RuntimeError('Encounter sample with no valid label.')
        return out

    def _estimate_label_shape(self):
        """(largest object count, object width) over every label of the source."""
        count, width = 0, 0
        self.reset()
        try:
            while True:
                label = self._parse_label(self.next_sample()[0])
                count, width = max(count, label.shape[0]), label.shape[1]
        except StopIteration:
            pass
        self.reset()
        return count, width

    def reshape(self, data_shape=None, label_shape=None):
        """Change the data shape (c, h, w) and/or the label shape (objects, width)."""
        if data_shape is not None:
            self.check_data_shape(data_shape)
            self.provide_data = [io.DataDesc(self.provide_data[0][0],
                                             (self.batch_size,) + tuple(data_shape))]
            self.data_shape = tuple(data_shape)
        if label_shape is not None:
            self.check_label_shape(label_shape)
            self.provide_label = [io.DataDesc(self.provide_label[0][0],
                                              (self.batch_size,) + tuple(label_shape))]
            self.label_shape = tuple(label_shape)

    def check_label_shape(self, label_shape):
        if len(label_shape) != 2:
            raise ValueError('label_shape should have length 2')
        if label_shape[0] < self.label_shape[0]:
            raise ValueError('Attempts to reduce label count from %d to %d, not allowed.'
                             % (self.label_shape[0], label_shape[0]))
        if label_shape[1] != self.provide_label[0][1][2]:
            raise ValueError('label_shape object width inconsistent: %d vs %d.'
                             % (self.provide_label[0][1][2], label_shape[1]))

    def sync_label_shape(self, it, verbose=False):
        """Give this iterator and `it` the larger object count of the two; returns `it`."""
        if not isinstance(it, ImageDetIter):
            raise TypeError('Synchronize with invalid iterator.')
        mine, theirs = self.label_shape, it.label_shape
        if mine[1] != theirs[1]:
            raise ValueError('object width mismatch: %d vs %d' % (mine[1], theirs[1]))
        count = max(mine[0], theirs[0])
        if count > mine[0]:
            self.reshape(None, (count, mine[1]))
        if count > theirs[0]:
            it.reshape(None, (count, theirs[1]))
        if verbose and count > min(mine[0], theirs[0]):
            logging.info('Resized label_shape to (%d, %d).', count, mine[1])
        return it

    # ---- batches -----------------------------------------------------------------------------
    def _new_batch(self):
        data, label = super()._new_batch()
        label[:] = -1
        return data, label

    def _batchify(self, data, label, start=0):
        """Fill data/label from slot `start`; the number of slots filled."""
        i = start
        rows = self.provide_label[0][1][1]
        try:
            while i < self.batch_size:
                raw_label, raw = self.next_sample()
                img = self.imdecode(raw)
                try:
                    self.check_valid_image([img])
                    objects = self._parse_label(raw_label)
                    img, objects = self.augmentation_transform(img, objects)
                    self._check_valid_label(objects)
                except RuntimeError as err:
                    logging.debug('Invalid image, skipping:  %s', err)
                    continue
                data[i] = self.postprocess_data(img)
                padded = np.full((rows, objects.shape[1]), -1, dtype=np.float32)
                padded[:objects.shape[0]] = objects
                label[i] = nd.array(padded)
                i += 1
        except StopIteration:
            if not i:
                raise
        return i

    def augmentation_transform(self, data, label):  # pylint: disable=arguments-differ
        for aug in self.auglist:
            data, label = aug(data, label)
        return data, label

    def draw_next(self, color=None, thickness=2, mean=None, std=None, clip=True,
                  waitKey=None, window_name='draw_next', id2labels=None):  # noqa: N803
        """Yield the next images (augmented, HWC uint8, BGR) with their boxes drawn; mean/std
        (True: ImageNet's) undo a normalisation; waitKey shows each in an OpenCV window."""
        try:
            import cv2
        except ImportError as err:
            warnings.warn('Unable to import cv2, skip drawing: %s' % err)
            return
        std = np.array([58.395, 57.12, 57.375]) if std is True else _check_stat('std', std)
        mean = np.array([123.68, 116.28, 103.53]) if mean is True else _check_stat('mean', mean)
        bgr = tuple(color[::-1]) if color else None
        while True:
            try:
                raw_label, raw = self.next_sample()
            except StopIteration:
                return
            img = self.imdecode(raw)
            try:
                self.check_valid_image([img])
                objects = self._parse_label(raw_label)
            except RuntimeError as err:
                logging.debug('Invalid image, skipping:  %s', err)
                continue
            img, objects = self.augmentation_transform(img, objects)
            image = img.asnumpy().astype(np.float64)
            if std is not None:
                image *= np.asarray(std.asnumpy() if isinstance(std, nd.NDArray) else std)
            if mean is not None:
                image += np.asarray(mean.asnumpy() if isinstance(mean, nd.NDArray) else mean)
            image = image[:, :, ::-1]
            if clip:
                image = np.clip(image, 0, 255)
            image = np.ascontiguousarray(image.astype(np.uint8))
            height, width = image.shape[:2]
            for obj in objects:
                x1 = int(obj[1] * width)
                if x1 < 0:
                    continue
                y1, x2, y2 = int(obj[2] * height), int(obj[3] * width), int(obj[4] * height)
                box_color = bgr or tuple(float(c) for c in np.random.rand(3) * 255)
                cv2.rectangle(image, (x1, y1), (x2, y2), box_color, thickness)
                name = id2labels.get(int(obj[0])) if id2labels is not None else None
                if name is not None:
                    font = cv2.FONT_HERSHEY_SIMPLEX
                    text_height = cv2.getTextSize(str(name), font, 0.5, 2)[0][1]
                    cv2.putText(image, str(name), (x1 + 5, y1 + text_height + 5), font, 0.5,
                                (255, 255, 255), 2)
            if waitKey is not None:
                cv2.imshow(window_name, image)
                cv2.waitKey(waitKey)
            yield image

"""ImageDetRecordIter: batches of augmented images and their object boxes from a RecordIO file.

As MXNet 1.9.1's (its parameter names; keyword arguments only). Each record's label is a
detection label [header_width, object_width, extra header..., (class, x0, y0, x1, y1, ...)
per object] with boxes normalised to [0, 1] (as example/ssd's tools and im2rec pack them), or
the values of `path_imglist` for its id. The images go through the detection augmentation of
det_augmenter.py, then `(pixel - mean_c) * scale / std_c` (mean_r/g/b/a; a std of 0 means 1;
or `mean_img`); an image smaller than data_shape (resize_mode 'fit'/'shrink') sits at the top
left of zeros.

Each label row of a batch is [channels, height, width (of the image before it is placed in
data_shape), n, the n label values after augmentation, `label_pad_value`...], of width
`label_pad_width` + 4. label_pad_width <= 0 takes the longest label of the file (or
label_width when that is set); a label_pad_width below it is an error, as is a record whose
label count differs from a label_width > 0.

Reading, batching (round_batch, num_parts/part_index, shuffle, prefetching, threads) are
ImageRecordIter's. Random choices are NumPy's, seeded by `seed` and the epoch: reproducible,
but not MXNet's C++ random stream.
"""
import numpy as np

from .. import recordio
from ..base import MXNetError
from .det_augmenter import DetAugmenter
from .image_record_iter import ImageRecordIter
from .native import REQUIRED

_F = 'str'      # tuples of floats arrive as their text and are read by DetAugmenter
_PARAMS = {
    'path_imglist': ('str', ''), 'path_imgrec': ('str', './data/imgrec.rec'),
    'path_imgidx': ('str', ''), 'aug_seq': ('str', 'det_aug_default'),
    'label_width': ('int', -1), 'data_shape': ('shape', REQUIRED),
    'preprocess_threads': ('int', 4), 'verbose': ('bool', True), 'num_parts': ('int', 1),
    'part_index': ('int', 0), 'shuffle_chunk_size': ('count', 0),
    'shuffle_chunk_seed': ('int', 0), 'label_pad_width': ('int', 0),
    'label_pad_value': ('float', -1.0), 'shuffle': ('bool', False), 'seed': ('int', 0),
    'seed_aug': ('str', 'None'), 'batch_size': ('count', REQUIRED),
    'round_batch': ('bool', True), 'resize': ('int', -1), 'rand_crop_prob': ('float', 0.0),
    'min_crop_scales': (_F, '(0,)'), 'max_crop_scales': (_F, '(1,)'),
    'min_crop_aspect_ratios': (_F, '(1,)'), 'max_crop_aspect_ratios': (_F, '(1,)'),
    'min_crop_overlaps': (_F, '(0,)'), 'max_crop_overlaps': (_F, '(1,)'),
    'min_crop_sample_coverages': (_F, '(0,)'), 'max_crop_sample_coverages': (_F, '(1,)'),
    'min_crop_object_coverages': (_F, '(0,)'), 'max_crop_object_coverages': (_F, '(1,)'),
    'num_crop_sampler': ('int', 1), 'crop_emit_mode': ('str', 'center'),
    'emit_overlap_thresh': ('float', 0.3), 'max_crop_trials': (_F, '(25,)'),
    'rand_pad_prob': ('float', 0.0), 'max_pad_scale': ('float', 1.0),
    'max_random_hue': ('int', 0), 'random_hue_prob': ('float', 0.0),
    'max_random_saturation': ('int', 0), 'random_saturation_prob': ('float', 0.0),
    'max_random_illumination': ('int', 0), 'random_illumination_prob': ('float', 0.0),
    'max_random_contrast': ('float', 0.0), 'random_contrast_prob': ('float', 0.0),
    'rand_mirror_prob': ('float', 0.0), 'fill_value': ('int', 127), 'inter_method': ('int', 1),
    'resize_mode': ('str', 'force'), 'mean_img': ('str', ''),
    'mean_r': ('float', 0.0), 'mean_g': ('float', 0.0), 'mean_b': ('float', 0.0),
    'mean_a': ('float', 0.0), 'std_r': ('float', 0.0), 'std_g': ('float', 0.0),
    'std_b': ('float', 0.0), 'std_a': ('float', 0.0), 'scale': ('float', 1.0),
}


class ImageDetRecordIter(ImageRecordIter):
    """Iterate over a RecordIO file of images with detection labels (module docstring)."""
    _name = 'ImageDetRecordIter'
    _params = _PARAMS
    _augmenter = DetAugmenter
    _stale_pad = True

    def __init__(self, *args, **kwargs):
        self._pad_width = None
        super().__init__(*args, **kwargs)

    # ---- set-up --------------------------------------------------------------------------
    def _launch(self):
        if self._pad_width is None:         # first epoch: the label width is known first
            self._pad_width = self._label_pad_width()
            c, h, w = self._p['data_shape']
            self._canvas = (h, w, c)
        super()._launch()

    def _label_pad_width(self):
        p = self._p
        if p['label_width'] > 0:
            longest = p['label_width']
        elif self._list_labels is not None:
            longest = max(len(v) for v in self._list_labels.values())
        else:
            longest = 0
            reader = recordio.MXRecordIO(p['path_imgrec'], 'r')
            try:
                for offset in self._offsets:
                    reader.handle.seek(offset)
                    header, _ = recordio.unpack(reader.read())
                    longest = max(longest, np.atleast_1d(header.label).size)
            finally:
                reader.close()
        if p['label_pad_width'] <= 0:
            return longest
        if p['label_pad_width'] < longest:
            raise MXNetError('%s: label_pad_width: %d smaller than estimated width: %d'
                             % (self._name, p['label_pad_width'], longest))
        return p['label_pad_width']

    # ---- one image -------------------------------------------------------------------------
    def _label(self, header):
        if self._list_labels is not None:
            return super()._label(header)
        label = np.atleast_1d(np.asarray(header.label, dtype=np.float32))
        width = self._p['label_width']
        if width > 0 and label.size != width:
            raise MXNetError('%s: rec file provide %d-dimensional label but label_width is '
                             'set to %d' % (self._name, label.size, width))
        return label

    def _sample(self, row, rng):
        header, payload = self._record(row)
        raw = self._label(header)
        img, raw = self._aug(self._decode(payload, row), raw, rng)
        rows, cols = img.shape[:2]
        canvas = np.zeros(self._canvas, dtype=np.uint8)
        canvas[:rows, :cols] = img
        head = np.array([self._channels, rows, cols, raw.size], dtype=np.float32)
        label = np.full(self._pad_width + 4, self._p['label_pad_value'], dtype=np.float32)
        label[:4 + raw.size] = np.concatenate([head, raw])
        return self._normalize(canvas, rng), label

    def _normalize(self, img, rng):
        x = np.ascontiguousarray(img.transpose(2, 0, 1)).astype(np.float32)
        if self._dtype in (np.uint8, np.int8):
            return x.astype(self._dtype)
        mean = self._mean_img if self._mean_img is not None else self._mean
        std = np.where(self._std == 0, 1, self._std)
        return ((x - mean) * self._p['scale'] / std).astype(self._dtype)

    def _make_batch(self, number, rows, pad):
        samples = list(self._pool.map(lambda s: self._sample(s[1], self._rng(number, s[0])),
                                      enumerate(rows)))
        data = np.stack([s[0] for s in samples])
        label = np.stack([s[1] for s in samples])
        return data, label, pad, np.asarray(rows, dtype=np.uint64)

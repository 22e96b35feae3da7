"""ImageRecordIter: batches of augmented images from MXNet RecordIO files (.rec, made by
im2rec or mx.recordio.pack_img), decoded with OpenCV and prepared on worker threads.

As MXNet 1.9.1's ImageRecordIter (its parameter names; keyword arguments only):

* each image is decoded (colour, RGB), then: `resize` sets its shorter edge (OpenCV,
  `inter_method`); a random affine transform when asked (`max_rotate_angle`/`rotate`,
  `max_shear_ratio`, `min/max_random_scale`, `max_aspect_ratio`, `min/max_img_size`; border
  `fill_value`); `pad` adds a constant border; an image smaller than `data_shape` is scaled up
  to cover it; then a crop of data_shape: the centre one, or a random one with `rand_crop`;
  `random_h/s/l` jitter hue, saturation and lightness (HLS); `mirror` / `rand_mirror` flip;
* pixels become (pixel - mean_c) * scale / std_c (mean_r/g/b/a, std_r/g/b/a), with random
  contrast and illumination (`max_random_contrast/illumination`) when asked;
* labels: the record's (label_width of them; a record with another count is an error), or those
  of `path_imglist` by record id;
* batches: with round_batch (default) the batch that reaches the end is completed from the start
  (`pad` counts those) and the next epoch starts after them; without it the last batch keeps
  stale rows and reports pad 0, as MXNet's;
* `num_parts`/`part_index` split the file by bytes at record boundaries (MXNet's InputSplit);
  `shuffle` shuffles the records each epoch (needs nothing else here).

Random choices (crops, flips, shuffling, jitter) come from NumPy generators seeded by `seed`,
`seed_aug` and the epoch, so they are reproducible but not MXNet's streams.
`preprocess_threads` threads decode and augment; a background thread keeps up to
`prefetch_buffer` batches ready.
"""
import os
import queue
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from .. import recordio
from ..base import MXNetError
from ..ndarray import array
from .native import MXDataIter, REQUIRED, RoundBatchRows, parse_params

_PARAMS = {
    'path_imgrec': ('str', ''), 'path_imglist': ('str', ''), 'path_imgidx': ('str', ''),
    'aug_seq': ('str', 'aug_default'), 'label_width': ('int', 1), 'data_shape': ('shape', REQUIRED),
    'verbose': ('bool', True), 'num_parts': ('int', 1), 'part_index': ('int', 0),
    'device_id': ('int', 0), 'shuffle_chunk_size': ('count', 0), 'shuffle_chunk_seed': ('int', 0),
    'seed_aug': ('str', 'None'), 'shuffle': ('bool', False), 'seed': ('int', 0),
    'batch_size': ('count', REQUIRED), 'round_batch': ('bool', True),
    'preprocess_threads': ('int', 4), 'resize': ('int', -1), 'rand_crop': ('bool', False),
    'random_resized_crop': ('bool', False), 'max_rotate_angle': ('int', 0),
    'max_aspect_ratio': ('float', 0.0), 'min_aspect_ratio': ('str', 'None'),
    'max_shear_ratio': ('float', 0.0), 'max_crop_size': ('int', -1), 'min_crop_size': ('int', -1),
    'max_random_scale': ('float', 1.0), 'min_random_scale': ('float', 1.0),
    'max_random_area': ('float', 1.0), 'min_random_area': ('float', 1.0),
    'max_img_size': ('float', 1e10), 'min_img_size': ('float', 0.0),
    'brightness': ('float', 0.0), 'contrast': ('float', 0.0), 'saturation': ('float', 0.0),
    'pca_noise': ('float', 0.0), 'random_h': ('int', 0), 'random_s': ('int', 0),
    'random_l': ('int', 0), 'rotate': ('int', -1), 'fill_value': ('int', 255),
    'inter_method': ('int', 1), 'pad': ('int', 0), 'mirror': ('bool', False),
    'rand_mirror': ('bool', False), 'mean_img': ('str', ''),
    'mean_r': ('float', 0.0), 'mean_g': ('float', 0.0), 'mean_b': ('float', 0.0),
    'mean_a': ('float', 0.0), 'std_r': ('float', 1.0), 'std_g': ('float', 1.0),
    'std_b': ('float', 1.0), 'std_a': ('float', 1.0), 'scale': ('float', 1.0),
    'max_random_contrast': ('float', 0.0), 'max_random_illumination': ('float', 0.0),
}
_ALIGN = 4   # RecordIO chunks are 4-byte aligned; parts split at aligned byte offsets


def _cv2():
    from ..ops.image import cv2
    return cv2()


def _record_offsets(path):
    """Byte offsets of every record of a RecordIO file, and the file size."""
    reader = recordio.MXRecordIO(path, 'r')
    offsets = []
    try:
        while True:
            offset = reader.tell()
            if reader.read() is None:
                break
            offsets.append(offset)
    finally:
        reader.close()
    return offsets, os.path.getsize(path)


def _part(offsets, size, num_parts, part_index):
    """The records of byte range part `part_index` of `num_parts` (records starting in it)."""
    if not 0 <= part_index < num_parts:
        raise MXNetError('ImageRecordIter: part_index %d out of range for num_parts %d'
                         % (part_index, num_parts))
    step = -(-size // num_parts)
    step = -(-step // _ALIGN) * _ALIGN
    begin, end = min(step * part_index, size), min(step * (part_index + 1), size)
    return [i for i, off in enumerate(offsets) if begin <= off < end]


def _read_list(path, label_width):
    """{record id: labels} of an image list file (index<TAB>labels...<TAB>path)."""
    labels = {}
    with open(path) as fin:
        for line in fin:
            fields = line.strip().split('\t')
            if len(fields) < 2:
                continue
            values = np.array([float(v) for v in fields[1:-1]], dtype=np.float32)
            if 0 <= label_width != len(values):
                raise MXNetError('ImageRecordIter: %s gives %d labels for image %s but '
                                 'label_width is %d' % (path, len(values), fields[0],
                                                        label_width))
            labels[int(float(fields[0]))] = values
    return labels


class _Augmenter:
    """MXNet's default image augmentation, for one HWC RGB uint8 image and a NumPy generator."""

    def __init__(self, p):
        self.p = p
        self.shape = p['data_shape']
        self.interp = p['inter_method']

    def _interp(self, rng, old, new):
        if self.interp == 9:
            if new[0] > old[0] and new[1] > old[1]:
                return 2
            return 3 if new[0] < old[0] and new[1] < old[1] else 1
        return int(rng.randint(0, 5)) if self.interp == 10 else self.interp

    def _resize(self, img, rng, w, h):
        old = img.shape[:2]
        out = _cv2().resize(img, (int(w), int(h)),
                            interpolation=self._interp(rng, old, (int(h), int(w))))
        return out.reshape(int(h), int(w), -1)

    def _affine(self, img, rng):
        p = self.p
        shear = rng.uniform(-p['max_shear_ratio'], p['max_shear_ratio']) \
            if p['max_shear_ratio'] > 0 else 0.0
        angle = p['rotate'] if p['rotate'] > 0 else (
            rng.randint(-p['max_rotate_angle'], p['max_rotate_angle'] + 1)
            if p['max_rotate_angle'] > 0 else 0)
        a, b = np.cos(np.deg2rad(angle)), np.sin(np.deg2rad(angle))
        scale = rng.uniform(p['min_random_scale'], p['max_random_scale'])
        ratio = 1.0 + (rng.uniform(-p['max_aspect_ratio'], p['max_aspect_ratio'])
                       if p['max_aspect_ratio'] > 0 else 0.0)
        hs = 2 * scale / (1 + ratio)
        ws = ratio * hs
        rows, cols = img.shape[:2]
        new_w = max(p['min_img_size'], min(p['max_img_size'], scale * cols))
        new_h = max(p['min_img_size'], min(p['max_img_size'], scale * rows))
        m = np.array([[hs * a - shear * b * ws, hs * b + shear * a * ws, 0],
                      [-b * ws, a * ws, 0]], dtype=np.float32)
        m[0, 2] = (new_w - (m[0, 0] * cols + m[0, 1] * rows)) / 2
        m[1, 2] = (new_h - (m[1, 0] * cols + m[1, 1] * rows)) / 2
        cv2 = _cv2()
        out = cv2.warpAffine(img, m, (int(new_w), int(new_h)),
                             flags=self._interp(rng, (rows, cols), (int(new_h), int(new_w))),
                             borderMode=cv2.BORDER_CONSTANT,
                             borderValue=(p['fill_value'],) * 3)
        return out.reshape(out.shape[0], out.shape[1], -1)

    def _needs_affine(self):
        p = self.p
        return (p['max_rotate_angle'] > 0 or p['max_shear_ratio'] > 0 or p['rotate'] > 0 or
                p['max_random_scale'] != 1 or p['min_random_scale'] != 1 or
                p['max_aspect_ratio'] != 0 or p['max_img_size'] != 1e10 or
                p['min_img_size'] != 0)

    def __call__(self, img, rng):
        p = self.p
        _, height, width = self.shape
        if p['resize'] > 0:
            rows, cols = img.shape[:2]
            if rows > cols:
                img = self._resize(img, rng, p['resize'], p['resize'] * rows // cols)
            else:
                img = self._resize(img, rng, p['resize'] * cols // rows, p['resize'])
        if self._needs_affine():
            img = self._affine(img, rng)
        if p['pad'] > 0:
            n = p['pad']
            img = _cv2().copyMakeBorder(img, n, n, n, n, 0, value=(p['fill_value'],) * 3)
            img = img.reshape(img.shape[0], img.shape[1], -1)
        rows, cols = img.shape[:2]
        if rows < height or cols < width:
            grow = max(height / rows, width / cols)
            img = self._resize(img, rng, int(cols * grow), int(rows * grow))
            rows, cols = img.shape[:2]
            rows, cols = max(rows, height), max(cols, width)
            img = img if img.shape[:2] == (rows, cols) else \
                self._resize(img, rng, cols, rows)
        if p['rand_crop']:
            y, x = rng.randint(0, rows - height + 1), rng.randint(0, cols - width + 1)
        else:
            y, x = (rows - height) // 2, (cols - width) // 2
        img = img[y:y + height, x:x + width]
        if p['random_h'] or p['random_s'] or p['random_l']:
            img = self._hls_jitter(img, rng)
        if p['mirror'] or (p['rand_mirror'] and rng.randint(0, 2)):
            img = img[:, ::-1]
        return img

    def _hls_jitter(self, img, rng):
        p = self.p
        cv2 = _cv2()
        hls = cv2.cvtColor(np.ascontiguousarray(img), cv2.COLOR_RGB2HLS).astype(np.int32)
        for c, amount, top in ((0, p['random_h'], 180), (1, p['random_l'], 255),
                               (2, p['random_s'], 255)):
            if amount:
                hls[:, :, c] = np.clip(hls[:, :, c] + rng.randint(-amount, amount + 1), 0, top)
        return cv2.cvtColor(hls.astype(np.uint8), cv2.COLOR_HLS2RGB)


class ImageRecordIter(MXDataIter):
    """Iterate over a RecordIO file of packed images in augmented batches (module docstring)."""
    _name = 'ImageRecordIter'
    _default_dtype = np.float32
    _params = _PARAMS
    _read_list = staticmethod(_read_list)
    _augmenter = _Augmenter
    _stale_pad = False     # without round_batch, whether pad counts the stale rows

    def __init__(self, *args, **kwargs):
        super().__init__(kwargs.get('data_name', 'data'), kwargs.get('label_name',
                                                                     'softmax_label'))
        p = parse_params(self._name, dict(self._params, prefetch_buffer=('count', 4),
                                          ctx=('str', 'gpu')), args, kwargs)
        self._p = p
        c, h, w = self._data_shape(p['data_shape'])
        if not p['path_imgrec']:
            raise MXNetError('%s: path_imgrec must be given' % self._name)
        if p['batch_size'] <= 0:
            raise MXNetError('%s: batch_size must be positive' % self._name)
        self._dtype = np.dtype(p['dtype']) if p['dtype'] is not None else \
            np.dtype(self._default_dtype)
        self._channels = c
        if p['path_imgidx']:
            index = recordio.MXIndexedRecordIO(p['path_imgidx'], p['path_imgrec'], 'r')
            offsets = sorted(index.idx.values())
            index.close()
            size = os.path.getsize(p['path_imgrec'])
        else:
            offsets, size = _record_offsets(p['path_imgrec'])
        chosen = _part(offsets, size, p['num_parts'], p['part_index'])
        if not chosen:
            raise MXNetError('%s: part %d of %d of %s holds no record'
                             % (self._name, p['part_index'], p['num_parts'], p['path_imgrec']))
        self._offsets = [offsets[i] for i in chosen]
        self._list_labels = self._read_list(p['path_imglist'], p['label_width']) \
            if p['path_imglist'] else None
        self._aug = self._augmenter(p)
        mean = np.array([p['mean_r'], p['mean_g'], p['mean_b'], p['mean_a']][:c], np.float32)
        std = np.array([p['std_r'], p['std_g'], p['std_b'], p['std_a']][:c], np.float32)
        self._mean, self._std = mean.reshape(c, 1, 1), std.reshape(c, 1, 1)
        self._mean_img = self._load_mean(p['mean_img'], (c, h, w))
        self._seed_aug = None if p['seed_aug'] == 'None' else int(p['seed_aug'])
        self._rows = RoundBatchRows(len(self._offsets), p['batch_size'], p['round_batch'])
        self._epoch = 0
        self._consumed = 0
        self._local = threading.local()
        self._pool = ThreadPoolExecutor(max(1, p['preprocess_threads']))
        self._bg = {'stop': None, 'thread': None, 'queue': None}
        # the producer is stopped and joined when the iterator is collected, or at exit at the
        # latest, so that it never runs while the interpreter shuts down
        weakref.finalize(self, _shut_down, self._bg, self._pool)
        self._launch()
        self._start()

    # ---- set-up --------------------------------------------------------------------------
    def _data_shape(self, shape):
        if len(shape) != 3 or shape[0] not in (1, 3, 4):
            raise MXNetError('%s: data_shape must be (channels, height, width) with 1, 3 or 4 '
                             'channels, got %s' % (self._name, shape))
        return shape

    def _load_mean(self, path, shape):
        if not path:
            return None
        if not os.path.exists(path):
            raise MXNetError('%s: mean_img %s does not exist (MXNet computes it; mxtorch reads '
                             'an existing one only)' % (self._name, path))
        from ..ndarray import load
        loaded = load(path)
        mean = list(loaded.values())[0] if isinstance(loaded, dict) else loaded[0]
        mean = mean.asnumpy().astype(np.float32)
        if mean.shape != tuple(shape):
            raise MXNetError('%s: mean_img has shape %s, data_shape is %s'
                             % (self._name, mean.shape, shape))
        return mean

    # ---- one image -------------------------------------------------------------------------
    def _reader(self):
        reader = getattr(self._local, 'reader', None)
        if reader is None:
            reader = self._local.reader = recordio.MXRecordIO(self._p['path_imgrec'], 'r')
        return reader

    def _record(self, row):
        """(header, payload) of record `row`, read by this thread's reader."""
        reader = self._reader()
        reader.handle.seek(self._offsets[row])
        return recordio.unpack(reader.read())

    def _sample(self, row, rng):
        header, payload = self._record(row)
        label = self._label(header)
        img = self._decode(payload, row)
        img = self._aug(img, rng)
        return self._normalize(img, rng), label

    def _decode(self, payload, row):
        """The HWC RGB(A) uint8 image of record `row`'s payload."""
        flag = 0 if self._channels == 1 else (-1 if self._channels == 4 else 1)
        img = _cv2().imdecode(np.frombuffer(payload, dtype=np.uint8), flag)
        if img is None:
            raise MXNetError('%s: record %d of %s is not an image OpenCV can decode'
                             % (self._name, row, self._p['path_imgrec']))
        img = img.reshape(img.shape[0], img.shape[1], -1)
        if img.shape[2] >= 3:
            img = img[:, :, [2, 1, 0] + list(range(3, img.shape[2]))]
        return img

    def _label(self, header):
        width = self._p['label_width']
        if self._list_labels is not None:
            try:
                return self._list_labels[int(header.id)]
            except KeyError:
                raise MXNetError('%s: image id %d is not in %s' % (
                    self._name, header.id, self._p['path_imglist'])) from None
        label = np.atleast_1d(np.asarray(header.label, dtype=np.float32))
        if len(label) != width:
            raise MXNetError('%s: rec file provide %d-dimensional label but label_width is '
                             'set to %d' % (self._name, len(label), width))
        return label

    def _normalize(self, img, rng):
        chw = np.ascontiguousarray(img.transpose(2, 0, 1))
        if self._dtype in (np.uint8, np.int8):
            return chw.astype(self._dtype)
        x = chw.astype(np.float32)
        p = self._p
        mean = self._mean_img if self._mean_img is not None else self._mean
        x = x - mean
        if p['max_random_contrast'] > 0 or p['max_random_illumination'] > 0:
            contrast = 1 + rng.uniform(-p['max_random_contrast'], p['max_random_contrast'])
            illumination = rng.uniform(-p['max_random_illumination'],
                                       p['max_random_illumination'])
            x = x * contrast + illumination
        return (x * p['scale'] / self._std).astype(self._dtype)

    # ---- batches on a background thread -------------------------------------------------
    def _plan(self):
        """The (rows, pad) of every batch of the coming epoch."""
        order = np.arange(len(self._offsets))
        if self._p['shuffle']:
            order = np.random.RandomState(self._p['seed'] + self._epoch).permutation(len(order))
        plan = []
        while True:
            step = self._rows.next()
            if step is None:
                break
            rows, pad, _ = step
            plan.append((order[rows], pad if self._p['round_batch'] or self._stale_pad else 0,
                         self._rows._pos))
        return plan

    def _rng(self, batch, slot):
        base = self._seed_aug if self._seed_aug is not None else self._p['seed']
        return np.random.RandomState([base & 0xffffffff, self._epoch, batch, slot])

    def _make_batch(self, number, rows, pad):
        samples = list(self._pool.map(lambda s: self._sample(s[1], self._rng(number, s[0])),
                                      enumerate(rows)))
        data = np.stack([s[0] for s in samples])
        label = np.stack([s[1] for s in samples])
        if self._p['label_width'] == 1:
            label = label[:, 0]
        return data, label, pad, np.asarray(rows, dtype=np.uint64)

    @property
    def _producer(self):
        return self._bg['thread']

    def _launch(self):
        plan = self._plan()
        out = queue.Queue(maxsize=max(1, self._p['prefetch_buffer']))
        stop = threading.Event()
        self._queue = out
        ref = weakref.ref(self)     # the thread must not keep the iterator alive

        def produce():
            for number, (rows, pad, after) in enumerate(plan):
                owner = ref()
                if stop.is_set() or owner is None:
                    return
                try:
                    item = owner._make_batch(number, rows, pad) + (after,)
                except Exception as err:     # noqa: BLE001  (handed to the consumer)
                    item = err
                del owner
                while not stop.is_set():
                    try:
                        out.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if isinstance(item, Exception):
                    return
            out.put(None)

        thread = threading.Thread(target=produce, name='ImageRecordIter-prefetch', daemon=True)
        self._bg.update(stop=stop, thread=thread, queue=out)
        thread.start()

    def _halt(self):
        _halt_producer(self._bg)

    def _before_first(self):
        self._halt()
        self._rows._pos = self._consumed       # where the batches taken so far end
        self._rows.reset()
        self._epoch += 1
        self._launch()

    def _advance(self):
        if self._producer is None:
            return False
        item = self._queue.get()
        if item is None:
            self._producer.join()
            self._bg['thread'] = None
            return False
        if isinstance(item, Exception):
            self._bg['thread'] = None
            raise item
        data, label, pad, index, self._consumed = item
        self._current = (array(data, dtype=data.dtype), array(label), pad, index)
        return True



def _halt_producer(bg):
    """Stop the prefetching thread described by `bg` and wait for it to end."""
    thread = bg['thread']
    if thread is None:
        return
    bg['stop'].set()
    if thread is not threading.current_thread():
        while thread.is_alive():
            try:
                bg['queue'].get(timeout=0.05)
            except queue.Empty:
                pass
    bg['thread'] = None


def _shut_down(bg, pool):
    _halt_producer(bg)
    pool.shutdown(wait=True)


class ImageRecordUInt8Iter(ImageRecordIter):
    """ImageRecordIter giving the augmented uint8 pixels (no normalisation)."""
    _name = 'ImageRecordUInt8Iter'
    _default_dtype = np.uint8


class ImageRecordInt8Iter(ImageRecordIter):
    """ImageRecordIter giving int8 pixels (no normalisation)."""
    _name = 'ImageRecordInt8Iter'
    _default_dtype = np.int8


ImageRecordIter_v1 = ImageRecordIter
ImageRecordUInt8Iter_v1 = ImageRecordUInt8Iter

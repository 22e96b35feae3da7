"""MNISTIter: batches of images and labels read from MNIST's IDX files."""
import struct
import sys
import zlib

import numpy as np

from .._safety import limits
from ..base import MXNetError
from ..ndarray import array
from .native import MXDataIter, parse_params
from .utils import _part_range, _take

_IMAGE_MAGIC, _LABEL_MAGIC = 0x803, 0x801    # IDX: unsigned bytes, 3 and 1 dimensions
_PARAMS = {'image': ('str', './train-images-idx3-ubyte'),
           'label': ('str', './train-labels-idx1-ubyte'), 'batch_size': ('int', 128),
           'shuffle': ('bool', True), 'flat': ('bool', False), 'seed': ('int', 0),
           'silent': ('bool', False), 'num_parts': ('int', 1), 'part_index': ('int', 0)}


def _gunzip(raw, want):
    """At most `want` bytes of the gzip data `raw` (all its members, in order), inflated step by
    step so that nothing beyond `want` is ever held."""
    out, data = bytearray(), raw
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    while len(out) < want:
        chunk = inflater.decompress(data, want - len(out))
        out += chunk
        data = inflater.unconsumed_tail
        if inflater.eof:
            data = inflater.unused_data
            if not data:
                break
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif not data and not chunk:
            break                                # the stream ends early
    return bytes(out)


def _read_idx(path, magic, argument):
    """The uint8 array in IDX file `path` (plain or gzip), after checking its magic number and
    the sizes in its header against the file (and, for gzip, against
    MXTORCH_MAX_DECOMPRESSED_BYTES) before inflating it."""
    try:
        with open(path, 'rb') as f:
            raw = f.read()
    except OSError as err:
        raise MXNetError('MNISTIter: cannot read %s file %r: %s' % (argument, path, err)) from None
    ndim = magic & 0xff
    head = 4 * (1 + ndim)
    gz = raw[:2] == b'\x1f\x8b'
    try:
        header = _gunzip(raw, head) if gz else raw[:head]
    except zlib.error as err:
        raise MXNetError('MNISTIter: cannot read %s file %r: not valid gzip: %s'
                         % (argument, path, err)) from None
    if len(header) < head:
        raise MXNetError('MNISTIter: %s file %r holds %d bytes, too few for an IDX header of %d'
                         % (argument, path, len(header), head))
    found, *shape = struct.unpack('>%dI' % (1 + ndim), header[:head])
    if found != magic:
        raise MXNetError('MNISTIter: %s file %r starts with magic number 0x%08x, expected 0x%08x '
                         '(IDX of unsigned bytes with %d dimension%s)'
                         % (argument, path, found, magic, ndim, 's' if ndim > 1 else ''))
    size = 1
    for dim in shape:
        size *= dim
    if gz:
        if head + size > limits.MAX_DECOMPRESSED_BYTES:
            raise MXNetError('MNISTIter: the header of %s file %r gives shape %s, i.e. %d bytes, '
                             'beyond the limit of %d for a compressed file '
                             '(MXTORCH_MAX_DECOMPRESSED_BYTES)'
                             % (argument, path, tuple(shape), size,
                                limits.MAX_DECOMPRESSED_BYTES))
        try:
            raw = _gunzip(raw, head + size + 1)      # one byte more shows a longer file
        except zlib.error as err:
            raise MXNetError('MNISTIter: cannot read %s file %r: not valid gzip: %s'
                             % (argument, path, err)) from None
    if len(raw) - head != size:
        raise MXNetError('MNISTIter: the header of %s file %r gives shape %s, i.e. %d bytes of '
                         'data, but the file holds %s bytes after the header'
                         % (argument, path, tuple(shape), size,
                            'more' if gz and len(raw) > head + size else len(raw) - head))
    return np.frombuffer(raw, dtype=np.uint8, count=size, offset=head).reshape(shape)


class MNISTIter(MXDataIter):
    """Iterate over MNIST-format IDX files (plain or gzip'ed) in batches.

    Keyword arguments only: image, label, batch_size=128, shuffle=True, flat=False, seed=0,
    silent=False, num_parts=1, part_index=0, and the other parameters of MXNet's built-in
    iterators (see mxtorch.io.native; unknown ones such as data_shape are ignored, as MXNet).

    Images (any rows x cols) become float32 pixel/256, shaped (batch_size, 1, rows, cols), or
    (batch_size, rows*cols) with `flat=True`; labels float32 of shape (batch_size,). Only full
    batches are produced: the trailing samples that do not fill a batch are dropped (pad is 0).
    `shuffle` permutes the samples once, at construction, with NumPy's RandomState(seed), so
    every epoch has the same order (MXNet also shuffles once, with its own generator, so the
    orders differ from MXNet's). num_parts / part_index: the samples are split into contiguous,
    near-equal pieces (piece i = [N*i//num_parts, N*(i+1)//num_parts)) and only piece
    `part_index` is read. `index` holds each sample's position in the files (uint64).
    `dtype` must be float32 (or None).
    """

    def __init__(self, *args, **kwargs):
        super().__init__(kwargs.get('data_name', 'data'),
                         kwargs.get('label_name', 'softmax_label'))
        params = parse_params('MNISTIter', _PARAMS, args, kwargs)
        batch_size, dtype = params['batch_size'], params['dtype']
        if batch_size <= 0:
            raise ValueError('MNISTIter: batch_size must be a positive int, got %r'
                             % (batch_size,))
        if dtype is not None and dtype != np.float32:
            raise MXNetError('MNISTIter: only float32 output is supported, got dtype=%s' % dtype)
        image, label = params['image'], params['label']
        images = _read_idx(image, _IMAGE_MAGIC, 'image')
        labels = _read_idx(label, _LABEL_MAGIC, 'label')
        if 0 in images.shape[1:]:
            raise MXNetError('MNISTIter: image file %r holds images of %dx%d pixels'
                             % (image, images.shape[1], images.shape[2]))
        if len(images) != len(labels):
            raise MXNetError('MNISTIter: image file %r holds %d images but label file %r holds %d '
                             'labels' % (image, len(images), label, len(labels)))
        num_parts, part_index = params['num_parts'], params['part_index']
        self._first, stop = _part_range(len(images), num_parts, part_index)
        self.num_data = stop - self._first
        if batch_size > self.num_data:
            raise MXNetError('MNISTIter: batch_size %d is larger than the %d samples of part %d '
                             'of %d' % (batch_size, self.num_data, part_index, num_parts))
        self._order = np.arange(self.num_data)
        if params['shuffle']:
            self._order = np.random.RandomState(params['seed']).permutation(self.num_data)
        rows = self._first + self._order
        flat = params['flat']
        shape = (-1, images.shape[1] * images.shape[2]) if flat else (-1, 1) + images.shape[1:]
        self._data = array(images[rows].astype(np.float32).reshape(shape) / 256)
        self._label = array(labels[rows].astype(np.float32))
        self._batch_size = batch_size
        self._pos = -batch_size
        if not params['silent']:
            print('MNISTIter: load %d images, shuffle=%d, shape=%s'
                  % (self.num_data, params['shuffle'],
                     '(%s)' % ','.join(map(str, (batch_size,) + self._data.shape[1:]))),
                  file=sys.stderr)
        self._start()

    def _before_first(self):
        self._pos = -self._batch_size

    def _advance(self):
        size = self._batch_size
        if self._pos + 2 * size > self.num_data:
            return False
        self._pos += size
        start, stop = self._pos, self._pos + size
        self._current = (_take(self._data, 0, start, stop), _take(self._label, 0, start, stop),
                         0, (self._order[start:stop] + self._first).astype(np.uint64))
        return True

"""mx.recordio: MXNet's RecordIO record files (.rec), their index files (.idx) and the IRHeader
that image records start with. Files are byte-compatible with MXNet's.

A record is stored as one or more chunks, each: uint32 magic 0xced7230a, uint32
`cflag << 29 | length`, `length` bytes of data and zero bytes up to a multiple of 4 (all
little-endian). The writer cuts a record wherever the magic number sits in it at an offset that
is a multiple of 4 and drops it there; cflag is 0 for a whole record, else 1 / 2 / 3 for the
first / middle / last chunk, and the reader joins the chunks with the magic number.
An index file holds one `key<TAB>byte offset` line per record.
"""
import io
import numbers
import os
import struct
from collections import namedtuple

import numpy as np

from .base import MXNetError

_MAGIC = 0xced7230a
_MAGIC_BYTES = struct.pack('<I', _MAGIC)
_MAX_LENGTH = (1 << 29) - 1
_IR_FORMAT = '<IfQQ'
_IR_SIZE = struct.calcsize(_IR_FORMAT)

IRHeader = namedtuple('IRHeader', ['flag', 'label', 'id', 'id2'])
IRHeader.__doc__ = """Header of an image record: `flag` = number of float32 labels stored after
the header (0: `label` is the single label), `label`, and the ids `id` and `id2`."""


def _encode(buf):
    """The bytes that store record `buf` in a .rec file."""
    pieces, start, i = [], 0, buf.find(_MAGIC_BYTES)
    while i >= 0:
        if i % 4 == 0:
            pieces.append(buf[start:i])
            start = i + 4
            i = buf.find(_MAGIC_BYTES, start)
        else:
            i = buf.find(_MAGIC_BYTES, i + 1)
    pieces.append(buf[start:])
    flags = [0] if len(pieces) == 1 else [1] + [2] * (len(pieces) - 2) + [3]
    out = []
    for flag, piece in zip(flags, pieces):
        if len(piece) > _MAX_LENGTH:
            raise MXNetError('RecordIO: a record chunk of %d bytes exceeds the format limit of %d'
                             % (len(piece), _MAX_LENGTH))
        out += [struct.pack('<II', _MAGIC, flag << 29 | len(piece)), piece,
                bytes(-len(piece) % 4)]
    return b''.join(out)


class MXRecordIO:
    """Read ('r') or write ('w') the records of the RecordIO file `uri` in sequence.

    `read()` returns the next record as bytes, None at the end of the file; `write(buf)` appends
    one. `tell()` is the byte offset of the next record, `reset()` reopens the file (a writer
    starts it anew). A reader used in a forked process reopens the file there.
    """

    def __init__(self, uri, flag):
        self.uri = str(uri)
        self.flag = flag
        self.handle = None
        self.is_open = False
        self.open()

    def open(self):
        if self.flag not in ('r', 'w'):
            raise ValueError('Invalid flag %r: use "r" to read or "w" to write' % (self.flag,))
        self.writable = self.flag == 'w'
        self.handle = open(self.uri, self.flag + 'b')
        self.pid = os.getpid()
        self.is_open = True

    def close(self):
        if self.is_open:
            self.handle.close()
            self.is_open = False
            self.pid = None

    def __del__(self):
        if getattr(self, 'is_open', False):
            self.close()

    def __getstate__(self):
        state = dict(self.__dict__)
        state['handle'] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self.is_open:
            self.is_open = False
            self.open()

    def _check_pid(self, allow_reset=False):
        if self.pid != os.getpid():
            if not allow_reset:
                raise RuntimeError('Forbidden operation in multiple processes')
            self.reset()

    def reset(self):
        self.close()
        self.open()

    def tell(self):
        return self.handle.tell()

    def write(self, buf):
        assert self.writable, 'RecordIO: %r is open for reading' % self.uri
        self._check_pid(allow_reset=False)
        if not isinstance(buf, (bytes, bytearray, memoryview)):
            raise TypeError('RecordIO: records are bytes, got %s' % type(buf).__name__)
        self.handle.write(_encode(bytes(buf)))

    def _chunk(self):
        """(cflag, data) of the next chunk, None at the end of the file."""
        offset = self.handle.tell()
        head = self.handle.read(8)
        if not head:
            return None
        if len(head) < 8:
            raise MXNetError('RecordIO: %r is truncated: %d bytes of a chunk header at byte %d'
                             % (self.uri, len(head), offset))
        magic, word = struct.unpack('<II', head)
        if magic != _MAGIC:
            raise MXNetError('RecordIO: %r is corrupt: magic number 0x%08x at byte %d, expected '
                             '0x%08x' % (self.uri, magic, offset, _MAGIC))
        length = word & _MAX_LENGTH
        left = os.fstat(self.handle.fileno()).st_size - offset - 8
        if length > left:
            raise MXNetError('RecordIO: %r is truncated: the chunk at byte %d announces %d bytes '
                             'but only %d follow' % (self.uri, offset, length, max(left, 0)))
        data = self.handle.read(length + (-length % 4))
        if len(data) < length + (-length % 4):
            raise MXNetError('RecordIO: %r is truncated: the chunk at byte %d announces %d bytes '
                             'but only %d follow' % (self.uri, offset, length, len(data)))
        return word >> 29, data[:length]

    def read(self):
        assert not self.writable, 'RecordIO: %r is open for writing' % self.uri
        self._check_pid(allow_reset=True)
        offset = self.handle.tell()
        chunk = self._chunk()
        if chunk is None:
            return None
        pieces, expected = [], (0, 1)
        while True:
            if chunk is None or chunk[0] not in expected:
                raise MXNetError('RecordIO: %r is corrupt: the record at byte %d %s'
                                 % (self.uri, offset, 'is cut off by the end of the file'
                                    if chunk is None else 'has a chunk of flag %d' % chunk[0]))
            pieces.append(chunk[1])
            if chunk[0] in (0, 3):
                return _MAGIC_BYTES.join(pieces)
            expected = (2, 3)
            chunk = self._chunk()


class MXIndexedRecordIO(MXRecordIO):
    """A RecordIO file with an index file `idx_path`, for random access by key.

    `write_idx(key, buf)` appends a record and its index line; `read_idx(key)` reads the record
    of `key`, `seek(key)` moves there. `keys` lists the keys in file order, `idx` maps them to
    byte offsets; keys read from the index file are converted with `key_type`.
    """

    def __init__(self, idx_path, uri, flag, key_type=int):
        self.idx_path = str(idx_path)
        self.key_type = key_type
        self.idx, self.keys, self.fidx = {}, [], None
        super().__init__(uri, flag)

    def open(self):
        super().open()
        self.idx, self.keys = {}, []
        self.fidx = open(self.idx_path, self.flag, newline='\n' if self.writable else None)
        if self.writable:
            return
        size = os.fstat(self.handle.fileno()).st_size
        for number, raw in enumerate(self.fidx.buffer, 1):
            try:
                line = raw.decode('utf-8')
            except UnicodeDecodeError:
                raise MXNetError('RecordIO: line %d of index file %r is not UTF-8 text'
                                 % (number, self.idx_path)) from None
            fields = line.strip().split('\t')
            if fields == ['']:
                continue
            try:
                key, offset = self.key_type(fields[0]), int(fields[1])
            except (ValueError, IndexError, TypeError, OverflowError):
                raise MXNetError('RecordIO: line %d of index file %r is not "key<TAB>offset": %r'
                                 % (number, self.idx_path, line[:200])) from None
            if not 0 <= offset < size:
                raise MXNetError('RecordIO: line %d of index file %r gives offset %d, outside the '
                                 '%d bytes of %r' % (number, self.idx_path, offset, size, self.uri))
            self.idx[key] = offset
            self.keys.append(key)

    def close(self):
        if self.is_open:
            super().close()
            self.fidx.close()

    def __getstate__(self):
        state = super().__getstate__()
        state['fidx'] = None
        return state

    def seek(self, idx):
        assert not self.writable, 'RecordIO: %r is open for writing' % self.uri
        self._check_pid(allow_reset=True)
        self.handle.seek(self.idx[idx])

    def read_idx(self, idx):
        self.seek(idx)
        return self.read()

    def write_idx(self, idx, buf):
        key = self.key_type(idx)
        offset = self.tell()
        self.write(buf)
        self.fidx.write('%s\t%d\n' % (key, offset))
        self.idx[key] = offset
        self.keys.append(key)


def pack(header, s):
    """Bytes of an image record: IRHeader `header` then `s`. A non-scalar label is stored as
    float32 values after the header, with `flag` set to their number."""
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + s
    return struct.pack(_IR_FORMAT, *header) + s


def unpack(s):
    """(IRHeader, rest) of record `s`, the reverse of `pack` (labels as a float32 array when
    flag > 0)."""
    if len(s) < _IR_SIZE:
        raise MXNetError('RecordIO: a record of %d bytes is too short for the %d-byte IRHeader'
                         % (len(s), _IR_SIZE))
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        if len(s) < 4 * header.flag:
            raise MXNetError('RecordIO: the IRHeader announces %d labels but only %d bytes follow'
                             % (header.flag, len(s)))
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag))
        s = s[4 * header.flag:]
    return header, s


def _image_library():
    """cv2, or PIL.Image when OpenCV is missing."""
    try:
        import cv2  # pylint: disable=import-outside-toplevel
        return cv2
    except ImportError:
        pass
    try:
        from PIL import Image  # pylint: disable=import-outside-toplevel
        return Image
    except ImportError:
        raise ImportError('mx.recordio.pack_img / unpack_img need OpenCV or Pillow: '
                          'pip install opencv-python (or pillow)') from None


def pack_img(header, img, quality=95, img_fmt='.jpg'):
    """`pack` with `img` (a uint8 HxW or HxWx3 BGR array, as OpenCV uses) encoded as `img_fmt`
    ('.jpg': JPEG of `quality`, '.png': PNG with compression level `quality`)."""
    lib = _image_library()
    fmt = img_fmt.lower()
    if getattr(lib, '__name__', '') == 'cv2':
        params = None
        if fmt in ('.jpg', '.jpeg'):
            params = [lib.IMWRITE_JPEG_QUALITY, quality]
        elif fmt == '.png':
            params = [lib.IMWRITE_PNG_COMPRESSION, quality]
        ok, buf = lib.imencode(img_fmt, img, params)
        if not ok:
            raise MXNetError('pack_img: OpenCV failed to encode the image as %s' % img_fmt)
        return pack(header, buf.tobytes())
    img = np.asarray(img)
    if img.ndim == 3:
        img = img[:, :, ::-1]
    out = io.BytesIO()
    if fmt in ('.jpg', '.jpeg'):
        lib.fromarray(img).save(out, format='JPEG', quality=quality)
    elif fmt == '.png':
        lib.fromarray(img).save(out, format='PNG', compress_level=min(quality, 9))
    else:
        lib.fromarray(img).save(out, format=fmt.lstrip('.').upper())
    return pack(header, out.getvalue())


def unpack_img(s, iscolor=-1):
    """(IRHeader, image) of a record made by `pack_img`; the image is a uint8 array, BGR for
    color. iscolor: -1 as stored, 0 grayscale, 1 three-channel color."""
    header, s = unpack(s)
    lib = _image_library()
    if getattr(lib, '__name__', '') == 'cv2':
        return header, lib.imdecode(np.frombuffer(s, dtype=np.uint8), iscolor)
    img = lib.open(io.BytesIO(s))
    if iscolor == 0:
        img = img.convert('L')
    elif iscolor == 1 or img.mode not in ('L', 'RGB'):
        img = img.convert('RGB')
    img = np.asarray(img)
    return header, img[:, :, ::-1].copy() if img.ndim == 3 else img

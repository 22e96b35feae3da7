"""MXNet's NDArray list file (`mx.nd.save` / `mx.nd.load`, `.params` checkpoints).

Layout (little-endian): u64 0x112, u64 0, u64 N, N array records, u64 K (0 or N), K names
(u64 length + UTF-8 bytes). Record versions read: V2 (0xF993FAC9, what MXNet 1.x writes), V3
(0xF993FACA, numpy-shape semantics), V1 (0xF993FAC8) and the pre-V1 form. Sparse arrays are
read and written as MXNet's sparse records (CSRNDArray, RowSparseNDArray) and stay sparse on
load. Every size taken from the file is checked against the bytes present before use, and the
parts of a sparse record against its shape (without densifying it).
"""
import functools
import math
import mmap
import os
import stat
import struct
import tempfile

import numpy as np
import torch

from .._safety import PARSE_ERRORS, limits, reading, shape_size
from ..base import MXNetError, CODE_DTYPES, DTYPE_CODES, np_dtype, bfloat16
from ..context import Context
from ..util import is_np_shape

LIST_MAGIC = 0x112
V1_MAGIC, V2_MAGIC, V3_MAGIC = 0xF993FAC8, 0xF993FAC9, 0xF993FACA
MAX_NDIM = limits.MAX_NDIM


def _invalid(detail):
    return MXNetError('Invalid NDArray file format: %s' % detail)


class _Reader:
    def __init__(self, buf, owned=False):
        self.buf = memoryview(buf)
        self.pos = 0
        self.owned = owned      # a writable buffer only the arrays read will use: no copies

    def remaining(self):
        return len(self.buf) - self.pos

    def take(self, n, what):
        if n < 0 or n > self.remaining():
            raise _invalid('%s needs %d bytes at offset %d, only %d left'
                           % (what, n, self.pos, self.remaining()))
        chunk = self.buf[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def unpack(self, fmt, what):
        size = struct.calcsize(fmt)
        return struct.unpack(fmt, self.take(size, what))

    def u32(self, what):
        return self.unpack('<I', what)[0]

    def i32(self, what):
        return self.unpack('<i', what)[0]

    def u64(self, what):
        return self.unpack('<Q', what)[0]

    def shape(self, what, dim_fmt='<q'):
        ndim = self.i32(what + ' ndim')
        if ndim < 0 and ndim != -1:
            raise _invalid('%s has ndim %d' % (what, ndim))
        if ndim > MAX_NDIM:
            raise _invalid('%s has ndim %d (at most %d)' % (what, ndim, MAX_NDIM))
        if ndim <= 0:
            return ndim, ()
        size = struct.calcsize(dim_fmt)
        dims = struct.unpack('<%d%s' % (ndim, dim_fmt[-1]), self.take(ndim * size, what + ' dims'))
        if any(d < 0 for d in dims):
            raise _invalid('%s has negative dims %s' % (what, dims))
        try:
            shape_size(dims, what)
        except MXNetError as err:
            raise _invalid(str(err)) from None
        return ndim, tuple(dims)


def _dtype_of(flag):
    if flag not in CODE_DTYPES:
        raise _invalid('unknown dtype flag %d' % flag)
    return CODE_DTYPES[flag]


def _read_dense(reader, shape, dtype, what):
    count = shape_size(shape, what)
    itemsize = 2 if dtype == bfloat16 else dtype.itemsize
    raw = reader.take(count * itemsize, what + ' data')
    if dtype == bfloat16:
        t = torch.frombuffer(bytearray(raw), dtype=torch.int16).view(torch.bfloat16)
        return t.reshape(shape)
    arr = np.frombuffer(raw, dtype=dtype.newbyteorder('<'), count=count)
    if not (reader.owned and arr.flags.aligned and arr.flags.writeable):
        arr = arr.astype(dtype, copy=True)
    return torch.from_numpy(arr.reshape(shape))


_DENSE_HEAD = struct.Struct('<Iii')         # magic, storage type, ndim
_DEVICE_DTYPE = struct.Struct('<iii')       # device type, device id, dtype flag


def _read_plain_dense(reader, magic):
    """The common record (`magic`, dense, 1 to MAX_NDIM dims, at least one element, a known
    dtype other than bfloat16, all its bytes present) read with a few unpacks; None, with
    nothing consumed, for any other record, which _read_record reads field by field."""
    buf, pos = reader.buf, reader.pos
    if len(buf) - pos < 12:
        return None
    head, stype, ndim = _DENSE_HEAD.unpack_from(buf, pos)
    if head != magic or stype != 0 or not 0 < ndim <= MAX_NDIM:
        return None
    data_at = pos + 24 + 8 * ndim
    if data_at > len(buf):
        return None
    shape = struct.unpack_from('<%dq' % ndim, buf, pos + 12)
    dtype = CODE_DTYPES.get(_DEVICE_DTYPE.unpack_from(buf, data_at - 12)[2])
    count = math.prod(shape)
    if dtype is None or dtype == bfloat16 or min(shape) <= 0 or \
            data_at + count * dtype.itemsize > len(buf):
        return None
    reader.pos = data_at + count * dtype.itemsize
    arr = np.frombuffer(buf, dtype=_little(dtype), count=count, offset=data_at)
    if not (reader.owned and arr.flags.aligned and arr.flags.writeable):
        arr = arr.astype(dtype, copy=True)
    return torch.from_numpy(arr.reshape(shape))


@functools.lru_cache(maxsize=None)
def _little(dtype):
    return dtype.newbyteorder('<')


def _read_record(reader, what, fast_magic=None):
    """One array record -> torch tensor on CPU (None for an empty 'none' record). fast_magic:
    the record version the caller expects (V2, or V3 under NumPy-shape semantics), whose plain
    dense records take _read_plain_dense's short path."""
    if fast_magic is not None:
        tensor = _read_plain_dense(reader, fast_magic)
        if tensor is not None:
            return tensor
    magic = reader.u32(what + ' magic')
    if magic in (V2_MAGIC, V3_MAGIC) and (magic == V3_MAGIC) != is_np_shape():
        # as MXNet: a record is read back under the shape semantics it was written in
        raise MXNetError('%s was %ssaved in np shape semantics, but is being loaded %s them; '
                         'use `with mx.np_shape(%s):` around the load'
                         % (what, '' if magic == V3_MAGIC else 'not ',
                            'without' if magic == V3_MAGIC else 'in', magic == V3_MAGIC))
    if magic in (V2_MAGIC, V3_MAGIC):
        stype = reader.i32(what + ' storage type')
        if stype not in (0, 1, 2):
            raise _invalid('%s has storage type %d' % (what, stype))
        storage_shape = reader.shape(what + ' storage shape')[1] if stype != 0 else None
        ndim, shape = reader.shape(what + ' shape')
        if ndim == 0 and magic == V2_MAGIC:
            return None
        if ndim < 0:
            raise _invalid('%s has unknown shape' % what)
    elif magic == V1_MAGIC:
        stype, storage_shape = 0, None
        ndim, shape = reader.shape(what + ' shape')
        if ndim == 0:
            return None
    else:   # pre-V1: the word read is ndim, dims are u32
        ndim = magic
        if ndim > MAX_NDIM:
            raise _invalid('%s starts with 0x%x, not a known record' % (what, magic))
        stype, storage_shape = 0, None
        shape = tuple(reader.unpack('<%dI' % ndim, what + ' dims')) if ndim else ()
        shape_size(shape, what)
        if ndim == 0:
            return None
    reader.i32(what + ' device type')
    reader.i32(what + ' device id')
    dtype = _dtype_of(reader.i32(what + ' dtype'))
    if stype == 0:
        return _read_dense(reader, shape, dtype, what)
    # sparse: aux descriptors, values, aux arrays; checked part by part, kept sparse
    n_aux = 1 if stype == 1 else 2
    aux_desc = []
    for k in range(n_aux):
        aux_dtype = _dtype_of(reader.i32(what + ' aux dtype'))
        if aux_dtype.kind not in 'iu':
            raise _invalid('%s has %s indices (an integer type is needed)' % (what, aux_dtype))
        aux_desc.append((aux_dtype, reader.shape(what + ' aux shape')[1]))
    values = _read_dense(reader, storage_shape, dtype, what)
    aux = [_read_dense(reader, s, d, what + ' aux') for d, s in aux_desc]
    aux = [_as_int64(a, what) for a in aux]
    _check_sparse(stype, shape, values, aux, what)
    from .sparse import _new
    return _new('row_sparse' if stype == 1 else 'csr', shape, Context('cpu', 0),
                parts=(values,) + tuple(aux))


def _as_int64(tensor, what):
    """Sparse indices as int64 (uint64 values past int64's range are rejected)."""
    if tensor.dtype == torch.uint64:
        raw = tensor.numpy()
        if raw.size and raw.max() > np.iinfo(np.int64).max:
            raise _invalid('%s has an index beyond int64' % what)
        return torch.from_numpy(raw.astype(np.int64))
    return tensor.to(torch.int64)


def _check_sparse(stype, shape, values, aux, what):
    """Raise unless a sparse record's parts describe an array of `shape` (never densified)."""
    if not shape:
        raise _invalid('%s is sparse but has no dimensions' % what)
    if any(a.dim() != 1 for a in aux):
        raise _invalid('%s has indices that are not 1-D' % what)
    if stype == 1:
        rows = aux[0]
        if tuple(values.shape) != (len(rows),) + tuple(shape[1:]):
            raise _invalid('%s is row_sparse of shape %s with %d row indices but values of shape '
                           '%s' % (what, shape, len(rows), tuple(values.shape)))
        if len(rows) and (int(rows.min()) < 0 or int(rows.max()) >= shape[0]):
            raise _invalid('%s has row indices out of range [0, %d)' % (what, shape[0]))
        if len(rows) > 1 and not bool((rows[1:] > rows[:-1]).all()):
            raise _invalid('%s has row indices that are not sorted and unique' % what)
        return
    if len(shape) != 2:
        raise _invalid('%s is csr but not 2-D' % what)
    indptr, cols = aux
    if values.dim() != 1 or len(values) != len(cols):
        raise _invalid('%s has %s values for %d column indices'
                       % (what, tuple(values.shape), len(cols)))
    if len(indptr) != shape[0] + 1 or int(indptr[0]) != 0 or int(indptr[-1]) != len(cols) \
            or not bool((indptr[1:] >= indptr[:-1]).all()):
        raise _invalid('%s has a bad csr indptr (it must rise from 0 to %d in %d steps)'
                       % (what, len(cols), shape[0]))
    if len(cols) and (int(cols.min()) < 0 or int(cols.max()) >= shape[1]):
        raise _invalid('%s has column indices out of range [0, %d)' % (what, shape[1]))


def _wrap_cpu(tensor):
    from .ndarray import NDArray, _wrap
    if isinstance(tensor, NDArray):        # a sparse record, already an array
        return tensor
    return _wrap(tensor, Context('cpu', 0))


def _wrap_all(tensors):
    """_wrap_cpu of each (None stays None), importing once."""
    from .ndarray import NDArray, _wrap
    return [t if t is None or isinstance(t, NDArray) else _wrap(t, Context('cpu', 0))
            for t in tensors]


def _read_name(reader, i):
    buf, pos = reader.buf, reader.pos
    length = struct.unpack_from('<Q', buf, pos)[0] if len(buf) - pos >= 8 else None
    if length is None or pos + 8 + length > len(buf):
        reader.take(reader.u64('name %d length' % i), 'name %d' % i)     # raises, saying why
    reader.pos = pos + 8 + length
    try:
        return str(buf[pos + 8:reader.pos], 'utf-8')
    except UnicodeDecodeError:
        raise _invalid('name %d is not UTF-8' % i) from None


def load_frombuffer(buf):
    """Parse an NDArray list file held in memory: a list, or a dict when names are stored."""
    if not isinstance(buf, (bytes, bytearray, memoryview)):
        raise TypeError('buf must be bytes, got %s' % type(buf).__name__)
    try:
        return _parse_list(buf)
    except PARSE_ERRORS as err:     # a check missed: still the file's fault, never a crash
        raise _invalid('%s: %s' % (type(err).__name__, err)) from None


def _parse_list(buf, owned=False):
    reader = _Reader(buf, owned)
    magic = reader.u64('header')
    if magic != LIST_MAGIC:
        raise _invalid('header magic is 0x%x, expected 0x112' % magic)
    reader.u64('reserved word')
    count = reader.u64('array count')
    if count > reader.remaining() // 4:        # every record takes at least 4 bytes
        raise _invalid('file claims %d arrays but holds only %d bytes' % (count, reader.remaining()))
    fast_magic = V3_MAGIC if is_np_shape() else V2_MAGIC
    tensors = [_read_record(reader, 'array %d' % i, fast_magic) for i in range(count)]
    n_names = reader.u64('name count')
    if n_names not in (0, count):
        raise _invalid('%d names for %d arrays' % (n_names, count))
    names = [_read_name(reader, i) for i in range(n_names)]
    arrays = _wrap_all(tensors)
    if n_names == 0:
        return arrays
    return dict(zip(names, arrays))


MAP_BYTES = 1 << 20     # files at least this large are mapped, not read


def _file_bytes(f):
    """The whole of an open file as a writable uint8 array that only the caller uses. A
    regular file of MAP_BYTES or more is mapped copy-on-write (MAP_PRIVATE): its pages come
    from the OS's file cache when first read, and a page is copied only if an array over it is
    written, so loading costs neither a copy nor fresh memory (the cost of a read into a
    buffer of our own is mostly the OS providing the buffer's pages). Smaller files, and files
    that cannot be mapped, are read once into a buffer."""
    info = os.fstat(f.fileno())
    if stat.S_ISREG(info.st_mode) and info.st_size >= MAP_BYTES:
        try:
            return np.frombuffer(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY),
                                 dtype=np.uint8)
        except (OSError, ValueError):
            pass
    data = torch.empty(info.st_size, dtype=torch.uint8).numpy()
    return data[:f.readinto(memoryview(data))]


def load(fname):
    """Load arrays written by `mx.nd.save` (or MXNet's own): a list, or a dict of name -> array.

    The arrays are views of one copy-on-write mapping of a large file (see _file_bytes): as for
    any mapped file, rewriting the file in place (truncating it) while they are in use is an
    error; `mx.nd.save` and the checkpoint savers replace a file (write a new one and rename
    it), which leaves loaded arrays as they were."""
    if not isinstance(fname, (str, os.PathLike)):
        raise TypeError('fname required to be a string, got %s' % type(fname).__name__)
    with open(fname, 'rb') as f:
        data = _file_bytes(f)
    with reading(fname, 'file'):
        try:
            return _parse_list(data, owned=True)
        except PARSE_ERRORS as err:
            raise _invalid('%s: %s' % (type(err).__name__, err)) from None


# ---------------------------------------------------------------------------------------------
def encode_record(arr):
    """One record for a dense array (what `NDArray.__getstate__` and `save` write): V2, or V3
    while NumPy-shape semantics are on."""
    from .ndarray import NDArray
    if not isinstance(arr, NDArray):
        raise TypeError('only NDArray can be saved, got %s' % type(arr).__name__)
    if arr.stype != 'default':
        return _encode_sparse(arr)
    t = arr._tensor.detach()
    dtype = np_dtype(t.dtype)
    shape = tuple(t.shape)
    np_shape = is_np_shape()        # V3 records (a 0-d shape is a scalar) under np semantics
    if len(shape) == 0 and not np_shape:
        shape, t = (1,), t.reshape(1)
    head = struct.pack('<Iii', V3_MAGIC if np_shape else V2_MAGIC, 0, len(shape)) + struct.pack('<%dq' % len(shape), *shape)
    ctx = arr.context
    dev_type = 2 if ctx.device_typeid == 2 else 1
    head += struct.pack('<iii', dev_type, ctx.device_id, DTYPE_CODES[dtype])
    return head + _tensor_bytes(t)


def _tensor_bytes(t):
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().tobytes()
    dtype = np_dtype(t.dtype)
    return t.numpy().astype(dtype.newbyteorder('<'), copy=False).tobytes()


def _shape_bytes(shape):
    return struct.pack('<i', len(shape)) + struct.pack('<%dq' % len(shape), *shape)


def _encode_sparse(arr):
    """A V2 sparse record: storage type, storage shape, shape, device, dtype, then per aux
    array its dtype and shape, then the values and the aux arrays (csr: indptr, indices)."""
    parts = arr._get_parts()
    stype = 1 if arr.stype == 'row_sparse' else 2
    ctx = arr.context
    head = struct.pack('<Ii', V2_MAGIC, stype) + _shape_bytes(tuple(parts[0].shape))
    head += _shape_bytes(arr.shape)
    head += struct.pack('<iii', 2 if ctx.device_typeid == 2 else 1, ctx.device_id,
                        DTYPE_CODES[np_dtype(parts[0].dtype)])
    for aux in parts[1:]:
        head += struct.pack('<i', DTYPE_CODES[np_dtype(aux.dtype)]) + _shape_bytes(tuple(aux.shape))
    return head + b''.join(_tensor_bytes(p) for p in parts)


def decode_record(buf):
    try:
        tensor = _read_record(_Reader(buf), 'array')
    except PARSE_ERRORS as err:
        raise _invalid('%s: %s' % (type(err).__name__, err)) from None
    if tensor is None:
        raise MXNetError('the record holds no array')
    return _wrap_cpu(tensor)


def save_tobuffer(data):
    from .ndarray import NDArray
    if isinstance(data, NDArray):
        data = [data]
    if isinstance(data, dict):
        names = list(data)
        arrays = [data[k] for k in names]
        if not all(isinstance(k, str) for k in names):
            raise TypeError('save only accepts dict str->NDArray')
    elif isinstance(data, (list, tuple)):
        names, arrays = [], list(data)
    else:
        raise ValueError('data needs to either be a NDArray, dict of str, NDArray pairs '
                         'or a list of NDarrays, got %s' % type(data).__name__)
    if not all(isinstance(a, NDArray) for a in arrays):
        raise TypeError('save only accepts NDArray values, got %s'
                        % sorted({type(a).__name__ for a in arrays}))
    parts = [struct.pack('<QQQ', LIST_MAGIC, 0, len(arrays))]
    parts += [encode_record(a) for a in arrays]
    parts.append(struct.pack('<Q', len(names)))
    for name in names:
        raw = name.encode('utf-8')
        parts.append(struct.pack('<Q', len(raw)) + raw)
    return b''.join(parts)


def atomic_write(fname, payload):
    """Write bytes so that a crash mid-write never leaves a truncated `fname` behind."""
    fname = os.fspath(fname)
    folder = os.path.dirname(os.path.abspath(fname))
    prefix = '.%s.' % os.path.basename(fname)
    fd, tmp = tempfile.mkstemp(prefix='%s%d.' % (prefix, os.getpid()), dir=folder)
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)       # as open() would make it, not mkstemp's 0600
        with os.fdopen(fd, 'wb') as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, fname)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _sweep_orphans(folder, prefix)


def _sweep_orphans(folder, prefix):
    """Remove the temp files of earlier writes of the same file whose writer is gone (a process
    killed mid-write leaves `.name.<pid>.xxxx`); a live writer's file stays."""
    for name in os.listdir(folder):
        pid = name[len(prefix):].split('.', 1)[0] if name.startswith(prefix) else ''
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
            continue                              # still running: its write may be under way
        except ProcessLookupError:
            pass
        except (PermissionError, OverflowError):
            continue
        try:
            os.unlink(os.path.join(folder, name))
        except OSError:
            pass


def save(fname, data):
    """Save an NDArray, a list of NDArrays or a dict str -> NDArray in MXNet's format."""
    if not isinstance(fname, (str, os.PathLike)):
        raise TypeError('fname required to be a string, got %s' % type(fname).__name__)
    atomic_write(fname, save_tobuffer(data))

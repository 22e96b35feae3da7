"""Errors and dtype vocabulary shared by every part of mxtorch."""
import ctypes
import os
import platform

import numpy as np
import torch


class MXNetError(RuntimeError):
    """The error MXNet raises for a user mistake detected by the framework."""


error_types = {}     # error name -> class, filled by register_error (mx.error)


def register_error(func_name=None, cls=None):
    """Register an error class under a name (its own by default) in `error_types`, the table
    from which MXNet's C-API error handler picks the class of a "Name: message" error (mxtorch
    raises its errors in Python; the table is kept for code that reads or extends it). As a
    decorator (`@register_error`, `@register_error('Name')`) or called
    (`register_error('Name', cls)`); returns the class."""
    if callable(func_name):
        cls, func_name = func_name, func_name.__name__

    def register(mycls):
        error_types[func_name if isinstance(func_name, str) else mycls.__name__] = mycls
        return mycls
    return register if cls is None else register(cls)


@register_error
class NotImplementedForSymbol(MXNetError):
    """Raised for NDArray-only operations attempted on a Symbol."""

    def __init__(self, function, alias=None, *args):
        name = function if isinstance(function, str) else function.__name__
        msg = 'Function %s' % name
        if alias:
            msg += ' (namely operator "%s")' % alias
        if args:
            msg += ' with arguments (%s)' % ', '.join(type(a).__name__ for a in args)
        super().__init__(msg + ' is not implemented for Symbol and only available in NDArray.')


# ---------------------------------------------------------------------------------------------
# dtypes.  MXNet speaks NumPy dtypes; tensors are torch dtypes; files and attrs use integer codes.
# ---------------------------------------------------------------------------------------------
bfloat16 = np.dtype([('bfloat16', np.uint16)])   # how MXNet's Python exposes bfloat16

_NP_TO_TORCH = {
    np.dtype('float32'): torch.float32, np.dtype('float64'): torch.float64,
    np.dtype('float16'): torch.float16, np.dtype('uint8'): torch.uint8,
    np.dtype('int8'): torch.int8, np.dtype('int16'): torch.int16, np.dtype('int32'): torch.int32,
    np.dtype('int64'): torch.int64, np.dtype('bool'): torch.bool,
    np.dtype('uint16'): torch.uint16, np.dtype('uint32'): torch.uint32, np.dtype('uint64'): torch.uint64,
    bfloat16: torch.bfloat16,
}
_TORCH_TO_NP = {t: n for n, t in _NP_TO_TORCH.items()}

# type_flag codes of the NDArray file format and of the `__dtype__` symbol attribute
DTYPE_CODES = {
    np.dtype('float32'): 0, np.dtype('float64'): 1, np.dtype('float16'): 2, np.dtype('uint8'): 3,
    np.dtype('int32'): 4, np.dtype('int8'): 5, np.dtype('int64'): 6, np.dtype('bool'): 7,
    np.dtype('int16'): 8, np.dtype('uint16'): 9, np.dtype('uint32'): 10, np.dtype('uint64'): 11,
    bfloat16: 12,
}
CODE_DTYPES = {c: d for d, c in DTYPE_CODES.items()}

default_dtype = np.dtype('float32')


def np_dtype(dtype):
    """Normalise any dtype-like (str, NumPy type or dtype, torch dtype) to a NumPy dtype."""
    if dtype is None:
        return None
    if isinstance(dtype, torch.dtype):
        try:
            return _TORCH_TO_NP[dtype]
        except KeyError:
            raise TypeError('dtype %s is not supported' % dtype) from None
    if isinstance(dtype, str) and dtype == 'bfloat16':
        return bfloat16
    try:
        result = np.dtype(dtype)
    except TypeError:
        raise TypeError('data type %r not understood' % (dtype,)) from None
    if result not in _NP_TO_TORCH:
        raise TypeError('dtype %s is not supported' % result)
    return result


def torch_dtype(dtype):
    """The torch dtype of a dtype-like."""
    if isinstance(dtype, torch.dtype):
        return dtype
    return _NP_TO_TORCH[np_dtype(dtype)]


def dtype_type(dtype):
    """What MXNet returns for `.dtype`: the NumPy type class (numpy.float32), not a dtype instance."""
    d = np_dtype(dtype)
    return d if d == bfloat16 else d.type


def dtype_name(dtype):
    d = np_dtype(dtype)
    return 'bfloat16' if d == bfloat16 else d.name


def is_float_dtype(dtype):
    return torch_dtype(dtype).is_floating_point


def check_call(ret):
    """MXNet's C-API return check: raise MXNetError unless `ret` is 0 (there is no C library
    here; the name is kept for scripts that import it)."""
    if ret != 0:
        raise MXNetError('call returned %r' % (ret,))


integer_types = (int, np.integer)
numeric_types = (float, int, np.generic)
string_types = (str,)
py_str = lambda x: x.decode('utf-8') if isinstance(x, bytes) else x  # noqa: E731
mx_real_t = np.float32
mx_uint = ctypes.c_uint
mx_int = ctypes.c_int
mx_int64 = ctypes.c_int64
mx_float = ctypes.c_float
mx_float_p = ctypes.POINTER(mx_float)
# opaque handle types of MXNet's C API; mxtorch's objects are plain Python, so they are only names
NDArrayHandle = SymbolHandle = ExecutorHandle = KVStoreHandle = FunctionHandle = ctypes.c_void_p
OpHandle = CachedOpHandle = DataIterHandle = DataIterCreatorHandle = ctypes.c_void_p
RecordIOHandle = ProfileHandle = DLPackHandle = ctypes.c_void_p
from .capi import _LIB  # noqa: E402  (the few C functions scripts call through ctypes)


# ctypes helpers of MXNet's C-API conventions
def c_str(string):
    """A C string (char *) holding `string` encoded as UTF-8."""
    return ctypes.c_char_p(string.encode('utf-8'))


def c_str_array(strings):
    """A C array of char * holding `strings` (UTF-8)."""
    arr = (ctypes.c_char_p * len(strings))()
    arr[:] = [s.encode('utf-8') for s in strings]
    return arr


def c_array(ctype, values):
    """A C array of `ctype` holding `values`."""
    out = (ctype * len(values))()
    out[:] = values
    return out


def c_array_buf(ctype, buf):
    """A C array of `ctype` over the memory of the buffer `buf` (no copy)."""
    return (ctype * len(buf)).from_buffer(buf)


def c_handle_array(objs):
    """A C array of the `.handle` values of `objs`."""
    arr = (ctypes.c_void_p * len(objs))()
    arr[:] = [o.handle for o in objs]
    return arr


def ctypes2buffer(cptr, length):
    """A bytearray copy of `length` bytes at the ctypes char pointer `cptr`."""
    if not isinstance(cptr, ctypes.POINTER(ctypes.c_char)):
        raise TypeError('expected char pointer')
    res = bytearray(length)
    rptr = (ctypes.c_char * length).from_buffer(res)
    if not ctypes.memmove(rptr, cptr, length):
        raise RuntimeError('memmove failed')
    return res


def ctypes2numpy_shared(cptr, shape):
    """A NumPy float32 array of `shape` over the memory at the ctypes float pointer `cptr`."""
    if not isinstance(cptr, ctypes.POINTER(mx_float)):
        raise RuntimeError('expected float pointer')
    size = int(np.prod(shape))
    dbuffer = (mx_float * size).from_address(ctypes.addressof(cptr.contents))
    return np.frombuffer(dbuffer, dtype=np.float32).reshape(shape)


class _NullType:
    """Placeholder for an argument left at its default."""

    def __repr__(self):
        return '_Null'


_Null = _NullType()


class NotSupportedForSparseNDArray(MXNetError):
    """Raised for dense-only functions called on a sparse array."""

    def __init__(self, function, alias, *args):
        super().__init__('Function %s (namely operator "%s") with arguments (%s) is not supported '
                         'for SparseNDArray and only available in NDArray.'
                         % (function.__name__, alias, ', '.join(type(a).__name__ for a in args)))


def data_dir_default():
    """Where MXNet keeps downloaded files when MXNET_HOME is not set."""
    if platform.system() == 'Windows':
        return os.path.join(os.environ.get('APPDATA'), 'mxnet')
    return os.path.join(os.path.expanduser('~'), '.mxnet')


def data_dir():
    """MXNET_HOME, or the platform default: where data sets and models are stored."""
    return os.getenv('MXNET_HOME', data_dir_default())


def _as_list(obj):
    """`obj` itself if it is a list or tuple, else `[obj]`."""
    return obj if isinstance(obj, (list, tuple)) else [obj]


class _MXClassPropertyDescriptor:
    def __init__(self, fget, fset=None):
        self.fget = fget
        self.fset = fset

    def __get__(self, obj, clas=None):
        return self.fget.__get__(obj, clas if clas is not None else type(obj))()

    def __set__(self, obj, value):
        if not self.fset:
            raise AttributeError("can't set attribute")
        clas = obj if isinstance(obj, type) else type(obj)
        return self.fset.__get__(obj, clas)(value)

    def setter(self, func):
        """Decorator: the function setting the property (on the class, with a class whose
        metaclass is _MXClassPropertyMetaClass)."""
        self.fset = func if isinstance(func, (classmethod, staticmethod)) else classmethod(func)
        return self


def classproperty(func):
    """A property of the class itself; add a setter with `@<name>.setter` (assigning on the
    class needs the metaclass _MXClassPropertyMetaClass)."""
    return _MXClassPropertyDescriptor(func if isinstance(func, (classmethod, staticmethod))
                                      else classmethod(func))


class _MXClassPropertyMetaClass(type):
    """Metaclass making `Class.prop = value` call the setter of a classproperty `prop`."""

    def __setattr__(cls, key, value):
        descriptor = cls.__dict__.get(key)
        if isinstance(descriptor, _MXClassPropertyDescriptor):
            return descriptor.__set__(cls, value)
        return super().__setattr__(key, value)


def with_metaclass(meta, *bases):
    """Create a base class with metaclass `meta` (six's helper, which MXNet's base exports)."""
    return meta('_with_metaclass_base', bases or (object,), {})

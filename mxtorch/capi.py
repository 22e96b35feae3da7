"""mx.base._LIB: the few entry points of MXNet's C library that Python code calls directly.

mxtorch has no C library. `_LIB` answers the calls scripts make through ctypes with MXNet's
conventions -- arguments as ctypes values, results written through `ctypes.byref`, 0 returned
on success (see base.check_call) -- for the functions listed in `_LibMXNet`. An NDArray handle
it hands out is a key that `mx.nd.NDArray(handle=...)` takes the array from.
"""
import ctypes
import itertools
import threading

import torch
import torch.utils.dlpack

_lock = threading.Lock()
_arrays = {}                     # handle value -> torch.Tensor waiting for NDArray(handle=...)
_next = itertools.count(1)

# as MXNet sets them on import, so that scripts' own ctypes calls get whole pointers back
ctypes.pythonapi.PyCapsule_New.restype = ctypes.py_object
ctypes.pythonapi.PyCapsule_GetPointer.restype = ctypes.c_void_p


def _pointer(value):
    return value.value if isinstance(value, ctypes.c_void_p) else int(value)


def _write_handle(ref, tensor):
    """Store `tensor` under a new handle value and write that value through `ref`."""
    target = getattr(ref, '_obj', ref)           # ctypes.byref(x) -> x
    with _lock:
        key = next(_next)
        _arrays[key] = tensor
    target.value = key


def take_tensor(handle):
    """The tensor an _LIB call left under `handle` (each handle can be taken once)."""
    key = _pointer(handle)
    with _lock:
        tensor = _arrays.pop(key, None)
    if tensor is None:
        raise ValueError('NDArray handle %r is not one that mxtorch handed out (or it was '
                         'already used)' % (handle,))
    return tensor


class ArrayHandle(ctypes.c_void_p):
    """An NDArrayHandle lent to a callback for the length of the call (MXNet's monitor and op
    hook protocol: `NDArray(ctypes.cast(handle, NDArrayHandle))` gives the array). For callbacks
    written against NDArrays it also reads as the array itself (`.shape`, `.asnumpy()`)."""

    def __init__(self, array):
        with _lock:
            key = next(_next)
            _arrays[key] = array._tensor
        super().__init__(key)
        self.__dict__['_array'] = array

    def __getattr__(self, name):
        return getattr(self.__dict__['_array'], name)

    def __repr__(self):
        return '<NDArrayHandle %d of %r>' % (self.value, self.__dict__['_array'])

    def release(self):
        """End the loan: a handle not taken by NDArray(handle=...) is forgotten."""
        with _lock:
            _arrays.pop(self.value, None)


def as_array(value):
    """The NDArray a monitor callback was given: the array itself or a lent handle to it."""
    from .ndarray.ndarray import NDArray
    if isinstance(value, NDArray):
        return value
    if isinstance(value, ArrayHandle):
        return value.__dict__['_array']
    return NDArray(handle=ctypes.cast(value, ctypes.c_void_p), writable=False)


class _LibMXNet:
    """The emulated library: attributes are the supported C functions."""

    @staticmethod
    def MXNDArrayFromDLPack(dlpack, out):  # pylint: disable=invalid-name
        """An NDArray over the DLManagedTensor at address `dlpack`, which it now owns."""
        capsule = ctypes.pythonapi.PyCapsule_New(ctypes.c_void_p(_pointer(dlpack)),
                                                 ctypes.c_char_p(b'dltensor'), None)
        _write_handle(out, torch.utils.dlpack.from_dlpack(capsule))
        return 0

    MXNDArrayFromDLPackEx = MXNDArrayFromDLPack

    @staticmethod
    def omp_get_max_threads():
        return torch.get_num_threads()

    def __getattr__(self, name):
        raise AttributeError('mxtorch has no C library: MXNet C API function %s is not '
                             'available (supported: MXNDArrayFromDLPack, omp_get_max_threads)'
                             % name)


_LIB = _LibMXNet()

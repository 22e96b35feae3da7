"""mx.base._LIB (the emulated C entry points), the ctypes helpers and mx.runtime.Features."""
import ctypes
import gc

import numpy as np
import pytest

import mxtorch as mx
from mxtorch.base import NDArrayHandle, _LIB, c_array, c_str, c_str_array, check_call


def test_ndarray_from_dlpack_through_the_c_api():
    x = mx.nd.ones((2, 3))
    capsule = mx.nd.to_dlpack_for_read(x)
    assert ctypes.pythonapi.PyCapsule_IsValid(ctypes.py_object(capsule), c_str('dltensor'))
    address = ctypes.pythonapi.PyCapsule_GetPointer(ctypes.py_object(capsule), c_str('dltensor'))
    assert isinstance(address, int) and address > 0       # restype c_void_p: a whole pointer
    handle = NDArrayHandle()
    check_call(_LIB.MXNDArrayFromDLPack(ctypes.c_void_p(address), ctypes.byref(handle)))
    ctypes.pythonapi.PyCapsule_SetName(ctypes.py_object(capsule), c_str('used_dltensor'))
    ctypes.pythonapi.PyCapsule_SetDestructor(ctypes.py_object(capsule), None)
    z = mx.nd.NDArray(handle=handle)
    x[:] = 5                                                # the memory is shared
    np.testing.assert_array_equal(z.asnumpy(), np.full((2, 3), 5))
    with pytest.raises(ValueError, match='handle'):
        mx.nd.NDArray(handle=handle)                        # taken once
    del capsule, z
    gc.collect()
    np.testing.assert_array_equal(x.asnumpy(), np.full((2, 3), 5))
    assert _LIB.omp_get_max_threads() >= 1
    with pytest.raises(AttributeError, match='MXNotAFunction'):
        _LIB.MXNotAFunction


def test_ctypes_helpers():
    assert c_str('ab').value == b'ab'
    assert [s for s in c_str_array(['a', 'bc'])] == [b'a', b'bc']
    assert list(c_array(ctypes.c_int, [1, 2, 3])) == [1, 2, 3]
    with pytest.raises(mx.MXNetError):
        check_call(-1)


def test_features_is_a_singleton():
    first, second = mx.runtime.Features(), mx.runtime.Features()
    assert first is second and len(first) >= 30 and 'CUDA' in first
    with pytest.raises(RuntimeError):
        first.is_enabled('no such feature')

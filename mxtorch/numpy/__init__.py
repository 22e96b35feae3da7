"""mx.np: MXNet's NumPy-compatible interface on mxtorch's NDArray handles.

`mx.np.ndarray` is an NDArray with NumPy semantics (zero-dim arrays, NumPy indexing, NumPy
dtype promotion as MXNet 1.9.1 applies it, float32 by default); the functions follow NumPy's
signatures and run torch on the arrays' tensors, so mx.autograd records through them.
"""
import numpy as _onp

from .multiarray import (ndarray, array, asarray, zeros, ones, empty, full, zeros_like as _zl,
                         ones_like as _ol, empty_like, full_like, arange, linspace, logspace, eye,
                         identity, tri, indices, from_numpy, shares_memory)
from ._funcs import *  # noqa: F401,F403
from ._funcs import METHODS as _METHODS  # noqa: F401
from . import _funcs as _funcs_module
from . import random, linalg

zeros_like, ones_like = _zl, _ol
round = _funcs_module.around  # pylint: disable=redefined-builtin
# pylint: disable=redefined-builtin
max, min, sum, abs, all, any = (_funcs_module.max, _funcs_module.min, _funcs_module.sum,
                                _funcs_module.abs, _funcs_module.all, _funcs_module.any)
pi, e, inf, nan, newaxis = _funcs_module.pi, _funcs_module.e, float('inf'), float('nan'), None
PZERO, NZERO, euler_gamma = 0.0, -0.0, _funcs_module.euler_gamma

float16, float32, float64 = _onp.float16, _onp.float32, _onp.float64
int8, int16, int32, int64 = _onp.int8, _onp.int16, _onp.int32, _onp.int64
uint8, uint16, uint32, uint64 = _onp.uint8, _onp.uint16, _onp.uint32, _onp.uint64
bool_ = _onp.bool_
bool = _onp.bool_  # pylint: disable=redefined-builtin
dtype = _onp.dtype
finfo, iinfo = _onp.finfo, _onp.iinfo
integer, floating, number, inexact, generic = (_onp.integer, _onp.floating, _onp.number,
                                               _onp.inexact, _onp.generic)
issubdtype, result_type, promote_types = _onp.issubdtype, _onp.result_type, _onp.promote_types


def set_printoptions(*args, **kwargs):
    """NumPy's print options (arrays print through NumPy)."""
    _onp.set_printoptions(*args, **kwargs)

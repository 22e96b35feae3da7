"""Zero-filled tensors that cost nothing until they are written.

`torch.zeros` writes every byte when called, and the OS maps in each page as it does. A large
CPU array made from calloc'd memory (NumPy's zeros) is zero by the OS's guarantee instead: its
pages are mapped and zeroed only when first touched. (NumPy asks the kernel for huge pages for
large arrays; that is turned off here, as torch's own allocator leaves it: on a busy machine
the kernel may stall for seconds compacting memory to find them.)
Binding a graph or a Module allocates its parameters, gradients and outputs this way, so a
bind costs no memory traffic; the first write (loading the weights, the first forward) pays for
the pages it touches, once.
"""
import numpy as np
import torch

try:
    from numpy._core.multiarray import _set_madvise_hugepage
except ImportError:             # NumPy 1.x
    try:
        from numpy.core.multiarray import _set_madvise_hugepage
    except ImportError:
        _set_madvise_hugepage = None

LAZY_BYTES = 1 << 20            # below this, torch.zeros is as cheap and keeps torch's allocator
_NUMPY = {}                     # torch dtype -> NumPy dtype (None: NumPy has none)


def _numpy_dtype(dtype):
    if dtype not in _NUMPY:
        try:
            _NUMPY[dtype] = torch.empty(0, dtype=dtype).numpy().dtype
        except TypeError:       # bfloat16 and other dtypes NumPy lacks
            _NUMPY[dtype] = None
    return _NUMPY[dtype]


def zeros(shape, dtype=torch.float32, device=None):
    """A zero-filled tensor; a large one on the CPU is lazily zeroed (see the module's doc).
    Such a tensor's storage cannot be resized, which mxtorch never does to arrays it binds."""
    device = torch.device('cpu') if device is None else torch.device(device)
    if device.type == 'cpu':
        npdt = _numpy_dtype(dtype)
        size = 1
        for d in shape:
            size *= int(d)
        if npdt is not None and size * npdt.itemsize >= LAZY_BYTES:
            return torch.from_numpy(_calloc(tuple(int(d) for d in shape), npdt))
    return torch.zeros(shape, dtype=dtype, device=device)


def _calloc(shape, npdt):
    old = _set_madvise_hugepage(False) if _set_madvise_hugepage else None
    try:
        return np.zeros(shape, dtype=npdt)
    finally:
        if _set_madvise_hugepage:
            _set_madvise_hugepage(old)

"""Helpers shared by the data iterators: input normalisation, sharding and batch slicing."""
import numpy as np
import torch

from ..base import integer_types
from ..ndarray import NDArray, array, from_torch


def _init_data(data, allow_empty, default_name):
    """Normalise iterator input to a list of (name, NDArray) sorted by name.

    Accepts one array (NDArray, NumPy array or any array-like with a `shape`, e.g. an h5py
    dataset, read into memory), a list of them (one -> `default_name`, several ->
    `_<i>_<default_name>`) or a dict name -> array. Non-NDArray values go through `mx.nd.array`,
    so NumPy input of any dtype becomes float32.
    """
    if data is None:
        if not allow_empty:
            raise ValueError('data must be given: an array, a list of arrays or a dict of them')
        data = []
    if not isinstance(data, (list, tuple, dict)) and hasattr(data, 'shape'):
        data = [data]
    if isinstance(data, (list, tuple)):
        if not data and not allow_empty:
            raise ValueError('data must hold at least one array, got an empty list')
        if len(data) == 1:
            data = {default_name: data[0]}
        else:
            data = {'_%d_%s' % (i, default_name): d for i, d in enumerate(data)}
    if not isinstance(data, dict):
        raise TypeError('Input must be NDArray, numpy.ndarray, h5py.Dataset, a list of them or '
                        'a dict with them as values; got %s' % type(data).__name__)
    arrays = {}
    for name, value in data.items():
        if isinstance(value, NDArray):
            arrays[name] = value
            continue
        try:
            arrays[name] = array(value)
        except TypeError:
            raise TypeError('Invalid type %s for %r: expected NDArray, numpy.ndarray or '
                            'h5py.Dataset' % (type(value).__name__, name)) from None
    return sorted(arrays.items(), key=lambda item: item[0])


def _part_range(num_samples, num_parts, part_index):
    """[start, stop) of the part_index-th of num_parts contiguous, near-equal pieces."""
    if not (isinstance(num_parts, integer_types) and num_parts >= 1):
        raise ValueError('num_parts must be an int >= 1, got %r' % (num_parts,))
    if not (isinstance(part_index, integer_types) and 0 <= part_index < num_parts):
        raise ValueError('part_index must be an int in [0, num_parts=%d), got %r'
                         % (num_parts, part_index))
    start = num_samples * part_index // num_parts
    stop = num_samples * (part_index + 1) // num_parts
    if start == stop and num_parts > 1:      # (one part of no samples: an empty iterator)
        raise ValueError('part %d of %d is empty: only %d samples to split'
                         % (part_index, num_parts, num_samples))
    return start, stop


def _take(arr, axis, start, stop):
    """Samples start..stop-1 of `arr` along `axis`, positions taken modulo the length.

    Within range this is a view (no copy); wrapping past either end gathers a copy.
    """
    length = arr.shape[axis]
    tensor = arr._tensor
    if 0 <= start <= stop <= length:
        return _like(arr, tensor.narrow(axis, start, stop - start))
    index = torch.arange(start, stop, device=tensor.device) % length
    return _like(arr, tensor.index_select(axis, index))


def _like(arr, tensor):
    """`tensor` as an array of arr's storage type (a csr batch stays csr)."""
    if arr.stype == 'default':
        return from_torch(tensor, arr.context)
    from ..ndarray.sparse import from_dense_tensor
    return from_dense_tensor(arr.stype, tensor, arr.context)


def _reorder(arr, axis, order):
    """A copy of `arr` with its samples along `axis` in `order` (a NumPy index array)."""
    index = torch.from_numpy(np.ascontiguousarray(order, dtype=np.int64)).to(arr._tensor.device)
    return _like(arr, arr._tensor.index_select(axis, index))

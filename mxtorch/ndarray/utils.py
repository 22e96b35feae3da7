"""mxnet.ndarray.utils: the creation and file functions that pick dense or sparse storage
(`stype`, a scipy.sparse matrix or a sparse NDArray), as mx.nd exposes them."""
from .ndarray import array, empty, zeros
from .serialization import load, load_frombuffer, save

__all__ = ['zeros', 'empty', 'array', 'load', 'load_frombuffer', 'save']

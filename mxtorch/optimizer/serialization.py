"""Optimizer-state pickles (`.states` files) in MXNet's form, read without running foreign code.

Writing: each NDArray becomes global `mxnet.ndarray.ndarray.NDArray`, REDUCE with `(None,)`,
BUILD with `{'handle': bytearray(<one array record>)}`; optimizers and lr schedulers are written
under their MXNet names (`mxnet.optimizer.optimizer.SGD`, `mxnet.lr_scheduler.FactorScheduler`),
so real MXNet can load the result. The standard C pickler insists on importing every global it
writes, so the pure-Python pickler (`pickle._Pickler`) is subclassed to write these names.

Reading: a restricted unpickler resolves only the NDArray classes (dense and sparse, both
densified), the optimizer and scheduler classes known to mxtorch (built-in or registered with
`mx.optimizer.register`) and `bytearray`; any other global raises `pickle.UnpicklingError`.
"""
import copyreg
import io
import pickle

from ..ndarray.ndarray import NDArray
from ..ndarray.serialization import decode_record, encode_record
from .. import lr_scheduler

PROTOCOL = 4     # what MXNet under Python 3.8+ writes

_ARRAY_GLOBALS = {('mxnet.ndarray.ndarray', 'NDArray'), ('mxnet.ndarray', 'NDArray'),
                  ('mxnet.ndarray.sparse', 'RowSparseNDArray'),
                  ('mxnet.ndarray.sparse', 'CSRNDArray'),
                  ('mxnet.ndarray.sparse', 'BaseSparseNDArray')}
_PY2_MODULES = {'__builtin__': 'builtins', 'copy_reg': 'copyreg'}


def _mxnet_name(obj):
    """(module, name) MXNet uses for an mxtorch class, or None for anything else."""
    if obj is NDArray:
        return 'mxnet.ndarray.ndarray', 'NDArray'
    if isinstance(obj, type) and obj.__module__ in ('mxtorch.optimizer.optimizer',
                                                     'mxtorch.lr_scheduler'):
        return 'mxnet' + obj.__module__[len('mxtorch'):], obj.__name__
    return None


class _MXNetPickler(pickle._Pickler):
    def reducer_override(self, obj):
        if isinstance(obj, NDArray):
            return NDArray, (None,), {'handle': bytearray(encode_record(obj))}
        return NotImplemented

    def save_global(self, obj, name=None):
        alias = _mxnet_name(obj)
        if alias is None:
            super().save_global(obj, name)
            return
        module, qualname = alias
        if self.proto >= 4:
            self.save(module)
            self.save(qualname)
            self.write(pickle.STACK_GLOBAL)
        else:
            self.write(pickle.GLOBAL + ('%s\n%s\n' % (module, qualname)).encode('utf-8'))
        self.memoize(obj)


def dumps(obj):
    """Pickle optimizer states (and optimizer objects) so that MXNet 1.x can read them."""
    buf = io.BytesIO()
    _MXNetPickler(buf, protocol=PROTOCOL).dump(obj)
    return buf.getvalue()


class _PickledArray:
    """What an NDArray pickle unpacks into; `_restore` turns it into an mxtorch NDArray."""
    __slots__ = ('record',)

    def __init__(self, handle=None):
        if handle is not None:
            raise pickle.UnpicklingError('NDArray pickle must be rebuilt from (None,), got %r'
                                         % (handle,))
        self.record = None

    def __setstate__(self, state):
        if not isinstance(state, dict) or set(state) != {'handle'}:
            raise pickle.UnpicklingError("NDArray pickle state must be {'handle': bytes}, got %r"
                                         % (type(state).__name__,))
        handle = state['handle']
        if handle is not None and not isinstance(handle, (bytes, bytearray)):
            raise pickle.UnpicklingError('NDArray pickle handle must be bytes, got %s'
                                         % type(handle).__name__)
        self.record = handle


def _bytearray(*args):
    """bytearray from bytes, or from (str, 'latin-1') as Python 2 wrote it; nothing else."""
    if len(args) == 1 and isinstance(args[0], (bytes, bytearray)):
        return bytearray(args[0])
    if len(args) == 2 and isinstance(args[0], str) and args[1] in ('latin-1', 'latin1'):
        return bytearray(args[0], 'latin-1')
    raise pickle.UnpicklingError('bytearray may only be rebuilt from bytes, got %r'
                                 % (tuple(type(a).__name__ for a in args),))


def _known_classes():
    from .optimizer import Optimizer
    classes = {}
    for klass in Optimizer.opt_registry.values():
        classes[(klass.__module__, klass.__qualname__)] = klass
        name = _mxnet_name(klass)
        if name is not None:
            classes[name] = klass
            classes[('mxnet.optimizer', klass.__name__)] = klass
    for name in lr_scheduler.__all__:
        klass = getattr(lr_scheduler, name)
        classes[('mxnet.lr_scheduler', name)] = klass
        classes[('mxtorch.lr_scheduler', name)] = klass
    return classes


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, file):
        super().__init__(file)
        self.classes = _known_classes()

    def find_class(self, module, name):
        module = _PY2_MODULES.get(module, module)
        if (module, name) in _ARRAY_GLOBALS:
            return _PickledArray
        if (module, name) == ('builtins', 'bytearray'):
            return _bytearray
        if (module, name) == ('copyreg', '_reconstructor'):
            return self._reconstructor
        if (module, name) == ('builtins', 'object'):
            return object
        klass = self.classes.get((module, name))
        if klass is None:
            raise pickle.UnpicklingError(
                'refusing to load global %s.%s from an optimizer state pickle: only NDArrays, '
                'optimizers and lr schedulers are allowed' % (module, name))
        return klass

    def _reconstructor(self, cls, base, state):
        # protocol 0/1 form of an object: allowed for the optimizer and scheduler classes only
        if base is not object or cls not in self.classes.values() or state is not None:
            raise pickle.UnpicklingError('copyreg._reconstructor(%r, %r) is not allowed'
                                         % (cls, base))
        return copyreg._reconstructor(cls, base, state)


def _restore(obj, memo, classes):
    """Replace every _PickledArray inside dicts, tuples, lists and the attributes of optimizer
    and scheduler objects by an NDArray on CPU."""
    key = id(obj)
    if key in memo:
        return memo[key]
    if type(obj) in classes:
        memo[key] = obj
        obj.__dict__.update(_restore(obj.__dict__, memo, classes))
        return obj
    if isinstance(obj, _PickledArray):
        out = None if obj.record is None else decode_record(bytes(obj.record))
    elif isinstance(obj, tuple):
        out = tuple(_restore(x, memo, classes) for x in obj)
    elif isinstance(obj, list):
        out = [_restore(x, memo, classes) for x in obj]
    elif isinstance(obj, dict):
        out = {k: _restore(v, memo, classes) for k, v in obj.items()}
    else:
        return obj
    memo[key] = out
    return out


def loads(data):
    """Unpickle optimizer states written by MXNet or by `dumps`, refusing any other global."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError('optimizer states must be bytes, got %s' % type(data).__name__)
    unpickler = _RestrictedUnpickler(io.BytesIO(data))
    return _restore(unpickler.load(), {}, set(unpickler.classes.values()))

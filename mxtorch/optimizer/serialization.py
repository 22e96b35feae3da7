"""Optimizer-state pickles (`.states` files) in MXNet's form, read without running foreign code.

Writing: each NDArray becomes global `mxnet.ndarray.ndarray.NDArray`, REDUCE with `(None,)`,
BUILD with `{'handle': bytearray(<one array record>)}`; optimizers and lr schedulers are written
under their MXNet names (`mxnet.optimizer.optimizer.SGD`, `mxnet.lr_scheduler.FactorScheduler`),
so real MXNet can load the result. The standard C pickler insists on importing every global it
writes, so the pure-Python pickler (`pickle._Pickler`) is subclassed to write these names.

Reading: a restricted unpickler resolves only the NDArray classes (dense and sparse, both
densified), the optimizer and scheduler classes known to mxtorch (built-in or registered with
`mx.optimizer.register`) and `bytearray`; any other global raises `pickle.UnpicklingError`.
The opcodes are checked first (every length against the bytes present: the C unpickler
allocates a declared bytearray length before reading it), nesting is bounded, and any malformed
input raises `StatesError`, an MXNetError (and an UnpicklingError). `check_states` compares
loaded states with the parameters they are for.
"""
import copyreg
import io
import pickle
import pickletools

import numpy as np

from .._safety import PARSE_ERRORS, limits
from ..base import MXNetError
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
                                                     'mxtorch.optimizer.contrib',
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


def _restore(obj, memo, classes, depth):
    """Replace every _PickledArray inside dicts, tuples, lists and the attributes of optimizer
    and scheduler objects by an NDArray on CPU (cycles kept, nesting bounded)."""
    key = id(obj)
    if key in memo:
        return memo[key]
    if depth > limits.MAX_NESTING:
        raise StatesError('optimizer states nest more than %d levels deep' % limits.MAX_NESTING)
    depth += 1
    if type(obj) in classes:
        memo[key] = obj
        if not isinstance(getattr(obj, '__dict__', None), dict):
            raise StatesError('%s object without attributes' % type(obj).__name__)
        obj.__dict__.update(_restore(obj.__dict__, memo, classes, depth))
        return obj
    if isinstance(obj, _PickledArray):
        out = None if obj.record is None else decode_record(bytes(obj.record))
    elif isinstance(obj, tuple):
        out = tuple(_restore(x, memo, classes, depth) for x in obj)
    elif isinstance(obj, list):
        out = memo[key] = []
        out.extend(_restore(x, memo, classes, depth) for x in obj)
    elif isinstance(obj, dict):
        out = memo[key] = {}
        out.update((k, _restore(v, memo, classes, depth)) for k, v in obj.items())
    else:
        return obj
    memo[key] = out
    return out


class StatesError(MXNetError, pickle.UnpicklingError):
    """Malformed or refused optimizer states."""


def _check_opcodes(data):
    """Walk the pickle's opcodes (their arguments are read, bounded by the bytes present) before
    the unpickler sees them."""
    stream = io.BytesIO(data)
    try:
        for opcode, _, _ in pickletools.genops(stream):
            if opcode.name in ('NEXT_BUFFER', 'READONLY_BUFFER', 'PERSID', 'BINPERSID', 'EXT1',
                               'EXT2', 'EXT4'):
                raise StatesError('optimizer states use pickle opcode %s, which MXNet never '
                                  'writes' % opcode.name)
    except StatesError:
        raise
    except PARSE_ERRORS as err:
        raise StatesError('optimizer states are not a valid pickle: %s' % err) from None
    if stream.tell() != len(data):
        raise StatesError('optimizer states have %d bytes after the end of the pickle'
                          % (len(data) - stream.tell()))


def loads(data):
    """Unpickle optimizer states written by MXNet or by `dumps`, refusing any other global."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError('optimizer states must be bytes, got %s' % type(data).__name__)
    data = bytes(data)
    if not data:
        raise StatesError('optimizer states are empty')
    _check_opcodes(data)
    try:
        unpickler = _RestrictedUnpickler(io.BytesIO(data))
        return _restore(unpickler.load(), {}, set(unpickler.classes.values()), 0)
    except (StatesError, pickle.UnpicklingError) as err:
        if isinstance(err, StatesError):
            raise
        raise StatesError(str(err)) from None
    except MXNetError:
        raise
    except PARSE_ERRORS as err:
        raise StatesError('optimizer states cannot be loaded: %s: %s'
                          % (type(err).__name__, err)) from None


def check_states(states, optimizer, weights, known=None):
    """Raise MXNetError unless `states` ({index: state}) fit the parameters they are for:
    `weights` maps an optimizer index (or a parameter name: a kvstore keys its states by name)
    to its weight; each state must have the structure, shapes and dtypes `optimizer` creates for
    that weight. Indices in `known` but not in `weights` (parameters not bound here) pass
    unchecked; any other index is refused."""
    idx2name = getattr(optimizer, 'idx2name', None) or {}
    for index, state in states.items():
        weight = weights.get(index)
        if weight is None and index in idx2name:
            weight = weights.get(idx2name[index])
        if weight is None:
            if known is not None and index in known:
                continue
            raise MXNetError('the optimizer states hold a state for index %r, but the model has '
                             'no such parameter (its %d indices are %s)'
                             % (index, len(weights), _some(sorted(weights, key=str))))
        name = optimizer.idx2name.get(index, index) if getattr(optimizer, 'idx2name', None) \
            else index
        expected = optimizer.create_state_multi_precision(index, weight)
        _compare(state, expected, 'the state of parameter %s' % (name,))


def _some(items, limit=8):
    shown = ', '.join(str(i) for i in items[:limit])
    return '[%s%s]' % (shown, ', ...' if len(items) > limit else '')


def _compare(state, expected, what):
    if isinstance(expected, NDArray):
        if not isinstance(state, NDArray):
            raise MXNetError('%s should be an array of shape %s, the file holds %s'
                             % (what, expected.shape, type(state).__name__))
        if tuple(state.shape) != tuple(expected.shape) or \
                np.dtype(state.dtype) != np.dtype(expected.dtype):
            raise MXNetError('%s has shape %s and dtype %s in the file, but the model needs %s '
                             'and %s' % (what, tuple(state.shape), np.dtype(state.dtype).name,
                                         tuple(expected.shape), np.dtype(expected.dtype).name))
    elif isinstance(expected, (tuple, list)):
        if not isinstance(state, (tuple, list)) or len(state) != len(expected):
            raise MXNetError('%s should be a sequence of %d, the file holds %s'
                             % (what, len(expected), type(state).__name__ if not
                                isinstance(state, (tuple, list)) else 'one of %d' % len(state)))
        for k, (part, exp) in enumerate(zip(state, expected)):
            _compare(part, exp, '%s[%d]' % (what, k))
    elif expected is None and state is not None:
        raise MXNetError('%s should be empty (None), the file holds %s'
                         % (what, type(state).__name__))

"""Single-process key-value stores: 'local' and 'device'.

A store holds one array per key. `push` sums the values given for a key (one per device) and
either replaces the stored value with the sum or, once an optimizer is set, lets the updater
apply the sum to it; `pull` copies the stored value out to every given array.
"""
from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from ..ndarray.serialization import atomic_write
from ..optimizer import get_updater
from .compression import TwoBitCompression


def _key_list(key, value):
    """Normalise (key, value) into parallel lists; a single key may take a list of values."""
    if isinstance(key, (list, tuple)):
        if not isinstance(value, (list, tuple)) or len(value) != len(key):
            raise ValueError('a list of %d keys needs a list of %d values' % (len(key), len(key)))
        return list(key), list(value)
    return [key], [value]


def _arrays(value, what):
    arrays = list(value) if isinstance(value, (list, tuple)) else [value]
    for a in arrays:
        if not isinstance(a, NDArray):
            raise TypeError('%s must be NDArray or a list of NDArray, got %s'
                            % (what, type(a).__name__))
    return arrays


def sum_on(arrays, context):
    """A new array on `context` holding the sum of `arrays`."""
    total = arrays[0].copyto(context)
    for a in arrays[1:]:
        total += a.as_in_context(context)
    return total


class KVStore:
    """The 'local' and 'device' stores of one process (rank 0 of 1 worker)."""

    def __init__(self, name='local'):
        self._type = name
        self._store = {}
        self._updater = None
        self._key_type = None
        self._compression = None

    # ---- identity ---------------------------------------------------------------------------------
    @property
    def type(self):
        return self._type

    @property
    def rank(self):
        return 0

    @property
    def num_workers(self):
        return 1

    def is_capable(self, capability):
        if capability.lower() == 'optimizer':
            return True
        raise MXNetError('Unknown capability: %s' % capability)

    def barrier(self):
        """All workers wait here; a single process has nobody to wait for."""

    def _check_key(self, key):
        kind = str if isinstance(key, str) else int
        if not isinstance(key, (str, int)):
            raise TypeError('key must be int or str, got %s' % type(key).__name__)
        if self._key_type is None:
            self._key_type = kind
        elif self._key_type is not kind:
            raise MXNetError('Mixed key types are not allowed: the store uses %s keys, got %r'
                             % (self._key_type.__name__, key))

    # ---- data ---------------------------------------------------------------------------------
    def init(self, key, value):
        """Store a copy of value under key (lists of keys take lists of values)."""
        keys, values = _key_list(key, value)
        for k, v in zip(keys, values):
            self._check_key(k)
            if k in self._store:
                raise MXNetError('key %r has already been initialized' % (k,))
            self._store[k] = _arrays(v, 'value')[0].copy()

    def _stored(self, key):
        try:
            return self._store[key]
        except KeyError:
            raise MXNetError('key %r has not been initialized: call init first' % (key,)) from None

    def _reduce(self, key, arrays):
        """The sum of the pushed arrays, on the stored value's device."""
        if self._compression is not None:
            arrays = [self._compression.compress(key, i, a) for i, a in enumerate(arrays)]
        return sum_on(arrays, self._stored(key).context)

    def push(self, key, value, priority=0):
        """Sum each key's values into the store (through the updater, if one is set)."""
        keys, values = _key_list(key, value)
        for k, v in zip(keys, values):
            self._check_key(k)
            summed = self._reduce(k, _arrays(v, 'value'))
            stored = self._store[k]
            if self._updater is not None:
                self._updater(k, summed, stored)
            else:
                stored[:] = summed

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Copy each key's stored value into its out array(s)."""
        if out is None:
            raise MXNetError('pull needs `out` arrays')
        keys, outs = _key_list(key, out)
        for k, o in zip(keys, outs):
            self._check_key(k)
            stored = self._stored(k)
            for dst in _arrays(o, 'out'):
                stored.copyto(dst)

    def pushpull(self, key, value, out=None, priority=0):
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def broadcast(self, key, value, out, priority=0):
        """init with value, then pull into out."""
        self.init(key, value)
        self.pull(key, out, priority)

    def row_sparse_pull(self, key, out=None, priority=0, row_ids=None):
        """Dense stores pull every row."""
        self.pull(key, out, priority)

    # ---- optimizer -------------------------------------------------------------------------------
    def set_optimizer(self, optimizer):
        """Apply `optimizer` to every push from now on."""
        self._set_updater(get_updater(optimizer))

    def _set_updater(self, updater):
        self._updater = updater

    def set_gradient_compression(self, compression_params):
        if self._type == 'local' or 'device' not in self._type and 'dist' not in self._type:
            raise Exception('Gradient compression is not supported for this type of kvstore')
        self._compression = TwoBitCompression.from_params(compression_params)

    def save_optimizer_states(self, fname, dump_optimizer=False):
        if self._updater is None:
            raise MXNetError('Cannot save states for distributed training: no optimizer is set')
        atomic_write(fname, self._updater.get_states(dump_optimizer))

    def load_optimizer_states(self, fname):
        if self._updater is None:
            raise MXNetError('Cannot load states: no optimizer is set on the kvstore')
        with open(fname, 'rb') as f:
            self._updater.set_states(f.read())

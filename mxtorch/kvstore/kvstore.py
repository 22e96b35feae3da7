"""Single-process key-value stores: 'local' and 'device'.

A store holds one array per key. `push` sums the values given for a key (one per device) and
either replaces the stored value with the sum or, once an optimizer is set, lets the updater
apply the sum to it; `pull` copies the stored value out to every given array.
"""
import torch

from .._safety import reading
from ..base import MXNetError
from ..ndarray.ndarray import NDArray
from ..ndarray.serialization import atomic_write
from ..optimizer import get_updater
from ..optimizer.serialization import check_states
from .base import KVStoreBase
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
        if total.stype != 'default':        # sparse sums are new arrays (their rows grow)
            total = total + a.as_in_context(context)
        else:
            total += a.as_in_context(context)
    return total


class KVStore(KVStoreBase):
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

    def _barrier(self):
        """MXNet's name for `barrier`."""
        self.barrier()

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
        key_type = self._key_type
        try:                      # check every key first: a failed call initializes none
            for i, (k, v) in enumerate(zip(keys, values)):
                self._check_key(k)
                if k in self._store or k in keys[:i]:
                    raise MXNetError('key %r has already been initialized' % (k,))
                _arrays(v, 'value')
        except BaseException:
            self._key_type = key_type
            raise
        for k, v in zip(keys, values):
            self._store[k] = _arrays(v, 'value')[0].copy()

    def _stored(self, key):
        try:
            return self._store[key]
        except KeyError:
            raise MXNetError('key %r has not been initialized: call init first' % (key,)) from None

    def _check_shapes(self, key, arrays, what):
        """Every array of `arrays` (`what`: 'value' or 'out') has the shape stored under key."""
        shape = self._stored(key).shape
        for a in arrays:
            if a.shape != shape:
                raise MXNetError('%s for key %r must have the shape it was initialized with, %s; '
                                 'got %s' % (what, key, shape, a.shape))
        return arrays

    def _reduce(self, key, arrays):
        """The sum of the pushed arrays, on the stored value's device."""
        stored = self._stored(key)
        self._check_shapes(key, arrays, 'value')
        if self._compression is not None:
            arrays = [self._compression.compress(key, i, a) for i, a in enumerate(arrays)]
        return sum_on(arrays, stored.context)

    def push(self, key, value, priority=0):
        """Sum each key's values into the store (through the updater, if one is set)."""
        keys, values = _key_list(key, value)
        for k, v in zip(keys, values):      # check every key first: a failed call pushes none
            self._check_key(k)
            expected = tuple(self._stored(k).shape)
            for a in _arrays(v, 'value'):
                if tuple(a.shape) != expected:
                    raise MXNetError('push: a value for key %r has shape %s, expected %s (the '
                                     'shape it was initialized with)'
                                     % (k, tuple(a.shape), expected))
        for k, v in zip(keys, values):
            summed = self._reduce(k, _arrays(v, 'value'))
            stored = self._store[k]
            if self._updater is not None:
                self._updater(k, summed, stored)
            else:
                stored[:] = summed

    def pull(self, key, out=None, priority=0, ignore_sparse=True):
        """Copy each key's stored value into its out array(s). With ignore_sparse (the default),
        sparse outs are left as they are (as MXNet, which expects row_sparse_pull for them)."""
        if out is None:
            raise MXNetError('pull needs `out` arrays')
        keys, outs = _key_list(key, out)
        for k, o in zip(keys, outs):
            self._check_key(k)
            stored = self._stored(k)
            for dst in self._check_shapes(k, _arrays(o, 'out'), 'out'):
                if ignore_sparse and dst.stype != 'default':
                    continue
                stored.copyto(dst)

    def pushpull(self, key, value, out=None, priority=0):
        self.push(key, value, priority)
        self.pull(key, value if out is None else out, priority)

    def broadcast(self, key, value, out, priority=0):
        """init with value, then pull into out."""
        self.init(key, value)
        self.pull(key, out, priority)

    def row_sparse_pull(self, key, out=None, priority=0, row_ids=None):
        """Pull only the rows `row_ids` (an NDArray of row indices, in any order, repeats
        allowed; one for all outs, or a list parallel to the outs; for a list of keys, a list
        parallel to the keys) into row_sparse outs: each then stores exactly the requested rows
        of the stored value."""
        if out is None:
            raise MXNetError('row_sparse_pull needs `out` arrays')
        if row_ids is None:
            raise MXNetError('row_sparse_pull needs row_ids (an NDArray of row indices, or a '
                             'list of them), got None')
        keys, outs = _key_list(key, out)
        if isinstance(key, (list, tuple)):
            if not isinstance(row_ids, (list, tuple)) or len(row_ids) != len(keys):
                raise MXNetError('row_ids for a list of %d keys must be a list of %d entries, '
                                 'got %r' % (len(keys), len(keys), row_ids))
            per_key = list(row_ids)
        else:
            per_key = [row_ids]
        for k, o, ids in zip(keys, outs, per_key):
            self._check_key(k)
            stored = self._stored(k)
            dsts = self._check_shapes(k, _arrays(o, 'out'), 'out')
            ids = list(ids) if isinstance(ids, (list, tuple)) else [ids] * len(dsts)
            if len(ids) != len(dsts):
                raise MXNetError('row_ids for key %r must be one NDArray or a list of %d (one '
                                 'per out), got a list of %d' % (k, len(dsts), len(ids)))
            for dst in dsts:
                if dst.stype != 'row_sparse':
                    raise MXNetError('row_sparse_pull needs row_sparse out arrays; the out for '
                                     'key %r has storage type %s' % (k, dst.stype))
            for dst, rows in zip(dsts, ids):      # exactly the requested rows are stored
                from ..ndarray.sparse import set_rows
                set_rows(dst, self._rows_of(k, stored, rows), rows._tensor)

    @staticmethod
    def _rows_of(key, stored, rows):
        """A dense copy of `stored` keeping only `rows` (the others zero)."""
        if not isinstance(rows, NDArray):
            raise TypeError('row_ids must be NDArray or a list of NDArray, got %s'
                            % type(rows).__name__)
        if not stored.shape:
            raise MXNetError('row_sparse_pull needs a key with at least one axis; %r is a '
                             'scalar' % (key,))
        index = rows._tensor.reshape(-1).to(device=stored._tensor.device, dtype=torch.int64)
        n = stored.shape[0]
        bad = index[(index < 0) | (index >= n)]
        if bad.numel():
            raise MXNetError('row_ids for key %r must lie in [0, %d), got %s'
                             % (key, n, sorted(set(bad.tolist()))))
        with torch.no_grad():
            dense = torch.zeros_like(stored._tensor)
            dense[index] = stored._tensor[index]
        return dense

    # ---- optimizer -------------------------------------------------------------------------------
    def set_optimizer(self, optimizer):
        """Apply `optimizer` to every push from now on."""
        self._set_updater(get_updater(optimizer))

    def _set_updater(self, updater):
        self._updater = updater

    def set_gradient_compression(self, compression_params):
        """Compress pushed gradients with 2 bits per element (compression.py); stores whose
        type names 'device' or 'dist' support it, as in MXNet."""
        if 'device' not in self._type and 'dist' not in self._type:
            raise MXNetError('Gradient compression is not supported for this type of kvstore: '
                             "kvstore type must contain 'device' or 'dist' (e.g. 'device', "
                             "'dist_sync'), got %r" % self._type)
        self._compression = TwoBitCompression.from_params(compression_params)

    def save_optimizer_states(self, fname, dump_optimizer=False):
        if self._updater is None:
            raise MXNetError('Cannot save states for distributed training: no optimizer is set')
        atomic_write(fname, self._updater.get_states(dump_optimizer))

    def load_optimizer_states(self, fname):
        """Load the states of `fname`, checked first against the stored parameters (keys,
        shapes, dtypes): a file that does not fit changes nothing and raises MXNetError."""
        if self._updater is None:
            raise MXNetError('Cannot load states: no optimizer is set on the kvstore')
        with open(fname, 'rb') as f:
            data = f.read()
        self._set_states(data, fname)

    def _set_states(self, data, fname):
        with reading(fname, 'optimizer states file'):
            self._updater.set_states(data, check=lambda states, optimizer: check_states(
                states, optimizer, self._store))

"""KVStoreBase: the interface every store implements, and the registry of custom stores.

A class decorated with `KVStoreBase.register` is created by `mx.kv.create(name)` when `name`
is its class name in any letter case; registered names take precedence over the built-in types.
"""
import warnings


class KVStoreBase:
    """What a key-value store provides (the built-in stores and registered ones)."""

    OPTIMIZER = 'optimizer'          # the capability `is_capable` asks about
    kv_registry = {}

    def broadcast(self, key, value, out, priority=0):
        """Initialize key with value, then pull it into out."""
        raise NotImplementedError()

    def pushpull(self, key, value, out=None, priority=0):
        """Aggregate value over devices and workers, then write the result to out (or value)."""
        raise NotImplementedError()

    def set_optimizer(self, optimizer):
        """Apply `optimizer` to the stored values from now on."""
        raise NotImplementedError()

    def is_capable(self, capability):
        """Whether the store supports `capability` (e.g. KVStoreBase.OPTIMIZER)."""
        raise NotImplementedError()

    def save_optimizer_states(self, fname, dump_optimizer=False):
        raise NotImplementedError()

    def load_optimizer_states(self, fname):
        raise NotImplementedError()

    @property
    def type(self):
        raise NotImplementedError()

    @property
    def rank(self):
        raise NotImplementedError()

    @property
    def num_workers(self):
        raise NotImplementedError()

    @staticmethod
    def register(klass):
        """Class decorator: make `mx.kv.create(klass.__name__)` (any case) return klass()."""
        if not isinstance(klass, type):
            raise TypeError('KVStoreBase.register decorates a class, got %s'
                            % type(klass).__name__)
        name = klass.__name__.lower()
        previous = KVStoreBase.kv_registry.get(name)
        if previous is not None and previous is not klass:
            warnings.warn('kvstore %s.%s replaces the registered kvstore %s.%s'
                          % (klass.__module__, klass.__name__, previous.__module__,
                             previous.__name__), stacklevel=2)
        KVStoreBase.kv_registry[name] = klass
        return klass


@KVStoreBase.register
class TestStore(KVStoreBase):
    """A store in plain Python for tests (`mx.kv.create('teststore')`): one process, sums over
    devices, no optimizer on the store."""

    def broadcast(self, key, value, out, priority=0):
        for o in out if isinstance(out, (list, tuple)) else [out]:
            o[:] = value

    def pushpull(self, key, value, out=None, priority=0):
        values = value if isinstance(value, (list, tuple)) else [value]
        total = values[0].copy()
        for v in values[1:]:
            total += v.as_in_context(total.context)
        targets = values if out is None else (out if isinstance(out, (list, tuple)) else [out])
        for o in targets:
            o[:] = total.as_in_context(o.context)

    def set_optimizer(self, optimizer):
        raise NotImplementedError('TestStore does not apply optimizers')

    @staticmethod
    def is_capable(capability):
        """No optimizer on this store (a static method, as MXNet's: `type(kv).is_capable`)."""
        if capability.lower() == KVStoreBase.OPTIMIZER:
            return False
        raise ValueError('Unknown capability: {}'.format(capability))

    def save_optimizer_states(self, fname, dump_optimizer=False):
        raise NotImplementedError('TestStore keeps no optimizer states')

    def load_optimizer_states(self, fname):
        raise NotImplementedError('TestStore keeps no optimizer states')

    @property
    def type(self):
        return 'teststore'

    @property
    def rank(self):
        return 0

    @property
    def num_workers(self):
        return 1


def create(name='local'):
    """A store by type: a class registered with `KVStoreBase.register` (by its lower-cased
    name) first; else 'local', 'device' (any name containing it) or another local-like name;
    'dist_sync', 'dist_device_sync', 'dist_async' (any name containing 'dist') and 'horovod' give
    a DistKVStore, which needs a launched job (`mxtorch launch`, torchrun or DMLC_* variables).
    """
    if not isinstance(name, str):
        raise TypeError('name must be a string, got %s' % type(name).__name__)
    name = name.lower()
    if name in KVStoreBase.kv_registry:
        return KVStoreBase.kv_registry[name]()
    if 'dist' in name or name == 'horovod':
        from .dist import DistKVStore
        return DistKVStore(name)
    if name == 'byteps':
        from ..base import MXNetError
        raise MXNetError("kvstore type 'byteps' is not provided; use 'dist_sync', which "
                         'all-reduces over torch.distributed')
    from .kvstore import KVStore
    return KVStore(name)

"""mx.kv / mx.kvstore: key-value stores that aggregate gradients and apply the optimizer."""
from ..base import MXNetError
from .base import KVStoreBase
from .dist import AllWorkersMetric, DistKVStore, latest_checkpoint, worker_rank
from .kvstore import KVStore


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
        return DistKVStore(name)
    if name == 'byteps':
        raise MXNetError("kvstore type 'byteps' is not provided; use 'dist_sync', which "
                         'all-reduces over torch.distributed')
    return KVStore(name)


__all__ = ['AllWorkersMetric', 'DistKVStore', 'KVStore', 'KVStoreBase', 'create',
           'latest_checkpoint', 'worker_rank']

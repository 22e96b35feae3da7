"""mx.kv / mx.kvstore: key-value stores that aggregate gradients and apply the optimizer."""
from ..base import MXNetError
from .kvstore import KVStore


def create(name='local'):
    """A store by type: 'local', 'device' (any name containing it) or another local-like name.

    Distributed types ('dist_sync', 'dist_device_sync', 'dist_async', ...) run on
    torch.distributed and need a launched job (see `mxtorch launch`).
    """
    if not isinstance(name, str):
        raise TypeError('name must be a string, got %s' % type(name).__name__)
    name = name.lower()
    if 'dist' in name or name in ('horovod', 'byteps'):
        raise MXNetError('kvstore type %r needs distributed training, which this build of '
                         'mxtorch does not provide yet; use "local" or "device"' % name)
    return KVStore(name)


__all__ = ['KVStore', 'create']

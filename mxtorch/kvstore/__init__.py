"""mx.kv / mx.kvstore: key-value stores that aggregate gradients and apply the optimizer."""
from .base import KVStoreBase, create
from .dist import AllWorkersMetric, DistKVStore, latest_checkpoint, worker_rank
from .kvstore import KVStore
from .kvstore_server import KVStoreServer

__all__ = ['AllWorkersMetric', 'DistKVStore', 'KVStore', 'KVStoreBase', 'KVStoreServer',
           'create', 'latest_checkpoint', 'worker_rank']

"""Device contexts: mx.cpu(i) and mx.gpu(i) mapped onto torch devices."""
import threading

import warnings

import torch

from .base import _MXClassPropertyMetaClass, classproperty


class Context(metaclass=_MXClassPropertyMetaClass):
    """A device: `Context('cpu', 0)`, `Context('gpu', 1)`. Usable as a `with` scope.

    cpu(i) runs on torch's CPU device whatever i is (the id is kept for display, equality and
    data-parallel bookkeeping); gpu(i) is `cuda:i`.
    """
    devtype2str = {1: 'cpu', 2: 'gpu', 3: 'cpu_pinned', 5: 'cpu_shared'}
    devstr2type = {v: k for k, v in devtype2str.items()}
    _scope = threading.local()

    @classproperty
    def default_ctx(cls):    # pylint: disable=no-self-argument
        """MXNet's deprecated name for this thread's current context (also settable)."""
        warnings.warn('Context.default_ctx has been deprecated. Please use '
                      'Context.current_context() instead.', DeprecationWarning)
        return current_context()

    @default_ctx.setter
    def default_ctx(cls, value):    # pylint: disable=no-self-argument
        warnings.warn('Context.default_ctx has been deprecated. Please use '
                      'Context.current_context() instead.', DeprecationWarning)
        cls._scope.value = value

    def __init__(self, device_type, device_id=0):
        if isinstance(device_type, Context):
            device_type, device_id = device_type.device_type, device_type.device_id
        if device_type not in self.devstr2type:
            raise ValueError('Unknown device type %r; expected one of %s'
                             % (device_type, sorted(self.devstr2type)))
        self.device_typeid = self.devstr2type[device_type]
        self.device_id = int(device_id)
        self._old_ctx = None

    @property
    def device_type(self):
        return self.devtype2str[self.device_typeid]

    @property
    def torch_device(self):
        if self.device_typeid == 2:
            if self.device_id >= num_gpus():
                from .base import MXNetError
                raise MXNetError('%s is not available: this machine has %d GPU(s) usable by '
                                 'torch' % (self, num_gpus()))
            return torch.device('cuda', self.device_id)
        return torch.device('cpu')

    def __hash__(self):
        return hash((self.device_typeid, self.device_id))

    def __eq__(self, other):
        return (isinstance(other, Context) and self.device_typeid == other.device_typeid
                and self.device_id == other.device_id)

    def __str__(self):
        return '%s(%d)' % (self.device_type, self.device_id)

    __repr__ = __str__

    def __enter__(self):
        self._old_ctx = current_context()
        Context._scope.value = self
        return self

    def __exit__(self, *exc):
        Context._scope.value = self._old_ctx

    def empty_cache(self):
        if self.device_typeid == 2 and torch.cuda.is_available():
            torch.cuda.empty_cache()


def cpu(device_id=0):
    return Context('cpu', device_id)


def cpu_pinned(device_id=0):
    return Context('cpu_pinned', device_id)


def gpu(device_id=0):
    return Context('gpu', device_id)


def num_gpus():
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def gpu_memory_info(device_id=0):
    """(free, total) bytes of a GPU."""
    return torch.cuda.mem_get_info(device_id)


def current_context():
    """The context of the innermost `with ctx:` scope; cpu(0) outside any scope."""
    ctx = getattr(Context._scope, 'value', None)
    return ctx if ctx is not None else Context('cpu', 0)


def context_of(device):
    """The Context of a torch device (ids of CPU devices are 0)."""
    if device.type == 'cuda':
        return Context('gpu', device.index or 0)
    return Context('cpu', 0)

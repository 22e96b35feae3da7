"""mx.util: GPU queries and environment variables (MXNet's NumPy-interface switches are out of
mxtorch's scope)."""
import os

import torch

from .base import MXNetError
from .context import Context


def get_gpu_count():
    """The number of GPUs torch can use."""
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _check_gpu(dev_id):
    if not torch.cuda.is_available():
        raise MXNetError('This call is only supported with CUDA: torch %s sees no GPU'
                         % torch.__version__)
    if not 0 <= dev_id < torch.cuda.device_count():
        raise MXNetError('GPU %d does not exist: %d GPU(s) available'
                         % (dev_id, torch.cuda.device_count()))


def get_gpu_memory(gpu_dev_id):
    """(free, total) memory of GPU `gpu_dev_id`, in bytes."""
    _check_gpu(gpu_dev_id)
    return tuple(int(v) for v in torch.cuda.mem_get_info(gpu_dev_id))


def get_cuda_compute_capability(ctx):
    """The compute capability of a gpu context's device as an int: 70 for sm_70."""
    if not isinstance(ctx, Context) or ctx.device_type != 'gpu':
        raise ValueError('Expecting a gpu context to get cuda compute capability, while '
                         'received ctx %s' % ctx)
    _check_gpu(ctx.device_id)
    major, minor = torch.cuda.get_device_capability(ctx.device_id)
    return major * 10 + minor


def getenv(name):
    """The value of environment variable `name`, or None if it is not set."""
    return os.environ.get(name)


def setenv(name, value):
    """Set environment variable `name` to `value` (None removes it)."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = str(value)

"""mx.runtime: which of MXNet's build features this mxtorch/torch installation provides.

Facts come from torch (its build configuration and what it detects on this machine); features
with no counterpart in mxtorch (TensorRT, Caffe, TVM ops, OpenCV image ops, ...) are disabled.
"""
import collections
import faulthandler
import re

import torch

# MXNet 1.9's feature names, in its order
FEATURE_NAMES = (
    'CUDA', 'CUDNN', 'NCCL', 'CUDA_RTC', 'TENSORRT', 'CPU_SSE', 'CPU_SSE2', 'CPU_SSE3',
    'CPU_SSE4_1', 'CPU_SSE4_2', 'CPU_SSE4A', 'CPU_AVX', 'CPU_AVX2', 'OPENMP', 'SSE', 'F16C',
    'JEMALLOC', 'BLAS_OPEN', 'BLAS_ATLAS', 'BLAS_MKL', 'BLAS_APPLE', 'LAPACK', 'MKLDNN',
    'OPENCV', 'CAFFE', 'PROFILER', 'DIST_KVSTORE', 'CXX14', 'INT64_TENSOR_SIZE',
    'SIGNAL_HANDLER', 'DEBUG', 'TVM_OP')


def _detect():
    found = re.search(r'BLAS_INFO=(\w+)', torch.__config__.show())
    blas = found.group(1).lower() if found else ''
    # the vector ISA torch's CPU kernels dispatch to here; AVX2 implies SSE..SSE4.2, AVX, F16C
    x86 = torch.backends.cpu.get_cpu_capability() in ('AVX2', 'AVX512')
    dist = torch.distributed.is_available()
    enabled = dict.fromkeys(('CPU_SSE', 'CPU_SSE2', 'CPU_SSE3', 'CPU_SSE4_1', 'CPU_SSE4_2',
                             'CPU_AVX', 'CPU_AVX2', 'SSE', 'F16C'), x86)
    enabled.update(
        CUDA=torch.backends.cuda.is_built(),
        CUDNN=torch.backends.cudnn.is_available(),
        NCCL=dist and torch.distributed.is_nccl_available(),
        OPENMP=torch.backends.openmp.is_available(),
        BLAS_OPEN=blas in ('open', 'openblas'), BLAS_ATLAS=blas == 'atlas',
        BLAS_MKL=blas == 'mkl', BLAS_APPLE=blas in ('accelerate', 'apple'),
        LAPACK=bool(torch._C.has_lapack),
        MKLDNN=torch.backends.mkldnn.is_available(),
        PROFILER=True,                          # mx.profiler, on torch.profiler
        DIST_KVSTORE=dist,                      # kvstore 'dist_*' over torch.distributed
        CXX14=True,                             # torch is built as C++17
        INT64_TENSOR_SIZE=True,                 # torch indexes tensors with int64
        SIGNAL_HANDLER=faulthandler.is_enabled(),   # tracebacks on fatal signals
        DEBUG=bool(torch.version.debug))
    return {name: bool(enabled.get(name, False)) for name in FEATURE_NAMES}


class Feature:
    """One feature: `.name` and `.enabled`; shown as '✔ NAME' or '✖ NAME'."""
    __slots__ = ('name', 'enabled')

    def __init__(self, name, enabled):
        self.name = name
        self.enabled = enabled

    def __repr__(self):
        return '%s %s' % ('✔' if self.enabled else '✖', self.name)


class Features(collections.OrderedDict):
    """name -> Feature for every MXNet feature, in MXNet's order. One instance, as in MXNet:
    Features() always returns it."""
    instance = None

    def __new__(cls):
        if cls.instance is None:
            cls.instance = super().__new__(cls)
            super().__init__(cls.instance, ((name, Feature(name, on))
                                            for name, on in _detect().items()))
        return cls.instance

    def __init__(self):     # pylint: disable=super-init-not-called  (filled once, by __new__)
        pass

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name):
        name = feature_name.upper()
        if name not in self:
            raise RuntimeError("Feature '%s' is unknown, known features are: %s"
                               % (feature_name, list(self.keys())))
        return self[name].enabled


def feature_list():
    """The Feature objects, in MXNet's order."""
    return list(Features().values())


def cpu_threads():
    """What mxtorch chose at import for CPU work (see mxtorch.cpu_threads): a dict with
    'threads' (per operator), 'reason', 'cores' (available to this process), 'interop_threads',
    'wait_policy' (what mxtorch set for OpenMP, None if it left it) and 'user_wait_settings'."""
    from . import cpu_threads as chooser
    return dict(chooser.configure())

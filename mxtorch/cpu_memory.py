"""Freed CPU buffers are kept for reuse instead of going back to the system at once.

A training step allocates and frees the same activation and gradient buffers every time (a few
MB each for a small conv net). glibc's malloc maps such buffers fresh from the system and
returns them when they are freed, or trims its heap as soon as a few MB lie free at its top, so
the next step touches new pages again: thousands of page faults a step (~6000 for the CIFAR
ResNet-20 at batch 32, ~8% of its time on one thread; benchmarks/RESULTS.md). MXNet keeps its
buffers in a storage pool; here, at `import mxtorch`, glibc is told to serve buffers below
32 MB from its heap (M_MMAP_THRESHOLD, its largest value on 64-bit systems) and to keep up to
256 MB free there (M_TRIM_THRESHOLD).

Left as it is: with MXTORCH_CPU_MEM_POOL=0, where any MALLOC_* variable or a glibc.malloc
tunable (GLIBC_TUNABLES) is set (your settings win), where another allocator is preloaded
(jemalloc, tcmalloc), and off glibc.
"""
import ctypes
import os
import platform
import sys

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_FROM = 32 << 20
KEEP_FREE = 256 << 20
_chosen = None


def choose(environ):
    """The settings to apply for this environment ({'mmap_threshold', 'trim_threshold'}), or
    None with the reason why not: (None, reason)."""
    if environ.get('MXTORCH_CPU_MEM_POOL', '1').strip().lower() in ('0', 'off', 'false', 'no'):
        return None, 'MXTORCH_CPU_MEM_POOL=%s' % environ['MXTORCH_CPU_MEM_POOL']
    own = sorted(k for k in environ if k.startswith('MALLOC_'))
    if own or 'glibc.malloc' in environ.get('GLIBC_TUNABLES', ''):
        return None, 'malloc settings in the environment (%s)' % (', '.join(own) or
                                                                 'GLIBC_TUNABLES')
    preload = environ.get('LD_PRELOAD', '')
    if 'jemalloc' in preload or 'tcmalloc' in preload or 'mimalloc' in preload:
        return None, 'another allocator preloaded (%s)' % preload
    return {'mmap_threshold': MMAP_FROM, 'trim_threshold': KEEP_FREE}, 'glibc malloc'


def configure():
    """Apply the settings once per process; returns {'applied': bool, 'reason': str, ...}."""
    global _chosen
    if _chosen is not None:
        return _chosen
    settings, reason = choose(os.environ)
    applied = False
    if settings is not None:
        if not sys.platform.startswith('linux') or platform.libc_ver()[0] != 'glibc':
            reason = 'not glibc'
        else:
            try:
                mallopt = ctypes.CDLL(None).mallopt
                applied = bool(mallopt(M_MMAP_THRESHOLD, settings['mmap_threshold'])) and \
                    bool(mallopt(M_TRIM_THRESHOLD, settings['trim_threshold']))
            except (OSError, AttributeError):
                reason = 'mallopt not found'
    _chosen = dict(settings or {}, applied=applied, reason=reason)
    return _chosen

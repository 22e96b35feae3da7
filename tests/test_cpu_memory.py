"""cpu_memory.py: freed CPU buffers stay with the process for reuse (glibc's mmap and trim
thresholds set at import), so a step that allocates and frees the same buffers again touches
no new pages; the user's own malloc settings and MXTORCH_CPU_MEM_POOL=0 leave malloc alone."""
import platform
import resource
import subprocess
import sys

import pytest
import torch

import mxtorch  # noqa: F401  (configures at import)
from mxtorch import cpu_memory

GLIBC = sys.platform.startswith('linux') and platform.libc_ver()[0] == 'glibc'


def test_choice_follows_the_environment():
    settings, _ = cpu_memory.choose({})
    assert settings == {'mmap_threshold': 32 << 20, 'trim_threshold': 256 << 20}
    for environ in ({'MXTORCH_CPU_MEM_POOL': '0'}, {'MALLOC_ARENA_MAX': '2'},
                    {'GLIBC_TUNABLES': 'glibc.malloc.trim_threshold=0'},
                    {'LD_PRELOAD': '/usr/lib/libjemalloc.so.2'}):
        settings, reason = cpu_memory.choose(environ)
        assert settings is None and reason, environ


@pytest.mark.skipif(not GLIBC, reason='glibc malloc only')
def test_buffers_freed_and_allocated_again_touch_no_new_pages():
    assert cpu_memory.configure()['applied']

    def step():
        # a step's worth of 2-8 MB activations (20 MB: 5120 pages), written, then freed
        values = [torch.empty(n << 18).fill_(1.0) for n in (2, 4, 8, 2, 4)]
        return sum(float(v[-1]) for v in values)
    for _ in range(3):
        step()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        step()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    # glibc's defaults: every page of every step faulted in again (~100000 here)
    assert faults < 5120, faults


@pytest.mark.skipif(not GLIBC, reason='glibc malloc only')
def test_opt_out_leaves_malloc_alone():
    code = ('import mxtorch, mxtorch.cpu_memory as m; c = m.configure(); '
            'print(c["applied"], c["reason"])')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         env={'MXTORCH_CPU_MEM_POOL': '0', 'PATH': '/usr/bin:/bin'},
                         check=True).stdout
    assert out.strip() == 'False MXTORCH_CPU_MEM_POOL=0'

"""CPU thread choice at import (mxtorch.cpu_threads): cores from affinity and cgroup quotas,
the user's OpenMP / MXNet variables, and the wait policy, with faked machines."""
import os
import subprocess
import sys

from mxtorch import cpu_threads as ct


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)


def test_affinity_alone():
    assert ct.available_cores(affinity=8, quota=None) == (8, '8 CPUs in the affinity mask')
    assert ct.available_cores(affinity=8, quota=16)[0] == 8     # a looser quota changes nothing


def test_quota_caps_affinity():
    cores, reason = ct.available_cores(affinity=64, quota=2)
    assert cores == 2 and 'quota' in reason


def test_cgroup_v2_cpu_max(tmp_path):
    proc = tmp_path / 'cgroup'
    _write(str(proc), '0::/job/step\n')
    _write(str(tmp_path / 'fs/job/step/cpu.max'), 'max 100000\n')        # no limit here...
    _write(str(tmp_path / 'fs/job/cpu.max'), '150000 100000\n')          # ...1.5 cores above
    assert ct.cgroup_cores(str(tmp_path / 'fs'), str(proc)) == 2          # rounded up
    _write(str(tmp_path / 'fs/job/step/cpu.max'), '50000 100000\n')
    assert ct.cgroup_cores(str(tmp_path / 'fs'), str(proc)) == 1          # tightest wins


def test_cgroup_v2_unlimited(tmp_path):
    proc = tmp_path / 'cgroup'
    _write(str(proc), '0::/\n')
    _write(str(tmp_path / 'fs/cpu.max'), 'max 100000\n')
    assert ct.cgroup_cores(str(tmp_path / 'fs'), str(proc)) is None


def test_cgroup_v1_cfs_quota(tmp_path):
    proc = tmp_path / 'cgroup'
    _write(str(proc), '4:memory:/x\n2:cpu,cpuacct:/docker/abc\n')
    base = tmp_path / 'fs/cpu,cpuacct/docker/abc'
    _write(str(base / 'cpu.cfs_quota_us'), '300000\n')
    _write(str(base / 'cpu.cfs_period_us'), '100000\n')
    assert ct.cgroup_cores(str(tmp_path / 'fs'), str(proc)) == 3
    _write(str(base / 'cpu.cfs_quota_us'), '-1\n')                        # -1: unlimited
    assert ct.cgroup_cores(str(tmp_path / 'fs'), str(proc)) is None


def test_no_cgroup_files(tmp_path):
    assert ct.cgroup_cores(str(tmp_path / 'missing'), str(tmp_path / 'none')) is None


def test_default_choice_is_available_cores_and_passive():
    c = ct.choose({}, 3, 'cgroup CPU quota of 3 cores')
    assert c['threads'] == 3 and c['reason'] == 'cgroup CPU quota of 3 cores'
    assert c['wait_policy'] == 'PASSIVE' and c['interop'] is None


def test_user_variables_win():
    c = ct.choose({'OMP_NUM_THREADS': '4,2', 'MXNET_OMP_MAX_THREADS': '1'}, 2, 'x')
    assert c['threads'] == 4 and c['reason'] == 'OMP_NUM_THREADS=4,2'
    c = ct.choose({'MXNET_OMP_MAX_THREADS': '1', 'MXNET_CPU_WORKER_NTHREADS': '3'}, 8, 'x')
    assert c['threads'] == 1 and c['interop'] == 3
    c = ct.choose({'OMP_NUM_THREADS': 'zero', 'MXNET_OMP_MAX_THREADS': '-2'}, 8, 'x')
    assert c['threads'] == 8                                   # unusable values are ignored


def test_user_wait_settings_are_left_alone():
    for var in ('OMP_WAIT_POLICY', 'KMP_BLOCKTIME', 'GOMP_SPINCOUNT'):
        c = ct.choose({var: '7'}, 2, 'x')
        assert c['wait_policy'] is None and c['user_wait_settings'] == {var: '7'}


def _child(code, **env):
    environ = {k: v for k, v in os.environ.items()
               if k not in ('OMP_NUM_THREADS', 'MXNET_OMP_MAX_THREADS', 'OMP_WAIT_POLICY')}
    environ.update(env)
    return subprocess.run([sys.executable, '-c', code], env=environ, capture_output=True,
                          text=True, check=True).stdout.split()


def test_import_applies_and_reports():
    # a fresh process: torch follows the choice, OMP_WAIT_POLICY is not left in the environment
    out = _child('import os, torch; import mxtorch as mx; c = mx.runtime.cpu_threads(); '
                 'print(torch.get_num_threads(), c["threads"], c["wait_policy"], '
                 '"OMP_WAIT_POLICY" in os.environ)', MXNET_OMP_MAX_THREADS='1')
    assert out == ['1', '1', 'None', 'False']      # torch came first: the policy stays OpenMP's
    out = _child('import os, mxtorch as mx, torch; c = mx.runtime.cpu_threads(); '
                 'print(torch.get_num_threads(), c["wait_policy"], "OMP_WAIT_POLICY" in os.environ)',
                 MXNET_OMP_MAX_THREADS='1')
    assert out == ['1', 'PASSIVE', 'False']

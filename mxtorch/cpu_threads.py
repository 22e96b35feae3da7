"""How many CPU threads torch's operators use, and how idle OpenMP threads wait.

Chosen once, at `import mxtorch`, from the cores this process may really use: its CPU affinity
and a container's cgroup CPU quota (cgroup v2 `cpu.max`, v1 `cpu.cfs_quota_us`), not the
machine's core count. Idle OpenMP threads sleep (OMP_WAIT_POLICY=PASSIVE) instead of spinning:
on a machine whose other cores are busy, spinning threads fight each other and the other
programs for the cores and a training run slows down tens of times.

The user's settings win, as MXNet documents them:
  OMP_NUM_THREADS          threads per operator (read by torch's OpenMP itself)
  MXNET_OMP_MAX_THREADS    threads per operator, when OMP_NUM_THREADS is not set
  MXNET_CPU_WORKER_NTHREADS  operators run in parallel (torch's inter-op pool)
  OMP_WAIT_POLICY, KMP_BLOCKTIME, GOMP_SPINCOUNT  how idle threads wait (left as set)

This module must run before torch is first imported (OpenMP reads its wait policy once, when
it is loaded); `mx.runtime.cpu_threads()` says what was chosen and why.
"""
import math
import os
import sys

_WAIT_VARIABLES = ('OMP_WAIT_POLICY', 'KMP_BLOCKTIME', 'GOMP_SPINCOUNT')
_chosen = None


def _positive_int(text):
    """The first number of an OpenMP-style value ('4' or '4,2'), or None when not positive."""
    try:
        value = int(str(text).split(',')[0].strip())
    except ValueError:
        return None
    return value if value > 0 else None


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _cgroup_paths(proc_cgroup):
    """{controller: path} from /proc/self/cgroup ('' for the v2 unified hierarchy)."""
    paths = {}
    for line in (_read(proc_cgroup) or '').splitlines():
        parts = line.split(':', 2)
        if len(parts) == 3:
            for controller in parts[1].split(',') if parts[1] else ['']:
                paths[controller] = parts[2]
    return paths


def _quota_cores(quota, period):
    """Cores a CFS quota grants (rounded up), or None for no limit."""
    try:
        quota, period = int(quota), int(period)
    except (TypeError, ValueError):
        return None
    if quota <= 0 or period <= 0:
        return None
    return max(1, math.ceil(quota / period))


def cgroup_cores(root='/sys/fs/cgroup', proc_cgroup='/proc/self/cgroup'):
    """The cores this process's cgroup CPU quota allows, or None when it sets none. Looks at
    the process's own cgroup and its ancestors (the tightest quota wins), v2 then v1."""
    paths = _cgroup_paths(proc_cgroup)
    limits = []

    def ancestry(base, path):
        parts = [p for p in path.split('/') if p]
        for i in range(len(parts), -1, -1):
            yield os.path.join(base, *parts[:i])

    if '' in paths:                                         # cgroup v2: "max 100000" / "Q P"
        for folder in ancestry(root, paths['']):
            text = _read(os.path.join(folder, 'cpu.max'))
            if text:
                limits.append(_quota_cores(*(text.split() + [None, None])[:2]))
    for controller in ('cpu', 'cpu,cpuacct', 'cpuacct,cpu'):   # cgroup v1
        base = os.path.join(root, controller)
        if not os.path.isdir(base):
            continue
        for folder in ancestry(base, paths.get('cpu', '/')):
            limits.append(_quota_cores(_read(os.path.join(folder, 'cpu.cfs_quota_us')),
                                       _read(os.path.join(folder, 'cpu.cfs_period_us'))))
        break
    limits = [n for n in limits if n]
    return min(limits) if limits else None


def available_cores(affinity=None, quota=None):
    """(cores, reason): the CPUs this process may run on, capped by its cgroup quota."""
    if affinity is None:
        try:
            affinity = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            affinity = os.cpu_count() or 1
    cores, reason = max(1, affinity), '%d CPUs in the affinity mask' % affinity
    if quota is not None and quota < cores:
        cores, reason = quota, 'cgroup CPU quota of %d cores' % quota
    return cores, reason


def choose(environ, cores, reason):
    """What to use, from the environment and the available cores: a dict with 'threads' (per
    operator), 'interop' (None: torch's default), 'wait_policy' (None: leave OpenMP's default),
    and 'reason' for the thread count."""
    omp = _positive_int(environ.get('OMP_NUM_THREADS', ''))
    mx_max = _positive_int(environ.get('MXNET_OMP_MAX_THREADS', ''))
    if omp is not None:
        threads, why = omp, 'OMP_NUM_THREADS=%s' % environ['OMP_NUM_THREADS']
    elif mx_max is not None:
        threads, why = mx_max, 'MXNET_OMP_MAX_THREADS=%s' % environ['MXNET_OMP_MAX_THREADS']
    else:
        threads, why = cores, reason
    user_waits = [v for v in _WAIT_VARIABLES if environ.get(v)]
    return {'threads': threads, 'reason': why, 'cores': cores,
            'interop': _positive_int(environ.get('MXNET_CPU_WORKER_NTHREADS', '')),
            'wait_policy': None if user_waits else 'PASSIVE',
            'user_wait_settings': {v: environ[v] for v in user_waits}}


def configure():
    """Choose and apply the settings (once per process); returns the choice."""
    global _chosen
    if _chosen is not None:
        return _chosen
    cores, reason = available_cores(quota=cgroup_cores())
    chosen = choose(os.environ, cores, reason)
    torch_loaded = 'torch' in sys.modules
    if chosen['wait_policy'] and not torch_loaded:
        # OpenMP reads this when torch loads it, just below; the variable is removed again
        # afterwards so that other programs this process starts keep their own defaults
        os.environ['OMP_WAIT_POLICY'] = chosen['wait_policy']
    try:
        import torch
    finally:
        if chosen['wait_policy'] and not torch_loaded:
            os.environ.pop('OMP_WAIT_POLICY', None)
    if torch_loaded and chosen['wait_policy']:
        chosen['wait_policy'] = None        # too late: OpenMP already started with its own
        chosen['note'] = 'torch was imported before mxtorch: OpenMP keeps its wait policy'
    if torch.get_num_threads() != chosen['threads']:
        torch.set_num_threads(chosen['threads'])
    if chosen['interop'] is not None:
        try:
            torch.set_num_interop_threads(chosen['interop'])
        except RuntimeError:                # torch's inter-op pool already started
            chosen['interop'] = None
    chosen['interop_threads'] = torch.get_num_interop_threads()
    _chosen = chosen
    return chosen


def describe(chosen=None):
    """One line for logs: 'CPU threads: 2 per operator (2 CPUs in the affinity mask), ...'."""
    c = chosen or configure()
    wait = c['wait_policy'] or ', '.join('%s=%s' % kv for kv in c['user_wait_settings'].items()) \
        or 'OpenMP default'
    return ('CPU threads: %d per operator (%s), %d inter-op, idle threads wait: %s'
            % (c['threads'], c['reason'], c['interop_threads'], wait))

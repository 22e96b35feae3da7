"""`mxtorch launch` on this machine: torchrun's agent run in this process, watched, and a short
report of a failed job that names the rank that died or hung and why.

torchrun ends the other workers (SIGTERM) as soon as one fails, often before they print which
rank they found missing; so the workers also leave their verdict in a folder the launcher
names (cluster.report_to_launcher), and the launcher reads it together with torchrun's record
of every worker's exit status.

torchrun waits 30 s for a worker to end after SIGTERM. A frozen worker (stopped, e.g. by
SIGSTOP or a debugger) never acts on it; the watcher resumes such a worker once SIGTERM is
pending (the signal then ends it, as torchrun meant) and kills it if it still lingers, so that a
job whose worker hangs ends within its timeout plus a few seconds.
"""
import json
import os
import signal
import sys
import tempfile
import threading
import time

from .cluster import REPORTS_VARIABLE

POLL = 0.1             # seconds between looks at the workers
LINGER = 2.0           # seconds a resumed worker may take to end before it is killed


def _children(parent):
    """{pid: rank} of the torchrun workers started by process `parent`."""
    found = {}
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as f:
                fields = f.read().rsplit(')', 1)[1].split()
            if int(fields[1]) != parent:
                continue
            with open('/proc/%s/environ' % entry, 'rb') as f:
                env = dict(item.split(b'=', 1) for item in f.read().split(b'\0') if b'=' in item)
        except (OSError, ValueError, IndexError):
            continue
        if b'TORCHELASTIC_RUN_ID' in env and b'RANK' in env:
            found[int(entry)] = int(env[b'RANK'])
    return found


def _frozen_with_sigterm(pid):
    """True if process `pid` is stopped while a SIGTERM waits for it."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            state = f.read().rsplit(')', 1)[1].split()[0]
        if state not in ('T', 't'):
            return False
        pending = 0
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith(('SigPnd:', 'ShdPnd:')):
                    pending |= int(line.split()[1], 16)
        return bool(pending & (1 << (signal.SIGTERM - 1)))
    except (OSError, ValueError, IndexError):
        return False


class Watcher(threading.Thread):
    """Resumes (then kills) workers that torchrun is ending but that are frozen; remembers their
    ranks in `frozen`."""

    def __init__(self):
        super().__init__(name='mxtorch-launch-watcher', daemon=True)
        self.frozen = {}                  # rank -> pid
        self._halt = threading.Event()
        self._resumed = {}                # pid -> when

    def run(self):
        if not os.path.isdir('/proc'):
            return
        me = os.getpid()
        while not self._halt.wait(POLL):
            for pid, rank in _children(me).items():
                if pid not in self._resumed and _frozen_with_sigterm(pid):
                    self.frozen[rank] = pid
                    self._resumed[pid] = time.monotonic()
                    _signal(pid, signal.SIGCONT)
                elif pid in self._resumed and time.monotonic() - self._resumed[pid] > LINGER:
                    _signal(pid, signal.SIGKILL)

    def stop(self):
        self._halt.set()
        self.join(timeout=1.0)


def _signal(pid, sig):
    try:
        os.kill(pid, sig)
    except OSError:
        pass


def _status(exitcode):
    if exitcode is None:
        return 'status unknown'
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = 'signal %d' % -exitcode
        return 'killed by signal %d (%s)' % (-exitcode, name)
    return 'exited with status %d' % exitcode


def read_verdicts(folder):
    """{rank: verdict dict} that the workers left in `folder`."""
    verdicts = {}
    for name in sorted(os.listdir(folder)):
        if name.startswith('rank') and name.endswith('.json'):
            try:
                with open(os.path.join(folder, name)) as f:
                    verdict = json.load(f)
                verdicts[int(verdict['rank'])] = verdict
            except (OSError, ValueError, KeyError, TypeError):
                continue
    return verdicts


def describe_failure(failures, verdicts, frozen, timeout=None):
    """Report lines for a failed job.

    failures: {rank: (exitcode, seconds since the epoch)} as torchrun recorded them; verdicts:
    {rank: what that rank found (read_verdicts)}; frozen: ranks the watcher found frozen.
    The first lines name the ranks to blame and why, then one line per other worker.
    """
    # the first failure the launcher did not cause itself (it ends the others with SIGTERM)
    first = min(failures, key=lambda r: (failures[r][0] == -signal.SIGTERM, failures[r][1], r)) \
        if failures else None
    blamed = {}
    for rank, verdict in sorted(verdicts.items()):
        for culprit in verdict.get('blamed', []):
            blamed.setdefault(culprit, (rank, verdict))
    if not blamed and first is not None:
        blamed[first] = (None, None)
    lines = []
    for rank in sorted(blamed):
        seen_by, verdict = blamed[rank]
        exitcode = failures.get(rank, (None, 0))[0]
        kind = verdict['kind'] if verdict else None
        if rank in frozen:
            what = 'hung (frozen: stopped, not running)'
        elif kind == 'behind':
            what = 'hung (alive, but did not reach the collective the others were in%s)' % (
                ' within the %g s timeout' % timeout if timeout else '')
        elif kind == 'missing':
            what = 'never joined the job'
        elif exitcode is not None and exitcode != -signal.SIGTERM and \
                (verdict is None or rank == first):
            what = 'died: %s' % _status(exitcode)
        else:
            what = 'stopped responding'
        line = 'rank %d %s' % (rank, what)
        if verdict is not None:
            line += '; reported by rank %d: %s' % (seen_by, verdict['message'])
        if rank in failures and not what.startswith('died'):
            line += '; then %s' % _status(exitcode)
        lines.append(line)
    for rank in sorted(failures):
        if rank in blamed:
            continue
        line = 'rank %d %s' % (rank, _status(failures[rank][0]))
        if failures[rank][0] == -signal.SIGTERM:
            line += ' (ended by the launcher after the failure)'
        lines.append(line)
    return lines


def run_agent(argv, timeout=None):
    """Run torchrun's agent here with argv (torchrun's arguments); the job's exit status."""
    from torch.distributed import run as torchrun
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    folder = tempfile.mkdtemp(prefix='mxtorch-launch-')
    os.environ[REPORTS_VARIABLE] = folder
    watcher = Watcher()
    watcher.start()
    try:
        torchrun.run(torchrun.parse_args(argv))
        return 0
    except ChildFailedError as err:
        failures = {rank: (f.exitcode, f.timestamp) for rank, f in err.failures.items()}
        lines = describe_failure(failures, read_verdicts(folder), watcher.frozen, timeout)
        sys.stderr.write(''.join('mxtorch launch: %s\n' % line for line in
                                 ['the job failed'] + lines))
        sys.stderr.flush()
        return 1
    finally:
        watcher.stop()
        os.environ.pop(REPORTS_VARIABLE, None)
        for name in os.listdir(folder):
            os.unlink(os.path.join(folder, name))
        os.rmdir(folder)

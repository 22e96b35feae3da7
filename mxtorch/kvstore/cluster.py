"""This process's place in a launched torch.distributed job, and failure reports that name ranks.

A job is started by torchrun / `mxtorch launch` (variables RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT) or by MXNet's DMLC_* variables (mapped below). Joining it:

1. connect to the job's TCPStore (torch.distributed's rendezvous store: hosted by torchrun's agent,
   or by rank 0 for a plain environment launch) and mark this rank as arrived;
2. wait until every rank has arrived; after `timeout` seconds fail, naming the ranks that never
   came;
3. start a heartbeat thread: every `interval` seconds it writes "beat collective-number state"
   under this rank's key and reads every rank's key, noting when each one last changed;
4. create the process group (gloo for CPU tensors, NCCL for CUDA ones) with the same timeout.

Collectives run through `collective()`. When the backend raises (gloo does so at once when a
peer's connection closes, and after `timeout` seconds when a live peer never joins), the error
is replaced by one that says which rank is to blame: a rank whose heartbeat stopped (crashed or
killed), else a live rank still at an earlier collective (stuck), else rank 0 when the store it
hosts went away. Ranks that saw the failure themselves publish the state "failed" and are never
blamed.

MXTORCH_DIST_TIMEOUT (seconds, default 120) bounds the arrival wait, every collective and the
store's operations; MXTORCH_DIST_BACKEND overrides the backend string.
"""
import atexit
import datetime
import json
import os
import threading
import time

import torch
import torch.distributed as dist

from ..base import MXNetError

DEFAULT_TIMEOUT = 120.0
TORCHRUN_VARIABLES = ('RANK', 'WORLD_SIZE', 'MASTER_ADDR', 'MASTER_PORT')
DMLC_VARIABLES = ('DMLC_WORKER_ID', 'DMLC_NUM_WORKER', 'DMLC_PS_ROOT_URI', 'DMLC_PS_ROOT_PORT')

_joined = None


def timeout_seconds():
    """MXTORCH_DIST_TIMEOUT as a float (DEFAULT_TIMEOUT when unset)."""
    text = os.environ.get('MXTORCH_DIST_TIMEOUT')
    if text is None:
        return DEFAULT_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise MXNetError('MXTORCH_DIST_TIMEOUT must be a number of seconds > 0, got %r' % text)
    return value


def _integer(name, lowest):
    text = os.environ[name]
    try:
        value = int(text)
    except ValueError:
        value = lowest - 1
    if value < lowest:
        raise MXNetError('%s must be an integer >= %d, got %r' % (name, lowest, text))
    return value


def job_environment(kind):
    """(rank, world_size, master_addr, master_port) of the launched job.

    From torchrun's RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT or, when none of those is set and
    DMLC_ROLE is, from MXNet's DMLC_WORKER_ID, DMLC_NUM_WORKER, DMLC_PS_ROOT_URI,
    DMLC_PS_ROOT_PORT. `kind` (the kvstore type) only words the errors.
    """
    env = os.environ
    dmlc = 'DMLC_ROLE' in env and not any(v in env for v in TORCHRUN_VARIABLES)
    if dmlc:
        if env['DMLC_ROLE'] != 'worker':
            raise MXNetError('DMLC_ROLE=%r: mxtorch runs no parameter servers or scheduler (the '
                             'workers all-reduce over torch.distributed); launch only the '
                             'workers, with DMLC_ROLE=worker' % env['DMLC_ROLE'])
        names = DMLC_VARIABLES
    else:
        names = TORCHRUN_VARIABLES
    missing = [v for v in names if v not in env]
    if missing:
        raise MXNetError(
            'kvstore type %r needs a launched distributed job, but %s %s not set. Start the '
            'script with `mxtorch launch -n N script.py` or torchrun (they set RANK, WORLD_SIZE, '
            'MASTER_ADDR, MASTER_PORT), or set DMLC_ROLE=worker with DMLC_WORKER_ID, '
            'DMLC_NUM_WORKER, DMLC_PS_ROOT_URI, DMLC_PS_ROOT_PORT'
            % (kind, ', '.join(missing), 'is' if len(missing) == 1 else 'are'))
    rank_var, size_var, addr_var, port_var = names
    rank, size = _integer(rank_var, 0), _integer(size_var, 1)
    if rank >= size:
        raise MXNetError('%s=%d is out of range for %s=%d' % (rank_var, rank, size_var, size))
    return rank, size, env[addr_var], _integer(port_var, 1)


def join(kind):
    """This process's Cluster, joining the job on first use (`kind` words the errors)."""
    global _joined
    if _joined is None:
        _joined = Cluster(kind)
    return _joined


def joined():
    """The Cluster this process joined, or None."""
    return _joined


def _ranks(ranks):
    return ('rank %d' if len(ranks) == 1 else 'ranks %s') % (
        ranks[0] if len(ranks) == 1 else ', '.join(map(str, ranks)))


class Cluster:
    """Membership of the job: rank, size, the rendezvous store, heartbeats and collectives."""

    def __init__(self, kind):
        self.rank, self.size, self.addr, self.port = job_environment(kind)
        self.timeout = timeout_seconds()
        self.interval = min(1.0, max(0.1, self.timeout / 20))
        self.seq = 0                        # collectives this process has started
        self._state = 'ok'
        self._peers = {}                    # rank -> (beat, seq, state, when the beat changed)
        self._last_poll = time.monotonic()
        self._lock = threading.Lock()
        agent_store = os.environ.get('TORCHELASTIC_USE_AGENT_STORE') == 'True'
        self.store_host = None if agent_store else 0
        # a process group made by the script itself (env://) already runs rank 0's store
        self._store = self._connect(is_master=self.store_host == self.rank
                                    and not dist.is_initialized())
        self._store.set(self._key(self.rank), '0 0 ok')
        self._store.set('arrived/%d' % self.rank, '1')
        self._wait_for_everyone()
        self._monitor_store = self._connect(is_master=False)
        self._stop = threading.Event()
        self._beating = threading.Thread(target=self._heartbeat, name='mxtorch-heartbeat',
                                         daemon=True)
        self._beating.start()
        atexit.register(self.close)
        if dist.is_initialized():
            if (dist.get_rank(), dist.get_world_size()) != (self.rank, self.size):
                raise MXNetError('torch.distributed is already initialised as rank %d of %d, '
                                 'but the environment says rank %d of %d'
                                 % (dist.get_rank(), dist.get_world_size(), self.rank, self.size))
        else:
            self._init_process_group()

    # ---- joining ---------------------------------------------------------------------------------
    def _connect(self, is_master):
        try:
            store = dist.TCPStore(self.addr, self.port, self.size, is_master=is_master,
                                  timeout=datetime.timedelta(seconds=self.timeout),
                                  wait_for_workers=False)
        except RuntimeError as err:
            raise MXNetError('rank %d could not %s the rendezvous store at %s:%d within %g s: %s'
                             % (self.rank, 'open' if is_master else 'reach', self.addr,
                                self.port, self.timeout, _first_line(err))) from err
        attempt = os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')
        return dist.PrefixStore('mxtorch/%s/' % attempt, store)

    @staticmethod
    def _key(rank):
        return 'beat/%d' % rank

    def _wait_for_everyone(self):
        """Return once every rank has arrived; the first rank to give up posts the verdict,
        which the others (waiting on the same store) then report too."""
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                verdict = self._store.get('verdict') if self._store.check(['verdict']) else None
                missing = [r for r in range(self.size)
                           if not self._store.check(['arrived/%d' % r])]
            except RuntimeError as err:
                raise MXNetError('rank %d lost the rendezvous store at %s:%d while waiting for '
                                 'the other workers (its host, rank 0, has exited?): %s'
                                 % (self.rank, self.addr, self.port, _first_line(err))) from err
            if verdict is None and not missing:
                return
            if verdict is None and time.monotonic() > deadline:
                verdict = ('%s of %d did not join the job within the %g s timeout '
                           '(MXTORCH_DIST_TIMEOUT)' % (_ranks(missing), self.size, self.timeout))
                try:
                    self._store.set('verdict', verdict)
                except RuntimeError:       # the store's host gave up first: report our verdict
                    pass
                if self.store_host == self.rank:
                    time.sleep(1.0)        # time for the others to read the verdict
            if verdict is not None:
                message = '%s; seen from rank %d' % (_text(verdict), self.rank)
                report_to_launcher(self.rank, 'missing', missing, message)
                raise MXNetError(message)
            time.sleep(0.05)

    def _init_process_group(self):
        backend = os.environ.get('MXTORCH_DIST_BACKEND') or (
            'cpu:gloo,cuda:nccl' if torch.cuda.is_available() and dist.is_nccl_available()
            else 'gloo')
        self.collective('creating the process group', lambda: dist.init_process_group(
            backend, store=dist.PrefixStore('pg/', self._store), rank=self.rank,
            world_size=self.size, timeout=datetime.timedelta(seconds=self.timeout)))

    def close(self):
        """Stop the heartbeat thread before the interpreter tears down (a thread still inside
        the store's C++ code at exit can abort the process), then leave the process group."""
        self._stop.set()
        self._beating.join(timeout=2 * self.interval + 1.0)
        if dist.is_initialized():
            dist.destroy_process_group()

    # ---- heartbeats ------------------------------------------------------------------------------
    def _heartbeat(self):
        keys = [self._key(r) for r in range(self.size)]
        beat = 0
        while not self._stop.is_set():
            beat += 1
            try:
                self._monitor_store.set(keys[self.rank], '%d %d %s' % (beat, self.seq,
                                                                       self._state))
                values = self._monitor_store.multi_get(keys)
            except RuntimeError:            # the store's host has gone; the last poll stands
                self._stop.wait(self.interval)
                continue
            now = time.monotonic()
            with self._lock:
                self._last_poll = now
                for r, value in enumerate(values):
                    their_beat, seq, state = value.decode().split()
                    old = self._peers.get(r)
                    changed = old[3] if old is not None and old[0] == their_beat else now
                    self._peers[r] = (their_beat, int(seq), state, changed)
            self._stop.wait(self.interval)

    # ---- collectives -----------------------------------------------------------------------------
    def collective(self, what, run):
        """Start collective number seq+1 with `run()`; a backend error names the missing rank."""
        self.seq += 1
        return self.complete(what, run)

    def complete(self, what, run):
        """Run `run()` (e.g. waiting for a started collective), explaining a backend error."""
        start = time.monotonic()
        try:
            return run()
        except RuntimeError as err:
            raise MXNetError(self._explain(what, err, time.monotonic() - start)) from err

    def _explain(self, what, err, waited):
        """Which rank made collective `what` fail: waits a few heartbeats to find out."""
        self._state = 'failed'
        stall = 3 * self.interval
        # the store's host lingers, so that the others can still read the heartbeats
        linger = 2 * self.interval if self.store_host == self.rank else 0.0
        # after a full timeout a dead peer has long been silent: no need to watch for one
        deadline = time.monotonic() + (0 if waited >= 0.9 * self.timeout else 6 * self.interval)
        silent, peers, poll = self._silent(stall)
        while time.monotonic() < deadline and not silent:
            time.sleep(self.interval / 4)
            silent, peers, poll = self._silent(stall)
        time.sleep(linger)
        head = 'rank %d: %s (collective #%d) failed after %.1f s' % (self.rank, what, self.seq,
                                                                     waited)
        behind = sorted(r for r, p in peers.items()
                        if r != self.rank and p[2] != 'failed' and p[1] < self.seq)
        kind, blamed = 'backend', []
        if silent:
            reason = ('%s stopped responding (no heartbeat for %.1f s: crashed, killed or '
                      'frozen)' % (_ranks(silent), max(poll - peers[r][3] for r in silent)))
            kind, blamed = 'silent', silent
        elif time.monotonic() - poll > stall:
            kind, blamed = 'store', [self.store_host] if self.store_host is not None else []
            reason = ('rank %d stopped responding (the rendezvous store it hosts at %s:%d is gone)'
                      % (self.store_host, self.addr, self.port) if self.store_host is not None
                      else "the rendezvous store at %s:%d (torchrun's agent) is gone"
                      % (self.addr, self.port))
        elif behind:
            reason = '%s did not reach it within the %g s timeout (MXTORCH_DIST_TIMEOUT)' % (
                _ranks(behind), self.timeout)
            kind, blamed = 'behind', behind
        else:
            reason = 'no rank is missing; the backend failed'
        message = '%s: %s. Backend error: %s' % (head, reason, _first_line(err))
        report_to_launcher(self.rank, kind, blamed, message)
        return message

    def _silent(self, stall):
        """(ranks whose heartbeat stopped and that did not fail themselves, peers, last poll)."""
        with self._lock:
            peers, poll = dict(self._peers), self._last_poll
        silent = sorted(r for r, (_, _, state, changed) in peers.items()
                        if r != self.rank and state != 'failed' and poll - changed >= stall)
        return silent, peers, poll


REPORTS_VARIABLE = 'MXTORCH_LAUNCH_REPORTS'


def report_to_launcher(rank, kind, blamed, message):
    """Leave this rank's verdict on a failed job where `mxtorch launch` reads it (the folder
    named by MXTORCH_LAUNCH_REPORTS, when the launcher set it): the launcher may stop this
    process before its own report is seen. kind: 'silent' (blamed ranks' heartbeats stopped),
    'behind' (blamed ranks alive but never reached the collective), 'store', 'missing' (blamed
    ranks never joined), 'backend'."""
    folder = os.environ.get(REPORTS_VARIABLE)
    if not folder:
        return
    try:
        path = os.path.join(folder, 'rank%d.json' % rank)
        with open(path + '.tmp', 'w') as f:
            json.dump({'rank': rank, 'kind': kind, 'blamed': [int(r) for r in blamed],
                       'message': message}, f)
        os.replace(path + '.tmp', path)
    except OSError:
        pass


def _text(value):
    return value.decode() if isinstance(value, bytes) else value


def _first_line(err):
    lines = str(err).strip().splitlines()
    return lines[0][:400] if lines else type(err).__name__

"""mx.profiler on torch.profiler.

set_config / set_state('run'|'stop') / pause / resume drive torch.profiler sessions (one per
stretch of running, unpaused time); dump() writes every recorded session as one Chrome-trace JSON
file at the configured filename (appending what is new when called again); as in MXNet a profile
not dumped for good is written when the process exits, and MXNET_PROFILER_AUTOSTART=1 starts
profiling at import. dumps() returns MXNet-style aggregate statistics (with aggregate_stats=True):
MXNet's operators (imperative calls and executor steps), custom operators ('<op_type>::pure_python'
and the operators they call, '<op_type>::<op>'), user ranges, and the memory in use per device.
Domain, Task, Frame and Event record ranges through torch.profiler.record_function; Counter values
and Marker instants are kept here and written as 'C' and 'i' events. Inside the named ranges the
trace also shows torch's own operators (aten::addmm, ...); every operator is recorded, so
profile_symbolic and profile_imperative cannot narrow what is recorded.
"""
import atexit
import contextlib
import json
import os
import tempfile
import threading
import time
import warnings

import torch
from torch.autograd.profiler import record_function
from torch.profiler import ProfilerActivity, profile

from .base import MXNetError

_DEFAULTS = {'profile_all': False, 'profile_symbolic': True, 'profile_imperative': True,
             'profile_memory': True, 'profile_api': True, 'filename': 'profile.json',
             'continuous_dump': True, 'dump_period': 1.0, 'aggregate_stats': False,
             'profile_process': 'worker'}
_config = dict(_DEFAULTS)
_lock = threading.RLock()
# 'output': whether there is a profile to write: set by running, cleared by a final dump (as in
# MXNet, which also writes it when the process exits)
_run = {'state': 'stop', 'paused': False, 'active': None, 'output': False}
_trace_sessions = []      # per finished torch session: its Chrome-trace events, for dump()
_stat_sessions = []       # per session since the last dumps(reset=True): its timed ranges
_memory_sessions = []     # ... and its memory records [(device name, start ns, bytes)]
_custom = threading.local()   # .name: the custom operator whose Python code runs now
_labels = {}              # record_function label -> (category, name, phase, args)


# the kvstore whose server processes MXNet's profiler would drive (profile_process='server');
# mxtorch's distributed kvstore has no servers, so it is only kept
profiler_kvstore_handle = None


def set_kvstore_handle(handle):
    """Keep `handle` (a kvstore's) as the one server-side profiling would go through, as
    MXNet's kvstore creation does; profile_process='server' itself is refused (no servers)."""
    global profiler_kvstore_handle
    profiler_kvstore_handle = handle


def _check_process(profile_process):
    if profile_process not in ('worker', 'server'):
        raise MXNetError("profile_process must be 'worker' or 'server', got %r"
                         % (profile_process,))
    if profile_process == 'server':
        raise MXNetError("profile_process='server': mxtorch's distributed kvstore has no "
                         "server processes (workers all-reduce over torch.distributed)")


def set_config(**kwargs):
    """Set profiler options (see _DEFAULTS for the names); unknown names raise MXNetError."""
    unknown = sorted(set(kwargs) - set(_DEFAULTS))
    if unknown:
        raise MXNetError('Cannot find argument %r, possible arguments: %s'
                         % (unknown[0], ', '.join(_DEFAULTS)))
    if 'profile_process' in kwargs:
        _check_process(kwargs['profile_process'])
    with _lock:
        _config.update(kwargs)


def _start():
    activities = [ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(ProfilerActivity.CUDA)
    memory = bool(_config['profile_all'] or _config['profile_memory'])
    session = profile(activities=activities, profile_memory=memory)
    session.start()
    _run['active'] = session
    _run['instants'] = []       # (wall-clock ns, category, name, phase, args) of this session


def _cut(restart=True):
    """Close the active session (if any) into the recorded ones; restart it when running."""
    session = _run['active']
    if session is None:
        return
    _run['active'] = None
    session.stop()
    _trace_sessions.append(_trace_events(session, _run.pop('instants', [])))  # exports once
    _stat_sessions.append(_ranges(session))
    _memory_sessions.append(_memory_records(session))
    if restart and _run['state'] == 'run' and not _run['paused']:
        _start()


def set_state(state='stop', profile_process='worker'):
    """Start ('run') or stop ('stop') profiling."""
    if state not in ('run', 'stop'):
        raise MXNetError("invalid profiler state %r: expected 'run' or 'stop'" % (state,))
    _check_process(profile_process)
    with _lock:
        if state == _run['state']:
            return
        _run['state'] = state
        if state == 'run':              # running again also ends a pause, as in MXNet
            _run['output'] = True
            _run['paused'] = False
            _start()
        else:
            _cut(restart=False)


def pause(profile_process='worker'):
    """Stop recording until resume(), without leaving the 'run' state."""
    _check_process(profile_process)
    with _lock:
        _run['paused'] = True
        _cut(restart=False)


def resume(profile_process='worker'):
    """Record again after pause()."""
    _check_process(profile_process)
    with _lock:
        _run['paused'] = False
        if _run['state'] == 'run' and _run['active'] is None:
            _start()


def _trace_events(session, instants):
    """The session's Chrome-trace events: torch's, with mxtorch's ranges renamed, and the
    counter values and markers (`instants`) placed on the same clock."""
    fd, path = tempfile.mkstemp(suffix='.json')
    os.close(fd)
    try:
        session.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    finally:
        os.remove(path)
    events = trace.get('traceEvents', [])
    for event in events:
        mine = _labels.get(event.get('name'))
        if mine is not None:
            event.update(name=mine[1], cat=mine[0])
    base = trace.get('baseTimeNanoseconds', 0)
    pid = next((e['pid'] for e in events if e.get('ph') == 'X'), os.getpid())
    tid = threading.get_ident()
    for wall_ns, category, name, phase, args in instants:
        event = {'name': name, 'cat': category, 'ph': phase, 'ts': (wall_ns - base) / 1000.0,
                 'pid': pid, 'tid': tid}
        event.update(args)
        events.append(event)
    return events


def dump(finished=True, profile_process='worker'):
    """Write everything recorded so far to the configured filename as a Chrome trace (JSON).

    The file is complete after every call. As in MXNet, a final dump (`finished`, or any dump
    without continuous_dump) ends the output until profiling runs again: later dumps write
    nothing. A profile not dumped that way is written when the process exits.
    """
    _check_process(profile_process)
    with _lock:
        if not _run['output']:
            return
        _cut()
        _write_trace(_config['filename'])
        if finished or not _config['continuous_dump']:
            _run['output'] = False


_CLOSING = '\n], "displayTimeUnit": "ms"}\n'
_written = {'filename': None, 'events': 0, 'closing_at': 0}


def _write_trace(filename):
    """Write the sessions recorded since the last dump to `filename` as one Chrome trace; as in
    MXNet, dumped events are consumed: a later dump to another file holds only newer ones. A
    file this process wrote before gets the new events inserted before its closing brackets (so
    that dumping in a loop costs what is new, and the file stays valid JSON)."""
    done = _written
    if done['filename'] == filename and os.path.exists(filename) \
            and os.path.getsize(filename) == done['closing_at'] + len(_CLOSING):
        mode = 'r+'
    else:
        mode = 'w'
        done.update(filename=filename, events=0, closing_at=0)
    with open(filename, mode) as f:
        if mode == 'w':
            f.write('{"traceEvents": [\n')
        else:
            f.seek(done['closing_at'])
        for session in _trace_sessions:
            for event in session:
                f.write((',\n' if done['events'] else '') + json.dumps(event))
                done['events'] += 1
        del _trace_sessions[:]
        done['closing_at'] = f.tell()
        f.write(_CLOSING)
        f.truncate()


@atexit.register
def _dump_at_exit():
    """At exit: end the running session (torch crashes at exit if one is left running) and,
    as MXNet, write a profile not finished yet."""
    with _lock:
        _run['state'] = 'stop'
        _cut(restart=False)
        if _run['output']:
            dump(True)


def dump_profile():
    """Deprecated: dump(True)."""
    warnings.warn('profiler.dump_profile() is deprecated. Please use profiler.dump() instead')
    dump(True)


_SORT_KEYS = {'total': 1, 'avg': 4, 'min': 2, 'max': 3, 'count': 0}


def _ranges(session):
    """[(category, name, ms)] of the session's timed MXNet-level ranges (operators, custom
    operators, user ranges; not torch's own operators, which only the trace shows)."""
    try:                         # torch's raw events: building session.events()'s tree of
        timed = [(e.name(), e.duration_ns() / 1e6)  # every aten call takes seconds per second
                 for e in session.profiler.kineto_results.events()]
    except AttributeError:
        timed = [(e.name, e.time_range.elapsed_us() / 1000.0) for e in session.events()]
    out = []
    for name, ms in timed:
        mine = _labels.get(name)
        if mine is None or mine[2] != 'X':
            continue            # torch's operators, memory records, counter values, markers
        out.append((mine[0], mine[1], ms))
    return out


def _memory_records(session):
    """[(device name, start ns, bytes)] of the session's allocations (+) and frees (-)."""
    try:
        events = session.profiler.kineto_results.events()
    except AttributeError:       # no memory profiling in this session
        return []
    out = []
    for event in events:
        if event.name() == '[memory]':
            cuda = 'cuda' in str(event.device_type()).lower()
            device = 'gpu/%d' % max(event.device_index(), 0) if cuda else 'cpu/0'
            out.append((device, event.start_ns(), event.nbytes()))
    return out


def _aggregate():
    """{category: {name: [count, total_ms, min_ms, max_ms]}} over the recorded sessions."""
    stats = {}
    for category, name, ms in (r for ranges in _stat_sessions for r in ranges):
        row = stats.setdefault(category, {}).setdefault(name, [0, 0.0, ms, ms])
        row[0] += 1
        row[1] += ms
        row[2] = min(row[2], ms)
        row[3] = max(row[3], ms)
    return stats


def _memory_stats():
    """{'Memory: <device>': [count, min_kb, max_kb, avg_kb]}: the memory in use (counted from
    the start of profiling) after each allocation or free, per device."""
    usage = {}
    for device, _, nbytes in sorted(r for records in _memory_sessions for r in records):
        usage.setdefault(device, []).append(nbytes)
    stats = {}
    for device, deltas in usage.items():
        levels, level = [], 0
        for delta in deltas:
            level += delta
            levels.append(level / 1000.0)
        stats['Memory: ' + device] = [len(levels), min(levels), max(levels),
                                      sum(levels) / len(levels)]
    return stats


def dumps(reset=False, format='table', sort_by='total', ascending=False):  # noqa: A002
    """Aggregate statistics (collected with set_config(aggregate_stats=True)) as a table or JSON
    string: per category, each name's count and total/min/max/avg time in ms."""
    if format not in ('table', 'json'):
        raise MXNetError("invalid format %r: expected 'table' or 'json'" % (format,))
    if sort_by not in _SORT_KEYS:
        raise MXNetError('invalid sort_by %r: expected one of %s' % (sort_by, list(_SORT_KEYS)))
    with _lock:
        _cut()
        stats = _aggregate() if _config['aggregate_stats'] else {}
        memory = _memory_stats() if _config['aggregate_stats'] else {}
        if reset:
            del _stat_sessions[:]
            del _memory_sessions[:]
    key = _SORT_KEYS[sort_by]
    rows = {cat: sorted(([n, c, t, lo, hi, t / c] for n, (c, t, lo, hi) in table.items()),
                        key=lambda r: r[key + 1], reverse=not ascending)
            for cat, table in stats.items()}
    # memory rows [name, count, min, max, avg]: no total; sorting by it sorts by the maximum
    mem_key = {'count': 1, 'min': 2, 'max': 3, 'avg': 4, 'total': 3}[sort_by]
    mem_rows = sorted(([n] + v for n, v in memory.items()), key=lambda r: r[mem_key],
                      reverse=not ascending)
    if format == 'json':
        return json.dumps({
            'Time': {cat: {r[0]: dict(zip(('Count', 'Total', 'Min', 'Max', 'Avg'),
                                          [r[1]] + [round(v, 4) for v in r[2:]]))
                           for r in table} for cat, table in rows.items()},
            'Memory': {'Device Storage': {r[0]: dict(zip(('Count', 'Min', 'Max', 'Avg'),
                                                         [r[1]] + [round(v, 4) for v in r[2:]]))
                                          for r in mem_rows}} if mem_rows else {},
            'Unit': {'Time': 'ms', 'Memory': 'kB'}}, indent=4)
    if not rows and not mem_rows:
        return ''
    lines = ['', 'Profile Statistics:', '\tNote the difference in units for different entries.']
    if mem_rows:
        head = ('Name', 'Total Count', 'Min Use  (kB)', 'Max Use  (kB)', 'Avg Use  (kB)')
        lines += ['Device Storage', '=================', '%-25s%16s%17s%17s%17s' % head,
                  '%-25s%16s%17s%17s%17s' % tuple('-' * len(h) for h in head)]
        lines += ['%-25s%16d%17.4f%17.4f%17.4f' % tuple(r) for r in mem_rows]
        lines.append('')
    head = ('Name', 'Total Count', 'Time (ms)', 'Min Time (ms)', 'Max Time (ms)',
            'Avg Time (ms)')
    for cat, table in rows.items():
        lines += [cat, '=================', '%-25s%16s%17s%17s%17s%17s' % head,
                  '%-25s%16s%17s%17s%17s%17s' % tuple('-' * len(h) for h in head)]
        lines += ['%-25s%16d%17.4f%17.4f%17.4f%17.4f' % tuple(r) for r in table]
        lines.append('')
    return '\n'.join(lines) + '\n'


# ---- legacy spellings --------------------------------------------------------------------------
def profiler_set_config(mode='symbolic', filename='profile.json'):
    """Deprecated: set_config(profile_all=mode == 'all', filename=filename)."""
    warnings.warn('profiler.profiler_set_config() is deprecated. Please use '
                  'profiler.set_config() instead')
    set_config(profile_symbolic=True, profile_all=(mode == 'all'), filename=filename)


def profiler_set_state(state='stop'):
    """Deprecated: set_state(state)."""
    warnings.warn('profiler.profiler_set_state() is deprecated. Please use '
                  'profiler.set_state() instead')
    set_state(state)


# ---- user-defined ranges, counters and markers ------------------------------------------------
def _label(category, name, phase='X', args=None):
    label = 'mx.profiler %s::%s' % (category, name)
    if phase != 'X':
        label += '#%d' % len(_labels)     # one label per counter value / marker
    _labels.setdefault(label, (category, name, phase, args or {}))
    return label


def recording():
    """Whether a profiling session is running now (the executor then names its operators)."""
    return _run['active'] is not None


def operator_range(op_name):
    """A range named after an MXNet operator, as MXNet's profiler shows executor steps and
    imperative calls; inside a custom operator's Python code, '<custom op>::<op_name>' under
    'Custom Operator'."""
    scope = getattr(_custom, 'name', None)
    if scope is not None:
        return record_function(_label('Custom Operator', '%s::%s' % (scope, op_name)))
    return record_function(_label('operator', op_name))


@contextlib.contextmanager
def custom_operator(op_type, backward=False):
    """Around a custom operator's Python forward (or backward): a range
    '<op_type>::pure_python' (or '_backward_<op_type>::pure_python') under 'Custom Operator',
    in which the operators it calls are named after it."""
    if not recording():
        yield
        return
    name = ('_backward_' if backward else '') + op_type
    outer = getattr(_custom, 'name', None)
    _custom.name = name
    try:
        with record_function(_label('Custom Operator', name + '::pure_python')):
            yield
    finally:
        _custom.name = outer


class Domain:
    """A named group for tasks, frames, counters and markers (their category in the trace)."""

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return self.name

    def new_task(self, name):
        return Task(self, name)

    def new_frame(self, name):
        return Frame(self, name)

    def new_counter(self, name, value=None):
        return Counter(self, name, value)

    def new_marker(self, name):
        return Marker(self, name)


class _Range:
    """start() ... stop() records one range named `name` in category `category`."""

    def __init__(self, category, name):
        self.name = name
        self._label = _label(category, name)
        self._rf = None

    def start(self):
        if self._rf is not None:
            raise MXNetError('%s %r is already started' % (type(self).__name__, self.name))
        self._rf = record_function(self._label)
        self._rf.__enter__()

    def stop(self):
        if self._rf is None:
            raise MXNetError('%s %r is not started' % (type(self).__name__, self.name))
        rf, self._rf = self._rf, None
        rf.__exit__(None, None, None)

    def __str__(self):
        return self.name


class Task(_Range):
    """A range within a Domain."""

    def __init__(self, domain, name):
        super().__init__(str(domain), name)
        self.domain = domain


class Frame(_Range):
    """A range within a Domain (MXNet: a frame of a repeated activity)."""

    def __init__(self, domain, name):
        super().__init__(str(domain), name)
        self.domain = domain


class Event(_Range):
    """A range in the 'event' category."""

    def __init__(self, name):
        super().__init__('event', name)


def _instant(category, name, phase, args):
    """Record a counter value or a marker (kept here: torch's profiler has no instants)."""
    with _lock:
        if _run['active'] is not None:        # not recording: nothing to keep
            _run['instants'].append((time.time_ns(), category, name, phase, args))


class Counter:
    """A named value in a Domain; every change is recorded (a 'C' event in the trace)."""

    def __init__(self, domain, name, value=None):
        self.domain = domain
        self.name = name
        self._value = 0
        if value is not None:
            self.set_value(value)

    def __str__(self):
        return self.name

    def set_value(self, value):
        self._value = value
        _instant(str(self.domain), self.name, 'C', {'args': {self.name: value}})

    def increment(self, delta=1):
        self.set_value(self._value + delta)

    def decrement(self, delta=1):
        self.set_value(self._value - delta)

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self


class Marker:
    """A named instant in a Domain."""

    def __init__(self, domain, name):
        self.domain = domain
        self.name = name

    def mark(self, scope='process'):
        """Record the instant; scope 'global', 'process' or 'thread' (the trace's 's')."""
        _instant(str(self.domain), self.name, 'i',
                 {'s': {'global': 'g', 'process': 'p'}.get(scope, 't')})


def _autostart():
    """MXNET_PROFILER_AUTOSTART=1 starts profiling at import, as in MXNet (with the default
    config; the profile is written at exit)."""
    try:
        on = int(os.environ.get('MXNET_PROFILER_AUTOSTART', '0'))
    except ValueError:
        on = 0
    if on:
        set_state('run')


_autostart()

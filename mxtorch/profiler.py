"""mx.profiler on torch.profiler.

set_config / set_state('run'|'stop') / pause / resume drive torch.profiler sessions (one per
stretch of running, unpaused time); dump() writes every recorded session as one Chrome-trace JSON
file at the configured filename; dumps() returns MXNet-style aggregate statistics (with
aggregate_stats=True). Domain, Task, Frame, Event, Counter and Marker record ranges through
torch.profiler.record_function; dump() writes counters as 'C' events and markers as instant
events. While a session runs, executors run their plan step by step, each step in a range named
after its MXNet operator (FullyConnected, ...) with torch's own operators (aten::addmm, ...)
inside; every operator is recorded, so profile_symbolic and profile_imperative cannot narrow
what is recorded.
"""
import json
import os
import tempfile
import threading
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
_run = {'state': 'stop', 'paused': False, 'active': None}
_trace_sessions = []      # per finished torch session: its Chrome-trace events, for dump()
_stat_sessions = []       # per session since the last dumps(reset=True): its timed ranges
_labels = {}              # record_function label -> (category, name, phase, args)


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


def _cut(restart=True):
    """Close the active session (if any) into the recorded ones; restart it when running."""
    session = _run['active']
    if session is None:
        return
    _run['active'] = None
    session.stop()
    _trace_sessions.append(_trace_events(session))     # a session exports only once
    _stat_sessions.append(_ranges(session))
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
        if state == 'run':
            if not _run['paused']:
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


def _trace_events(session):
    fd, path = tempfile.mkstemp(suffix='.json')
    os.close(fd)
    try:
        session.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f).get('traceEvents', [])
    finally:
        os.remove(path)
    for event in events:
        mine = _labels.get(event.get('name'))
        if mine is None:
            continue
        category, name, phase, args = mine
        event.update(name=name, cat=category)
        if phase != 'X':
            event.pop('dur', None)
            event['ph'] = phase
            event.update(args)
    return events


def dump(finished=True, profile_process='worker'):
    """Write everything recorded so far to the configured filename as a Chrome trace (JSON).

    The file is complete after every call; `finished` is accepted for MXNet compatibility.
    """
    _check_process(profile_process)
    with _lock:
        _cut()
        events = [e for s in _trace_sessions for e in s]
        with open(_config['filename'], 'w') as f:
            json.dump({'traceEvents': events, 'displayTimeUnit': 'ms'}, f)


def dump_profile():
    """Deprecated: dump(True)."""
    warnings.warn('profiler.dump_profile() is deprecated. Please use profiler.dump() instead')
    dump(True)


_SORT_KEYS = {'total': 1, 'avg': 4, 'min': 2, 'max': 3, 'count': 0}


def _ranges(session):
    """[(category, name, ms)] of the session's timed ranges."""
    out = []
    for event in session.events():
        mine = _labels.get(event.name)
        if event.name == '[memory]' or (mine is not None and mine[2] != 'X'):
            continue            # memory records, counter updates and markers are not ranges
        category, name = (mine[0], mine[1]) if mine else ('operator', event.name)
        out.append((category, name, event.time_range.elapsed_us() / 1000.0))
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
        if reset:
            del _stat_sessions[:]
    key = _SORT_KEYS[sort_by]
    rows = {cat: sorted(([n, c, t, lo, hi, t / c] for n, (c, t, lo, hi) in table.items()),
                        key=lambda r: r[key + 1], reverse=not ascending)
            for cat, table in stats.items()}
    if format == 'json':
        return json.dumps({'Time': {cat: {r[0]: dict(zip(('Count', 'Total', 'Min', 'Max', 'Avg'),
                                                         [r[1]] + [round(v, 4) for v in r[2:]]))
                                          for r in table} for cat, table in rows.items()},
                           'Unit': {'Time': 'ms'}}, indent=4)
    if not rows:
        return ''
    lines = ['', 'Profile Statistics:', '\tNote the difference in units for different entries.']
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
    """A range named after an MXNet operator, as MXNet's profiler shows executor steps."""
    return record_function(_label('operator', op_name))


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
    if _run['active'] is None:
        return                                # not recording: nothing to label
    with record_function(_label(category, name, phase, args)):
        pass


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

"""mx.profiler: MXNet's aggregate statistics, trace file and exit-time dump."""
import json
import os
import subprocess
import sys

import mxtorch as mx
from mxtorch import profiler


def _start(tmp_path, name='trace.json', **kwargs):
    options = dict(profile_all=True, filename=str(tmp_path / name), continuous_dump=True,
                   aggregate_stats=True)
    options.update(kwargs)
    profiler.set_config(**options)
    profiler.set_state('run')
    profiler.dumps(reset=True)


class _Twice(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        mx.nd.zeros((2, 2))
        self.assign(out_data[0], req[0], in_data[0] * 2)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * 2)


@mx.operator.register('ProfiledTwice')
class _TwiceProp(mx.operator.CustomOpProp):
    def list_arguments(self):
        return ['data']

    def list_outputs(self):
        return ['output']

    def infer_shape(self, in_shape):
        return [in_shape[0]], [in_shape[0]], []

    def create_operator(self, ctx, shapes, dtypes):
        return _Twice()


def test_aggregate_stats_name_mxnet_operators_and_custom_operators(tmp_path):
    _start(tmp_path)
    try:
        x = mx.nd.zeros((10, 10))
        mx.nd.sqrt(x)
        x = x + 1
        x = x + 1
        y = mx.nd.array([1.0, 2.0])
        y.attach_grad()
        with mx.autograd.record():
            z = mx.nd.Custom(y, op_type='ProfiledTwice')
        z.backward()
        stats = json.loads(profiler.dumps(format='json'))
    finally:
        profiler.set_state('stop')
    ops = stats['Time']['operator']
    assert ops['sqrt']['Count'] == 1 and ops['_plus_scalar']['Count'] == 2
    assert not any(name.startswith('aten::') for name in ops)      # torch's own: trace only
    custom = stats['Time']['Custom Operator']
    assert {'ProfiledTwice::pure_python', '_backward_ProfiledTwice::pure_python',
            'ProfiledTwice::_zeros', 'ProfiledTwice::_mul_scalar'} <= set(custom)
    assert stats['Unit'] == {'Time': 'ms', 'Memory': 'kB'}
    memory = stats['Memory']['Device Storage']['Memory: cpu/0']
    assert memory['Count'] > 0 and memory['Max'] >= 0.4                 # 10x10 float32 = 0.4 kB
    ascending = json.loads(profiler.dumps(format='json', sort_by='count', ascending=True))
    counts = [row['Count'] for row in ascending['Time']['operator'].values()]
    assert counts == sorted(counts)
    assert 'Device Storage' in profiler.dumps()


def test_trace_file_grows_stays_valid_and_holds_counters_and_markers(tmp_path):
    _start(tmp_path, aggregate_stats=False)
    domain = profiler.Domain('Dom')
    counter = profiler.Counter(domain, 'count', 1)
    sizes = []
    for i in range(3):
        profiler.Marker(domain, 'mark%d' % i).mark('process')
        counter += 1
        mx.nd.ones((3,)).asnumpy()
        profiler.dump(False)
        sizes.append(os.path.getsize(tmp_path / 'trace.json'))
        json.load(open(tmp_path / 'trace.json'))                    # valid after every dump
    profiler.set_state('stop')
    profiler.dump()
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    events = json.load(open(tmp_path / 'trace.json'))['traceEvents']
    values = [e['args']['count'] for e in events if e.get('ph') == 'C' and e['cat'] == 'Dom']
    assert values == [1, 2, 3, 4]
    marks = [e for e in events if e.get('ph') == 'i' and e.get('cat') == 'Dom']
    assert [e['name'] for e in marks] == ['mark0', 'mark1', 'mark2'] and marks[0]['s'] == 'p'
    ones = [e for e in events if e.get('name') == '_ones']
    assert len(ones) == 3 and all(e['cat'] == 'operator' for e in ones)
    os.remove(tmp_path / 'trace.json')
    profiler.dump()                           # a final dump ended the output, as in MXNet
    assert not os.path.exists(tmp_path / 'trace.json')


def test_running_again_ends_a_pause(tmp_path):
    _start(tmp_path)
    profiler.pause()
    profiler.set_state('stop')
    profiler.set_state('run')                 # MXNet: running unpauses
    mx.nd.sqrt(mx.nd.ones((2,)))
    stats = json.loads(profiler.dumps(format='json'))
    profiler.set_state('stop')
    assert stats['Time']['operator']['sqrt']['Count'] == 1


def test_profile_is_written_at_exit(tmp_path):
    path = tmp_path / 'at_exit.json'
    code = ('import mxtorch as mx\n'
            'mx.profiler.set_config(filename=%r)\n'
            'mx.profiler.set_state("run")\n'
            'mx.nd.ones((2,)).asnumpy()\n' % str(path))
    subprocess.run([sys.executable, '-c', code], check=True, timeout=120,
                   env=dict(os.environ, OMP_NUM_THREADS='1'))
    names = {e.get('name') for e in json.load(open(path))['traceEvents']}
    assert '_ones' in names


def test_dumped_events_are_consumed_a_new_file_holds_only_newer_ones(tmp_path):
    """As MXNet's profiler: events written by a dump are not written again into the next file."""
    first, second = tmp_path / 'first.json', tmp_path / 'second.json'
    profiler.set_config(profile_all=True, filename=str(first))
    profiler.set_state('run')
    counter = profiler.Counter(profiler.Domain('d'), 'first_counter')
    for i in range(50):
        counter.set_value(i)
    profiler.set_state('stop')
    profiler.dump()
    profiler.set_config(profile_all=True, filename=str(second))
    profiler.set_state('run')
    profiler.Counter(profiler.Domain('d'), 'second_counter').set_value(7)
    profiler.set_state('stop')
    profiler.dump()
    names = [[e.get('name') for e in json.loads(p.read_text())['traceEvents']]
             for p in (first, second)]
    assert names[0].count('first_counter') == 50 and 'second_counter' not in names[0]
    assert names[1].count('second_counter') == 1 and 'first_counter' not in names[1]

"""Small top-level namespaces: mx.rnd, mx.contrib, mx.runtime, mx.engine, mx.profiler, mx.log,
mx.util."""
import importlib
import json
import logging
import re
import threading

import numpy as np
import pytest
import torch

import mxtorch as mx
from mxtorch import compat, profiler


def test_rnd_is_random():
    assert mx.rnd is mx.random
    mx.rnd.seed(3)
    a = mx.nd.random.uniform(shape=(4,)).asnumpy()
    mx.random.seed(3)
    np.testing.assert_array_equal(a, mx.nd.random.uniform(shape=(4,)).asnumpy())


def test_contrib_namespaces_are_the_contrib_operators():
    assert mx.contrib.nd is mx.contrib.ndarray is mx.nd.contrib
    assert mx.contrib.sym is mx.contrib.symbol is mx.sym.contrib
    data = mx.sym.Variable('data')
    label = mx.sym.Variable('label')
    loss = mx.contrib.sym.CTCLoss(data, label, name='ctc')
    assert loss.list_arguments() == ['data', 'label']
    x = mx.nd.random.uniform(shape=(5, 2, 4))
    y = mx.nd.array([[1, 2], [2, 3]])
    np.testing.assert_allclose(mx.contrib.nd.ctc_loss(x, y).asnumpy(),
                               mx.nd.contrib.CTCLoss(x, y).asnumpy())


def test_new_modules_resolve_under_the_mxnet_alias():
    compat.install()
    try:
        for name in ('profiler', 'runtime', 'engine', 'log', 'util', 'contrib'):
            assert importlib.import_module('mxnet.' + name) is getattr(mx, name)
        import mxnet.contrib.ndarray as cnd
        from mxnet.contrib import symbol
        assert cnd is mx.nd.contrib and symbol is mx.sym.contrib
    finally:
        compat.uninstall()


def test_runtime_features():
    features = mx.runtime.Features()
    names = list(features)
    assert names[:3] == ['CUDA', 'CUDNN', 'NCCL'] and len(names) == 32 and 'TVM_OP' in names
    assert features['CUDA'].name == 'CUDA'
    assert features.is_enabled('cuda') == torch.backends.cuda.is_built()
    assert features.is_enabled('MKLDNN') == torch.backends.mkldnn.is_available()
    assert features.is_enabled('OPENMP') == torch.backends.openmp.is_available()
    assert features.is_enabled('DIST_KVSTORE') == torch.distributed.is_available()
    assert features.is_enabled('INT64_TENSOR_SIZE') and features.is_enabled('PROFILER')
    for absent in ('TENSORRT', 'CAFFE', 'TVM_OP', 'OPENCV', 'JEMALLOC'):
        assert not features.is_enabled(absent)
    mark = '✔' if features['INT64_TENSOR_SIZE'].enabled else '✖'
    assert repr(features['INT64_TENSOR_SIZE']) == mark + ' INT64_TENSOR_SIZE'
    assert repr(features).startswith('[%s CUDA, ' % ('✔' if features['CUDA'].enabled else '✖'))
    assert repr(features).endswith(', ✖ TVM_OP]')
    with pytest.raises(RuntimeError, match="Feature 'NOPE' is unknown"):
        features.is_enabled('NOPE')
    listed = mx.runtime.feature_list()
    assert [f.name for f in listed] == names
    assert [f.enabled for f in listed] == [f.enabled for f in features.values()]


def test_engine_bulk_size():
    old = mx.engine.set_bulk_size(4)
    try:
        assert mx.engine.set_bulk_size(8) == 4
        with mx.engine.bulk(16) as scope:
            assert scope is not None
            assert mx.engine.set_bulk_size(16) == 16
            seen = []
            thread = threading.Thread(target=lambda: seen.append(mx.engine.set_bulk_size(1)))
            thread.start()
            thread.join()
            assert seen == [0]                    # per thread, as in MXNet
            out = (mx.nd.ones((2, 2)) * 3).asnumpy()  # operators still run inside the scope
        assert mx.engine.set_bulk_size(8) == 8    # restored on exit
        np.testing.assert_array_equal(out, np.full((2, 2), 3.0))
    finally:
        mx.engine.set_bulk_size(old)


@pytest.fixture
def clean_profiler():
    saved = dict(profiler._config)
    yield
    profiler.set_state('stop')
    profiler.resume()
    profiler._config.clear()
    profiler._config.update(saved)
    del profiler._trace_sessions[:], profiler._stat_sessions[:]


def test_profiler_records_executor_and_user_ranges(tmp_path, clean_profiler):
    trace = tmp_path / 'prof.json'
    profiler.set_config(profile_all=True, aggregate_stats=True, filename=str(trace))
    profiler.set_state('run')
    net = mx.sym.FullyConnected(mx.sym.Variable('x'), num_hidden=4, name='fc')
    exe = net.simple_bind(mx.cpu(), x=(2, 3))
    exe.forward(is_train=True)
    exe.backward(mx.nd.ones((2, 4)))
    domain = profiler.Domain('mydomain')
    assert str(domain) == 'mydomain'
    task = domain.new_task('mytask')
    task.start()
    mx.nd.ones((3,)).asnumpy()
    task.stop()
    with pytest.raises(mx.MXNetError, match='not started'):
        task.stop()
    counter = domain.new_counter('mycounter', 5)
    counter += 2
    counter.decrement()
    domain.new_marker('mymarker').mark()
    event = profiler.Event('myevent')
    event.start()
    event.stop()
    profiler.pause()
    hidden = profiler.Event('while_paused')
    hidden.start()
    hidden.stop()
    profiler.resume()
    profiler.set_state('stop')
    profiler.dump()

    events = json.loads(trace.read_text())['traceEvents']
    names = {e.get('name') for e in events}
    assert 'aten::addmm' in names                 # the FullyConnected forward...
    fc = [e for e in events if e.get('name') == 'FullyConnected']
    assert len(fc) == 1 and fc[0]['cat'] == 'operator'   # ...inside a range named as in MXNet
    assert any('Backward' in str(n) for n in names)
    assert 'while_paused' not in names
    task_ev = [e for e in events if e.get('name') == 'mytask']
    assert len(task_ev) == 1 and task_ev[0]['cat'] == 'mydomain' and task_ev[0]['ph'] == 'X'
    counts = [e['args']['mycounter'] for e in events if e.get('name') == 'mycounter']
    assert counts == [5, 7, 6] and {e['ph'] for e in events if e.get('name') == 'mycounter'} \
        == {'C'}
    marker = [e for e in events if e.get('name') == 'mymarker']
    assert marker[0]['ph'] == 'i' and marker[0]['s'] == 'p'
    assert [e['cat'] for e in events if e.get('name') == 'myevent'] == ['event']

    table = profiler.dumps()
    assert table.startswith('\nProfile Statistics:\n')
    assert re.search(r'^operator\n=+\nName +Total Count +Time \(ms\)', table, re.M)
    assert not re.search(r'^aten::', table, re.M)       # torch's own operators: trace only
    assert re.search(r'^FullyConnected +1 +[0-9.]+ ', table, re.M)
    assert re.search(r'^mydomain\n=+\n(.*\n){2}mytask +1 ', table, re.M)
    stats = json.loads(profiler.dumps(format='json', reset=True))['Time']
    assert stats['operator']['FullyConnected']['Count'] == 1
    assert stats['event']['myevent']['Count'] == 1
    assert profiler.dumps() == ''                 # reset cleared the statistics...
    profiler.dump()                               # ...not the trace
    assert 'mytask' in {e.get('name') for e in json.loads(trace.read_text())['traceEvents']}


def test_profiler_dumps_needs_aggregate_stats_and_dump_without_run(tmp_path, clean_profiler):
    trace = tmp_path / 'empty.json'
    profiler.set_config(filename=str(trace), aggregate_stats=False)
    profiler.set_state('run')
    mx.nd.ones((2,)).asnumpy()
    profiler.set_state('stop')
    assert profiler.dumps() == ''
    del profiler._trace_sessions[:]
    profiler.dump()
    assert json.loads(trace.read_text())['traceEvents'] == []


def test_profiler_errors(clean_profiler):
    with pytest.raises(mx.MXNetError, match="'bogus'"):
        profiler.set_config(bogus=1)
    with pytest.raises(mx.MXNetError, match="'running'"):
        profiler.set_state('running')
    with pytest.raises(mx.MXNetError, match="'xml'"):
        profiler.dumps(format='xml')
    with pytest.raises(mx.MXNetError, match="'median'"):
        profiler.dumps(sort_by='median')
    with pytest.raises(mx.MXNetError, match='server'):
        profiler.set_state('run', profile_process='server')
    assert profiler._run['state'] == 'stop' and profiler._run['active'] is None


def test_log_get_logger(tmp_path, capsys):
    logger = mx.log.get_logger('mxtorch_test_stream', level=logging.INFO)
    assert logger is logging.getLogger('mxtorch_test_stream') and logger.level == logging.INFO
    logger.info('hello %d', 7)
    line = capsys.readouterr().err.splitlines()[-1]
    assert re.fullmatch(r'\x1b\[32mI\d{4} \d\d:\d\d:\d\d \d+ .*test_namespaces\.py:'
                        r'test_log_get_logger:\d+\]\x1b\[0m hello 7', line), line
    assert mx.log.get_logger('mxtorch_test_stream', level=logging.ERROR).level == logging.INFO
    assert len(logger.handlers) == 1               # configured once

    path = tmp_path / 'log.txt'
    flog = mx.log.get_logger('mxtorch_test_file', filename=str(path), filemode='w')
    flog.warning('to file')
    flog.info('dropped')                           # below the default WARNING level
    flog.handlers[0].flush()
    assert path.read_text() == 'to file\n'
    assert mx.log.get_logger() is logging.getLogger()
    with pytest.warns(DeprecationWarning):
        assert mx.log.getLogger('mxtorch_test_file') is flog


def test_util(monkeypatch):
    assert mx.util.get_gpu_count() == mx.num_gpus()
    with pytest.raises(ValueError, match='gpu context'):
        mx.util.get_cuda_compute_capability(mx.cpu())
    if mx.num_gpus():
        free, total = mx.util.get_gpu_memory(0)
        assert 0 < free <= total
        major, minor = torch.cuda.get_device_capability(0)
        assert mx.util.get_cuda_compute_capability(mx.gpu(0)) == major * 10 + minor
    else:
        with pytest.raises(mx.MXNetError):
            mx.util.get_gpu_memory(0)
    monkeypatch.delenv('MXTORCH_TEST_VAR', raising=False)
    assert mx.util.getenv('MXTORCH_TEST_VAR') is None
    mx.util.setenv('MXTORCH_TEST_VAR', '1')
    assert mx.util.getenv('MXTORCH_TEST_VAR') == '1'
    mx.util.setenv('MXTORCH_TEST_VAR', None)
    assert mx.util.getenv('MXTORCH_TEST_VAR') is None

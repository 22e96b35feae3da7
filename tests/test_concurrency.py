"""Threads and processes: background iterator threads end cleanly (at exit and when collected),
iterators refuse arguments that would never end an epoch, executors and modules used from
several threads give right numbers."""
import gc
import os
import pathlib
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import mxtorch as mx

HERE = pathlib.Path(__file__).resolve().parent


def _threads_named(prefix=''):
    return [t for t in threading.enumerate()
            if t is not threading.main_thread() and t.name.startswith(prefix)]


# ---- background threads at exit and on collection ----------------------------------------------

def test_prefetching_iter_process_exits_cleanly():
    """A script training from a PrefetchingIter exits with status 0 even though the prefetching
    thread is busy in torch when the interpreter shuts down (it aborted with 'terminate called
    without an active exception' when the thread outlived the interpreter)."""
    env = dict(os.environ, OMP_NUM_THREADS='1')
    env['PYTHONPATH'] = os.pathsep.join([str(HERE.parent), env.get('PYTHONPATH', '')])
    runs = [subprocess.Popen([sys.executable, str(HERE / 'prefetch_exit_child.py')], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(3)]
    for proc in runs:
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err[-2000:]
        assert 'trained' in out
        assert 'terminate called' not in err


def test_prefetching_iter_threads_end_when_collected_or_closed():
    data = np.arange(40, dtype=np.float32).reshape(10, 4)
    before = len(threading.enumerate())
    it = mx.io.PrefetchingIter([mx.io.NDArrayIter(data, batch_size=5),
                                mx.io.NDArrayIter(data * 2, batch_size=5)])
    assert len(threading.enumerate()) == before + 2
    batch = it.next()
    np.testing.assert_array_equal(batch.data[0].asnumpy(), data[:5])
    np.testing.assert_array_equal(batch.data[1].asnumpy(), data[:5] * 2)
    del it, batch
    gc.collect()
    assert len(threading.enumerate()) == before

    it = mx.io.PrefetchingIter(mx.io.NDArrayIter(data, batch_size=5))
    assert len(threading.enumerate()) == before + 1
    it.close()
    assert len(threading.enumerate()) == before
    with pytest.raises(mx.MXNetError, match='closed'):
        it.next()
    it.close()      # twice is fine


def test_image_record_iter_thread_ends_when_collected():
    rec = str(HERE / 'fixtures' / 'image_rec' / 'tiny.rec')
    it = mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=2,
                               label_width=2, preprocess_threads=2, prefetch_buffer=1)
    assert _threads_named('ImageRecordIter-prefetch')
    assert it.next().data[0].shape == (2, 3, 8, 8)
    del it
    gc.collect()
    deadline = time.monotonic() + 5
    while _threads_named('ImageRecordIter-prefetch') and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _threads_named('ImageRecordIter-prefetch')


def test_dataloader_workers_end_with_the_epoch():
    dataset = mx.gluon.data.ArrayDataset(np.arange(20, dtype=np.float32))
    before = len(threading.enumerate())
    loader = mx.gluon.data.DataLoader(dataset, batch_size=4, num_workers=2)
    got = np.concatenate([b.asnumpy() for b in loader])
    np.testing.assert_array_equal(got, np.arange(20))
    assert len(threading.enumerate()) == before
    batches = iter(loader)          # abandoned half-way
    next(batches)
    del batches
    gc.collect()
    assert len(threading.enumerate()) == before


# ---- arguments that would never end an epoch ----------------------------------------------------

@pytest.mark.parametrize('bad', [0, -1, 2.5, 3.0])
def test_batch_sizes_that_never_end_are_refused(bad):
    data = np.zeros((10, 2), np.float32)
    with pytest.raises(mx.MXNetError, match='NDArrayIter: batch_size'):
        mx.io.NDArrayIter(data, batch_size=bad)
    with pytest.raises(mx.MXNetError, match='BatchSampler: batch_size'):
        mx.gluon.data.DataLoader(mx.gluon.data.ArrayDataset(data), batch_size=bad)
    with pytest.raises(mx.MXNetError, match='ResizeIter: size'):
        mx.io.ResizeIter(mx.io.NDArrayIter(data, batch_size=2), -1 if bad == 0 else bad)


def test_batch_size_types_and_good_values():
    data = np.arange(20, dtype=np.float32).reshape(10, 2)
    for bad in ('3', None):
        with pytest.raises(TypeError, match='batch_size'):
            mx.io.NDArrayIter(data, batch_size=bad)
    batches = list(mx.io.NDArrayIter(data, batch_size=np.int64(4), last_batch_handle='discard'))
    assert [b.data[0].shape for b in batches] == [(4, 2), (4, 2)]
    assert len(list(mx.io.ResizeIter(mx.io.NDArrayIter(data, batch_size=4), 0))) == 0
    assert len(list(mx.io.ResizeIter(mx.io.NDArrayIter(data, batch_size=4), 5))) == 5


# ---- one executor or module, several threads ----------------------------------------------------

def _mlp():
    data = mx.sym.Variable('data')
    hidden = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=16, name='fc1'),
                               act_type='relu')
    return mx.sym.FullyConnected(hidden, num_hidden=4, name='fc2')


def _set_params(arg_dict, seed=0):
    rs = np.random.RandomState(seed)
    for name in ('fc1_weight', 'fc1_bias', 'fc2_weight', 'fc2_bias'):
        arg_dict[name][:] = rs.randn(*arg_dict[name].shape) * 0.3
    return {k: arg_dict[k].asnumpy() for k in ('fc1_weight', 'fc1_bias', 'fc2_weight',
                                               'fc2_bias')}


def _mlp_numpy(p, x):
    hidden = np.maximum(x @ p['fc1_weight'].T + p['fc1_bias'], 0)
    return hidden @ p['fc2_weight'].T + p['fc2_bias']


def _in_threads(work, count):
    failures = []

    def guarded(k):
        try:
            work(k)
        except Exception as err:    # noqa: BLE001  (reported by the test)
            failures.append(err)
    threads = [threading.Thread(target=guarded, args=(k,)) for k in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not failures, failures[:3]


def test_one_executor_many_threads_every_forward_right():
    ex = _mlp().simple_bind(mx.cpu(), data=(8, 10), grad_req='null')
    params = _set_params(ex.arg_dict)
    wrong = []

    def work(k):
        rs = np.random.RandomState(k)
        for _ in range(150):
            x = rs.randn(8, 10).astype(np.float32)
            got = ex.forward(data=x)[0].asnumpy()
            time.sleep(0)                       # let another thread's forward run here
            again = ex.outputs[0].asnumpy()     # this thread's outputs, whatever the others did
            if not (np.allclose(got, _mlp_numpy(params, x), atol=1e-4)
                    and np.array_equal(got, again)):
                wrong.append(k)
    _in_threads(work, 8)
    assert not wrong, '%d of 1200 forwards wrong' % len(wrong)
    # the binding thread never ran forward: it reads the latest forward's outputs
    assert ex.outputs[0].shape == (8, 4)


def test_executor_outputs_handed_to_another_thread():
    ex = _mlp().simple_bind(mx.cpu(), data=(2, 10), grad_req='null')
    params = _set_params(ex.arg_dict)
    x = np.ones((2, 10), np.float32)
    bound = ex.outputs[0]

    def work(_):
        ex.forward(data=x)
    _in_threads(work, 1)
    # the first thread to run forward writes into the bound output arrays
    assert ex.outputs[0] is bound
    np.testing.assert_allclose(bound.asnumpy(), _mlp_numpy(params, x), atol=1e-5)


def test_executor_backward_after_another_threads_forward_raises():
    ex = _mlp().simple_bind(mx.cpu(), data=(2, 10))
    _set_params(ex.arg_dict)
    ex.forward(is_train=True, data=np.ones((2, 10), np.float32))
    other = threading.Thread(target=lambda: ex.forward(is_train=True,
                                                       data=np.zeros((2, 10), np.float32)))
    other.start()
    other.join()
    with pytest.raises(mx.MXNetError, match='another thread ran forward'):
        ex.backward(mx.nd.ones((2, 4)))
    # forward and backward in one thread again: right gradients
    ex.forward(is_train=True, data=np.ones((2, 10), np.float32))
    ex.backward(mx.nd.ones((2, 4)))
    np.testing.assert_allclose(ex.grad_dict['fc2_bias'].asnumpy(), [2, 2, 2, 2])


def test_executor_forward_backward_pairs_in_threads_right_gradients():
    ex = _mlp().simple_bind(mx.cpu(), data=(4, 10))
    params = _set_params(ex.arg_dict)
    lock = threading.Lock()
    wrong = []

    def work(k):
        rs = np.random.RandomState(k)
        for _ in range(40):
            x = rs.randn(4, 10).astype(np.float32)
            with lock:          # the caller pairs forward and backward
                ex.forward(is_train=True, data=x)
                ex.backward(mx.nd.ones((4, 4)))
                grad = ex.grad_dict['fc1_bias'].asnumpy()
            hidden = x @ params['fc1_weight'].T + params['fc1_bias']
            want = ((hidden > 0) * params['fc2_weight'].sum(axis=0)).sum(axis=0)
            if not np.allclose(grad, want, atol=1e-4):
                wrong.append(k)
    _in_threads(work, 4)
    assert not wrong


def test_one_module_many_threads_forward_right():
    mod = mx.mod.Module(_mlp(), label_names=None)
    mod.bind(data_shapes=[('data', (8, 10))], for_training=False)
    mod.init_params()
    arg, _ = mod.get_params()
    params = {k: v.asnumpy() for k, v in arg.items()}
    wrong = []

    def work(k):
        rs = np.random.RandomState(k)
        for _ in range(100):
            x = rs.randn(8, 10).astype(np.float32)
            mod.forward(mx.io.DataBatch([mx.nd.array(x)]), is_train=False)
            time.sleep(0)
            if not np.allclose(mod.get_outputs()[0].asnumpy(), _mlp_numpy(params, x),
                               atol=1e-4):
                wrong.append(k)
    _in_threads(work, 6)
    assert not wrong, '%d of 600 module forwards wrong' % len(wrong)


def test_executor_lock_costs_little():
    """The lock and per-thread bookkeeping add next to nothing to a small MLP's forward."""
    ex = _mlp().simple_bind(mx.cpu(), data=(8, 10), grad_req='null')
    _set_params(ex.arg_dict)
    ex.forward()

    def best(fn, n=300, rounds=5):
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            for _ in range(n):
                fn()
            times.append((time.perf_counter() - start) / n)
        return min(times)
    locked = best(lambda: ex.forward())
    unlocked = best(lambda: ex._forward(False, {}))
    assert locked < unlocked * 1.25 + 20e-6, (locked, unlocked)

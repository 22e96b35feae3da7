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


# ---- arguments that would never end an epoch ------------------------------------------------------

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

"""Watching training: mx.callback.Progress (tqdm or plain), progress_iter for predict,
mx.contrib.tensorboard's callbacks read back from the event files."""
import io

import numpy as np
import pytest

import mxtorch as mx
from mxtorch.models import mlp


def data(n=100, batch=32):
    rng = np.random.RandomState(0)
    return mx.io.NDArrayIter(rng.rand(n, 64).astype(np.float32), rng.randint(0, 10, n), batch)


@pytest.mark.parametrize('use_tqdm', [False, True])
def test_progress_bar_for_fit_score_and_predict(use_tqdm):
    if use_tqdm:
        pytest.importorskip('tqdm')
    it = data()
    mod = mx.mod.Module(mlp.get_symbol(num_classes=10))
    out = io.StringIO()
    mod.fit(it, num_epoch=2, eval_metric=['acc', 'ce'],
            batch_end_callback=mx.callback.Progress(file=out, use_tqdm=use_tqdm, mininterval=0))
    text = out.getvalue()
    lines = [l.split('\r')[-1] for l in text.split('\n') if l.strip()]
    assert len(lines) == 2                       # one finished bar per epoch
    for epoch, line in enumerate(lines):
        assert line.startswith('Epoch %d' % epoch)
        assert '100%' in line and '4/4' in line   # 100 samples in batches of 32, padded
        assert 'accuracy=' in line and 'cross-entropy=' in line
        assert '<00:00' in line                  # elapsed<remaining
    acc = dict(mod.score(it, 'acc'))['accuracy']
    out = io.StringIO()
    scored = mod.score(it, 'acc', batch_end_callback=mx.callback.Progress(
        desc='score', file=out, use_tqdm=use_tqdm, mininterval=0))
    assert dict(scored)['accuracy'] == acc
    assert out.getvalue().rstrip().split('\r')[-1].startswith('score')
    assert 'accuracy=%.4g' % acc in out.getvalue()
    out = io.StringIO()
    plain = mod.predict(it).asnumpy()
    watched = mod.predict(mx.callback.progress_iter(it, file=out, use_tqdm=use_tqdm,
                                                    mininterval=0)).asnumpy()
    np.testing.assert_array_equal(watched, plain)
    assert '4/4' in out.getvalue().split('\r')[-1]


def test_progress_learns_the_epoch_length_of_an_iterator_that_cannot_tell():
    it = mx.io.ResizeIter(data(), 3)
    mod = mx.mod.Module(mlp.get_symbol(num_classes=10))
    out = io.StringIO()
    mod.fit(it, num_epoch=2, batch_end_callback=mx.callback.Progress(file=out, use_tqdm=False,
                                                                     mininterval=0))
    lines = [l.split('\r')[-1] for l in out.getvalue().split('\n') if l.strip()]
    assert '3 batches' in lines[0]               # no total in the first epoch
    assert '100%' in lines[1] and '3/3' in lines[1]


def test_tensorboard_callbacks_write_events(tmp_path):
    pytest.importorskip('tensorboard')
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    it = data()
    mod = mx.mod.Module(mlp.get_symbol(num_classes=10))
    epoch_cb = mx.contrib.tensorboard.LogMetricsCallback(str(tmp_path / 'train'))
    batch_cb = mx.contrib.tensorboard.LogBatchCallback(str(tmp_path / 'batch'), histogram_every=2)
    eval_cb = mx.contrib.tensorboard.LogMetricsCallback(str(tmp_path / 'eval'), prefix='val')
    mod.fit(it, eval_data=it, num_epoch=2, batch_end_callback=[epoch_cb, batch_cb],
            eval_end_callback=eval_cb, optimizer_params={'learning_rate': 0.05})
    for cb in (epoch_cb, batch_cb, eval_cb):
        cb.close()

    def events(sub):
        acc = EventAccumulator(str(tmp_path / sub), size_guidance={'scalars': 0, 'histograms': 0})
        acc.Reload()
        return acc
    train = events('train')
    assert [e.step for e in train.Scalars('accuracy')] == [0] * 4 + [1] * 4   # MXNet: step=epoch
    assert [e.step for e in events('eval').Scalars('val-accuracy')] == [0, 1]
    batch = events('batch')
    assert [e.step for e in batch.Scalars('train/accuracy')] == list(range(1, 9))
    assert [e.value for e in batch.Scalars('train/learning_rate')] == [pytest.approx(0.05)] * 8
    tags = batch.Tags()['histograms']
    assert {'train/weight/fc1_weight', 'train/grad/fc3_bias'} <= set(tags)
    hist = batch.Histograms('train/weight/fc1_weight')
    assert [h.step for h in hist] == [2, 4, 6, 8]
    assert hist[-1].histogram_value.num == 128 * 64
    weights = mod.get_params()[0]['fc1_weight'].asnumpy()
    assert hist[-1].histogram_value.max == pytest.approx(weights.max(), rel=1e-6)

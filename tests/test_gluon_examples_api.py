"""API that MXNet's Gluon example scripts use (each test: one behaviour they rely on)."""
import numpy as np

import mxtorch as mx
from mxtorch import gluon


def test_contrib_io_dataloaderiter_pads_last_batch():
    x = np.arange(10 * 3, dtype=np.float32).reshape(10, 3)
    y = np.arange(10, dtype=np.int32)
    loader = gluon.data.DataLoader(gluon.data.ArrayDataset(x, y), batch_size=4)
    it = mx.contrib.io.DataLoaderIter(loader)
    assert it.provide_data[0].name == 'data' and it.provide_data[0].shape == (4, 3)
    assert it.provide_label[0].name == 'softmax_label' and it.provide_label[0].shape == (4,)
    batches = list(it)
    assert [b.pad for b in batches] == [0, 0, 2]
    assert batches[2].data[0].shape == (4, 3) and batches[2].data[0].dtype == np.float32
    np.testing.assert_array_equal(batches[2].data[0].asnumpy()[:2], x[8:])
    np.testing.assert_array_equal(batches[1].label[0].asnumpy(), y[4:8])
    it.reset()
    assert len(list(it)) == 3


def test_contrib_text_vocabulary_and_counting():
    from mxtorch.contrib import text
    counter = text.utils.count_tokens_from_str(' Life is great ! \n life is good . \n',
                                               ' ', '\n', True)
    assert counter == {'life': 2, 'is': 2, 'great': 1, '!': 1, 'good': 1, '.': 1}
    vocab = text.vocab.Vocabulary(counter, reserved_tokens=['<pad>'])
    # unknown, reserved, then by decreasing count with ties in token order (MXNet 1.9.1's order)
    assert vocab.idx_to_token == ['<unk>', '<pad>', 'is', 'life', '!', '.', 'good', 'great']
    assert vocab.to_indices(['is', 'zz']) == [2, 0] and vocab.to_indices('life') == 3
    assert vocab.to_tokens([1, 2]) == ['<pad>', 'is'] and vocab.to_tokens(7) == 'great'
    small = text.vocab.Vocabulary(counter, most_freq_count=2, min_freq=2)
    assert small.idx_to_token == ['<unk>', 'is', 'life']


def test_contrib_text_custom_and_composite_embedding(tmp_path):
    from mxtorch.contrib import text
    path = tmp_path / 'emb.txt'
    path.write_text('life 1 2\nis 3 4\n<unk> 9 9\n')
    vocab = text.vocab.Vocabulary(text.utils.count_tokens_from_str('is life is new'))
    emb = text.embedding.CustomEmbedding(str(path), vocabulary=vocab)
    assert emb.idx_to_token == ['<unk>', 'is', 'life', 'new']
    np.testing.assert_array_equal(emb.idx_to_vec.asnumpy(), [[9, 9], [3, 4], [1, 2], [9, 9]])
    np.testing.assert_array_equal(emb.get_vecs_by_tokens('is').asnumpy(), [3, 4])
    emb.update_token_vectors('new', mx.nd.array([5, 6]))
    np.testing.assert_array_equal(emb.get_vecs_by_tokens(['new']).asnumpy(), [[5, 6]])
    both = text.embedding.CompositeEmbedding(vocab, [emb, emb])
    assert both.idx_to_vec.shape == (4, 4)
    assert set(text.embedding.get_pretrained_file_names()) == {'glove', 'fasttext'}


def test_wikitext_rows_of_token_ids(tmp_path, monkeypatch):
    from mxtorch.gluon.contrib.data import text as wt
    monkeypatch.setattr(wt, 'check_sha1', lambda *a, **k: True)
    (tmp_path / 'wiki.train.tokens').write_text(' \n = A = \n b c b \n d b \n')
    train = wt.WikiText2(str(tmp_path), 'train', seq_len=3)
    vocab = train.vocabulary
    # tokens: = A = <eos> b c b <eos> d b <eos>  ->  10 (data, label) pairs, 3 rows of 3
    assert vocab.idx_to_token[:4] == ['<unk>', '<eos>', 'b', '=']
    assert len(train) == 3
    data, label = train[1]
    assert vocab.to_tokens(data.asnumpy().tolist()) == ['<eos>', 'b', 'c']
    assert vocab.to_tokens(label.asnumpy().tolist()) == ['b', 'c', 'b']
    assert data.dtype == np.int32
    loader = gluon.data.DataLoader(train, batch_size=2, last_batch='discard',
                                   sampler=gluon.contrib.data.IntervalSampler(3, 1))
    assert next(iter(loader))[0].shape == (2, 3)


def test_unrecorded_write_to_array_saved_by_graph_backward_sees_new_values():
    """Spectral-norm style: a Parameter used in the recorded forward is overwritten under
    autograd.pause() before backward; backward reads the new values (numbers from MXNet 1.9.1)."""
    from mxtorch import autograd, nd
    w = nd.array(np.arange(12).reshape(4, 3) / 10. - 0.5)
    u = nd.array([[0.3, -0.2, 0.5, 0.1]])
    w.attach_grad()
    u.attach_grad()
    with autograd.record():
        v = nd.L2Normalization(nd.dot(u, w))
        u2 = nd.L2Normalization(nd.dot(v, w.T))
        sigma = nd.sum(nd.dot(u2, w) * v)
        with autograd.pause():
            u[:] = u2
        y = nd.dot(nd.ones((2, 3)), (w / sigma).T)
    y.backward()
    np.testing.assert_allclose(u.grad.asnumpy(), [[6.3364267, 2.3041553, -1.728116, -5.7603874]],
                               rtol=1e-5)
    np.testing.assert_allclose(w.grad.asnumpy()[0], [6.194525, 4.5644665, 2.9344072], rtol=1e-5)


def test_speedometer_and_fit_log_a_custom_metric_returning_a_one_element_array(caplog):
    import logging
    metric = mx.metric.create(lambda label, pred: np.array([float(np.abs(label - pred).sum())]))
    metric.update([mx.nd.array([1, 0])], [mx.nd.array([0.5, 0.5])])
    speedometer = mx.callback.Speedometer(batch_size=2, frequent=1, auto_reset=False)
    with caplog.at_level(logging.INFO):
        for nbatch in range(2):
            speedometer(mx.model.BatchEndParam(epoch=0, nbatch=nbatch, eval_metric=metric,
                                               locals=None))
        mx.callback.LogValidationMetricsCallback()(
            mx.model.BatchEndParam(epoch=0, nbatch=1, eval_metric=metric, locals=None))
    text = caplog.text
    assert 'custom(<lambda>)=1.000000' in text
    assert 'Validation-custom(<lambda>)=1.000000' in text and 'Logging error' not in text
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    it = mx.io.NDArrayIter(x, np.array([0, 1, 0, 1]), batch_size=2)
    mod = mx.mod.Module(mx.sym.SoftmaxOutput(mx.sym.FullyConnected(
        mx.sym.var('data'), num_hidden=2), name='softmax'), context=mx.cpu())
    with caplog.at_level(logging.INFO):
        mod.fit(it, eval_data=it, num_epoch=1, eval_metric=metric)
    assert 'Epoch[0] Train-custom(<lambda>)=' in caplog.text
    assert 'Epoch[0] Validation-custom(<lambda>)=' in caplog.text


def test_pillow_legacy_resample_names_under_mxtorch_run(tmp_path):
    """Image.ANTIALIAS (removed in Pillow 10) works in a script run by `mxtorch run` (warning
    once), and is still absent in a process that never installed the alias."""
    import os
    import subprocess
    import sys
    pytest = __import__('pytest')
    pytest.importorskip('PIL')
    script = tmp_path / 'legacy_pil.py'
    script.write_text('import mxnet as mx\nfrom PIL import Image\n'
                      'img = Image.new("RGB", (8, 6)).resize((4, 3), Image.ANTIALIAS)\n'
                      'print(img.size, Image.ANTIALIAS == Image.LANCZOS, '
                      'Image.CUBIC == Image.BICUBIC)\n')
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root)
    out = subprocess.run([sys.executable, '-m', 'mxtorch', 'run', str(script)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == '(4, 3) True True'
    assert out.stderr.count('PIL.Image.ANTIALIAS was removed') == 1
    plain = subprocess.run([sys.executable, '-c', 'from PIL import Image; Image.ANTIALIAS'],
                           capture_output=True, text=True, timeout=300)
    assert plain.returncode != 0 and 'ANTIALIAS' in plain.stderr


def test_profiler_names_the_operators_of_a_hybridized_block(tmp_path):
    """image_classification.py --builtin-profiler: a hybridized net's operators are in the
    aggregate table under their MXNet names, counted once per call (as MXNet 1.9.1 counts)."""
    from mxtorch import autograd, profiler
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Conv2D(4, 3), gluon.nn.BatchNorm(), gluon.nn.Activation('relu'),
            gluon.nn.Dense(3))
    net.initialize()
    net.hybridize()
    x = mx.nd.ones((2, 1, 6, 6))
    net(x)
    saved = dict(profiler._config)
    profiler.set_config(profile_all=True, aggregate_stats=True,
                        filename=str(tmp_path / 'profile.json'))
    try:
        profiler.set_state('run')
        for _ in range(3):
            with autograd.record():
                y = net(x)
            y.backward()
        mx.nd.waitall()
        profiler.set_state('stop')
        table = profiler.dumps(reset=True)
        profiler.dump(finished=True)          # nothing left for the exit-time dump
    finally:
        profiler.set_state('stop')
        profiler._config.clear()
        profiler._config.update(saved)
        del profiler._trace_sessions[:], profiler._stat_sessions[:]
    counts = {line.split()[0]: int(line.split()[1]) for line in table.splitlines()
              if len(line.split()) == 6 and line.split()[1].isdigit()}
    for name in ('Convolution', 'BatchNorm', 'Activation', 'FullyConnected'):
        assert counts.get(name) == 3, (name, table)

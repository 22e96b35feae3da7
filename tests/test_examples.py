"""The examples run and learn: the bucketed LSTM language model's perplexity falls far below
its vocabulary size."""
import logging
import pathlib
import runpy

import numpy as np

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / 'examples'


def test_lstm_bucketing_language_model_learns():
    example = runpy.run_path(str(EXAMPLES / 'lstm_bucketing.py'))
    perplexity = example['main'](['--epochs', '3', '--sentences', '600', '--num-hidden', '32',
                                  '--num-embed', '16', '--batch-size', '16', '--lr', '0.05'])
    assert perplexity < 8           # 57 words: uniform guessing would give 57


def test_lstm_bucketing_trains_on_text_files_and_logs_perplexity_per_epoch(tmp_path, caplog):
    rng = np.random.RandomState(0)
    animals, verbs, things = ['the cat', 'a dog', 'my bird'], ['eats', 'sees'], ['fish', 'seeds']
    lines = ['%s %s %s .' % (animals[rng.randint(3)], verbs[rng.randint(2)],
                             things[rng.randint(2)]) for _ in range(240)]
    (tmp_path / 'train.txt').write_text('\n'.join(lines[:200]) + '\n\n')
    (tmp_path / 'valid.txt').write_text('\n'.join(lines[200:]) + '\n')
    example = runpy.run_path(str(EXAMPLES / 'lstm_bucketing.py'))
    assert example['read_sentences'](tmp_path / 'valid.txt')[0] == lines[200].split()
    with caplog.at_level(logging.INFO):
        perplexity = example['main'](
            ['--epochs', '2', '--train-file', str(tmp_path / 'train.txt'),
             '--valid-file', str(tmp_path / 'valid.txt'), '--buckets', '5,6',
             '--num-hidden', '16', '--num-embed', '8', '--batch-size', '10', '--lr', '0.05'])
    messages = [r.getMessage() for r in caplog.records]
    for epoch in (0, 1):
        assert any(m.startswith('Epoch[%d] Train-perplexity=' % epoch) for m in messages)
        assert any(m.startswith('Epoch[%d] Validation-perplexity=' % epoch) for m in messages)
    assert perplexity < 3           # 12 words, but at most 2 choices after the first word


def test_sparse_fm_trains_on_csr_with_row_sparse_weights_and_compares_dense(capsys):
    example = runpy.run_path(str(EXAMPLES / 'sparse_fm.py'))
    results = example['main'](['--features', '3000', '--samples', '300', '--batch-size', '50',
                               '--epochs', '2', '--lr', '1.0'])
    sparse, dense = results['sparse'], results['dense']
    assert sparse['batches'] == dense['batches'] == 12
    # a csr batch of 50 x 20 active features vs 50 x 3000 float32; the row_sparse gradients
    # keep at most the 50 x 20 rows touched of v (8 wide) and w, with their indices
    assert dense['data_bytes'] == 50 * 3000 * 4 and sparse['data_bytes'] < 50 * 21 * 12
    assert dense['grad_bytes'] == (3000 * 8 + 3000 + 1) * 4
    assert sparse['grad_bytes'] <= 1000 * (8 + 1) * 4 + 2 * 1000 * 8 + 4
    for r in (sparse, dense):
        assert r['metric']['accuracy'] > 0.6 and r['seconds_per_epoch'] > 0
    out = capsys.readouterr().out
    assert 'dense / sparse: time x' in out and 'batch data x' in out

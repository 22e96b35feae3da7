"""The examples run and learn: the bucketed LSTM language model's perplexity falls far below
its vocabulary size."""
import pathlib
import runpy

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / 'examples'


def test_lstm_bucketing_language_model_learns():
    example = runpy.run_path(str(EXAMPLES / 'lstm_bucketing.py'))
    perplexity = example['main'](['--epochs', '3', '--sentences', '600', '--num-hidden', '32',
                                  '--num-embed', '16', '--batch-size', '16', '--lr', '0.05'])
    assert perplexity < 8           # 57 words: uniform guessing would give 57

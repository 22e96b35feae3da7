"""The `mxtorch` command: the demo job reaches 95% on held-out digits with its defaults, writes
a checkpoint that `predict` scores, and draws its curves and graph."""
import logging
import subprocess
import sys

from mxtorch import cli


def test_train_defaults_then_predict(tmp_path, caplog):
    prefix = str(tmp_path / 'digits')
    args = cli.build_parser().parse_args(['train', '--prefix', prefix, '--curves',
                                          str(tmp_path / 'c.svg'), '--graph',
                                          str(tmp_path / 'n.dot')])
    with caplog.at_level(logging.INFO):
        accuracy = args.run(args)
    assert accuracy >= 0.95
    assert (tmp_path / 'digits-symbol.json').exists() and (tmp_path / 'digits-0010.params').exists()
    assert (tmp_path / 'c.svg').read_text().count('<polyline') == 2
    assert 'Convolution' in (tmp_path / 'n.dot').read_text()
    messages = [r.getMessage() for r in caplog.records]
    assert any(m.startswith('Epoch[9] Validation-accuracy=') for m in messages)
    assert any('Speed:' in m and 'samples/sec' in m for m in messages)
    args = cli.build_parser().parse_args(['predict', '--prefix', prefix])
    assert abs(args.run(args) - accuracy) < 1e-9


def test_python_dash_m_and_help():
    out = subprocess.run([sys.executable, '-m', 'mxtorch', '--help'], capture_output=True,
                         text=True, check=True).stdout
    assert 'train' in out and 'predict' in out and 'run' in out

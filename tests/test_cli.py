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


def test_bad_options_are_refused_before_any_work(tmp_path, capsys):
    import pytest
    cases = ((['train', '--epochs', '0'], "--epochs: expected a positive integer, got '0'"),
             (['train', '--batch-size', '-4'], '--batch-size: expected a positive'),
             (['train', '--optimizer', 'sgdd'], "unknown optimizer 'sgdd'; choose one"),
             (['train', '--lr', '0'], "--lr: expected a positive number, got '0'"),
             (['predict', '--val-fraction', '1'], 'expected a number in (0, 1)'))
    for argv, message in cases:
        with pytest.raises(SystemExit) as exit_:
            cli.build_parser().parse_args(argv + ['--prefix', str(tmp_path / 'p')])
        assert exit_.value.code == 2
        assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_predict_without_a_checkpoint_fails_cleanly_and_finds_the_newest(tmp_path, capsys,
                                                                         caplog):
    prefix = str(tmp_path / 'none')
    assert cli.main(['predict', '--prefix', prefix]) == 1
    assert 'run `mxtorch train --prefix %s` first' % prefix in capsys.readouterr().err
    prefix = str(tmp_path / 'mlp')
    with caplog.at_level(logging.INFO):
        assert cli.main(['train', '--prefix', prefix, '--network', 'mlp', '--epochs', '2',
                         '--optimizer', 'adam', '--lr', '0.005']) == 0
        out = '\n'.join(r.getMessage() for r in caplog.records)
        trained = float(out.split('Validation accuracy ')[1].split()[0])
        caplog.clear()
        assert cli.main(['predict', '--prefix', prefix]) == 0    # no --epoch: the newest, 0002
        out = '\n'.join(r.getMessage() for r in caplog.records)
    assert 'Accuracy of %s-0002 on 359 held-out digits: %.4f' % (prefix, trained) in out
    assert cli.main(['predict', '--prefix', prefix, '--epoch', '7']) == 1
    assert 'mlp-0007.params' in capsys.readouterr().err

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
    svg = (tmp_path / 'c.svg').read_text()       # matplotlib, text kept as text
    for text in ('epoch', 'accuracy (%)', 'cross-entropy loss (nats)', 'train', 'validation'):
        assert '>%s<' % text in svg
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


def test_context_and_paths_are_checked_before_training(tmp_path, capsys):
    import pytest
    cases = ((['--context', 'cpu:0'], "--context: expected cpu, cpu:N (N >= 1"),
             (['--context', 'gpu:x'], "got 'gpu:x'"),
             (['--context', 'tpu'], "got 'tpu'"),
             (['--curves', str(tmp_path / 'missing' / 'c.svg')], 'missing does not exist'),
             (['--curves', str(tmp_path / 'c.txt')], 'ending in .png or .svg or .pdf'),
             (['--graph', str(tmp_path / 'no' / 'g.dot')], 'does not exist'),
             (['--momentum', '1'], 'expected a number in [0, 1)'),
             (['--seed', '-1'], 'expected an integer in [0, 2**32)'),
             (['--prefix', str(tmp_path / 'file.txt' / 'p')], '--prefix: cannot create'))
    (tmp_path / 'file.txt').write_text('x')
    for argv, message in cases:
        with pytest.raises(SystemExit):
            cli.build_parser().parse_args(['train'] + argv)
        err = capsys.readouterr().err
        assert message in err and 'Traceback' not in err
        assert err.strip().splitlines()[-1].startswith('mxtorch train: error: argument')
    if not __import__('torch').cuda.is_available():
        with pytest.raises(SystemExit):
            cli.build_parser().parse_args(['train', '--context', 'gpu'])
        assert 'no GPU 0 on this machine' in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ['file.txt']


def test_help_shows_defaults():
    help_text = cli.build_parser()._subparsers._group_actions[0].choices['train'].format_help()
    for default in ('(default: 32)', '(default: cpu)', '(default: 0.05)', '(default: lenet)',
                    '(default: auto)', '(default: checkpoints/digits)'):
        assert default in ' '.join(help_text.split())


def test_one_epoch_curves_progress_bar_and_export(tmp_path, capsys):
    import numpy as np
    import pytest
    import torch
    import mxtorch as mx
    ort = pytest.importorskip('onnxruntime')
    pytest.importorskip('matplotlib')
    prefix = str(tmp_path / 'm')
    assert cli.main(['train', '--prefix', prefix, '--network', 'mlp', '--epochs', '1',
                     '--progress', 'on', '--curves', str(tmp_path / 'c.png')]) == 0
    err = capsys.readouterr().err
    assert 'Epoch 0' in err and '45/45' in err and 'cross-entropy=' in err   # the bar, on stderr
    png = (tmp_path / 'c.png').read_bytes()
    assert png.startswith(b'\x89PNG') and len(png) > 5000
    assert cli.main(['export', '--prefix', prefix, '--shape', '1,64', '--dynamic-batch']) == 0
    assert cli.main(['export', '--prefix', prefix, '--shape', 'data=1,64',
                     '--output', str(tmp_path / 'm.pt2'), '--dynamic-batch']) == 0
    x = np.random.RandomState(0).rand(3, 64).astype(np.float32)
    mod = mx.mod.Module.load(prefix, 1, label_names=None)
    mod.bind([('data', x.shape)], for_training=False)
    mod.forward(mx.io.DataBatch([mx.nd.array(x)]), is_train=False)
    want = mod.get_outputs()[0].asnumpy()
    session = ort.InferenceSession(prefix + '-0001.onnx', providers=['CPUExecutionProvider'])
    np.testing.assert_allclose(session.run(None, {'data': x})[0], want, rtol=1e-5, atol=1e-6)
    program = torch.export.load(str(tmp_path / 'm.pt2'))
    np.testing.assert_allclose(program.module()(torch.from_numpy(x)).numpy(), want,
                               rtol=1e-5, atol=1e-6)
    assert cli.main(['export', '--prefix', prefix, '--shape', 'x=1,64']) == 1
    assert 'inputs are data' in capsys.readouterr().err

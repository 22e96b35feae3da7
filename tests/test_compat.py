"""mxtorch.compat: unmodified `import mxnet` scripts run on mxtorch, for that run only."""
import importlib.util
import os
import re
import subprocess
import sys
import types

import pytest

import mxtorch
from mxtorch import compat

from conftest import FIXTURES, ROOT


def _run(*args, cwd):
    """A fresh interpreter that finds this checkout's mxtorch."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in [os.environ.get('PYTHONPATH')] if p]))
    return subprocess.run([sys.executable] + list(args), cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def _mxnet_modules():
    return sorted(n for n in sys.modules if n == 'mxnet' or n.startswith('mxnet.'))


def test_unmodified_training_script_runs(tmp_path):
    prefix = tmp_path / 'ckpt' / 'mlp'
    prefix.parent.mkdir()
    proc = _run('-m', 'mxtorch', 'run', str(FIXTURES / 'mxnet_mlp.py'), '--epochs', '2',
                '--prefix', str(prefix), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    found = re.search(r'epochs (\d+) accuracy ([0-9.]+)', proc.stdout)
    assert found, proc.stdout + proc.stderr
    assert found.group(1) == '2'                  # the script's argv arrived
    assert float(found.group(2)) > 0.9
    assert (tmp_path / 'ckpt' / 'mlp-0002.params').is_file()
    assert (tmp_path / 'ckpt' / 'mlp-0002.states').is_file()
    assert (tmp_path / 'ckpt' / 'mlp-symbol.json').is_file()
    assert 'Epoch[1] Validation-accuracy' in proc.stderr   # its logging.basicConfig took effect


def test_failing_script_exits_1_with_the_scripts_traceback(tmp_path):
    script = tmp_path / 'broken.py'
    script.write_text('import mxnet as mx\n'
                      'def f():\n'
                      '    mx.nd.ones((2, 3)) + mx.nd.ones((4, 5))\n'
                      'f()\n')
    proc = _run('-c', 'from mxtorch.compat import main; main()', str(script), cwd=tmp_path)
    assert proc.returncode == 1
    frames = re.findall(r'File "([^"]+)", line (\d+)', proc.stderr)
    assert frames[0] == (str(script), '4'), proc.stderr     # the runner's frames are dropped
    assert frames[1] == (str(script), '3')
    assert proc.stderr.startswith('Traceback (most recent call last):')


def test_mxnet_is_not_importable_outside_a_run(tmp_path):
    proc = _run('-c', 'import importlib.util, mxtorch, mxtorch.compat\n'
                      'spec = importlib.util.find_spec("mxnet")\n'
                      'print(spec.origin if spec else None)', cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    origin = proc.stdout.strip()
    # no mxnet at all, or a real MXNet installation -- never mxtorch under that name
    assert origin == 'None' or 'mxtorch' not in origin


def test_run_script_sets_main_argv_path_and_exit_code(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, 'argv', list(sys.argv))
    monkeypatch.setattr(sys, 'path', list(sys.path))
    (tmp_path / 'helper_mod.py').write_text('VALUE = 41\n')
    script = tmp_path / 'exits.py'
    script.write_text('import sys\n'
                      'import helper_mod\n'
                      'import mxnet\n'
                      'print(__name__, sys.argv[1:], helper_mod.VALUE + 1, mxnet.__name__)\n'
                      'sys.exit(int(sys.argv[1]))\n')
    try:
        with pytest.raises(SystemExit) as exit_info:
            compat.run_script(str(script), ['7', '--flag'])
    finally:
        compat.uninstall()
        sys.modules.pop('helper_mod', None)
    assert exit_info.value.code == 7
    assert capsys.readouterr().out == "__main__ ['7', '--flag'] 42 mxtorch\n"
    assert sys.path[0] == str(tmp_path)


def test_missing_script_exits_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        compat.main(['/no/such/script.py'])
    assert exit_info.value.code == 2
    assert "can't open file" in capsys.readouterr().err


def test_install_aliases_every_submodule_and_uninstall_removes_them():
    assert _mxnet_modules() == []
    compat.install()
    compat.install()                              # idempotent
    try:
        import mxnet
        import mxnet.ndarray as nd
        import mxnet.optimizer.optimizer
        from mxnet.module import Module
        from mxnet import sym, test_utils
        assert mxnet is mxtorch
        assert nd is mxtorch.nd and sym is mxtorch.sym and test_utils is mxtorch.test_utils
        assert Module is mxtorch.mod.Module
        assert mxnet.ndarray.ndarray.NDArray is mxtorch.nd.NDArray
        assert mxnet.optimizer.optimizer.SGD is mxtorch.optimizer.SGD
        for name in ('symbol', 'module', 'io', 'metric', 'initializer', 'kvstore', 'callback',
                     'model', 'monitor', 'context', 'base', 'name', 'attribute',
                     'lr_scheduler', 'executor', 'executor_manager', 'visualization',
                     'random', 'autograd', 'symbol.symbol', 'module.module', 'io.io'):
            assert importlib.import_module('mxnet.' + name) is \
                importlib.import_module('mxtorch.' + name)
        # the modules keep their own import metadata
        assert mxtorch.__spec__.name == 'mxtorch' and nd.__spec__.name == 'mxtorch.ndarray'
        assert importlib.util.find_spec('mxtorch.ndarray').name == 'mxtorch.ndarray'

        from mxnet import np, npx
        import mxnet.numpy
        import mxnet.numpy_extension
        assert np is mxnet.numpy is mxtorch.numpy and npx is mxnet.numpy_extension
        assert importlib.import_module('mxnet.image') is mxtorch.image
        with pytest.raises(ModuleNotFoundError, match="No module named 'mxnet.tvmop'") as e:
            import mxnet.tvmop  # noqa: F401
        assert e.value.name == 'mxnet.tvmop'
    finally:
        compat.uninstall()
    assert _mxnet_modules() == []
    assert compat._FINDER not in sys.meta_path
    assert mxtorch.nd.NDArray is mxtorch.ndarray.ndarray.NDArray     # mxtorch itself untouched


def test_optimizer_states_pickle_under_the_alias():
    import numpy as np
    compat.install()
    try:
        import mxnet as mx
        weight, grad = mx.nd.ones((2, 3)), mx.nd.full((2, 3), 0.5)
        updater = mx.optimizer.get_updater(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9))
        updater(0, grad, weight)
        states = updater.get_states(dump_optimizer=True)
        assert b'mxnet.ndarray.ndarray' in states and b'mxtorch' not in states
        restored = mx.optimizer.get_updater(mx.optimizer.SGD())
        restored.set_states(states)
    finally:
        compat.uninstall()
    np.testing.assert_allclose(restored.states[0].asnumpy(), updater.states[0].asnumpy())
    assert restored.optimizer.momentum == 0.9


def test_install_refuses_when_a_real_mxnet_is_loaded(monkeypatch):
    monkeypatch.setitem(sys.modules, 'mxnet', types.ModuleType('mxnet'))
    with pytest.raises(ImportError, match='already imported'):
        compat.install()
    assert compat._FINDER not in sys.meta_path


def test_register_cli_adds_the_run_subcommand():
    import argparse
    parser = argparse.ArgumentParser(prog='mxtorch')
    compat.register_cli(parser.add_subparsers(dest='command', required=True))
    args = parser.parse_args(['run', 'train.py', '--epochs', '2', '-h'])
    assert (args.command, args.script, args.args) == ('run', 'train.py', ['--epochs', '2', '-h'])
    assert callable(args.run)


def test_legacy_numpy_names_only_while_the_alias_is_installed():
    """NumPy 1.x names NumPy 2 removed work for the legacy script, warn once each, and are gone
    again after uninstall (numpy untouched for everyone else)."""
    import warnings
    import numpy as np
    if int(np.__version__.split('.')[0]) < 2:
        pytest.skip('NumPy 1.x still has these names')
    with pytest.raises(AttributeError):
        np.float
    compat.install()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            assert np.zeros(2, dtype=np.float).dtype == np.float64
            assert np.array([3], dtype=np.int).dtype == np.int64
            assert np.isnan(np.NaN) and np.Inf == float('inf')
            raw = np.arange(4, dtype=np.int32).tobytes()
            got = np.fromstring(raw, dtype=np.int32)
            np.float                                   # a second use does not warn again
        assert got.tolist() == [0, 1, 2, 3] and got.flags.writeable
        assert np.fromstring('1 2', dtype=np.int64, sep=' ').tolist() == [1, 2]   # text mode
        names = [str(w.message).split(' ')[0] for w in caught]
        assert names == ['numpy.float', 'numpy.int', 'numpy.NaN', 'numpy.Inf',
                         'numpy.fromstring'], names
        assert all(issubclass(w.category, FutureWarning) for w in caught)
        # functions NumPy 2.x removed, as NumPy 1.23 computed them
        assert np.asscalar(np.array([2.5])) == 2.5
        assert np.in1d([[1, 5], [3, 4]], [3, 5]).tolist() == [False, True, True, False]
        assert np.msort(np.array([[3, 1], [1, 2]])).tolist() == [[1, 1], [3, 2]]
        assert np.trapz([1.0, 2.0, 4.0], dx=0.5) == 2.25
        assert np.mat([[1, 2]]).shape == (1, 2)
        with pytest.raises(AttributeError):
            np.no_such_name_anywhere
    finally:
        compat.uninstall()
    with pytest.raises(AttributeError):
        np.float
    with pytest.raises(ValueError):
        np.fromstring(b'\x00\x00\x00\x00', dtype=np.int32)

"""What a fresh install relies on: the version command, the licence, the package metadata and
tests that need nothing outside the repository."""
import os
import subprocess
import sys

import pytest

import mxtorch
from mxtorch import cli

from conftest import GOLDEN, ROOT


def test_version_command(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(['--version'])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith('mxtorch %s, MXNet 1.9.1 API (PyTorch ' % mxtorch.__mxtorch_version__)
    assert mxtorch.__version__ == '1.9.1'     # what GluonCV/GluonNLP check before they import
    proc = subprocess.run([sys.executable, '-m', 'mxtorch', '--version'], capture_output=True,
                          text=True, timeout=120, cwd=str(ROOT))
    assert proc.returncode == 0 and proc.stdout == out


def test_license_and_metadata():
    assert 'Apache License' in (ROOT / 'LICENSE').read_text()
    tomllib = pytest.importorskip('tomllib')
    project = tomllib.loads((ROOT / 'pyproject.toml').read_text())['project']
    deps = ' '.join(project['dependencies'])
    for name in ('torch', 'numpy', 'requests', 'graphviz'):   # MXNet 1.9.1's: numpy, requests,
        assert name in deps                                    # graphviz
    assert project['requires-python'] == '>=3.10'
    assert 'License :: OSI Approved :: Apache Software License' in project['classifiers']


def test_fixtures_live_in_the_repository():
    assert 'MXTORCH_GOLDEN' in os.environ or GOLDEN.resolve().is_relative_to(ROOT)
    assert (ROOT / 'tests' / 'golden' / 'checkpoints').is_dir()

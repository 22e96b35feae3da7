"""A checkpoint write removes the temp files that earlier writers of the same file left when
they were killed mid-write, and leaves a live writer's temp file alone."""
import os
import subprocess
import sys

import mxtorch as mx


def test_orphan_temp_files_of_dead_writers_are_swept(tmp_path):
    dead = subprocess.Popen([sys.executable, '-c', 'pass'])
    dead.wait()
    target = tmp_path / 'net-0001.params'
    orphan = tmp_path / ('.net-0001.params.%d.abc123' % dead.pid)
    live = tmp_path / ('.net-0001.params.%d.def456' % os.getppid())
    other = tmp_path / ('.other.params.%d.x' % dead.pid)
    for f in (orphan, live, other):
        f.write_bytes(b'partial')
    mx.nd.save(str(target), {'w': mx.nd.ones((2, 2))})
    assert not orphan.exists()
    assert live.exists() and other.exists()
    assert mx.nd.load(str(target))['w'].asnumpy().sum() == 4
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [target.name, live.name, other.name])

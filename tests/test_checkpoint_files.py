"""Checkpoint files: written with the umask's mode, atomically (no temporary file left after a
failure), and .params + .states of one save recorded as a pair that loading checks."""
import os
import stat

import numpy as np
import pytest

import mxtorch as mx
from mxtorch.models import mlp


def trained(steps=2, seed=0):
    rng = np.random.RandomState(seed)
    it = mx.io.NDArrayIter(rng.rand(40, 64).astype(np.float32), rng.randint(0, 10, 40), 20)
    mod = mx.mod.Module(mlp.get_symbol(num_classes=10))
    mod.bind(it.provide_data, it.provide_label)
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer='adam')
    for _, batch in zip(range(steps), it):
        mod.forward_backward(batch)
        mod.update()
    return mod, it


@pytest.mark.parametrize('umask', [0o022, 0o077, 0o002])
def test_checkpoint_files_follow_the_umask(tmp_path, umask):
    mod, _ = trained(steps=1)
    old = os.umask(umask)
    try:
        mod.save_checkpoint(str(tmp_path / 'm'), 1, save_optimizer_states=True)
    finally:
        os.umask(old)
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ['m-0001.pair.json', 'm-0001.params', 'm-0001.states', 'm-symbol.json']
    for name in names:
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o666 & ~umask, name


def test_failed_write_leaves_no_temporary_file_and_keeps_the_old_one(tmp_path, monkeypatch):
    from mxtorch.ndarray import serialization
    path = tmp_path / 'a.params'
    mx.nd.save(str(path), {'x': mx.nd.ones((2,))})
    before = path.read_bytes()

    def broken_fsync(fd):
        raise OSError(28, 'No space left on device')
    monkeypatch.setattr(serialization.os, 'fsync', broken_fsync)
    with pytest.raises(OSError, match='No space'):
        mx.nd.save(str(path), {'x': mx.nd.zeros((1000,))})
    assert [p.name for p in tmp_path.iterdir()] == ['a.params']
    assert path.read_bytes() == before


def test_params_and_states_of_one_save_load_together(tmp_path):
    prefix = str(tmp_path / 'm')
    mod, it = trained()
    mod.save_checkpoint(prefix, 3, save_optimizer_states=True)
    import json
    record = json.loads((tmp_path / 'm-0003.pair.json').read_text())
    assert record['epoch'] == 3 and record['num_update'] == 2
    loaded = mx.mod.Module.load(prefix, 3, load_optimizer_states=True)
    loaded.bind(it.provide_data, it.provide_label)
    loaded.init_optimizer(optimizer='adam')
    assert loaded._updater.get_states() == mod._updater.get_states()


def test_params_and_states_of_different_saves_are_refused(tmp_path):
    prefix = str(tmp_path / 'm')
    first, _ = trained(steps=1)
    first.save_checkpoint(prefix, 1, save_optimizer_states=True)
    states_one = (tmp_path / 'm-0001.states').read_bytes()
    second, _ = trained(steps=3, seed=1)
    second.save_checkpoint(prefix, 1, save_optimizer_states=True)
    (tmp_path / 'm-0001.states').write_bytes(states_one)     # an interrupted / mixed save
    with pytest.raises(mx.MXNetError, match=r'm-0001\.states is not the file saved with the '
                                            r'other half of checkpoint 0001'):
        mx.mod.Module.load(prefix, 1, load_optimizer_states=True)
    mx.mod.Module.load(prefix, 1)                           # the parameters alone still load
    # a later save of the parameters alone: the states beside them are from another save
    second.save_checkpoint(prefix, 1, save_optimizer_states=True)
    trained(steps=2, seed=2)[0].save_checkpoint(prefix, 1)
    with pytest.raises(mx.MXNetError, match=r'm-0001\.params is not the file'):
        mx.mod.Module.load(prefix, 1, load_optimizer_states=True)


def test_checkpoint_without_a_pair_record_loads(tmp_path):
    """MXNet's own checkpoints have no record: nothing to check."""
    prefix = str(tmp_path / 'm')
    mod, it = trained()
    mod.save_checkpoint(prefix, 2, save_optimizer_states=True)
    os.remove(tmp_path / 'm-0002.pair.json')
    loaded = mx.mod.Module.load(prefix, 2, load_optimizer_states=True)
    loaded.bind(it.provide_data, it.provide_label)
    loaded.init_optimizer(optimizer='adam')
    (tmp_path / 'm-0002.pair.json').write_text('{not json')
    with pytest.raises(mx.MXNetError, match='not a readable checkpoint record'):
        mx.mod.Module.load(prefix, 2, load_optimizer_states=True)

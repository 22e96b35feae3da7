"""Distributed KVStore on torch.distributed: worker processes on this machine over loopback.

Each job starts its workers as plain processes with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT (or
the DMLC_* form, or through `mxtorch launch`); tests/dist_worker.py is the worker.
"""
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

import mxtorch as mx
from mxtorch.kvstore import launch
from mxtorch.kvstore.compression import pack_2bit, unpack_2bit

import dist_worker

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'dist_worker.py')
TIMEOUT = 15          # MXTORCH_DIST_TIMEOUT of the test jobs
JOB_LIMIT = 90        # seconds a job may take before the test kills it


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def worker_env(extra, timeout):
    env = dict(os.environ, OMP_NUM_THREADS='1', MXTORCH_DIST_TIMEOUT=str(timeout))
    for name in ('RANK', 'WORLD_SIZE', 'MASTER_ADDR', 'MASTER_PORT', 'DMLC_ROLE'):
        env.pop(name, None)
    env.update(extra)
    return env


def run_job(outdir, size, *arguments, ranks=None, dmlc=False, timeout=TIMEOUT):
    """Start ranks (default all) of a `size`-worker job running dist_worker.py OUTDIR
    *arguments; [(returncode, output, seconds from the start to its exit)] in rank order."""
    port = free_port()
    procs, logs = [], []
    start = time.monotonic()
    for rank in (range(size) if ranks is None else ranks):
        if dmlc:
            extra = {'DMLC_ROLE': 'worker', 'DMLC_WORKER_ID': str(rank),
                     'DMLC_NUM_WORKER': str(size), 'DMLC_PS_ROOT_URI': '127.0.0.1',
                     'DMLC_PS_ROOT_PORT': str(port)}
        else:
            extra = {'RANK': str(rank), 'WORLD_SIZE': str(size), 'MASTER_ADDR': '127.0.0.1',
                     'MASTER_PORT': str(port)}
        logs.append(open(os.path.join(outdir, 'worker%d.log' % rank), 'w+'))
        procs.append(subprocess.Popen(
            [sys.executable, WORKER, str(outdir), *arguments], env=worker_env(extra, timeout),
            stdout=logs[-1], stderr=subprocess.STDOUT, text=True))
    ended = [None] * len(procs)
    while None in ended:
        if time.monotonic() - start > JOB_LIMIT:
            for p in procs:
                p.kill()
            pytest.fail('%s job still running after %d s' % (arguments, JOB_LIMIT))
        for i, p in enumerate(procs):
            if ended[i] is None and p.poll() is not None:
                ended[i] = time.monotonic() - start
        time.sleep(0.05)
    results = []
    for p, log, seconds in zip(procs, logs, ended):
        log.seek(0)
        results.append((p.returncode, log.read(), seconds))
        log.close()
    return results


def check_ok(results):
    for rank, (code, out, _) in enumerate(results):
        assert code == 0, 'rank %d exited with %d:\n%s' % (rank, code, out)


def load(outdir, scenario, rank):
    return dict(np.load(os.path.join(outdir, '%s-rank%d.npz' % (scenario, rank))))


PARAMS = ('fc1_weight', 'fc1_bias', 'fc2_weight', 'fc2_bias')


def single_process(num_workers, epochs):
    """Train in this process on the combined batches: step i sees every worker's batch i."""
    x, y = dist_worker.dataset(num_workers)
    per_worker = dist_worker.SHARD // dist_worker.BATCH
    order = [r * dist_worker.SHARD + i * dist_worker.BATCH + j for i in range(per_worker)
             for r in range(num_workers) for j in range(dist_worker.BATCH)]
    train = mx.io.NDArrayIter(x[order], y[order], dist_worker.BATCH * num_workers)
    lines = dist_worker.Lines()
    root = logging.getLogger()
    level = root.level
    root.addHandler(lines)
    root.setLevel(logging.INFO)
    try:
        mod = mx.mod.Module(dist_worker.network(), context=mx.cpu())
        mod.fit(train, optimizer='sgd', optimizer_params=dist_worker.OPTIMIZER_PARAMS,
                eval_metric='acc', num_epoch=epochs, arg_params=dist_worker.initial_params(100))
    finally:
        root.removeHandler(lines)
        root.setLevel(level)
    arg_params, _ = mod.get_params()
    return ({k: v.asnumpy() for k, v in arg_params.items()},
            [l for l in lines.lines if 'Train-' in l])


@pytest.fixture(scope='module')
def job2(tmp_path_factory):
    """One 2-worker job, launched with MXNet's DMLC_* variables, whose workers run in turn:
    4 epochs of Module.fit on dist_sync with checkpoints every epoch, 2-bit pushes, save/load of
    the store's optimizer states, 8 epochs of Module.fit on dist_async, and row_sparse values
    (pushes, row_sparse_pull, a sparse Module.fit) on dist_sync."""
    outdir = tmp_path_factory.mktemp('job2')
    check_ok(run_job(outdir, 2, 'train', 'compress', 'states', 'async', 'sparse', dmlc=True))
    return outdir


def assert_matches_single_process(outdir, num_workers):
    results = [load(outdir, 'train', r) for r in range(num_workers)]
    single, single_lines = single_process(num_workers, 4)
    for name in PARAMS:
        for r in range(1, num_workers):
            np.testing.assert_array_equal(results[r][name], results[0][name])
        np.testing.assert_allclose(results[0][name], single[name], rtol=0, atol=1e-5)
    # the epoch lines of fit pool every worker's samples: the combined batch's accuracy
    for r in range(num_workers):
        assert list(results[r]['train_lines']) == single_lines


def test_dist_sync_two_workers_match_single_process(job2):
    assert_matches_single_process(job2, 2)
    # 16 steps, each all-reducing the 404 float32 parameters of the MLP once
    assert int(load(job2, 'train', 0)['bytes_sent']) == 16 * 404 * 4


def test_dist_sync_four_workers_match_single_process(tmp_path):
    check_ok(run_job(tmp_path, 4, 'train'))
    assert_matches_single_process(tmp_path, 4)


def test_only_rank0_writes_checkpoints(job2):
    names = set(os.listdir(job2))
    assert {'train-do-rank0-symbol.json', 'train-do-rank0-0004.params',
            'train-mod-rank0-0004.params', 'train-mod-rank0-0004.states'} <= names
    assert not [n for n in names if 'rank1' in n and not n.endswith('.npz')]


def test_restarted_job_resumes_from_last_checkpoint(job2, tmp_path):
    # keep only epochs 1-2 of the first job's checkpoints, as if it had died in epoch 3
    prefix = str(tmp_path / 'ckpt')
    for suffix in ('symbol.json', '0001.params', '0001.states', '0002.params', '0002.states'):
        with open(os.path.join(job2, 'train-mod-rank0-' + suffix), 'rb') as src, \
                open('%s-%s' % (prefix, suffix), 'wb') as dst:
            dst.write(src.read())
    assert mx.kv.latest_checkpoint(prefix, states=True) == 2
    check_ok(run_job(tmp_path, 2, 'resume', '--resume-from', prefix))
    resumed, uninterrupted = load(tmp_path, 'resume', 0), load(job2, 'train', 0)
    for name in PARAMS:
        np.testing.assert_allclose(resumed[name], uninterrupted[name], rtol=0, atol=1e-6)
    assert list(resumed['train_lines']) == list(uninterrupted['train_lines'][2:])


# ---- 2-bit compression -------------------------------------------------------------------------
def numpy_two_bit(residual, grad, threshold):
    """Independent model of MXNet's 2-bit scheme: (message, new residual)."""
    residual = residual + grad
    message = np.where(residual >= threshold, threshold,
                       np.where(residual <= -threshold, -threshold, 0.0)).astype(np.float32)
    return message, (residual - message).astype(np.float32)


def numpy_pack(message):
    codes = np.select([message > 0, message < 0], [3, 2], 0).astype(np.uint8).reshape(-1)
    codes = np.concatenate([codes, np.zeros(-len(codes) % 4, np.uint8)]).reshape(-1, 4)
    return (codes[:, 0] << 6) | (codes[:, 1] << 4) | (codes[:, 2] << 2) | codes[:, 3]


def test_two_bit_packing_matches_numpy_model():
    rng = np.random.RandomState(0)
    residual = np.zeros(11, np.float32)
    torch_residual = torch.zeros(11)
    for _ in range(4):
        grad = rng.uniform(-1, 1, 11).astype(np.float32)
        message, residual = numpy_two_bit(residual, grad, 0.5)
        sent = mx.kvstore.compression.quantize_2bit(torch_residual, torch.from_numpy(grad), 0.5)
        np.testing.assert_array_equal(sent.numpy(), message)
        np.testing.assert_allclose(torch_residual.numpy(), residual, rtol=0, atol=1e-7)
        packed = pack_2bit(sent)
        assert packed.dtype == torch.uint8 and packed.numel() == 3    # 11 codes, 4 per byte
        np.testing.assert_array_equal(packed.numpy(), numpy_pack(message))
        np.testing.assert_array_equal(unpack_2bit(packed)[:11].numpy() * 0.5, message)


def test_two_bit_compression_across_workers_matches_numpy_model(job2):
    results = [load(job2, 'compress', r) for r in range(2)]
    shapes = {'w': (5, 7), 'b': (3,)}
    residuals = {(r, name): np.zeros(s, np.float32) for r in range(2)
                 for name, s in shapes.items()}
    for step in range(3):
        for i, (name, shape) in enumerate(shapes.items()):
            total = np.zeros(shape, np.float32)
            for r in range(2):
                grad = np.random.RandomState(1000 * r + 10 * step + i).uniform(-1, 1, shape)
                message, residuals[r, name] = numpy_two_bit(residuals[r, name],
                                                            grad.astype(np.float32), 0.5)
                total += message
                np.testing.assert_allclose(results[r]['residual_%s_%d' % (name, step)],
                                           residuals[r, name], rtol=0, atol=1e-6)
            for r in range(2):
                np.testing.assert_array_equal(results[r]['sum_%s_%d' % (name, step)], total)
        # one all-gather per push: 35 codes -> 9 bytes, 3 codes -> 1 byte (vs 152 float32 bytes)
        assert int(results[0]['bytes_%d' % step]) == 10 * (step + 1)


# ---- optimizer states --------------------------------------------------------------------------
def test_dist_optimizer_states_save_on_rank0_and_load_everywhere(job2):
    results = [load(job2, 'states', r) for r in range(2)]
    # only rank 0 wrote its file; rank 1 loaded from a path it cannot see (rank 0 reads)
    assert os.path.exists(os.path.join(job2, 'kv-rank0.states'))
    assert not os.path.exists(os.path.join(job2, 'kv-rank1.states'))
    shapes = {'w': (3, 2), 'b': (4,)}

    def global_grad(step, name):
        """The sum over both workers of what they pushed at `step` for `name`."""
        index = list(shapes).index(name)
        total = 0
        for r in range(2):
            rng = np.random.RandomState(100 * r + step)
            drawn = [rng.uniform(-1, 1, s) for s in shapes.values()]
            total = total + drawn[index].astype(np.float32)
        return total

    for name, shape in shapes.items():
        # SGD with momentum 0.9, lr 0.1, rescale_grad 0.5: mom = 0.9 mom - 0.05 g; w += mom
        weight = np.ones(shape) if name == 'w' else np.zeros(shape)
        initial, mom = weight.copy(), np.zeros(shape)
        for step in range(2):
            mom = 0.9 * mom - 0.1 * 0.5 * global_grad(step, name)
            weight = weight + mom
        last = 0.9 * mom - 0.1 * 0.5 * global_grad(2, name)
        for r in range(2):
            res = results[r]
            np.testing.assert_allclose(res['saved_' + name], weight, rtol=0, atol=1e-6)
            np.testing.assert_allclose(res['saved_momentum_' + name], mom, rtol=0, atol=1e-6)
            np.testing.assert_array_equal(res['loaded_momentum_' + name],
                                          res['saved_momentum_' + name])
            np.testing.assert_allclose(res['after_' + name], weight + last, rtol=0, atol=1e-6)
            np.testing.assert_allclose(res['fresh_after_' + name], initial + last, rtol=0,
                                       atol=1e-6)


# ---- single-process stores: the same API and semantics --------------------------------------
def test_device_store_two_bit_per_device_residuals_with_optimizer_match_numpy_model():
    """Two devices push per key; each keeps its own residual, the messages are summed and the
    SGD-momentum update applied (checked against MXNet 1.9.1, whose final values are below)."""
    kv = mx.kv.create('device')
    kv.set_gradient_compression({'type': '2bit', 'threshold': 0.4})
    kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.25, momentum=0.5))
    shapes = {'a': (2, 3), 'b': (5,)}
    kv.init(list(shapes), [mx.nd.ones((2, 3)), mx.nd.zeros((5,))])
    weights = {'a': np.ones((2, 3)), 'b': np.zeros(5)}
    moms = {k: np.zeros(s) for k, s in shapes.items()}
    residuals = {(k, d): np.zeros(s, np.float32) for k, s in shapes.items() for d in range(2)}
    rng = np.random.RandomState(7)
    for _ in range(3):
        grads = {k: [rng.uniform(-1, 1, s).astype(np.float32) for _ in range(2)]
                 for k, s in shapes.items()}
        kv.push(list(shapes), [[mx.nd.array(g) for g in grads[k]] for k in shapes])
        outs = [mx.nd.zeros(s) for s in shapes.values()]
        kv.pull(list(shapes), out=outs)
        for (k, shape), out in zip(shapes.items(), outs):
            total = np.zeros(shape, np.float32)
            for d in range(2):
                message, residuals[k, d] = numpy_two_bit(residuals[k, d], grads[k][d], 0.4)
                total += message
            moms[k] = 0.5 * moms[k] - 0.25 * total
            weights[k] = weights[k] + moms[k]
            np.testing.assert_allclose(out.asnumpy(), weights[k], rtol=0, atol=1e-6)
            np.testing.assert_allclose(kv._compression._residuals[(k, 1)].numpy(),
                                       residuals[k, 1], rtol=0, atol=1e-6)
    mxnet_final = {'a': [[1.425, 1.05, 1.175], [0.875, 0.775, 0.675]],
                   'b': [0.4, 0.0, 0.45, -0.425, -0.1]}
    for k, out in zip(shapes, outs):
        np.testing.assert_allclose(out.asnumpy(), mxnet_final[k], rtol=0, atol=1e-6)


def test_bad_compression_params_and_store_types_name_the_argument():
    with pytest.raises(mx.MXNetError, match="kvstore type must contain 'device' or 'dist'.*"
                                            "got 'local'"):
        mx.kv.create('local').set_gradient_compression({'type': '2bit'})
    kv = mx.kv.create('device')
    for params, message in [
            ({'type': '1bit'}, r"compression_params\['type'\] must be '2bit', got '1bit'"),
            ({'threshold': 0.5}, r"needs a 'type' .*got keys \['threshold'\]"),
            ({'type': '2bit', 'threshold': -1}, r"\['threshold'\] must be a number > 0, got -1"),
            ({'type': '2bit', 'threshold': 'abc'}, r"must be a number > 0, got 'abc'"),
            ({'type': '2bit', 'threshold': float('nan')}, r"must be a number > 0, got nan")]:
        with pytest.raises(mx.MXNetError, match=message):
            kv.set_gradient_compression(params)
    with pytest.raises(TypeError, match='compression_params must be a dict'):
        kv.set_gradient_compression('2bit')
    kv.set_gradient_compression({'type': '2bit', 'threshold': '0.3'})   # as MXNet: parsed
    assert kv._compression.threshold == pytest.approx(0.3)
    with pytest.raises(TypeError, match='name must be a string, got int'):
        mx.kv.create(3)


def test_local_store_identity_shapes_and_mxnet_aliases():
    for name, kind in (('local', 'local'), ('Device', 'device'), ('local_allreduce_cpu',
                                                                  'local_allreduce_cpu')):
        kv = mx.kv.create(name)
        assert (kv.type, kv.rank, kv.num_workers) == (kind, 0, 1)
        assert kv.is_capable(mx.kv.KVStore.OPTIMIZER) and kv.OPTIMIZER == 'optimizer'
        kv._barrier()
        kv.barrier()
    kv = mx.kv.create('device')
    kv.init(0, mx.nd.zeros((2, 3)))
    with pytest.raises(mx.MXNetError, match=r'key 0 .*(\(2, 3\).*\(3, 2\)|\(3, 2\).*\(2, 3\))'):
        kv.push(0, [mx.nd.ones((2, 3)), mx.nd.ones((3, 2))])
    with pytest.raises(mx.MXNetError, match=r'out for key 0 .*\(2, 3\); got \(6,\)'):
        kv.pull(0, out=mx.nd.zeros((6,)))
    with pytest.raises(mx.MXNetError, match='key 5 has not been initialized'):
        kv.pull(5, out=mx.nd.zeros((2, 3)))
    with pytest.raises(mx.MXNetError, match='Unknown capability: fast'):
        kv.is_capable('fast')


def test_registered_kvstore_class_is_created_by_name():
    registry = dict(mx.kv.KVStoreBase.kv_registry)
    try:
        @mx.kv.KVStoreBase.register
        class CountingStore(mx.kv.KVStoreBase):
            def __init__(self):
                self.calls = 0

            def pushpull(self, key, value, out=None, priority=0):
                self.calls += 1

        kv = mx.kv.create('CountingStore')
        assert type(kv) is CountingStore and kv.calls == 0
        assert isinstance(mx.kv.create('local'), mx.kv.KVStoreBase)
        with pytest.raises(NotImplementedError):
            kv.set_optimizer(mx.optimizer.SGD())
        with pytest.warns(UserWarning, match='replaces the registered kvstore'):
            mx.kv.KVStoreBase.register(type('countingstore', (mx.kv.KVStoreBase,), {}))
        with pytest.raises(TypeError, match='decorates a class, got str'):
            mx.kv.KVStoreBase.register('local')
    finally:
        mx.kv.KVStoreBase.kv_registry.clear()
        mx.kv.KVStoreBase.kv_registry.update(registry)


def _rsp_ones(shape):
    return mx.nd.ones(shape).tostype('row_sparse')


def test_row_sparse_pull_gives_the_requested_rows_and_zeros_elsewhere():
    """MXNet's row_sparse out: requested rows copied, the others zero."""
    kv = mx.kv.create('local')
    stored = np.arange(12, dtype=np.float32).reshape(4, 3)
    kv.init(['e', 'f'], [mx.nd.array(stored), mx.nd.array(stored * 10)])
    out = _rsp_ones((4, 3))
    kv.row_sparse_pull('e', out=out, row_ids=mx.nd.array([2, 0, 2]))
    np.testing.assert_array_equal(out.asnumpy(), [[0, 1, 2], [0, 0, 0], [6, 7, 8], [0, 0, 0]])
    outs = [_rsp_ones((4, 3)), _rsp_ones((4, 3))]
    kv.row_sparse_pull('e', out=outs, row_ids=[mx.nd.array([1]), mx.nd.array([3])])
    np.testing.assert_array_equal(outs[0].asnumpy()[1], stored[1])
    np.testing.assert_array_equal(outs[1].asnumpy(), np.where(np.arange(4)[:, None] == 3,
                                                              stored, 0))
    pair = [_rsp_ones((4, 3)), _rsp_ones((4, 3))]
    kv.row_sparse_pull(['e', 'f'], out=pair, row_ids=[mx.nd.array([0]), mx.nd.array([1, 3])])
    np.testing.assert_array_equal(pair[1].asnumpy(), np.where(
        np.isin(np.arange(4), [1, 3])[:, None], stored * 10, 0))
    full = mx.nd.zeros((4, 3))
    kv.pull('e', out=full, ignore_sparse=False)
    np.testing.assert_array_equal(full.asnumpy(), stored)
    with pytest.raises(mx.MXNetError, match='needs row_ids .* got None'):
        kv.row_sparse_pull('e', out=out)
    with pytest.raises(mx.MXNetError, match=r"row_ids for key 'e' must lie in \[0, 4\), got \[4\]"):
        kv.row_sparse_pull('e', out=out, row_ids=mx.nd.array([1, 4]))
    with pytest.raises(mx.MXNetError, match='list of 2 \\(one per out\\), got a list of 3'):
        kv.row_sparse_pull('e', out=outs, row_ids=[mx.nd.array([1])] * 3)
    with pytest.raises(mx.MXNetError, match="needs row_sparse out arrays; .* 'e' .* default"):
        kv.row_sparse_pull('e', out=mx.nd.ones((4, 3)), row_ids=mx.nd.array([1]))
    # a plain pull leaves sparse outs alone unless ignore_sparse=False (as MXNet)
    sparse_out = (mx.nd.ones((4, 3)) * 2).tostype('row_sparse')
    kv.pull('e', out=[sparse_out, full])
    assert (sparse_out.asnumpy() == 2).all()
    kv.pull('e', out=sparse_out, ignore_sparse=False)
    np.testing.assert_array_equal(sparse_out.asnumpy(), stored)


# ---- dist_async --------------------------------------------------------------------------------
def _rsp_grad(rank, step):
    rows = [step, 10 + rank, 500 + 7 * rank + step]
    return rows, np.arange(12, dtype=np.float32).reshape(3, 4) + 100 * rank + step


def test_dist_sync_row_sparse_push_gathers_rows(job2):
    """row_sparse pushes travel as rows (indices + values), not as the dense array; the store
    holds the sum over workers; lazy SGD touches only the rows some worker pushed."""
    results = [load(job2, 'sparse', r) for r in range(2)]
    for key in results[0]:
        np.testing.assert_array_equal(results[1][key], results[0][key])
    got = results[0]
    total = np.zeros((1000, 4), np.float32)
    for rank in range(2):
        rows, values = _rsp_grad(rank, 0)
        total[rows] += values
    wanted = [0, 10, 11, 12, 500, 507]
    assert got['sum_rows'].tolist() == wanted
    np.testing.assert_array_equal(got['sum_values'], total[wanted])
    # one count (int64), then 3 row indices (int64) and 3 rows of 4 float32 values
    assert int(got['push_bytes']) == 8 + 3 * 8 + 3 * 4 * 4
    weight = np.ones((1000, 4), np.float32)
    for step in range(2):
        grad, touched = np.zeros_like(weight), set()
        for rank in range(2):
            rows, values = _rsp_grad(rank, step)
            grad[rows] += values
            touched.update(rows)
        rows = sorted(touched)
        weight[rows] -= 0.1 * (0.5 * grad[rows] + 0.01 * weight[rows])
    np.testing.assert_allclose(got['sgd_weight'], weight, rtol=1e-6)


def test_dist_sync_sparse_fit_matches_single_process(job2):
    """Module.fit of a linear model on csr data with a row_sparse weight, each batch's rows
    pulled through sparse_row_id_fn, on 2 workers == one process on the combined batches."""
    got = load(job2, 'sparse', 0)
    x, y = got['fit_x'], got['fit_y']
    shard, batch = dist_worker.SHARD, dist_worker.BATCH
    order = [r * shard + i * batch + j for i in range(shard // batch) for r in range(2)
             for j in range(batch)]
    train = mx.io.NDArrayIter(mx.nd.array(x[order]).tostype('csr'), mx.nd.array(y[order]),
                              2 * batch, last_batch_handle='discard', label_name='label')
    data = mx.sym.Variable('data', stype='csr')
    weight = mx.sym.Variable('w', shape=(x.shape[1], 1), stype='row_sparse')
    net = mx.sym.LinearRegressionOutput(mx.sym.dot(data, weight), mx.sym.Variable('label'))
    mod = mx.mod.Module(net, data_names=['data'], label_names=['label'])
    rng = np.random.RandomState(3)
    rng.uniform(size=x.shape), rng.uniform(0.5, 1.5, x.shape), rng.normal(size=(x.shape[1], 1))
    initial = mx.nd.array(rng.normal(0, 0.1, (x.shape[1], 1))).tostype('row_sparse')
    mod.fit(train, optimizer='sgd', optimizer_params={'learning_rate': 0.1, 'momentum': 0.9},
            num_epoch=2, arg_params={'w': initial})
    np.testing.assert_allclose(got['fit_w'], mod.get_params()[0]['w'].asnumpy(), rtol=1e-5,
                               atol=1e-6)


def test_dist_async_converges(job2):
    results = [load(job2, 'async', r) for r in range(2)]
    final = [float(line.split('=')[1]) for line in results[0]['train_lines']]
    assert final[-1] >= 0.9 and final[-1] > final[0]
    for name in PARAMS:       # after a barrier every worker holds the same average
        np.testing.assert_array_equal(results[0]['store_' + name], results[1]['store_' + name])
    x, y = dist_worker.dataset(2)
    mod = mx.mod.Module(dist_worker.network(), context=mx.cpu())
    mod.bind([('data', x.shape)], [('softmax_label', y.shape)], for_training=False)
    mod.set_params({n: mx.nd.array(results[0]['store_' + n]) for n in PARAMS}, {})
    accuracy = (mod.predict(mx.io.NDArrayIter(x, batch_size=len(x))).asnumpy().argmax(1) == y)
    assert accuracy.mean() >= 0.9


# ---- failures ----------------------------------------------------------------------------------
def test_killed_worker_makes_the_others_fail_naming_it(tmp_path):
    results = run_job(tmp_path, 3, 'train', '--epochs', '50', '--victim', '1')
    assert results[1][0] == -9
    for rank in (0, 2):
        code, out, seconds = results[rank]
        assert code != 0, out
        assert 'rank 1 stopped responding' in out, out
        assert seconds - results[1][2] < TIMEOUT, (seconds, results[1][2])


def test_stuck_worker_is_named_after_the_timeout(tmp_path):
    # rank 1 stops at step 5 for 8 s (its heartbeat goes on); the others give up after 5 s
    results = run_job(tmp_path, 2, 'train', '--epochs', '50', '--victim', '1', '--stall', '8',
                      timeout=5)
    code, out, seconds = results[0]
    assert code != 0, out
    assert 'rank 1 did not reach it within the 5 s timeout' in out, out
    assert seconds < results[1][2], (seconds, results[1][2])
    assert results[1][0] != 0                  # it wakes up to find the job gone


def test_worker_that_never_arrives_is_named(tmp_path):
    results = run_job(tmp_path, 3, 'ranks', ranks=[0, 1], timeout=3)
    for code, out, seconds in results:
        assert code != 0
        assert 'rank 2 of 3 did not join the job within the 3 s timeout' in out, out
        assert seconds < 3 + 60, seconds          # start-up (slow on a loaded machine), the wait


def test_partial_or_dmlc_environments_fail_clearly(monkeypatch):
    for name in ('RANK', 'WORLD_SIZE', 'MASTER_ADDR', 'MASTER_PORT', 'DMLC_ROLE'):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv('RANK', '0')
    with pytest.raises(mx.MXNetError, match='WORLD_SIZE, MASTER_ADDR, MASTER_PORT are not set'):
        mx.kv.create('dist_sync')
    monkeypatch.delenv('RANK')
    monkeypatch.setenv('DMLC_ROLE', 'server')
    with pytest.raises(mx.MXNetError, match='no parameter servers'):
        mx.kv.create('dist_sync')
    monkeypatch.setenv('DMLC_ROLE', 'worker')
    with pytest.raises(mx.MXNetError, match='DMLC_WORKER_ID, DMLC_NUM_WORKER'):
        mx.kv.create('dist_sync')
    monkeypatch.setenv('MXTORCH_DIST_TIMEOUT', 'soon')
    with pytest.raises(mx.MXNetError, match="MXTORCH_DIST_TIMEOUT must be .* got 'soon'"):
        mx.kvstore.cluster.timeout_seconds()


# ---- launcher ----------------------------------------------------------------------------------
def test_launch_runs_workers_through_torchrun(tmp_path):
    """`python -m mxtorch launch` (the CLI), in its own process group so that a stuck job is
    killed whole after JOB_LIMIT seconds."""
    returncode, out = _launch(tmp_path, ['ranks'], timeout=7, env_timeout=TIMEOUT)
    assert returncode == 0, out
    reports = [json.load(open(tmp_path / ('ranks-rank%d.json' % r))) for r in range(2)]
    assert [(r['rank'], r['num_workers'], r['timeout']) for r in reports] == \
        [(0, 2, '7'), (1, 2, '7')]
    assert all(r['sum'] == [3.0, 3.0] for r in reports)
    # the other store types of the same job: each sums both devices of both workers (1+2+10+10)
    for r, report in enumerate(reports):
        assert report['others'] == {
            name: {'type': name, 'rank': r, 'size': 2, 'optimizer': name != 'horovod',
                   'sum': [23.0, 23.0]} for name in ('dist_device_sync', 'dist_async', 'horovod')}


def _launch(outdir, arguments, timeout, env_timeout=None):
    """`mxtorch launch -n 2 --timeout T dist_worker.py OUTDIR *arguments`, in its own process
    group (killed whole after JOB_LIMIT seconds); (exit status, output)."""
    proc = subprocess.Popen(
        [sys.executable, '-m', 'mxtorch', 'launch', '-n', '2', '--timeout', str(timeout), WORKER,
         str(outdir), *arguments], env=worker_env({}, env_timeout or timeout),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=JOB_LIMIT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail('mxtorch launch still running after %d s:\n%s' % (JOB_LIMIT, out))
    return proc.returncode, out


def run_launch(outdir, *arguments, timeout):
    """_launch, and the seconds from the victim's failure to the job's end."""
    returncode, out = _launch(outdir, arguments, timeout)
    ended = time.time()
    with open(outdir / 'victim-time') as f:
        return returncode, out, ended - float(f.read())


def test_launch_reports_the_rank_that_died(tmp_path):
    code, out, after = run_launch(tmp_path, 'train', '--epochs', '50', '--victim', '1',
                                  timeout=TIMEOUT)
    assert code == 1, out
    assert 'mxtorch launch: rank 1 died: killed by signal 9 (SIGKILL)' in out, out
    assert 'mxtorch launch: rank 0 killed by signal 15 (SIGTERM) (ended by the launcher' in out
    assert after < 5, after


def test_launch_ends_a_frozen_worker_within_the_timeout(tmp_path):
    """Rank 1 stops itself (SIGSTOP: deaf to torchrun's SIGTERM, which used to wait 30 s more):
    the job ends a few seconds after the 5 s timeout, naming it."""
    code, out, after = run_launch(tmp_path, 'train', '--epochs', '50', '--victim', '1',
                                  '--freeze', timeout=5)
    assert code == 1, out
    assert 'mxtorch launch: rank 1 hung (frozen' in out, out
    assert 'reported by rank 0: rank 0: push' in out, out
    assert 'rank 1 stopped responding' in out, out
    assert after < 5 + 20, after        # (torchrun alone waited 30 s more; slack for a loaded machine)


def test_launch_failure_report_names_the_culprit():
    from mxtorch.kvstore.supervise import describe_failure
    sigterm, sigkill = -signal.SIGTERM, -signal.SIGKILL
    # died: first failure not caused by the launcher, even within the same second
    lines = describe_failure({0: (sigterm, 100), 1: (sigkill, 100)}, {}, {})
    assert lines == ['rank 1 died: killed by signal 9 (SIGKILL)',
                     'rank 0 killed by signal 15 (SIGTERM) (ended by the launcher after the '
                     'failure)']
    # alive but stuck: named by the rank that timed out waiting for it
    verdict = {'rank': 0, 'kind': 'behind', 'blamed': [1], 'message': 'rank 1 did not reach'}
    lines = describe_failure({0: (1, 100), 1: (sigterm, 100)}, {0: verdict}, {}, timeout=20)
    assert lines[0] == ('rank 1 hung (alive, but did not reach the collective the others were '
                        'in within the 20 s timeout); reported by rank 0: rank 1 did not reach; '
                        'then killed by signal 15 (SIGTERM)')
    assert lines[1] == 'rank 0 exited with status 1'
    # never joined; a plain script error
    verdict = {'rank': 0, 'kind': 'missing', 'blamed': [2], 'message': 'rank 2 of 3 ...'}
    assert describe_failure({0: (1, 5)}, {0: verdict}, {})[0].startswith(
        'rank 2 never joined the job; reported by rank 0')
    assert describe_failure({0: (0, 5), 1: (3, 4)}, {}, {})[0] == 'rank 1 died: exited with status 3'


def test_launch_maps_hosts_onto_torchrun_nodes(tmp_path):
    hosts = tmp_path / 'hosts'
    hosts.write_text('# two machines\nnode-a\n\nnode-b\n')
    commands = launch.node_commands(launch.build_parser().parse_args(
        ['-n', '4', '--hosts', str(hosts), '--port', '1234', '--timeout', '30', 'train.py',
         '--lr', '0.1']))
    assert [host for host, _ in commands] == ['node-a', 'node-b']
    for node_rank, (_, argv) in enumerate(commands):
        assert argv[argv.index('--nnodes') + 1] == '2'
        assert argv[argv.index('--node_rank') + 1] == str(node_rank)
        assert argv[argv.index('--nproc_per_node') + 1] == '2'
        assert argv[argv.index('--master_addr') + 1] == 'node-a'
        assert argv[argv.index('--master_port') + 1] == '1234'
        # every worker runs the script under the mxnet alias, as `mxtorch run` does
        assert argv[-5:] == ['-m', 'mxtorch.compat', 'train.py', '--lr', '0.1']
    for argv, message in ((['-n', '3', '--hosts', str(hosts)], '-n 3 workers cannot be spread'),
                          (['-n', '0'], '-n must be >= 1, got 0'),
                          (['-n', '2', '--timeout', '0'], '--timeout must be .* > 0, got 0'),
                          (['-n', '2', '--max-restarts', '-1'], '--max-restarts must be >= 0')):
        with pytest.raises(SystemExit, match=message):
            launch.main(argv + ['train.py'])

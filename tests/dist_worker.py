"""One worker of the distributed tests (tests/test_dist.py starts several of them).

    python tests/dist_worker.py OUTDIR SCENARIO [SCENARIO ...] [options]

Scenarios, run in order in one process: train (Module.fit of an MLP on dist_sync), async (the
same on dist_async), resume (continue a train checkpoint), compress (2-bit pushes straight on
the store), states (save/load of the store's optimizer states), ranks (rank, size, one
pushpull), sparse (row_sparse pushes, row_sparse_pull and a sparse Module.fit on dist_sync). Each writes OUTDIR/<scenario>-rank<r>.npz (.json).
"""
import argparse
import json
import logging
import os
import signal
import time

import numpy as np

import mxtorch as mx

FEATURES, CLASSES, SHARD, BATCH = 20, 4, 32, 8


def dataset(num_workers):
    """The job's whole training set: a learnable 4-class problem, SHARD samples per worker."""
    rng = np.random.RandomState(42)
    x = rng.randn(SHARD * num_workers, FEATURES).astype(np.float32)
    teacher = rng.randn(FEATURES, CLASSES)
    return x, (x @ teacher).argmax(axis=1).astype(np.float32)


def network():
    data = mx.sym.Variable('data')
    net = mx.sym.FullyConnected(data, num_hidden=16, name='fc1')
    net = mx.sym.Activation(net, act_type='relu', name='relu1')
    net = mx.sym.FullyConnected(net, num_hidden=CLASSES, name='fc2')
    return mx.sym.SoftmaxOutput(net, name='softmax')


def initial_params(seed):
    rng = np.random.RandomState(seed)
    shapes = {'fc1_weight': (16, FEATURES), 'fc1_bias': (16,), 'fc2_weight': (CLASSES, 16),
              'fc2_bias': (CLASSES,)}
    return {k: mx.nd.array(rng.uniform(-0.5, 0.5, s)) for k, s in shapes.items()}


OPTIMIZER_PARAMS = {'learning_rate': 0.5, 'momentum': 0.9, 'wd': 1e-4}


class Lines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def fit(args, kv, mod, scenario, epochs, **kwargs):
    x, y = dataset(kv.num_workers)
    train = mx.io.NDArrayIter(x, y, BATCH, num_parts=kv.num_workers, part_index=kv.rank)
    lines = Lines()
    logging.getLogger().addHandler(lines)
    logging.getLogger().setLevel(logging.INFO)

    def suicide(param):
        if kv.rank == args.victim and param.epoch * (SHARD // BATCH) + param.nbatch == 5:
            # when it failed, as seconds since the epoch (the tests time the job's end from it)
            with open(os.path.join(args.outdir, 'victim-time'), 'w') as f:
                f.write(repr(time.time()))
            if args.stall:               # alive but stuck: heartbeats go on, collectives do not
                time.sleep(args.stall)
            elif args.freeze:            # frozen: no heartbeat, and deaf to SIGTERM
                os.kill(os.getpid(), signal.SIGSTOP)
            else:
                os.kill(os.getpid(), signal.SIGKILL)

    prefix = os.path.join(args.outdir, '%s-mod-rank%d' % (scenario, kv.rank))
    mod.fit(train, kvstore=kv, optimizer='sgd', optimizer_params=OPTIMIZER_PARAMS,
            eval_metric=mx.kv.AllWorkersMetric('acc'), num_epoch=epochs,
            batch_end_callback=suicide,
            epoch_end_callback=[
                mx.callback.do_checkpoint(os.path.join(args.outdir,
                                                       '%s-do-rank%d' % (scenario, kv.rank))),
                mx.callback.module_checkpoint(mod, prefix, save_optimizer_states=True)],
            **kwargs)
    arg_params, _ = mod.get_params()
    result = {k: v.asnumpy() for k, v in arg_params.items()}
    if kv.type == 'dist_async':            # the averages every worker holds after a barrier
        kv.barrier()
        for name, value in arg_params.items():
            out = mx.nd.zeros(value.shape)
            kv.pull(name, out=out)
            result['store_' + name] = out.asnumpy()
    logging.getLogger().removeHandler(lines)
    result['train_lines'] = np.array([l for l in lines.lines if 'Train-' in l])
    result['bytes_sent'] = kv.bytes_sent
    np.savez(os.path.join(args.outdir, '%s-rank%d.npz' % (scenario, kv.rank)), **result)


def train(args):
    kv = mx.kv.create('dist_sync')
    mod = mx.mod.Module(network(), context=mx.cpu())
    fit(args, kv, mod, 'train', args.epochs, arg_params=initial_params(100 + kv.rank))


def async_(args):
    kv = mx.kv.create('dist_async')
    mod = mx.mod.Module(network(), context=mx.cpu())
    fit(args, kv, mod, 'async', 8, arg_params=initial_params(100 + kv.rank))


def resume(args):
    kv = mx.kv.create('dist_sync')
    latest = mx.kv.latest_checkpoint(args.resume_from, states=True)
    mod = mx.mod.Module.load(args.resume_from, latest, load_optimizer_states=True)
    fit(args, kv, mod, 'resume', args.epochs, begin_epoch=latest)


def compress(args):
    """Three pushes of two keys with 2-bit compression; record sums, residuals and bytes."""
    kv = mx.kv.create('dist_sync')
    kv.set_gradient_compression({'type': '2bit', 'threshold': 0.5})
    shapes = {'w': (5, 7), 'b': (3,)}
    kv.init(list(shapes), [mx.nd.zeros(s) for s in shapes.values()])
    result = {}
    for step in range(3):
        grads = [mx.nd.array(np.random.RandomState(1000 * kv.rank + 10 * step + i)
                             .uniform(-1, 1, s)) for i, s in enumerate(shapes.values())]
        kv.push(list(shapes), grads)
        for name, shape in shapes.items():
            out = mx.nd.zeros(shape)
            kv.pull(name, out=out)
            result['sum_%s_%d' % (name, step)] = out.asnumpy()
            result['residual_%s_%d' % (name, step)] = \
                kv._compression._residuals[(name, 0)].numpy().copy()
        result['bytes_%d' % step] = kv.bytes_sent
    np.savez(os.path.join(args.outdir, 'compress-rank%d.npz' % kv.rank), **result)


def states(args):
    """Optimizer states through save/load on dist_sync: two SGD-momentum pushes, save, a fresh
    store loads them (rank 1 names a file that does not exist: only rank 0 reads), one more push
    on both stores; record weights and momenta."""
    def store():
        kv = mx.kv.create('dist_sync')
        kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, momentum=0.9, rescale_grad=0.5))
        kv.init(['w', 'b'], [mx.nd.ones((3, 2)), mx.nd.zeros((4,))])
        return kv

    def grads(step):
        rng = np.random.RandomState(100 * kv.rank + step)
        return [mx.nd.array(rng.uniform(-1, 1, (3, 2))), mx.nd.array(rng.uniform(-1, 1, (4,)))]

    def snapshot(store_, tag, result):
        for name, shape in (('w', (3, 2)), ('b', (4,))):
            out = mx.nd.zeros(shape)
            store_.pull(name, out=out)
            result['%s_%s' % (tag, name)] = out.asnumpy()
            result['%s_momentum_%s' % (tag, name)] = store_._updater.states[name].asnumpy()

    kv = store()
    for step in range(2):
        kv.push(['w', 'b'], grads(step))
    path = os.path.join(args.outdir, 'kv-rank%d.states' % kv.rank)
    kv.save_optimizer_states(path)
    kv.barrier()
    result = {}
    snapshot(kv, 'saved', result)
    fresh = store()
    fresh.load_optimizer_states(os.path.join(args.outdir, 'kv-rank0.states') if kv.rank == 0
                                else os.path.join(args.outdir, 'no-such-file'))
    snapshot(fresh, 'loaded', result)
    for step_store in (kv, fresh):
        step_store.push(['w', 'b'], grads(2))
    snapshot(kv, 'after', result)
    snapshot(fresh, 'fresh_after', result)
    np.savez(os.path.join(args.outdir, 'states-rank%d.npz' % kv.rank), **result)


def ranks(args):
    kv = mx.kv.create('dist_sync')
    kv.init('x', mx.nd.ones((2,)) * (kv.rank + 1))
    value = mx.nd.ones((2,)) * (kv.rank + 1)
    kv.pushpull('x', value)
    others = {}
    for name in ('dist_device_sync', 'dist_async', 'horovod'):
        store = mx.kv.create(name)
        store.init(3, mx.nd.zeros((2,)))
        pushed = [mx.nd.ones((2,)) * (kv.rank + 1), mx.nd.ones((2,)) * 10]   # two "devices"
        out = mx.nd.zeros((2,))
        store.pushpull(3, pushed, out=out)
        store.barrier()
        others[name] = {'type': store.type, 'rank': store.rank, 'size': store.num_workers,
                        'optimizer': store.is_capable('optimizer'),
                        'sum': out.asnumpy().tolist()}
    with open(os.path.join(args.outdir, 'ranks-rank%d.json' % kv.rank), 'w') as f:
        json.dump({'rank': kv.rank, 'num_workers': kv.num_workers,
                   'sum': value.asnumpy().tolist(), 'others': others,
                   'timeout': os.environ.get('MXTORCH_DIST_TIMEOUT')}, f)


def sparse(args):
    """row_sparse values on dist_sync: pushes of rank-dependent rows without an optimizer (the
    store holds the global sum) and with lazy SGD, row_sparse_pull of chosen rows, the bytes
    sent; then Module.fit of a linear model on csr data with a row_sparse weight, the rows each
    batch touches pulled by sparse_row_id_fn."""
    kv = mx.kv.create('dist_sync')
    shape = (1000, 4)
    kv.init('emb', mx.nd.sparse.zeros('row_sparse', shape))

    def grad(step):
        rows = np.array([step, 10 + kv.rank, 500 + 7 * kv.rank + step], dtype=np.int64)
        values = np.arange(12, dtype=np.float32).reshape(3, 4) + 100 * kv.rank + step
        return mx.nd.sparse.row_sparse_array((values, rows), shape=shape)
    result = {}
    before = kv.bytes_sent
    kv.push('emb', grad(0))
    result['push_bytes'] = kv.bytes_sent - before
    out = mx.nd.sparse.zeros('row_sparse', shape)
    kv.row_sparse_pull('emb', out=out, row_ids=mx.nd.array([0, 10, 11, 12, 500, 507]))
    result['sum_rows'] = out.indices.asnumpy()
    result['sum_values'] = out.data.asnumpy()
    opt_kv = mx.kv.create('dist_sync')
    opt_kv.set_optimizer(mx.optimizer.SGD(learning_rate=0.1, wd=0.01, rescale_grad=0.5))
    opt_kv.init('emb', mx.nd.ones(shape).tostype('row_sparse'))
    for step in range(2):
        opt_kv.push('emb', grad(step))
    full = mx.nd.sparse.zeros('row_sparse', shape)
    opt_kv.row_sparse_pull('emb', out=full, row_ids=mx.nd.arange(shape[0], dtype='int64'))
    result['sgd_weight'] = full.asnumpy()
    # Module.fit on csr batches, a row_sparse weight, the rows of each batch pulled
    rng = np.random.RandomState(3)
    n, features = SHARD * kv.num_workers, 30
    x = (rng.uniform(size=(n, features)) < 0.15) * rng.uniform(0.5, 1.5, (n, features))
    y = x @ rng.normal(size=(features, 1))
    part = slice(kv.rank * SHARD, (kv.rank + 1) * SHARD)
    train = mx.io.NDArrayIter(mx.nd.array(x[part]).tostype('csr'), mx.nd.array(y[part]),
                              BATCH, last_batch_handle='discard', label_name='label')
    data = mx.sym.Variable('data', stype='csr')
    weight = mx.sym.Variable('w', shape=(features, 1), stype='row_sparse')
    net = mx.sym.LinearRegressionOutput(mx.sym.dot(data, weight), mx.sym.Variable('label'))
    mod = mx.mod.Module(net, data_names=['data'], label_names=['label'])
    mod.fit(train, kvstore=kv, optimizer='sgd',
            optimizer_params={'learning_rate': 0.1, 'momentum': 0.9}, num_epoch=2,
            arg_params={'w': mx.nd.array(rng.normal(0, 0.1, (features, 1))).tostype('row_sparse')},
            sparse_row_id_fn=lambda batch: {'w': batch.data[0].indices})
    result['fit_w'] = mod.get_params()[0]['w'].asnumpy()
    result['fit_x'], result['fit_y'] = x.astype(np.float32), y.astype(np.float32)
    np.savez(os.path.join(args.outdir, 'sparse-rank%d.npz' % kv.rank), **result)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('outdir')
    parser.add_argument('scenarios', nargs='+', choices=sorted(SCENARIOS))
    parser.add_argument('--epochs', type=int, default=4, help='epochs of train and resume')
    parser.add_argument('--victim', type=int, default=-1, help='rank that kills itself')
    parser.add_argument('--stall', type=float, default=0,
                        help='the victim sleeps this long instead of killing itself')
    parser.add_argument('--freeze', action='store_true',
                        help='the victim stops itself (SIGSTOP) instead of killing itself')
    parser.add_argument('--resume-from', help='checkpoint prefix to resume from')
    args = parser.parse_args()
    for scenario in args.scenarios:
        SCENARIOS[scenario](args)


SCENARIOS = {'train': train, 'async': async_, 'resume': resume, 'compress': compress,
             'states': states, 'ranks': ranks, 'sparse': sparse}


if __name__ == '__main__':
    main()

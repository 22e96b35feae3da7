"""A factorization machine on sparse data: csr input batches read by mx.io.LibSVMIter,
row_sparse weights with lazy SGD updates (only the rows a batch touches change), trained with
Module.fit; then the same model trained dense (dense batches and weights), with the time per
epoch and the bytes the data batches and the weight gradients hold in each case (their
storage: a sparse array's stored values and indices; mxtorch's executor still computes the
sparse gradients through dense tensors before keeping their rows).

The data set is generated and written to a temporary directory in LibSVM format: each sample
has a few active features out of many; its label is 1 when a hidden FM-like score is positive.

    python examples/sparse_fm.py [--features 20000] [--samples 4000] [--epochs 3]
"""
import argparse
import logging
import os
import tempfile
import time

import numpy as np

import mxtorch as mx


def write_libsvm(path, samples, features, active, factors, seed=0):
    """A generated binary classification set in LibSVM format (`label col:value ...`)."""
    rng = np.random.RandomState(seed)
    w = rng.normal(0, 1, features)
    v = rng.normal(0, 0.5, (features, factors))
    with open(path, 'w') as f:
        for _ in range(samples):
            cols = np.sort(rng.choice(features, active, replace=False))
            vals = rng.uniform(0.5, 1.5, active)
            pair = 0.5 * ((vals @ v[cols]) ** 2 - (vals ** 2) @ (v[cols] ** 2)).sum()
            label = float(w[cols] @ vals + pair > 0)
            f.write('%g %s\n' % (label, ' '.join('%d:%.4f' % cv for cv in zip(cols, vals))))


def factorization_machine(features, factors, sparse):
    """MXNet's FM: w0 + <w, x> + 1/2 sum_f ((x v_f)^2 - x^2 v_f^2), on a logistic output."""
    stype, wstype = ('csr', 'row_sparse') if sparse else ('default', 'default')
    init = mx.init.Normal(sigma=0.01)
    x = mx.sym.Variable('data', stype=stype)
    v = mx.sym.Variable('v', shape=(features, factors), init=init, stype=wstype)
    w = mx.sym.Variable('w', shape=(features, 1), init=init, stype=wstype)
    w0 = mx.sym.Variable('w0', shape=(1,), init=mx.init.Zero())
    linear = mx.sym.broadcast_add(mx.sym.dot(x, w), w0)
    pair = 0.5 * mx.sym.square(mx.sym.dot(x, v))
    square = mx.sym.dot(mx.sym.square(x), mx.sym._internal._square_sum(v, axis=1, keepdims=True))
    score = mx.sym.sum(mx.sym.Concat(linear, pair, dim=1), axis=1, keepdims=True) - 0.5 * square
    return mx.sym.LogisticRegressionOutput(score, mx.sym.Variable('label'))


class DenseBatches(mx.io.DataIter):
    """The batches of another iterator with their data in dense storage."""

    def __init__(self, inner):
        super().__init__(inner.batch_size)
        self.inner = inner
        self.provide_data, self.provide_label = inner.provide_data, inner.provide_label

    def reset(self):
        self.inner.reset()

    def next(self):
        batch = self.inner.next()
        return mx.io.DataBatch([d.tostype('default') for d in batch.data], batch.label,
                               pad=batch.pad)


def nbytes(arr):
    """Bytes an array holds: a sparse one its stored values and indices."""
    if arr.stype == 'default':
        return arr.size * arr.dtype().itemsize
    parts = [arr.data, arr.indices] + ([arr.indptr] if arr.stype == 'csr' else [])
    return sum(p.size * p.dtype().itemsize for p in parts)


class Meter:
    """batch_end_callback: the largest bytes held by a batch's data and by the gradients."""

    def __init__(self, mod):
        self.mod, self.data_bytes, self.grad_bytes, self.batches = mod, 0, 0, 0

    def __call__(self, param):
        group = self.mod._exec_group
        self.batches += 1
        self.data_bytes = max(self.data_bytes, sum(nbytes(e.arg_dict['data'])
                                                   for e in group.execs))
        self.grad_bytes = max(self.grad_bytes, sum(nbytes(g) for grads in group.grad_arrays
                                                   for g in grads if g is not None))


def binary_accuracy(label, prob):
    return float(((prob.reshape(-1) > 0.5) == (label.reshape(-1) > 0.5)).mean())


def log_loss(label, prob):
    p, y = np.clip(prob.reshape(-1), 1e-7, 1 - 1e-7), label.reshape(-1)
    return float(-(y * np.log(p) + (1 - y) * np.log(1 - p)).mean())


def train(args, path, sparse):
    it = mx.io.LibSVMIter(data_libsvm=path, data_shape=(args.features,),
                          batch_size=args.batch_size, label_name='label')
    it = it if sparse else DenseBatches(it)
    mod = mx.mod.Module(factorization_machine(args.features, args.factors, sparse),
                        data_names=['data'], label_names=['label'])
    meter = Meter(mod)
    metric = mx.metric.create([mx.metric.CustomMetric(binary_accuracy, name='accuracy'),
                               mx.metric.CustomMetric(log_loss, name='log-loss')])
    mx.random.seed(args.seed)
    ends = [time.perf_counter()]
    mod.fit(it, num_epoch=args.epochs, eval_metric=metric, optimizer='sgd',
            optimizer_params={'learning_rate': args.lr, 'momentum': 0.9},
            initializer=mx.init.Normal(sigma=0.01), batch_end_callback=meter,
            epoch_end_callback=lambda *_: ends.append(time.perf_counter()))
    # an epoch's time: from the end of the previous one (the first epoch also binds and
    # initialises, so it counts only when it is the only one)
    seconds = float(np.mean(np.diff(ends)[1:] if len(ends) > 2 else np.diff(ends)))
    return {'seconds_per_epoch': seconds, 'data_bytes': meter.data_bytes,
            'grad_bytes': meter.grad_bytes, 'batches': meter.batches,
            'metric': dict(metric.get_name_value())}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--features', type=int, default=20000)
    parser.add_argument('--samples', type=int, default=4000)
    parser.add_argument('--active', type=int, default=20, help='active features per sample')
    parser.add_argument('--factors', type=int, default=8)
    parser.add_argument('--batch-size', type=int, default=100)
    parser.add_argument('--epochs', type=int, default=3)
    parser.add_argument('--lr', type=float, default=0.5)
    parser.add_argument('--seed', type=int, default=1)
    parser.add_argument('--no-dense', action='store_true', help='skip the dense comparison')
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format='%(message)s')
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'train.libsvm')
        write_libsvm(path, args.samples, args.features, args.active, args.factors)
        for name in ('sparse',) + (() if args.no_dense else ('dense',)):
            results[name] = r = train(args, path, name == 'sparse')
            print('%-6s  %.3f s/epoch  batch data %10d bytes  gradients %10d bytes  %s'
                  % (name, r['seconds_per_epoch'], r['data_bytes'], r['grad_bytes'],
                     ' '.join('%s=%.4f' % kv for kv in r['metric'].items())))
    if 'dense' in results:
        s, d = results['sparse'], results['dense']
        print('dense / sparse: time x%.2f, batch data x%.1f, gradients x%.1f'
              % (d['seconds_per_epoch'] / s['seconds_per_epoch'],
                 d['data_bytes'] / max(s['data_bytes'], 1),
                 d['grad_bytes'] / max(s['grad_bytes'], 1)))
    return results


if __name__ == '__main__':
    main()

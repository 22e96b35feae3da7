"""The `mxtorch` command.

    mxtorch train     train a LeNet (or MLP) on the bundled 8x8 digits with Module.fit
    mxtorch predict   load a checkpoint written by `train` and score it on the held-out digits
    mxtorch run       run an unmodified `import mxnet as mx` script on mxtorch
    mxtorch launch    run a script as a distributed job (kvstore='dist_sync') through torchrun
"""
import argparse
import logging
import os
import sys
import time

import numpy as np

from . import compat
from .base import MXNetError
from .kvstore import launch


def _context(text):
    """'cpu', 'cpu:2' (two cpu contexts), 'gpu', 'gpu:0,1' -> a list of Contexts."""
    import mxtorch as mx
    kind, _, ids = text.partition(':')
    if kind not in ('cpu', 'gpu'):
        raise argparse.ArgumentTypeError('context must be cpu[:N] or gpu[:i,j,...], got %r' % text)
    if kind == 'cpu':
        return [mx.cpu(i) for i in range(int(ids or 1))]
    return [mx.gpu(int(i)) for i in (ids.split(',') if ids else ['0'])]


def _checked(convert, ok, expected):
    """An argparse type: `convert` the text, then require `ok(value)`."""
    def parse(text):
        try:
            value = convert(text)
        except ValueError:
            value = None
        if value is None or not ok(value):
            raise argparse.ArgumentTypeError('expected %s, got %r' % (expected, text))
        return value
    return parse


_positive_int = _checked(int, lambda v: v >= 1, 'a positive integer')
_positive_float = _checked(float, lambda v: v > 0, 'a positive number')
_fraction = _checked(float, lambda v: 0 < v < 1, 'a number in (0, 1)')


def _optimizer_name(text):
    from .optimizer import Optimizer
    if text.lower() not in Optimizer.opt_registry:
        raise argparse.ArgumentTypeError('unknown optimizer %r; choose one of %s'
                                         % (text, ', '.join(sorted(Optimizer.opt_registry))))
    return text.lower()


def _network(name):
    from mxtorch.models import lenet, mlp
    if name == 'lenet':
        return lenet.get_symbol(num_classes=10, small_input=True)
    return mlp.get_symbol(num_classes=10)


def _data(args):
    """(train iterator, validation iterator, validation labels) over the bundled digits."""
    import mxtorch as mx
    from mxtorch.datasets import load_digits, split
    images, labels = load_digits()
    train_x, train_y, val_x, val_y = split(images, labels, args.val_fraction, args.seed)
    train = mx.io.NDArrayIter(train_x, train_y, args.batch_size, shuffle=True)
    val = mx.io.NDArrayIter(val_x, val_y, args.batch_size)
    return train, val, val_y


def _accuracy(mod, val_iter, val_y):
    """Exact accuracy on the held-out digits (predict drops the padding of the last batch)."""
    probs = mod.predict(val_iter).asnumpy()
    return float((probs.argmax(axis=1) == val_y).mean()), probs


def _curves_svg(history, path):
    """A dependency-free SVG line chart of train/validation accuracy per epoch."""
    width, height, pad = 480, 300, 40
    epochs = len(history)
    lo = min(min(h) for h in history)
    lo = max(0.0, min(lo, 0.9) - 0.05)

    def point(i, value):
        x = pad + (width - 2 * pad) * (i / max(1, epochs - 1))
        y = height - pad - (height - 2 * pad) * (value - lo) / (1.0 - lo)
        return '%.1f,%.1f' % (x, y)
    lines = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d">' % (width, height),
             '<rect width="100%" height="100%" fill="white"/>',
             '<text x="%d" y="20" font-family="sans-serif" font-size="14">accuracy per epoch'
             '</text>' % pad]
    for k, (label, colour) in enumerate((('train', '#1f77b4'), ('validation', '#d62728'))):
        pts = ' '.join(point(i, h[k]) for i, h in enumerate(history))
        lines.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>'
                     % (colour, pts))
        lines.append('<text x="%d" y="%d" font-family="sans-serif" font-size="12" fill="%s">%s'
                     '</text>' % (width - 110, 40 + 16 * k, colour, label))
    for value in (lo, (lo + 1) / 2, 1.0):
        y = point(0, value).split(',')[1]
        lines.append('<text x="4" y="%s" font-family="sans-serif" font-size="10">%.2f</text>'
                     % (y, value))
    lines.append('</svg>')
    with open(path, 'w') as f:
        f.write('\n'.join(lines))


def train(args):
    import mxtorch as mx
    from .cpu_threads import describe
    logging.info('%s', describe())
    mx.random.seed(args.seed)
    np.random.seed(args.seed)
    train_iter, val_iter, val_y = _data(args)
    mod = mx.mod.Module(_network(args.network), context=args.context)
    os.makedirs(os.path.dirname(os.path.abspath(args.prefix)), exist_ok=True)
    history = []                           # [train accuracy, validation accuracy] per epoch
    train_metric = mx.metric.Accuracy()

    def end_of_epoch(epoch, symbol, arg_params, aux_params):
        history.append([train_metric.get_global()[1], None])

    def end_of_validation(param):
        history[-1][1] = param.eval_metric.get()[1]

    optimizer_params = {'learning_rate': args.lr}
    if args.optimizer in ('sgd', 'nag', 'signum'):
        optimizer_params['momentum'] = args.momentum
    start = time.time()
    mod.fit(train_iter, eval_data=val_iter, eval_metric=train_metric, validation_metric='acc',
            num_epoch=args.epochs, optimizer=args.optimizer, optimizer_params=optimizer_params,
            initializer=mx.init.Xavier(),
            batch_end_callback=mx.callback.Speedometer(args.batch_size, args.log_every),
            epoch_end_callback=[end_of_epoch, mx.callback.do_checkpoint(args.prefix, args.epochs)],
            eval_end_callback=end_of_validation)
    elapsed = time.time() - start
    accuracy, _ = _accuracy(mod, val_iter, val_y)
    logging.info('Validation accuracy %.4f on %d held-out digits after %d epochs (%.1f s)',
                 accuracy, len(val_y), args.epochs, elapsed)
    logging.info('Checkpoint: %s-symbol.json and %s-%04d.params', args.prefix, args.prefix,
                 args.epochs)
    if args.curves:
        _curves_svg(history, args.curves)
        logging.info('Training curves: %s', args.curves)
    if args.graph:
        shape = {'data': (1,) + train_iter.provide_data[0].shape[1:]}
        with open(args.graph, 'w') as f:
            f.write(mx.viz.network_dot(mod.symbol, title=args.network, shape=shape))
        logging.info('Network graph: %s (render with: dot -Tsvg %s -o net.svg)', args.graph,
                     args.graph)
    return accuracy


def predict(args):
    import mxtorch as mx
    from .kvstore import latest_checkpoint
    if args.epoch is None:
        args.epoch = latest_checkpoint(args.prefix)
        if args.epoch is None:
            raise FileNotFoundError('no checkpoint %s-symbol.json with a %s-NNNN.params beside '
                                    'it: run `mxtorch train --prefix %s` first'
                                    % (args.prefix, args.prefix, args.prefix))
    _, val_iter, val_y = _data(args)
    mod = mx.mod.Module.load(args.prefix, args.epoch, context=args.context)
    mod.bind(val_iter.provide_data, val_iter.provide_label, for_training=False)
    accuracy, probs = _accuracy(mod, val_iter, val_y)
    for i in range(min(args.show, len(probs))):
        logging.info('digit %d: predicted %d (p=%.3f), label %d', i, probs[i].argmax(),
                     probs[i].max(), val_y[i])
    logging.info('Accuracy of %s-%04d on %d held-out digits: %.4f', args.prefix, args.epoch,
                 len(probs), accuracy)
    return accuracy


def _common(parser):
    parser.add_argument('--prefix', default='checkpoints/digits',
                        help='checkpoint prefix (default: %(default)s)')
    parser.add_argument('--batch-size', type=_positive_int, default=32)
    parser.add_argument('--context', type=_context, default='cpu',
                        help='cpu, cpu:N (N data-parallel cpu contexts), gpu or gpu:0,1')
    parser.add_argument('--val-fraction', type=_fraction, default=0.2,
                        help='share of the digits held out for validation')
    parser.add_argument('--seed', type=int, default=0)


def _version():
    import platform
    import torch
    from . import __version__
    return 'mxtorch %s (PyTorch %s, Python %s)' % (__version__, torch.__version__,
                                                   platform.python_version())


def build_parser():
    parser = argparse.ArgumentParser(prog='mxtorch', description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--version', action='version', version=_version())
    sub = parser.add_subparsers(dest='command', required=True)
    p = sub.add_parser('train', help='train on the bundled 8x8 handwritten digits')
    _common(p)
    p.add_argument('--network', choices=('lenet', 'mlp'), default='lenet')
    p.add_argument('--epochs', type=_positive_int, default=10)
    p.add_argument('--optimizer', type=_optimizer_name, default='sgd',
                   help='any mx.optimizer name')
    p.add_argument('--lr', type=_positive_float, default=0.05)
    p.add_argument('--momentum', type=float, default=0.9)
    p.add_argument('--log-every', type=_positive_int, default=20,
                   help='Speedometer period in batches')
    p.add_argument('--curves', metavar='FILE.svg', help='write train/validation accuracy curves')
    p.add_argument('--graph', metavar='FILE.dot', help='write the network as a Graphviz graph')
    p.set_defaults(run=train)
    p = sub.add_parser('predict', help='score a checkpoint written by `mxtorch train`')
    _common(p)
    p.add_argument('--epoch', type=int, default=None,
                   help='checkpoint epoch to load (default: the newest for --prefix)')
    p.add_argument('--show', type=int, default=5, help='print this many predictions')
    p.set_defaults(run=predict)
    compat.register_cli(sub)
    launch.register_cli(sub)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format='%(message)s', stream=sys.stdout)
    try:
        args.run(args)
    except (MXNetError, OSError) as err:       # a missing or unreadable checkpoint, bad data
        if args.command not in ('train', 'predict'):
            raise
        sys.stderr.write('mxtorch %s: error: %s\n' % (args.command, err))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())

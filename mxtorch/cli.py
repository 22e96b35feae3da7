"""The `mxtorch` command.

    mxtorch train     train a LeNet (or MLP) on the bundled 8x8 digits with Module.fit
    mxtorch predict   load a checkpoint written by `train` and score it on the held-out digits
    mxtorch export    write a checkpoint as an ONNX model (.onnx) or a torch.export program (.pt2)
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
    kind, colon, ids = text.partition(':')
    usage = 'expected cpu, cpu:N (N >= 1 cpu contexts), gpu or gpu:i,j,... got %r' % text
    if kind not in ('cpu', 'gpu') or (colon and not ids):
        raise argparse.ArgumentTypeError(usage)
    try:
        numbers = [int(i) for i in ids.split(',')] if ids else []
    except ValueError:
        raise argparse.ArgumentTypeError(usage) from None
    if kind == 'cpu':
        if len(numbers) > 1 or (numbers and numbers[0] < 1):
            raise argparse.ArgumentTypeError(usage)
        return [mx.cpu(i) for i in range(numbers[0] if numbers else 1)]
    numbers = numbers or [0]
    available = mx.num_gpus()
    bad = [i for i in numbers if not 0 <= i < available]
    if bad or len(set(numbers)) != len(numbers):
        raise argparse.ArgumentTypeError(
            'no GPU %s on this machine (it has %d%s)' % (','.join(map(str, bad or numbers)),
                                                         available, '' if available else
                                                         ': use --context cpu'))
    return [mx.gpu(i) for i in numbers]


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
_momentum = _checked(float, lambda v: 0 <= v < 1, 'a number in [0, 1)')
_seed = _checked(int, lambda v: 0 <= v < 2 ** 32, 'an integer in [0, 2**32)')
_count = _checked(int, lambda v: v >= 0, 'a non-negative integer')


def _shape(text):
    """'1,1,8,8' or 'data=1,1,8,8' -> (name or None, shape)."""
    name, _, dims = text.rpartition('=')
    try:
        shape = tuple(int(d) for d in dims.split(','))
    except ValueError:
        shape = ()
    if not shape or min(shape) < 1:
        raise argparse.ArgumentTypeError('expected a shape such as 1,1,8,8 or data=1,1,8,8, '
                                         'got %r' % text)
    return name or None, shape


def _writable_dir(path, make=False):
    """An error message if files cannot be created beside `path` (its directory made first when
    `make`), found by creating and removing a scratch file there."""
    import tempfile
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        if not make:
            return 'directory %s does not exist' % directory
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as err:
            return 'cannot create directory %s: %s' % (directory, err.strerror or err)
    try:
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as err:
        return 'cannot write in %s: %s' % (directory, err.strerror or err)
    return None


def _output_file(suffixes, needs=None):
    """An argparse type: a path with one of `suffixes` whose directory can be written, and
    `needs` (a module name) importable."""
    def parse(text):
        if not text.lower().endswith(suffixes):
            raise argparse.ArgumentTypeError('expected a file name ending in %s, got %r'
                                             % (' or '.join(suffixes), text))
        problem = _writable_dir(text)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        if needs:
            import importlib.util
            if importlib.util.find_spec(needs) is None:
                raise argparse.ArgumentTypeError('%s needs the %s package: pip install '
                                                 '"mxtorch[watch]"' % (text, needs))
        return text
    return parse


def _prefix(text):
    problem = _writable_dir(text, make=True)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


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


def _draw_curves(history, path):
    """Loss and accuracy per epoch, train and validation, drawn with matplotlib (PNG, SVG or
    PDF by the file's suffix). Each epoch is a marked point, so one epoch already shows."""
    import matplotlib
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator
    epochs = np.arange(1, len(history) + 1)
    figure = Figure(figsize=(9, 3.6), layout='constrained')
    panels = figure.subplots(1, 2)
    for ax, key, ylabel in ((panels[0], 'ce', 'cross-entropy loss (nats)'),
                            (panels[1], 'acc', 'accuracy (%)')):
        scale = 100.0 if key == 'acc' else 1.0
        for split, colour, style in (('train', '#1f77b4', 'o-'), ('validation', '#d62728', 's--')):
            values = [h[split][key] * scale for h in history]
            ax.plot(epochs, values, style, color=colour, label=split, markersize=5)
        ax.set_xlabel('epoch')
        ax.set_ylabel(ylabel)
        ax.set_xlim(0.5, len(history) + 0.5)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
        ax.grid(True, alpha=0.3)
    panels[1].set_ylim(top=100.5)
    handles, labels = panels[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc='outside right upper', frameon=False)
    figure.suptitle('mxtorch train: %d epoch%s' % (len(history), '' if len(history) == 1 else 's'))
    with matplotlib.rc_context({'svg.fonttype': 'none'}):   # SVG text stays text
        figure.savefig(path, dpi=120)


def _progress_on(args):
    return args.progress == 'on' or (args.progress == 'auto' and sys.stdout.isatty())


def train(args):
    import mxtorch as mx
    from .cpu_threads import describe
    logging.info('%s', describe())
    mx.random.seed(args.seed)
    np.random.seed(args.seed)
    train_iter, val_iter, val_y = _data(args)
    mod = mx.mod.Module(_network(args.network), context=args.context)
    os.makedirs(os.path.dirname(os.path.abspath(args.prefix)), exist_ok=True)
    history = []            # per epoch: {'train': {'acc', 'ce'}, 'validation': {'acc', 'ce'}}
    train_metric = mx.metric.create(['acc', 'ce'])

    def values(metric, global_=False):
        pairs = metric.get_global_name_value() if global_ else metric.get_name_value()
        return {'acc' if name == 'accuracy' else 'ce': value for name, value in pairs}

    def end_of_epoch(epoch, symbol, arg_params, aux_params):
        history.append({'train': values(train_metric, global_=True)})

    def end_of_validation(param):
        history[-1]['validation'] = values(param.eval_metric)

    optimizer_params = {'learning_rate': args.lr}
    if args.optimizer in ('sgd', 'nag', 'signum'):
        optimizer_params['momentum'] = args.momentum
    progress = mx.callback.Progress() if _progress_on(args) else None
    start = time.time()
    mod.fit(train_iter, eval_data=val_iter, eval_metric=train_metric,
            validation_metric=mx.metric.create(['acc', 'ce']),
            num_epoch=args.epochs, optimizer=args.optimizer, optimizer_params=optimizer_params,
            initializer=mx.init.Xavier(),
            batch_end_callback=progress or mx.callback.Speedometer(args.batch_size,
                                                                   args.log_every),
            epoch_end_callback=[end_of_epoch, mx.callback.do_checkpoint(args.prefix, args.epochs)],
            eval_end_callback=end_of_validation)
    if progress is not None:
        progress.close()
    elapsed = time.time() - start
    accuracy, _ = _accuracy(mod, val_iter, val_y)
    logging.info('Validation accuracy %.4f on %d held-out digits after %d epochs (%.1f s)',
                 accuracy, len(val_y), args.epochs, elapsed)
    logging.info('Checkpoint: %s-symbol.json and %s-%04d.params', args.prefix, args.prefix,
                 args.epochs)
    if args.curves:
        _draw_curves(history, args.curves)
        logging.info('Training curves: %s', args.curves)
    if args.graph:
        shape = {'data': (1,) + train_iter.provide_data[0].shape[1:]}
        with open(args.graph, 'w') as f:
            f.write(mx.viz.network_dot(mod.symbol, title=args.network, shape=shape))
        logging.info('Network graph: %s (render with: dot -Tsvg %s -o net.svg)', args.graph,
                     args.graph)
    return accuracy


def _checkpoint_epoch(args):
    """args.epoch, or the newest checkpoint's; an error now if its files are missing."""
    from .kvstore import latest_checkpoint
    from .model import params_file
    if args.epoch is None:
        args.epoch = latest_checkpoint(args.prefix)
        if args.epoch is None:
            raise FileNotFoundError('no checkpoint %s-symbol.json with a %s-NNNN.params beside '
                                    'it: run `mxtorch train --prefix %s` first'
                                    % (args.prefix, args.prefix, args.prefix))
    for path in ('%s-symbol.json' % args.prefix, params_file(args.prefix, args.epoch)):
        if not os.path.isfile(path):
            raise FileNotFoundError('checkpoint file %s does not exist' % path)
    return args.epoch


def predict(args):
    import mxtorch as mx
    _checkpoint_epoch(args)
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


def export(args):
    """The checkpoint as ONNX (.onnx, through mx.onnx.export_model) or as a torch.export
    program (.pt2, from mx.contrib.torch.to_torch)."""
    import mxtorch as mx
    epoch = _checkpoint_epoch(args)
    sym, arg_params, aux_params = mx.model.load_checkpoint(args.prefix, epoch)
    params = dict(arg_params, **aux_params)
    label = sym.get_internals()[len(sym.get_internals()) - 1].name + '_label'
    inputs = [n for n in sym.list_inputs() if n not in params and n != label]
    named = {n: s for n, s in args.shape if n is not None}
    unnamed = [s for n, s in args.shape if n is None]
    unknown = sorted(set(named) - set(inputs))
    if unknown or len(unnamed) + len(named) != len(inputs) or (unnamed and named):
        raise MXNetError('the checkpoint\'s inputs are %s: give one --shape per input (as '
                         'name=d0,d1,... when there are several)%s'
                         % (', '.join(inputs), '; unknown input(s) %s' % ', '.join(unknown)
                            if unknown else ''))
    shapes = [named[n] for n in inputs] if named else unnamed
    output = args.output or '%s-%04d.onnx' % (args.prefix, epoch)
    if output.lower().endswith('.onnx'):
        import mxtorch.onnx
        mxtorch.onnx.export_model(sym, params, shapes, np.float32, output,
                                  dynamic=args.dynamic_batch,
                                  dynamic_input_shapes=[(None,) + s[1:] for s in shapes])
    else:
        import torch
        net = mx.contrib.torch.to_torch(sym, arg_params, aux_params, list(zip(inputs, shapes)))
        dynamic = None
        if args.dynamic_batch:     # traced at batch 2 at least: torch.export fixes sizes 0 and 1
            batch = torch.export.Dim('batch')
            dynamic = (tuple({0: batch} for _ in shapes),)
            shapes = [(max(2, s[0]),) + s[1:] for s in shapes]
        example = tuple(torch.zeros(s) for s in shapes)
        torch.export.save(torch.export.export(net, example, dynamic_shapes=dynamic), output)
    logging.info('Exported %s-%04d (inputs %s) to %s', args.prefix, epoch,
                 ', '.join('%s%s' % (n, s) for n, s in zip(inputs, shapes)), output)
    return output


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """--help shows each option's default, and descriptions as written."""


def _common(parser, prefix_type=str):
    parser.add_argument('--prefix', type=prefix_type, default='checkpoints/digits',
                        help='checkpoint prefix: PREFIX-symbol.json, PREFIX-NNNN.params')
    parser.add_argument('--batch-size', type=_positive_int, default=32, help='batch size')
    parser.add_argument('--context', type=_context, default='cpu',
                        help='cpu, cpu:N (N data-parallel cpu contexts), gpu or gpu:0,1')
    parser.add_argument('--val-fraction', type=_fraction, default=0.2,
                        help='share of the digits held out for validation')
    parser.add_argument('--seed', type=_seed, default=0,
                        help='seed of the train/validation split, shuffling and initializer')


def _version():
    import platform
    import torch
    from . import __mxtorch_version__, __version__
    return 'mxtorch %s, MXNet %s API (PyTorch %s, Python %s)' % (
        __mxtorch_version__, __version__, torch.__version__, platform.python_version())


def build_parser():
    parser = argparse.ArgumentParser(prog='mxtorch', description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--version', action='version', version=_version())
    sub = parser.add_subparsers(dest='command', required=True)
    p = sub.add_parser('train', help='train on the bundled 8x8 handwritten digits',
                       formatter_class=_HelpFormatter)
    _common(p, prefix_type=_prefix)
    p.add_argument('--network', choices=('lenet', 'mlp'), default='lenet',
                   help='the network to train')
    p.add_argument('--epochs', type=_positive_int, default=10, help='passes over the data')
    p.add_argument('--optimizer', type=_optimizer_name, default='sgd',
                   help='any mx.optimizer name')
    p.add_argument('--lr', type=_positive_float, default=0.05, help='learning rate')
    p.add_argument('--momentum', type=_momentum, default=0.9,
                   help='momentum (sgd, nag, signum)')
    p.add_argument('--log-every', type=_positive_int, default=20,
                   help='Speedometer period in batches (when the progress bar is off)')
    p.add_argument('--progress', choices=('auto', 'on', 'off'), default='auto',
                   help='a live progress bar (tqdm when installed) with ETA, loss and accuracy '
                        'instead of Speedometer lines; auto: on when stdout is a terminal')
    p.add_argument('--curves', metavar='FILE.{png,svg,pdf}',
                   type=_output_file(('.png', '.svg', '.pdf'), needs='matplotlib'),
                   help='draw loss and accuracy per epoch (needs matplotlib)')
    p.add_argument('--graph', metavar='FILE.dot', type=_output_file(('.dot', '.gv')),
                   help='write the network as a Graphviz graph')
    p.set_defaults(run=train)
    p = sub.add_parser('predict', help='score a checkpoint written by `mxtorch train`',
                       formatter_class=_HelpFormatter)
    _common(p)
    p.add_argument('--epoch', type=_count, default=None,
                   help='checkpoint epoch to load (None: the newest for --prefix)')
    p.add_argument('--show', type=_count, default=5, help='print this many predictions')
    p.set_defaults(run=predict)
    p = sub.add_parser('export', formatter_class=_HelpFormatter,
                       help='write a checkpoint as ONNX (.onnx) or torch.export (.pt2)',
                       description='Write a checkpoint as an ONNX model (mx.onnx.export_model) '
                                   'or a torch.export program (mx.contrib.torch.to_torch).\n'
                                   'e.g. mxtorch export --shape 1,1,8,8 --output lenet.onnx')
    p.add_argument('--prefix', default='checkpoints/digits', help='checkpoint prefix')
    p.add_argument('--epoch', type=_count, default=None,
                   help='checkpoint epoch (None: the newest for --prefix)')
    p.add_argument('--shape', type=_shape, action='append', required=True,
                   help='input shape, e.g. 1,1,8,8 (name=1,1,8,8 per input when several)')
    p.add_argument('--output', type=_output_file(('.onnx', '.pt2')), default=None,
                   help='FILE.onnx or FILE.pt2 (None: PREFIX-NNNN.onnx)')
    p.add_argument('--dynamic-batch', action='store_true',
                   help='let the first dimension of every input vary')
    p.set_defaults(run=export)
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
        if args.command not in ('train', 'predict', 'export'):
            raise
        sys.stderr.write('mxtorch %s: error: %s\n' % (args.command, err))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())

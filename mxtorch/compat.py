"""Run unmodified MXNet scripts on mxtorch: `mxtorch run script.py [args...]`.

While the alias is installed -- for the length of one `mxtorch run`, or between `install()` and
`uninstall()` in one process -- `import mxnet` gives the module `mxtorch` itself and
`import mxnet.X.Y` gives `mxtorch.X.Y` itself, so `from mxnet.module import Module`,
`import mxnet.ndarray as nd` and `mx.ndarray.ndarray.NDArray` all work, and attributes set
through either name are shared. The modules keep their mxtorch names (`mx.__name__` is
'mxtorch'), which is what tracebacks and reprs show.

Nothing is written to disk (no `mxnet` package, no .pth file): another process, or this one
after `uninstall()`, sees a real MXNet installation, or none, exactly as before.

Gluon and MXNet's NumPy interface are outside mxtorch's scope; importing them raises an
ImportError that says so. Other MXNet modules mxtorch lacks raise ModuleNotFoundError.
"""
import argparse
import importlib
import importlib.abc
import importlib.machinery
import logging
import os
import runpy
import sys

ALIAS = 'mxnet'
TARGET = 'mxtorch'

SCOPE = ("mxtorch reimplements MXNet 1.x's symbolic stack (mx.nd, mx.sym, executors, the "
         "mx.mod Module API, io, recordio, metric, optimizer, initializer, kvstore, callback, "
         "model, monitor, rnn, operator, test_utils, viz, profiler, runtime, engine, log, util)")
OUT_OF_SCOPE = {'gluon': 'Gluon',
                'numpy': "MXNet's NumPy interface", 'np': "MXNet's NumPy interface",
                'numpy_extension': "MXNet's NumPy extensions", 'npx': "MXNet's NumPy extensions"}


class _AliasLoader(importlib.abc.Loader):
    """Hands the import system an already imported mxtorch module."""

    def __init__(self, module):
        self.module = module
        self.spec = module.__spec__

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        # importlib stamped the alias spec on the module; mxtorch's own spec stays authoritative
        module.__spec__ = self.spec


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Resolves `mxnet` and `mxnet.*` to the mxtorch module of the same dotted path."""

    def find_spec(self, fullname, path=None, target=None):
        head, dot, rest = fullname.partition('.')
        if head not in (ALIAS, TARGET):
            return None
        first = rest.split('.')[0]
        if first in OUT_OF_SCOPE:
            # `from mxnet import gluon` asks for `mxtorch.gluon`, the alias's real name
            raise ImportError("%s: %s is outside mxtorch's scope; %s."
                              % (fullname, OUT_OF_SCOPE[first], SCOPE), name=fullname)
        if head == TARGET:
            return None
        real = TARGET + dot + rest
        try:
            module = importlib.import_module(real)
        except ModuleNotFoundError as err:
            if err.name is None or not (real == err.name or real.startswith(err.name + '.')):
                raise                      # something mxtorch.X itself imports is missing
            raise ModuleNotFoundError(
                "No module named '%s': mxtorch, standing in for mxnet, has no %s; %s."
                % (fullname, real, SCOPE), name=fullname) from None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(module),
                                              is_package=hasattr(module, '__path__'))


_FINDER = _AliasFinder()


def _is_alias(name, module):
    return module is sys.modules.get(TARGET + name[len(ALIAS):])


def install():
    """Make `import mxnet` (and `mxnet.*`) resolve to mxtorch in this process only."""
    if _FINDER in sys.meta_path:
        return
    existing = sys.modules.get(ALIAS)
    if existing is not None and not _is_alias(ALIAS, existing):
        raise ImportError('a real mxnet (%s) is already imported in this process; mxtorch can '
                          'stand in for mxnet only before the first `import mxnet`'
                          % getattr(existing, '__file__', existing))
    sys.meta_path.insert(0, _FINDER)


def uninstall():
    """Undo install(): drop the finder and the `mxnet` entries it put in sys.modules."""
    while _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    for name, module in list(sys.modules.items()):
        if (name == ALIAS or name.startswith(ALIAS + '.')) and _is_alias(name, module):
            del sys.modules[name]


def run_script(path, args=()):
    """Run the file `path` as `python path args...` would, with mxnet standing for mxtorch.

    It becomes `__main__`, sees sys.argv == [path, *args] and its own directory first on
    sys.path. This is meant to be the process's main program: sys.argv, sys.path and the alias
    are left as the script leaves them. An uncaught exception is reported by sys.excepthook
    from the script's frame down, and the process exits with status 1, as Python does.
    """
    if not os.path.exists(path):
        print("mxtorch run: can't open file %r: no such file or directory" % path,
              file=sys.stderr)
        raise SystemExit(2)
    sys.argv = [path] + list(args)
    sys.path[:1] = [os.path.dirname(os.path.abspath(path))]
    install()
    try:
        runpy.run_path(path, run_name='__main__')
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as err:
        tb = _from_script(err.__traceback__, path)
        sys.excepthook(type(err), err.with_traceback(tb), tb)
        raise SystemExit(1) from None


def _from_script(tb, path):
    """The traceback from the script's outermost frame on (the runner's frames dropped)."""
    entry = tb
    while entry is not None and entry.tb_frame.f_code.co_filename != path:
        entry = entry.tb_next
    return entry or tb


def _add_arguments(parser):
    parser.add_argument('script', help='the MXNet script to run (a file, or a folder or zip '
                                       'with __main__.py)')
    parser.add_argument('args', nargs=argparse.REMAINDER,
                        help="the script's own arguments, passed on as sys.argv[1:]")


def _run_command(args):
    # `mxtorch`'s main configures the root logger for its own commands before dispatching;
    # a script started by `python script.py` finds it unconfigured, so give it that back
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.setLevel(logging.WARNING)
    run_script(args.script, args.args)


_DESCRIPTION = ('Run an unmodified MXNet script: `import mxnet` and every `mxnet.*` module '
                'resolve to mxtorch for this run only.')


def register_cli(subparsers):
    """Add the `run` subcommand to the subparsers of the `mxtorch` command."""
    parser = subparsers.add_parser('run', help='run an unmodified MXNet script on mxtorch',
                                   description=_DESCRIPTION)
    _add_arguments(parser)
    parser.set_defaults(run=_run_command)
    return parser


def main(argv=None):
    """`python -m mxtorch.compat script.py [args...]`: the same as `mxtorch run`."""
    parser = argparse.ArgumentParser(prog='python -m mxtorch.compat', description=_DESCRIPTION)
    _add_arguments(parser)
    args = parser.parse_args(argv)
    run_script(args.script, args.args)


if __name__ == '__main__':
    from mxtorch.compat import main as _main     # the importable module's finder, not a copy
    _main()

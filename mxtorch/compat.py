"""Run unmodified MXNet scripts on mxtorch: `mxtorch run script.py [args...]`.

While the alias is installed -- for the length of one `mxtorch run`, or between `install()` and
`uninstall()` in one process -- `import mxnet` gives the module `mxtorch` itself and
`import mxnet.X.Y` gives `mxtorch.X.Y` itself, so `from mxnet.module import Module`,
`import mxnet.ndarray as nd` and `mx.ndarray.ndarray.NDArray` all work, and attributes set
through either name are shared. The modules keep their mxtorch names (`mx.__name__` is
'mxtorch'), which is what tracebacks and reprs show.

Nothing is written to disk (no `mxnet` package, no .pth file): another process, or this one
after `uninstall()`, sees a real MXNet installation, or none, exactly as before.

MXNet modules mxtorch lacks raise ModuleNotFoundError; a module listed in OUT_OF_SCOPE raises
an ImportError that says it is outside mxtorch's scope. MXNet's NumPy interface (`mxnet.numpy`,
`mxnet.numpy_extension`, `mx.np`, `mx.npx`) is mxtorch.numpy / mxtorch.numpy_extension.

MXNet-era scripts also use NumPy 1.x names that NumPy 2 removed (`np.int`, `np.float`,
`np.bool`, `np.NaN`, `np.fromstring` on bytes, ...). While the alias is installed, those names
work again: each one warns once, loudly, the first time the script uses it. They are served by
a module `__getattr__` fallback on numpy (an existing name is never shadowed), and uninstall()
puts numpy back as it was; a process that never installs the alias sees NumPy untouched.
Likewise a one-element `NDArray.asnumpy()` converts with float()/int() (`'%f' % l.asnumpy()`).

Toolkits that probe for PyTorch as a front end of their own get the answer they would get
with MXNet alone (see compat_toolkits).
"""
import argparse
import importlib
import importlib.abc
import importlib.machinery
import logging
import os
import runpy
import sys
import warnings

import numpy

from . import compat_toolkits

ALIAS = 'mxnet'
TARGET = 'mxtorch'

SCOPE = ("mxtorch reimplements MXNet 1.x's symbolic stack (mx.nd, mx.sym, executors, the "
         "mx.mod Module API, io, recordio, metric, optimizer, initializer, kvstore, callback, "
         "model, monitor, rnn, operator, test_utils, viz, profiler, runtime, engine, log, util), "
         "Gluon and the NumPy interface (mx.np, mx.npx)")
OUT_OF_SCOPE = {}        # first-level mxnet modules refused with an explanation (none now)


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
        if first in OUT_OF_SCOPE and importlib.machinery.PathFinder.find_spec(
                TARGET + '.' + first, importlib.import_module(TARGET).__path__) is None:
            # `from mxnet import np` asks for `mxtorch.np`, the alias's real name
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
_TOOLKITS = compat_toolkits.FixupFinder()


class _LegacyNumpy:
    """NumPy 1.x names that NumPy 2 removed, restored for legacy scripts while the alias is on."""

    ALIASES = {'int': int, 'float': float, 'bool': bool, 'object': object, 'complex': complex,
               'str': str, 'long': int, 'unicode': str, 'NaN': float('nan'), 'NAN': float('nan'),
               'Inf': float('inf'), 'Infinity': float('inf'), 'infty': float('inf'),
               'PINF': float('inf'), 'NINF': float('-inf'), 'PZERO': 0.0, 'NZERO': -0.0,
               'float_': numpy.float64, 'complex_': numpy.complex128, 'int0': numpy.intp,
               'uint0': numpy.uintp, 'bool8': numpy.bool_, 'string_': numpy.bytes_,
               'unicode_': numpy.str_, 'object0': numpy.object_, 'longfloat': numpy.longdouble,
               'singlecomplex': numpy.complex64, 'cfloat': numpy.complex128,
               'longcomplex': numpy.clongdouble, 'clongfloat': numpy.clongdouble,
               'product': numpy.prod, 'cumproduct': numpy.cumprod, 'alltrue': numpy.all,
               'sometrue': numpy.any, 'round_': numpy.round,
               'asscalar': lambda a: a.item(), 'mat': numpy.asmatrix,
               'msort': lambda a: numpy.sort(a, axis=0),
               'trapz': getattr(numpy, 'trapezoid', None),
               'in1d': lambda ar1, ar2, assume_unique=False, invert=False: numpy.isin(
                   ar1, ar2, assume_unique=assume_unique, invert=invert).ravel(),
               'asfarray': lambda a, dtype=numpy.float64: numpy.asarray(
                   a, dtype=dtype if numpy.issubdtype(dtype, numpy.inexact) else numpy.float64)}

    def __init__(self):
        self.warned = set()
        self.saved = None

    def _warn(self, name):
        if name not in self.warned:
            self.warned.add(name)
            warnings.warn('numpy.%s was removed in NumPy 2; mxtorch serves it for this MXNet-era '
                          'script (alias installed by mxtorch run / mxtorch.compat.install())'
                          % name, FutureWarning, stacklevel=3)

    def _getattr(self, name):
        if name in self.ALIASES and name not in numpy.__dict__:
            self._warn(name)
            return self.ALIASES[name]
        return self.saved['__getattr__'](name)

    def _fromstring(self, string, dtype=float, count=-1, *, sep='', like=None):
        if sep == '':      # binary mode: NumPy 2 refuses it; NumPy 1 returned a copy
            self._warn('fromstring (binary mode)')
            return numpy.frombuffer(string, dtype=dtype, count=count).copy()
        return self.saved['fromstring'](string, dtype=dtype, count=count, sep=sep)

    def install(self):
        if self.saved is not None or int(numpy.__version__.split('.')[0]) < 2:
            return
        self.saved = {'__getattr__': numpy.__dict__.get('__getattr__', self._missing),
                      'fromstring': numpy.fromstring}
        numpy.__getattr__ = self._getattr
        numpy.fromstring = self._fromstring

    def uninstall(self):
        if self.saved is None:
            return
        numpy.fromstring = self.saved['fromstring']
        if self.saved['__getattr__'] is self._missing:
            del numpy.__getattr__
        else:
            numpy.__getattr__ = self.saved['__getattr__']
        self.saved = None

    @staticmethod
    def _missing(name):
        raise AttributeError("module 'numpy' has no attribute %r" % name)


_legacy_numpy = _LegacyNumpy()


class _LegacyCollections:
    """`collections.Mapping` and the other ABC aliases Python 3.10 removed (MXNet 1.x's
    Python 3.6-3.8 had them; e.g. example/ssd's config uses collections.Mapping), served from
    collections.abc while the alias is on, with a warning the first time each is used."""

    def __init__(self):
        self.warned = set()
        self.installed = False

    def _getattr(self, name):
        import collections.abc
        if not name.startswith('_') and name in collections.abc.__all__:
            if name not in self.warned:
                self.warned.add(name)
                warnings.warn('collections.%s was removed in Python 3.10; mxtorch serves '
                              'collections.abc.%s for this MXNet-era script' % (name, name),
                              FutureWarning, stacklevel=2)
            return getattr(collections.abc, name)
        raise AttributeError("module 'collections' has no attribute %r" % name)

    def install(self):
        import collections
        if not self.installed and '__getattr__' not in collections.__dict__:
            collections.__getattr__ = self._getattr
            self.installed = True

    def uninstall(self):
        import collections
        if self.installed:
            del collections.__getattr__
            self.installed = False


_legacy_collections = _LegacyCollections()


class _Numpy1Size1(numpy.ndarray):
    """A one-element NDArray.asnumpy() result while the alias is on: float(), int() and
    `'%f' % a` of it work, as in NumPy 1.x (NumPy 2 converts only 0-d arrays to scalars).
    It pickles as a plain ndarray."""

    def _scalar(self, kind):
        if 'size-1 conversion' not in _legacy_numpy.warned:
            _legacy_numpy.warned.add('size-1 conversion')
            warnings.warn('%s() of a one-element array of ndim > 0 fails in NumPy 2; mxtorch '
                          "converts this MXNet-era script's asnumpy() results as NumPy 1 did"
                          % kind.__name__, FutureWarning, stacklevel=3)
        return kind(self.view(numpy.ndarray).reshape(())[()])

    def __float__(self):
        return self._scalar(float)

    def __int__(self):
        return self._scalar(int)

    def __complex__(self):
        return self._scalar(complex)

    def __reduce__(self):
        return self.view(numpy.ndarray).__reduce__()


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
    sys.meta_path.insert(1, _TOOLKITS)
    _legacy_numpy.install()
    _legacy_collections.install()
    if int(numpy.__version__.split('.')[0]) >= 2:
        importlib.import_module(TARGET + '.ndarray.ndarray').LEGACY_SIZE1[0] = _Numpy1Size1


def uninstall():
    """Undo install(): drop the finder and the `mxnet` entries it put in sys.modules."""
    while _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    while _TOOLKITS in sys.meta_path:
        sys.meta_path.remove(_TOOLKITS)
    _legacy_numpy.uninstall()
    _legacy_collections.uninstall()
    importlib.import_module(TARGET + '.ndarray.ndarray').LEGACY_SIZE1[0] = None
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

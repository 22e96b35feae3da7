"""Fix-ups that let MXNet-era toolkits import on mxtorch, applied while the mxnet alias is on.

Under `mxtorch run`, PyTorch is importable in every process, as mxtorch's engine. A toolkit
that supports both MXNet and PyTorch front ends may read that as "the user has PyTorch" and
check its version: GluonCV 0.10 refuses to import at all when `torch.__version__` is 2.x
(its `_require_pytorch_version` raises RuntimeError). While the alias is installed, such a
probe is answered the way it is on a machine with MXNet and no PyTorch: an ImportError, so
the toolkit uses its MXNet front end (the one the script asked for by importing mxnet).

Each fix-up runs once, right after the named module has executed; nothing is patched in a
module the script never imports, nor after uninstall().
"""
import importlib.abc
import sys
import warnings


def _no_pytorch_front_end(module):
    def require_pytorch(*args, **kwargs):
        raise ImportError('PyTorch runs here as the engine of mxtorch (standing in for mxnet); '
                          "the toolkit's MXNet front end is used")
    module._require_pytorch_version = require_pytorch


# Pillow 10 removed these aliases, which MXNet-era scripts pass to resize (style transfer...)
_PILLOW_REMOVED = {'ANTIALIAS': 'LANCZOS', 'LINEAR': 'BILINEAR', 'CUBIC': 'BICUBIC'}


def _pillow_legacy_names(module):
    """PIL.Image.ANTIALIAS etc. served (warning once each) while the alias is installed."""
    previous = module.__dict__.get('__getattr__')
    warned = set()

    def __getattr__(name):
        if name in _PILLOW_REMOVED and any(isinstance(f, FixupFinder) for f in sys.meta_path):
            if name not in warned:
                warned.add(name)
                warnings.warn('PIL.Image.%s was removed in Pillow 10; mxtorch serves it (as %s) '
                              'for this MXNet-era script' % (name, _PILLOW_REMOVED[name]),
                              FutureWarning, stacklevel=2)
            return getattr(module, _PILLOW_REMOVED[name])
        if previous is not None:
            return previous(name)
        raise AttributeError("module %r has no attribute %r" % (module.__name__, name))
    module.__getattr__ = __getattr__


FIXUPS = {'gluoncv.check': _no_pytorch_front_end, 'PIL.Image': _pillow_legacy_names}


class _FixupLoader(importlib.abc.Loader):
    def __init__(self, loader, fixup):
        self.loader, self.fixup = loader, fixup

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        self.fixup(module)


class FixupFinder(importlib.abc.MetaPathFinder):
    """Finds a module in FIXUPS with the finders after it, and wraps its loader."""

    def find_spec(self, fullname, path=None, target=None):
        fixup = FIXUPS.get(fullname)
        if fixup is None:
            return None
        for finder in sys.meta_path:
            if finder is self or isinstance(finder, FixupFinder):
                continue
            find = getattr(finder, 'find_spec', None)
            spec = find(fullname, path, target) if find is not None else None
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _FixupLoader(spec.loader, fixup)
                return spec
        return None

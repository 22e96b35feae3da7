"""mx.AttrScope: attributes given to every symbol created inside a `with` block."""
import collections
import threading
import warnings

from .base import _MXClassPropertyMetaClass, classproperty

HIDDEN_KEYS = ('ctx_group', 'lr_mult', 'wd_mult', 'force_mirroring', 'mirror_stage')


def hide_key(key):
    """`lr_mult` -> `__lr_mult__` for MXNet's hidden keys; other keys unchanged."""
    return '__%s__' % key if key in HIDDEN_KEYS else key


class AttrScope(metaclass=_MXClassPropertyMetaClass):
    """`with mx.AttrScope(ctx_group='dev1'):` — every op and variable created inside gets the
    attributes (values must be strings). Nested scopes merge; the inner one wins.
    `AttrScope.current` (deprecated in MXNet) reads or sets this thread's scope."""
    _scope = threading.local()
    _subgraph_names = collections.defaultdict(int)     # control-flow subgraphs made, per name

    def __init__(self, **kwargs):
        for key, value in kwargs.items():
            if not isinstance(value, str):
                raise ValueError('Attributes need to be string, got %s=%r' % (key, value))
        self._attr = {hide_key(k): v for k, v in kwargs.items()}
        self._old_scope = None

    def get(self, attr):
        """The scope's attributes updated with `attr` (a dict or None)."""
        if not self._attr:
            return dict(attr) if attr else {}
        merged = dict(self._attr)
        if attr:
            merged.update(attr)
        return merged

    def __enter__(self):
        self._old_scope = AttrScope._active()
        attr = dict(self._old_scope._attr)
        attr.update(self._attr)
        self._attr = attr
        AttrScope._scope.value = self
        return self

    def __exit__(self, *exc):
        AttrScope._scope.value = self._old_scope

    @staticmethod
    def _active():
        """This thread's scope."""
        scope = getattr(AttrScope._scope, 'value', None)
        if scope is None:
            scope = AttrScope._scope.value = AttrScope()
        return scope

    @classproperty
    def current(cls):    # pylint: disable=no-self-argument
        warnings.warn('AttrScope.current has been deprecated. It is advised to use the `with` '
                      'statement with AttrScope.', DeprecationWarning)
        return cls._active()

    @current.setter
    def current(cls, value):    # pylint: disable=no-self-argument
        warnings.warn('AttrScope.current has been deprecated. It is advised to use the `with` '
                      'statement with AttrScope.', DeprecationWarning)
        AttrScope._scope.value = value

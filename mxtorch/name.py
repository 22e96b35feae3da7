"""mx.name: automatic naming of operator nodes (NameManager, Prefix)."""
import threading

from .base import _MXClassPropertyMetaClass, classproperty


class NameManager(metaclass=_MXClassPropertyMetaClass):
    """Gives unnamed operators `<hint><counter>` names; counters are per hint and per manager.

    `with mx.name.NameManager():` starts fresh counters, restored on exit.
    """
    _scope = threading.local()

    def __init__(self):
        self._counter = {}
        self._old_manager = None

    def get(self, name, hint):
        if name:
            return name
        count = self._counter.get(hint, 0)
        self._counter[hint] = count + 1
        return '%s%d' % (hint, count)

    def __enter__(self):
        self._old_manager = NameManager.current
        NameManager._scope.value = self
        return self

    def __exit__(self, *exc):
        NameManager._scope.value = self._old_manager

    @classproperty
    def current(cls):    # pylint: disable=no-self-argument
        """This thread's manager (also settable, as in MXNet)."""
        return _current()

    @current.setter
    def current(cls, value):    # pylint: disable=no-self-argument
        NameManager._scope.value = value


class Prefix(NameManager):
    """Prepends `prefix` to every operator name, given or generated (not to variables)."""

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def get(self, name, hint):
        return self._prefix + super().get(name, hint)


def _current():
    manager = getattr(NameManager._scope, 'value', None)
    if manager is None:
        manager = NameManager._scope.value = NameManager()
    return manager


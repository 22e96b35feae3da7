"""mx.name: automatic naming of operator nodes (NameManager, Prefix)."""
import threading


class NameManager:
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


class _CurrentDescriptor:
    def __get__(self, obj, owner):
        return _current()


NameManager.current = _CurrentDescriptor()

"""Context.default_ctx, AttrScope.current and NameManager.current: settable on the class, and
per thread, as in MXNet 1.9.1."""
import threading
import warnings

import mxtorch as mx
from mxtorch.attribute import AttrScope
from mxtorch.context import Context
from mxtorch.name import NameManager


def _in_thread(func):
    result = []
    thread = threading.Thread(target=lambda: result.append(func()))
    thread.start()
    thread.join()
    return result[0]


def test_class_level_settings_are_per_thread():
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)
        try:
            Context.default_ctx = mx.cpu(3)
            assert mx.current_context() == mx.cpu(3) and Context.default_ctx == mx.cpu(3)
            assert _in_thread(lambda: Context.default_ctx) == mx.cpu(0)
            AttrScope.current = AttrScope(group='a')
            assert mx.sym.var('x').attr('group') == 'a'
            assert _in_thread(lambda: mx.sym.var('y').attr('group')) is None
        finally:
            Context.default_ctx = mx.cpu(0)
            AttrScope.current = AttrScope()
    assert mx.sym.var('z').attr('group') is None
    try:
        NameManager.current = NameManager()
        NameManager.current.get(None, 'main')
        assert 'main' in NameManager.current._counter
        assert 'main' not in _in_thread(lambda: NameManager.current._counter)
        with mx.name.Prefix('p_'):
            assert mx.sym.FullyConnected(mx.sym.var('d'), num_hidden=2).name == 'p_fullyconnected0'
    finally:
        NameManager.current = NameManager()


def test_np_array_scope_is_per_thread():
    with mx.np_array(True):
        assert mx.is_np_array()
        assert not _in_thread(mx.is_np_array)
    assert not mx.is_np_array()

"""mx.error: MXNet's error classes, registered (mx.base.register_error) under their names.

MXNetError (mx.base.MXNetError, a RuntimeError) is the default; InternalError adds MXNet's
hint to report the problem; the built-in ValueError, TypeError, AttributeError, IndexError and
NotImplementedError are registered under their own names.
"""
from .base import MXNetError, register_error

__all__ = ['MXNetError', 'register']

register = register_error


@register_error
class InternalError(MXNetError):
    """An internal error of the framework (not the user's input): the message gets MXNet's hint
    to report it, unless it already has one."""

    def __init__(self, msg):
        if 'MXNet hint:' not in msg:
            msg += ('\nMXNet hint: You hit an internal error. Please open an issue in '
                    'https://github.com/apache/incubator-mxnet/issues/new/choose to report it.')
        super().__init__(msg)


register_error('ValueError', ValueError)
register_error('TypeError', TypeError)
register_error('AttributeError', AttributeError)
register_error('IndexError', IndexError)
register_error('NotImplementedError', NotImplementedError)

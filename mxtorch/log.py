"""mx.log: loggers whose lines look like MXNet's (`W1124 09:35:52 1234 file.py:func:12] msg`)."""
import logging
import warnings

CRITICAL = logging.CRITICAL
ERROR = logging.ERROR
WARNING = logging.WARNING
INFO = logging.INFO
DEBUG = logging.DEBUG
NOTSET = logging.NOTSET

_LABELS = {CRITICAL: 'C', ERROR: 'E', WARNING: 'W', INFO: 'I', DEBUG: 'D'}


class _Formatter(logging.Formatter):
    """Colour by severity (red >= WARNING, green >= INFO, else blue), one-letter level label,
    month-day time, process id and call site."""

    def __init__(self):
        super().__init__(datefmt='%m%d %H:%M:%S')

    def format(self, record):
        level = record.levelno
        color = '\x1b[31m' if level >= WARNING else '\x1b[32m' if level >= INFO else '\x1b[34m'
        head = '%s%s%s %d %s:%s:%d]\x1b[0m ' % (
            color, _LABELS.get(level, 'U'), self.formatTime(record, self.datefmt),
            record.process, record.pathname, record.funcName, record.lineno)
        return head + super().format(record)


def get_logger(name=None, filename=None, filemode=None, level=WARNING):
    """The logger `name`; the first call for a named logger gives it a handler (a file opened
    with `filemode`, default 'a', or a coloured stderr stream) and sets its level."""
    logger = logging.getLogger(name)
    if name is not None and not getattr(logger, '_mxtorch_configured', False):
        logger._mxtorch_configured = True
        if filename:
            handler = logging.FileHandler(filename, filemode or 'a')
        else:
            handler = logging.StreamHandler()
            handler.setFormatter(_Formatter())
        logger.addHandler(handler)
        logger.setLevel(level)
    return logger


def getLogger(name=None, filename=None, filemode=None, level=WARNING):
    """Deprecated spelling of get_logger."""
    warnings.warn('getLogger is deprecated, Use get_logger instead.', DeprecationWarning,
                  stacklevel=2)
    return get_logger(name, filename, filemode, level)

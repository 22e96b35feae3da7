"""Limits that loaders check a file's sizes, counts and nesting against before allocating
anything, and `reading`, the guard that turns any failure while parsing a file into an
MXNetError naming the file.

Sizes are first checked against the bytes the file holds; the limits below bound what cannot be
checked that way (decompressed lengths, counts that name things rather than hold them, nesting).
Each can be raised through an environment variable of the same name prefixed MXTORCH_ (e.g.
MXTORCH_MAX_DECOMPRESSED_BYTES=8589934592).
"""
import contextlib
import os
import pickle
import re
import struct
import zlib

from .base import MXNetError


def _limit(name, default):
    value = os.environ.get('MXTORCH_' + name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise MXNetError('MXTORCH_%s must be an integer, got %r' % (name, value)) from None


class limits:                                   # pylint: disable=invalid-name
    """The sane limits loaders enforce (read once, at import)."""
    MAX_NDIM = 32
    # product of the non-zero dims of any shape read from a file (int64 indexing)
    MAX_ELEMENTS = 1 << 62
    # bytes a compressed file may inflate to (MNIST's training images take 47 MB)
    MAX_DECOMPRESSED_BYTES = _limit('MAX_DECOMPRESSED_BYTES', 2 << 30)
    # how deep JSON and pickles may nest (MXNet's own files nest at most 5 levels)
    MAX_NESTING = _limit('MAX_NESTING', 100)
    # inputs of a variadic operator and outputs of any operator in a symbol file
    MAX_GRAPH_COUNT = _limit('MAX_GRAPH_COUNT', 1 << 20)


def shape_size(shape, what):
    """The number of elements of `shape` (Python ints: no overflow), checked against MAX_NDIM
    and MAX_ELEMENTS."""
    if len(shape) > limits.MAX_NDIM:
        raise MXNetError('%s has %d dimensions (at most %d)' % (what, len(shape), limits.MAX_NDIM))
    size, nonzero = 1, 1
    for dim in shape:
        if dim < 0:
            raise MXNetError('%s has a negative dimension in %s' % (what, tuple(shape)))
        size *= dim
        nonzero *= max(dim, 1)
    if nonzero > limits.MAX_ELEMENTS:
        raise MXNetError('%s has shape %s, beyond the limit of %d elements'
                         % (what, tuple(shape), limits.MAX_ELEMENTS))
    return size


def json_depth(text):
    """How deep the arrays and objects of JSON `text` nest (strings skipped), without parsing;
    counting stops past MAX_NESTING."""
    depth = deepest = 0
    for match in _BRACKETS.finditer(_STRINGS.sub('', text)):
        if match.group() in '[{':
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limits.MAX_NESTING:
                    break
        else:
            depth -= 1
    return deepest


_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(r'[\[\]{}]')


# what parsing malformed bytes raises besides MXNetError (not MemoryError: an allocation too big
# for the file is a missing check, found by the fuzz tests, never hidden)
PARSE_ERRORS = (ValueError, TypeError, IndexError, KeyError, AttributeError, OverflowError,
                RecursionError, EOFError, NotImplementedError, struct.error,
                zlib.error, pickle.UnpicklingError)


@contextlib.contextmanager
def reading(fname, what):
    """Parse `fname` inside: an MXNetError gains the file's name, any other parsing error
    becomes an MXNetError saying what was being read. (OSError, e.g. a missing file, passes.)"""
    try:
        yield
    except MXNetError as err:
        text = str(err)
        if str(fname) not in text:
            err.args = ('%s (%s %s)' % (text, what, fname),)
        raise
    except PARSE_ERRORS as err:
        raise MXNetError('cannot load %s %s: %s: %s' % (what, fname, type(err).__name__, err)) \
            from None

"""Small helpers for shape and type rules.

A shape during inference is None (nothing known) or a tuple whose 0 entries are unknown dims
(MXNet's classic convention). Rules return (in_shapes, out_shapes) lists, as complete as they
can make them; the graph pass merges them and reports conflicts.
"""
from ..base import MXNetError


class ShapeError(ValueError):
    """A rule found shapes that cannot agree; the graph pass names the operator."""


def known(shape):
    """True when a shape is fully known."""
    return shape is not None and all(d > 0 for d in shape)


def merge(provided, inferred):
    """Unify two partial shapes; raise ShapeError (in MXNet's words) when they disagree."""
    if provided is None:
        return inferred
    if inferred is None:
        return provided
    if len(provided) != len(inferred) or any(
            x and y and x != y for x, y in zip(provided, inferred)):
        raise ShapeError('Shape inconsistent, Provided = [%s], inferred shape=%s'
                         % (','.join(str(d) for d in provided), fmt(inferred)))
    return tuple(x or y for x, y in zip(provided, inferred))


def fmt(shape):
    return 'None' if shape is None else '(%s)' % ','.join(str(d) for d in shape)


def same_shape(p, ins, outs):
    """Every input and output has one shape (element-wise operators)."""
    s = None
    for x in list(ins) + list(outs):
        s = merge(s, x)
    return [s] * len(ins), [s] * len(outs)


def first(*values):
    """The first value that is not None (dtypes are falsy in NumPy, so never use `or`)."""
    return next((v for v in values if v is not None), None)


def same_type(p, ins, outs):
    """Every input and output has one dtype (the default type rule)."""
    t = next((x for x in list(ins) + list(outs) if x is not None), None)
    for x in list(ins) + list(outs):
        if x is not None and x != t:
            raise ShapeError('dtype mismatch: expected %s, got %s' % (t, x))
    return [t] * len(ins), [t] * len(outs)


def prod(shape):
    n = 1
    for d in shape:
        n = n * d       # not in place: traced sizes (tensors) then fold into constants
    return n


def check(cond, message, *args):
    if not cond:
        raise ShapeError(message % args if args else message)


def require(cond, message, *args):
    """MXNetError for invalid parameters found while building or running an op."""
    if not cond:
        raise MXNetError(message % args if args else message)

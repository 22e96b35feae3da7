"""mx.nd.contrib: operators registered as `_contrib_<name>`, under `<name>`, and MXNet's
Python-level contrib helpers (isinf, isfinite, isnan)."""


def isinf(data):
    """1 where an element of `data` is +inf or -inf, else 0 (data's dtype)."""
    return data.abs() == float('inf')


def isfinite(data):
    """1 where an element of `data` is neither infinite nor NaN, else 0 (data's dtype)."""
    from . import logical_and
    return logical_and(data.abs() != float('inf'), data == data)


def isnan(data):
    """1 where an element of `data` is NaN, else 0 (data's dtype)."""
    return data != data

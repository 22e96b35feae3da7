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


def rand_zipfian(true_classes, num_sampled, range_max, ctx=None):
    """Draw num_sampled classes of [0, range_max) (with replacement) from the log-uniform
    (Zipfian) distribution P(c) = log((c+2)/(c+1)) / log(range_max+1).

    Returns (sampled classes (int64), expected counts of true_classes, expected counts of the
    sampled classes): a class's expected count is num_sampled * P(class) (float64).
    """
    import math
    from ..context import current_context
    from . import random
    ctx = ctx or current_context()
    log_range = math.log(range_max + 1)
    draws = random.uniform(0, log_range, shape=(num_sampled,), dtype='float64', ctx=ctx)
    sampled = (draws.exp() - 1).astype('int64') % range_max

    def expected_count(classes):
        classes = classes.astype('float64')
        return ((classes + 2.0) / (classes + 1.0)).log() / log_range * num_sampled
    return (sampled, expected_count(true_classes.as_in_context(ctx)),
            expected_count(sampled))

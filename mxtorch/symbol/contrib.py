"""mx.sym.contrib: operators registered as `_contrib_<name>`, under `<name>`."""


def rand_zipfian(true_classes, num_sampled, range_max):
    """Symbolic rand_zipfian (see mx.nd.contrib.rand_zipfian): returns the symbols of the
    sampled classes (int64) and the expected counts of true_classes and of the sampled classes
    (float64)."""
    import math
    from . import random
    log_range = math.log(range_max + 1)
    draws = random.uniform(0, log_range, shape=(num_sampled,), dtype='float64')
    sampled = (draws.exp() - 1).astype('int64') % range_max

    def expected_count(classes):
        classes = classes.astype('float64')
        return ((classes + 2.0) / (classes + 1.0)).log() / log_range * num_sampled
    return sampled, expected_count(true_classes), expected_count(sampled)

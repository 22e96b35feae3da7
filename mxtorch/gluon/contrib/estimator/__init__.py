"""mx.gluon.contrib.estimator: a training loop (Estimator) driven by event handlers."""
from . import batch_processor, estimator, event_handler
from .batch_processor import *   # noqa: F401,F403
from .estimator import *         # noqa: F401,F403
from .event_handler import *     # noqa: F401,F403

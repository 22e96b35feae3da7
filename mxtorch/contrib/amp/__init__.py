"""mx.contrib.amp: automatic mixed precision (float16 or bfloat16) for symbols, models,
Gluon blocks and trainers."""
from . import amp, lists  # noqa: F401
from .amp import *  # noqa: F401,F403
from .loss_scaler import LossScaler  # noqa: F401

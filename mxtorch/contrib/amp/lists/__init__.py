"""AMP's operator lists per target type (see mxtorch/ops/amp_lists.py)."""
from . import symbol_fp16, symbol_bf16  # noqa: F401

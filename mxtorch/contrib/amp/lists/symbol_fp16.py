"""AMP's operator lists for float16."""
from ....ops import amp_lists as _lists

FP16_FUNCS = _lists.lp16('float16')
FP16_FP32_FUNCS = _lists.lp16_fp32('float16')
FP32_FUNCS = _lists.fp32()
CONDITIONAL_FP32_FUNCS = list(_lists.CONDITIONAL_FP32)
WIDEST_TYPE_CASTS = _lists.widest()
LOSS_OUTPUT_FUNCTIONS = _lists.loss_output()

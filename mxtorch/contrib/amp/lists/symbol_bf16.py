"""AMP's operator lists for bfloat16."""
from ....ops import amp_lists as _lists

BF16_FUNCS = _lists.lp16('bfloat16')
BF16_FP32_FUNCS = _lists.lp16_fp32('bfloat16')
BF16_USE_FP32_PARAMS = dict(_lists.LP16_USE_FP32_PARAMS['bfloat16'])
FP32_FUNCS = _lists.fp32()
CONDITIONAL_FP32_FUNCS = list(_lists.CONDITIONAL_FP32)
WIDEST_TYPE_CASTS = _lists.widest()
LOSS_OUTPUT_FUNCTIONS = _lists.loss_output()

"""How automatic mixed precision (mx.contrib.amp) treats each operator, by precision class.

* LP16: ops that gain most from a 16-bit type (matrix products, convolutions): their float
  inputs are cast to the low-precision type.
* FP32: ops whose results suffer in 16 bits (exponentials and logs, powers, sums and means,
  softmax, normalisation, losses, linear algebra): their inputs are cast to float32.
* CONDITIONAL_FP32: (op, parameter, values) that make an op an FP32 one.
* WIDEST: ops combining several arrays: inputs of different float types are all cast to the
  widest of them (amp_multicast).
* LOSS_OUTPUT: ops whose gradient carries AMP's loss scale (`grad_scale`).
* Anything else runs in whatever type reaches it.
Only operators mxtorch registers are listed.
"""
from .registry import canonical_ops, find_op

LP16 = {
    'float16': ('Convolution', 'Deconvolution', 'FullyConnected', 'RNN'),
    'bfloat16': ('Convolution', 'FullyConnected'),
}

# bfloat16 BatchNorm runs on low-precision data with float32 statistics: the inputs named here
# ('' is the data) keep float32
LP16_USE_FP32_PARAMS = {
    'float16': {},
    'bfloat16': {'BatchNorm': ['', 'gamma', 'beta', 'moving_mean', 'moving_var']},
}

_FP32 = (
    # exponentials, logs, powers and other functions with a large dynamic range
    'exp', 'expm1', 'log', 'log10', 'log2', 'log1p', 'square', 'reciprocal', 'rsqrt', 'rcbrt',
    'arccos', 'arcsin', 'arctanh', 'cosh', 'sinh', 'tan', 'erfinv', 'gamma', 'gammaln',
    '_power', '_power_scalar', '_rpower_scalar', '_rdiv_scalar', '_hypot', '_hypot_scalar',
    'broadcast_power', 'broadcast_hypot',
    # reductions
    'sum', 'nansum', 'prod', 'nanprod', 'mean', 'norm', 'moments', '_square_sum',
    # softmax and normalisation
    'softmax', 'softmin', 'log_softmax', 'SoftmaxActivation', 'InstanceNorm', 'LayerNorm',
    'GroupNorm', 'L2Normalization', 'LRN',
    # losses
    'SoftmaxOutput', 'LinearRegressionOutput', 'LogisticRegressionOutput',
    'MAERegressionOutput', 'SVMOutput', 'softmax_cross_entropy', 'smooth_l1', 'MakeLoss',
    'CTCLoss', 'IdentityAttachKLSparseReg',
    # linear algebra, sorting, and user code
    '_linalg_gelqf', '_linalg_gemm', '_linalg_gemm2', '_linalg_potrf', '_linalg_potri',
    '_linalg_sumlogdiag', '_linalg_syevd', '_linalg_syrk', '_linalg_trmm', '_linalg_trsm',
    '_linalg_makediag', '_linalg_extractdiag', '_linalg_maketrian', '_linalg_extracttrian',
    '_linalg_inverse', '_linalg_det', '_linalg_slogdet', 'khatri_rao', 'argsort', 'topk',
    'Convolution_v1', 'Custom',
)

CONDITIONAL_FP32 = (('Activation', 'act_type', ['softrelu']),
                    ('LeakyReLU', 'act_type', ['elu', 'selu']))

_WIDEST = (
    'elemwise_add', 'elemwise_sub', 'elemwise_mul', 'elemwise_div', '_maximum', '_minimum',
    '_mod', '_equal', '_not_equal', '_greater', '_greater_equal', '_lesser', '_lesser_equal',
    '_logical_and', '_logical_or', '_logical_xor', 'broadcast_add', 'broadcast_sub',
    'broadcast_mul', 'broadcast_div', 'broadcast_mod', 'broadcast_maximum', 'broadcast_minimum',
    'broadcast_equal', 'broadcast_not_equal', 'broadcast_greater', 'broadcast_greater_equal',
    'broadcast_lesser', 'broadcast_lesser_equal', 'broadcast_logical_and',
    'broadcast_logical_or', 'broadcast_logical_xor', 'Concat', 'stack', 'add_n', 'dot',
    'batch_dot', 'where', 'Correlation',
)

LOSS_OUTPUT = ('SoftmaxOutput', 'LinearRegressionOutput', 'LogisticRegressionOutput',
               'MAERegressionOutput')


def _with_aliases(names):
    """The names and aliases of the listed operators that are registered (not the `_sparse_`
    storage-dispatch names, which MXNet's AMP lists do not carry)."""
    out = []
    for name in names:
        op = find_op(name)
        if op is None:
            continue
        for n in (op.name,) + op.aliases:
            if n not in out and not n.startswith('_sparse_'):
                out.append(n)
    return out


def lp16(target):
    return _with_aliases(LP16[target])


def fp32():
    return _with_aliases(_FP32)


def widest():
    return _with_aliases(_WIDEST)


def loss_output():
    return _with_aliases(LOSS_OUTPUT)


def lp16_fp32(target):
    """Ops that run in either precision: every registered op not in another class."""
    classified = set(lp16(target)) | set(fp32()) | set(widest()) | \
        set(_with_aliases(op for op, _, _ in CONDITIONAL_FP32))
    return [name for name in _with_aliases(sorted(canonical_ops())) if name not in classified]


def cast_op():
    """The operator AMP inserts to cast one array (dtype=...)."""
    return find_op('amp_cast')


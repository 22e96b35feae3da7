"""mx.npx: MXNet's NumPy extensions -- the neural-network operators and MXNet-specific helpers
for mx.np arrays. Each operator runs the registered operator of the same meaning (the one
mx.nd's function of the table below runs), so inputs and outputs are mx.np.ndarrays and the
numbers are those of mx.nd."""
import numpy as _onp
import torch

from ..base import MXNetError, integer_types
from ..context import Context, cpu, gpu, cpu_pinned, current_context, num_gpus  # noqa: F401
from ..util import (set_np, reset_np, is_np_array, is_np_shape, use_np, use_np_array,  # noqa: F401
                    use_np_shape, np_array, np_shape, set_np_shape)
from ..util import get_gpu_memory as gpu_memory_info  # noqa: F401
from .. import ndarray as _nd
from ..ndarray.ndarray import NDArray
from ..numpy.multiarray import wrap as _wrap_np, _grad_scope
from . import random  # noqa: F401


def _as_np(result):
    if isinstance(result, NDArray) and not isinstance(result, _np_ndarray()):
        return result.as_np_ndarray()
    if isinstance(result, (list, tuple)):
        return type(result)(_as_np(r) for r in result)
    return result


def _np_ndarray():
    from ..numpy import ndarray
    return ndarray


def _operator(name, nd_name, rename=None):
    """npx.`name`: mx.nd.`nd_name` on mx.np arrays (keyword arguments renamed by `rename`)."""
    rename = rename or {}

    def func(*args, **kwargs):
        for new, old in rename.items():
            if new in kwargs:
                kwargs[old] = kwargs.pop(new)
        return _as_np(getattr(_nd, nd_name)(*args, **kwargs))
    func.__name__ = func.__qualname__ = name
    func.__doc__ = 'MXNet operator %s on mx.np arrays (see mx.nd.%s).' % (nd_name, nd_name)
    return func


_TABLE = {
    'activation': 'Activation', 'leaky_relu': 'LeakyReLU', 'batch_norm': 'BatchNorm',
    'convolution': 'Convolution', 'deconvolution': 'Deconvolution',
    'fully_connected': 'FullyConnected', 'pooling': 'Pooling', 'dropout': 'Dropout',
    'embedding': 'Embedding', 'one_hot': 'one_hot', 'pick': 'pick', 'topk': 'topk',
    'layer_norm': 'LayerNorm', 'batch_flatten': 'Flatten', 'batch_dot': 'batch_dot',
    'gather_nd': 'gather_nd', 'sequence_mask': 'SequenceMask', 'reshape_like': 'reshape_like',
    'shape_array': 'shape_array', 'arange_like': 'contrib_arange_like', 'smooth_l1': 'smooth_l1',
    'softmax': 'softmax', 'log_softmax': 'log_softmax', 'masked_softmax': 'masked_softmax',
    'masked_log_softmax': 'masked_log_softmax', 'relu': 'relu', 'sigmoid': 'sigmoid',
    'erf': 'erf', 'erfinv': 'erfinv', 'gamma': 'gamma', 'gammaln': 'gammaln',
    'rnn': 'RNN', 'roi_pooling': 'ROIPooling', 'roi_align': 'ROIAlign', 'cast': 'cast',
    'slice': 'slice', 'slice_axis': 'slice_axis', 'instance_norm': 'InstanceNorm',
    'group_norm': 'GroupNorm', 'l2_normalization': 'L2Normalization', 'softmin': 'softmin',
    'ctc_loss': 'CTCLoss', 'stop_gradient': 'BlockGrad', 'broadcast_like': 'broadcast_like',
    'index_add': 'index_add', 'index_update': 'index_update', 'box_nms': 'box_nms',
    'multibox_prior': 'MultiBoxPrior', 'multibox_target': 'MultiBoxTarget',
    'multibox_detection': 'MultiBoxDetection', 'upsampling': 'UpSampling',
    'bilinear_resize2d': 'BilinearResize2D', 'spatial_transformer': 'SpatialTransformer',
    'grid_generator': 'GridGenerator', 'bilinear_sampler': 'BilinearSampler',
}


def _install():
    g = globals()
    for name, nd_name in _TABLE.items():
        target = nd_name
        if not hasattr(_nd, target) and hasattr(_nd, 'contrib') and \
                hasattr(_nd.contrib, target.replace('contrib_', '')):
            g[name] = _contrib(name, target.replace('contrib_', ''))
        elif hasattr(_nd, target):
            g[name] = _operator(name, target)


def _contrib(name, short):
    def func(*args, **kwargs):
        return _as_np(getattr(_nd.contrib, short)(*args, **kwargs))
    func.__name__ = func.__qualname__ = name
    return func


_install()


def reshape(a, newshape, reverse=False, order='C'):
    """Reshape with npx's special codes: -1 infers one dimension, -2 copies this input
    dimension, -3 skips an input dimension of size 1, -4 copies all remaining input dimensions,
    -5 merges two input dimensions, -6 splits one input dimension into the two values that
    follow (one may be -1); `reverse` reads both shapes from the right."""
    src = list(a.shape)
    codes = [int(newshape)] if isinstance(newshape, integer_types) else [int(s) for s in newshape]
    if reverse:
        src, codes = src[::-1], _reverse_codes(codes)
    out, i, j, infer = [], 0, 0, None
    try:
        while j < len(codes):
            c = codes[j]
            if c > 0 or c == 0:
                out.append(c)
                i += 1
            elif c == -1:
                if infer is not None:
                    raise MXNetError('npx.reshape: one -1 at most, got %s' % (codes,))
                infer = len(out)
                out.append(-1)
                i += 1
            elif c == -2:
                out.append(src[i])
                i += 1
            elif c == -3:
                if src[i] != 1:
                    raise MXNetError('npx.reshape: -3 index should only be used to skip '
                                     'dimension size 1, got %d' % src[i])
                i += 1
            elif c == -4:
                out.extend(src[i:])
                i = len(src)
            elif c == -5:
                out.append(src[i] * src[i + 1])
                i += 2
            elif c == -6:
                d1, d2 = codes[j + 1], codes[j + 2]
                if d1 == -1:
                    d1 = src[i] // d2
                if d2 == -1:
                    d2 = src[i] // d1
                if d1 * d2 != src[i]:
                    raise MXNetError('npx.reshape: -6 splits dimension %d into %d x %d'
                                     % (src[i], d1, d2))
                out.extend([d1, d2])
                i += 1
                j += 2
            else:
                raise MXNetError('npx.reshape: invalid code %d in %s' % (c, codes))
            j += 1
    except IndexError:
        raise MXNetError('npx.reshape: shape %s does not fit an input of shape %s'
                         % (tuple(codes), tuple(a.shape))) from None
    size = int(_onp.prod(a.shape))
    if infer is not None:
        known = int(_onp.prod([d for k, d in enumerate(out) if k != infer]))
        if known == 0 or size % known:
            raise MXNetError('npx.reshape: cannot reshape an array of shape %s into %s'
                             % (a.shape, tuple(codes)))
        out[infer] = size // known
    if reverse:
        out = out[::-1]
    if int(_onp.prod(out)) != size:
        raise MXNetError('npx.reshape: cannot reshape an array of shape %s into %s'
                         % (a.shape, tuple(codes)))
    with _grad_scope():
        return _wrap_np(a._tensor.reshape(out), a.context)


def _reverse_codes(codes):
    """The codes read from the right: a -6 group keeps its two values in order."""
    groups, j = [], 0
    while j < len(codes):
        if codes[j] == -6:
            groups.append([-6, codes[j + 2], codes[j + 1]])
            j += 3
        else:
            groups.append([codes[j]])
            j += 1
    return [c for g in reversed(groups) for c in g]


def nonzero(a):
    """The indices of the non-zero elements, one row per element (int64, shape (N, ndim))."""
    return _wrap_np(torch.nonzero(a._tensor), a.context)


def save(file, arr):
    """Save an mx.np array, a list or a dict of them (MXNet's .npx/.params format, NumPy
    shapes)."""
    from ..util import np_shape as _scope
    with _scope(True):
        if isinstance(arr, NDArray):
            arr = [arr]
        if isinstance(arr, dict):
            data = {k: v.as_nd_ndarray() for k, v in arr.items()}
        else:
            data = [v.as_nd_ndarray() for v in arr]
        _nd.save(file, data)


def load(file):
    """Load what npx.save wrote: a list or a dict of mx.np arrays."""
    from ..util import np_shape as _scope
    with _scope(True):
        loaded = _nd.load(file)
    if isinstance(loaded, dict):
        return {k: v.as_np_ndarray() for k, v in loaded.items()}
    return [v.as_np_ndarray() for v in loaded]


def waitall():
    _nd.waitall()


def seed(seed_state, ctx='all'):
    from .. import random as _random
    _random.seed(seed_state, ctx)

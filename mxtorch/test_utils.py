"""mx.test_utils: the checks MXNet users' own tests rely on.

check_symbolic_forward / check_symbolic_backward compare an executor's results with expected
arrays; check_numeric_gradient compares its gradients with central finite differences of a
random projection of the outputs; check_consistency runs one symbol across contexts/dtypes.
"""
import contextlib
import os
import random

import numpy as np
import torch

from .base import MXNetError
from .context import current_context
from .ndarray.ndarray import NDArray, array

_default_ctx = [None]


def default_context():
    return _default_ctx[0] or current_context()


def set_default_context(ctx):
    _default_ctx[0] = ctx


def default_dtype():
    return np.float32


def _np(x):
    if isinstance(x, NDArray):
        return x.asnumpy()
    return np.asarray(x)


def default_rtols():
    return {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-5,
            np.dtype(np.bool_): 0, np.dtype(np.int8): 0, np.dtype(np.uint8): 0,
            np.dtype(np.int32): 0, np.dtype(np.int64): 0}


def default_atols():
    return {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-20,
            np.dtype(np.bool_): 0, np.dtype(np.int8): 0, np.dtype(np.uint8): 0,
            np.dtype(np.int32): 0, np.dtype(np.int64): 0}


def _tolerances(a, b, rtol, atol):
    dt = np.result_type(a.dtype, b.dtype) if a.dtype.kind == b.dtype.kind else a.dtype
    if rtol is None:
        rtol = default_rtols().get(np.dtype(dt), 1e-5)
    if atol is None:
        atol = default_atols().get(np.dtype(dt), 1e-20)
    return rtol, atol


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True):
    a, b = _np(a), _np(b)
    rtol, atol = _tolerances(a, b, rtol, atol)
    if not use_broadcast and a.shape != b.shape:
        return False
    return np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal(a, b, rtol=None, atol=None, names=('a', 'b'), equal_nan=False,
                        use_broadcast=True, mismatches=(10, 10)):
    """Raise AssertionError showing the worst elements when a and b differ beyond tolerance."""
    a, b = _np(a), _np(b)
    rtol, atol = _tolerances(a, b, rtol, atol)
    if not use_broadcast and a.shape != b.shape:
        raise AssertionError('%s shape %s != %s shape %s' % (names[0], a.shape, names[1], b.shape))
    if np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    a64, b64 = np.broadcast_arrays(a.astype(np.float64), b.astype(np.float64))
    err = np.abs(a64 - b64) / (atol + rtol * np.abs(b64))
    err = np.where(np.isnan(err), np.inf, err)
    worst = np.unravel_index(np.argmax(err), err.shape) if err.size else ()
    raise AssertionError(
        'Items are not equal (rtol=%g, atol=%g): error %g at %s, %s=%r, %s=%r\n %s: %s\n %s: %s'
        % (rtol, atol, err[worst] if err.size else 0, worst, names[0],
           a64[worst] if err.size else None, names[1], b64[worst] if err.size else None,
           names[0], np.array2string(a, threshold=20), names[1],
           np.array2string(b, threshold=20)))


def assert_almost_equal_ignore_nan(a, b, rtol=None, atol=None, names=('a', 'b')):
    a, b = np.copy(_np(a)), np.copy(_np(b))
    nan = np.logical_or(np.isnan(a), np.isnan(b))
    a[nan] = 0
    b[nan] = 0
    assert_almost_equal(a, b, rtol, atol, names)


def same(a, b):
    return np.array_equal(_np(a), _np(b))


def assert_exception(f, exception_type, *args, **kwargs):
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError('%s did not raise %s' % (f, exception_type.__name__))


def rand_shape_2d(dim0=10, dim1=10):
    return random.randint(1, dim0 + 1), random.randint(1, dim1 + 1)


def rand_shape_3d(dim0=10, dim1=10, dim2=10):
    return random.randint(1, dim0 + 1), random.randint(1, dim1 + 1), random.randint(1, dim2 + 1)


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    low = 0 if allow_zero_size else 1
    return tuple(np.random.randint(low, dim + 1, size=num_dim).tolist())


def rand_ndarray(shape, stype='default', density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices=False, distribution=None, ctx=None):
    """A dense random array (uniform in [0, 1) unless modifier_func reshapes the values)."""
    if stype != 'default':
        raise MXNetError('mxtorch supports only dense (default) storage, asked for %s' % stype)
    values = np.random.uniform(size=shape)
    if density is not None:
        values = values * (np.random.uniform(size=shape) < density)
    if modifier_func is not None:
        values = modifier_func(values)
    return array(values, ctx=ctx or default_context(), dtype=dtype or np.float32)


def random_arrays(*shapes):
    arrays = [np.random.randn(*s).astype(np.float32) if s else np.float32(np.random.randn())
              for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def _as_arg_dict(sym, location, ctx, dtype):
    names = sym.list_arguments()
    if isinstance(location, dict):
        unknown = set(location) - set(names)
        if unknown:
            raise ValueError('Symbol arguments and keys of the given location do not match: '
                             'unknown %s, arguments %s' % (sorted(unknown), names))
        items = location.items()
    else:
        items = zip(names, location)
    return {k: array(v, ctx=ctx, dtype=v.dtype if isinstance(v, NDArray) else
                     (np.asarray(v).dtype if np.asarray(v).dtype.kind != 'f' else dtype))
            for k, v in items}


def _aux_dict(sym, aux_states, ctx, dtype):
    names = sym.list_auxiliary_states()
    if aux_states is None:
        return None
    if isinstance(aux_states, dict):
        return {k: array(v, ctx=ctx, dtype=dtype) for k, v in aux_states.items()}
    return {k: array(v, ctx=ctx, dtype=dtype) for k, v in zip(names, aux_states)}


def check_symbolic_forward(sym, location, expected, rtol=1e-4, atol=None, aux_states=None,
                           ctx=None, equal_nan=False, dtype=np.float32):
    """Bind with `location`, run forward(is_train=False), compare outputs with `expected`."""
    ctx = ctx or default_context()
    args = _as_arg_dict(sym, location, ctx, dtype)
    exe = sym.bind(ctx, args, aux_states=_aux_dict(sym, aux_states, ctx, dtype))
    outputs = exe.forward(is_train=False)
    if isinstance(expected, dict):
        expected = [expected[k] for k in sym.list_outputs()]
    for name, out, exp in zip(sym.list_outputs(), outputs, expected):
        assert_almost_equal(out, exp, rtol, atol, ('output %s' % name, 'expected'), equal_nan)
    return [o.asnumpy() for o in outputs]


def check_symbolic_backward(sym, location, out_grads, expected, rtol=1e-5, atol=None,
                            aux_states=None, grad_req='write', ctx=None, grad_stypes=None,
                            equal_nan=False, dtype=np.float32):
    """Bind, forward(is_train=True), backward(out_grads); compare gradients with `expected`."""
    ctx = ctx or default_context()
    args = _as_arg_dict(sym, location, ctx, dtype)
    names = sym.list_arguments()
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(names, expected))
    grads = {k: array(np.random.normal(size=args[k].shape), ctx=ctx, dtype=args[k].dtype)
             for k in expected}
    if isinstance(grad_req, str):
        grad_req = {k: grad_req if k in expected else 'null' for k in names}
    initial = {k: g.asnumpy() for k, g in grads.items()}
    exe = sym.bind(ctx, args, args_grad=grads, grad_req=grad_req,
                   aux_states=_aux_dict(sym, aux_states, ctx, dtype))
    exe.forward(is_train=True)
    if isinstance(out_grads, (list, tuple)):
        out_grads = [array(g, ctx=ctx, dtype=dtype) for g in out_grads]
    elif isinstance(out_grads, dict):
        out_grads = {k: array(v, ctx=ctx, dtype=dtype) for k, v in out_grads.items()}
    elif out_grads is not None:
        out_grads = array(out_grads, ctx=ctx, dtype=dtype)
    exe.backward(out_grads)
    for name, exp in expected.items():
        req = grad_req.get(name, 'null')
        got = exe.grad_dict[name].asnumpy()
        if req == 'add':
            exp = np.asarray(_np(exp)) + initial[name]
        elif req == 'null':
            exp = initial[name]
        assert_almost_equal(got, exp, rtol, atol, ('gradient of %s' % name, 'expected'),
                            equal_nan)
    return {k: exe.grad_dict[k].asnumpy() for k in expected}


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=1e-3, rtol=1e-2,
                           atol=None, grad_nodes=None, use_forward_train=True, ctx=None,
                           grad_stype_dict=None, dtype=np.float32):
    """Compare symbolic gradients with central differences of sum(outputs * random projection)."""
    ctx = ctx or default_context()
    args = _as_arg_dict(sym, location, ctx, dtype)
    names = sym.list_arguments()
    if grad_nodes is None:
        grad_nodes = [k for k in names if args[k]._tensor.dtype.is_floating_point]
    elif isinstance(grad_nodes, dict):
        grad_nodes = list(grad_nodes)
    aux = _aux_dict(sym, aux_states, ctx, dtype)
    grads = {k: array(np.zeros(args[k].shape), ctx=ctx, dtype=args[k].dtype) for k in grad_nodes}
    exe = sym.bind(ctx, args, args_grad=grads, grad_req={k: 'write' for k in grad_nodes},
                   aux_states=aux)
    outputs = exe.forward(is_train=use_forward_train)
    projections = [np.random.normal(0, 0.01, size=o.shape).astype(np.float64) for o in outputs]
    head_kinds = [n.op.head_grad(n.params) if n.op is not None else 'required'
                  for n, _ in sym._entries]
    if any(k == 'ignored' for k in head_kinds):
        raise MXNetError('check_numeric_gradient needs outputs without custom loss gradients; '
                         'compare loss operators with check_symbolic_backward')
    exe.backward([array(p, ctx=ctx, dtype=o.dtype) for p, o in zip(projections, outputs)])
    symbolic = {k: exe.grad_dict[k].asnumpy().astype(np.float64) for k in grad_nodes}

    def loss():
        outs = exe.forward(is_train=use_forward_train)
        return sum(float((o.asnumpy().astype(np.float64) * p).sum())
                   for o, p in zip(outs, projections))

    for name in grad_nodes:
        tensor = args[name]._tensor
        flat = tensor.view(-1)
        numeric = np.zeros(flat.numel())
        for i in range(flat.numel()):
            old = flat[i].item()
            with torch.no_grad():
                flat[i] = old + numeric_eps / 2
            up = loss()
            with torch.no_grad():
                flat[i] = old - numeric_eps / 2
            down = loss()
            with torch.no_grad():
                flat[i] = old
            numeric[i] = (up - down) / numeric_eps
        assert_almost_equal(numeric.reshape(tensor.shape), symbolic[name], rtol,
                            atol if atol is not None else 1e-4,
                            ('numeric gradient of %s' % name, 'symbolic'))


def simple_forward(sym, ctx=None, is_train=False, **inputs):
    """Outputs (numpy) of binding `sym` to `inputs` and running forward."""
    ctx = ctx or default_context()
    args = {k: array(v, ctx=ctx) for k, v in inputs.items()}
    outputs = sym.bind(ctx, args).forward(is_train=is_train)
    outputs = [o.asnumpy() for o in outputs]
    return outputs[0] if len(outputs) == 1 else outputs


@contextlib.contextmanager
def environment(*args):
    """Temporarily set environment variables: environment('VAR', 'value') or ({'VAR': v})."""
    values = args[0] if len(args) == 1 else {args[0]: args[1]}
    old = {k: os.environ.get(k) for k in values}
    try:
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = str(v)
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

"""mx.test_utils: the checks MXNet users' own tests rely on.

check_symbolic_forward / check_symbolic_backward compare an executor's results with expected
arrays; check_numeric_gradient compares its gradients with central finite differences of a
random projection of the outputs; check_consistency runs one symbol across contexts/dtypes.
Tolerances left as None default by dtype, the looser of the two sides being compared.
"""
import contextlib
import functools
import gzip
import json
import numbers
import os
import sys
import time
import zipfile

import numpy as np
import torch

import mxtorch as mx  # MXNet's test_utils exports `mx` to `from mxnet.test_utils import *`
from .base import MXNetError
from .context import Context, current_context, num_gpus
from .io import DataIter, NDArrayIter
from .ndarray.ndarray import NDArray, array, waitall
from .symbol import Symbol


def default_context():
    return current_context()


def set_default_context(ctx):
    """Make `ctx` this thread's current context (outside `with ctx:` scopes), as in MXNet, so
    arrays created without a ctx land there too."""
    Context._scope.value = ctx


def default_dtype():
    return np.float32


def _np(x):
    if isinstance(x, NDArray):
        return x.asnumpy()
    return np.asarray(x)


_EXACT = {np.dtype(t): 0 for t in (np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32,
                                    np.uint32, np.int64, np.uint64)}


def default_rtols():
    return {**_EXACT, np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4,
            np.dtype(np.float64): 1e-5}


def default_atols():
    return {**_EXACT, np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3,
            np.dtype(np.float64): 1e-20}


def get_rtol(rtol=None, dtype=np.dtype(np.float64)):
    return default_rtols()[np.dtype(dtype)] if rtol is None else rtol


def get_atol(atol=None, dtype=np.dtype(np.float64)):
    return default_atols()[np.dtype(dtype)] if atol is None else atol


def effective_dtype(dat):
    """The dtype whose precision `dat` really has: float32 results on a GPU of compute
    capability 8.0 or newer count as float16 while torch lets cuDNN or matmuls use TF32."""
    dtype = np.dtype(dat.dtype) if hasattr(dat, 'dtype') else np.asarray(dat).dtype
    ctx = getattr(dat, 'context', None)
    if (dtype == np.float32 and ctx is not None and ctx.device_type == 'gpu'
            and torch.cuda.get_device_capability(ctx.device_id)[0] >= 8
            and (torch.backends.cudnn.allow_tf32 or torch.backends.cuda.matmul.allow_tf32)):
        return np.dtype(np.float16)
    return dtype


def get_tolerance(dat, tol, default_tol):
    """`tol` if it is a number; else the entry of the dict `tol` (or of `default_tol`) for the
    effective dtype of `dat`."""
    if isinstance(tol, numbers.Number):
        return tol
    dtype = effective_dtype(dat)
    table = {**default_tol, **(tol or {})}
    if dtype not in table:
        raise TypeError('no default tolerance for dtype %s; pass rtol and atol' % dtype)
    return table[dtype]


def get_tols(x, y, rtol, atol):
    """(rtol, atol) for comparing x with y: the looser of the two sides' tolerances."""
    return (max(get_tolerance(x, rtol, default_rtols()), get_tolerance(y, rtol, default_rtols())),
            max(get_tolerance(x, atol, default_atols()), get_tolerance(y, atol, default_atols())))


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True):
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _np(a), _np(b)
    if not use_broadcast and a.shape != b.shape:
        return False
    return np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def assert_almost_equal(a, b, rtol=None, atol=None, names=('a', 'b'), equal_nan=False,
                        use_broadcast=True, mismatches=(10, 10)):
    """Raise AssertionError showing the worst elements when a and b differ beyond tolerance."""
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _np(a), _np(b)
    if not use_broadcast and a.shape != b.shape:
        raise AssertionError('%s shape %s != %s shape %s' % (names[0], a.shape, names[1], b.shape))
    if np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    a64, b64 = np.broadcast_arrays(a.astype(np.float64), b.astype(np.float64))
    err = np.abs(a64 - b64) / (atol + rtol * np.abs(b64))
    err = np.where(np.isnan(err), np.inf, err)
    worst = tuple(int(i) for i in np.unravel_index(np.argmax(err), err.shape)) if err.size else ()
    raise AssertionError(
        'Items are not equal (rtol=%g, atol=%g): error %g at %s, %s=%r, %s=%r\n %s: %s\n %s: %s'
        % (rtol, atol, err[worst] if err.size else 0, worst, names[0],
           float(a64[worst]) if err.size else None, names[1],
           float(b64[worst]) if err.size else None,
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


def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False):
    low = 0 if allow_zero_size else 1
    return int(np.random.randint(low, dim0 + 1)), int(np.random.randint(low, dim1 + 1))


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False):
    low = 0 if allow_zero_size else 1
    return tuple(int(np.random.randint(low, d + 1)) for d in (dim0, dim1, dim2))


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    low = 0 if allow_zero_size else 1
    return tuple(np.random.randint(low, dim + 1, size=num_dim).tolist())


def rand_ndarray(shape, stype='default', density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices=False, distribution=None, ctx=None):
    """A dense array of standard normal values (then zeroed outside `density`, then passed
    through modifier_func when given)."""
    if stype != 'default':
        raise MXNetError('mxtorch supports only dense (default) storage, asked for %s' % stype)
    values = np.random.normal(size=shape)
    if density is not None:
        values = values * (np.random.uniform(size=shape) < density)
    if modifier_func is not None:
        values = modifier_func(values)
    return array(values, ctx=ctx or default_context(), dtype=dtype or np.float32)


def random_arrays(*shapes):
    """Standard normal float32 arrays of the given shapes (one array for one shape)."""
    arrays = [np.array(np.random.randn(*s), dtype=np.float32) for s in shapes]
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


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None,
                           ctx=None, equal_nan=False, dtype=np.float32):
    """Bind with `location`, run forward(is_train=False), compare outputs with `expected`.
    Returns the executor's outputs (NDArrays, as MXNet does)."""
    ctx = ctx or default_context()
    args = _as_arg_dict(sym, location, ctx, dtype)
    exe = sym.bind(ctx, args, aux_states=_aux_dict(sym, aux_states, ctx, dtype))
    outputs = exe.forward(is_train=False)
    if isinstance(expected, dict):
        expected = [expected[k] for k in sym.list_outputs()]
    for name, out, exp in zip(sym.list_outputs(), outputs, expected):
        assert_almost_equal(out, exp, rtol, atol, ('output %s' % name, 'expected'), equal_nan)
    return list(outputs)


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None,
                            aux_states=None, grad_req='write', ctx=None, grad_stypes=None,
                            equal_nan=False, dtype=np.float32):
    """Bind, forward(is_train=True), backward(out_grads); compare gradients with `expected`.
    Returns {argument name: its gradient NDArray} for the compared arguments, as MXNet does."""
    ctx = ctx or default_context()
    args = _as_arg_dict(sym, location, ctx, dtype)
    names = sym.list_arguments()
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(names, expected))
    grads = {k: array(np.random.normal(size=args[k].shape), ctx=ctx, dtype=args[k].dtype)
             for k in expected}
    if isinstance(grad_req, str):
        grad_req = {k: grad_req if k in expected else 'null' for k in names}
    elif isinstance(grad_req, (list, tuple)):
        grad_req = dict(zip(names, grad_req))
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
    return {k: exe.grad_dict[k] for k in expected}


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None,
                           atol=None, grad_nodes=None, use_forward_train=True, ctx=None,
                           grad_stype_dict=None, dtype=np.float32):
    """Compare symbolic gradients with central differences of sum(outputs * random projection).

    Defaults: numeric_eps 1e-3, rtol 1e-2, atol 1e-4.
    """
    ctx = ctx or default_context()
    numeric_eps = 1e-3 if numeric_eps is None else numeric_eps
    rtol = 1e-2 if rtol is None else rtol
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
    if any(k in ('ignored', 'ones') for k in head_kinds):
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


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True):
    assert_almost_equal(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)


def compare_ndarray_tuple(t1, t2, rtol=None, atol=None):
    """assert_almost_equal over two equally nested tuples of arrays (None skips)."""
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for a, b in zip(t1, t2):
            compare_ndarray_tuple(a, b, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def same_array(array1, array2):
    """Whether array2 shares array1's memory: a write into array1 shows up in array2."""
    saved = array1.asnumpy()
    array1[:] = saved + 1
    try:
        shared = same(array1, array2)
    finally:
        array1[:] = saved
    return shared and same(array1, array2)


def same_symbol_structure(sym1, sym2):
    """Whether the two graphs run the same operators node by node."""
    nodes1 = json.loads(sym1.tojson())['nodes']
    nodes2 = json.loads(sym2.tojson())['nodes']
    return all(n1['op'] == n2['op'] for n1, n2 in zip(nodes1, nodes2))


def np_reduce(dat, axis, keepdims, numpy_reduce_func):
    """Reduce `dat` with a NumPy function that takes one int axis, over any set of axes."""
    if axis is None:
        axes = list(range(dat.ndim))
    else:
        axes = [axis] if isinstance(axis, int) else list(axis)
        axes = [a % dat.ndim for a in axes]
    out = dat
    for a in sorted(axes, reverse=True):
        out = numpy_reduce_func(out, axis=a)
    if keepdims:
        out = np.reshape(out, [1 if i in axes else d for i, d in enumerate(dat.shape)])
    return out


def random_uniform_arrays(*shapes, low=0.0, high=1.0, dtype=None):
    """A list of arrays uniform in [low, high) of the given shapes (float32 by default)."""
    return [np.random.uniform(low, high, size=s).astype(dtype or default_dtype())
            for s in shapes]


def random_sample(population, k):
    """k distinct elements of the sequence `population`, in random order."""
    if not 0 <= k <= len(population):
        raise ValueError('cannot sample %d elements from %d' % (k, len(population)))
    return [population[i] for i in np.random.permutation(len(population))[:k]]


def rand_coord_2d(x_low, x_high, y_low, y_high):
    return (np.random.randint(x_low, x_high, dtype=np.int64),
            np.random.randint(y_low, y_high, dtype=np.int64))


def list_gpus():
    """The ids of the visible GPUs: range(number of GPUs)."""
    return range(num_gpus())


def _loosest(tol, arrays, defaults):
    return max(get_tolerance(a, tol, defaults) for a in arrays)


def check_consistency(sym, ctx_list, scale=1.0, grad_req='write', arg_params=None,
                      aux_params=None, rtol=None, atol=None, raise_on_err=True,
                      ground_truth=None, equal_nan=False, use_uniform=False,
                      rand_type=np.float64, *, tol=None):
    """Check that `sym` computes the same on every entry of ctx_list.

    Each entry is a dict of simple_bind's keyword arguments: 'ctx', input shapes by argument
    name and optionally 'type_dict' (argument name -> dtype). `sym` may also be a list with
    one symbol per entry (same arguments and outputs). Arguments missing from arg_params are
    drawn at random in sorted name order -- normal with std `scale`, or uniform in
    [-scale, scale) with use_uniform -- cast to rand_type and added to the given arg_params
    dict (as MXNet does, so that a second call can reuse them); aux states missing from
    aux_params are 0. Every executor then runs forward(is_train=False), and unless grad_req is
    'null', forward(is_train=True) and backward with one set of head gradients (the first
    executor's outputs in the least precise output dtype).

    Outputs and gradients are compared with `ground_truth` (name -> array, or None for a
    gradient not computed) when given, else with the executor whose first output is the most
    precise (not compared with itself). rtol and atol (numbers or dtype -> number dicts)
    default by dtype, the loosest of the two sides and, for gradients, of the two executors'
    first outputs. `tol` (MXNet <= 1.6) sets both. A mismatch raises AssertionError, or is
    printed when raise_on_err is False.

    Returns the ground truth: output and gradient arrays by name.
    """
    if tol is not None:
        rtol = tol if rtol is None else rtol
        atol = tol if atol is None else atol
    if len(ctx_list) < 2:
        raise ValueError('check_consistency needs at least two ctx_list entries, got %d'
                         % len(ctx_list))
    syms = [sym] * len(ctx_list) if isinstance(sym, Symbol) else list(sym)
    if len(syms) != len(ctx_list):
        raise ValueError('%d symbols for %d ctx_list entries' % (len(syms), len(ctx_list)))
    arg_names, out_names = syms[0].list_arguments(), syms[0].list_outputs()
    exes = []
    for i, (s, entry) in enumerate(zip(syms, ctx_list)):
        if s.list_arguments() != arg_names or s.list_outputs() != out_names:
            raise ValueError('symbol %d has arguments %s and outputs %s; symbol 0 has %s and %s'
                             % (i, s.list_arguments(), s.list_outputs(), arg_names, out_names))
        kwargs = dict(entry)
        if 'ctx' not in kwargs:
            raise ValueError('ctx_list[%d] has no "ctx"' % i)
        exes.append(s.simple_bind(kwargs.pop('ctx'), grad_req=grad_req, **kwargs))

    arg_params = {} if arg_params is None else arg_params
    for name in sorted(exes[0].arg_dict):
        if name not in arg_params:
            shape = exes[0].arg_dict[name].shape
            values = (np.random.uniform(-scale, scale, shape) if use_uniform
                      else np.random.normal(0, scale, shape))
            arg_params[name] = np.asarray(values).astype(rand_type)
    aux_params = aux_params or {}
    for exe in exes:
        for name, arr in exe.arg_dict.items():
            arr[:] = arg_params[name]
        for name, arr in exe.aux_dict.items():
            arr[:] = aux_params.get(name, 0)

    firsts = [exe.outputs[0] for exe in exes]
    gt_idx = int(np.argmax([np.dtype(o.dtype).itemsize for o in firsts]))
    truth = ground_truth if ground_truth is not None else dict(exes[gt_idx].output_dict)
    compared = [i for i in range(len(exes)) if ground_truth is not None or i != gt_idx]

    def compare(phase, i, name, got, tol_arrays):
        if name not in truth:
            raise ValueError('ground_truth has no %s (it has %s)' % (name, sorted(truth)))
        want = truth[name]
        if want is None:
            return
        rt = _loosest(rtol, [got, want] + tol_arrays, default_rtols())
        at = _loosest(atol, [got, want] + tol_arrays, default_atols())
        try:
            assert_almost_equal(got, want, rt, at, ('ctx_list[%d]' % i, 'ground truth'),
                                equal_nan)
        except AssertionError as err:
            msg = ('check_consistency: %s %s of ctx_list[%d] (%s, %s) differs from %s:\n%s'
                   % (phase, name, i, ctx_list[i]['ctx'], np.dtype(got.dtype).name,
                      'the given ground truth' if ground_truth is not None else
                      'ctx_list[%d] (%s, %s)' % (gt_idx, ctx_list[gt_idx]['ctx'],
                                                  np.dtype(firsts[gt_idx].dtype).name), err))
            if raise_on_err:
                raise AssertionError(msg) from None
            print(msg)

    for exe in exes:
        exe.forward(is_train=False)
    for i in compared:
        for name, out in zip(out_names, exes[i].outputs):
            compare('forward output', i, name, out, [])

    reqs = grad_req.values() if isinstance(grad_req, dict) else \
        [grad_req] if isinstance(grad_req, str) else grad_req
    if all(r == 'null' for r in reqs):
        return truth
    if ground_truth is None:
        truth = dict(truth, **exes[gt_idx].grad_dict)
    for exe in exes:
        exe.forward(is_train=True)
    heads = []
    for k in range(len(out_names)):
        least = min((exe.outputs[k].dtype for exe in exes), key=lambda d: np.dtype(d).itemsize)
        heads.append(exes[0].outputs[k].asnumpy().astype(least))
    for exe in exes:
        exe.backward([array(h, ctx=out.context, dtype=out.dtype)
                      for h, out in zip(heads, exe.outputs)])
    for i in compared:
        primary = [firsts[i], firsts[gt_idx]]
        for name, out in zip(out_names, exes[i].outputs):
            compare('training output', i, name, out, primary)
        for name, grad in zip(arg_names, exes[i].grad_arrays):
            if grad is not None:
                compare('gradient of', i, name, grad, primary)
    return truth


def check_speed(sym, location=None, ctx=None, N=20, grad_req=None, typ='whole', **kwargs):
    """Seconds per forward+backward (typ='whole') or per forward (typ='forward') of `sym`,
    averaged over N runs after one warm-up; inputs from `location` (name -> array) or random
    normal of the shapes given as keyword arguments."""
    if typ not in ('whole', 'forward'):
        raise ValueError('typ can only be "whole" or "forward", got %r' % typ)
    ctx = ctx or default_context()
    if location is not None:
        kwargs = {k: v.shape for k, v in location.items()}
    exe = sym.simple_bind(ctx, grad_req=grad_req or 'write', **kwargs)
    if location is None:
        location = {k: np.random.normal(size=a.shape) for k, a in exe.arg_dict.items()}
    for name, value in location.items():
        exe.arg_dict[name][:] = value

    def step():
        if typ == 'whole':
            exe.forward(is_train=True)
            exe.backward(out_grads=exe.outputs)
        else:
            exe.forward(is_train=False)
    step()
    waitall()
    start = time.time()
    for _ in range(N):
        step()
    waitall()
    return (time.time() - start) / N


def retry(n):
    """Decorator for stochastic tests: run up to n times until no AssertionError is raised."""
    if n < 1:
        raise ValueError('retry needs n >= 1, got %d' % n)

    def decorate(test):
        @functools.wraps(test)
        def wrapper(*args, **kwargs):
            for attempt in range(n):
                try:
                    return test(*args, **kwargs)
                except AssertionError:
                    if attempt == n - 1:
                        raise
        return wrapper
    return decorate


@contextlib.contextmanager
def discard_stderr():
    """Send whatever is written to file descriptor 2 inside the block to os.devnull."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, 'w') as devnull:
            os.dup2(devnull.fileno(), 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)


class DummyIter(DataIter):
    """Serves the first batch of `real_iter` forever (to time training without data loading)."""

    def __init__(self, real_iter):
        super().__init__(real_iter.batch_size)
        self.real_iter = real_iter
        self.provide_data = real_iter.provide_data
        self.provide_label = real_iter.provide_label
        self.the_batch = next(real_iter)

    def next(self):
        return self.the_batch


# ---- random number generator checks -------------------------------------------------------------
def gen_buckets_probs_with_ppf(ppf, nbuckets):
    """nbuckets equally likely (low, high) buckets cut by the quantile function ppf, and their
    probabilities, for chi_square_check."""
    if nbuckets < 1:
        raise ValueError('nbuckets must be positive, got %d' % nbuckets)
    edges = [ppf(i / nbuckets) for i in range(nbuckets + 1)]
    return list(zip(edges[:-1], edges[1:])), [1.0 / nbuckets] * nbuckets


def chi_square_check(generator, buckets, probs, nsamples=1000000):
    """Pearson's chi-square test of generator(nsamples) against bucket probabilities.

    buckets are (low, high) ranges (low <= x < high) for a continuous distribution, or the
    possible values of a discrete one. Returns (p value, observed counts, expected counts).
    """
    if len(buckets) != len(probs):
        raise ValueError('%d buckets but %d probabilities' % (len(buckets), len(probs)))
    samples = np.asarray(generator(nsamples)).ravel()
    if isinstance(buckets[0], (list, tuple)):
        observed = np.array([((samples >= lo) & (samples < hi)).sum() for lo, hi in buckets])
    else:
        observed = np.array([(samples == value).sum() for value in buckets])
    expected = nsamples * np.asarray(probs, dtype=np.float64)
    statistic = float(((observed - expected) ** 2 / expected).sum())
    dof = torch.tensor((len(buckets) - 1) / 2, dtype=torch.float64)
    p = float(torch.special.gammaincc(dof, torch.tensor(statistic / 2, dtype=torch.float64)))
    return p, observed, expected


def verify_generator(generator, buckets, probs, nsamples=1000000, nrepeat=5, success_rate=0.2,
                     alpha=0.05):
    """Run chi_square_check nrepeat times; raise AssertionError unless the p value exceeds
    alpha in at least success_rate of the runs. Returns the p values."""
    results = [chi_square_check(generator, buckets, probs, nsamples) for _ in range(nrepeat)]
    p_values = [r[0] for r in results]
    if sum(p > alpha for p in p_values) < nrepeat * success_rate:
        raise AssertionError('generator failed the chi-square test: p values %s (alpha %g), '
                             'observed %s, expected %s, buckets %s'
                             % (p_values, alpha, [r[1].tolist() for r in results],
                                results[0][2].tolist(), buckets))
    return p_values


def mean_check(generator, mu, sigma, nsamples=1000000):
    """Whether the sample mean lies within 3 standard errors of mu."""
    mean = np.asarray(generator(nsamples)).mean()
    return bool(abs(mean - mu) < 3 * sigma / np.sqrt(nsamples))


def var_check(generator, sigma, nsamples=1000000):
    """Whether the sample variance lies within 3 standard errors of sigma ** 2."""
    var = np.asarray(generator(nsamples)).var(ddof=1)
    return bool(abs(var - sigma ** 2) < 3 * np.sqrt(2 * sigma ** 4 / (nsamples - 1)))


# ---- data files ---------------------------------------------------------------------------------
_MNIST_URL = 'http://data.mxnet.io/data/mnist/'
_MNIST_ZIP_URL = 'http://data.mxnet.io/mxnet/data/mnist.zip'
_MNIST_FILES = ('train-images-idx3-ubyte', 'train-labels-idx1-ubyte', 't10k-images-idx3-ubyte',
                't10k-labels-idx1-ubyte')


def download(url, fname=None, dirname=None, overwrite=False, retries=5):
    """The local copy of `url`: fname (default: the URL's last part), inside dirname if given.

    mxtorch does not use the network: an existing file is returned (unless overwrite) as MXNet
    does; otherwise ConnectionError says where to put the file. `retries` is accepted for
    MXNet's signature.
    """
    fname = fname or url.split('/')[-1]
    if dirname is not None:
        fname = os.path.join(dirname, fname)
    if os.path.exists(fname) and not overwrite:
        return fname
    raise ConnectionError('mxtorch.test_utils.download does not use the network; download %s '
                          'yourself and save it as %s' % (url, os.path.abspath(fname)))


def _read_idx(f):
    """An array from an IDX file (MNIST's format): zero, zero, dtype code, ndim, dims."""
    magic = f.read(4)
    if magic[:3] != b'\x00\x00\x08':
        raise MXNetError('not an IDX file of unsigned bytes (magic %r)' % magic)
    dims = np.frombuffer(f.read(4 * magic[3]), dtype='>u4')
    return np.frombuffer(f.read(), dtype=np.uint8).reshape(dims)


def get_mnist():
    """MNIST as {'train_data', 'train_label', 'test_data', 'test_label'}: images (N, 1, 28, 28)
    float32 in [0, 1], labels int8, from the four .gz files in the current directory
    (see `download`)."""
    out = {}
    for part, prefix in (('train', 'train'), ('test', 't10k')):
        with gzip.open(download(_MNIST_URL + prefix + '-images-idx3-ubyte.gz')) as f:
            images = _read_idx(f)
        with gzip.open(download(_MNIST_URL + prefix + '-labels-idx1-ubyte.gz')) as f:
            labels = _read_idx(f)
        out[part + '_data'] = images.reshape(-1, 1, 28, 28).astype(np.float32) / 255
        out[part + '_label'] = labels.astype(np.int8)
    return out


def get_mnist_ubyte():
    """Make sure data/ holds MNIST's four ubyte files, extracting data/mnist.zip if needed."""
    if all(os.path.exists(os.path.join('data', f)) for f in _MNIST_FILES):
        return
    os.makedirs('data', exist_ok=True)
    with zipfile.ZipFile(download(_MNIST_ZIP_URL, dirname='data')) as archive:
        archive.extractall('data')


def get_mnist_iterator(batch_size, input_shape, num_parts=1, part_index=0):
    """(train, validation) NDArrayIters over the MNIST ubyte files in data/: images in [0, 1]
    shaped (batch,) + input_shape, labels 'softmax_label'; training batches shuffled."""
    get_mnist_ubyte()
    iters = []
    for prefix, shuffle in (('train', True), ('t10k', False)):
        with open(os.path.join('data', prefix + '-images-idx3-ubyte'), 'rb') as f:
            images = _read_idx(f).astype(np.float32) / 255
        with open(os.path.join('data', prefix + '-labels-idx1-ubyte'), 'rb') as f:
            labels = _read_idx(f).astype(np.float32)
        iters.append(NDArrayIter(images.reshape((-1,) + tuple(input_shape)), labels, batch_size,
                                 shuffle=shuffle, num_parts=num_parts, part_index=part_index))
    return tuple(iters)


def peak_tensor_bytes(workload):
    """Peak of live tensor memory while `workload()` runs, counting the allocations made inside
    it (torch profiler's allocation events, summed in time order)."""
    import gc
    from torch.profiler import ProfilerActivity, profile
    gc.collect()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        workload()
        gc.collect()
    events = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events()
                    if e.name() == '[memory]')
    live = peak = 0
    for _, nbytes in events:
        live += nbytes
        peak = max(peak, live)
    return peak


def is_aarch64_run():
    """Whether this process runs on an aarch64 (ARM64) machine."""
    import platform
    return platform.machine() == 'aarch64'

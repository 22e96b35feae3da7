"""mx.test_utils: the checks MXNet users' own tests rely on.

check_symbolic_forward / check_symbolic_backward compare an executor's results with expected
arrays; check_numeric_gradient compares its gradients with central finite differences of a
random projection of the outputs; check_consistency runs one symbol across contexts/dtypes.
Tolerances left as None default by dtype, the looser of the two sides being compared.
"""
import bz2
import contextlib
import errno
import functools
import gzip
import json
import logging
import numbers
import os
import platform
import struct
import sys
import time
import traceback
import urllib.request
import zipfile
from collections import OrderedDict
from contextlib import contextmanager

import numpy as np
import numpy.random as rnd
import numpy.testing as npt
import torch
try:
    import scipy.stats as ss
except ImportError:
    ss = None

import mxtorch as mx  # MXNet's test_utils exports `mx` to `from mxnet.test_utils import *`

from .base import MXNetError
from .context import Context, current_context, num_gpus
from .io import DataIter, NDArrayIter
from .ndarray.ndarray import NDArray, array, waitall
from .symbol import Symbol
from .runtime import Features
from .util import use_np, getenv, setenv, get_cuda_compute_capability  # noqa: F401 (MXNet's)

# MXNet's storage type ids
_STORAGE_TYPE_STR_TO_ID = {'undefined': -1, 'default': 0, 'row_sparse': 1, 'csr': 2}


def default_context():
    return current_context()


def set_default_context(ctx):
    """Make `ctx` this thread's current context (outside `with ctx:` scopes), as in MXNet, so
    arrays created without a ctx land there too."""
    Context._scope.value = ctx


def default_dtype():
    return np.float32


def default_numeric_eps():
    """Finite-difference step by dtype: powers of two, exact as input deltas."""
    return {np.dtype(np.float16): 2.0 ** -6, np.dtype(np.float32): 2.0 ** -9,
            np.dtype(np.float64): 2.0 ** -14}


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


def get_etol(etol=None):
    """The tolerated fraction of mismatching elements (default 0)."""
    return 0 if etol is None else etol


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
    """A random array: dense standard normal values for stype 'default' (density and
    modifier_func apply to sparse storage only, as in MXNet), else rand_sparse_ndarray's."""
    if stype == 'default':
        return array(random_arrays(shape), ctx=ctx or default_context(), dtype=dtype)
    arr, _ = rand_sparse_ndarray(shape, stype, density=density, modifier_func=modifier_func,
                                 dtype=dtype, shuffle_csr_indices=shuffle_csr_indices,
                                 distribution=distribution, ctx=ctx)
    return arr


def random_arrays(*shapes):
    """Standard normal float32 arrays of the given shapes (one array for one shape)."""
    arrays = [np.array(np.random.randn(*s), dtype=default_dtype()) for s in shapes]
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
    # as MXNet: NumPy arrays take `dtype` (integer ones too), NDArrays keep theirs
    return {k: array(v, ctx=ctx, dtype=v.dtype if isinstance(v, NDArray) else
                     _dtype_for(v, dtype))
            for k, v in items}


def _dtype_for(value, dtype):
    """`dtype`, or the value's own dtype where the caller passed dtype='asnumpy' (MXNet's way of
    saying: keep each given array's dtype)."""
    if isinstance(dtype, str) and dtype == 'asnumpy':
        return value.dtype if hasattr(value, 'dtype') else np.asarray(value).dtype
    return dtype


def _aux_dict(sym, aux_states, ctx, dtype):
    names = sym.list_auxiliary_states()
    if aux_states is None:
        return None
    if isinstance(aux_states, dict):
        return {k: array(v, ctx=ctx, dtype=_dtype_for(v, dtype)) for k, v in aux_states.items()}
    return {k: array(v, ctx=ctx, dtype=_dtype_for(v, dtype)) for k, v in zip(names, aux_states)}


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
    if grad_stypes:                 # gradients stored sparse where asked
        grads = {k: g.tostype(grad_stypes.get(k, 'default')) for k, g in grads.items()}
    if isinstance(grad_req, str):
        grad_req = {k: grad_req if k in expected else 'null' for k in names}
    elif isinstance(grad_req, (list, tuple)):
        grad_req = dict(zip(names, grad_req))
    initial = {k: g.asnumpy() for k, g in grads.items()}
    exe = sym.bind(ctx, args, args_grad=grads, grad_req=grad_req,
                   aux_states=_aux_dict(sym, aux_states, ctx, dtype))
    exe.forward(is_train=True)
    if isinstance(out_grads, (list, tuple)):
        out_grads = [array(g, ctx=ctx, dtype=_dtype_for(g, dtype)) for g in out_grads]
    elif isinstance(out_grads, dict):
        out_grads = {k: array(v, ctx=ctx, dtype=_dtype_for(v, dtype))
                     for k, v in out_grads.items()}
    elif out_grads is not None:
        out_grads = array(out_grads, ctx=ctx, dtype=_dtype_for(out_grads, dtype))
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
    elif isinstance(grad_nodes, dict):     # {name: grad_req}: 'null' ones are not checked
        grad_nodes = [k for k, req in grad_nodes.items() if req != 'null']
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
    samples = np.sort(np.asarray(generator(nsamples)).ravel())   # (NaNs last, never counted)
    # bounds compared in the samples' float type, as `samples >= lo` with a Python float is
    like = samples.dtype if samples.dtype.kind == 'f' else None
    if isinstance(buckets[0], (list, tuple)):       # count lo <= x < hi by bisection
        lows, highs = (np.array([b[k] for b in buckets], dtype=like) for k in (0, 1))
        observed = np.maximum(np.searchsorted(samples, highs, 'left')
                              - np.searchsorted(samples, lows, 'left'), 0)
    else:                                           # count x == value
        values = np.array(buckets, dtype=like)
        observed = np.searchsorted(samples, values, 'right') - np.searchsorted(samples, values,
                                                                                'left')
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
    """Fetch `url` into fname (default: the URL's last part), inside dirname if given (created
    when missing); returns the file's path.

    An existing file is kept unless overwrite. Otherwise the URL is fetched, with up to
    `retries` further attempts; if it cannot be (no network, say), the error names the file to
    place there by hand, so that everything built on download also works offline.
    """
    if retries < 0:
        raise ValueError('Number of retries should be at least 0, got %d' % retries)
    fname = fname or url.split('/')[-1]
    if dirname is None:
        dirname = os.path.dirname(fname)
    else:
        fname = os.path.join(dirname, fname)
    if dirname:
        os.makedirs(dirname, exist_ok=True)
    if os.path.exists(fname) and not overwrite:
        logging.info('%s exists, skipping download', fname)
        return fname
    for attempt in range(retries + 1):
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                if getattr(response, 'status', 200) != 200:
                    raise OSError('HTTP status %s for %s' % (response.status, url))
                data = response.read()
            break
        except Exception as err:  # pylint: disable=broad-except
            if attempt >= retries - 1:
                raise ConnectionError(
                    'could not download %s (%s: %s); to work offline, fetch it yourself and '
                    'save it as %s' % (url, type(err).__name__, err, os.path.abspath(fname))
                    ) from err
            left = retries - attempt - 1
            print('download failed, retrying, %d attempt%s left' % (left, 's' if left > 1 else ''))
    with open(fname, 'wb') as f:
        f.write(data)
    logging.info('downloaded %s into %s successfully', url, fname)
    return fname


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
    """(train, validation) MNISTIters over the MNIST ubyte files in data/, as MXNet: images
    flat (784,) unless input_shape has 3 dims, whole batches only (a last partial batch is
    dropped), both shuffled (MNISTIter's default)."""
    get_mnist_ubyte()
    flat = len(input_shape) != 3
    from .io import MNISTIter
    return tuple(MNISTIter(image='data/%s-images-idx3-ubyte' % prefix,
                           label='data/%s-labels-idx1-ubyte' % prefix,
                           batch_size=batch_size, flat=flat, num_parts=num_parts,
                           part_index=part_index)
                 for prefix in ('train', 't10k'))


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


# ---- more of MXNet's helpers -------------------------------------------------------------------
def _sorted_items(d):
    """d's (key, value) pairs sorted by key."""
    return sorted(d.items(), key=lambda kv: kv[0])


def _sorted_dict(d):
    """An OrderedDict of d's items sorted by key."""
    return OrderedDict(_sorted_items(d))


def _find_max_violation(a, b, rtol, atol):
    """(index, ratio) of the element of a and b furthest beyond atol + rtol * |b|; equal
    elements (infinities included) count as no violation."""
    a, b = np.broadcast_arrays(_np(a), _np(b))
    diff = np.where(np.equal(a, b), 0, np.abs(a - b))
    ratio = diff / (atol + rtol * np.abs(b) + 1e-20)
    index = np.unravel_index(np.argmax(ratio), ratio.shape)
    return index, np.max(ratio)


def checkShapes(a, b):  # pylint: disable=invalid-name
    """AssertionError unless a and b have the same shape."""
    if a.shape != b.shape:
        raise AssertionError('a.shape = %s and b.shape = %s are not equal' % (a.shape, b.shape))


def locationError(a, b, index, names, maxError=False):  # pylint: disable=invalid-name
    """A line naming the element at `index` of a and b."""
    return 'Location of %serror: %s, %s=%.8f, %s=%.8f' % (
        'maximum ' if maxError else '', index, names[0], a[index], names[1], b[index])


def assert_almost_equal_with_err(a, b, rtol=None, atol=None, etol=None, names=('a', 'b'),
                                 equal_nan=False, mismatches=(10, 10)):
    """Like assert_almost_equal, but with etol > 0 a fraction of up to etol of the elements may
    be outside the tolerance."""
    etol = get_etol(etol)
    if etol <= 0:
        assert_almost_equal(a, b, rtol=rtol, atol=atol, names=names, equal_nan=equal_nan)
        return
    rtol, atol = get_tols(a, b, rtol, atol)
    a, b = _np(a), _np(b)
    close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    rate = 1 - np.count_nonzero(close) / close.size
    if rate > etol:
        index, ratio = _find_max_violation(a, b, rtol, atol)
        raise AssertionError(
            'Error %f exceeds tolerance rtol=%e, atol=%e: %.4f%% of the elements mismatch, more '
            'than etol=%g.\n%s\n %s: %s\n %s: %s'
            % (ratio, rtol, atol, 100 * rate, etol,
               locationError(*np.broadcast_arrays(a, b), index, names, maxError=True),
               names[0], np.array2string(a, threshold=20), names[1],
               np.array2string(b, threshold=20)))


def collapse_sum_like(a, shape):
    """Sum the NumPy array `a` over the axes where `shape` (broadcastable to a.shape) has
    no dimension or a 1, giving an array of `shape`."""
    shape = tuple(shape)
    if a.ndim < len(shape):
        raise ValueError('cannot collapse shape %s to the longer shape %s' % (a.shape, shape))
    if a.size == 0 or int(np.prod(shape)) == 0:
        return np.zeros(shape, dtype=a.dtype)
    lead = a.ndim - len(shape)
    axes = list(range(lead))
    for i, size in enumerate(shape):
        if size != a.shape[lead + i]:
            if size != 1:
                raise ValueError('shape %s is not broadcastable to %s' % (shape, a.shape))
            axes.append(lead + i)
    return np.sum(a, axis=tuple(axes)).reshape(shape)


def is_cd_run():
    """Whether the tests run as part of a continuous-delivery job (CD_JOB=1)."""
    return os.environ.get('CD_JOB', 0) == '1'


_features = Features()


def has_tvm_ops():
    """Whether operators generated by TVM are available: never in mxtorch."""
    return _features.is_enabled('TVM_OP')


def is_op_runnable():
    """Whether the operators of the current context can run: always on CPU; on a GPU unless
    TVM operators would need compute capability 5.3."""
    ctx = current_context()
    if ctx.device_type != 'gpu' or not _features.is_enabled('TVM_OP'):
        return True
    try:
        return get_cuda_compute_capability(ctx) >= 53
    except Exception:  # pylint: disable=broad-except
        return False


def assign_each(the_input, function):
    """A float64 array of function(x) for each element x of the_input (a copy of the_input when
    function is None)."""
    if function is None:
        return np.array(the_input)
    the_input = np.asarray(the_input)
    out = np.zeros(the_input.shape)
    for index in np.ndindex(*the_input.shape):
        out[index] = function(the_input[index])
    return out


def assign_each2(input1, input2, function):
    """A float64 array of function(x, y) for each pair of elements of input1 and input2 (a copy
    of input1 when function is None)."""
    if function is None:
        return np.array(input1)
    input1, input2 = np.asarray(input1), np.asarray(input2)
    if input1.shape != input2.shape:
        raise ValueError('shapes %s and %s differ' % (input1.shape, input2.shape))
    out = np.zeros(input1.shape)
    for index in np.ndindex(*input1.shape):
        out[index] = function(input1[index], input2[index])
    return out


def create_2d_tensor(rows, columns, dtype=np.int64):
    """A (rows, columns) array whose row i is all i (for large-tensor tests)."""
    column = mx.nd.arange(0, rows, dtype=dtype).reshape(rows, 1)
    return mx.nd.broadcast_to(column, shape=(rows, columns))


def create_vector(size, dtype=np.int64):
    """The vector 0, 1, ..., size - 1 (for large-tensor tests)."""
    return mx.nd.arange(0, size, dtype=dtype)


def get_identity_mat(size):
    """The float32 identity matrix of side `size`, as an NDArray."""
    return mx.nd.array(np.eye(size, dtype=np.float32))


def get_identity_mat_batch(size):
    """A batch of two identity matrices of side `size`."""
    eye = np.eye(size, dtype=np.float32)
    return mx.nd.array(np.stack([eye, eye]))


# ---- sparse arrays ------------------------------------------------------------------------------
def _validate_csr_generation_inputs(num_rows, num_cols, density, distribution='uniform'):
    if density < 0 or density > 1:
        raise ValueError('density has to be between 0 and 1, got %s' % density)
    if num_rows <= 0 or num_cols <= 0:
        raise ValueError('num_rows and num_cols must be positive, got (%s, %s)'
                         % (num_rows, num_cols))
    if distribution == 'powerlaw' and int(num_rows * num_cols * density) < 2 * num_rows:
        raise ValueError('not supported for this density: %s for this shape (%s, %s); the '
                         'powerlaw distribution needs num_rows * num_cols * density >= '
                         '2 * num_rows' % (density, num_rows, num_cols))


def shuffle_csr_column_indices(csr):
    """Shuffle, in place, the column indices within each row of a SciPy CSR matrix (valid CSR
    need not have sorted indices)."""
    for row in range(len(csr.indptr) - 1):
        lo, hi = csr.indptr[row], csr.indptr[row + 1]
        part = np.array(csr.indices[lo:hi])
        np.random.shuffle(part)
        csr.indices[lo:hi] = part


def _get_uniform_dataset_csr(num_rows, num_cols, density=0.1, dtype=None, data_init=None,
                             shuffle_csr_indices=False):
    """A CSRNDArray of round(num_rows * num_cols * density) uniformly placed values uniform in
    [0, 1) (or all data_init)."""
    _validate_csr_generation_inputs(num_rows, num_cols, density, 'uniform')
    from scipy import sparse as spsp
    csr = spsp.random(num_rows, num_cols, density, format='csr',
                      dtype=np.dtype(dtype or default_dtype()))
    if data_init is not None:
        csr.data.fill(data_init)
    if shuffle_csr_indices:
        shuffle_csr_column_indices(csr)
    return mx.nd.sparse.csr_matrix((csr.data, csr.indices, csr.indptr),
                                   shape=(num_rows, num_cols), dtype=dtype)


def _get_powerlaw_dataset_csr(num_rows, num_cols, density=0.1, dtype=None):
    """A CSRNDArray whose rows fill up in a power law: every row gets a first value, then row i
    gets values in its first 2 ** (i + 1) columns, until num_rows * num_cols * density values
    are placed. Values are uniform in [1.001, 3)."""
    _validate_csr_generation_inputs(num_rows, num_cols, density, 'powerlaw')
    left = int(num_rows * num_cols * density)
    dense = np.zeros((num_rows, num_cols), dtype=dtype or default_dtype())

    def done():
        return mx.nd.array(dense, dtype=dense.dtype).tostype('csr')
    for row in range(num_rows):
        dense[row, 0] = 1 + rnd.uniform(0.001, 2)
        left -= 1
        if left <= 0:
            return done()
    width = 2
    for row in range(num_rows):
        limit = min(num_cols, width)
        if limit == num_cols and left > limit:
            dense[row] = 1 + rnd.uniform(0.001, 2)
            left -= limit - 1
            if left <= 0:
                return done()
            continue
        for col in range(1, limit):
            dense[row, col] = 1 + rnd.uniform(0.001, 2)
            left -= 1
            if left <= 0:
                return done()
        width *= 2
    if left > 0:
        raise ValueError('not supported for this density: %s for this shape (%s, %s)'
                         % (density, num_rows, num_cols))
    return done()


def rand_sparse_ndarray(shape, stype, density=None, dtype=None, distribution=None,
                        data_init=None, rsp_indices=None, modifier_func=None,
                        shuffle_csr_indices=False, ctx=None):
    """A random sparse array and its parts: (RowSparseNDArray, (values, row indices)) for
    'row_sparse' -- each row kept with probability `density` (or the rows rsp_indices), values
    uniform in [0, 1) -- or (CSRNDArray, (indptr, indices, data)) for 'csr' with a 'uniform' or
    'powerlaw' distribution. data_init fills all values; modifier_func maps each value."""
    ctx = ctx or default_context()
    density = rnd.rand() if density is None else density
    dtype = default_dtype() if dtype is None else dtype
    distribution = distribution or 'uniform'
    if stype == 'row_sparse':
        if distribution != 'uniform':
            raise ValueError('distribution %s is not supported for row_sparse' % distribution)
        if rsp_indices is not None:
            indices = np.asarray(rsp_indices)
            if len(indices) > shape[0]:
                raise ValueError('%d row indices for %d rows' % (len(indices), shape[0]))
        else:
            indices = np.argwhere(rnd.rand(shape[0]) < density).flatten()
        if indices.shape[0] == 0:
            arr = mx.nd.sparse.zeros('row_sparse', shape, ctx=ctx, dtype=dtype)
            return arr, (np.array([], dtype=dtype), np.array([]))
        values = rnd.rand(indices.shape[0], *shape[1:]).astype(dtype)
        if data_init is not None:
            values.fill(data_init)
        if modifier_func is not None:
            values = assign_each(values, modifier_func)
        arr = mx.nd.sparse.row_sparse_array((values, indices), shape=shape, dtype=dtype, ctx=ctx)
        return arr, (values, indices)
    if stype == 'csr':
        if len(shape) != 2:
            raise ValueError('csr arrays are 2-D, got shape %s' % (shape,))
        if distribution == 'uniform':
            csr = _get_uniform_dataset_csr(shape[0], shape[1], density, data_init=data_init,
                                           shuffle_csr_indices=shuffle_csr_indices, dtype=dtype)
        elif distribution == 'powerlaw':
            csr = _get_powerlaw_dataset_csr(shape[0], shape[1], density=density, dtype=dtype)
        else:
            raise ValueError('distribution %s is not supported' % distribution)
        csr = csr.as_in_context(ctx)
        return csr, (csr.indptr, csr.indices, csr.data)
    raise ValueError('unknown storage type %s' % stype)


def create_sparse_array(shape, stype, data_init=None, rsp_indices=None, dtype=None,
                        modifier_func=None, density=.5, shuffle_csr_indices=False):
    """A random sparse array (see rand_sparse_ndarray); row_sparse indices are sorted first."""
    if stype == 'row_sparse':
        indices = None if rsp_indices is None else np.sort(np.asarray(rsp_indices))
        arr, _ = rand_sparse_ndarray(shape, stype, density=density, data_init=data_init,
                                     rsp_indices=indices, dtype=dtype,
                                     modifier_func=modifier_func)
    elif stype == 'csr':
        arr, _ = rand_sparse_ndarray(shape, stype, density=density, data_init=data_init,
                                     dtype=dtype, modifier_func=modifier_func,
                                     shuffle_csr_indices=shuffle_csr_indices)
    else:
        raise AssertionError('Unknown storage type: ' + stype)
    return arr


def create_sparse_array_zd(shape, stype, density, data_init=None, rsp_indices=None,
                           dtype=None, modifier_func=None, shuffle_csr_indices=False):
    """create_sparse_array where a row_sparse array's rows are only those of rsp_indices."""
    if stype == 'row_sparse':
        density = 0.0
        if rsp_indices is not None and len(rsp_indices) > shape[0]:
            raise ValueError('%d row indices for %d rows' % (len(rsp_indices), shape[0]))
    return create_sparse_array(shape, stype, data_init=data_init, rsp_indices=rsp_indices,
                               dtype=dtype, modifier_func=modifier_func, density=density,
                               shuffle_csr_indices=shuffle_csr_indices)


# ---- gradients, optimizers, Gluon ---------------------------------------------------------------
def _parse_location(sym, location, ctx, dtype=default_dtype()):
    """location (a list in argument order, or a dict by name, of arrays) as a dict of NDArrays
    on ctx; float NumPy inputs take `dtype`."""
    return _as_arg_dict(sym, location, ctx, dtype)


def _parse_aux_states(sym, aux_states, ctx, dtype=default_dtype()):
    """aux_states (a list or dict of arrays, or None) as a dict of NDArrays on ctx, or None."""
    if aux_states is not None and not isinstance(aux_states, dict) and \
            len(aux_states) != len(sym.list_auxiliary_states()):
        raise ValueError('Symbol aux_states names and given aux_states do not match: %s vs %d '
                         'arrays' % (sym.list_auxiliary_states(), len(aux_states)))
    return _aux_dict(sym, aux_states, ctx, dtype)


def numeric_grad(executor, location, aux_states=None, eps=1e-4, use_forward_train=True,
                 dtype=default_dtype()):
    """Central finite differences of sum(executor.outputs[0]) with respect to each float
    argument in `location` (name -> NumPy array); returns name -> gradient (NumPy, `dtype`).
    Each argument is restored afterwards."""
    if dtype not in (np.float16, np.float32, np.float64):
        raise ValueError('numeric_grad needs a float dtype, got %s' % dtype)
    for name in location:
        location[name] = np.asarray(location[name], order='C')
        executor.arg_dict[name][:] = location[name].astype(dtype)
    grads = {k: np.zeros(v.shape, dtype=dtype) for k, v in location.items()}

    def total(values, name):
        executor.arg_dict[name][:] = values.astype(dtype)
        for key, val in (aux_states or {}).items():
            executor.aux_dict[key][:] = val
        executor.forward(is_train=use_forward_train)
        return executor.outputs[0].asnumpy()

    for name, values in location.items():
        if values.dtype.kind != 'f':
            continue
        flat = values.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps / 2.0
            up = total(values, name)
            flat[i] = old - eps / 2.0
            down = total(values, name)
            flat[i] = old
            grads[name].reshape(-1)[i] = (up - down).sum() / eps
        executor.arg_dict[name][:] = values.astype(dtype)
    return grads


def compare_optimizer(opt1, opt2, shape, dtype, w_stype='default', g_stype='default',
                      rtol=1e-4, atol=1e-5, compare_states=True, ntensors=1):
    """Update the same random weight with the same random gradient by opt1 and opt2 (one step,
    state created by each) and compare states and weights. With a list of shapes, opt2 updates
    ntensors weights in one multi-tensor call and opt1 each weight on its own."""
    ctx = default_context()

    def uniform(s):
        return mx.random.uniform(shape=s, ctx=ctx, dtype=dtype)
    if not isinstance(shape, list):
        if ntensors != 1:
            raise ValueError('ntensors must be 1 for a single shape')
        arrays = []
        for stype, density in ((w_stype, 1), (g_stype, None)):
            if stype == 'default':
                second = uniform(shape)
                first = second.copyto(ctx)
            elif stype in ('row_sparse', 'csr'):
                second = rand_ndarray(shape, stype, density=density, dtype=dtype)
                first = second.copyto(ctx).tostype('default')
            else:
                raise ValueError('storage type %s is not supported' % stype)
            arrays.append((first, second))
        (w1, w2), (g1, g2) = arrays
        state1 = opt1.create_state_multi_precision(0, w1)
        state2 = opt2.create_state_multi_precision(0, w2)
        if compare_states:
            compare_ndarray_tuple(state1, state2)
        opt1.update_multi_precision(0, w1, g1, state1)
        opt2.update_multi_precision(0, w2, g2, state2)
        if compare_states:
            compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
        assert_almost_equal(w1, w2, rtol=rtol, atol=atol)
        return
    w1, g1 = [], []
    for s in shape:
        w1.append(uniform(s))
        g1.append(uniform(s))
    w2 = tuple(w.copy() for w in w1)
    g2 = tuple(g.copy() for g in g1)
    state2 = [opt2.create_state_multi_precision(0, w2[i]) for i in range(ntensors)]
    opt2.update_multi_precision(list(range(ntensors)), w2, g2, state2)
    for i in range(ntensors):
        state1 = opt1.create_state_multi_precision(i, w1[i])
        opt1.update_multi_precision(i, w1[i], g1[i], state1)
        if compare_states:
            compare_ndarray_tuple(state1, state2[i], rtol, atol)
        compare_ndarray_tuple(w1[i], w2[i], rtol, atol)


def check_gluon_hybridize_consistency(net_builder, data_l, numpy_func=None, test_grad=True,
                                      rtol=1E-4, atol=1E-4):
    """Build net_builder(prefix='net_') four times -- imperative and hybridized, each without
    and (test_grad) with autograd -- all with the first build's initial parameters, and check
    that outputs and input gradients (backward with the output as head gradient) agree, and
    with numpy_func(*inputs) when given. The network must not draw random numbers."""
    initial = {}

    class _LikeFirst(mx.init.Initializer):
        def _init_weight(self, name, arr):
            arr[:] = initial[name]
        _init_default = _init_weight
    saved_out, saved_grads = None, None
    for hybridize in (False, True):
        for use_autograd in ((False, True) if test_grad else (False,)):
            net = net_builder(prefix='net_')
            if not initial:
                net.initialize()
            else:
                net.initialize(_LikeFirst())
            if hybridize:
                net.hybridize()
            inputs = [x.copy() for x in data_l]
            if use_autograd:
                for x in inputs:
                    x.attach_grad()
                with mx.autograd.record():
                    out = net(*inputs)
                out.backward(out)
            else:
                out = net(*inputs)
            if not initial:
                initial.update({k: v.data().asnumpy()
                                for k, v in net.collect_params().items()})
            if saved_out is None:
                saved_out = out.asnumpy()
            else:
                assert_almost_equal(out.asnumpy(), saved_out, rtol=rtol, atol=atol)
            if use_autograd:
                grads = [x.grad.asnumpy() for x in inputs]
                if saved_grads is None:
                    saved_grads = grads
                else:
                    for got, want in zip(grads, saved_grads):
                        assert_almost_equal(got, want, rtol=rtol, atol=atol)
    if numpy_func is not None:
        assert_almost_equal(saved_out, numpy_func(*[x.asnumpy() for x in data_l]),
                            rtol=rtol, atol=atol)


# ---- matrices for linear-algebra tests ----------------------------------------------------------
def new_matrix_with_real_eigvals_2d(n):
    """A well-conditioned n x n matrix Q^-1 D Q with real eigenvalues D uniform in [-10, 10)."""
    while True:
        scale = np.diag(np.random.uniform(-1.0, 1.0, n))
        v = np.random.uniform(-1., 1., n).reshape(n, 1)
        v = v / np.linalg.norm(v, axis=-2, keepdims=True)
        q = np.matmul(np.eye(n) - 2 * np.matmul(v, v.T), scale)
        if np.linalg.cond(q, 2) < 3:
            break
    eigvals = np.diag(np.random.uniform(-10.0, 10.0, n))
    return np.matmul(np.matmul(np.linalg.inv(q), eigvals), q)


def new_matrix_with_real_eigvals_nd(shape):
    """A batch of new_matrix_with_real_eigvals_2d matrices of the given shape (..., n, n)."""
    count = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_matrix_with_real_eigvals_2d(shape[-1])
                     for _ in range(count)]).reshape(shape)


def new_orthonormal_matrix_2d(n):
    """A random n x n orthonormal matrix (Q of the QR of X^T X, X standard normal)."""
    x = np.random.randn(n, n)
    return np.linalg.qr(np.matmul(x.T, x))[0]


def new_sym_matrix_with_real_eigvals_2d(n):
    """A random symmetric n x n matrix Q^T D Q, eigenvalues D uniform in [-10, 10)."""
    q = new_orthonormal_matrix_2d(n)
    eigvals = np.diag(np.random.uniform(-10.0, 10.0, n))
    return np.matmul(np.matmul(q.T, eigvals), q)


def new_sym_matrix_with_real_eigvals_nd(shape):
    """A batch of new_sym_matrix_with_real_eigvals_2d matrices of the given shape (..., n, n)."""
    count = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_sym_matrix_with_real_eigvals_2d(shape[-1])
                     for _ in range(count)]).reshape(shape)


# ---- more data files ----------------------------------------------------------------------------
def get_mnist_pkl():
    """Make sure data/mnist.pkl.gz exists (see `download`)."""
    os.makedirs('data', exist_ok=True)
    if not os.path.exists(os.path.join('data', 'mnist.pkl.gz')):
        download('http://deeplearning.net/data/mnist/mnist.pkl.gz', dirname='data')


def get_cifar10():
    """Make sure data/cifar holds CIFAR-10's train/test .rec and .lst files, extracting
    data/cifar10.zip (see `download`) if needed."""
    os.makedirs('data', exist_ok=True)
    wanted = [os.path.join('data', 'cifar', f)
              for f in ('train.rec', 'test.rec', 'train.lst', 'test.lst')]
    if not all(os.path.exists(f) for f in wanted):
        path = download('http://data.mxnet.io/mxnet/data/cifar10.zip', dirname='data')
        with zipfile.ZipFile(path) as archive:
            archive.extractall('data')


def get_zip_data(data_dir, url, data_origin_name):
    """Unless data_dir/data_origin_name exists, download `url` into data_dir and extract it
    there."""
    path = os.path.join(data_dir, data_origin_name)
    if not os.path.exists(path):
        download(url, dirname=data_dir, overwrite=False)
        with zipfile.ZipFile(path) as archive:
            archive.extractall(path=data_dir)


def get_bz2_data(data_dir, data_name, url, data_origin_name):
    """Unless data_dir/data_name exists, download the bz2 file `url` as
    data_dir/data_origin_name, decompress it into data_dir/data_name and delete it."""
    target = os.path.join(data_dir, data_name)
    packed = os.path.join(data_dir, data_origin_name)
    if os.path.exists(target):
        return
    download(url, fname=packed, dirname=data_dir, overwrite=False)
    with bz2.BZ2File(packed, 'rb') as source, open(target, 'wb') as out:
        for line in source:
            out.write(line)
    os.remove(packed)


_MODEL_URL = 'http://data.mxnet.io/models/'
_MODELS = {
    'imagenet1k-inception-bn': 'imagenet/inception-bn/Inception-BN-{}',
    'imagenet1k-resnet-18': 'imagenet/resnet/18-layers/resnet-18-{}',
    'imagenet1k-resnet-34': 'imagenet/resnet/34-layers/resnet-34-{}',
    'imagenet1k-resnet-50': 'imagenet/resnet/50-layers/resnet-50-{}',
    'imagenet1k-resnet-101': 'imagenet/resnet/101-layers/resnet-101-{}',
    'imagenet1k-resnet-152': 'imagenet/resnet/152-layers/resnet-152-{}',
    'imagenet1k-resnext-50': 'imagenet/resnext/50-layers/resnext-50-{}',
    'imagenet1k-resnext-101': 'imagenet/resnext/101-layers/resnext-101-{}',
    'imagenet1k-resnext-101-64x4d': 'imagenet/resnext/101-layers/resnext-101-64x4d-{}',
    'imagenet11k-resnet-152': 'imagenet-11k/resnet-152/resnet-152-{}',
    'imagenet11k-place365ch-resnet-152': 'imagenet-11k-place365-ch/resnet-152-{}',
    'imagenet11k-place365ch-resnet-50': 'imagenet-11k-place365-ch/resnet-50-{}',
}


def _model_urls(name):
    stem = _MODEL_URL + _MODELS[name]
    epoch = '0126' if name == 'imagenet1k-inception-bn' else '0000'
    return {'symbol': stem.format('symbol.json'), 'params': stem.format(epoch + '.params')}


def download_model(model_name, dst_dir='./', meta_info=None):
    """Download a model's symbol and parameters (meta_info: name -> {'symbol': url,
    'params': url}; default: MXNet's model zoo on data.mxnet.io) as
    dst_dir/<name>-symbol.json and dst_dir/<name>-0000.params; returns (prefix, 0), or
    (None, 0) for an unknown name."""
    if meta_info is None:
        meta_info = {name: _model_urls(name) for name in _MODELS}
    if model_name not in meta_info:
        return None, 0
    meta = dict(meta_info[model_name])
    for key in ('symbol', 'params'):
        if key not in meta:
            raise ValueError('meta_info[%r] has no %r url' % (model_name, key))
    os.makedirs(dst_dir, exist_ok=True)
    prefix = os.path.join(dst_dir, model_name)
    download(meta['symbol'], prefix + '-symbol.json')
    download(meta['params'], prefix + '-0000.params')
    return prefix, 0


def get_im2rec_path(home_env='MXNET_HOME'):
    """The path of the im2rec.py tool: under $home_env (or this package's folder) in tools/, or
    two levels up in tools/ (a source checkout)."""
    root = os.environ.get(home_env) or os.path.dirname(os.path.abspath(mx.__file__))
    for candidate in (os.path.join(root, 'tools', 'im2rec.py'),
                      os.path.join(root, '..', '..', 'tools', 'im2rec.py')):
        if os.path.isfile(candidate):
            return candidate
    raise IOError('Could not find path to tools/im2rec.py')

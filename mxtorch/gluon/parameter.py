"""mx.gluon.Parameter, Constant and ParameterDict.

A Parameter holds one copy of its value per Context (and a gradient per copy unless grad_req is
'null'); the copies are mx.autograd variables, so operators recorded under
`mx.autograd.record()` send their gradients into `param.grad(ctx)`. A Parameter whose shape is
not known yet (0 dimensions) defers its initialisation to the first forward pass.
"""
from collections import OrderedDict
import re
import warnings

import numpy as np

from ..base import MXNetError, mx_real_t
from .. import autograd, initializer, ndarray, symbol
from ..context import Context, cpu, current_context
from ..ndarray.ndarray import NDArray
from ..util import is_np_array
from .utils import _indent, _brief_print_list, shape_is_known

tensor_types = (symbol.Symbol, ndarray.NDArray)     # what a Parameter's value may be


class DeferredInitializationError(MXNetError):
    """The Parameter's initialisation waits for the first forward pass to give its shape."""


_GRAD_REQS = ('write', 'add', 'null')


class Parameter:
    """A weight of a Block: value and gradient on each Context, with its training attributes
    (lr_mult, wd_mult, grad_req, init)."""

    def __init__(self, name, grad_req='write', shape=None, dtype=mx_real_t, lr_mult=1.0,
                 wd_mult=1.0, init=None, allow_deferred_init=False, differentiable=True,
                 stype='default', grad_stype='default'):
        self._var = None
        self._data = None
        self._grad = None
        self._ctx_list = None
        self._ctx_map = None
        self._trainer = None
        self._deferred_init = ()
        self._differentiable = differentiable
        self._allow_deferred_init = allow_deferred_init
        self._grad_req = None
        if isinstance(shape, int):
            shape = (shape,)
        self._shape = tuple(shape) if shape is not None else None
        self.name = name
        self._dtype = dtype
        self.lr_mult = lr_mult
        self.wd_mult = wd_mult
        self.grad_req = grad_req
        self.init = init
        for what, value in (('stype', stype), ('grad_stype', grad_stype)):
            assert value in ('default', 'row_sparse', 'csr'), \
                "%s for Parameter '%s' must be one of 'default', 'row_sparse', or 'csr', " \
                "but got '%s'" % (what, name, value)
        self._stype = stype
        self._grad_stype = grad_stype

    def __repr__(self):
        return 'Parameter %s (shape=%s, dtype=%s)' % (self.name, self.shape, self.dtype)

    # ---- attributes ------------------------------------------------------------------------------
    @property
    def grad_req(self):
        return self._grad_req

    @grad_req.setter
    def grad_req(self, req):
        assert req in _GRAD_REQS, \
            "grad_req must be one of 'write', 'add', or 'null', but got '%s'" % req
        if not self._differentiable:
            req = 'null'
        if self._grad_req == req:
            return
        self._grad_req = req
        if req == 'null' and self._grad is not None:
            self._grad = None
            self._data = [d.detach() for d in self._data]
        elif self._data is not None:
            self._init_grad()

    @property
    def dtype(self):
        return self._dtype

    @dtype.setter
    def dtype(self, dtype):
        self._dtype = dtype

    @property
    def shape(self):
        return self._shape

    @shape.setter
    def shape(self, new_shape):
        if new_shape is None:
            return
        new_shape = tuple(new_shape)
        if self._shape is None:
            self._shape = new_shape
            return
        assert len(self._shape) == len(new_shape) and \
            all(j in (0, i) for i, j in zip(new_shape, self._shape)), \
            'Expected shape %s is incompatible with given shape %s.' % (
                str(new_shape), str(self._shape))
        self._shape = new_shape

    @property
    def stype(self):
        return self._stype

    # ---- per-context storage -------------------------------------------------------------------
    def _check_and_get(self, arr_list, ctx):
        if arr_list is not None:
            if ctx is list:
                return arr_list
            if ctx is None:
                if len(arr_list) == 1:
                    return arr_list[0]
                ctx = current_context()
            for c, arr in zip(self._ctx_list, arr_list):
                if c is ctx or c == ctx:
                    return arr
            raise RuntimeError("Parameter '%s' was not initialized on context %s. It was only "
                               'initialized on %s.' % (self.name, str(ctx),
                                                        str(self._ctx_list)))
        if self._deferred_init:
            raise DeferredInitializationError(
                "Parameter '%s' has not been initialized yet because initialization was "
                'deferred. Actual initialization happens during the first forward pass. '
                'Please pass one batch of data through the network before accessing '
                'Parameters. You can also avoid deferred initialization by specifying '
                'in_units, num_features, etc., for network layers.' % self.name)
        raise RuntimeError("Parameter '%s' has not been initialized. Note that you should "
                           'initialize parameters and create Trainer with '
                           'Block.collect_params() instead of Block.params because the later '
                           'does not include Parameters of nested child Blocks' % self.name)

    def _init_impl(self, data, ctx_list):
        self._ctx_list = list(ctx_list)
        self._ctx_map = {c: i for i, c in enumerate(self._ctx_list)}
        with autograd.pause():
            self._data = [data.copyto(c) for c in self._ctx_list]
        if self._stype != 'default':
            self._data = [d.tostype(self._stype) for d in self._data]
        if is_np_array():                  # under npx.set_np() Parameters hold mx.np arrays
            self._data = [d.as_np_ndarray() for d in self._data]
        self._init_grad()

    def _init_grad(self):
        if self.grad_req == 'null':
            self._grad = None
            return
        self._grad = [ndarray.zeros(d.shape, ctx=d.context, dtype=d.dtype,
                                    stype=self._grad_stype) for d in self._data]
        if any(d._np_array for d in self._data):
            self._grad = [g.as_np_ndarray() for g in self._grad]
        autograd.mark_variables(self._data, self._grad, self.grad_req)

    def _finish_deferred_init(self):
        if not self._deferred_init:
            return
        init, ctx, default_init, data = self._deferred_init
        self._deferred_init = ()
        assert shape_is_known(self.shape), \
            "Cannot initialize Parameter '%s' because it has invalid shape: %s. Please " \
            'specify in_units, in_channels, etc for `Block`s.' % (self.name, str(self.shape))
        with autograd.pause():
            if data is None:
                data = ndarray.zeros(self.shape, ctx=cpu(), dtype=self.dtype)
                initializer.create(default_init)(
                    initializer.InitDesc(self.name, {'__init__': init}), data)
            self._init_impl(data, ctx)

    def _load_init(self, data, ctx, cast_dtype=False, dtype_source='current'):
        """Initialise (or overwrite) from a loaded array."""
        if cast_dtype:
            assert dtype_source in ('current', 'saved')
        if self.shape:
            for mine, theirs in zip(self.shape, data.shape):
                assert mine in (0, theirs), \
                    "Failed loading Parameter '%s' from saved params: shape incompatible " \
                    'expected %s vs saved %s' % (self.name, str(self.shape), str(data.shape))
            self.shape = tuple(j if i == 0 else i for i, j in zip(self.shape, data.shape))
        if self.dtype:
            if cast_dtype and np.dtype(self.dtype).type != data.dtype:
                if dtype_source == 'current':
                    data = data.astype(self.dtype, copy=False)
                else:
                    self.cast(data.dtype)          # the value takes the saved dtype
            else:
                assert np.dtype(self.dtype).type == data.dtype, \
                    "Failed loading Parameter '%s' from saved params: dtype incompatible " \
                    'expected %s vs saved %s. Set cast_dtype=True to cast the dtype of saved ' \
                    'params.' % (self.name, str(self.dtype), str(data.dtype))
        if isinstance(ctx, Context):
            ctx = [ctx]
        if self._data is None:
            if self._deferred_init:
                assert ctx is None or set(ctx) == set(self._deferred_init[1]), \
                    "Failed to load Parameter '%s' on %s because it was previous initialized " \
                    'on %s.' % (self.name, str(ctx), str(self.list_ctx()))
                ctx = self._deferred_init[1]
            elif ctx is None:
                ctx = [cpu()]
            self._init_impl(data, ctx)
        else:
            assert ctx is None or set(ctx) == set(self.list_ctx()), \
                "Failed to load Parameter '%s' on %s because it was previous initialized on " \
                '%s.' % (self.name, str(ctx), str(self.list_ctx()))
            self.set_data(data)
        self._deferred_init = ()

    def _reduce(self):
        """The value on the CPU (the mean of the copies)."""
        block = self._check_and_get(self._data, list)
        if self._stype != 'default' and self._trainer:
            # the full value lives in the Trainer's kvstore: pull every row
            full = ndarray.sparse.zeros(self._stype, self.shape, ctx=cpu(), dtype=self.dtype)
            all_rows = ndarray.arange(0, self.shape[0], dtype='int64', ctx=cpu())
            self._trainer._row_sparse_pull(self, full, all_rows, full_idx=True)
            return full
        if len(block) == 1:
            return block[0].copyto(cpu())
        total = block[0].copyto(cpu())
        for w in block[1:]:
            total += w.copyto(cpu())
        return total / len(block)

    # ---- public API ----------------------------------------------------------------------------
    def initialize(self, init=None, ctx=None, default_init=initializer.Uniform(),
                   force_reinit=False):
        """Create the value on each context (deferred while the shape is unknown)."""
        if self._data is not None and not force_reinit:
            warnings.warn("Parameter '%s' is already initialized, ignoring. Set "
                          'force_reinit=True to re-initialize.' % self.name, stacklevel=2)
            return
        self._data = self._grad = None
        if ctx is None:
            ctx = [current_context()]
        if isinstance(ctx, Context):
            ctx = [ctx]
        if init is None:
            init = default_init if self.init is None else self.init
        if not shape_is_known(self.shape):
            if self._allow_deferred_init:
                self._deferred_init = (init, ctx, default_init, None)
                return
            raise ValueError("Cannot initialize Parameter '%s' because it has invalid shape: "
                             '%s.' % (self.name, str(self.shape)))
        self._deferred_init = (init, ctx, default_init, None)
        self._finish_deferred_init()

    def reset_ctx(self, ctx):
        """Move the value (and gradient) to other contexts."""
        if ctx is None:
            ctx = [current_context()]
        if isinstance(ctx, Context):
            ctx = [ctx]
        if self._data:
            data = self._reduce()
            with autograd.pause():
                self._init_impl(data, ctx)
        elif self._deferred_init:
            init, _, default_init, data = self._deferred_init
            self._deferred_init = (init, ctx, default_init, data)
        else:
            raise ValueError("Cannot reset context for Parameter '%s' because it has not been "
                             'initialized.' % self.name)

    def set_data(self, data):
        """Set the value on every context."""
        self.shape = data.shape
        if self._data is None:
            assert self._deferred_init, "Parameter '%s' has not been initialized" % self.name
            self._deferred_init = self._deferred_init[:3] + (data,)
            return
        trainer = self._trainer
        if trainer is not None and trainer._kv_initialized and trainer._update_on_kvstore:
            if self not in trainer._params_to_init:
                trainer._reset_kvstore()
        for arr in self._check_and_get(self._data, list):
            arr[:] = data

    def _set_trainer(self, trainer):
        """Record the Trainer updating this Parameter (None: none); a sparse Parameter takes
        only one."""
        if self._stype != 'default' and self._trainer and trainer and \
                self._trainer is not trainer:
            raise RuntimeError("Failed to set the trainer for Parameter '%s' because it was "
                               'already set. More than one trainers for a %s Parameter is not '
                               'supported.' % (self.name, self._stype))
        self._trainer = trainer

    def _rows(self, row_id, ctx):
        """The value arrays on `ctx` (a list for every context), holding the rows `row_id`
        pulled from the Trainer's kvstore (which keeps the full value); gradients recorded
        through them reach this Parameter's gradient."""
        if self._stype != 'row_sparse':
            raise RuntimeError("Cannot return a copy of Parameter %s via row_sparse_data() "
                               "because its storage type is %s. Please use data() instead."
                               % (self.name, self._stype))
        if not isinstance(row_id, NDArray):
            raise TypeError('row_id must have NDArray type, but %s is given' % type(row_id))
        if not self._trainer:
            raise RuntimeError("Cannot get row_sparse data for Parameter '%s' when no Trainer "
                               'is created with it.' % self.name)
        results = self._check_and_get(self._data, ctx)
        self._trainer._row_sparse_pull(self, results, row_id)
        return results

    def row_sparse_data(self, row_id):
        """The rows `row_id` of the value on row_id's context (a row_sparse Parameter,
        updated by a Trainer)."""
        return self._rows(row_id, row_id.context)

    def list_row_sparse_data(self, row_id):
        """The rows `row_id` of the value on every context."""
        return self._rows(row_id, list)

    def _dense_only(self, what):
        if self._stype != 'default':
            raise RuntimeError("Cannot return a copy of Parameter '%s' via %s() because its "
                               'storage type is %s. Please use row_sparse_data() instead.'
                               % (self.name, what, self._stype))

    def data(self, ctx=None):
        """The value on `ctx` (the only one, or the current context, when None)."""
        arrays = self._data
        if arrays is not None and len(arrays) == 1 and self._stype == 'default' and (
                ctx is None or ctx is self._ctx_list[0]):
            return arrays[0]                # (the common case, without the general checks)
        self._dense_only('data')
        return self._check_and_get(self._data, ctx)

    def list_data(self):
        self._dense_only('list_data')
        return self._check_and_get(self._data, list)

    def grad(self, ctx=None):
        if self._data is not None and self._grad is None:
            raise RuntimeError("Cannot get gradient array for Parameter '%s' because "
                               "grad_req='null'" % self.name)
        return self._check_and_get(self._grad, ctx)

    def list_grad(self):
        if self._data is not None and self._grad is None:
            raise RuntimeError("Cannot get gradient array for Parameter '%s' because "
                               "grad_req='null'" % self.name)
        return self._check_and_get(self._grad, list)

    def list_ctx(self):
        if self._data is None:
            if self._deferred_init:
                return self._deferred_init[1]
            raise RuntimeError("Parameter '%s' has not been initialized" % self.name)
        return self._ctx_list

    def zero_grad(self):
        if self._grad is None:
            return
        for g in self._grad:
            g._tensor.detach().zero_()

    def var(self):
        """The Symbol variable standing for this Parameter (with its attributes)."""
        if self._var is None:
            self._var = symbol.var(self.name, shape=self.shape, dtype=self.dtype,
                                   lr_mult=self.lr_mult, wd_mult=self.wd_mult, init=self.init,
                                   stype=self._stype)
        return self._var

    def cast(self, dtype):
        """Cast value and gradient to `dtype`."""
        self.dtype = dtype
        self._var = None
        if self._data is None:
            return
        with autograd.pause():
            self._data = [d.astype(dtype) for d in self._data]
            if self._grad is None:
                return
            self._grad = [g.astype(dtype) for g in self._grad]
            autograd.mark_variables(self._data, self._grad, self.grad_req)


class Constant(Parameter):
    """A Parameter that training leaves alone (grad_req 'null'); set_data still changes it."""

    def __init__(self, name, value):
        if not isinstance(value, NDArray):
            value = ndarray.array(value)
        self.value = value

        class Init(initializer.Initializer):
            def _init_weight(self, _, arr):
                value.copyto(arr)
        init_name = 'Constant_%s_%d' % (name, id(self))
        initializer.alias(init_name)(Init)
        super().__init__(name, grad_req='null', shape=value.shape, dtype=value.dtype,
                         init=init_name)

    def __repr__(self):
        return 'Constant %s (shape=%s, dtype=%s)' % (self.name, self.shape, self.dtype)

    @property
    def grad_req(self):
        return 'null'

    @grad_req.setter
    def grad_req(self, req):
        if req != 'null':
            warnings.warn('Constant parameter "%s" does not support grad_req other than '
                          '"null", and new value "%s" is ignored.' % (self.name, req))
        self._grad_req = 'null'


class ParameterDict:
    """An ordered name -> Parameter mapping under a prefix; `shared` lends its Parameters."""

    def __init__(self, prefix='', shared=None):
        self._prefix = prefix
        self._params = OrderedDict()
        self._shared = shared

    def __repr__(self):
        name = self._prefix + ' ' if self._prefix else ''
        return '%s(\n%s\n)' % (name, '\n'.join(_indent('  %s' % v, 2)
                                               for v in self.values()))

    def __getitem__(self, key):
        return self._params[key]

    def __iter__(self):
        return iter(self._params)

    def __len__(self):
        return len(self._params)

    def __contains__(self, key):
        return key in self._params

    def items(self):
        return self._params.items()

    def keys(self):
        return self._params.keys()

    def values(self):
        return self._params.values()

    @property
    def prefix(self):
        return self._prefix

    def _get_impl(self, name):
        if name in self._params:
            return self._params[name]
        if self._shared is not None and name in self._shared._params:
            self._params[name] = self._shared._params[name]
            return self._shared._params[name]
        return None

    def get(self, name, **kwargs):
        """The Parameter `prefix + name`, created with kwargs when new; an existing one must
        agree with them (unknown shape dimensions are filled in)."""
        name = self.prefix + name
        param = self._get_impl(name)
        if param is None:
            param = Parameter(name, **kwargs)
            self._params[name] = param
            return param
        for k, v in kwargs.items():
            if hasattr(param, k) and getattr(param, k) is not None:
                existing = getattr(param, k)
                if k == 'shape' and len(v) == len(existing):
                    merged, matched = [], True
                    for want, have in zip(v, existing):
                        if want != have and want * have != 0:
                            matched = False
                            break
                        merged.append(have if want == 0 else want)
                    if matched:
                        param._shape = tuple(merged)
                        continue
                elif k == 'dtype' and np.dtype(v) == np.dtype(existing):
                    continue
                assert v is None or v == existing, \
                    "Cannot retrieve Parameter '%s' because desired attribute does not match " \
                    "with stored for attribute '%s': desired '%s' vs stored '%s'." % (
                        name, k, str(v), str(getattr(param, k)))
            else:
                setattr(param, k, v)
        return param

    def get_constant(self, name, value=None):
        """The Constant `prefix + name`, created from `value` when new."""
        name = self.prefix + name
        param = self._get_impl(name)
        if param is None:
            if value is None:
                raise KeyError("No constant named '%s'. Please specify value if you want to "
                               'create a new constant.' % name)
            param = Constant(name, value)
            self._params[name] = param
        elif value is not None:
            assert isinstance(param, Constant), \
                "Parameter '%s' already exists but it is not a constant." % name
            if isinstance(value, NDArray):
                value = value.asnumpy()
            assert param.shape == value.shape and \
                (param.value.asnumpy() == value).all(), \
                "Constant '%s' already exists but it's value doesn't match new value" % name
        return param

    def update(self, other):
        """Add the Parameters of another ParameterDict (a name must mean the same Parameter)."""
        for k, v in other.items():
            if k in self._params:
                assert self._params[k] is v, \
                    'Cannot update self with other because they have different ' \
                    "Parameters with the same name '%s'" % k
        for k, v in other.items():
            self._params[k] = v

    def initialize(self, init=initializer.Uniform(), ctx=None, verbose=False,
                   force_reinit=False):
        """Initialise every Parameter; `init` is the default for those without their own."""
        if verbose:
            init.set_verbosity(verbose=verbose)
        for v in self.values():
            v.initialize(None, ctx, init, force_reinit=force_reinit)

    def zero_grad(self):
        for p in self.values():
            p.zero_grad()

    def reset_ctx(self, ctx):
        for p in self.values():
            p.reset_ctx(ctx)

    def list_ctx(self):
        seen = []
        for p in self.values():
            for c in p.list_ctx():
                if c not in seen:
                    seen.append(c)
        return seen

    def setattr(self, name, value):
        """Set attribute `name` of every Parameter (e.g. grad_req, lr_mult)."""
        for p in self.values():
            setattr(p, name, value)

    def save(self, filename, strip_prefix=''):
        """Save the values as MXNet's .params file, names with `strip_prefix` removed."""
        arg_dict = {}
        for param in self.values():
            weight = param._reduce()
            if not param.name.startswith(strip_prefix):
                raise ValueError("Prefix '%s' is to be striped before saving, but Parameter's "
                                 "name '%s' does not start with '%s'. this may be due to your "
                                 'Block shares parameters from other Blocks or you forgot to '
                                 'use with name_scope() during init. Consider switching to '
                                 'Block.collect_params.save and Block.collect_params.load '
                                 'instead.' % (strip_prefix, param.name, strip_prefix))
            arg_dict[param.name[len(strip_prefix):]] = weight
        ndarray.save(filename, arg_dict)

    def load(self, filename, ctx=None, allow_missing=False, ignore_extra=False,
             restore_prefix='', cast_dtype=False, dtype_source='current'):
        """Load values from a .params file (names get `restore_prefix` prepended)."""
        if restore_prefix:
            for name in self.keys():
                assert name.startswith(restore_prefix), \
                    "restore_prefix is '%s' but Parameters name '%s' does not start with " \
                    "'%s'." % (restore_prefix, name, restore_prefix)
        ndarray_load = ndarray.load(filename)
        self.load_dict(ndarray_load, ctx, allow_missing, ignore_extra, restore_prefix,
                       filename, cast_dtype, dtype_source)

    def load_dict(self, param_dict, ctx=None, allow_missing=False, ignore_extra=False,
                  restore_prefix='', filename=None, cast_dtype=False, dtype_source='current'):
        """Load values from a dict of name -> NDArray (arg:/aux: prefixes are dropped)."""
        lprefix = len(restore_prefix)
        items = param_dict.items() if isinstance(param_dict, dict) else param_dict
        arg_dict = {restore_prefix + (k[4:] if k.startswith(('arg:', 'aux:')) else k): v
                    for k, v in items}
        where = 'file \'%s\'' % filename if filename else 'param_dict'
        if not allow_missing:
            for name in self.keys():
                assert name in arg_dict, \
                    "Parameter '%s' is missing in %s, which contains parameters: %s. Please " \
                    'make sure source and target networks have the same prefix.' % (
                        name[lprefix:], where, _brief_print_list(arg_dict.keys()))
        for name in arg_dict:
            if name not in self._params:
                assert ignore_extra, \
                    "Parameter '%s' loaded from %s is not present in ParameterDict, choices " \
                    'are: %s. Set ignore_extra to True to ignore. Please make sure source and ' \
                    'target networks have the same prefix.' % (
                        name[lprefix:], where, _brief_print_list(self._params.keys()))
                continue
            self[name]._load_init(arg_dict[name], ctx, cast_dtype=cast_dtype,
                                  dtype_source=dtype_source)

    def _select(self, select):
        """The Parameters whose names match regular expression `select`."""
        pattern = re.compile(select)
        ret = ParameterDict(self.prefix)
        ret._params.update((k, v) for k, v in self.items() if pattern.match(k))
        return ret

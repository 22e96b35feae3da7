"""Sparse values in a bound graph: the storage type of every value, decided at bind, and the
steps that run operators' sparse kernels on them, as the imperative calls do.

At bind, the operators' storage-type rules (ops/sparse.py, `infer_storage`) run over the plan
from the bound arguments' storage types. A graph whose values are all dense keeps its plan
untouched (nothing here costs it anything per step). Otherwise `StorageTypes` wraps the plan:
a sparse argument enters the generated function as its sparse array (its compressed parts; its
dense form is built only where a dense kernel reads it), and each step with a sparse input or
output runs as `invoke_with_storage` would: the operator's sparse kernel where it has one for
these storage types, else its dense kernel on the dense forms, the outputs in the storage types
the rules inferred. Dense values stay torch tensors.

Gradients: torch's grad mode (what the executor asks for), not mx.autograd's recording, decides
whether a kernel keeps the graph. A kernel that cannot keep it (`differentiable` not set) runs
without gradients for the stored structure while the dense kernel computes the values. An
argument whose gradient array is row_sparse gets, from dot(csr, dense) kernels, its gradient as
the rows MXNet's backward stores (the csr operand's stored columns).
"""
import torch

from .base import MXNetError
from .ndarray.ndarray import NDArray, _wrap
from .ndarray.sparse import (BaseSparseNDArray, _dense_to_parts, _new, assign,
                             from_dense_tensor, zeros)
from .ops import sparse as sparse_ops
from .plan import Plan, Step

D = 'default'


def value_stypes(plan, input_stypes):
    """{value name: storage type} of the plan's sparse values (the others are dense), from the
    inputs' storage types by the ops' rules (an operator without rules, or whose rule gives
    None, falls back to dense)."""
    sparse = {n: s for n, s in zip(plan.input_names, input_stypes) if s != D}
    for step in plan.steps:
        rule = step.op.infer_storage
        if rule is None:
            continue
        try:
            out = rule(step.params, [sparse.get(n, D) for n in step.inputs])
        except MXNetError as err:
            raise MXNetError('Error in operator %s: %s' % (step.node.name, err)) from None
        if out is not None:
            for name, st in zip(step.outputs, out):
                if st != D:
                    sparse[name] = st
    return sparse


def write_rows(handle, g, req):
    """The sparse COO gradient `g` into the row_sparse array `handle`: its rows, stored zeros
    included, as MXNet's kernels store them. A gradient only sparse kernels gave (embedding,
    dot(csr, dense)) cannot be added (those kernels write only: MXNet's error); one summed
    with dense gradients (`gradient`) can. A sparse-grad embedding's gradient into a dense
    array is MXNet's error too."""
    if getattr(handle, '_stype', None) != 'row_sparse':
        raise MXNetError('Cannot use sparse_grad = 1, while stype of gradients w.r.t embedding '
                         'weight is default')
    if req == 'add':
        if not getattr(g, '_mx_summed', False):
            raise MXNetError('Check failed: req == kWriteTo (3 vs. 1) : a row_sparse gradient '
                             'from a sparse kernel (SparseEmbedding, dot(csr, dense)) does not '
                             "support grad_req 'add'")
        data, rows = handle._get_parts()
        g = g + torch.sparse_coo_tensor(rows.reshape(1, -1).to(g.device),
                                        data.to(g.device, g.dtype), g.shape,
                                        check_invariants=False)
    g = g.coalesce()
    handle._set_parts((g.values().to(handle._dtype), g.indices()[0].to(torch.int64)))


def rows_array(g, ctx, dtype):
    """A new row_sparse array of the sparse COO gradient `g`'s rows."""
    g = g.detach().coalesce()
    return _new('row_sparse', tuple(g.shape), ctx,
                parts=(g.values().to(dtype), g.indices()[0].to(torch.int64)))


def _dense(x):
    """The dense tensor of a value (a sparse array's dense form)."""
    return x._tensor if isinstance(x, NDArray) else x


def _needs_grad(x):
    if isinstance(x, BaseSparseNDArray):
        d = x._dense
        return d is not None and not x._dense_stale and d.requires_grad
    return isinstance(x, torch.Tensor) and x.requires_grad


def _as_stype(r, stype, ctx):
    """Kernel result `r` (an NDArray) as the value of storage `stype` a step passes on."""
    if stype == D:
        return r._tensor
    if getattr(r, '_stype', None) == stype:
        return r
    return from_dense_tensor(stype, r._tensor, ctx)


def _run_step(op, p, fn, kernel, xs, out_stypes, ctx, row_grads):
    """One step on values of any storage type (see the module's docstring)."""
    grad = torch.is_grad_enabled() and any(_needs_grad(x) for x in xs)
    if kernel is not None and (not grad or getattr(kernel, 'differentiable', False)):
        arrays = [x if isinstance(x, NDArray) else _wrap(x, ctx) for x in xs]
        with sparse_ops.bound_graph(grad, row_grads):
            res = kernel(op, p, arrays, list(out_stypes))
        if res is not None:
            outs = tuple(_as_stype(r, s, ctx) for r, s in zip(res, out_stypes))
            return outs if len(outs) > 1 else outs[0]
    dense = fn(*[_dense(x) for x in xs])
    if all(s == D for s in out_stypes):
        return dense
    results = dense if isinstance(dense, tuple) else (dense,)
    structure = None
    if kernel is not None and grad:       # the stored structure, the values keep the graph
        with torch.no_grad(), sparse_ops.bound_graph(False):
            arrays = [x if isinstance(x, NDArray) else _wrap(x.detach(), ctx) for x in xs]
            structure = kernel(op, p, arrays, list(out_stypes))
    outs = []
    for k, (t, s) in enumerate(zip(results, out_stypes)):
        if s == D:
            outs.append(t)
        elif structure is not None and getattr(structure[k], '_stype', None) == s:
            outs.append(_new(s, tuple(t.shape), ctx, parts=structure[k]._get_parts(),
                             dense=t if t.requires_grad else None))
        else:
            outs.append(from_dense_tensor(s, t, ctx))
    outs = tuple(outs) + tuple(results[len(outs):])
    return outs if len(outs) > 1 else outs[0]


def _storage_step(step, in_stypes, out_stypes, ctx, row_grads):
    """`step` running on values of these storage types."""
    op, p, make = step.op, step.params, step.make_fn
    kernel = op.sparse_forward
    if kernel is not None and len(step.outputs) != op.num_visible_outputs(p):
        kernel = None            # (hidden outputs: only the dense kernel gives them)
    out_stypes = tuple(out_stypes)

    def make_fn(train, device):
        fn = make(train, device)
        return lambda *xs: _run_step(op, p, fn, kernel, xs, out_stypes, ctx, row_grads)
    new = Step(step.node, step.inputs, step.outputs, step.fn_name, make_fn, step.aux_positions,
               step.kind if step.fused else None)
    return new


class StorageTypes:
    """A bound graph's storage types and its plan with storage-aware steps (see `of`)."""

    def __init__(self, plan, stypes, input_stypes, ctx, row_grad_positions):
        self.stypes = stypes
        self.input_stypes = input_stypes
        self.heads = [stypes.get(h, D) for h in plan.heads]
        self.sparse_inputs = [i for i, s in enumerate(input_stypes) if s != D]
        self.sparse_set = set(self.sparse_inputs)
        self.row_grad_positions = set(row_grad_positions)
        self.ctx = ctx
        self.row_grads = {}     # id(leaf) -> [rows a sparse kernel's backward stores], and
        self.row_lists = {}     # argument position -> that list (arguments with rsp gradients)
        self.plan = self.wrap(plan, ctx)

    @classmethod
    def of(cls, plan, arrays, grad_arrays, ctx):
        """None when every value of `plan` is dense (it runs as it is), else the storage types
        of `arrays` (arguments, then auxiliary states) carried through it."""
        input_stypes = [getattr(a, '_stype', None) or D for a in arrays]
        stypes = value_stypes(plan, input_stypes)
        if not stypes:
            return None
        rows = [i for i, g in enumerate(grad_arrays)
                if g is not None and getattr(g, '_stype', None) == 'row_sparse']
        return cls(plan, stypes, input_stypes, ctx, rows)

    def rewrap(self, plan):
        """Another plan of the same graph (step by step) made storage-aware."""
        return self.wrap(plan, self.ctx, value_stypes(plan, self.input_stypes))

    def wrap(self, plan, ctx, stypes=None):
        """`plan` with its steps that see a sparse value running storage-aware."""
        stypes = stypes or self.stypes
        new = {}
        for step in plan.steps:
            in_st = [stypes.get(n, D) for n in step.inputs]
            out_st = [stypes.get(n, D) for n in step.outputs]
            if any(s != D for s in in_st + out_st):
                new[id(step)] = _storage_step(step, in_st, out_st, ctx, self.row_grads)
        steps = [new.get(id(s), s) for s in plan.steps]
        return Plan(plan.input_names, steps, plan.heads,
                    [new.get(id(s), s) for s in plan.stat_steps],
                    [new.get(id(s), s) for s in plan.loss_steps])

    # ---- the executor's side ---------------------------------------------------------------
    def inputs(self, arrays, leaf_positions, leaf):
        """The values the plan runs on, from `arrays` (arguments, then auxiliary states): dense
        tensors, and the sparse arrays themselves (their dense forms unbuilt); at
        `leaf_positions`, autograd leaves (`leaf(i, tensor)`), a sparse argument's as the dense
        form of a sparse array over its parts."""
        sparse = self.sparse_set
        values = [a if i in sparse else a._tensor for i, a in enumerate(arrays)]
        self.row_grads.clear()
        self.row_lists.clear()
        for i in leaf_positions:
            arr = arrays[i]
            lf = leaf(i, arr._tensor)
            if i in sparse:        # its parts, unless its dense form was written since
                current = arr._dense is None or arr._dense._version == arr._dense_version
                values[i] = _new(arr._stype, arr.shape, arr._ctx,
                                 parts=arr._parts if current else None, dense=lf)
            else:
                values[i] = lf
            if i in self.row_grad_positions:
                self.row_grads[id(lf)] = self.row_lists[i] = []
        return values

    def from_tensors(self, tensors):
        """Values from the tensors a caller gives (Gluon's hybridized blocks): the sparse
        inputs' arrays where given, else made from the non-zeros of their dense tensors (which
        stay their dense forms, gradients included)."""
        values = list(tensors)
        for i in self.sparse_inputs:
            t, stype = values[i], self.input_stypes[i]
            if isinstance(t, BaseSparseNDArray):
                continue
            values[i] = _new(stype, tuple(t.shape), self.ctx,
                             parts=_dense_to_parts(stype, t.detach()), dense=t)
        return values

    def gradient(self, i, g):
        """Argument i's gradient as its array stores it: a dense sum of gradients where sparse
        kernels gave some of them keeps their rows (stored zeros included) with its non-zero
        rows, as a sparse COO tensor; otherwise `g` itself."""
        rows = self.row_lists.get(i)
        if not rows or g is None or g.dim() == 0:
            return g
        if g.is_sparse:
            if len(rows) == 1 and g._nnz() == rows[0].numel():   # that kernel's rows alone:
                return torch.sparse_coo_tensor(g._indices(), g._values(), g.shape,  # coalesced
                                               check_invariants=False, is_coalesced=True)
            return g
        nonzero = g.reshape(g.shape[0], -1).ne(0).any(1).nonzero().reshape(-1)
        rows = torch.unique(torch.cat([r.to(g.device) for r in rows] + [nonzero]))
        g = torch.sparse_coo_tensor(rows.reshape(1, -1), g[rows], g.shape,
                                    check_invariants=False, is_coalesced=True)
        g._mx_summed = True          # (with dense gradients: 'add' accumulates, as MXNet's)
        return g

    def outputs(self, outputs):
        """The executor's output arrays, sparse where a head's storage type is."""
        return [zeros(s, o.shape, ctx=o.context, dtype=o.dtype)
                if s != D and o.stype == D else o for o, s in zip(outputs, self.heads)]

    @staticmethod
    def dense(values):
        return tuple(_dense(v) for v in values)

    @staticmethod
    def dense_losses(losses):
        return tuple(tuple(_dense(v) for v in values) for values in losses)

    @staticmethod
    def leaf_tensors(values):
        return [v._dense if isinstance(v, BaseSparseNDArray) else v for v in values]

    @staticmethod
    def store(outputs, values):
        """Copy head values into the output arrays (a sparse one takes the stored parts)."""
        with torch.no_grad():
            for out, value in zip(outputs, values):
                if isinstance(value, NDArray) or out.stype != D:
                    assign(out, value if isinstance(value, NDArray) else _wrap(value, out._ctx))
                else:
                    out._tensor.copy_(value)

"""mx.executor_manager: the data-parallel executors of the old FeedForward training loop.

A DataParallelExecutorGroup binds one symbol once per context, each executor taking a slice of
the batch; a DataParallelExecutorManager holds the group (one per bucket with sym_gen, all
sharing the parameter arrays of the default bucket's group).
"""
import logging

import numpy as np

from .context import cpu
from .io import DataDesc
from .module.executor_group import load_general, split_input_slice

_split_input_slice = split_input_slice


def _check_arguments(symbol):
    """Raise ValueError if an argument or auxiliary-state name occurs twice in the symbol."""
    arg_names = symbol.list_arguments()
    aux_names = symbol.list_auxiliary_states()
    duplicate = _first_duplicate(arg_names)
    if duplicate is not None:
        raise ValueError('Find duplicated argument name "%s", please make the weight name '
                         'non-duplicated(using name arguments), arguments are %s'
                         % (duplicate, arg_names))
    duplicate = _first_duplicate(aux_names)
    if duplicate is not None:
        raise ValueError('Find duplicated auxiliary param name "%s", please make the weight '
                         'name non-duplicated(using name arguments), arguments are %s, '
                         'auxiliary params are %s' % (duplicate, arg_names, aux_names))


def _first_duplicate(names):
    seen = set()
    for name in names:
        if name in seen:
            return name
        seen.add(name)
    return None


def _bind_exec(sym, ctx, input_shapes, param_names, need_grad=False, base_exec=None,
               shared_data_arrays=None, input_types=None, logger=logging):
    """Bind sym on ctx for the given input shapes.

    need_grad: False (no gradients), True (every argument that is not an input) or a set of
    argument names. Parameters come from base_exec when given; other arguments reuse the arrays
    of shared_data_arrays (a dict, updated) when those are large enough.
    """
    arg_names = sym.list_arguments()
    if need_grad is False:
        need_grad = set()
    elif need_grad is True:
        need_grad = set(arg_names) - set(input_shapes)
    elif not isinstance(need_grad, set):
        raise TypeError('need_grad must be a bool or a set of argument names, got %s'
                        % type(need_grad).__name__)
    if input_types is None:
        input_types = {name: np.float32 for name in input_shapes}
    if shared_data_arrays is not None:
        _warn_reallocations(sym, input_shapes, param_names, shared_data_arrays, logger)
    grad_req = {name: 'write' if name in need_grad else 'null' for name in arg_names}
    return sym.simple_bind(ctx, grad_req=grad_req, type_dict=input_types,
                           shared_arg_names=list(param_names), shared_exec=base_exec,
                           shared_buffer=shared_data_arrays, **input_shapes)


def _warn_reallocations(sym, input_shapes, param_names, shared_data_arrays, logger):
    arg_shapes, _, _ = sym.infer_shape(**input_shapes)
    for name, shape in zip(sym.list_arguments(), arg_shapes):
        held = shared_data_arrays.get(name)
        if name not in param_names and held is not None and held.size < int(np.prod(shape)):
            logger.warning('bucketing: data "%s" has shape %s, larger than the allocated %s, so '
                           'it is re-allocated. Make default_bucket_key the bucket with the '
                           'largest input to share memory better.', name, shape, held.shape)


def _check_batch_size(sources, targets):
    for src, dsts in zip(sources, targets):
        expected = dsts[-1][0].stop
        assert expected == src.shape[0], \
            'Batch size miss match. Expected %d, got %d' % (expected, src.shape[0])


class DataParallelExecutorGroup:
    """One executor of sym per context, executor i taking slices[i] of each batch.

    train_data is anything with provide_data and provide_label (a DataIter or a DataBatch).
    With shared_group, parameters, gradients and auxiliary states are that group's arrays.
    """

    def __init__(self, sym, arg_names, param_names, ctx, slices, train_data, shared_group=None):
        _check_arguments(sym)
        self.shared_data_arrays = ([{} for _ in ctx] if shared_group is None
                                   else shared_group.shared_data_arrays)
        inputs = list(train_data.provide_data) + list(train_data.provide_label or [])
        self.data_names = [desc[0] for desc in train_data.provide_data]
        self.label_names = [desc[0] for desc in train_data.provide_label or []]
        self.aux_names = sym.list_auxiliary_states()
        self.param_names = [name for name in arg_names if name in param_names]
        self.slices = slices
        self.train_execs = []
        for i, context in enumerate(ctx):
            size = slices[i].stop - slices[i].start
            shapes = {desc[0]: (size,) + tuple(desc[1][1:]) for desc in inputs}
            types = {desc[0]: desc.dtype if isinstance(desc, DataDesc) else np.float32
                     for desc in inputs}
            base_exec = None if shared_group is None else shared_group.train_execs[i]
            self.train_execs.append(_bind_exec(
                sym, context, shapes, self.param_names, need_grad=True, base_exec=base_exec,
                shared_data_arrays=self.shared_data_arrays[i], input_types=types))
        self.data_arrays = [[(slices[i], e.arg_dict[name]) for i, e in enumerate(self.train_execs)]
                            for name in self.data_names]
        self.label_arrays = [[(slices[i], e.arg_dict[name])
                              for i, e in enumerate(self.train_execs)]
                             for name in self.label_names]
        self.param_arrays = [[e.arg_dict[name] for e in self.train_execs]
                             for name in self.param_names]
        self.grad_arrays = [[e.grad_dict[name] for e in self.train_execs]
                            for name in self.param_names]
        self.aux_arrays = [[e.aux_arrays[i] for e in self.train_execs]
                           for i in range(len(self.aux_names))]

    def load_data_batch(self, data_batch):
        """Copy each device's slice of the batch's data and labels into its executor."""
        labels = data_batch.label or []
        _check_batch_size(data_batch.data, self.data_arrays)
        _check_batch_size(labels, self.label_arrays)
        load_general(data_batch.data, self.data_arrays, [0] * len(self.data_arrays))
        load_general(labels, self.label_arrays, [0] * len(self.label_arrays))

    def forward(self, is_train=False):
        for texec in self.train_execs:
            texec.forward(is_train=is_train)

    def backward(self):
        for texec in self.train_execs:
            texec.backward()

    def update_metric(self, metric, labels, pre_sliced=False):
        """metric.update with each device's labels (sliced here unless pre_sliced) and outputs."""
        for i, (texec, part) in enumerate(zip(self.train_execs, self.slices)):
            labels_slice = labels[i] if pre_sliced else [label[part] for label in labels]
            metric.update(labels_slice, texec.outputs)


class DataParallelExecutorManager:
    """The executor group(s) of a training run over ctx, with parameters shared by all buckets.

    With sym_gen (bucketing), load_data_batch selects the group of batch.bucket_key, binding
    sym_gen(key) on first sight; the default group is keyed by train_data.default_bucket_key.
    """

    def __init__(self, symbol, ctx, train_data, arg_names, param_names, aux_names,
                 work_load_list=None, logger=None, sym_gen=None):
        logger = logging if logger is None else logger
        logger.info('Start training with %s', str(ctx))
        if work_load_list is None:
            work_load_list = [1] * len(ctx)
        if not isinstance(work_load_list, list) or len(work_load_list) != len(ctx):
            raise ValueError('work_load_list must be a list with one entry per context '
                             '(%d contexts), got %r' % (len(ctx), work_load_list))
        self.slices = _split_input_slice(train_data.batch_size, work_load_list)
        self.arg_names = arg_names
        self.param_names = param_names
        self.aux_names = aux_names
        self.ctx = ctx
        self.symbol = symbol
        self.sym_gen = sym_gen
        self.execgrp = DataParallelExecutorGroup(symbol, arg_names, param_names, ctx,
                                                 self.slices, train_data)
        self.curr_execgrp = None
        self._monitor = None
        if sym_gen is not None:
            self.execgrp_bucket = {train_data.default_bucket_key: self.execgrp}

    def install_monitor(self, monitor):
        """monitor.install on every executor: of the default group, and with sym_gen of every
        bucket's group, including the groups that later batches bind."""
        self._monitor = monitor
        groups = [self.execgrp] if self.sym_gen is None else list(self.execgrp_bucket.values())
        for group in groups:
            for texec in group.train_execs:
                monitor.install(texec)

    def set_params(self, arg_params, aux_params):
        """Copy the given parameters (dicts of name to NDArray) into every executor."""
        for texec in self.execgrp.train_execs:
            texec.copy_params_from(arg_params, aux_params)

    def copy_to(self, arg_params, aux_params):
        """Write the average over devices of each parameter into arg_params/aux_params (in
        place, cast to their dtypes)."""
        for names, blocks, targets in ((self.param_names, self.param_arrays, arg_params),
                                       (self.aux_names, self.aux_arrays, aux_params)):
            for name, block in zip(names, blocks):
                mean = sum(w.copyto(cpu()) for w in block) / len(block)
                mean.astype(targets[name].dtype).copyto(targets[name])

    @property
    def param_arrays(self):
        """Per parameter, its array on every device (shared by all buckets)."""
        return self.execgrp.param_arrays

    @property
    def grad_arrays(self):
        """Per parameter, its gradient on every device (shared by all buckets)."""
        return self.execgrp.grad_arrays

    @property
    def aux_arrays(self):
        """Per auxiliary state, its array on every device (shared by all buckets)."""
        return self.execgrp.aux_arrays

    def load_data_batch(self, data_batch):
        """Make the batch's group current (per bucket_key with sym_gen) and load the batch."""
        if self.sym_gen is None:
            self.curr_execgrp = self.execgrp
        else:
            key = data_batch.bucket_key
            if key not in self.execgrp_bucket:
                self.execgrp_bucket[key] = DataParallelExecutorGroup(
                    self.sym_gen(key), self.arg_names, self.param_names, self.ctx, self.slices,
                    data_batch, shared_group=self.execgrp)
                if self._monitor is not None:
                    for texec in self.execgrp_bucket[key].train_execs:
                        self._monitor.install(texec)
            self.curr_execgrp = self.execgrp_bucket[key]
        self.curr_execgrp.load_data_batch(data_batch)

    def forward(self, is_train=False):
        self.curr_execgrp.forward(is_train=is_train)

    def backward(self):
        self.curr_execgrp.backward()

    def update_metric(self, metric, labels, pre_sliced=False):
        self.curr_execgrp.update_metric(metric, labels, pre_sliced)

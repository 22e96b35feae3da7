"""DataParallelExecutorGroup: one executor per context, each running a slice of the batch."""
import logging
from collections import OrderedDict

from ..base import CODE_DTYPES, MXNetError
from ..io import DataDesc
from ..ndarray import NDArray, concatenate, invoke
from .base_module import ModuleStateError


def split_input_slice(batch_size, work_load_list):
    """Slices of [0, batch_size) proportional to the work loads (Python 3 rounding)."""
    total = sum(work_load_list)
    sizes = [int(round(w * batch_size / total)) for w in work_load_list]
    if sum(sizes) < batch_size:
        sizes[-1] += batch_size - sum(sizes)
    slices, start = [], 0
    for size in sizes:
        stop = min(start + size, batch_size)
        if start >= stop:
            raise ValueError('Too many slices. Some splits are empty.')
        slices.append(slice(start, stop))
        start = stop
    return slices


def _slice_along(array, axis, part):
    if axis == 0:
        return array[part.start:part.stop]
    return invoke('slice_axis', [array], axis=axis, begin=part.start, end=part.stop)


def load_general(sources, targets, major_axis):
    """Copy each source array (or its per-device slices) into the executors' arrays."""
    for src, dsts, axis in zip(sources, targets, major_axis):
        if isinstance(dsts, NDArray):
            src.copyto(dsts)
        elif isinstance(src, (list, tuple)):
            for s, d in zip(src, dsts):
                s.copyto(d)
        else:
            for part, dst in dsts:
                whole = axis < 0 or (part.start == 0 and part.stop == src.shape[axis])
                (src if whole else _slice_along(src, axis, part)).copyto(dst)


def merge_across_devices(outputs, major_axis):
    """Concatenate per-device results along their batch axis (one device: the array itself)."""
    merged = []
    for tensors, axis in zip(outputs, major_axis):
        if axis >= 0 and len(tensors) > 1:
            ctx = tensors[0].context
            merged.append(concatenate([t.as_in_context(ctx) for t in tensors], axis=axis))
        else:
            merged.append(tensors[0])
    return merged


class _SharedParams:
    """What simple_bind reads from a shared executor (arg_dict, grad_dict, aux_dict), gathered
    over all the executors of one context that share parameters."""

    def __init__(self):
        self.arg_dict, self.grad_dict, self.aux_dict, self.output_dict = {}, {}, {}, {}

    def add(self, executor, names=None):
        for name, arr in zip(executor._output_names, executor.outputs):
            if arr.stype != 'default':
                continue
            if name not in self.output_dict or arr.size > self.output_dict[name].size:
                self.output_dict[name] = arr       # the largest one can serve every bucket
        for mine, theirs in ((self.arg_dict, executor.arg_dict),
                             (self.grad_dict, executor.grad_dict),
                             (self.aux_dict, executor.aux_dict)):
            for name, arr in theirs.items():
                if arr is not None and (names is None or name in names or mine is self.aux_dict):
                    mine.setdefault(name, arr)


def _as_descs(shapes):
    return [d if isinstance(d, DataDesc) else DataDesc(*d) for d in shapes]


def _per_context_group2ctxs(group2ctxs, n):
    """One group2ctx dict (or None) per context, from MXNet's accepted forms: None, a list of
    n dicts, or one dict whose values are a context, or a list of 1 or n contexts."""
    if group2ctxs is None:
        return [None] * n
    if isinstance(group2ctxs, list):
        if len(group2ctxs) != n:
            raise ValueError('group2ctxs: %d dicts given for %d contexts' % (len(group2ctxs), n))
        return group2ctxs
    if not isinstance(group2ctxs, dict):
        raise TypeError('group2ctxs must be a dict or a list of dicts, got %s'
                        % type(group2ctxs).__name__)
    per = [{} for _ in range(n)]
    for group, where in group2ctxs.items():
        places = where if isinstance(where, (list, tuple)) else [where]
        if len(places) == 1:
            places = list(places) * n
        if len(places) != n:
            raise ValueError('group2ctxs[%r]: %d contexts given for %d contexts'
                             % (group, len(places), n))
        for d, ctx in zip(per, places):
            d[group] = ctx
    return per


class DataParallelExecutorGroup:
    """Executors of one symbol on several contexts, with the batch split by work load."""

    def __init__(self, symbol, contexts, workload, data_shapes, label_shapes, param_names,
                 for_training, inputs_need_grad, shared_group=None, logger=logging,
                 fixed_param_names=None, grad_req='write', state_names=None, group2ctxs=None):
        self.symbol = symbol
        self.contexts = contexts
        self.workload = workload
        self.group2ctxs = _per_context_group2ctxs(group2ctxs, len(contexts))
        self.param_names = param_names
        self.arg_names = symbol.list_arguments()
        self.aux_names = symbol.list_auxiliary_states()
        self.for_training = for_training
        self.inputs_need_grad = inputs_need_grad
        self.logger = logger
        self.fixed_param_names = list(fixed_param_names or [])
        self.state_names = list(state_names or [])
        self.shared_data_arrays = ([{} for _ in contexts] if shared_group is None
                                   else shared_group.shared_data_arrays)
        # parameters of every group sharing with this one, per context: a parameter that only
        # some buckets have is one array in all of them
        self._shared_params = ([_SharedParams() for _ in contexts] if shared_group is None
                               else shared_group._shared_params)
        self.output_names = symbol.list_outputs()
        # by position: two outputs may share a name (a shared block applied twice)
        self.output_layouts = [DataDesc.get_batch_axis(symbol[i].attr('__layout__'))
                               for i in range(len(self.output_names))]
        self.execs = []
        self._default_execs = None
        self._total_exec_bytes = 0
        self.batch_size = None
        self.slices = None
        self.grad_req = self._grad_reqs(grad_req, [d[0] for d in data_shapes])
        self.bind_exec(data_shapes, label_shapes, shared_group)

    def _grad_reqs(self, grad_req, data_names):
        if isinstance(grad_req, (list, tuple)):
            return dict(zip(self.arg_names, grad_req))
        default = grad_req if isinstance(grad_req, str) else 'write'
        reqs = {}
        for name in self.arg_names:
            if name in self.param_names:
                reqs[name] = 'null' if name in self.fixed_param_names else default
            elif name in data_names:
                reqs[name] = default if self.inputs_need_grad else 'null'
            else:
                reqs[name] = 'null'
        if isinstance(grad_req, dict):
            reqs.update(grad_req)
        if not self.for_training:
            reqs = dict.fromkeys(reqs, 'null')
        return reqs

    # ---- binding -----------------------------------------------------------------------------------
    def _decide_slices(self, shapes):
        """Batch axis of each desc; sets batch_size and slices."""
        axes = []
        for desc in shapes:
            axis = DataDesc.get_batch_axis(desc.layout)
            if axis >= 0:
                size = desc.shape[axis]
                if self.batch_size is None:
                    self.batch_size = size
                    self.slices = split_input_slice(size, self.workload)
                elif size != self.batch_size:
                    raise MXNetError('all data must have the same batch size: batch_size = %d, '
                                     'but %s has shape %s'
                                     % (self.batch_size, desc.name, desc.shape))
            axes.append(axis)
        return axes

    def _sliced_shapes(self, shapes, i, layouts):
        result = []
        for desc, axis in zip(shapes, layouts):
            shape = list(desc.shape)
            if axis >= 0:
                shape[axis] = self.slices[i].stop - self.slices[i].start
            result.append(DataDesc(desc.name, tuple(shape), desc.dtype, desc.layout))
        return result

    def bind_exec(self, data_shapes, label_shapes, shared_group=None, reshape=False):
        self.batch_size = None
        data_shapes = _as_descs(data_shapes)          # (name, shape) pairs are accepted too
        label_shapes = _as_descs(label_shapes) if label_shapes else label_shapes
        self.data_layouts = self._decide_slices(data_shapes)
        self.label_layouts = self._decide_slices(label_shapes) if label_shapes else None
        for i in range(len(self.contexts)):
            shapes = self._sliced_shapes(data_shapes, i, self.data_layouts)
            if label_shapes:
                shapes += self._sliced_shapes(label_shapes, i, self.label_layouts)
            if reshape:
                self.execs[i] = self._default_execs[i].reshape(
                    allow_up_sizing=True, **{d.name: d.shape for d in shapes})
            else:
                self.execs.append(self._bind_ith_exec(i, shapes, shared_group))
        self.data_shapes = data_shapes
        self.label_shapes = label_shapes
        self.data_names = [d.name for d in data_shapes]
        self.label_names = [d.name for d in label_shapes] if label_shapes else []
        self._collect_arrays()

    def _bind_ith_exec(self, i, shapes, shared_group):
        shared = self._shared_params[i]
        if shared_group is not None:
            shared.add(shared_group.execs[i])
        types = {d.name: d.dtype for d in shapes}
        attrs = self.symbol.attr_dict()
        for name in self.arg_names:          # a Variable's __dtype__ overrides the batch dtype
            code = int(attrs.get(name, {}).get('__dtype__', -1))
            if code >= 0 and name in types:
                types[name] = CODE_DTYPES[code]
        executor = self.symbol.simple_bind(
            self.contexts[i], grad_req=self.grad_req, type_dict=types,
            shared_arg_names=self.param_names, shared_exec=shared,
            group2ctx=self.group2ctxs[i], shared_buffer=self.shared_data_arrays[i],
            **{d.name: d.shape for d in shapes})
        self._total_exec_bytes += int(executor.debug_str().split('\n')[-3].split()[1])
        shared.add(executor, self.param_names)
        return executor

    def reshape(self, data_shapes, label_shapes):
        """Executors for new input shapes, reshaped from the original ones (memory shared)."""
        if data_shapes == self.data_shapes and label_shapes == self.label_shapes:
            return
        if self._default_execs is None:
            self._default_execs = list(self.execs)
        saved = (self.batch_size, self.slices, self.data_layouts, self.label_layouts,
                 list(self.execs))
        try:
            self.bind_exec(data_shapes, label_shapes, reshape=True)
        except BaseException:
            # a failed reshape (shapes the network cannot take) keeps the executors it had
            (self.batch_size, self.slices, self.data_layouts, self.label_layouts,
             self.execs[:]) = saved
            raise

    def _collect_arrays(self):
        execs = self.execs
        self.data_arrays = [[(self.slices[i], e.arg_dict[name]) for i, e in enumerate(execs)]
                            for name in self.data_names]
        self.state_arrays = [[e.arg_dict[name] for e in execs] for name in self.state_names]
        self.label_arrays = ([[(self.slices[i], e.arg_dict[name]) for i, e in enumerate(execs)]
                              for name in self.label_names] if self.label_shapes else None)
        positions = [i for i, name in enumerate(self.arg_names) if name in self.param_names]
        self.param_arrays = [[e.arg_arrays[i] for e in execs] for i in positions]
        self.grad_arrays = ([[e.grad_arrays[i] for e in execs] for i in positions]
                            if self.for_training else None)
        self.input_grad_arrays = ([[e.grad_arrays[self.arg_names.index(name)] for e in execs]
                                   for name in self.data_names if name in self.arg_names]
                                  if self.inputs_need_grad else None)
        self.aux_arrays = [[e.aux_arrays[i] for e in execs] for i in range(len(self.aux_names))]

    # ---- parameters ------------------------------------------------------------------------------
    def set_params(self, arg_params, aux_params, allow_extra=False):
        for e in self.execs:
            e.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)

    def get_params(self, arg_params, aux_params):
        """Average each parameter over the devices into the given (CPU) arrays."""
        for name, block in zip(self.param_names, self.param_arrays):
            _average_into(block, arg_params[name])
        for name, block in zip(self.aux_names, self.aux_arrays):
            _average_into(block, aux_params[name])

    # ---- computation ----------------------------------------------------------------------------
    def forward(self, data_batch, is_train=None):
        """Load the batch into every executor and run forward."""
        load_general(data_batch.data, self.data_arrays, self.data_layouts)
        if is_train is None:
            is_train = self.for_training
        if self.label_arrays is not None and data_batch.label:
            load_general(data_batch.label, self.label_arrays, self.label_layouts)
        for e in self.execs:
            e.forward(is_train=is_train)

    def backward(self, out_grads=None):
        if not self.for_training:
            raise ModuleStateError('backward: the module is bound with for_training=False; '
                                   're-bind with for_training=True to run backward')
        out_grads = [] if out_grads is None else out_grads
        for i, (e, part) in enumerate(zip(self.execs, self.slices)):
            sliced = []
            for grad, axis in zip(out_grads, self.output_layouts):
                if axis >= 0:
                    sliced.append(_slice_along(grad, axis, part).as_in_context(self.contexts[i]))
                else:
                    sliced.append(grad.as_in_context(self.contexts[i]))
            e.backward(out_grads=sliced or None)

    def get_outputs(self, merge_multi_context=True, begin=0, end=None):
        end = len(self.output_names) if end is None else end
        outputs = [[e.outputs[i] for e in self.execs] for i in range(begin, end)]
        if merge_multi_context:
            return merge_across_devices(outputs, self.output_layouts[begin:end])
        return outputs

    def get_output_shapes(self):
        shapes = []
        for name, out, axis in zip(self.output_names, self.execs[0].outputs,
                                   self.output_layouts):
            shape = list(out.shape)
            if axis >= 0:
                shape[axis] = self.batch_size
            shapes.append((name, tuple(shape)))
        return shapes

    def get_states(self, merge_multi_context=True):
        assert not merge_multi_context, 'merge_multi_context=True is not supported for states'
        return self.state_arrays

    def set_states(self, states=None, value=None):
        if states is not None:
            assert value is None, 'Only one of states & value can be specified.'
            load_general(states, self.state_arrays, [0] * len(states))
        else:
            assert value is not None, 'At least one of states & value must be specified.'
            for block in self.state_arrays:
                for arr in block:
                    arr[:] = value

    def get_input_grads(self, merge_multi_context=True):
        assert self.inputs_need_grad
        if merge_multi_context:
            return merge_across_devices(self.input_grad_arrays, self.data_layouts)
        return self.input_grad_arrays

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        for i, (e, part) in enumerate(zip(self.execs, self.slices)):
            if pre_sliced:
                labels_slice = labels[i]
            else:
                labels_slice = [label if axis < 0 else _slice_along(label, axis, part)
                                for label, axis in zip(labels, self.label_layouts or [])]
            eval_metric.update_dict(OrderedDict(zip(self.label_names, labels_slice)),
                                    OrderedDict(zip(self.output_names, e.outputs)))

    def install_monitor(self, mon):
        for e in self.execs:
            mon.install(e)


def _average_into(block, target):
    if len(block) == 1:
        block[0].copyto(target)
        return
    total = block[0].as_in_context(target.context).astype('float64')
    for arr in block[1:]:
        total += arr.as_in_context(target.context).astype('float64')
    (total / len(block)).astype(target.dtype).copyto(target)

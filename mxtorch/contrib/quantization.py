"""mx.contrib.quantization (also mx.contrib.quant): int8 models from float32 ones.

`quantize_model` rewrites a Symbol as MXNet 1.9.1's quantization pass does: each quantizable
layer becomes its `_contrib_quantized_*` operator (named `quantized_<layer>`), data entering
the int8 part goes through `_contrib_quantize_v2` (`<input>_quantize`), parameters are
quantized offline into `<param>_quantize` with `_min` / `_max` variables, the int32 output of
conv and fully-connected layers is brought back to int8 by `_contrib_requantize`
(`requantize_<layer>`), and float consumers read `_contrib_dequantize` (`<layer>_dequantize`).
Calibration ('naive': the min and max of each layer output on calibration data; 'entropy': the
KL-divergence threshold of its histogram) writes min_calib_range / max_calib_range on the
quantize and requantize nodes; 'none' leaves the ranges to run time.

Layers quantized (ops/quantized_nn.quantized_form): Convolution, FullyConnected and Embedding
always; Pooling (max, avg), Activation (relu), Flatten, Concat, elemwise_add and elemwise_mul
always in quantize_mode 'full', and in 'smart' mode where int8 flows in and on to another
quantized layer. MXNet's MKL-DNN fusion (`get_backend_symbol('MKLDNN_QUANTIZE')`) is not
applied: `quantize_model_mkldnn` gives the unfused graph, which computes the same up to
rounding (graphs fused by MXNet load and run: ops/mkldnn_subgraph.py).
"""
import ctypes  # noqa: F401  (MXNet's module namespace, which `import *` copies, has these)
import logging
import os
import shutil  # noqa: F401
import warnings

import numpy as np

try:
    from scipy import stats
except ImportError:          # entropy calibration needs only numpy here
    stats = None

from ..base import (MXNetError, NDArrayHandle, SymbolHandle, _LIB, c_array, c_str,  # noqa: F401
                    c_str_array, check_call, mx_uint, py_str)
from ..capi import as_array
from ..context import Context, cpu
from ..io import DataBatch, DataDesc, DataIter
from ..module import Module
from ..ops.quantized_nn import DEQUANTIZE, QUANTIZE, REQUANTIZE, output_tag, quantized_form
from ..ops.registry import get_op
from ..symbol import Symbol
from ..symbol import load as sym_load
from ..symbol.graph import Node, topo_order
from .. import ndarray
from ..ndarray import NDArray  # noqa: F401
from ..ndarray import load as nd_load, save as nd_save  # noqa: F401

def _fmt(value):
    """A calibrated range as MXNet writes it (C++ std::to_string of a float)."""
    return '%f' % float(np.float32(value))


class _Pass:
    """One rewrite of a float graph into its quantized graph."""

    def __init__(self, sym, excluded_symbols, excluded_operators, offline_params,
                 quantized_dtype, quantize_mode):
        self.excluded_symbols = set(excluded_symbols or ())
        self.excluded_operators = set(excluded_operators or ())
        self.offline = set(offline_params or ())
        self.dtype = quantized_dtype
        self.mode = quantize_mode
        self.sym = sym
        self.mirror = {}          # id(float node) -> new node
        self.quantized = {}       # id(float node) -> entries (out, min, max) of its int8 output
        self.quantize_nodes = {}  # (id(node), index) -> quantize_v2 / offline variables
        self.dequantized = {}     # (id(node), index) -> dequantize entry
        self.calib_layers = []

    def run(self):
        order = topo_order(self.sym._entries)
        self.marked = self._mark(order)
        for node in order:
            if node.op is None:
                self.mirror[id(node)] = node
            elif id(node) in self.marked:
                self._quantize_node(node)
            else:
                self._copy_node(node)
        heads = [self._float_entry(e) for e in self.sym._entries]
        return Symbol(heads), self.calib_layers

    # -- decisions --------------------------------------------------------------------------
    def _mark(self, order):
        """ids of the nodes to quantize: conv / fc / embedding always; the others ('maybe')
        in 'full' mode always, in 'smart' mode where an input is int8 and some consumer is
        quantized too (so that int8 flows on to a conv or fc)."""
        marked = set()
        for node in order:
            if not self._allowed(node):
                continue
            if quantized_form(node.op, node.params)[3] or self.mode == 'full' or \
                    any(id(c) in marked for c, _ in node.inputs):
                marked.add(id(node))
        if self.mode == 'smart':
            consumers = {}
            for node in order:
                for c, _ in node.inputs:
                    consumers.setdefault(id(c), []).append(node)
            for node in reversed(order):
                if id(node) in marked and not quantized_form(node.op, node.params)[3] and \
                        not any(id(n) in marked for n in consumers.get(id(node), ())):
                    marked.discard(id(node))
        return marked

    def _allowed(self, node):
        return node.op is not None and quantized_form(node.op, node.params) is not None and \
            node.name not in self.excluded_symbols and \
            node.op.name not in self.excluded_operators

    # -- entries ------------------------------------------------------------------------------
    def _float_entry(self, entry):
        """The float value of an old entry in the new graph."""
        node, index = entry
        if id(node) in self.quantized:
            key = (id(node), index)
            if key not in self.dequantized:
                q = self.quantized[id(node)]
                deq = Node(get_op(DEQUANTIZE), node.name + '_dequantize', {}, list(q))
                self.dequantized[key] = (deq, 0)
            return self.dequantized[key]
        return (self.mirror[id(node)], index)

    def _int8_entries(self, entry):
        """(value, min, max) entries of an old entry as int8 in the new graph."""
        node, index = entry
        if id(node) in self.quantized:
            return self.quantized[id(node)]
        key = (id(node), index)
        if key not in self.quantize_nodes:
            if node.op is None and node.name in self.offline:
                base = node.name + '_quantize'
                self.quantize_nodes[key] = tuple((Node(None, n, {}, []), 0) for n in (
                    base, base + '_min', base + '_max'))
            else:
                name = node.name if node.op is None else '%s_%s' % (
                    node.name, output_tag(node.op, node.params, index))
                qnode = Node(get_op(QUANTIZE), name + '_quantize',
                             {'out_type': self.dtype}, [self._float_entry(entry)])
                layer = node.name if node.op is None else node.output_names()[index]
                if layer not in self.calib_layers:
                    self.calib_layers.append(layer)
                self.quantize_nodes[key] = ((qnode, 0), (qnode, 1), (qnode, 2))
        return self.quantize_nodes[key]

    # -- nodes --------------------------------------------------------------------------------
    def _copy_node(self, node):
        self.mirror[id(node)] = Node(node.op, node.name, dict(node.attrs),
                                     [self._float_entry(e) for e in node.inputs],
                                     node.subgraphs)

    def _quantize_node(self, node):
        qop, which, requantize, _, calibrated_output = quantized_form(node.op, node.params)
        n_args = node.num_args()
        which = range(n_args) if which is None else which
        values, ranges = [], []
        for i, entry in enumerate(node.inputs):
            if i in which:
                q = self._int8_entries(entry)
                values.append(q[0])
                ranges += [q[1], q[2]]
            else:
                values.append(self._float_entry(entry))
        attrs = {k: v for k, v in node.attrs.items()
                 if k in qop.params or k.startswith('__')}
        new = Node(qop, 'quantized_' + node.name, attrs, values + ranges)
        self.mirror[id(node)] = new
        out = ((new, 0), (new, 1), (new, 2))
        layer = node.output_names()[0]
        if requantize:
            req = Node(get_op(REQUANTIZE), 'requantize_' + node.name,
                       {'out_type': self.dtype}, list(out))
            out = ((req, 0), (req, 1), (req, 2))
            self.calib_layers.append(layer)
        elif calibrated_output:
            self.calib_layers.append(layer)
        self.quantized[id(node)] = out


def _quantize_symbol(sym, ctx, excluded_symbols=None, excluded_operators=None,
                     offline_params=None, quantized_dtype='int8', quantize_mode='smart',
                     quantize_granularity='tensor-wise'):
    """(quantized Symbol, names of the layer outputs to calibrate)."""
    if excluded_symbols is not None and not isinstance(excluded_symbols, list):
        raise MXNetError('excluded_symbols must be a list, got %s' % type(excluded_symbols))
    if excluded_operators is not None and not isinstance(excluded_operators, list):
        raise MXNetError('excluded_operators must be a list, got %s' % type(excluded_operators))
    if quantize_mode not in ('smart', 'full'):
        raise MXNetError("quantize_mode must be 'smart' or 'full', got %r" % (quantize_mode,))
    return _Pass(sym, excluded_symbols, excluded_operators, offline_params, quantized_dtype,
                 quantize_mode).run()


def _calibrate_quantized_sym(qsym, th_dict):
    """qsym with min_calib_range / max_calib_range from th_dict ({layer output: (min, max)})
    on the quantize_v2 and requantize nodes, and on quantized layers that take their output
    range themselves (batch_norm)."""
    if not th_dict:
        return qsym
    order = topo_order(qsym._entries)
    requantized = {n.name[len('requantize_'):] for n in order
                   if n.op is not None and n.op.name == REQUANTIZE}
    for node in order:
        if node.op is None:
            continue
        key = None
        if node.op.name == QUANTIZE:
            src, index = node.inputs[0]
            key = src.name if src.op is None else src.output_names()[index]
        elif node.op.name == REQUANTIZE and node.name.startswith('requantize_'):
            key = node.name[len('requantize_'):] + '_output'
        elif node.name.startswith('quantized_') and 'min_calib_range' in node.op.params and \
                node.name[len('quantized_'):] not in requantized:
            key = node.name[len('quantized_'):] + '_output'      # its own output range
        if key is not None and key in th_dict:
            lo, hi = th_dict[key]
            node.attrs['min_calib_range'] = _fmt(lo)
            node.attrs['max_calib_range'] = _fmt(hi)
    return Symbol(qsym._entries)


def _quantize_params(qsym, params, th_dict):
    """The arguments of qsym: `<param>_quantize` (int8 over the param's min and max) with its
    `_min` / `_max`, and the others as given."""
    quantized = {}
    for name in qsym.list_arguments():
        if name.endswith(('weight_quantize', 'bias_quantize')):
            param = params[name[:-len('_quantize')]]
            val, vmin, vmax = ndarray.contrib.quantize(data=param, min_range=ndarray.min(param),
                                                       max_range=ndarray.max(param),
                                                       out_type='int8')
            quantized[name] = val
            quantized[name + '_min'] = vmin
            quantized[name + '_max'] = vmax
        elif name in params:
            quantized[name] = params[name]
        elif name.endswith('_min') and name[:-4] in th_dict:
            quantized[name] = ndarray.array([th_dict[name[:-4]][0]])
        elif name.endswith('_max') and name[:-4] in th_dict:
            quantized[name] = ndarray.array([th_dict[name[:-4]][1]])
    return quantized


# ---------------------------------------------------------------------------------------------
# calibration statistics
# ---------------------------------------------------------------------------------------------
def combine_histogram(old_hist, arr, new_min, new_max, new_th):
    """The histogram tuple (hist, edges, min, max, threshold) with arr added; widened
    symmetrically (keeping the bin width) when arr reaches past the old threshold."""
    hist, edges, old_min, old_max, old_th = old_hist
    if new_th <= old_th:
        more, _ = np.histogram(arr, bins=len(hist), range=(-old_th, old_th))
        return hist + more, edges, min(old_min, new_min), max(old_max, new_max), old_th
    width = 2 * old_th / len(hist)
    extra = int((new_th - old_th) // width + 1)
    bins = len(hist) + 2 * extra
    th = extra * width + old_th
    merged, new_edges = np.histogram(arr, bins=bins, range=(-th, th))
    merged[extra:bins - extra] += hist
    return merged, new_edges, min(old_min, new_min), max(old_max, new_max), th


class _LayerHistogramCollector:
    """Monitor callback keeping a histogram of each included layer output."""

    def __init__(self, num_bins=8001, include_layer=None, logger=None):
        self.hist_dict = {}
        self.num_bins = num_bins
        self.include_layer = include_layer
        self.logger = logger

    def collect(self, name, arr):
        name = py_str(name)
        if self.include_layer is not None and name not in self.include_layer:
            return
        arr = as_array(arr).asnumpy()
        lo, hi = float(np.min(arr)), float(np.max(arr))
        th = max(abs(lo), abs(hi))
        if name in self.hist_dict:
            self.hist_dict[name] = combine_histogram(self.hist_dict[name], arr, lo, hi, th)
        else:
            hist, edges = np.histogram(arr, bins=self.num_bins, range=(-th, th))
            self.hist_dict[name] = (hist, edges, lo, hi, th)
        if self.logger:
            self.logger.debug('Collecting layer %s histogram of shape %s', name, arr.shape)


class _LayerOutputMinMaxCollector:
    """Monitor callback keeping the min and max of each included layer output."""

    def __init__(self, quantized_dtype='int8', include_layer=None, logger=None):
        self.min_max_dict = {}
        self.quantized_dtype = quantized_dtype
        self.include_layer = include_layer
        self.logger = logger

    def collect(self, name, arr):
        name = py_str(name)
        if self.include_layer is not None and name not in self.include_layer:
            return
        arr = as_array(arr)
        lo, hi = float(arr.min().asscalar()), float(arr.max().asscalar())
        if name in self.min_max_dict:
            old = self.min_max_dict[name]
            lo, hi = min(old[0], lo), max(old[1], hi)
        self.min_max_dict[name] = (lo, hi)
        if self.logger:
            self.logger.debug('Collecting layer %s min_range=%f, max_range=%f', name, lo, hi)


def _collect_layer_statistics(mod, data, collector, max_num_examples=None, logger=None):
    if not isinstance(data, DataIter):
        raise ValueError('Only supports data as a type of DataIter, while received type %s'
                         % type(data))
    mod._exec_group.execs[0].set_monitor_callback(collector.collect, monitor_all=True)
    num_batches = num_examples = 0
    for batch in data:
        mod.forward(data_batch=batch, is_train=False)
        num_batches += 1
        num_examples += data.batch_size
        if max_num_examples is not None and num_examples >= max_num_examples:
            break
    mod._exec_group.execs[0].set_monitor_callback(None)
    if logger is not None:
        logger.info('Collected statistics from %d batches with batch_size=%d',
                    num_batches, data.batch_size)
    return num_examples


def _collect_layer_output_min_max(mod, data, quantized_dtype, include_layer=None,
                                  max_num_examples=None, logger=None):
    collector = _LayerOutputMinMaxCollector(quantized_dtype, include_layer, logger)
    n = _collect_layer_statistics(mod, data, collector, max_num_examples, logger)
    return collector.min_max_dict, n


def _collect_layer_histogram(mod, data, include_layer=None, max_num_examples=None,
                             logger=None):
    collector = _LayerHistogramCollector(include_layer=include_layer, logger=logger)
    n = _collect_layer_statistics(mod, data, collector, max_num_examples, logger)
    return collector.hist_dict, n


def _smooth_distribution(p, eps=0.0001):
    """p (a histogram) with its zeros raised to eps, the mass taken off the non-zero bins."""
    is_zeros = (p == 0).astype(np.float32)
    n_zeros = is_zeros.sum()
    n_nonzeros = p.size - n_zeros
    if not n_nonzeros:
        raise ValueError('The discrete probability distribution is malformed. All entries are 0.')
    eps1 = eps * float(n_zeros) / float(n_nonzeros)
    if eps1 >= 1.0:
        raise ValueError('n_zeros=%d, n_nonzeros=%d, eps1=%f' % (n_zeros, n_nonzeros, eps1))
    return p.astype(np.float32) + eps * is_zeros - eps1 * (1 - is_zeros)


def _get_optimal_threshold(hist_data, quantized_dtype, num_quantized_bins=255):
    """(min, max, threshold, divergence) of a histogram tuple: the threshold minimising the
    KL divergence of its quantized version (twice the bins for non-negative data in uint8)."""
    hist, edges, min_val, max_val, _ = hist_data
    if len(hist) % 2 != 1:
        raise ValueError('the histogram must have an odd number of bins, got %d' % len(hist))
    if min_val >= 0 and quantized_dtype in ('auto', 'uint8'):
        num_quantized_bins = num_quantized_bins * 2 + 1
    threshold, divergence = ndarray.contrib.calibrate_entropy(
        hist=ndarray.array(hist), hist_edges=ndarray.array(edges),
        num_quantized_bins=num_quantized_bins)
    return min_val, max_val, threshold.asnumpy(), divergence.asnumpy()


def _get_optimal_thresholds(hist_dict, quantized_dtype, num_quantized_bins=255, logger=None):
    """{layer: (min, max)} from {layer: histogram tuple}: (0, th) for non-negative layers in
    uint8, else (-th, th)."""
    if logger is not None:
        logger.info('Calculating optimal thresholds for quantization using KL divergence with '
                    'num_quantized_bins=%d', num_quantized_bins)
    th_dict = {}
    for name in list(hist_dict):
        min_val, max_val, th, divergence = _get_optimal_threshold(
            hist_dict.pop(name), quantized_dtype, num_quantized_bins)
        th = float(np.asarray(th).reshape(-1)[0])
        if min_val >= 0 and quantized_dtype in ('auto', 'uint8'):
            th_dict[name] = (0, th)
        else:
            th_dict[name] = (-th, th)
        if logger:
            logger.debug('layer=%s, min_val=%f, max_val=%f, th=%f, divergence=%f', name,
                         min_val, max_val, th, float(np.asarray(divergence).reshape(-1)[0]))
    return th_dict


def _load_sym(sym, logger=None):
    if isinstance(sym, str):
        if logger:
            logger.info('Loading symbol from file %s', sym)
        return sym_load(sym)
    if isinstance(sym, Symbol):
        return sym
    raise ValueError('_load_sym only accepts Symbol or path to the symbol file, while '
                     'received type %s' % type(sym))


def _load_params(params, logger=None):
    if isinstance(params, str):
        if logger:
            logger.info('Loading params from file %s', params)
        arg_params, aux_params = {}, {}
        for k, v in ndarray.load(params).items():
            kind, name = k.split(':', 1)
            (arg_params if kind == 'arg' else aux_params)[name] = v
        return arg_params, aux_params
    if isinstance(params, (tuple, list)) and len(params) == 2:
        return params[0], params[1]
    raise ValueError('Unsupported params provided. Must be either a path to the param file or '
                     'a pair of dictionaries representing arg_params and aux_params')


class _DataIterWrapper(DataIter):
    """A DataIter over any iterable of batches (a Gluon DataLoader)."""

    def __init__(self, calib_data):
        super().__init__()
        self._data = calib_data
        try:
            first = next(iter(calib_data))
        except TypeError as err:
            raise TypeError('calib_data is not a valid iterator. %s' % err) from None
        first = list(first) if isinstance(first, (list, tuple)) else [first]
        if len(first) >= 3:
            self.provide_data = [DataDesc(name='data%d' % i, shape=x.shape)
                                 for i, x in enumerate(first)]
        else:
            self.provide_data = [DataDesc(name='data', shape=first[0].shape)] + \
                [DataDesc(name='data%d' % i, shape=x.shape) for i, x in enumerate(first[1:])]
        self.provide_label = []
        self.batch_size = first[0].shape[0]
        self.reset()

    def reset(self):
        self._iter = iter(self._data)

    def next(self):
        batch = next(self._iter)
        batch = list(batch) if isinstance(batch, (list, tuple)) else [batch]
        return DataBatch(data=batch)


def _as_data_iter(calib_data):
    if isinstance(calib_data, DataIter):
        return calib_data, calib_data.provide_data
    calib_data = _DataIterWrapper(calib_data)
    return calib_data, calib_data.provide_data


def _check_options(quantized_dtype, quantize_granularity):
    if quantized_dtype not in ('int8', 'uint8', 'auto'):
        raise ValueError('unknown quantized_dtype %s received, expected `int8`, `uint8` or '
                         '`auto`' % quantized_dtype)
    if quantize_granularity not in ('tensor-wise', 'channel-wise'):
        raise ValueError('unkonwn quantize_granularity %s received, expected `tensor-wise` or '
                         '`channel-wise`.' % quantize_granularity)


def _check_list(value, what):
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError('%s must be a list of strings representing the names of the symbols '
                         'that will not be quantized, while received type %s'
                         % (what, type(value)))
    return value


# ---------------------------------------------------------------------------------------------
# the user-level API
# ---------------------------------------------------------------------------------------------
def quantize_model(sym, arg_params, aux_params, data_names=('data',),
                   label_names=('softmax_label',), ctx=cpu(), excluded_sym_names=None,
                   excluded_op_names=None, calib_mode='entropy', calib_data=None,
                   num_calib_examples=None, quantized_dtype='int8', quantize_mode='smart',
                   quantize_granularity='tensor-wise', logger=None):
    """(quantized symbol, quantized arg_params, aux_params) of a float32 model, calibrated on
    calib_data (calib_mode 'naive' or 'entropy') or not ('none')."""
    excluded_sym_names = _check_list(excluded_sym_names, 'excluded_sym_names')
    excluded_op_names = _check_list(excluded_op_names, 'excluded_op_names')
    if logger:
        logger.info('Quantizing symbol')
    _check_options(quantized_dtype, quantize_granularity)
    qsym, calib_layer = _quantize_symbol(
        sym, ctx, excluded_symbols=excluded_sym_names, excluded_operators=excluded_op_names,
        offline_params=list(arg_params.keys()), quantized_dtype=quantized_dtype,
        quantize_mode=quantize_mode, quantize_granularity=quantize_granularity)
    th_dict = {}
    if calib_mode is not None and calib_mode != 'none':
        if not isinstance(ctx, Context):
            raise ValueError('currently only supports single ctx, while received %s' % str(ctx))
        if calib_data is None:
            raise ValueError('calib_data must be provided when calib_mode=%s' % calib_mode)
        if not isinstance(calib_data, DataIter):
            raise ValueError('calib_data must be of DataIter type when calib_mode=%s, while '
                             'received type %s' % (calib_mode, type(calib_data)))
        if calib_mode not in ('naive', 'entropy'):
            raise ValueError('unknown calibration mode %s received, expected `none`, `naive`, '
                             'or `entropy`' % calib_mode)
        mod = Module(symbol=sym, data_names=data_names, label_names=label_names, context=ctx)
        if len(calib_data.provide_label) > 0:
            mod.bind(for_training=False, data_shapes=calib_data.provide_data,
                     label_shapes=calib_data.provide_label)
        else:
            mod.bind(for_training=False, data_shapes=calib_data.provide_data)
        mod.set_params(arg_params, aux_params)
        if calib_mode == 'entropy':
            hist_dict, n = _collect_layer_histogram(mod, calib_data, calib_layer,
                                                    num_calib_examples, logger)
            th_dict = _get_optimal_thresholds(hist_dict, quantized_dtype, logger=logger)
        else:
            th_dict, n = _collect_layer_output_min_max(mod, calib_data, quantized_dtype,
                                                       calib_layer, num_calib_examples, logger)
        if logger:
            logger.info('Collected layer outputs from FP32 model using %d examples', n)
        qsym = _calibrate_quantized_sym(qsym, th_dict)
    if logger:
        logger.info('Quantizing parameters')
    return qsym, _quantize_params(qsym, arg_params, th_dict), aux_params


def quantize_model_mkldnn(sym, arg_params, aux_params, data_names=('data',),
                          label_names=('softmax_label',), ctx=cpu(), excluded_sym_names=None,
                          excluded_op_names=None, calib_mode='entropy', calib_data=None,
                          num_calib_examples=None, quantized_dtype='int8',
                          quantize_mode='smart', quantize_granularity='tensor-wise',
                          logger=None):
    """quantize_model for the CPU (MXNet fuses the graph for MKL-DNN first; not here: the
    unfused quantized graph computes the same)."""
    if not isinstance(ctx, Context):
        raise ValueError('currently only supports single ctx, while received %s' % str(ctx))
    if ctx.device_type != 'cpu':
        raise ValueError('quantize_model_mkldnn only support Intel cpu platform with MKL-DNN '
                         'Backend')
    return quantize_model(sym, arg_params, aux_params, data_names, label_names, ctx,
                          excluded_sym_names, excluded_op_names, calib_mode, calib_data,
                          num_calib_examples, quantized_dtype, quantize_mode,
                          quantize_granularity, logger)


def quantize_graph(sym, arg_params, aux_params, ctx=cpu(), excluded_sym_names=None,
                   excluded_op_names=None, calib_mode='entropy', quantized_dtype='int8',
                   quantize_mode='full', quantize_granularity='tensor-wise',
                   LayerOutputCollector=None, logger=None):
    """(quantized symbol, quantized arg_params, aux_params, collector): the collector (for
    calib_mode 'naive', 'entropy' or 'customize') is to be installed with
    set_monitor_callback(collector.collect, monitor_all=True), then given to calib_graph."""
    excluded_sym_names = _check_list(excluded_sym_names, 'excluded_sym_names')
    if not isinstance(ctx, Context):
        raise ValueError('currently only supports single ctx, while received %s' % str(ctx))
    _check_options(quantized_dtype, quantize_granularity)
    qsym, calib_layer = _quantize_symbol(
        sym, ctx, excluded_symbols=excluded_sym_names, excluded_operators=excluded_op_names,
        offline_params=list(arg_params.keys()), quantized_dtype=quantized_dtype,
        quantize_mode=quantize_mode, quantize_granularity=quantize_granularity)
    collector = None
    if calib_mode is not None and calib_mode != 'none':
        if calib_mode == 'entropy':
            collector = _LayerHistogramCollector(include_layer=calib_layer, logger=logger)
        elif calib_mode == 'naive':
            collector = _LayerOutputMinMaxCollector(quantized_dtype=quantized_dtype,
                                                    include_layer=calib_layer, logger=logger)
        elif calib_mode == 'customize' and LayerOutputCollector is not None:
            collector = LayerOutputCollector
        else:
            raise ValueError('unknown calibration mode %s received, expected `none`, `naive`, '
                             '`entropy` or `customize`' % calib_mode)
    return qsym, _quantize_params(qsym, arg_params, {}), aux_params, collector


def calib_graph(qsym, arg_params, aux_params, collector, calib_mode='entropy',
                quantized_dtype='int8', logger=logging):
    """(calibrated symbol, quantized arg_params, aux_params) from a filled collector."""
    if calib_mode == 'entropy':
        th_dict = _get_optimal_thresholds(collector.hist_dict, quantized_dtype, logger=logger)
    elif calib_mode in ('naive', 'customize'):
        th_dict = collector.min_max_dict
    elif calib_mode is None or calib_mode == 'none':
        raise ValueError('please set calibration mode to naive or entropy.')
    else:
        raise ValueError('unknown calibration mode %s received, expected `none`, `naive`, '
                         '`entropy` or `customize`' % calib_mode)
    qsym = _calibrate_quantized_sym(qsym, th_dict)
    return qsym, _quantize_params(qsym, arg_params, th_dict), aux_params


def quantize_net_v2(network, quantized_dtype='auto', quantize_mode='full',
                    quantize_granularity='tensor-wise', exclude_layers=None,
                    exclude_layers_match=None, exclude_operators=None, calib_data=None,
                    data_shapes=None, calib_mode='none', num_calib_examples=None, ctx=cpu(),
                    LayerOutputCollector=None, logger=None):
    """A quantized gluon SymbolBlock of a float32 HybridBlock."""
    import tempfile
    from .. import model as _model
    from ..gluon import SymbolBlock
    network.hybridize()
    if calib_data is not None:
        calib_data, shapes = _as_data_iter(calib_data)
        data_shapes = data_shapes or shapes
    if not data_shapes:
        raise ValueError('data_shapes required')
    data_shapes = [d if isinstance(d, DataDesc) else DataDesc(*d) for d in data_shapes]
    network(*[ndarray.zeros(d.shape) for d in data_shapes])
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, 'net')
        network.export(prefix, epoch=0)
        symnet, args, auxs = _model.load_checkpoint(prefix, 0)
    exclude_layers = list(exclude_layers or [])
    for pattern in exclude_layers_match or []:
        exclude_layers += [s.name for s in symnet.get_internals() if pattern in s.name]
    qsym, qarg_params, aux_params, collector = quantize_graph(
        symnet, args, auxs, ctx=ctx, excluded_sym_names=exclude_layers,
        excluded_op_names=exclude_operators, calib_mode=calib_mode,
        quantized_dtype=quantized_dtype, quantize_mode=quantize_mode,
        quantize_granularity=quantize_granularity, LayerOutputCollector=LayerOutputCollector,
        logger=logger)
    data_names = [d.name for d in data_shapes]
    if calib_mode is not None and calib_mode != 'none':
        if calib_data is None:
            raise ValueError('calib_data must be provided when calib_mode=%s' % calib_mode)
        mod = Module(symbol=symnet, context=ctx, data_names=data_names, label_names=None)
        mod.bind(for_training=False, data_shapes=data_shapes)
        mod.set_params(args, auxs, allow_missing=False, force_init=True)
        _collect_layer_statistics(mod, calib_data, collector, num_calib_examples, logger)
        qsym, qarg_params, aux_params = calib_graph(qsym, args, auxs, collector, calib_mode,
                                                    quantized_dtype, logger)
    from .. import symbol as _sym
    net = SymbolBlock(qsym, [_sym.var(n) for n in data_names])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'quantized.params')
        saved = {'arg:%s' % k: v.as_in_context(cpu()) for k, v in qarg_params.items()}
        saved.update({'aux:%s' % k: v.as_in_context(cpu()) for k, v in aux_params.items()})
        ndarray.save(path, saved)
        net.collect_params().load(path, cast_dtype=True, dtype_source='saved')
        net.collect_params().reset_ctx(ctx)
    return net


def quantize_net(network, quantized_dtype='auto', quantize_mode='full', exclude_layers=None,
                 exclude_layers_match=None, exclude_operators=None, calib_data=None,
                 data_shapes=None, calib_mode='none', num_calib_examples=None, ctx=cpu(),
                 logger=None):
    """quantize_net_v2 with tensor-wise granularity (deprecated in MXNet 2.0)."""
    warnings.warn('WARNING: This will be deprecated after MXNet 2.0, please use quantize_net_v2.')
    return quantize_net_v2(network, quantized_dtype, quantize_mode, 'tensor-wise',
                           exclude_layers, exclude_layers_match, exclude_operators, calib_data,
                           data_shapes, calib_mode, num_calib_examples, ctx, None, logger)

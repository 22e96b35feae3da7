"""Attention operators of mx.contrib (GluonNLP's transformer and BERT blocks): div_sqrt_dim and
the interleaved multi-head matmuls.

The projections are sequence-major and interleaved per head: self-attention's
`queries_keys_values` is (seq, batch, heads * 3 * head_dim) read as (seq, batch, heads, 3,
head_dim) -- q, k, v of a head side by side --, encoder-decoder attention's `keys_values` is
(seq, batch, heads * 2 * head_dim) read as (..., heads, 2, head_dim). Attention scores are
(batch * heads, query_seq, key_seq), batch-major; the queries are scaled by 1/sqrt(head_dim)
before the product.
"""
import math

import torch

from .params import Int
from .registry import OpDef, register
from .shapes import merge, require, same_shape


def _div_sqrt_dim(p, data):
    out = data / math.sqrt(data.shape[-1])
    return out if out.dtype == data.dtype else out.to(data.dtype)


register(OpDef('_contrib_div_sqrt_dim', _div_sqrt_dim, infer_shape=same_shape))


def _split_heads(op, x, heads, parts, name):
    """(seq, batch, heads*parts*d) -> `parts` tensors (batch*heads, seq, d)."""
    require(x.dim() == 3, '%s: %s must be 3-D (seq, batch, features), got shape %s', op, name,
            tuple(x.shape))
    seq, batch, features = x.shape
    require(heads > 0 and features % (heads * parts) == 0, '%s: the last dim of %s (%d) must '
            'be a multiple of heads * %d = %d', op, name, features, parts, heads * parts)
    x = x.reshape(seq, batch, heads, parts, features // (heads * parts))
    x = x.permute(3, 1, 2, 0, 4).reshape(parts, batch * heads, seq, -1)
    return x.unbind(0)


def _merge_heads(x, batch, heads):
    """(batch*heads, seq, d) -> (seq, batch, heads*d)."""
    _, seq, d = x.shape
    return x.reshape(batch, heads, seq, d).permute(2, 0, 1, 3).reshape(seq, batch, heads * d)


def _scores(q, k):
    return torch.bmm(q / math.sqrt(q.shape[-1]), k.transpose(1, 2))


def _selfatt_qk(p, qkv):
    q, k, _ = _split_heads('interleaved_matmul_selfatt_qk', qkv, p.heads, 3,
                           'queries_keys_values')
    return _scores(q, k)


def _selfatt_valatt(p, qkv, attention):
    _, _, v = _split_heads('interleaved_matmul_selfatt_valatt', qkv, p.heads, 3,
                           'queries_keys_values')
    return _merge_heads(torch.bmm(attention, v), qkv.shape[1], p.heads)


def _encdec_qk(p, queries, keys_values):
    q, = _split_heads('interleaved_matmul_encdec_qk', queries, p.heads, 1, 'queries')
    k, _ = _split_heads('interleaved_matmul_encdec_qk', keys_values, p.heads, 2, 'keys_values')
    return _scores(q, k)


def _encdec_valatt(p, keys_values, attention):
    _, v = _split_heads('interleaved_matmul_encdec_valatt', keys_values, p.heads, 2,
                        'keys_values')
    return _merge_heads(torch.bmm(attention, v), keys_values.shape[1], p.heads)


def _qk_shape(first, last):
    """Shape rule of a qk op: scores (batch*heads, first's seq, last's seq)."""
    def rule(p, ins, outs):
        a, b = ins[first], ins[last]
        if a is None or b is None:
            return ins, outs
        return ins, [merge(outs[0], (a[1] * p.heads, a[0], b[0]))]
    return rule


def _valatt_shape(parts):
    def rule(p, ins, outs):
        values = ins[0]
        if values is None:
            return ins, outs
        out_seq = ins[1][1] if ins[1] is not None else 0
        return ins, [merge(outs[0], (out_seq, values[1], values[2] // parts))]
    return rule


_HEADS = {'heads': Int()}
register(OpDef('_contrib_interleaved_matmul_selfatt_qk', _selfatt_qk, params=_HEADS,
               inputs=('queries_keys_values',), infer_shape=_qk_shape(0, 0)))
register(OpDef('_contrib_interleaved_matmul_selfatt_valatt', _selfatt_valatt, params=_HEADS,
               inputs=('queries_keys_values', 'attention'), infer_shape=_valatt_shape(3)))
register(OpDef('_contrib_interleaved_matmul_encdec_qk', _encdec_qk, params=_HEADS,
               inputs=('queries', 'keys_values'), infer_shape=_qk_shape(0, 1)))
register(OpDef('_contrib_interleaved_matmul_encdec_valatt', _encdec_valatt, params=_HEADS,
               inputs=('keys_values', 'attention'), infer_shape=_valatt_shape(2)))

"""Object-detection operators of mx.contrib: box_iou, box_nms, bipartite_matching, box_encode,
box_decode, MultiBoxPrior and MultiBoxTarget.

Boxes are the last axis of 4 numbers, "corner" (xmin, ymin, xmax, ymax) or "center" (x, y, w,
h). The greedy parts (suppression, matching) run per batch item in Python over index lists;
arithmetic runs in float32 or wider whatever the input dtype, results come back in it.
"""
import math

import torch

from .optimizer_ops import FloatTuple
from .params import Bool, Enum, Float, Int
from .registry import OpDef, register
from .shapes import known, merge, require

_FORMAT = Enum(('center', 'corner'), 'corner')


def _wide(x):
    return x if x.dtype == torch.float64 else x.float()


def _in_dtype(value, dtype):
    """A threshold as the input's dtype holds it (MXNet compares in the data type)."""
    return torch.tensor(value, dtype=dtype).item()


def _to_corner(boxes):
    x, y, w, h = boxes.unbind(-1)
    return torch.stack([x - w / 2, y - h / 2, x + w / 2, y + h / 2], -1)


def _to_center(boxes):
    l, t, r, b = boxes.unbind(-1)
    return torch.stack([(l + r) / 2, (t + b) / 2, r - l, b - t], -1)


def _iou(a, b):
    """IoU of corner boxes a (..., 4) against b (..., 4): shape a.shape[:-1] + b.shape[:-1]."""
    a2, b2 = a.reshape(-1, 4), b.reshape(-1, 4)
    al, at, ar, ab = [v[:, None] for v in a2.unbind(-1)]
    bl, bt, br, bb = [v[None, :] for v in b2.unbind(-1)]
    width = (torch.minimum(ar, br) - torch.maximum(al, bl)).clamp(min=0)
    height = (torch.minimum(ab, bb) - torch.maximum(at, bt)).clamp(min=0)
    inter = width * height
    union = (ar - al).clamp(min=0) * (ab - at).clamp(min=0) + \
        (br - bl).clamp(min=0) * (bb - bt).clamp(min=0) - inter
    iou = torch.where(inter > 0, inter / torch.where(inter > 0, union, torch.ones_like(union)),
                      torch.zeros_like(inter))
    return iou.reshape(tuple(a.shape[:-1]) + tuple(b.shape[:-1]))


def _last_is_4(op, name, shape):
    require(len(shape) >= 1 and shape[-1] in (0, 4), '%s: %s must end in an axis of 4 box '
            'coordinates, got shape %s', op, name, shape)


# ---------------------------------------------------------------------------------------------
# box_iou
# ---------------------------------------------------------------------------------------------
def _box_iou(p, lhs, rhs):
    _last_is_4('box_iou', 'lhs', tuple(lhs.shape))
    _last_is_4('box_iou', 'rhs', tuple(rhs.shape))
    a, b = _wide(lhs), _wide(rhs)
    if p.format == 'center':
        a, b = _to_corner(a), _to_corner(b)
    return _iou(a, b).to(lhs.dtype)


def _box_iou_shape(p, ins, outs):
    lhs, rhs = ins
    if lhs is None or rhs is None:
        return ins, outs
    _last_is_4('box_iou', 'lhs', lhs)
    _last_is_4('box_iou', 'rhs', rhs)
    return ins, [merge(outs[0], tuple(lhs[:-1]) + tuple(rhs[:-1]))]


register(OpDef('_contrib_box_iou', _box_iou, params={'format': _FORMAT},
               inputs=('lhs', 'rhs'), infer_shape=_box_iou_shape))


# ---------------------------------------------------------------------------------------------
# box_nms: greedy non-maximum suppression over the last two axes (boxes x features)
# ---------------------------------------------------------------------------------------------
def _nms_keep(p, rows, dtype):
    """Indices (into rows, in output order) of the boxes box_nms keeps for one batch item."""
    score = rows[:, p.score_index]
    valid = score > _in_dtype(p.valid_thresh, dtype)
    if p.id_index >= 0:
        valid &= rows[:, p.id_index] != p.background_id
    order = torch.argsort(-score, stable=True)
    order = order[valid[order]].tolist()
    if p.topk > 0:
        order = order[:p.topk]
    if not order:
        return []
    boxes = rows[order, p.coord_start:p.coord_start + 4]
    if p.in_format == 'center':
        boxes = _to_corner(boxes)
    ids = rows[order, p.id_index] if p.id_index >= 0 and not p.force_suppress else None
    suppressed = _greedy_suppress(boxes.cpu(), None if ids is None else ids.cpu(),
                                  p.overlap_thresh)
    return [k for k, s in zip(order, suppressed.tolist()) if not s]


def _greedy_suppress(boxes, ids, threshold):
    """Greedy NMS over corner boxes (a CPU tensor) sorted by score: each box not yet
    suppressed suppresses the later ones whose IoU, in the boxes' float type, exceeds threshold
    (of the same id, when ids are given: then each id's boxes are suppressed among themselves,
    which decides the same and compares only boxes of one id). A block of boxes at a time: the
    ones not yet suppressed settle among themselves, then suppress the later ones not yet
    suppressed (IoU only between those). Returns a bool tensor: suppressed or not."""
    if ids is not None:
        suppressed = torch.zeros(len(boxes), dtype=torch.bool)
        order = torch.argsort(ids, stable=True)         # each id's boxes, still by score
        sorted_ids = ids[order]
        bounds = (torch.nonzero(sorted_ids[1:] != sorted_ids[:-1]).flatten() + 1).tolist()
        for group in torch.tensor_split(order, bounds):
            suppressed[group] = _greedy_suppress(boxes[group], None, threshold)
        return suppressed
    n = len(boxes)
    left, top, right, bottom = boxes.T.contiguous()
    area = (right - left).clamp(min=0) * (bottom - top).clamp(min=0)

    def overlaps(a, b):
        """IoU(boxes a, boxes b) > threshold, (len(a), len(b))."""
        inter = torch.minimum(right[a, None], right[None, b]).sub_(
            torch.maximum(left[a, None], left[None, b])).clamp_(min=0)
        height = torch.minimum(bottom[a, None], bottom[None, b]).sub_(
            torch.maximum(top[a, None], top[None, b])).clamp_(min=0)
        inter.mul_(height)
        hit = inter > 0
        union = torch.add(area[a, None], area[None, b], out=height).sub_(inter)
        return hit & (inter.div_(union).double() > threshold)

    suppressed = torch.zeros(n, dtype=torch.bool)
    block = max(16, min(256, (1 << 22) // max(n, 1)))
    for start in range(0, n, block):
        end = min(n, start + block)
        rows = start + torch.nonzero(~suppressed[start:end]).flatten()
        if not len(rows):
            continue
        keep = _greedy_keep(torch.triu(overlaps(rows, rows), 1))
        suppressed[rows[~keep]] = True
        later = end + torch.nonzero(~suppressed[end:]).flatten()   # what the kept may suppress
        if len(later):
            suppressed[later[overlaps(rows[keep], later).any(dim=0)]] = True
    return suppressed


def _greedy_keep(over):
    """Which boxes of a block greedy suppression keeps: box b when no kept box a < b overlaps
    it (over[a, b], strictly upper-triangular). Found by repeating keep = ~any(keep[a] &
    over[a, b]) from keep = all until nothing changes: round t settles box t at the latest,
    and the one fixed point is greedy's answer (chains of suppression are short, so a few
    rounds instead of a step per box)."""
    keep = torch.ones(over.shape[0], dtype=torch.bool)
    while True:
        new = ~over[keep].any(dim=0)
        if torch.equal(new, keep):
            return keep
        keep = new


def _box_nms(p, data):
    shape = tuple(data.shape)
    require(len(shape) >= 2, 'box_nms: data must have at least 2 axes (boxes, features), got '
            'shape %s', shape)
    width = shape[-1]
    require(p.coord_start + 4 <= width and 0 <= p.coord_start, 'box_nms: coord_start=%d needs '
            '4 coordinates within the %d features', p.coord_start, width)
    require(0 <= p.score_index < width, 'box_nms: score_index=%d is outside the %d features',
            p.score_index, width)
    require(p.id_index < width, 'box_nms: id_index=%d is outside the %d features', p.id_index,
            width)
    flat = data.reshape(-1, shape[-2], width)
    wide = _wide(flat.detach())
    outputs, index = [], torch.full(flat.shape[:2], -1.0, dtype=data.dtype, device=data.device)
    for b in range(flat.shape[0]):
        keep = _nms_keep(p, wide[b], data.dtype)
        rows = flat[b][keep] if keep else flat[b][:0]
        if keep and p.in_format != p.out_format:
            coords = rows[:, p.coord_start:p.coord_start + 4]
            coords = _to_center(coords) if p.out_format == 'center' else _to_corner(coords)
            rows = torch.cat([rows[:, :p.coord_start], coords, rows[:, p.coord_start + 4:]], 1)
        pad = torch.full((shape[-2] - len(keep), width), -1.0, dtype=data.dtype,
                         device=data.device)
        outputs.append(torch.cat([rows, pad], 0))
        index[b, :len(keep)] = torch.tensor(keep, dtype=data.dtype)
    out = torch.stack(outputs).reshape(shape)
    return out, index.reshape(shape[:-1])


def _box_nms_shape(p, ins, outs):
    data = ins[0]
    if data is None:
        return ins, outs
    return ins, [merge(outs[0], data), merge(outs[1], tuple(data[:-1]))]


register(OpDef('_contrib_box_nms', _box_nms,
               params={'overlap_thresh': Float(0.5), 'valid_thresh': Float(0.0),
                       'topk': Int(-1), 'coord_start': Int(2), 'score_index': Int(1),
                       'id_index': Int(-1), 'background_id': Int(-1),
                       'force_suppress': Bool(False), 'in_format': _FORMAT,
                       'out_format': _FORMAT},
               outputs=('output0', 'output1'), visible_outputs=1,
               infer_shape=_box_nms_shape,
               aliases=('_contrib_box_non_maximum_suppression',))).reads_values = True


# ---------------------------------------------------------------------------------------------
# bipartite_matching: greedy one-to-one matching of rows and columns by score
# ---------------------------------------------------------------------------------------------
def _bipartite_matching(p, data):
    shape = tuple(data.shape)
    require(len(shape) >= 2, 'bipartite_matching: data must have at least 2 axes, got shape %s',
            shape)
    rows_n, cols_n = shape[-2], shape[-1]
    flat = _wide(data.detach()).reshape(-1, rows_n, cols_n)
    threshold = _in_dtype(p.threshold, data.dtype)
    row_match = torch.full((flat.shape[0], rows_n), -1.0, dtype=data.dtype)
    col_match = torch.full((flat.shape[0], cols_n), -1.0, dtype=data.dtype)
    for b in range(flat.shape[0]):
        scores = flat[b].reshape(-1)
        order = torch.argsort(scores if p.is_ascend else -scores, stable=True).tolist()
        values = scores.tolist()
        matched = 0
        for k in order:
            if (values[k] >= threshold) if p.is_ascend else (values[k] <= threshold):
                break                  # only scores strictly better than threshold match
            if 0 < p.topk < matched:   # as MXNet 1.9.1: at most topk + 1 matches
                break
            i, j = divmod(k, cols_n)
            if row_match[b, i] < 0 and col_match[b, j] < 0:
                row_match[b, i], col_match[b, j] = j, i
                matched += 1
    return (row_match.reshape(shape[:-1]).to(data.device),
            col_match.reshape(shape[:-2] + (cols_n,)).to(data.device))


def _bipartite_shape(p, ins, outs):
    data = ins[0]
    if data is None:
        return ins, outs
    return ins, [merge(outs[0], tuple(data[:-1])),
                 merge(outs[1], tuple(data[:-2]) + (data[-1],))]


register(OpDef('_contrib_bipartite_matching', _bipartite_matching,
               params={'is_ascend': Bool(False), 'threshold': Float(), 'topk': Int(-1)},
               outputs=('output0', 'output1'), infer_shape=_bipartite_shape)).reads_values = True


# ---------------------------------------------------------------------------------------------
# box_encode / box_decode: regression targets relative to anchors
# ---------------------------------------------------------------------------------------------
def _box_encode(p, samples, matches, anchors, refs, means, stds):
    a = _to_center(_wide(anchors))
    index = matches.long().clamp(min=0, max=max(refs.shape[1] - 1, 0))
    g = _to_center(torch.gather(_wide(refs), 1, index[..., None].expand(-1, -1, 4)))
    target = torch.stack([(g[..., 0] - a[..., 0]) / a[..., 2], (g[..., 1] - a[..., 1]) / a[..., 3],
                          torch.log(g[..., 2] / a[..., 2]), torch.log(g[..., 3] / a[..., 3])], -1)
    target = (target - _wide(means)) / _wide(stds)
    positive = (samples > 0.5)[..., None].expand_as(target)
    out = torch.where(positive, target, torch.zeros_like(target))
    return out.to(anchors.dtype), positive.to(anchors.dtype)


def _box_encode_shape(p, ins, outs):
    samples, matches, anchors = ins[:3]
    lead = next((s for s in (samples, matches) if s is not None), None)
    if lead is None and anchors is not None:
        lead = tuple(anchors[:2])
    if lead is None:
        return ins, outs
    out = tuple(lead) + (4,)
    ins = [merge(ins[0], tuple(lead)), merge(ins[1], tuple(lead)), merge(ins[2], out)] + \
        [ins[3], merge(ins[4], (4,)), merge(ins[5], (4,))]
    return ins, [merge(outs[0], out), merge(outs[1], out)]


register(OpDef('_contrib_box_encode', _box_encode,
               inputs=('samples', 'matches', 'anchors', 'refs', 'means', 'stds'),
               outputs=('output0', 'output1'), infer_shape=_box_encode_shape))


def _box_decode(p, data, anchors):
    a = _wide(anchors)
    if p.format == 'corner':
        a = _to_center(a)
    d = _wide(data)
    x = d[..., 0] * p.std0 * a[..., 2] + a[..., 0]
    y = d[..., 1] * p.std1 * a[..., 3] + a[..., 1]
    dw, dh = d[..., 2] * p.std2, d[..., 3] * p.std3
    if p.clip > 0:
        dw, dh = dw.clamp(max=p.clip), dh.clamp(max=p.clip)
    half_w, half_h = torch.exp(dw) * a[..., 2] / 2, torch.exp(dh) * a[..., 3] / 2
    return torch.stack([x - half_w, y - half_h, x + half_w, y + half_h], -1).to(data.dtype)


def _box_decode_shape(p, ins, outs):
    data = ins[0]
    if data is None:
        return ins, outs
    _last_is_4('box_decode', 'data', data)
    return ins, [merge(outs[0], data)]


register(OpDef('_contrib_box_decode', _box_decode,
               params={'std0': Float(1.0), 'std1': Float(1.0), 'std2': Float(1.0),
                       'std3': Float(1.0), 'clip': Float(-1.0),
                       'format': Enum(('center', 'corner'), 'center')},
               inputs=('data', 'anchors'), infer_shape=_box_decode_shape))


# ---------------------------------------------------------------------------------------------
# MultiBoxPrior: anchor boxes centred on every feature-map cell
# ---------------------------------------------------------------------------------------------
def _num_anchors(p):
    return len(p.sizes) + len(p.ratios) - 1


def _multibox_prior(p, data):
    require(data.dim() == 4, 'MultiBoxPrior: data must be 4-D (batch, channel, height, width), '
            'got shape %s', tuple(data.shape))
    require(len(p.sizes) > 0 and len(p.ratios) > 0, 'MultiBoxPrior: sizes and ratios must not '
            'be empty')
    require(len(p.steps) == 2 and len(p.offsets) == 2, 'MultiBoxPrior: steps and offsets need '
            'two values (y, x)')
    height, width = data.shape[2], data.shape[3]
    step_y = p.steps[0] if p.steps[0] > 0 else 1.0 / height
    step_x = p.steps[1] if p.steps[1] > 0 else 1.0 / width
    halves = []                                    # (half width, half height) per anchor
    ratio = math.sqrt(p.ratios[0])
    for size in p.sizes:
        halves.append((size * height / width * ratio / 2, size / ratio / 2))
    for r in p.ratios[1:]:
        ratio = math.sqrt(r)
        halves.append((p.sizes[0] * height / width * ratio / 2, p.sizes[0] / ratio / 2))
    dev = data.device
    cy = (torch.arange(height, dtype=torch.float32, device=dev) + p.offsets[0]) * step_y
    cx = (torch.arange(width, dtype=torch.float32, device=dev) + p.offsets[1]) * step_x
    half = torch.tensor(halves, dtype=torch.float32, device=dev)          # (A, 2)
    cy = cy[:, None, None].expand(height, width, len(halves))
    cx = cx[None, :, None].expand(height, width, len(halves))
    boxes = torch.stack([cx - half[:, 0], cy - half[:, 1], cx + half[:, 0], cy + half[:, 1]], -1)
    if p.clip:
        boxes = boxes.clamp(0.0, 1.0)
    return boxes.reshape(1, -1, 4).to(data.dtype)


def _multibox_prior_shape(p, ins, outs):
    data = ins[0]
    if data is None or not known(data[2:]):
        return ins, outs
    require(len(data) == 4, 'MultiBoxPrior: data must be 4-D, got shape %s', data)
    return ins, [merge(outs[0], (1, data[2] * data[3] * _num_anchors(p), 4))]


register(OpDef('_contrib_MultiBoxPrior', _multibox_prior,
               params={'sizes': FloatTuple((1.0,)), 'ratios': FloatTuple((1.0,)),
                       'clip': Bool(False), 'steps': FloatTuple((-1.0, -1.0)),
                       'offsets': FloatTuple((0.5, 0.5))},
               infer_shape=_multibox_prior_shape, head_grad='zero'))


# ---------------------------------------------------------------------------------------------
# MultiBoxTarget: training targets of anchors from ground-truth boxes
# ---------------------------------------------------------------------------------------------
def _match_anchors(p, iou):
    """(matched gt per anchor or -1, best IoU per anchor): every gt first takes its best free
    anchor (greedy on the highest IoU left), then the other anchors take their best gt when it
    overlaps more than overlap_threshold."""
    num_anchors, num_gt = iou.shape
    match = [-1] * num_anchors
    best = iou.max(1).values.tolist() if num_gt else [0.0] * num_anchors
    if not num_gt:
        return match, best
    work = iou.clone()
    for _ in range(min(num_anchors, num_gt)):
        value, k = work.reshape(-1).max(0)
        if value.item() <= 1e-6:
            break
        i, j = divmod(k.item(), num_gt)
        match[i] = j
        work[i, :] = -1
        work[:, j] = -1
    best_gt = iou.argmax(1).tolist()
    for i in range(num_anchors):
        if match[i] < 0 and best[i] > p.overlap_threshold:
            match[i] = best_gt[i]
    return match, best


def _multibox_target(p, anchor, label, cls_pred):
    require(anchor.dim() == 3 and anchor.shape[-1] == 4, 'MultiBoxTarget: anchor must be '
            '(1, num_anchors, 4), got shape %s', tuple(anchor.shape))
    require(label.dim() == 3 and label.shape[-1] >= 5, 'MultiBoxTarget: label must be (batch, '
            'num_labels, >=5), got shape %s', tuple(label.shape))
    require(cls_pred.dim() == 3 and cls_pred.shape[2] == anchor.shape[1], 'MultiBoxTarget: '
            'cls_pred must be (batch, num_classes, num_anchors=%d), got shape %s',
            anchor.shape[1], tuple(cls_pred.shape))
    anchors = _wide(anchor.detach())[0]
    num_anchors, batch = anchors.shape[0], label.shape[0]
    var = torch.tensor(p.variances, dtype=anchors.dtype)
    loc_target = torch.zeros(batch, num_anchors, 4, dtype=anchors.dtype)
    loc_mask = torch.zeros(batch, num_anchors, 4, dtype=anchors.dtype)
    cls_target = torch.full((batch, num_anchors), p.ignore_label, dtype=anchors.dtype)
    a = _to_center(anchors)
    for b in range(batch):
        rows = _wide(label[b].detach())
        valid = 0
        while valid < rows.shape[0] and rows[valid, 0].item() != -1:
            valid += 1
        gt = rows[:valid]
        match, best = _match_anchors(p, _iou(anchors, gt[:, 1:5]))
        positive = [i for i in range(num_anchors) if match[i] >= 0]
        for i in positive:
            g = _to_center(gt[match[i], 1:5])
            loc_target[b, i] = torch.stack([(g[0] - a[i, 0]) / a[i, 2], (g[1] - a[i, 1]) / a[i, 3],
                                            torch.log(g[2] / a[i, 2]),
                                            torch.log(g[3] / a[i, 3])]) / var
            loc_mask[b, i] = 1
            cls_target[b, i] = gt[match[i], 0] + 1
        others = [i for i in range(num_anchors) if match[i] < 0]
        if p.negative_mining_ratio > 0:
            wanted = int(len(positive) * p.negative_mining_ratio)
            wanted = min(max(wanted, p.minimum_negative_samples), len(others))
            candidates = [i for i in others if best[i] < p.negative_mining_thresh]
            prob = torch.softmax(_wide(cls_pred[b].detach()), 0)[0]   # background probability
            candidates.sort(key=lambda i: prob[i].item())                # hardest first
            for i in candidates[:wanted]:
                cls_target[b, i] = 0
        else:
            for i in others:
                cls_target[b, i] = 0
    dev, dt = anchor.device, anchor.dtype
    return (loc_target.reshape(batch, -1).to(dev, dt), loc_mask.reshape(batch, -1).to(dev, dt),
            cls_target.to(dev, dt))


def _multibox_target_shape(p, ins, outs):
    anchor, label, cls_pred = ins
    if anchor is None or label is None or not anchor[1:] or not label:
        return ins, outs
    batch, num_anchors = label[0], anchor[1]
    return ins, [merge(outs[0], (batch, num_anchors * 4)), merge(outs[1], (batch, num_anchors * 4)),
                 merge(outs[2], (batch, num_anchors))]


register(OpDef('_contrib_MultiBoxTarget', _multibox_target,
               params={'overlap_threshold': Float(0.5), 'ignore_label': Float(-1.0),
                       'negative_mining_ratio': Float(-1.0), 'negative_mining_thresh': Float(0.5),
                       'minimum_negative_samples': Int(0),
                       'variances': FloatTuple((0.1, 0.1, 0.2, 0.2))},
               inputs=('anchor', 'label', 'cls_pred'),
               outputs=('loc_target', 'loc_mask', 'cls_target'),
               infer_shape=_multibox_target_shape, head_grad='zero')).reads_values = True

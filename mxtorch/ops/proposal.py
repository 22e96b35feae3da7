"""Detection heads' output operators of mx.contrib: MultiBoxDetection (SSD: decode the anchors'
offsets, keep the best class per anchor, greedy NMS) and Proposal / MultiProposal (Faster R-CNN's
RPN: anchors over the feature map, decode, drop small boxes, top-k, greedy NMS).

As MXNet's CPU kernels: arithmetic in the input's float dtype, ties in score keep anchor order
(a stable sort), and the outputs carry no gradient (MXNet's backward writes zeros).
"""
import torch

from .optimizer_ops import FloatTuple
from .params import Bool, Float, Int
from .registry import OpDef, register
from .shapes import merge, require


def _overlap(box, boxes, plus_one):
    """IoU of one corner box against boxes (N, 4); plus_one: pixel boxes (width = x2 - x1 + 1)."""
    one = 1.0 if plus_one else 0.0
    width = (torch.minimum(box[2], boxes[:, 2]) - torch.maximum(box[0], boxes[:, 0]) + one)
    height = (torch.minimum(box[3], boxes[:, 3]) - torch.maximum(box[1], boxes[:, 1]) + one)
    inter = width.clamp(min=0) * height.clamp(min=0)
    area = (box[2] - box[0] + one) * (box[3] - box[1] + one)
    union = area + (boxes[:, 2] - boxes[:, 0] + one) * (boxes[:, 3] - boxes[:, 1] + one) - inter
    return torch.where(union > 0, inter / torch.where(union > 0, union, torch.ones_like(union)),
                       torch.zeros_like(inter))


# ---------------------------------------------------------------------------------------------
# MultiBoxDetection
# ---------------------------------------------------------------------------------------------
def _decode_anchors(anchors, loc, p):
    vx, vy, vw, vh = p.variances
    al, at, ar, ab = anchors.unbind(-1)
    aw, ah = ar - al, ab - at
    ax, ay = (al + ar) / 2, (at + ab) / 2
    px, py, pw, ph = loc.unbind(-1)
    ox, oy = px * vx * aw + ax, py * vy * ah + ay
    ow, oh = torch.exp(pw * vw) * aw / 2, torch.exp(ph * vh) * ah / 2
    boxes = torch.stack([ox - ow, oy - oh, ox + ow, oy + oh], -1)
    return boxes.clamp(0, 1) if p.clip else boxes


def _detect_one(p, prob, loc, anchors, out):
    """Fills out (num_anchors, 6) for one image (out starts all -1)."""
    num_anchors = anchors.shape[0]
    if prob.shape[0] < 2:
        return
    score, cls = prob[1:].max(0)          # first of equal maxima, as MXNet's strict '>'
    threshold = torch.tensor(p.threshold, dtype=prob.dtype)
    valid = (score >= threshold).nonzero().flatten()
    count = valid.numel()
    if count == 0:
        return
    boxes = _decode_anchors(anchors[valid], loc.reshape(num_anchors, 4)[valid], p)
    rows = torch.cat([cls[valid, None].to(prob.dtype), score[valid, None], boxes], 1)
    out[:count] = rows
    if not 0 < p.nms_threshold <= 1:
        return
    order = torch.argsort(-rows[:, 1], stable=True)
    keep = count if p.nms_topk <= 0 else min(p.nms_topk, count)
    out[:keep] = rows[order[:keep]]
    out[keep:count, 0] = -1
    ids = out[:count, 0].tolist()
    for i in range(count):
        if ids[i] < 0:
            continue
        later = torch.arange(i + 1, count)
        if later.numel() == 0:
            break
        iou = _overlap(out[i, 2:], out[i + 1:count, 2:], False).tolist()
        for k, j in enumerate(later.tolist()):
            if ids[j] >= 0 and (p.force_suppress or ids[i] == ids[j]) and \
                    iou[k] >= p.nms_threshold:
                ids[j] = -1
    out[:count, 0] = torch.tensor(ids, dtype=out.dtype)


def _multibox_detection(p, cls_prob, loc_pred, anchor):
    op = 'MultiBoxDetection'
    require(cls_prob.dim() == 3, '%s: cls_prob must be (batch, num_classes, num_anchors), got '
            'shape %s', op, tuple(cls_prob.shape))
    batch, _, num_anchors = cls_prob.shape
    require(tuple(loc_pred.shape) == (batch, num_anchors * 4), '%s: loc_pred must be (%d, %d), '
            'got shape %s', op, batch, num_anchors * 4, tuple(loc_pred.shape))
    require(anchor.dim() == 3 and tuple(anchor.shape[1:]) == (num_anchors, 4), '%s: anchor must '
            'be (1, %d, 4), got shape %s', op, num_anchors, tuple(anchor.shape))
    with torch.no_grad():
        out = torch.full((batch, num_anchors, 6), -1.0, dtype=cls_prob.dtype)
        for b in range(batch):
            _detect_one(p, cls_prob[b].detach().cpu(), loc_pred[b].detach().cpu().to(
                cls_prob.dtype), anchor[0].detach().cpu().to(cls_prob.dtype), out[b])
    return out.to(cls_prob.device)


def _multibox_detection_shape(p, ins, outs):
    cls_prob, loc_pred, anchor = ins
    if cls_prob is None or len(cls_prob) != 3:
        return ins, outs
    batch, _, num_anchors = cls_prob
    loc_pred = merge(loc_pred, (batch, num_anchors * 4))
    anchor = merge(anchor, (1, num_anchors, 4))
    return [cls_prob, loc_pred, anchor], [merge(outs[0], (batch, num_anchors, 6))]


register(OpDef('_contrib_MultiBoxDetection', _multibox_detection,
               params={'clip': Bool(True), 'threshold': Float(0.01), 'background_id': Int(0),
                       'nms_threshold': Float(0.5), 'force_suppress': Bool(False),
                       'variances': FloatTuple((0.1, 0.1, 0.2, 0.2)), 'nms_topk': Int(-1)},
               inputs=('cls_prob', 'loc_pred', 'anchor'),
               infer_shape=_multibox_detection_shape, head_grad='zero')).reads_values = True


# ---------------------------------------------------------------------------------------------
# Proposal / MultiProposal
# ---------------------------------------------------------------------------------------------
def _base_anchors(p, dtype):
    """(A, 4) anchors around the cell at the origin: per ratio, per scale (MXNet's order)."""
    import math
    stride = p.feature_stride
    width = height = float(stride)
    cx, cy = (stride - 1) / 2.0, (stride - 1) / 2.0
    rows = []
    for ratio in p.ratios:
        ws = math.floor(math.sqrt(math.floor(width * height / ratio)) + 0.5)
        hs = math.floor(ws * ratio + 0.5)
        for scale in p.scales:
            w, h = ws * scale, hs * scale
            rows.append([cx - 0.5 * (w - 1), cy - 0.5 * (h - 1), cx + 0.5 * (w - 1),
                         cy + 0.5 * (h - 1)])
    return torch.tensor(rows, dtype=dtype)


def _greedy_nms(boxes, threshold, limit):
    """Indices of the boxes (pixel corners, best first) greedy NMS keeps, at most `limit`: the
    best box left is kept and the later ones whose IoU with it is above `threshold` (compared
    in float64, as a Python float) are dropped. Each kept box computes its IoU only against
    the boxes still left, the same arithmetic as _overlap's."""
    x1, y1, x2, y2 = boxes.unbind(1)
    areas = (x2 - x1 + 1.0) * (y2 - y1 + 1.0)
    keep, left = [], torch.arange(boxes.shape[0])
    while left.numel():
        i, left = int(left[0]), left[1:]
        keep.append(i)
        if len(keep) == limit or not left.numel():
            break
        width = torch.minimum(x2[i], x2[left]) - torch.maximum(x1[i], x1[left]) + 1.0
        height = torch.minimum(y2[i], y2[left]) - torch.maximum(y1[i], y1[left]) + 1.0
        inter = width.clamp(min=0) * height.clamp(min=0)
        union = areas[i] + areas[left] - inter
        iou = torch.where(union > 0, inter / torch.where(union > 0, union,
                                                         torch.ones_like(union)),
                          torch.zeros_like(inter))
        left = left[~(iou.to(torch.float64) > threshold)]
    return keep


def _proposals_one(p, scores, deltas, info, base):
    """(post_nms_top_n, 4) boxes and (post_nms_top_n,) scores for one image."""
    num_anchors, height, width = scores.shape
    dtype = scores.dtype
    stride = p.feature_stride
    shift_x = torch.arange(width, dtype=dtype) * stride
    shift_y = torch.arange(height, dtype=dtype) * stride
    # proposals ordered (h, w, anchor), as MXNet's workspace
    anchors = base[None, None] + torch.stack([shift_x[None, :].expand(height, width),
                                              shift_y[:, None].expand(height, width)] * 2,
                                             -1)[:, :, None]
    d = deltas.reshape(num_anchors, 4, height, width).permute(2, 3, 0, 1)
    im_h, im_w, im_scale = (float(v) for v in info)
    if p.iou_loss:
        boxes = anchors + d
    else:
        bw = anchors[..., 2] - anchors[..., 0] + 1
        bh = anchors[..., 3] - anchors[..., 1] + 1
        cx, cy = anchors[..., 0] + 0.5 * (bw - 1), anchors[..., 1] + 0.5 * (bh - 1)
        px, py = d[..., 0] * bw + cx, d[..., 1] * bh + cy
        pw, ph = torch.exp(d[..., 2]) * bw, torch.exp(d[..., 3]) * bh
        boxes = torch.stack([px - 0.5 * (pw - 1), py - 0.5 * (ph - 1), px + 0.5 * (pw - 1),
                             py + 0.5 * (ph - 1)], -1)
    limit = torch.tensor([im_w - 1, im_h - 1, im_w - 1, im_h - 1], dtype=dtype)
    boxes = torch.minimum(boxes, limit).clamp(min=0)
    score = scores.permute(1, 2, 0).clone()
    real_h, real_w = int(im_h / stride), int(im_w / stride)
    score[real_h:] = -1
    score[:, real_w:] = -1
    boxes, score = boxes.reshape(-1, 4), score.reshape(-1)
    # boxes smaller than the minimum size are grown and dropped to score -1
    min_size = torch.tensor(p.rpn_min_size * im_scale, dtype=dtype)
    small = ((boxes[:, 2] - boxes[:, 0] + 1) < min_size) | \
        ((boxes[:, 3] - boxes[:, 1] + 1) < min_size)
    half = min_size / 2
    grow = torch.stack([-half, -half, half, half]).to(dtype)
    boxes = torch.where(small[:, None], boxes + grow, boxes)
    score = torch.where(small, torch.full_like(score, -1), score)
    order = torch.argsort(-score, stable=True)
    pre = p.rpn_pre_nms_top_n if p.rpn_pre_nms_top_n > 0 else score.numel()
    order = order[:min(pre, score.numel())]
    boxes, score = boxes[order], score[order]
    keep = _greedy_nms(boxes, p.threshold, p.rpn_post_nms_top_n)
    post = p.rpn_post_nms_top_n
    picks = torch.tensor([keep[i % len(keep)] for i in range(post)], dtype=torch.long)
    return boxes[picks], score[picks]


def _proposal(p, cls_prob, bbox_pred, im_info, multi):
    op = 'MultiProposal' if multi else 'Proposal'
    require(cls_prob.dim() == 4, '%s: cls_prob must be (batch, 2 * num_anchors, height, width), '
            'got shape %s', op, tuple(cls_prob.shape))
    batch, channels, height, width = cls_prob.shape
    num_anchors = len(p.ratios) * len(p.scales)
    require(channels == 2 * num_anchors, '%s: cls_prob must have 2 * %d anchors = %d channels, '
            'got %d', op, num_anchors, 2 * num_anchors, channels)
    require(multi or batch == 1, '%s: only a batch of 1 is supported (MultiProposal takes '
            'more), got %d', op, batch)
    require(tuple(bbox_pred.shape) == (batch, 4 * num_anchors, height, width), '%s: bbox_pred '
            'must be %s, got shape %s', op, (batch, 4 * num_anchors, height, width),
            tuple(bbox_pred.shape))
    require(im_info.dim() == 2 and tuple(im_info.shape) == (batch, 3), '%s: im_info must be '
            '(%d, 3), got shape %s', op, batch, tuple(im_info.shape))
    dtype = cls_prob.dtype
    with torch.no_grad():
        base = _base_anchors(p, dtype)
        rois, scores = [], []
        for b in range(batch):
            boxes, score = _proposals_one(
                p, cls_prob[b, num_anchors:].detach().cpu(),
                bbox_pred[b].detach().cpu().to(dtype), im_info[b].detach().cpu().tolist(), base)
            index = torch.full((boxes.shape[0], 1), float(b), dtype=dtype)
            rois.append(torch.cat([index, boxes], 1))
            scores.append(score[:, None])
    device = cls_prob.device
    return torch.cat(rois).to(device), torch.cat(scores).to(device)


def _proposal_shape(multi):
    def rule(p, ins, outs):
        cls_prob = ins[0]
        if cls_prob is None or len(cls_prob) != 4:
            return ins, outs
        batch, channels, height, width = cls_prob
        bbox = merge(ins[1], (batch, channels * 2, height, width))
        info = merge(ins[2], (batch, 3))
        rows = (batch if multi else 1) * p.rpn_post_nms_top_n
        return [cls_prob, bbox, info], [merge(outs[0], (rows, 5)), merge(outs[1], (rows, 1))]
    return rule


_PROPOSAL_PARAMS = {'rpn_pre_nms_top_n': Int(6000), 'rpn_post_nms_top_n': Int(300),
                    'threshold': Float(0.7), 'rpn_min_size': Int(16),
                    'scales': FloatTuple((4.0, 8.0, 16.0, 32.0)),
                    'ratios': FloatTuple((0.5, 1.0, 2.0)), 'feature_stride': Int(16),
                    'output_score': Bool(False), 'iou_loss': Bool(False)}

for _name, _multi in (('_contrib_Proposal', False), ('_contrib_MultiProposal', True)):
    register(OpDef(_name, (lambda m: lambda p, c, b, i: _proposal(p, c, b, i, m))(_multi),
                   params=dict(_PROPOSAL_PARAMS), inputs=('cls_prob', 'bbox_pred', 'im_info'),
                   outputs=('output', 'score'),
                   visible_outputs=lambda p: 2 if p.output_score else 1,
                   infer_shape=_proposal_shape(_multi), head_grad='zero')).reads_values = True

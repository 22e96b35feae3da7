"""ROIAlign over each region's window of the map, and box_nms's block-wise greedy suppression,
against direct NumPy transcriptions of the algorithms (one bilinear sample at a time; one box at
a time), on cases large enough to take every path: several chunks of regions, regions partly or
wholly outside the map, negative and out-of-range batch indices, classes, NaN scores."""
import math

import numpy as np
import pytest

import mxtorch as mx
from mxtorch.ops import roi_align


def _bilinear(img, y, x):
    channels, height, width = img.shape
    if y < -1.0 or y > height or x < -1.0 or x > width:
        return np.zeros(channels)
    y, x = max(y, 0.0), max(x, 0.0)
    y0, x0 = int(math.floor(y)), int(math.floor(x))
    if y0 >= height - 1:
        y0 = y1 = height - 1
        y = float(y0)
    else:
        y1 = y0 + 1
    if x0 >= width - 1:
        x0 = x1 = width - 1
        x = float(x0)
    else:
        x1 = x0 + 1
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * img[:, y0, x0] + (1 - ly) * lx * img[:, y0, x1] +
            ly * (1 - lx) * img[:, y1, x0] + ly * lx * img[:, y1, x1])


def _roi_align_reference(data, rois, pooled, scale, ratio, aligned):
    ph, pw = pooled
    out = np.zeros((len(rois), data.shape[1], ph, pw))
    offset = 0.5 if aligned else 0.0
    for r, (b, x1, y1, x2, y2) in enumerate(rois.astype(np.float64)):
        if b < 0 or b >= data.shape[0]:
            continue
        x1, y1 = x1 * scale - offset, y1 * scale - offset
        w, h = x2 * scale - offset - x1, y2 * scale - offset - y1
        if not aligned:
            w, h = max(w, 1.0), max(h, 1.0)
        gh = ratio if ratio > 0 else math.ceil(h / ph)
        gw = ratio if ratio > 0 else math.ceil(w / pw)
        for i in range(ph):
            for j in range(pw):
                acc = 0
                for a in range(gh):
                    for c in range(gw):
                        y = y1 + i * h / ph + (a + 0.5) * h / ph / gh
                        x = x1 + j * w / pw + (c + 0.5) * w / pw / gw
                        acc = acc + _bilinear(data[int(b)], y, x)
                out[r, :, i, j] = acc / max(gh * gw, 1)
    return out


@pytest.mark.parametrize('aligned', [False, True])
@pytest.mark.parametrize('ratio', [2, -1])
def test_roi_align_windows_match_direct_sampling(monkeypatch, aligned, ratio):
    monkeypatch.setattr(roi_align, '_CHUNK_ELEMENTS', 4000)    # many small chunks
    rng = np.random.RandomState(3)
    data = rng.randn(2, 3, 23, 31).astype(np.float32)
    corners = rng.uniform(-20, 70, (40, 2))
    sizes = rng.uniform(0, 45, (40, 2)) ** 1.3
    rois = np.concatenate([rng.randint(0, 2, (40, 1)), corners, corners + sizes], 1)
    rois[5, 0], rois[6, 0] = -1, 2                       # no batch item: zeros
    rois[7, 1:] = [300, 300, 320, 330]                   # wholly outside: zeros
    rois = rois.astype(np.float32)
    got = mx.nd.contrib.ROIAlign(mx.nd.array(data), mx.nd.array(rois), pooled_size=(3, 4),
                                 spatial_scale=0.5, sample_ratio=ratio, aligned=aligned)
    want = _roi_align_reference(data, rois, (3, 4), 0.5, ratio, aligned)
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-4, atol=1e-5)


def test_roi_align_gradient_reaches_the_windows_only():
    rng = np.random.RandomState(4)
    data = mx.nd.array(rng.randn(1, 2, 12, 12))
    rois = mx.nd.array([[0, 1, 1, 4, 5], [0, 2, 2, 3, 3]])
    data.attach_grad()
    with mx.autograd.record():
        out = mx.nd.contrib.ROIAlign(data, rois, pooled_size=(2, 2), spatial_scale=1.0,
                                     sample_ratio=2)
    out.backward(mx.nd.ones(out.shape))
    grad = data.grad.asnumpy()
    # every sample's weights sum to 1: each region sends channels * bins of gradient
    np.testing.assert_allclose(grad.sum(axis=(2, 3)), [[8, 8]], rtol=1e-5)
    assert grad[:, :, 7:, :].sum() == 0 and grad[:, :, :, 7:].sum() == 0


def _nms_reference(boxes, ids, threshold):
    """Greedy suppression one box at a time (boxes sorted by score)."""
    boxes = boxes.astype(np.float32)
    suppressed = np.zeros(len(boxes), bool)
    area = lambda b: max(b[2] - b[0], 0) * max(b[3] - b[1], 0)   # noqa: E731
    for a in range(len(boxes)):
        if suppressed[a]:
            continue
        for b in range(a + 1, len(boxes)):
            if ids is not None and not ids[a] == ids[b]:
                continue
            w = max(min(boxes[a, 2], boxes[b, 2]) - max(boxes[a, 0], boxes[b, 0]), 0)
            h = max(min(boxes[a, 3], boxes[b, 3]) - max(boxes[a, 1], boxes[b, 1]), 0)
            inter = np.float32(w * h)
            if inter > 0 and float(inter / np.float32(area(boxes[a]) + area(boxes[b]) - inter)) \
                    > threshold:
                suppressed[b] = True
    return suppressed


@pytest.mark.parametrize('force_suppress', [True, False])
def test_box_nms_blocks_match_one_box_at_a_time(force_suppress):
    rng = np.random.RandomState(5)
    n = 700                                     # several blocks of 256
    corner = rng.uniform(0, 100, (n, 2))
    boxes = np.concatenate([corner, corner + rng.uniform(1, 30, (n, 2))], 1)
    scores = rng.rand(n)
    scores[:5] = np.nan
    ids = rng.randint(0, 4, n).astype(np.float64)
    data = np.concatenate([ids[:, None], scores[:, None], boxes], 1).astype(np.float32)
    out = mx.nd.contrib.box_nms(mx.nd.array(data[None]), overlap_thresh=0.4,
                                 valid_thresh=0.05, coord_start=2, score_index=1,
                                 id_index=0, force_suppress=force_suppress,
                                 out_format='corner')
    order = np.argsort(-data[:, 1], kind='stable')
    order = order[data[order, 1] > 0.05]
    dropped = _nms_reference(data[order, 2:], None if force_suppress else data[order, 0], 0.4)
    kept = order[~dropped]
    assert 0 < len(kept) < len(order)
    np.testing.assert_array_equal(out.asnumpy()[0, :len(kept)], data[kept])
    assert (out.asnumpy()[0, len(kept):] == -1).all()

"""MultiBoxDetection, Proposal, MultiProposal and DeformablePSROIPooling against MXNet 1.9.1
(fixtures/ops_proposal.npz, made by fixtures/gen_ops_proposal.py): outputs, and the gradients of
DeformablePSROIPooling's data and offsets."""
import json
import os

import numpy as np
import pytest

import mxtorch as mx

FIX = np.load(os.path.join(os.path.dirname(__file__), 'fixtures', 'ops_proposal.npz'))
META = json.loads(str(FIX['meta']))


def _params(params):
    return {k: tuple(v) if isinstance(v, list) else v for k, v in params.items()}


@pytest.mark.parametrize('name', sorted(META))
def test_matches_mxnet(name):
    spec = META[name]
    n_in = sum(k.startswith(name + '.in.') for k in FIX.files)
    arrays = [mx.nd.array(FIX['%s.in.%d' % (name, i)]) for i in range(n_in)]
    for i in spec['grads']:
        arrays[i].attach_grad()
    with mx.autograd.record():
        res = getattr(mx.nd.contrib, spec['op'])(*arrays, **_params(spec['params']))
    res = res if isinstance(res, (list, tuple)) else [res]
    n_out = sum(k.startswith(name + '.out.') for k in FIX.files)
    assert len(res) == n_out
    for i, r in enumerate(res):
        np.testing.assert_allclose(r.asnumpy(), FIX['%s.out.%d' % (name, i)], rtol=1e-5,
                                   atol=1e-5)
    if spec['grads']:
        res[0].backward(mx.nd.array(FIX[name + '.head']))
        for i in spec['grads']:
            np.testing.assert_allclose(arrays[i].grad.asnumpy(), FIX['%s.grad.%d' % (name, i)],
                                       rtol=1e-4, atol=1e-5)


def test_symbol_shapes_and_outputs():
    c, b, i = mx.sym.var('c'), mx.sym.var('b'), mx.sym.var('i')
    s = mx.sym.contrib.Proposal(c, b, i, output_score=True)
    assert s.list_outputs() == ['proposal0_output', 'proposal0_score'] or \
        len(s.list_outputs()) == 2
    args, outs, _ = s.infer_shape(c=(1, 24, 5, 5))
    assert args == [(1, 24, 5, 5), (1, 48, 5, 5), (1, 3)] and outs == [(300, 5), (300, 1)]
    m = mx.sym.contrib.MultiProposal(c, b, i)
    assert len(m.list_outputs()) == 1 and m.infer_shape(c=(2, 24, 5, 5))[1] == [(600, 5)]
    d = mx.sym.contrib.MultiBoxDetection(c, b, i)
    assert d.infer_shape(c=(2, 3, 6))[0] == [(2, 3, 6), (2, 24), (1, 6, 4)]
    assert d.infer_shape(c=(2, 3, 6))[1] == [(2, 6, 6)]
    p = mx.sym.contrib.DeformablePSROIPooling(c, b, i, spatial_scale=0.5, output_dim=2,
                                              group_size=2, pooled_size=2, trans_std=0.1)
    assert len(p.list_outputs()) == 1
    assert p.infer_shape(c=(1, 8, 6, 6), b=(3, 5), i=(3, 4, 2, 2))[1] == [(3, 2, 2, 2)]
    q = mx.sym.contrib.DeformablePSROIPooling(c, b, spatial_scale=0.5, output_dim=2,
                                              group_size=2, pooled_size=2, no_trans=True)
    assert q.list_arguments() == ['c', 'b']


def test_bad_inputs_are_errors():
    with pytest.raises(mx.MXNetError, match='batch of 1'):
        mx.nd.contrib.Proposal(mx.nd.zeros((2, 24, 3, 3)), mx.nd.zeros((2, 48, 3, 3)),
                               mx.nd.zeros((2, 3)))
    with pytest.raises(mx.MXNetError, match='loc_pred'):
        mx.nd.contrib.MultiBoxDetection(mx.nd.zeros((1, 3, 6)), mx.nd.zeros((1, 20)),
                                        mx.nd.zeros((1, 6, 4)))
    with pytest.raises(mx.MXNetError, match='channels'):
        mx.nd.contrib.DeformablePSROIPooling(mx.nd.zeros((1, 7, 6, 6)), mx.nd.zeros((1, 5)),
                                             spatial_scale=1, output_dim=2, group_size=2,
                                             pooled_size=2, no_trans=True)


def _reference_nms(rows, thresh, class_aware):
    """Plain greedy NMS over (id, score, box) rows: kept rows' indices in score order."""
    order = sorted(range(len(rows)), key=lambda i: -rows[i][1])
    keep = []
    for i in order:
        ok = True
        for k in keep:
            if class_aware and rows[k][0] != rows[i][0]:
                continue
            a, b = rows[k][2:], rows[i][2:]
            w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
            h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
            inter = w * h
            union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
            if inter > 0 and inter / union > thresh:
                ok = False
                break
        if ok:
            keep.append(i)
    return keep


@pytest.mark.parametrize('force', [False, True])
def test_box_nms_many_boxes_matches_plain_greedy(force):
    rs = np.random.RandomState(4)
    n = 700                       # several blocks of the blocked suppression
    xy = rs.uniform(0, 50, (n, 2))
    rows = np.concatenate([rs.randint(0, 3, (n, 1)), rs.permutation(n)[:, None] / n, xy,
                           xy + rs.uniform(2, 12, (n, 2))], 1).astype('float64')
    out = mx.nd.contrib.box_nms(mx.nd.array(rows[None], dtype='float64'), overlap_thresh=0.3,
                                coord_start=2, score_index=1, id_index=0,
                                force_suppress=force).asnumpy()[0]
    keep = _reference_nms(rows.tolist(), 0.3, not force)
    np.testing.assert_array_equal(out[:len(keep)], rows[keep])
    assert (out[len(keep):] == -1).all()

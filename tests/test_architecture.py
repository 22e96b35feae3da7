"""The architecture rule: every fact a graph pass needs about an operator is a rule or trait on
its OpDef (mxtorch/ops/); passes outside mxtorch/ops/ never compare an operator's name with a
literal. Also checks what the rules the passes use say."""
import pathlib
import re

import numpy as np
import torch

from mxtorch.ops.registry import canonical_ops, get_op

ROOT = pathlib.Path(__file__).resolve().parents[1] / 'mxtorch'

# the modules that rewrite, run or serialise graphs generically
PASSES = ['fusion.py', 'plan.py', 'compiler.py', 'executor.py', 'monitor.py', 'train_step.py',
          'symbol/optimize.py', 'symbol/json_format.py', 'symbol/infer.py', 'symbol/graph.py',
          'symbol/placement.py', 'contrib/quantization.py', 'contrib/amp/amp.py']

_LITERAL = r"""\s*[\(\[\{]?\s*['"](?!null['"])"""       # 'null' is JSON's variable marker
# anywhere outside ops/: an op's name compared with a literal
_OP_NAME_TEST = re.compile(r"\bop\.name\s*(==|!=|(not\s+)?in\b)" + _LITERAL)
# in the passes: also a plan step's kind, a JSON op name, an op looked up by a literal name
_PASS_TEST = re.compile(r"(\.kind|\bop_name)\s*(==|!=|(not\s+)?in\b)" + _LITERAL +
                        r"""|\b(get_op|find_op)\(\s*['"]""")


def _code_lines(path):
    """(number, line) of path's lines with comments cut off."""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        yield number, line.split('#', 1)[0]


def _hits(paths, pattern):
    return ['%s:%d: %s' % (p.relative_to(ROOT.parent), n, line.strip())
            for p in paths for n, line in _code_lines(p) if pattern.search(line)]


def test_no_operator_name_tests_outside_ops():
    modules = [p for p in ROOT.rglob('*.py') if 'ops' not in p.relative_to(ROOT).parts[:1]]
    assert modules and not _hits(modules, _OP_NAME_TEST)


def test_passes_look_up_rules_not_names():
    paths = [ROOT / p for p in PASSES]
    assert all(p.exists() for p in paths), [str(p) for p in paths if not p.exists()]
    assert not _hits(paths, _PASS_TEST)


def test_the_scanner_catches_name_tests():
    samples = ["if step.kind == 'Convolution':", "x.op.name in ('argmax', 'argmin')",
               "node.op.name != \"clip\"", "op = get_op('RNN')", "if op_name not in ['x']:"]
    for text in samples:
        assert _PASS_TEST.search(text) or _OP_NAME_TEST.search(text), text
    assert not _PASS_TEST.search("if op_name == 'null':")


def _params(name, **attrs):
    return get_op(name).parse_params({k: str(v) for k, v in attrs.items()})


def test_pointwise_activation_rules():
    assert get_op('relu').pointwise_act(_params('relu')) == ('relu', [])
    assert get_op('Activation').pointwise_act(_params('Activation', act_type='relu')) == \
        ('relu', [])
    assert get_op('Activation').pointwise_act(_params('Activation', act_type='tanh')) is None
    assert get_op('clip').pointwise_act(_params('clip', a_min=0, a_max=6)) == \
        ('hardtanh', [0.0, 6.0])
    assert get_op('clip').pointwise_act(_params('clip', a_min=1, a_max=0)) is None
    assert get_op('sigmoid').pointwise_act is None


def test_batch_norm_inference_affine_matches_its_forward():
    rng = np.random.RandomState(0)
    x, bias = rng.randn(2, 3, 4), rng.randn(3)
    gamma, beta, mean = rng.randn(3), rng.randn(3), rng.randn(3)
    var = rng.uniform(0.5, 2, 3)
    t = [torch.tensor(v, dtype=torch.float64) for v in (x, bias, gamma, beta, mean, var)]
    for fix_gamma in (True, False):
        p = _params('BatchNorm', fix_gamma=fix_gamma, eps=1e-3)
        scale, shift = get_op('BatchNorm').inference_affine(p)(*t[1:])
        want = get_op('BatchNorm').forward(p, t[0] + t[1][:, None], *t[2:], train=False)[0]
        np.testing.assert_allclose((t[0] * scale[:, None] + shift[:, None]).numpy(),
                                   want.numpy(), rtol=1e-12, atol=1e-12)
    assert get_op('BatchNorm').inference_affine(_params('BatchNorm', axis=2)) is None
    assert get_op('BatchNorm').inference_affine(_params('BatchNorm', output_mean_var=True)) \
        is None


def test_convolution_geometry_and_other_traits():
    geometry = get_op('Convolution').conv_geometry(
        _params('Convolution', kernel=(3, 3), num_filter=4, stride=(2, 2), no_bias=True))
    assert tuple(geometry) == (2, [2, 2], [0, 0], [1, 1], 1, False)
    assert get_op('Convolution').conv_geometry(
        _params('Convolution', kernel=(3, 3), num_filter=4, layout='NHWC')) is None
    assert get_op('elemwise_add').sum_of_two and not get_op('broadcast_add').sum_of_two
    fresh = {n for n, op in canonical_ops().items() if op.fresh_output}
    assert {'Convolution', 'FullyConnected', 'BatchNorm', 'elemwise_add', 'broadcast_add'} <= fresh
    assert get_op('RNN').bind_rewrite is not None
    assert get_op('amp_multicast').amp_cast_input(1) == 1 and \
        get_op('amp_cast').amp_cast_input(0) == 0
    attrs = {'axis': '-1'}
    get_op('argmax').upgrade_attrs(attrs, 904)
    assert attrs == {}
    attrs = {'axis': '-1'}
    get_op('argmin').upgrade_attrs(attrs, 905)
    assert attrs == {'axis': '-1'}

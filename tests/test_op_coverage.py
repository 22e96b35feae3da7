"""Operator coverage against MXNet 1.9.1: every operator name the reference registers
(tests/fixtures/mxnet_1.9.1_op_names.txt, written by gen_mxnet_op_names.py) outside the NumPy
interface (`_np*`) and the backward operators is registered in mxtorch.ops, the sparse-storage
names (`_sparse_*`) included."""
import pathlib

from mxtorch import ops

NAMES_FILE = pathlib.Path(__file__).parent / 'fixtures' / 'mxnet_1.9.1_op_names.txt'


def _in_scope(name):
    return not (name.startswith('_np') or 'backward' in name)


def missing_ops():
    lines = NAMES_FILE.read_text().splitlines()
    names = [n.strip() for n in lines if n.strip() and not n.startswith('#')]
    have = ops.all_ops()
    return sorted(n for n in names if _in_scope(n) and n not in have)


def test_names_file_is_mxnet_1_9_1s():
    lines = [n for n in NAMES_FILE.read_text().splitlines() if not n.startswith('#')]
    assert len(lines) == 1167 and lines == sorted(lines)
    assert {'Convolution', '_contrib_box_nms', '_foreach', '_np_sum'} <= set(lines)


def test_every_mxnet_operator_is_registered():
    missing = missing_ops()
    assert not missing, '%d MXNet 1.9.1 operators missing: %s' % (len(missing), ' '.join(missing))

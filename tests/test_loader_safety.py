"""Loaders never let a file hurt the process: malformed .params, symbol JSON, .states, RecordIO,
MNIST, CSV and LibSVM files raise MXNetError naming the file, within a memory ceiling, and sparse
arrays stay sparse. The fuzzing and the reproducers run in a child process under an address-space
cap (tests/loader_fuzz.py), so an allocation a file should not cause fails the test."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import mxtorch as mx
from mxtorch.base import MXNetError

from conftest import ROOT

LOADERS = ['nd.load', 'nd.load_frombuffer', 'sym.load', 'sym.load_json', 'load_optimizer_states',
           'load_checkpoint.params', 'load_checkpoint.symbol', 'recordio.rec', 'recordio.idx',
           'MNISTIter', 'MNISTIter.gz', 'CSVIter', 'LibSVMIter']


def _child(*args):
    env = dict(os.environ, OMP_NUM_THREADS='1')
    proc = subprocess.run([sys.executable, str(ROOT / 'tests' / 'loader_fuzz.py')] + list(args),
                          capture_output=True, text=True, timeout=600, env=env, cwd=str(ROOT))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope='module')
def fuzzed():
    # a fixed number of cases per loader (seeded), so that every run checks the same inputs
    return _child('--seconds', '30', '--cases', '200', '--memory-mb', '1024')


@pytest.fixture(scope='module')
def reproduced():
    return _child('--reproducers', '--memory-mb', '1024')


@pytest.mark.parametrize('loader', LOADERS)
def test_fuzzed_files_load_or_raise_mxnet_error(fuzzed, loader):
    result = fuzzed[loader]
    assert result['cases'] == 200
    assert result['num_failures'] == 0, result['failures']


def test_reproducers_are_rejected_within_the_memory_cap(reproduced):
    for name, outcome in reproduced.items():
        if name.startswith('ok_'):
            continue
        assert outcome.startswith('MXNetError: '), (name, outcome)
        if not name.startswith(('mnist', 'idx')):
            assert 'case' in outcome, (name, outcome)                # the file is named
    assert reproduced['ok_rsp_60000x60000_stays_sparse'] == 'ok: row_sparse (60000, 60000)'
    assert 'column indices out of range [0, 3)' in reproduced['csr_negative_column']
    assert 'with 2 row indices but values of shape (1, 2)' in reproduced['rsp_too_few_value_rows']
    assert "num_args='100000000000' but the JSON gives 1 inputs" in \
        reproduced['add_n_num_args_1e11']
    assert 'value -5 should be greater equal to 1' in reproduced['num_hidden_negative']
    assert 'nested more than 100 levels' in reproduced['json_nested_3000']
    assert 'expected 1099511627776 bytes in a bytearray8' in reproduced['states_bytearray_1tb']
    assert 'should be a sequence of 2, the file holds dict' in reproduced['states_cyclic_dict']
    assert 'beyond the limit of 2147483648' in reproduced['mnist_gzip_2_4gb_header']
    assert 'holds more bytes after the header' in reproduced['mnist_gzip_longer_than_header']
    assert 'is not UTF-8' in reproduced['idx_not_utf8']
    assert 'gives offset -8' in reproduced['idx_negative_offset']


# ---- in-process checks ----------------------------------------------------------------------
def test_sparse_arrays_stay_sparse_on_load(tmp_path):
    dense = np.array([[0, 1, 0], [2, 0, 3], [0, 0, 0]], dtype=np.float32)
    path = str(tmp_path / 'sparse.params')
    mx.nd.save(path, {'c': mx.nd.sparse.csr_matrix(dense),
                      'r': mx.nd.sparse.row_sparse_array(dense)})
    loaded = mx.nd.load(path)
    assert loaded['c'].stype == 'csr' and loaded['r'].stype == 'row_sparse'
    assert loaded['c'].indices.asnumpy().tolist() == [1, 0, 2]
    assert loaded['r'].indices.asnumpy().tolist() == [0, 1]
    np.testing.assert_array_equal(loaded['c'].asnumpy(), dense)
    np.testing.assert_array_equal(loaded['r'].asnumpy(), dense)


def test_operator_bounds_as_mxnet():
    # MXNet 1.9.1: "value -5 for Parameter num_hidden should be greater equal to 1",
    # "value 2 for Parameter p exceed bound [0,1]"
    data = mx.sym.Variable('data')
    with pytest.raises(MXNetError, match='num_hidden.*value -5 should be greater equal to 1'):
        mx.sym.FullyConnected(data, num_hidden=-5)
    with pytest.raises(MXNetError, match=r'exceed bound \[0,1\]'):
        mx.sym.Dropout(data, p=2)
    with pytest.raises(MXNetError, match='num_args.*should be greater equal to 1'):
        mx.sym.Concat(num_args=0)
    text = mx.sym.FullyConnected(data, num_hidden=4, name='fc').tojson()
    with pytest.raises(MXNetError, match='operator fc.*should be greater equal to 1'):
        mx.sym.load_json(text.replace('"num_hidden": "4"', '"num_hidden": "-5"'))
    with pytest.raises(MXNetError, match='operator fc.*should be greater equal to 1'):
        mx.sym.load_json(text.replace('"num_hidden": "4"', '"num_hidden": "0"'))


def test_output_counts_are_bounded_at_load():
    parts = mx.sym.SliceChannel(mx.sym.Variable('data'), num_outputs=2, name='s')
    text = (parts[0] + parts[1]).tojson()
    with pytest.raises(MXNetError, match='beyond the limit'):
        mx.sym.load_json(text.replace('"num_outputs": "2"', '"num_outputs": "100000000000"'))


def _module(num_hidden, optimizer='adam'):
    net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable('data'),
                                                     num_hidden=num_hidden, name='fc'),
                               name='softmax')
    mod = mx.mod.Module(net, context=mx.cpu())
    mod.bind(data_shapes=[('data', (2, 4))], label_shapes=[('softmax_label', (2,))])
    mod.init_params()
    mod.init_optimizer(optimizer=optimizer)
    return mod


def _train_step(mod):
    batch = mx.io.DataBatch([mx.nd.ones((2, 4))], [mx.nd.array([0, 1])])
    mod.forward_backward(batch)
    mod.update()


def test_states_are_checked_against_the_bound_parameters(tmp_path):
    source = _module(3)
    _train_step(source)
    path = str(tmp_path / 'm.states')
    source.save_optimizer_states(path)

    same = _module(3)
    same.load_optimizer_states(path)                       # fits: loads
    np.testing.assert_allclose(same._updater.states[0][0].asnumpy(),
                               source._updater.states[0][0].asnumpy())

    other = _module(5)                                     # fc_weight is (5, 4) here
    _train_step(other)
    before = {k: [s.asnumpy() for s in v] for k, v in other._updater.states.items()}
    with pytest.raises(MXNetError, match=r'fc_weight\[0\] has shape \(3, 4\).*needs \(5, 4\).*m\.states'):
        other.load_optimizer_states(path)
    after = {k: [s.asnumpy() for s in v] for k, v in other._updater.states.items()}
    assert before.keys() == after.keys()                   # nothing changed
    for k in before:
        for a, b in zip(before[k], after[k]):
            np.testing.assert_array_equal(a, b)

    sgd = _module(3, optimizer='sgd')                      # no momentum: states are None
    with pytest.raises(MXNetError, match='should be empty'):
        sgd.load_optimizer_states(path)

    # states a kvstore saved are keyed by parameter name; they fit a module without one too
    by_name = {'fc_weight': source._updater.states[0], 'fc_bias': source._updater.states[1]}
    with open(path, 'wb') as f:
        f.write(mx.optimizer.serialization.dumps(by_name))
    same.load_optimizer_states(path)
    by_name['fc_weight'] = by_name['fc_bias']
    with open(path, 'wb') as f:
        f.write(mx.optimizer.serialization.dumps(by_name))
    with pytest.raises(MXNetError, match=r'fc_weight\[0\] has shape \(3,\)'):
        same.load_optimizer_states(path)

    extra = dict(source._updater.states)
    extra[7] = extra[0]
    with open(path, 'wb') as f:
        f.write(mx.optimizer.serialization.dumps(extra))
    with pytest.raises(MXNetError, match='index 7, but the model has no such parameter'):
        same.load_optimizer_states(path)


def test_states_never_run_code(tmp_path):
    marker = tmp_path / 'ran'
    payload = (                                # os.system('touch <marker>'), pickled by hand
        b'\x80\x02cos\nsystem\nq\x00X' + len('touch %s' % marker).to_bytes(4, 'little')
        + ('touch %s' % marker).encode() + b'\x85R.')
    path = str(tmp_path / 'evil.states')
    with open(path, 'wb') as f:
        f.write(payload)
    with pytest.raises(MXNetError, match='refusing to load global os.system'):
        _module(3).load_optimizer_states(path)
    assert not marker.exists()

"""Names MXNet 1.9.1 defines that scripts import at their MXNet paths: each is importable there
(also through the `mxnet` alias) and behaves as MXNet's (numbers from
tests/fixtures/api_surface.json, made by tests/fixtures/gen_api_surface.py with MXNet 1.9.1)."""
import importlib
import json
import logging
import math
import os
import pickle
import sys
import warnings

import numpy as np
import pytest

import mxtorch as mx

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures')
sys.path.insert(0, FIXTURES)
import gen_api_surface as gen  # noqa: E402

with open(os.path.join(FIXTURES, 'api_surface.json')) as _f:
    REFERENCE = json.load(_f)

# module (MXNet's path, under mxtorch) -> names this change added there
ADDED = {
    'gluon.nn': ['BatchNormReLU'], 'gluon.nn.basic_layers': ['BatchNormReLU'],
    'ndarray': ['imdecode', 'CachedOp', 'utils'],
    'ndarray.ndarray': ['add', 'subtract', 'multiply', 'divide', 'true_divide', 'modulo',
                        'power', 'maximum', 'minimum', 'equal', 'not_equal', 'greater',
                        'greater_equal', 'lesser', 'lesser_equal', 'logical_and', 'logical_or',
                        'logical_xor', 'imdecode', 'histogram', 'split_v2', 'linspace', 'eye',
                        '_DTYPE_NP_TO_MX', '_DTYPE_MX_TO_NP', '_GRAD_REQ_MAP'],
    'ndarray.utils': ['zeros', 'empty', 'array', 'load', 'load_frombuffer', 'save'],
    'ndarray.op': ['CachedOp'], 'ndarray._internal': ['CachedOp'],
    'symbol.random': ['randn'],
    'symbol.symbol': ['pow', 'power', 'maximum', 'minimum', 'hypot', 'eye', 'zeros', 'ones',
                      'full', 'arange', 'linspace', 'histogram', 'split_v2'],
    'util': ['set_module', 'np_ufunc_legal_option', 'wrap_np_unary_func',
             'wrap_np_binary_func'],
    'libinfo': ['__version__', 'find_lib_path', 'find_include_path', 'find_conf_path'],
    'error': ['MXNetError', 'register', 'InternalError'],
    'base': ['register_error', 'error_types'],
    'numpy_extension.random': ['normal_n', 'uniform_n'],
    'profiler': ['set_kvstore_handle'],
    'misc': ['LearningRateScheduler', 'FactorScheduler'],
    'notebook.callback': ['PandasLogger', 'LiveBokehChart', 'LiveTimeSeries',
                          'LiveLearningCurve', 'args_wrapper'],
    'rnn.rnn': ['rnn_unroll'],
    'io.io': ['NDArrayIter', 'MXDataIter', 'CSVIter', 'MNISTIter', 'LibSVMIter',
              'ImageRecordIter', 'ImageRecordIter_v1', 'ImageRecordUInt8Iter',
              'ImageRecordUInt8Iter_v1', 'ImageRecordInt8Iter', 'ImageDetRecordIter'],
    'kvstore.base': ['create', 'KVStoreBase'],
    'kvstore.kvstore_server': ['KVStoreServer'], 'kvstore': ['KVStoreServer'],
    'optimizer.optimizer': ['NDabs'], 'optimizer': ['NDabs'],
    'gluon.parameter': ['tensor_types'], 'gluon': ['tensor_types'],
    'gluon.contrib.data._constants': ['EOS_TOKEN'],
    'contrib.onnx': ['import_to_gluon'],
}


@pytest.fixture(autouse=True)
def _own_name_counters():
    """Fresh operator and block name counters for each test (other test files read the
    process-wide ones, e.g. expect the first mx.sym.linspace to be _linspace0)."""
    with mx.name.NameManager():
        yield


@pytest.mark.parametrize('module', sorted(ADDED))
def test_names_import_at_mxnets_paths(module):
    mod = importlib.import_module('mxtorch.' + module)
    for name in ADDED[module]:
        assert hasattr(mod, name), 'mxtorch.%s.%s' % (module, name)
        exec('from mxtorch.%s import %s' % (module, name), {})


def test_names_import_through_the_mxnet_alias():
    from mxtorch import compat
    compat.install()
    try:
        for module, names in ADDED.items():
            mod = importlib.import_module('mxnet.' + module)
            for name in names:
                assert getattr(mod, name) is getattr(
                    importlib.import_module('mxtorch.' + module), name)
        import mxnet
        assert mxnet.libinfo.__version__ == mxnet.__version__ == '1.9.1'
        for name in ('error', 'libinfo', 'notebook'):        # imported by `import mxnet`
            assert hasattr(mxnet, name)
    finally:
        compat.uninstall()


def test_same_objects_as_the_namespaces():
    from mxtorch.io import io
    from mxtorch.kvstore import base
    from mxtorch.ndarray import ndarray, op, utils
    from mxtorch.symbol import symbol
    assert ndarray.maximum is mx.nd.maximum and ndarray.imdecode is mx.nd.imdecode
    assert op.CachedOp is mx.nd.CachedOp and utils.save is mx.nd.save
    assert symbol.pow is mx.sym.pow and symbol.split_v2 is mx.sym.split_v2
    assert io.NDArrayIter is mx.io.NDArrayIter and io.MXDataIter is mx.io.MXDataIter
    assert base.create is mx.kv.create
    assert mx.optimizer.optimizer.NDabs is mx.nd.abs
    assert mx.gluon.parameter.tensor_types == (mx.sym.Symbol, mx.nd.NDArray)
    assert importlib.import_module('mxtorch.gluon.contrib.data._constants').EOS_TOKEN == '<eos>'
    with pytest.raises(AttributeError):
        io.NoSuchIter      # noqa: B018


def _close(got, want, path='', rtol=1e-5, atol=1e-6):
    """Recursive comparison of fixture data: floats within tolerance, the rest equal."""
    if isinstance(want, dict):
        assert sorted(got) == sorted(want), path
        for key in want:
            _close(got[key], want[key], '%s.%s' % (path, key), rtol, atol)
    elif isinstance(want, (list, tuple)):
        assert isinstance(got, (list, tuple)) and len(got) == len(want), (path, got, want)
        for i, (g, w) in enumerate(zip(got, want)):
            _close(g, w, '%s[%d]' % (path, i), rtol, atol)
    elif isinstance(want, float) and not isinstance(got, bool):
        assert math.isclose(got, want, rel_tol=rtol, abs_tol=atol) or \
            (math.isnan(got) and math.isnan(want)), (path, got, want)
    else:
        assert got == want, (path, got, want)


def _run(case):
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        return getattr(gen, case)(mx)


@pytest.mark.parametrize('case', ['case_batchnorm_relu', 'case_ndarray_functions',
                                  'case_cached_op', 'case_symbol_functions',
                                  'case_random_randn', 'case_util', 'case_errors', 'case_misc'])
def test_matches_mxnet(case):
    _close(_run(case), REFERENCE[case], case)


def test_batchnorm_relu_is_batchnorm_then_relu():
    rs = np.random.RandomState(1)
    x = mx.nd.array(rs.randn(4, 2, 3))
    fused, plain = mx.gluon.nn.BatchNormReLU(), mx.gluon.nn.BatchNorm()
    for block in (fused, plain):
        block.initialize()
        block.collect_params()[block.prefix + 'beta'].set_data(mx.nd.array([0.5, -0.5]))
    with mx.autograd.record():
        a, b = fused(x), plain(x)
    np.testing.assert_allclose(a.asnumpy(), np.maximum(b.asnumpy(), 0), rtol=1e-6)
    np.testing.assert_allclose(fused.running_mean.data().asnumpy(),
                               plain.running_mean.data().asnumpy(), rtol=1e-6)
    assert not isinstance(fused, mx.gluon.nn.BatchNorm)       # siblings, as in MXNet
    fused.cast('float16')                 # BatchNorm's parameters stay float32
    assert np.dtype(fused.gamma.dtype) == np.float32


def test_batchnorm_relu_export_loads_as_a_symbol_block(tmp_path):
    net = mx.gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(mx.gluon.nn.Conv2D(4, 3, in_channels=2), mx.gluon.nn.BatchNormReLU())
    net.initialize()
    net.hybridize()
    x = mx.nd.array(np.random.RandomState(2).randn(1, 2, 5, 5))
    want = net(x).asnumpy()
    net.export(str(tmp_path / 'net'))
    graph = json.loads((tmp_path / 'net-symbol.json').read_text())
    assert [n['op'] for n in graph['nodes'] if n['op'] != 'null'] == \
        ['Convolution', '_contrib_BatchNormWithReLU']
    loaded = mx.gluon.SymbolBlock.imports(str(tmp_path / 'net-symbol.json'), ['data'],
                                          str(tmp_path / 'net-0000.params'))
    np.testing.assert_allclose(loaded(x).asnumpy(), want, rtol=1e-6)
    assert want.min() == 0


def test_cached_op_matches_mxnet_with_gradients():
    _close(_run('case_cached_op'), REFERENCE['case_cached_op'])


def test_npx_random_n_samplers():
    got, want = _run('case_npx_random'), REFERENCE['case_npx_random']
    for key in ('shapes', 'dtypes', 'constant', 'errors'):
        _close(got[key], want[key], key)
    mean, std, low_ok, high_ok = got['moments']      # torch's stream: statistics only
    assert abs(mean - 2.0) < 0.1 and abs(std - 3.0) < 0.1 and low_ok and high_ok


def test_npx_random_n_error_messages():
    mx.npx.set_np()
    try:
        with pytest.raises(mx.MXNetError, match="'int32'.*float16"):
            mx.npx.random.normal_n(batch_shape=2, dtype='int32')
        with pytest.raises(mx.MXNetError, match=r'\(3,\) \(low\) and \(2,\) \(high\)'):
            mx.npx.random.uniform_n(mx.np.zeros(3), mx.np.ones(2))
        with pytest.raises(ValueError, match='scale < 0'):
            mx.npx.random.normal_n(0, mx.np.array([1.0, -1.0]))
    finally:
        mx.npx.reset_np()


def test_misc_factor_scheduler_logs_each_change(caplog):
    from mxtorch.misc import FactorScheduler
    _close(_run('case_misc'), REFERENCE['case_misc'])
    sched = FactorScheduler(step=2, factor=0.1)
    with caplog.at_level(logging.INFO):
        assert [sched(i) for i in range(5)] == pytest.approx([0.01, 0.01, 0.001, 0.001, 1e-4])
    assert [r.getMessage() for r in caplog.records] == [
        'At Iteration [2]: Swith to new learning rate 0.00100',
        'At Iteration [4]: Swith to new learning rate 0.00010']


def test_pandas_logger_records_mxnets_rows():
    pytest.importorskip('pandas')
    _close(_run('case_pandas_logger'), REFERENCE['case_pandas_logger'])


def test_pandas_logger_epoch_callback_takes_fits_arguments():
    pytest.importorskip('pandas')
    from mxtorch.notebook.callback import PandasLogger
    logger = PandasLogger(batch_size=4)
    logger.epoch_cb(0, None, {}, {})          # what fit's epoch_end_callback passes
    logger.epoch_cb()
    assert len(logger.epoch_df) == 2
    assert list(logger.epoch_df['epoch_time'] >= logger.epoch_df['epoch_time'] * 0) == [True] * 2


def test_notebook_callbacks_name_the_missing_package(monkeypatch):
    from mxtorch.notebook import callback
    monkeypatch.setitem(sys.modules, 'pandas', None)        # an import of it fails
    monkeypatch.setitem(sys.modules, 'bokeh', None)
    monkeypatch.setitem(sys.modules, 'bokeh.plotting', None)
    with pytest.raises(ImportError, match="PandasLogger needs the 'pandas' package"):
        callback.PandasLogger(batch_size=1)
    with pytest.raises(ImportError, match="needs the 'bokeh' package"):
        callback.LiveLearningCurve('accuracy')
    with pytest.raises(ImportError, match="needs the 'bokeh' package"):
        callback.LiveTimeSeries()


class _Glyph:
    def __init__(self):
        self.visible = True
        self.data_source = type('Source', (), {'data': {}})()


class _Figure:
    """What the charts use of a bokeh figure."""
    def __init__(self, **params):
        self.params = params
        self.legend = type('Legend', (), {})()
        self.yaxis = type('Axis', (), {})()
        self.glyphs = []

    def _glyph(self, *args, **kwargs):
        glyph = _Glyph()
        self.glyphs.append((args, kwargs, glyph))
        return glyph

    line = scatter = _glyph


def _fake_bokeh(monkeypatch):
    """A stand-in for bokeh (not a test dependency) recording what the charts draw."""
    import types
    bokeh = types.ModuleType('bokeh')
    bokeh.__version__ = '3.4.0'
    bokeh.plotting = types.ModuleType('bokeh.plotting')
    bokeh.io = types.ModuleType('bokeh.io')
    bokeh.plotting.figure = _Figure
    bokeh.plotting.show = lambda fig, notebook_handle=False: ('handle', fig)
    pushes = []
    bokeh.io.push_notebook = lambda handle=None: pushes.append(handle)
    bokeh.io.output_notebook = lambda: None
    for name, module in (('bokeh', bokeh), ('bokeh.plotting', bokeh.plotting),
                         ('bokeh.io', bokeh.io)):
        monkeypatch.setitem(sys.modules, name, module)
    return pushes


def test_live_learning_curve_collects_metric_points(monkeypatch):
    pytest.importorskip('pandas')
    from mxtorch.notebook.callback import LiveLearningCurve, LiveTimeSeries, args_wrapper
    from mxtorch.model import BatchEndParam
    pushes = _fake_bokeh(monkeypatch)
    curve = LiveLearningCurve('accuracy', display_freq=1e9, frequent=2)
    assert curve.fig.yaxis.axis_label == 'accuracy' and curve.fig.legend.location == \
        'bottom_right'
    assert [kw.get('legend_label') for _, kw, _ in curve.fig.glyphs] == \
        ['train', 'train', 'validation', None]
    metric = mx.metric.Accuracy()
    for nbatch in range(5):
        metric.update([mx.nd.array([nbatch % 2])], [mx.nd.array([[0.2, 0.8]])])
        curve.batch_cb(BatchEndParam(0, nbatch, metric, {}))
    assert pushes == []                           # display_freq not reached
    metric.update([mx.nd.array([1, 1, 0, 1])], [mx.nd.array([[0, 1]] * 4)])
    curve.eval_cb(BatchEndParam(0, 5, metric, {}))
    assert pushes == [('handle', curve.fig)]
    assert curve.y_axis_val1 == [0.0, 0.5, 0.5] and curve.y_axis_val2 == [0.75]
    assert curve.train1.data_source.data['y'] == [0.0, 0.5, 0.5]
    assert curve.valid1.data_source.data['y'] == [0.75]
    assert sorted(args_wrapper(curve)) == ['batch_end_callback', 'eval_end_callback']
    series = LiveTimeSeries(title='loss')
    series.update_chart_data(0.5)
    series.update_chart_data(0.25)
    assert series.y_axis_val == [0.5, 0.25] and series.line.data_source.data['y'] == [0.5, 0.25]
    assert series.fig.params == {'x_axis_type': 'datetime', 'x_axis_label': 'Elapsed time',
                                 'title': 'loss'}


def test_rnn_unroll_builds_the_cells_graph():
    # MXNet 1.9.1's rnn_unroll hands input_prefix to BaseRNNCell.unroll, which refuses it: a
    # TypeError on every call. mxtorch's builds the graph the function describes.
    want = dict(REFERENCE['case_rnn_unroll'])
    assert want.pop('mxnet_error')[0] == 'TypeError'
    with pytest.warns(UserWarning, match='rnn_unroll is deprecated'):
        got = gen.case_rnn_unroll(mx)
    _close(got, want)


def _png(image):
    import cv2
    ok, buf = cv2.imencode('.png', image)
    assert ok
    return buf.tobytes()


def test_nd_imdecode_runs_mxnets_kernel():
    # MXNet 1.9.1's Python 3 binding cannot hand the image bytes to its kernel (every call
    # fails); this is what that kernel (src/ndarray/ndarray.cc Imdecode) computes
    pytest.importorskip('cv2')
    from mxtorch.ndarray.ndarray import imdecode
    rs = np.random.RandomState(0)
    bgr = rs.randint(0, 256, (6, 5, 3)).astype(np.uint8)
    raw = _png(bgr)
    out = imdecode(raw)
    assert out.shape == (3, 6, 5) and out.dtype == np.float32
    np.testing.assert_array_equal(out.asnumpy(), bgr.transpose(2, 0, 1))   # BGR, as stored
    cut = imdecode(raw, clip_rect=(1, 2, 4, 5))
    np.testing.assert_array_equal(cut.asnumpy(), bgr[2:5, 1:4].transpose(2, 0, 1))
    import cv2
    grey = cv2.imdecode(np.frombuffer(raw, np.uint8), cv2.IMREAD_GRAYSCALE)   # the kernel's
    np.testing.assert_array_equal(imdecode(raw, channels=1).asnumpy()[0], grey)
    two = imdecode(raw, channels=2)
    np.testing.assert_array_equal(two.asnumpy(), bgr[:, :, :2].transpose(2, 0, 1))
    mean = mx.nd.array(rs.uniform(0, 50, (3, 6, 5)), dtype='float64')
    centred = imdecode(raw, mean=mean)
    assert centred.dtype == np.float64
    np.testing.assert_allclose(centred.asnumpy(), bgr.transpose(2, 0, 1) - mean.asnumpy())
    batch = mx.nd.zeros((2, 3, 6, 5))
    assert imdecode(raw, out=batch, index=1) is batch
    np.testing.assert_array_equal(batch.asnumpy()[1], bgr.transpose(2, 0, 1))
    assert batch.asnumpy()[0].sum() == 0
    single = mx.nd.zeros((3, 3, 3), dtype='uint8')
    imdecode(raw, clip_rect=(0, 0, 3, 3), out=single)
    np.testing.assert_array_equal(single.asnumpy(), bgr[:3, :3].transpose(2, 0, 1))
    bgra = np.dstack([bgr, np.full((6, 5), 7, np.uint8)])
    np.testing.assert_array_equal(imdecode(_png(bgra)).asnumpy(), bgr.transpose(2, 0, 1))
    assert imdecode(bytearray(raw)).shape == (3, 6, 5)


def test_nd_imdecode_errors():
    pytest.importorskip('cv2')
    raw = _png(np.zeros((6, 5, 3), np.uint8))
    grey = _png(np.zeros((6, 5), np.uint8))
    with pytest.raises(mx.MXNetError, match='failed to decode'):
        mx.nd.imdecode(b'not an image')
    with pytest.raises(mx.MXNetError, match='c=3 channels asked for, but the image has 1'):
        mx.nd.imdecode(grey)
    with pytest.raises(mx.MXNetError, match='not inside the 5x6 image'):
        mx.nd.imdecode(raw, clip_rect=(0, 0, 6, 2))
    with pytest.raises(mx.MXNetError, match='clip_rect must be 4'):
        mx.nd.imdecode(raw, clip_rect=(0, 0, 2))
    with pytest.raises(mx.MXNetError, match=r"shape \(c, h, w\) = \(3, 6, 5\), got \(3, 5, 5\)"):
        mx.nd.imdecode(raw, mean=mx.nd.zeros((3, 5, 5)))
    with pytest.raises(mx.MXNetError, match='mean must be a'):
        mx.nd.imdecode(raw, mean=mx.nd.zeros((3,)))
    with pytest.raises(mx.MXNetError, match=r'but out\[0\] has shape \(3, 6, 4\)'):
        mx.nd.imdecode(raw, out=mx.nd.zeros((1, 3, 6, 4)))
    with pytest.raises(mx.MXNetError, match='index 2 is out of range'):
        mx.nd.imdecode(raw, out=mx.nd.zeros((2, 3, 6, 5)), index=2)
    with pytest.raises(mx.MXNetError, match='same dtype'):
        mx.nd.imdecode(raw, out=mx.nd.zeros((3, 6, 5)), mean=mx.nd.zeros((3, 6, 5),
                                                                         dtype='float64'))
    with pytest.raises(TypeError, match='str_img must be the encoded image as bytes'):
        mx.nd.imdecode(np.zeros(3))


def test_ndarray_utils_and_dtype_tables(tmp_path):
    from mxtorch.ndarray import ndarray, utils
    assert ndarray._DTYPE_NP_TO_MX[np.float16] == 2 and ndarray._DTYPE_MX_TO_NP[6] is np.int64
    assert ndarray._DTYPE_MX_TO_NP[-1] is None
    path = str(tmp_path / 'x.nd')
    utils.save(path, {'a': utils.array([1, 2])})
    assert utils.load(path)['a'].asnumpy().tolist() == [1, 2]
    with open(path, 'rb') as f:
        assert utils.load_frombuffer(f.read())['a'].asnumpy().tolist() == [1, 2]
    assert utils.empty((2, 3), dtype='int32').shape == (2, 3)
    assert utils.zeros((2, 3), stype='row_sparse').stype == 'row_sparse'


def test_util_set_module_and_wrappers():
    _close(_run('case_util'), REFERENCE['case_util'])


def test_libinfo_finds_only_what_exists(tmp_path, monkeypatch, caplog):
    from mxtorch import libinfo
    for variable in ('MXNET_LIBRARY_PATH', 'MXNET_INCLUDE_PATH', 'MXNET_CONF_PATH',
                     'LD_LIBRARY_PATH'):
        monkeypatch.delenv(variable, raising=False)
    with pytest.raises(RuntimeError, match='Cannot find the MXNet library.\nList of candidates'):
        libinfo.find_lib_path()
    with pytest.raises(RuntimeError, match='Cannot find the MXNet include path'):
        libinfo.find_include_path()
    with pytest.raises(RuntimeError, match='Cannot find the TVM op config'):
        libinfo.find_conf_path()
    lib = tmp_path / 'libmxnet.so'
    lib.write_bytes(b'')
    monkeypatch.setenv('MXNET_LIBRARY_PATH', str(lib))
    assert libinfo.find_lib_path() == [str(lib)]
    monkeypatch.setenv('LD_LIBRARY_PATH', str(tmp_path))
    monkeypatch.setenv('MXNET_LIBRARY_PATH', 'relative/libmxnet.so')
    with caplog.at_level(logging.WARNING):
        assert libinfo.find_lib_path() == [str(lib)]       # found on LD_LIBRARY_PATH
    assert "MXNET_LIBRARY_PATH 'relative/libmxnet.so' doesn't exist" in caplog.text
    monkeypatch.setenv('MXNET_INCLUDE_PATH', str(tmp_path))
    assert libinfo.find_include_path() == str(tmp_path)
    conf = tmp_path / 'tvmop.conf'
    conf.write_text('{}')
    monkeypatch.setenv('MXNET_CONF_PATH', str(conf))
    assert libinfo.find_conf_path() == str(conf)


def test_error_module_registers_classes():
    _close(_run('case_errors'), REFERENCE['case_errors'])
    assert issubclass(mx.error.MXNetError, RuntimeError) and mx.error.MXNetError is mx.MXNetError
    assert mx.base.error_types['NotImplementedForSymbol'] is mx.base.NotImplementedForSymbol


def test_profiler_keeps_the_kvstore_handle():
    from mxtorch import profiler
    kv = mx.kv.create('local')
    before = profiler.profiler_kvstore_handle
    try:
        profiler.set_kvstore_handle(kv)
        assert profiler.profiler_kvstore_handle is kv
    finally:
        profiler.set_kvstore_handle(before)


def test_kvstore_base_create_and_server():
    from mxtorch.kvstore.base import create
    from mxtorch.kvstore.kvstore_server import KVStoreServer
    kv = create('local')
    assert type(kv) is mx.kv.KVStore and kv.type == 'local'
    with pytest.raises(TypeError, match='name must be a string'):
        create(3)
    server = KVStoreServer(kv)
    control = server._controller()
    control(0, pickle.dumps(mx.optimizer.SGD(learning_rate=0.25)), None)
    assert isinstance(kv._updater.optimizer, mx.optimizer.SGD)
    assert kv._updater.optimizer.lr == 0.25
    with pytest.raises(mx.MXNetError, match='no parameter servers'):
        server.run()


def test_nd_abs_alias_and_io_iterators():
    from mxtorch.io.io import NDArrayIter
    from mxtorch.optimizer.optimizer import NDabs
    assert NDabs(mx.nd.array([-1.5, 2])).asnumpy().tolist() == [1.5, 2]
    it = NDArrayIter(np.arange(6).reshape(3, 2), batch_size=2, last_batch_handle='discard')
    assert [b.data[0].asnumpy().tolist() for b in it] == [[[0, 1], [2, 3]]]

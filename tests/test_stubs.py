"""Generated mx.nd / mx.sym functions carry signatures and docstrings from their operator's
schema, and the committed .pyi stubs are what mxtorch._stubgen writes today."""
import ast
import inspect

import pytest

import mxtorch as mx
from mxtorch import _stubgen


def test_signature_from_the_schema():
    sig = inspect.signature(mx.nd.FullyConnected)
    params = sig.parameters
    assert list(params)[:3] == ['data', 'weight', 'bias']
    assert params['num_hidden'].default is inspect.Parameter.empty         # required
    assert params['num_hidden'].kind is inspect.Parameter.KEYWORD_ONLY
    assert params['num_hidden'].annotation == 'int'
    assert params['no_bias'].default is False and params['flatten'].default is True
    assert 'out' in params and 'ctx' in params and sig.return_annotation == 'NDArray'
    conv = inspect.signature(mx.sym.Convolution).parameters
    assert conv['kernel'].annotation == 'tuple[int, ...] | int'
    assert conv['num_group'].default == 1 and 'attr' in conv
    assert conv['layout'].annotation.startswith("Literal['NCDHW'")
    act = inspect.signature(mx.sym.Activation).parameters['act_type']
    assert act.annotation == "Literal['relu', 'sigmoid', 'softrelu', 'softsign', 'tanh']"
    concat = inspect.signature(mx.nd.Concat).parameters
    assert concat['data'].kind is inspect.Parameter.VAR_POSITIONAL and 'num_args' not in concat
    assert inspect.signature(mx.nd.topk).parameters['axis'].annotation == 'int | None'


def test_docstring_lists_inputs_and_parameters():
    doc = mx.nd.Convolution.__doc__
    assert 'Parameters\n----------' in doc
    assert 'weight : NDArray' in doc
    assert 'num_filter : int, required' in doc
    assert 'num_group : int, optional, default=1' in doc
    assert 'Returns\n-------\nSymbol' in mx.sym.Convolution.__doc__


def test_signatures_describe_calls_that_work():
    """The documented forms are accepted: inputs positionally, parameters by keyword."""
    x, w = mx.nd.ones((2, 3)), mx.nd.ones((4, 3))
    assert mx.nd.FullyConnected(x, w, None, num_hidden=4, no_bias=True).shape == (2, 4)
    bound = inspect.signature(mx.nd.clip).bind(x, a_min=0, a_max=1)
    assert mx.nd.clip(*bound.args, **bound.kwargs).asnumpy().max() == 1


def test_committed_stubs_are_up_to_date():
    """Generated in a fresh process: other tests register operators and custom ops."""
    import subprocess
    import sys
    run = subprocess.run([sys.executable, '-m', 'mxtorch._stubgen', '--check'],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize('package', sorted(_stubgen.PACKAGES))
def test_committed_stub_declares_the_operators(package):
    with open(_stubgen.stub_path(package)) as f:
        committed = f.read()
    tree = ast.parse(committed)
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {'FullyConnected', 'Convolution', 'softmax', 'SoftmaxOutput', '__getattr__'} <= set(defs)
    fc = defs['FullyConnected'].args
    assert [a.arg for a in fc.kwonlyargs][:3] == ['num_hidden', 'no_bias', 'flatten']
    assert ast.unparse(fc.kwonlyargs[0].annotation) == 'int'
    text = ast.unparse(tree)
    assert 'from .ndarray import NDArray as NDArray' in text or \
        'from .symbol import Symbol as Symbol' in text

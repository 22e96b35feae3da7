"""Issue 13, CPU: one training step (forward, backward, SGD with momentum) of the MLP
784-128-64-10 (batch 100 and 1000), LeNet (batch 64), the CIFAR ResNet-20 v2 (batch 32) and a
bucketed 2-layer LSTM language model (mx.rnn.LSTMCell unrolled, as MXNet's bucketing example
builds it; three steps, lengths 10/20/30, batch 32) as a Module / BucketingModule, uncompiled and
with the bound plans compiled (MXTORCH_COMPILE=1, mxtorch/compiler.py), against the same step
hand-written in PyTorch eager, MXNet 1.9.1 (mxnet_worker.py, where MXNET_PYTHON or /tmp/mxref has
it) and JAX with the whole step under jax.jit (jax_worker.py, where JAX_PYTHON names a Python
with JAX), interleaved in one run, one thread each. The compiles (cached on disk) are paid
before timing. `python benchmarks/bench_compile.py [--cpu-time] [ROW ...]` (rows: mlp100
mlp1000 lenet resnet20 lstm) runs some of them; --cpu-time times each candidate by the CPU time
of the thread (the worker process) running it, steadier than wall time where other jobs share
the machine.
"""
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

import mxtorch as mx
from mxtorch import compiler
from mxtorch.models import lenet, mlp, resnet
from harness import interleaved, report
import bench_bucketing
from bench_resnet import ResNet20
from workers import Worker, available

MXREF = os.environ.get('MXNET_PYTHON', '/tmp/mxref/bin/python')
JAXPY = os.environ.get('JAX_PYTHON', '/tmp/jaxenv/bin/python')
ONE_THREAD = {'OMP_NUM_THREADS': '1', 'MKL_NUM_THREADS': '1', 'OMP_WAIT_POLICY': 'PASSIVE',
              'XLA_FLAGS': '--xla_cpu_multi_thread_eigen=false',
              'MXNET_ENGINE_TYPE': 'NaiveEngine'}


def module_step(sym, shape, batch, compiled):
    rng = np.random.RandomState(1)
    data = mx.io.DataBatch([mx.nd.array(rng.rand(batch, *shape))],
                           [mx.nd.array(rng.randint(0, 10, batch))])

    def make():
        mod = mx.mod.Module(sym)
        mod.bind([('data', (batch,) + shape)], [('softmax_label', (batch,))])
        return mod
    return _steps(make, [data], compiled)


def bucketing_steps(compiled):
    """Three BucketingModule steps, one per length, of the unrolled-LSTMCell language model."""
    rng = np.random.RandomState(0)
    batches = [bench_bucketing.batch(n, rng) for n in LENGTHS]

    def make():
        mod = mx.mod.BucketingModule(_lstm_cell_lm, default_bucket_key=max(LENGTHS))
        mod.bind(batches[-1].provide_data, batches[-1].provide_label)
        return mod
    return _steps(make, batches, compiled)


LENGTHS = (10, 20, 30)


def _lstm_cell_lm(seq_len):
    """bench_bucketing's model, its layers as MXNet's bucketing example builds them: an
    mx.rnn.SequentialRNNCell of LSTMCells unrolled step by step (mxtorch runs each layer as one
    RNN operator at bind)."""
    b = bench_bucketing
    embed = mx.sym.Embedding(mx.sym.Variable('data'), input_dim=b.VOCAB, output_dim=b.EMBED,
                             name='embed')
    stack = mx.rnn.SequentialRNNCell()
    for i in range(b.LAYERS):
        stack.add(mx.rnn.LSTMCell(num_hidden=b.HIDDEN, prefix='lstm_l%d_' % i))
    outputs, _ = stack.unroll(seq_len, inputs=embed, merge_outputs=True)
    pred = mx.sym.FullyConnected(mx.sym.Reshape(outputs, shape=(-1, b.HIDDEN)),
                                 num_hidden=b.VOCAB, name='pred')
    label = mx.sym.Reshape(mx.sym.Variable('softmax_label'), shape=(-1,))
    return mx.sym.SoftmaxOutput(pred, label, name='softmax'), ('data',), ('softmax_label',)


def _steps(make, batches, compiled, after=None):
    """One call: forward_backward + update for each batch (then `after()`), on a module made
    by `make` with MXTORCH_COMPILE set (read at bind) to `compiled`; the compiles are paid
    here."""
    saved = os.environ.get('MXTORCH_COMPILE')
    os.environ['MXTORCH_COMPILE'] = '1' if compiled else '0'
    try:
        mod = make()
        mod.init_params(mx.init.Xavier())
        mod.init_optimizer(optimizer_params={'learning_rate': 0.01, 'momentum': 0.9})

        def step():
            for data in batches:
                mod.forward_backward(data)
                mod.update()
            if after is not None:
                after()
        start = time.perf_counter()
        step()
        compiler.wait()
        if compiled:
            print('  compile (cached on disk after the first run): %.1f s'
                  % (time.perf_counter() - start))
        return step
    finally:
        if saved is None:
            del os.environ['MXTORCH_COMPILE']
        else:
            os.environ['MXTORCH_COMPILE'] = saved


def torch_step(kind, shape, batch):
    """The same network as plain torch tensors and ops, trained the way a PyTorch user would."""
    torch.manual_seed(0)
    x = torch.rand(batch, *shape)
    y = torch.randint(0, 10, (batch,))
    if kind == 'resnet20':
        model = ResNet20().train()
        return _sgd_step(model, [p for p in model.parameters() if p.requires_grad], x, y)
    if kind == 'mlp':
        sizes = [(128, 784), (128,), (64, 128), (64,), (10, 64), (10,)]
    else:
        sizes = [(20, 1, 5, 5), (20,), (50, 20, 5, 5), (50,), (500, 800), (500,), (10, 500),
                 (10,)]
    params = [(torch.randn(*s) * 0.05).requires_grad_() for s in sizes]

    def forward(h):
        if kind == 'mlp':
            h = F.relu(F.linear(h, params[0], params[1]))
            h = F.relu(F.linear(h, params[2], params[3]))
            return F.linear(h, params[4], params[5])
        h = F.max_pool2d(torch.tanh(F.conv2d(h, params[0], params[1])), 2, 2)
        h = F.max_pool2d(torch.tanh(F.conv2d(h, params[2], params[3])), 2, 2)
        h = torch.tanh(F.linear(h.flatten(1), params[4], params[5]))
        return F.linear(h, params[6], params[7])
    return _sgd_step(forward, params, x, y)


def _sgd_step(forward, params, x, y):
    """A PyTorch training step: cross-entropy of forward(x), backward, SGD with momentum."""
    opt = torch.optim.SGD(params, lr=0.01, momentum=0.9)

    def step():
        loss = F.cross_entropy(forward(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return step


def torch_lstm_steps():
    """bench_bucketing's nn.Embedding + nn.LSTM + nn.Linear, SGD with momentum."""
    b = bench_bucketing
    torch.manual_seed(0)
    embed, lstm = torch.nn.Embedding(b.VOCAB, b.EMBED), torch.nn.LSTM(b.EMBED, b.HIDDEN, b.LAYERS)
    pred = torch.nn.Linear(b.HIDDEN, b.VOCAB)
    params = list(embed.parameters()) + list(lstm.parameters()) + list(pred.parameters())
    opt = torch.optim.SGD(params, lr=0.01, momentum=0.9)
    rng = np.random.RandomState(0)
    batches = [(torch.from_numpy(rng.randint(1, b.VOCAB, (b.BATCH, n))),
                torch.from_numpy(rng.randint(1, b.VOCAB, (b.BATCH, n)))) for n in LENGTHS]

    def steps():
        for data, label in batches:
            out, _ = lstm(embed(data.t()))
            logits = pred(out.transpose(0, 1).reshape(-1, b.HIDDEN))
            loss = F.cross_entropy(logits, label.reshape(-1), reduction='sum') / b.BATCH
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    return steps


ROWS = {'mlp100': ('MLP 784-128-64-10, batch 100', 'mlp', (784,), 100),
        'mlp1000': ('MLP 784-128-64-10, batch 1000', 'mlp', (784,), 1000),
        'lenet': ('LeNet, batch 64', 'lenet', (1, 28, 28), 64),
        'resnet20': ('CIFAR ResNet-20 v2, batch 32', 'resnet20', (3, 32, 32), 32),
        'lstm': ('bucketed 2-layer LSTMCell LM, 3 steps (lengths 10/20/30), batch 32',
                 'lstm_lm', None, 32)}
SYMBOLS = {'mlp': lambda: mlp.get_symbol(10), 'lenet': lambda: lenet.get_symbol(10),
           'resnet20': lambda: resnet.get_symbol(10, 20, '3,32,32')}


def candidates_for(kind, shape, batch, mxnet, jax):
    if kind == 'lstm_lm':
        found = {'PyTorch eager': torch_lstm_steps(),
                 'mxtorch BucketingModule': bucketing_steps(False),
                 'mxtorch BucketingModule, compiled': bucketing_steps(True)}
        if mxnet is not None:
            found['MXNet 1.9.1 BucketingModule'] = mxnet.step_fn(
                mode='bucketing', batch=batch, vocab=bench_bucketing.VOCAB,
                json={str(n): _lstm_cell_lm(n)[0].tojson() for n in LENGTHS})
        if jax is not None:
            found['JAX jit (whole step)'] = jax.step_fn(model=kind, batch=batch,
                                                         lengths=list(LENGTHS))
        return found
    sym = SYMBOLS[kind]()
    found = {'PyTorch eager': torch_step(kind, shape, batch),
             'mxtorch Module': module_step(sym, shape, batch, False),
             'mxtorch Module, compiled': module_step(sym, shape, batch, True)}
    if mxnet is not None:
        found['MXNet 1.9.1 Module'] = mxnet.step_fn(
            mode='train', json=sym.tojson(), data=(batch,) + shape, label=(batch,))
    if jax is not None:
        found['JAX jit (whole step)'] = jax.step_fn(model=kind, batch=batch)
    return found


def main(rows=None, cpu_time=False):
    torch.set_num_threads(1)
    mxnet = Worker(MXREF, 'mxnet_worker.py', ONE_THREAD) if available(MXREF, 'mxnet') else None
    jax = Worker(JAXPY, 'jax_worker.py', ONE_THREAD, one_core=True) \
        if available(JAXPY, 'jax') else None
    results = []
    for row in rows or ROWS:
        title, kind, shape, batch = ROWS[row]
        candidates = candidates_for(kind, shape, batch, mxnet, jax)
        medians = interleaved(candidates, rounds=7, seconds=1.0, warmup=3,
                              timer=time.thread_time if cpu_time else time.perf_counter)
        results.append(report(title + ': training step, 1 thread%s' % (
            ', CPU time' if cpu_time else ''), medians, 'PyTorch eager'))
    for worker in (mxnet, jax):
        if worker is not None:
            worker.close()
    return results


if __name__ == '__main__':
    if '-h' in sys.argv or '--help' in sys.argv:
        print(__doc__)
        sys.exit(0)
    ARGS = [a for a in sys.argv[1:] if a != '--cpu-time']
    UNKNOWN = [a for a in ARGS if a not in ROWS]
    if UNKNOWN:
        sys.exit('unknown rows %s (rows: %s)' % (' '.join(UNKNOWN), ' '.join(ROWS)))
    main(ARGS or None, cpu_time='--cpu-time' in sys.argv)

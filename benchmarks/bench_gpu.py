"""Issue 13, GPU: the training steps of bench_compile.py (MLP 784-128-64-10 at batch 100, LeNet at
batch 64, the CIFAR ResNet-20 v2 at batch 32, the bucketed 2-layer LSTM language model over
lengths 10/20/30, unrolled LSTMCells and FusedRNNCell) and ResNet-50 v1 inference (batch 1 and
32) on `mx.gpu(0)`, against the same networks in PyTorch on the GPU: eager, `torch.compile`
(default mode and mode="reduce-overhead", which captures CUDA graphs) and, for the training
steps, the eager step captured by hand as one CUDA graph (static inputs; forward, backward and
SGD with momentum replayed), the issue's reference for a captured step; mxtorch's Module with
and without its own capture (cuda_graphs.py: forward and backward replayed as CUDA graphs).
Interleaved rounds, medians; every timed call ends with torch.cuda.synchronize().

    python benchmarks/bench_gpu.py [ROW ...]          rows: mlp lenet resnet20 lstm lstm_fused
                                                     resnet50_b1 resnet50_b32
    python benchmarks/bench_gpu.py --device cpu ...   the same code on the CPU (a dry run:
                                                     no capture; checks the script itself)
"""
import argparse
import sys

import numpy as np
import torch
import torch.nn.functional as F

import mxtorch as mx
from mxtorch.models import lenet, mlp, resnet
from harness import environ, interleaved, report
import bench_bucketing
from bench_compile import LENGTHS, _lstm_cell_lm, _steps
from bench_resnet import ResNet20, ResNet50


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(784, 128), torch.nn.Linear(128, 64)
        self.fc3 = torch.nn.Linear(64, 10)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class LeNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1, self.c2 = torch.nn.Conv2d(1, 20, 5), torch.nn.Conv2d(20, 50, 5)
        self.f1, self.f2 = torch.nn.Linear(800, 500), torch.nn.Linear(500, 10)

    def forward(self, x):
        x = F.max_pool2d(torch.tanh(self.c1(x)), 2, 2)
        x = F.max_pool2d(torch.tanh(self.c2(x)), 2, 2)
        return self.f2(torch.tanh(self.f1(x.flatten(1))))


class LSTMLM(torch.nn.Module):
    """nn.Embedding + nn.LSTM (time-major, as MXNet's RNN) + nn.Linear."""

    def __init__(self):
        super().__init__()
        b = bench_bucketing
        self.embed = torch.nn.Embedding(b.VOCAB, b.EMBED)
        self.lstm = torch.nn.LSTM(b.EMBED, b.HIDDEN, b.LAYERS)
        self.pred = torch.nn.Linear(b.HIDDEN, b.VOCAB)

    def forward(self, tokens):
        out, _ = self.lstm(self.embed(tokens.t()))
        return self.pred(out.transpose(0, 1).reshape(-1, out.shape[-1]))


TRAIN = {'mlp': (MLP, lambda: mlp.get_symbol(10), (784,), 100),
         'lenet': (LeNet, lambda: lenet.get_symbol(10), (1, 28, 28), 64),
         'resnet20': (ResNet20, lambda: resnet.get_symbol(10, 20, '3,32,32'), (3, 32, 32), 32)}


def _sync(device):
    if device.type == 'cuda':
        torch.cuda.synchronize()


def _batches(kind, device, rng):
    """[(x, y)] torch tensors for the training step of `kind` (one per bucket for the LMs)."""
    if kind.startswith('lstm'):
        b = bench_bucketing
        return [(torch.from_numpy(rng.randint(1, b.VOCAB, (b.BATCH, n))).to(device),
                 torch.from_numpy(rng.randint(1, b.VOCAB, (b.BATCH, n))).to(device))
                for n in LENGTHS]
    _, _, shape, batch = TRAIN[kind]
    return [(torch.from_numpy(rng.rand(batch, *shape).astype(np.float32)).to(device),
             torch.from_numpy(rng.randint(0, 10, batch)).to(device))]


def torch_train(kind, device, how):
    """A PyTorch training step (SGD, momentum 0.9): how = 'eager', 'compile',
    'reduce-overhead' (torch.compile's CUDA graphs) or 'captured' (one hand-captured CUDA graph
    per batch shape: the eager step replayed)."""
    torch.manual_seed(0)
    model = (LSTMLM() if kind.startswith('lstm') else TRAIN[kind][0]()).to(device).train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=0.01, momentum=0.9)
    batches = _batches(kind, device, np.random.RandomState(0))
    forward = model
    if how in ('compile', 'reduce-overhead'):
        forward = torch.compile(model, mode=None if how == 'compile' else how)

    def one(x, y):
        loss = F.cross_entropy(forward(x), y.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)

    if how != 'captured' or device.type != 'cuda':
        def step():
            for x, y in batches:
                one(x, y)
            _sync(device)
        return step
    for p in params:                       # gradients live at fixed addresses in the graph
        p.grad = torch.zeros_like(p)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):          # warm-up (creates the momentum buffers) off-graph
        for _ in range(3):
            for x, y in batches:
                one(x, y)
    torch.cuda.current_stream().wait_stream(side)
    graphs = []
    for x, y in batches:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            one(x, y)
        graphs.append(graph)

    def replay():
        for graph in graphs:
            graph.replay()
        _sync(device)
    return replay


def mxtorch_train(kind, ctx, device, compiled=False):
    """Module.forward_backward + update (BucketingModule for the LMs) on `ctx`."""
    rng = np.random.RandomState(0)
    if kind.startswith('lstm'):
        gen = bench_bucketing.sym_gen if kind == 'lstm_fused' else _lstm_cell_lm
        batches = [bench_bucketing.batch(n, rng) for n in LENGTHS]

        def make():
            mod = mx.mod.BucketingModule(gen, default_bucket_key=max(LENGTHS), context=ctx)
            mod.bind(batches[-1].provide_data, batches[-1].provide_label)
            return mod
    else:
        _, sym, shape, batch = TRAIN[kind]
        batches = [mx.io.DataBatch([mx.nd.array(rng.rand(batch, *shape), ctx=ctx)],
                                   [mx.nd.array(rng.randint(0, 10, batch), ctx=ctx)])]

        def make():
            mod = mx.mod.Module(sym(), context=ctx)
            mod.bind([('data', (batch,) + shape)], [('softmax_label', (batch,))])
            return mod
    return _steps(make, batches, compiled, after=lambda: _sync(device))


def inference(batch, ctx, device):
    """ResNet-50 v1 inference: the bound mxtorch graph (fused plan) against PyTorch eager and
    torch.compile (default and reduce-overhead)."""
    sym = resnet.get_symbol(1000, 50, '3,224,224', version=1)
    exe = sym.simple_bind(ctx, grad_req='null', data=(batch, 3, 224, 224))
    rng = np.random.RandomState(0)
    for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
        arr[:] = rng.uniform(0.5, 1.5, arr.shape) if name.endswith('var') else \
            rng.normal(0, 0.05, arr.shape)

    def ours():
        exe.forward(is_train=False)
        _sync(device)
    model = ResNet50().to(device).eval()
    x = torch.randn(batch, 3, 224, 224, device=device)
    found = {'mxtorch (bound, fused)': ours}
    for name, fn in (('PyTorch eager', model), ('torch.compile', torch.compile(model)),
                     ('torch.compile reduce-overhead',
                      torch.compile(model, mode='reduce-overhead'))):
        def call(fn=fn):
            with torch.no_grad():
                fn(x)
            _sync(device)
        found[name] = call
    return found


ROWS = ['mlp', 'lenet', 'resnet20', 'lstm', 'lstm_fused', 'resnet50_b1', 'resnet50_b32']
TITLES = {'mlp': 'MLP 784-128-64-10 training step, batch 100',
          'lenet': 'LeNet training step, batch 64',
          'resnet20': 'CIFAR ResNet-20 v2 training step, batch 32',
          'lstm': 'bucketed LSTMCell LM, 3 steps (lengths 10/20/30), batch 32',
          'lstm_fused': 'bucketed FusedRNNCell LM, 3 steps (lengths 10/20/30), batch 32',
          'resnet50_b1': 'ResNet-50 v1 inference, batch 1',
          'resnet50_b32': 'ResNet-50 v1 inference, batch 32'}


def candidates(row, device):
    ctx = mx.gpu(0) if device.type == 'cuda' else mx.cpu()
    if row.startswith('resnet50'):
        return inference(int(row.split('_b')[1]), ctx, device)
    found = {'PyTorch eager': torch_train(row, device, 'eager'),
             'mxtorch Module': mxtorch_train(row, ctx, device),
             'mxtorch Module, MXTORCH_COMPILE=1': mxtorch_train(row, ctx, device, True)}
    found['torch.compile'] = torch_train(row, device, 'compile')
    if device.type == 'cuda':
        found['mxtorch Module, MXTORCH_CUDA_GRAPHS=0'] = _uncaptured(
            mxtorch_train(row, ctx, device))
        found['torch.compile reduce-overhead'] = torch_train(row, device, 'reduce-overhead')
        found['PyTorch, hand-captured CUDA graph'] = torch_train(row, device, 'captured')
    return found


def _uncaptured(step, first_calls=10):
    """`step` with CUDA-graph capture off while its executors decide (their first calls)."""
    calls = [0]

    def run():
        if calls[0] >= first_calls:
            return step()
        calls[0] += 1
        with environ('MXTORCH_CUDA_GRAPHS', '0'):
            return step()
    return run


def main(argv=()):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('rows', nargs='*', help=' '.join(ROWS))
    parser.add_argument('--device', default='cuda' if torch.cuda.is_available() else 'cpu')
    parser.add_argument('--rounds', type=int, default=7)
    parser.add_argument('--seconds', type=float, default=1.0)
    args = parser.parse_args(argv)
    unknown = sorted(set(args.rows) - set(ROWS))
    if unknown:
        parser.error('unknown rows %s (rows: %s)' % (', '.join(unknown), ' '.join(ROWS)))
    device = torch.device(args.device)
    if device.type == 'cuda':
        torch.backends.cudnn.benchmark = True
    else:
        print('no GPU: a dry run of the script on the CPU (the figures are not the issue\'s)')
    results = []
    for row in args.rows or ROWS:
        medians = interleaved(candidates(row, device), rounds=args.rounds,
                              seconds=args.seconds, warmup=3)
        results.append(report('%s on %s' % (TITLES[row], device), medians, 'PyTorch eager'))
    return results


if __name__ == '__main__':
    main(sys.argv[1:])

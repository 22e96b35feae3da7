"""Issue 11 targets: one lazy-update training step of a 1M x 64 embedding with 1% of its rows
touched (Embedding(sparse_grad=True) through simple_bind + an mx.optimizer updater, row_sparse
gradient, lazy SGD-momentum / Adam) against the dense equivalent in PyTorch eager (dense
embedding gradient, torch.optim step), at least 10x faster with the gradient's memory
proportional to the rows touched; and dot(csr, dense) forward+backward against PyTorch.

    python benchmarks/bench_sparse.py          (or: python benchmarks/run_all.py sparse)
"""

import warnings

import numpy as np
import torch
import torch.nn.functional as F

import mxtorch as mx
from harness import interleaved, report

ROWS, DIM, TOUCHED = 1000000, 64, 10000          # 1% of the rows per step


def _embedding_executor(touched, sparse_grad=True):
    data, w = mx.sym.Variable('data'), mx.sym.Variable('w')
    emb = mx.sym.Embedding(data, w, input_dim=ROWS, output_dim=DIM, sparse_grad=sparse_grad)
    loss = mx.sym.MakeLoss(mx.sym.sum(mx.sym.square(emb)))
    return loss.simple_bind(mx.cpu(), data=(touched,), w=(ROWS, DIM),
                            grad_req={'data': 'null', 'w': 'write'})


def _batches(touched, n=16):
    """Index batches of `touched` distinct rows."""
    rng = np.random.RandomState(0)
    return [rng.choice(ROWS, touched, replace=False) for _ in range(n)]


def _mx_step(optimizer, touched=TOUCHED):
    ex = _embedding_executor(touched)
    ex.arg_dict['w'][:] = mx.nd.random.uniform(-0.1, 0.1, shape=(ROWS, DIM))
    opt = dict(sgd=dict(momentum=0.9), adam={})[optimizer]
    updater = mx.optimizer.get_updater(
        mx.optimizer.create(optimizer, learning_rate=0.01, lazy_update=True, **opt))
    batches = [mx.nd.array(b) for b in _batches(touched)]
    state = {'i': 0}

    def step():
        ex.arg_dict['data'][:] = batches[state['i'] % len(batches)]
        state['i'] += 1
        ex.forward(is_train=True)
        ex.backward()
        updater(0, ex.grad_dict['w'], ex.arg_dict['w'])
    return step, ex


def _torch_step(optimizer, touched=TOUCHED):
    weight = torch.empty(ROWS, DIM).uniform_(-0.1, 0.1).requires_grad_()
    opt = torch.optim.SGD([weight], lr=0.01, momentum=0.9) if optimizer == 'sgd' else \
        torch.optim.Adam([weight], lr=0.01)
    batches = [torch.from_numpy(b) for b in _batches(touched)]
    state = {'i': 0}

    def step():
        idx = batches[state['i'] % len(batches)]
        state['i'] += 1
        opt.zero_grad()
        F.embedding(idx, weight).square().sum().backward()
        opt.step()
    return step


def _step_allocations(kind, touched):
    """MiB the operators allocate during one sgd step (torch's profiler; an upper bound on
    the step's peak memory above what it held before), after a first step made the states."""
    from torch.profiler import profile, ProfilerActivity
    step = _mx_step('sgd', touched)[0] if kind == 'mxtorch' else _torch_step('sgd', touched)
    step()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    return sum(max(0, e.self_cpu_memory_usage) for e in prof.key_averages()) / 2 ** 20


def _dot_candidates(batch=256, features=100000, out=64, density=0.001):
    rng = np.random.RandomState(1)
    import scipy.sparse as sp
    csr_sp = sp.random(batch, features, density=density, format='csr', dtype=np.float32,
                       random_state=rng)
    w_np = rng.uniform(-0.1, 0.1, (features, out)).astype(np.float32)
    csr = mx.nd.sparse.csr_matrix(csr_sp)
    w = mx.nd.array(w_np)
    w.attach_grad()
    head = mx.nd.ones((batch, out))

    def mx_dot():
        with mx.autograd.record():
            y = mx.nd.sparse.dot(csr, w)
        y.backward(head)
        w.grad.wait_to_read()

    x_dense = torch.from_numpy(csr_sp.toarray())
    warnings.filterwarnings('ignore', 'Sparse')
    x_sparse = torch.sparse_csr_tensor(torch.from_numpy(csr_sp.indptr).long(),
                                       torch.from_numpy(csr_sp.indices).long(),
                                       torch.from_numpy(csr_sp.data), (batch, features))
    wt = torch.from_numpy(w_np).requires_grad_()
    ones = torch.ones(batch, out)

    def torch_dense():
        wt.grad = None
        (x_dense @ wt).backward(ones)

    def torch_sparse():
        wt.grad = None
        torch.sparse.mm(x_sparse, wt).backward(ones)
    return {'mxtorch dot(csr, dense) + backward': mx_dot,
            'PyTorch eager dense matmul + backward': torch_dense,
            'PyTorch eager torch.sparse.mm + backward': torch_sparse}


def _bound_dot_candidates(batch=256, features=100000, out=64, density=0.001):
    """One training step of a bound linear model on csr data (MXNet's sparse linear
    classification): dot(csr, w) + b, LogisticRegressionOutput, forward + backward, the
    weight's gradient row_sparse (w dense, and w row_sparse as the example binds it)."""
    import scipy.sparse as sp
    rng = np.random.RandomState(2)
    csr_sp = sp.random(batch, features, density=density, format='csr', dtype=np.float32,
                       random_state=rng)
    w_np = rng.uniform(-0.1, 0.1, (features, out)).astype(np.float32)
    labels = rng.randint(0, 2, (batch, out)).astype(np.float32)

    def executor(w_stype):
        data = mx.sym.var('data', stype='csr')
        w, b = mx.sym.var('w', stype=w_stype), mx.sym.var('b')
        y = mx.sym.LogisticRegressionOutput(
            mx.sym.broadcast_add(mx.sym.sparse.dot(data, w), b), mx.sym.var('label'))
        ex = y.simple_bind(mx.cpu(), data=(batch, features), w=(features, out), b=(1, out),
                           label=(batch, out), grad_req={'data': 'null', 'w': 'write',
                                                         'b': 'write', 'label': 'null'})
        ex.arg_dict['data'][:] = mx.nd.sparse.csr_matrix(csr_sp)
        ex.arg_dict['w'][:] = mx.nd.array(w_np).tostype(w_stype)
        ex.arg_dict['label'][:] = labels

        def step():
            ex.forward(is_train=True)
            ex.backward()
            ex.grad_dict['w'].data.wait_to_read()
        return step

    x_dense = torch.from_numpy(csr_sp.toarray())
    wt = torch.from_numpy(w_np).requires_grad_()
    bt = torch.zeros(1, out, requires_grad=True)
    lt = torch.from_numpy(labels)

    x_sparse = torch.sparse_csr_tensor(torch.from_numpy(csr_sp.indptr).long(),
                                       torch.from_numpy(csr_sp.indices).long(),
                                       torch.from_numpy(csr_sp.data), (batch, features))

    def torch_step(x):
        def step():
            wt.grad = bt.grad = None
            z = (torch.sparse.mm(x, wt) if x.layout == torch.sparse_csr else x @ wt) + bt
            z.backward(torch.sigmoid(z.detach()) - lt)       # the logistic loss's gradient
        return step
    return {'mxtorch bound, w dense': executor('default'),
            'mxtorch bound, w row_sparse': executor('row_sparse'),
            'PyTorch eager dense matmul + backward': torch_step(x_dense),
            'PyTorch eager torch.sparse.mm + backward': torch_step(x_sparse)}


def _module_linear_step(batch=256, features=100000, density=0.001):
    """One mx.mod.Module step (forward_backward + update, SGD) of MXNet's sparse linear
    classification example: csr batches, a row_sparse weight of one output."""
    import scipy.sparse as sp
    rng = np.random.RandomState(2)
    batches = [mx.io.DataBatch([mx.nd.sparse.csr_matrix(sp.random(
        batch, features, density=density, format='csr', dtype=np.float32, random_state=rng))],
        [mx.nd.array(rng.randint(0, 2, (batch,)))]) for _ in range(8)]
    x = mx.sym.var('data', stype='csr')
    w = mx.sym.var('weight', shape=(features, 1), stype='row_sparse')
    y = mx.sym.LogisticRegressionOutput(
        mx.sym.broadcast_add(mx.sym.sparse.dot(x, w), mx.sym.var('bias', shape=(1,))),
        mx.sym.var('softmax_label'))
    mod = mx.mod.Module(y, data_names=['data'], label_names=['softmax_label'])
    mod.bind(data_shapes=[('data', (batch, features))],
             label_shapes=[('softmax_label', (batch,))])
    mod.init_params(mx.init.Normal(0.01))
    mod.init_optimizer(optimizer='sgd', optimizer_params={'learning_rate': 0.1})
    state = {'i': 0}

    def step():
        mod.forward_backward(batches[state['i'] % len(batches)])
        mod.update()
        state['i'] += 1
        mod.get_outputs()[0].wait_to_read()
    return step


def main():
    texts = []
    for optimizer in ('sgd', 'adam'):
        mx_step, ex = _mx_step(optimizer)
        medians = interleaved({'mxtorch lazy %s, row_sparse grad' % optimizer: mx_step,
                               'PyTorch eager %s, dense grad' % optimizer:
                                   _torch_step(optimizer)}, rounds=7, seconds=1.0, warmup=2)
        texts.append(report('1M x 64 embedding, 1%% rows, one %s training step' % optimizer,
                            medians, 'PyTorch eager %s, dense grad' % optimizer))
        g = ex.grad_dict['w']
        data, rows = g._get_parts()
        stored = data.numel() * data.element_size() + rows.numel() * rows.element_size()
        print('  gradient: %s storing %d rows, %.2f MiB (dense form built: %s); a dense '
              'gradient is %.1f MiB' % (g.stype, rows.numel(), stored / 2 ** 20,
                                        not (g._dense is None or g._dense_stale),
                                        ROWS * DIM * 4 / 2 ** 20))
        del ex, mx_step
    for touched in (TOUCHED // 10, TOUCHED):
        print('  memory allocated by one sgd step, %d rows touched: mxtorch %.1f MiB, PyTorch '
              'dense %.1f MiB' % (touched, _step_allocations('mxtorch', touched),
                                  _step_allocations('torch', touched)))
    texts.append(report('dot(csr 256 x 100000, 0.1% dense) x dense (100000 x 64), fwd+bwd',
                        interleaved(_dot_candidates(), rounds=7, seconds=1.0, warmup=2),
                        'PyTorch eager dense matmul + backward'))
    texts.append(report('bound linear model on csr 256 x 100000 (0.1%), w 100000 x 64: '
                        'forward + backward', interleaved(_bound_dot_candidates(), rounds=7,
                                                          seconds=1.0, warmup=2),
                        'PyTorch eager dense matmul + backward'))
    texts.append(report('Module step of the sparse linear classification example',
                        interleaved({'mxtorch Module': _module_linear_step()}, rounds=5,
                                    seconds=1.0, warmup=2), 'mxtorch Module'))
    return texts


if __name__ == '__main__':
    main()

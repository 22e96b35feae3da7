"""Runs in the reference MXNet 1.9.1 environment (benchmarks only): builds a network from
mxtorch's symbol JSON and times steps on request, so the benchmark can interleave MXNet with
mxtorch and PyTorch in one run.

The line protocol is workers.py's.
"""
import mxnet as mx
import numpy as np

from workers import serve


def _bucketing(request):
    """A BucketingModule over the given symbols ({length: JSON}), one step per length per call
    (token ids below request['vocab'] as data and labels, batch request['batch'])."""
    symbols = {int(n): mx.sym.load_json(j) for n, j in request['json'].items()}
    lengths, batch = sorted(symbols), request['batch']

    def sym_gen(n):
        return symbols[n], ('data',), ('softmax_label',)
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=lengths[-1])
    mod.bind([('data', (batch, lengths[-1]))], [('softmax_label', (batch, lengths[-1]))])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer_params={'learning_rate': 0.01, 'momentum': 0.9})
    rng = np.random.RandomState(0)
    vocab = request['vocab']
    batches = [mx.io.DataBatch([mx.nd.array(rng.randint(1, vocab, (batch, n)))],
                               [mx.nd.array(rng.randint(1, vocab, (batch, n)))], bucket_key=n,
                               provide_data=[mx.io.DataDesc('data', (batch, n))],
                               provide_label=[mx.io.DataDesc('softmax_label', (batch, n))])
               for n in lengths]

    def step():
        for b in batches:
            mod.forward_backward(b)
            mod.update()
        mx.nd.waitall()
    return step


def setup(request):
    if request['mode'] == 'bucketing':
        return _bucketing(request)
    sym = mx.sym.load_json(request['json'])
    data_shape = tuple(request['data'])
    rng = np.random.RandomState(0)
    if request['mode'] == 'infer':
        exe = sym.simple_bind(mx.cpu(), grad_req='null', data=data_shape)
        for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
            arr[:] = rng.uniform(0.5, 1.5, arr.shape) if name.endswith('var') else \
                rng.normal(0, 0.05, arr.shape)

        def step():
            exe.forward(is_train=False)
            exe.outputs[0].wait_to_read()
        return step
    label_shape = tuple(request['label'])
    mod = mx.mod.Module(sym)
    mod.bind([('data', data_shape)], [('softmax_label', label_shape)])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer_params={'learning_rate': 0.01, 'momentum': 0.9})
    batch = mx.io.DataBatch([mx.nd.array(rng.rand(*data_shape))],
                            [mx.nd.array(rng.randint(0, 10, label_shape))])

    def step():
        mod.forward_backward(batch)
        mod.update()
        mx.nd.waitall()
    return step


if __name__ == '__main__':
    serve(setup)

"""Issue 4 targets.

1. Step time of a bucketed 2-layer LSTM language model (embed 64, hidden 128, vocab 1000,
   batch 32, lengths 10/20/30) with BucketingModule, against the same model in PyTorch eager
   (nn.Embedding + nn.LSTM + nn.Linear, cross-entropy, SGD): at most 1.2x.
2. Memory: training over 10 bucket lengths peaks at no more than 1.15x the memory of a Module
   bound to the largest bucket alone. Measured as the peak of live tensor bytes (torch
   profiler's allocation events, summed in time order) from bind to the last step.
"""
import numpy as np
import torch
import torch.nn.functional as F

import mxtorch as mx
from mxtorch.test_utils import peak_tensor_bytes
from harness import interleaved, report

VOCAB, EMBED, HIDDEN, LAYERS, BATCH = 1000, 64, 128, 2, 32


def sym_gen(seq_len):
    data = mx.sym.Variable('data')
    label = mx.sym.Variable('softmax_label')
    embed = mx.sym.Embedding(data, input_dim=VOCAB, output_dim=EMBED, name='embed')
    cell = mx.rnn.FusedRNNCell(HIDDEN, num_layers=LAYERS, mode='lstm', prefix='lstm_')
    outputs, _ = cell.unroll(seq_len, inputs=embed, merge_outputs=True)
    pred = mx.sym.FullyConnected(mx.sym.Reshape(outputs, shape=(-1, HIDDEN)), num_hidden=VOCAB,
                                 name='pred')
    label = mx.sym.Reshape(label, shape=(-1,))
    return mx.sym.SoftmaxOutput(pred, label, name='softmax'), ('data',), ('softmax_label',)


def batch(seq_len, rng):
    data = rng.randint(1, VOCAB, (BATCH, seq_len)).astype(np.float32)
    label = rng.randint(1, VOCAB, (BATCH, seq_len)).astype(np.float32)
    return mx.io.DataBatch([mx.nd.array(data)], [mx.nd.array(label)], bucket_key=seq_len,
                           provide_data=[mx.io.DataDesc('data', (BATCH, seq_len))],
                           provide_label=[mx.io.DataDesc('softmax_label', (BATCH, seq_len))])


def bucketing_module(lengths):
    mod = mx.mod.BucketingModule(sym_gen, default_bucket_key=max(lengths))
    mod.bind([('data', (BATCH, max(lengths)))], [('softmax_label', (BATCH, max(lengths)))])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer_params={'learning_rate': 0.01})
    return mod


def step_time():
    lengths = (10, 20, 30)
    rng = np.random.RandomState(0)
    batches = [batch(n, rng) for n in lengths]
    mod = bucketing_module(lengths)

    def mxtorch_steps():
        for b in batches:
            mod.forward_backward(b)
            mod.update()

    embed = torch.nn.Embedding(VOCAB, EMBED)
    lstm = torch.nn.LSTM(EMBED, HIDDEN, LAYERS)
    pred = torch.nn.Linear(HIDDEN, VOCAB)
    params = list(embed.parameters()) + list(lstm.parameters()) + list(pred.parameters())
    opt = torch.optim.SGD(params, lr=0.01)
    tbatches = [(torch.from_numpy(b.data[0].asnumpy()).long(),
                 torch.from_numpy(b.label[0].asnumpy()).long()) for b in batches]

    def torch_steps():
        for data, label in tbatches:
            out, _ = lstm(embed(data.t()))                    # time-major, as MXNet's RNN
            logits = pred(out.transpose(0, 1).reshape(-1, HIDDEN))
            loss = F.cross_entropy(logits, label.reshape(-1), reduction='sum') / BATCH
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

    medians = interleaved({'PyTorch eager (nn.LSTM)': torch_steps,
                           'mxtorch BucketingModule': mxtorch_steps}, rounds=7, seconds=1.0)
    return report('Bucketed 2-layer LSTM LM, 3 steps (lengths 10, 20, 30), batch 32', medians,
                  'PyTorch eager (nn.LSTM)')


def train(lengths, module_factory, epochs=2):
    rng = np.random.RandomState(0)
    batches = [batch(n, rng) for n in lengths]

    def workload():
        mod = module_factory()
        for _ in range(epochs):
            for b in batches:
                mod.forward_backward(b)
                mod.update()
    return workload


def single_module():
    mod = mx.mod.Module(sym_gen(30)[0])
    mod.bind([('data', (BATCH, 30))], [('softmax_label', (BATCH, 30))])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer_params={'learning_rate': 0.01})
    return mod


def memory_ratio():
    lengths = list(range(30, 0, -3))                     # 10 buckets, the default is the largest
    alone = peak_tensor_bytes(train([30], single_module))
    buckets = peak_tensor_bytes(train(lengths, lambda: bucketing_module(lengths)))
    text = ('Bucketing memory: peak live tensor memory %.2f MB training over 10 buckets '
            '(lengths 30..3) vs %.2f MB for a Module bound to the largest bucket alone: '
            'ratio %.3f (target <= 1.15)' % (buckets / 2 ** 20, alone / 2 ** 20, buckets / alone))
    print(text)
    return text


def main():
    return [step_time(), memory_ratio()]


if __name__ == '__main__':
    main()

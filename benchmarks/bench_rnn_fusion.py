"""Issue 13: the unrolled-cell bucketed LM as fast as the FusedRNNCell one.

Three steps (lengths 10, 20, 30) of the 2-layer LSTM (and GRU) language model of
bench_bucketing.py, its layers built as MXNet's bucketing example builds them: a
SequentialRNNCell of mx.rnn.LSTMCell / GRUCell unrolled over the bucket length. Candidates,
interleaved: the unrolled cells with the bind-time RNN fusion (ops/rnn_unroll.py, the RNN op's
bind_rewrite), the same without it (MXTORCH_FUSE_RNN=0 when each bucket is bound), the
FusedRNNCell model, and PyTorch eager (nn.Embedding + nn.LSTM / nn.GRU + nn.Linear).
"""
import torch
import torch.nn.functional as F
import numpy as np

import mxtorch as mx
from bench_bucketing import BATCH, EMBED, HIDDEN, LAYERS, VOCAB, batch
from harness import environ, interleaved, report

LENGTHS = (10, 20, 30)


def sym_gen_factory(mode, fused):
    def sym_gen(seq_len):
        data = mx.sym.Variable('data')
        label = mx.sym.Variable('softmax_label')
        embed = mx.sym.Embedding(data, input_dim=VOCAB, output_dim=EMBED, name='embed')
        if fused:
            cell = mx.rnn.FusedRNNCell(HIDDEN, num_layers=LAYERS, mode=mode, prefix='%s_' % mode)
        else:
            cell = mx.rnn.SequentialRNNCell()
            for i in range(LAYERS):
                make = mx.rnn.LSTMCell if mode == 'lstm' else mx.rnn.GRUCell
                cell.add(make(HIDDEN, prefix='%s_l%d_' % (mode, i)))
        outputs, _ = cell.unroll(seq_len, inputs=embed, merge_outputs=True)
        pred = mx.sym.FullyConnected(mx.sym.Reshape(outputs, shape=(-1, HIDDEN)),
                                     num_hidden=VOCAB, name='pred')
        label = mx.sym.Reshape(label, shape=(-1,))
        return mx.sym.SoftmaxOutput(pred, label, name='softmax'), ('data',), ('softmax_label',)
    return sym_gen


def module_steps(mode, fused, batches, fuse_env='1'):
    """A step function over `batches`, every bucket bound (with MXTORCH_FUSE_RNN=fuse_env)."""
    mod = mx.mod.BucketingModule(sym_gen_factory(mode, fused), default_bucket_key=max(LENGTHS))
    mod.bind([('data', (BATCH, max(LENGTHS)))], [('softmax_label', (BATCH, max(LENGTHS)))])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer_params={'learning_rate': 0.01})

    def steps():
        for b in batches:
            mod.forward_backward(b)
            mod.update()
    with environ('MXTORCH_FUSE_RNN', fuse_env):
        steps()                                  # binds every bucket under fuse_env
    return steps


def torch_steps(mode, batches):
    embed = torch.nn.Embedding(VOCAB, EMBED)
    rnn = (torch.nn.LSTM if mode == 'lstm' else torch.nn.GRU)(EMBED, HIDDEN, LAYERS)
    pred = torch.nn.Linear(HIDDEN, VOCAB)
    params = list(embed.parameters()) + list(rnn.parameters()) + list(pred.parameters())
    opt = torch.optim.SGD(params, lr=0.01)
    tbatches = [(torch.from_numpy(b.data[0].asnumpy()).long(),
                 torch.from_numpy(b.label[0].asnumpy()).long()) for b in batches]

    def steps():
        for data, label in tbatches:
            out, _ = rnn(embed(data.t()))
            logits = pred(out.transpose(0, 1).reshape(-1, HIDDEN))
            loss = F.cross_entropy(logits, label.reshape(-1), reduction='sum') / BATCH
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    return steps


def step_time(mode):
    rng = np.random.RandomState(0)
    batches = [batch(n, rng) for n in LENGTHS]
    eager = 'PyTorch eager (nn.%s)' % mode.upper()
    candidates = {
        eager: torch_steps(mode, batches),
        'FusedRNNCell': module_steps(mode, True, batches),
        'unrolled %sCell, fused at bind' % mode.upper(): module_steps(mode, False, batches),
        'unrolled %sCell, MXTORCH_FUSE_RNN=0' % mode.upper():
            module_steps(mode, False, batches, fuse_env='0'),
    }
    medians = interleaved(candidates, rounds=7, seconds=1.0)
    return report('Bucketed 2-layer %s LM, 3 steps (lengths 10, 20, 30), batch 32'
                  % mode.upper(), medians, eager)


def main():
    return [step_time('lstm'), step_time('gru')]


if __name__ == '__main__':
    main()

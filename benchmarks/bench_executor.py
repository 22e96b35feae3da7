"""Issue 2 target: forward+backward of the 784-128-64-10 relu MLP with SoftmaxOutput at batch
100 through simple_bind, against the same math hand-written in PyTorch eager (<= 1.1x)."""
import numpy as np
import torch
import torch.nn.functional as F

import mxtorch as mx
from harness import interleaved, report

BATCH = 100


def mlp():
    net = mx.sym.Variable('data')
    for i, n in enumerate((128, 64)):
        net = mx.sym.FullyConnected(net, num_hidden=n, name='fc%d' % (i + 1))
        net = mx.sym.Activation(net, act_type='relu', name='relu%d' % (i + 1))
    net = mx.sym.FullyConnected(net, num_hidden=10, name='fc3')
    return mx.sym.SoftmaxOutput(net, name='softmax')


def main():
    rng = np.random.RandomState(0)
    sym = mlp()
    params_only = {n: 'null' if n in ('data', 'softmax_label') else 'write'
                   for n in sym.list_arguments()}          # what Module binds
    exe = sym.simple_bind(mx.cpu(), grad_req=params_only, data=(BATCH, 784))
    for name, arr in exe.arg_dict.items():
        arr[:] = rng.uniform(-0.1, 0.1, arr.shape)
    exe.arg_dict['data'][:] = rng.rand(BATCH, 784)
    exe.arg_dict['softmax_label'][:] = rng.randint(0, 10, BATCH)

    params = [exe.arg_dict[n]._tensor.clone().requires_grad_()
              for n in ('fc1_weight', 'fc1_bias', 'fc2_weight', 'fc2_bias', 'fc3_weight',
                        'fc3_bias')]
    x = exe.arg_dict['data']._tensor.clone()
    y = exe.arg_dict['softmax_label']._tensor.long()

    def mxtorch_step():
        exe.forward(is_train=True)
        exe.backward()

    def torch_step():
        w1, b1, w2, b2, w3, b3 = params
        h = F.relu(F.linear(x, w1, b1))
        h = F.relu(F.linear(h, w2, b2))
        logits = F.linear(h, w3, b3)
        prob = torch.softmax(logits, 1)
        loss = F.cross_entropy(logits, y, reduction='sum')
        for p in params:
            p.grad = None
        loss.backward()
        return prob

    # the gradients agree before we time anything
    mxtorch_step()
    torch_step()
    np.testing.assert_allclose(exe.grad_dict['fc1_weight'].asnumpy(), params[0].grad.numpy(),
                               rtol=1e-4, atol=1e-6)
    medians = interleaved({'PyTorch eager (hand-written)': torch_step,
                           'mxtorch simple_bind fwd+bwd': mxtorch_step})
    return report('MLP 784-128-64-10, batch %d, forward+backward' % BATCH, medians,
                  'PyTorch eager (hand-written)')


if __name__ == '__main__':
    main()

"""Child process of tests/test_concurrency.py: train a small model fed by PrefetchingIter, then
exit while the prefetching thread is still busy in torch (reading the next epoch's first batch).
The process must end with status 0."""
import numpy as np

import mxtorch as mx


class SlowIter(mx.io.NDArrayIter):
    """NDArrayIter whose batches cost some torch work, so that the prefetching thread is busy in
    torch when the interpreter shuts down. Only the batches after the first epoch are slow: the
    one being prefetched when training ends."""

    resets = 0

    def reset(self):
        super().reset()
        self.resets += 1

    def next(self):
        batch = super().next()
        if not self.resets:
            return batch
        x = mx.nd.ones((512, 512))
        for _ in range(120):
            x = mx.nd.dot(x, x) * 0.002
        return batch


# a script's globals, as in the examples: the iterator lives until the interpreter shuts down
rs = np.random.RandomState(0)
data = rs.rand(32, 8).astype('float32')
label = (data.sum(axis=1) > 4).astype('float32')
it = mx.io.PrefetchingIter(SlowIter(data, label, batch_size=16))
net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2),
                           name='softmax')
mod = mx.mod.Module(net)
mod.fit(it, num_epoch=1, optimizer_params={'learning_rate': 0.1})
print('trained')

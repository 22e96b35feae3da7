"""Runs in an environment with JAX (benchmarks only): the training steps of bench_compile.py
(MLP, LeNet, CIFAR ResNet-20 v2, a bucketed 2-layer LSTM language model) written in JAX, the
whole step (forward, gradient, SGD with momentum) under one jax.jit (one per bucket length),
timed on request so the benchmark can interleave JAX with the others in one run.

The line protocol is workers.py's.
"""
import jax
import jax.numpy as jnp
import numpy as np

from workers import serve


def _init(shapes, seed=0):
    rng = np.random.RandomState(seed)
    return [jnp.asarray(rng.normal(0, 0.05, s).astype(np.float32)) for s in shapes]


def mlp(params, x):
    w1, b1, w2, b2, w3, b3 = params
    h = jax.nn.relu(x @ w1.T + b1)
    h = jax.nn.relu(h @ w2.T + b2)
    return h @ w3.T + b3


def _conv(x, w, b):
    y = jax.lax.conv_general_dilated(x, w, (1, 1), 'VALID',
                                     dimension_numbers=('NCHW', 'OIHW', 'NCHW'))
    return y + b[None, :, None, None]


def _pool(x):
    return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), 'VALID')


def lenet(params, x):
    c1, cb1, c2, cb2, f1, fb1, f2, fb2 = params
    h = _pool(jnp.tanh(_conv(x, c1, cb1)))
    h = _pool(jnp.tanh(_conv(h, c2, cb2)))
    h = jnp.tanh(h.reshape(h.shape[0], -1) @ f1.T + fb1)
    return h @ f2.T + fb2


def _bn(x, gamma, beta, eps=2e-5):
    """BatchNorm in training mode over (N, H, W) of NCHW (running statistics are not timed)."""
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    var = x.var(axis=(0, 2, 3), keepdims=True)
    x = (x - mean) * jax.lax.rsqrt(var + eps)
    if gamma is not None:
        x = x * gamma[None, :, None, None]
    return x + beta[None, :, None, None]


def _conv_same(x, w, stride=1):
    pad = w.shape[-1] // 2
    return jax.lax.conv_general_dilated(x, w, (stride, stride), [(pad, pad), (pad, pad)],
                                        dimension_numbers=('NCHW', 'OIHW', 'NCHW'))


def _resnet20_shapes(classes=10):
    """The parameter shapes of mxtorch.models.resnet's CIFAR ResNet-20 (v2, pre-activation,
    a projection shortcut in the first unit of each stage)."""
    shapes = [(3,), (16, 3, 3, 3)]                      # bn_data beta, conv0
    cin = 16
    for cout in (16, 32, 64):
        for i in range(3):
            shapes += [(cin,), (cin,), (cout, cin, 3, 3), (cout,), (cout,), (cout, cout, 3, 3)]
            if i == 0:
                shapes.append((cout, cin, 1, 1))
            cin = cout
    return shapes + [(64,), (64,), (classes, 64), (classes,)]


def resnet20(params, x):
    params = list(params)
    take = lambda: params.pop(0)                    # noqa: E731 (parameters in order)
    x = _conv_same(_bn(x, None, take()), take())       # the data BatchNorm: fix_gamma
    for stage, cout in enumerate((16, 32, 64)):
        for i in range(3):
            stride = 2 if stage > 0 and i == 0 else 1
            g1, b1, c1, g2, b2, c2 = [take() for _ in range(6)]
            act1 = jax.nn.relu(_bn(x, g1, b1))
            out = _conv_same(jax.nn.relu(_bn(_conv_same(act1, c1, stride), g2, b2)), c2)
            x = out + (_conv_same(act1, take(), stride) if i == 0 else x)
    g, b, w, bias = [take() for _ in range(4)]
    x = jax.nn.relu(_bn(x, g, b)).mean(axis=(2, 3))
    return x @ w.T + bias


LSTM = dict(vocab=1000, embed=64, hidden=128, layers=2)


def _lstm_shapes():
    shapes, cin, h = [(LSTM['vocab'], LSTM['embed'])], LSTM['embed'], LSTM['hidden']
    for _ in range(LSTM['layers']):
        shapes += [(4 * h, cin), (4 * h, h), (4 * h,)]
        cin = h
    return shapes + [(LSTM['vocab'], h), (LSTM['vocab'],)]


def lstm_lm(params, tokens):
    """tokens (batch, length) -> logits (batch * length, vocab); time-major recurrence."""
    embed, rest = params[0], params[1:]
    x = embed[tokens.T]                                  # (length, batch, embed)
    batch, hidden = tokens.shape[0], LSTM['hidden']
    for layer in range(LSTM['layers']):
        wx, wh, b = rest[3 * layer: 3 * layer + 3]
        xs = x @ wx.T + b

        def cell(carry, xw):
            h, c = carry
            gates = xw + h @ wh.T
            i, f, g, o = jnp.split(gates, 4, axis=-1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), h
        zeros = jnp.zeros((batch, hidden), x.dtype)
        _, x = jax.lax.scan(cell, (zeros, zeros), xs)
    w, b = rest[-2:]
    return x.transpose(1, 0, 2).reshape(-1, hidden) @ w.T + b


MODELS = {'mlp': (mlp, [(128, 784), (128,), (64, 128), (64,), (10, 64), (10,)], (784,)),
          'lenet': (lenet, [(20, 1, 5, 5), (20,), (50, 20, 5, 5), (50,), (500, 800), (500,),
                            (10, 500), (10,)], (1, 28, 28)),
          'resnet20': (resnet20, _resnet20_shapes(), (3, 32, 32))}


def _sgd_step(loss):
    @jax.jit
    def step(params, moms, *data):
        grads = jax.grad(loss)(params, *data)
        moms = [0.9 * m - 0.01 * g for m, g in zip(moms, grads)]
        return [p + m for p, m in zip(params, moms)], moms
    return step


def _lstm_setup(request):
    """Steps over the bucket lengths in turn (one call runs one step of each)."""
    params = _init(_lstm_shapes())
    moms = [jnp.zeros_like(p) for p in params]
    rng = np.random.RandomState(0)
    batch = request['batch']
    batches = [(jnp.asarray(rng.randint(1, LSTM['vocab'], (batch, n))),
                jnp.asarray(rng.randint(1, LSTM['vocab'], (batch, n))))
               for n in request['lengths']]

    def loss(params, tokens, labels):
        logp = jax.nn.log_softmax(lstm_lm(params, tokens))
        return -jnp.sum(jnp.take_along_axis(logp, labels.reshape(-1, 1), axis=1)) / batch
    step = _sgd_step(loss)
    state = {'params': params, 'moms': moms}

    def run():
        for tokens, labels in batches:
            state['params'], state['moms'] = step(state['params'], state['moms'], tokens,
                                                  labels)
        jax.block_until_ready(state['params'])
    run()                                       # compile each length
    return run


def setup(request):
    if request['model'] == 'lstm_lm':
        return _lstm_setup(request)
    net, shapes, sample = MODELS[request['model']]
    batch = request['batch']
    params = _init(shapes)
    moms = [jnp.zeros_like(p) for p in params]
    rng = np.random.RandomState(1)
    x = jnp.asarray(rng.rand(batch, *sample).astype(np.float32))
    y = jnp.asarray(rng.randint(0, 10, batch))

    def loss(params):
        logits = net(params, x)
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))
    step = _sgd_step(loss)

    state = {'params': params, 'moms': moms}

    def run():
        state['params'], state['moms'] = step(state['params'], state['moms'])
        jax.block_until_ready(state['params'])
    run()                                       # compile
    return run


if __name__ == '__main__':
    serve(setup)

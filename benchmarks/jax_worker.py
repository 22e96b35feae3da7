"""Runs in an environment with JAX (benchmarks only): the MLP and LeNet training steps of
bench_compile.py written in JAX, the whole step (forward, gradient, SGD with momentum) under one
jax.jit, timed on request so the benchmark can interleave JAX with the others in one run.

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


MODELS = {'mlp': (mlp, [(128, 784), (128,), (64, 128), (64,), (10, 64), (10,)], (784,)),
          'lenet': (lenet, [(20, 1, 5, 5), (20,), (50, 20, 5, 5), (50,), (500, 800), (500,),
                            (10, 500), (10,)], (1, 28, 28))}


def setup(request):
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

    @jax.jit
    def step(params, moms):
        grads = jax.grad(loss)(params)
        moms = [0.9 * m - 0.01 * g for m, g in zip(moms, grads)]
        return [p + m for p, m in zip(params, moms)], moms

    state = {'params': params, 'moms': moms}

    def run():
        state['params'], state['moms'] = step(state['params'], state['moms'])
        jax.block_until_ready(state['params'])
    run()                                       # compile
    return run


if __name__ == '__main__':
    serve(setup)

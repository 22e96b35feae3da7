"""A bound graph's traced training call (joint.py) replayed as CUDA graphs.

On a GPU a small model's training step is bound by kernel launches: the forward and backward
graphs of a Joint are a few dozen kernels each, and the GPU waits for the host to issue them.
A static graph's call can be captured once per executor (so per bucket of a BucketingModule,
each bucket binding its own) and replayed with one launch:

    forward:  the executor's argument and auxiliary tensors -> heads, statistics, saved values
    backward: the saved values and the head gradients -> the arguments' gradients

Replays read and write the same memory every time (static tensors): inputs are the executor's
own tensors (copied into the captured ones only where the executor's tensor was replaced since),
head gradients are copied into static buffers, and the results (heads, statistics, gradients)
live in the graphs' memory until the next replay, so callers copy them out (`borrowed`) rather
than keep them. The optimizer update stays outside (a few multi-tensor kernels per step).

Capture needs: a CUDA device, a Joint whose graphs mutate nothing (joint.py refuses those) and
no host synchronisation inside (an operator that reads a value on the host fails the capture).
Anything that fails leaves the executor on the uncaptured Joint, said once at debug level.
MXTORCH_CUDA_GRAPHS=0 turns capture off.
"""
import logging
import os

import torch

from .random import _generator_state, _set_generator_state

_LOG = logging.getLogger(__name__)
WARMUP = 3              # uncaptured calls on a side stream before capture (library handles, ...)


def enabled(device):
    """Whether training calls on torch `device` are captured."""
    return device.type == 'cuda' and \
        os.environ.get('MXTORCH_CUDA_GRAPHS', '1').strip().lower() not in ('0', 'off', 'false')


class CudaGraph:
    """torch.cuda.CUDAGraph behind the two calls Captured makes: `capture(fn)` records fn's
    kernels (and returns what fn returned, tensors in the graph's memory), `replay()` runs
    them again on the same memory."""

    def __init__(self, pool=None):
        self._graph = torch.cuda.CUDAGraph()
        self.pool = pool

    def capture(self, fn):
        with torch.cuda.graph(self._graph, pool=self.pool):
            out = fn()
        self.pool = self._graph.pool()
        return out

    def replay(self):
        self._graph.replay()


class Captured:
    """A Joint's forward and backward as two captured graphs over static tensors, called like
    the Joint (forward(inputs) -> heads, statistics, saved; backward(saved, tangents) ->
    gradients); what they return is overwritten by the next replay (`borrowed`)."""
    borrowed = True

    def __init__(self, joint, inputs, tangents, graph=None):
        graph = graph or CudaGraph
        self.joint = joint
        self.tangent_specs = joint.tangent_specs
        self.tangent_heads = joint.tangent_heads
        self.grad_mask = joint.grad_mask
        self.code = joint.code
        self._inputs = list(inputs)
        self._tangents = [torch.zeros(t.shape, dtype=dtype, device=device)
                          for t, (dtype, device) in zip(tangents, joint.tangent_specs)]
        for static, given in zip(self._tangents, tangents):
            static.copy_(given)
        with torch.no_grad():
            self._warm_up()
            self._fw = graph()
            self._heads, self._stats, self._saved = self._fw.capture(
                lambda: joint.forward(self._inputs))
            self._bw = graph(self._fw.pool)
            self._grads = self._bw.capture(
                lambda: joint.backward(self._saved, self._tangents))

    def _warm_up(self):
        joint = self.joint
        if not self._inputs[0].is_cuda:
            return
        stream = torch.cuda.Stream(self._inputs[0].device)
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(WARMUP):
                _, _, saved = joint.forward(self._inputs)
                joint.backward(saved, self._tangents)
        torch.cuda.current_stream().wait_stream(stream)

    def forward(self, inputs):
        with torch.no_grad():
            for static, given in zip(self._inputs, inputs):
                if given is not static:
                    static.copy_(given)     # (the executor's tensor was replaced since capture)
        self._fw.replay()
        return self._heads, self._stats, self._saved

    def backward(self, saved, tangents):
        with torch.no_grad():
            for static, given in zip(self._tangents, tangents):
                static.copy_(given)
        self._bw.replay()
        return self._grads


def capture(joint, inputs, tangents, graph=None):
    """A Captured of `joint` on the executor's `inputs` (head gradients like `tangents`, one
    per joint.tangent_heads), or None where capture fails (said once, at debug level)."""
    device = inputs[0].device          # (capture and warm-up draw from its generator)
    state = _generator_state(device)
    try:
        return Captured(joint, inputs, tangents, graph)
    except Exception as err:      # an operator that syncs with the host, memory, a driver
        _LOG.debug('mxtorch: training call not captured as a CUDA graph (%s: %s)',
                   type(err).__name__, err)
        return None
    finally:
        _set_generator_state(device, state)

"""Compiling a bound plan's generated function with torch.compile (inductor).

A bound graph is static: its shapes, dtypes and operators are fixed at bind, so its generated
function (plan.py) can be compiled once: the forward and, for training, its backward (which
AOTAutograd compiles with it). The compile runs on copies of the inputs of the call that starts
it, forward and backward, so a failure is caught there and the plan stays uncompiled (saying so
once in the log). Compiled code is cached on disk (inductor's FX graph and autograd caches, under
$MXTORCH_CACHE_DIR or ~/.cache/mxtorch/inductor): a second run with the same graph and shapes
pays a few seconds of tracing instead of a full compile. Operators whose `traceable` trait is
False (custom Python operators, control flow) run as they are between compiled regions.

MXTORCH_COMPILE, read when a graph is bound, selects when (CPU plans; GPU plans stay uncompiled
for now):
    0 / off (default)  never
    1 / on             at the first call of each bound function, before it runs
    background         after AUTO_AFTER calls, in a background thread, while the plan keeps
                       running uncompiled; it switches when ready (fastest start, but the step
                       at which the numbers start to come from compiled code depends on timing)
Once compiled, the compiled and the uncompiled function (for inference, the fused plan of
fusion.py: folded BatchNorm, oneDNN convolutions) are timed on the copies (forward and backward,
median of a few calls) and the compiled code is used only if it is at least 5% faster:
inductor speeds up graphs with element-wise work between their convolutions (LeNet 2x) but can
slow down GEMM-bound ones (an MLP 1.1-1.3x); see benchmarks/RESULTS.md. Compiled numbers are
within float rounding of the uncompiled plan's (inductor fuses element-wise work and may reorder
it). Once that choice is made, a training plan's traced call (joint.py: forward and backward
graphs without autograd's bookkeeping) is timed against what it runs, compiled or not, and
replaces it where faster, as it replaces an uncompiled plan.
"""
import atexit
import logging
import os
import threading
import time
import types
import warnings

import torch

AUTO_AFTER = 50
KEEP_BELOW = 0.95        # the compiled code is used only when at least this much faster
_LOG = logging.getLogger(__name__)
_THREADS = []           # compiles under way (joined at exit: a compile is not interruptible)
_WARNED = set()


def mode():
    """None (no compiling), 'now' or 'background', from MXTORCH_COMPILE."""
    value = os.environ.get('MXTORCH_COMPILE', '0').strip().lower()
    if value in ('1', 'on', 'true', 'yes'):
        return 'now'
    if value == 'background':
        return 'background'
    return None


def _cache_dir():
    default = os.path.join(os.path.expanduser('~'), '.cache', 'mxtorch', 'inductor')
    return os.environ.get('MXTORCH_CACHE_DIR', default)


class Compiled:
    """A plan function that replaces itself by its compiled form once that is ready.

    Called as the function is. The compiled code is used only in the grad mode it was compiled
    for (a bound executor calls each of its functions in one mode). MXTORCH_COMPILE is read when
    the object is made (at bind), so an uncompiled call costs one attribute test."""

    def __init__(self, fn, device, name, baseline=None):
        self.fn = fn
        # what runs until the compiled code is ready, and what it must beat: `fn` itself, or
        # another function of the same inputs and results (the fused inference plan, whose
        # steps keep state between calls and so are not traced)
        self.baseline = baseline or fn
        self._baseline_time = None
        self.name = name
        self.calls = 0
        self.state = 'eager'        # 'eager' -> 'compiling' -> 'ready' | 'slower' | 'failed'
        self._compiled = None
        self._grad_mode = None
        # when to compile; GPUs: not yet (CUDA graph capture is next)
        self._when = mode() if device.type == 'cpu' else None

    @property
    def active(self):
        """Whether this function will be compiled (MXTORCH_COMPILE set, a CPU plan)."""
        return self._when is not None

    @property
    def settled(self):
        """Whether what this function runs is final: not to be compiled, or compiled (and
        kept, or found slower) or failed. The executor's traced call is timed against it
        only then."""
        return self._when is None or self.state in ('ready', 'slower', 'failed')

    def __call__(self, *inputs):
        if self.state == 'ready' and torch.is_grad_enabled() == self._grad_mode:
            return self._compiled(*inputs)
        if self.state == 'eager' and self._when is not None:
            if self._when == 'now':
                self._compile(_examples(inputs), torch.is_grad_enabled())
                return self(*inputs)
            self.calls += 1                      # 'background'
            if self.calls >= AUTO_AFTER:
                self._start(inputs)
        return self.baseline(*inputs)

    def _start(self, inputs):
        self.state = 'compiling'
        examples, grad_mode = _examples(inputs), torch.is_grad_enabled()
        if self.baseline is not self.fn:   # timed here: the thread must not call it meanwhile
            self._baseline_time = _timed(self.baseline, examples, grad_mode)
        thread = threading.Thread(target=self._compile, args=(examples, grad_mode),
                                  name='mxtorch-compile-%s' % self.name, daemon=True)
        _THREADS.append(thread)
        thread.start()

    def _compile(self, examples, grad_mode):
        try:
            os.environ.setdefault('TORCHINDUCTOR_CACHE_DIR', _cache_dir())
            # the plan's shape helpers are lru_cache'd pure functions: tracing through is right
            warnings.filterwarnings('ignore', message='Dynamo detected a call to a '
                                    '`functools.lru_cache`-wrapped function')
            compiled = torch.compile(_own_code(self.fn), dynamic=False)
            _step(compiled, examples, grad_mode)     # compiles forward and backward
            eager = self._baseline_time or _timed(self.baseline, examples, grad_mode)
            fast = _timed(compiled, examples, grad_mode)
            if fast < eager * KEEP_BELOW:
                self._compiled, self._grad_mode = compiled, grad_mode
                self.state = 'ready'
            else:                   # GEMM-bound graphs can come out slower: keep the plan
                self.state = 'slower'
            _LOG.info('mxtorch: compiled %s graph: %.3g ms a call, uncompiled %.3g ms: %s',
                      self.name, fast * 1e3, eager * 1e3,
                      'using the compiled code' if self.state == 'ready' else 'kept uncompiled')
        except Exception as err:              # any failure: stay uncompiled, say so once
            self.state = 'failed'
            key = type(err).__name__
            if key not in _WARNED:
                _WARNED.add(key)
                _LOG.warning('mxtorch: torch.compile of a bound graph failed (%s: %s); it runs '
                             'uncompiled (set MXTORCH_COMPILE=0 to skip compiling)',
                             key, str(err).splitlines()[0] if str(err) else '')
        finally:
            thread = threading.current_thread()
            if thread in _THREADS:
                _THREADS.remove(thread)


def _own_code(fn):
    """`fn` with a code object of its own. Graphs of one structure share their generated code
    object (plan.py), each in its own namespace; dynamo keeps its compiled code per code object
    and runs it in the namespace of the function it first compiled, so each compiled function
    needs its own."""
    if not isinstance(fn, types.FunctionType):
        return fn
    return types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__,
                              fn.__defaults__, fn.__closure__)


def _step(fn, examples, grad_mode):
    """One call as the executor makes it: forward, and backward from every differentiable
    output when gradients are recorded."""
    with torch.set_grad_enabled(grad_mode):
        result = fn(*examples)
        if grad_mode:
            outs = [t for t in _tensors(result) if t.requires_grad]
            if outs:
                torch.autograd.backward(outs, [torch.ones_like(t) for t in outs])
    for x in examples:
        if isinstance(x, torch.Tensor):
            x.grad = None


def _timed(fn, examples, grad_mode, budget=0.3):
    """Median seconds of `_step` (after one warm-up call), over as many calls as fit
    `budget` seconds, at least one and at most five."""
    start = time.perf_counter()
    _step(fn, examples, grad_mode)
    once = time.perf_counter() - start
    samples = []
    for _ in range(max(1, min(5, int(budget / max(once, 1e-6))))):
        start = time.perf_counter()
        _step(fn, examples, grad_mode)
        samples.append(time.perf_counter() - start)
    return sorted(samples)[len(samples) // 2]


def _examples(inputs):
    """Copies of a call's inputs to compile on (a compile's own run changes nothing real)."""
    return [x.detach().clone().requires_grad_(x.requires_grad)
            if isinstance(x, torch.Tensor) else x for x in inputs]


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _tensors(item)


def wait():
    """Block until the compiles under way have finished (or failed)."""
    for thread in list(_THREADS):
        thread.join()


@atexit.register
def _join_at_exit():
    if _THREADS:
        _LOG.info('mxtorch: waiting for %d background compile(s) to finish', len(_THREADS))
        wait()

"""The update half of a training step, planned once.

`Module.update` without a kvstore between devices (and `gluon.Trainer`'s update on each device)
hands every parameter's gradient to the Updater, which looks up each state, groups the weights by
dtype and device, checks storage types and calls the optimizer per group, every batch. The
parameters, their optimizer indices and states do not change between batches, so an UpdatePlan
resolves all that once (after the first update, which creates the states) and each later update
is one call of the optimizer's rule (optimizer_rules.py) per device on the tensors behind the
arrays: the same numbers, the same counts, learning-rate schedule and multipliers, without the
regrouping.

A plan is only made where it computes exactly what the Updater would: an optimizer with a
built-in rule (`Optimizer._has_rule`), dense float gradients, no float16 master weights. It
notices when it no longer holds (states loaded or replaced, the optimizer swapped, the executors
rebound, other parameters updated) and the caller makes a new one or takes the Updater's path.
"""
from .optimizer.optimizer import _map_state, _tensor_of


class UpdatePlan:
    """Per device: (device id, optimizer indices, weight arrays, gradient arrays, states).
    `planned` is False for parameters the Updater's path must update (the plan then only
    remembers that, until the parameters or states change)."""

    def __init__(self, updater, key, devices):
        self._updater = updater
        self._optimizer = updater.optimizer
        self._states = updater.states
        self._key = key
        self._devices = devices
        self.planned = devices is not None

    @classmethod
    def make(cls, updater, param_arrays, grad_arrays, indices, num_device, key):
        """The plan for these parameters (param_arrays[i][k]: parameter i on device k, optimizer
        index indices[i] * num_device + k); None while some state is still to be created (or
        moved to its device) by the Updater. `key` identifies the arrays (see `holds`)."""
        opt = updater.optimizer
        per_device = [(None, [], [], [], []) for _ in range(num_device)]
        for index, weights, grads in zip(indices, param_arrays, grad_arrays):
            if grads[0] is None:
                continue
            for k, (w, g) in enumerate(zip(weights, grads)):
                idx = index * num_device + k
                if idx not in updater.states or not updater.states_synced.get(idx, False):
                    return None
                if (not opt._has_rule() or w.stype != 'default' or g.stype != 'default'
                        or not w._tensor.dtype.is_floating_point or opt._uses_master(w)
                        or w._tensor.dtype != g._tensor.dtype):
                    return cls(updater, key, None)
                device_id, idxs, ws, gs, states = per_device[k]
                if device_id is None:
                    per_device[k] = (w.context.device_id, idxs, ws, gs, states)
                idxs.append(idx)
                ws.append(w)
                gs.append(g)
                states.append(updater.states[idx])
        return cls(updater, key, [d for d in per_device if d[1]])

    def holds(self, updater, key):
        """Whether the plan was made for this updater, optimizer, states and `key` (the caller's
        identity of its arrays: equal keys, same arrays; the plan keeps the arrays alive, so ids
        in a key stay unique)."""
        return (updater is self._updater and updater.optimizer is self._optimizer
                and updater.states is self._states and key == self._key)

    def __call__(self):
        opt = self._optimizer
        for device_id, indices, weights, grads, states in self._devices:
            opt._set_current_context(device_id)
            opt._rule_call(indices, [w._tensor for w in weights], [g._tensor for g in grads],
                           [_map_state(_tensor_of, s) for s in states])

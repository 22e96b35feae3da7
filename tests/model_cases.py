"""What tests/test_models.py and tests/fixtures/gen_models.py share (NumPy only, no MXNet or
mxtorch): the networks compared with MXNet, the deterministic parameters, the graph
fingerprint and the gradient summaries."""
import hashlib
import json

import numpy as np

BATCH = 2
CLASSES = 10
PROBES = 6

# case id -> (network name for mxtorch.models.get_model, its arguments, image size). Images are
# about as small as each network allows, but Inception-v3 and -v4 get 107x107 rather than 75x75:
# with one position per image in the last blocks, even their float64 results are too badly
# conditioned (see train_dtype).
CASES = {
    'alexnet': ('alexnet', {}, 67),
    **{'vgg%d%s' % (n, '-bn' if bn else ''): ('vgg', {'num_layers': n, 'batch_norm': bn}, 32)
       for n in (11, 13, 16, 19) for bn in (False, True)},
    'googlenet': ('googlenet', {}, 64),
    'inception-bn': ('inception-bn', {'image_shape': '3,40,40'}, 40),
    'inception-bn-28-small': ('inception-bn', {'image_shape': '3,28,28'}, 28),
    'inception-v3': ('inception-v3', {}, 107),
    'inception-v4': ('inception-v4', {}, 107),
    **{'resnet%s-%d' % (v, n): ('resnet' + v, {'num_layers': n, 'image_shape': '3,36,36'}, 36)
       for v in ('', '-v1') for n in (18, 34, 50, 101, 152)},
    'resnet-20-cifar': ('resnet', {'num_layers': 20, 'image_shape': '3,32,32'}, 32),
    'resnet-v1-20-cifar': ('resnet-v1', {'num_layers': 20, 'image_shape': '3,32,32'}, 32),
    'resnet-164-cifar': ('resnet', {'num_layers': 164, 'image_shape': '3,8,8'}, 8),
    'resnext-50': ('resnext', {'num_layers': 50, 'image_shape': '3,36,36'}, 36),
    'resnext-20-cifar': ('resnext', {'num_layers': 20, 'image_shape': '3,32,32'}, 32),
    'mobilenet': ('mobilenet', {}, 32),
    'mobilenet-0.25': ('mobilenet', {'alpha': 0.25}, 32),
    'mobilenetv2': ('mobilenetv2', {}, 32),
    'mobilenetv2-1.4': ('mobilenetv2', {'multiplier': 1.4}, 32),
}

# full-size inference check: ResNet-50 (v2) on one 224x224 image
FULL_RESNET50 = ('resnet', {'num_layers': 50, 'image_shape': '3,224,224'}, (1, 3, 224, 224))


def data_shape(case):
    return (BATCH, 3, CASES[case][2], CASES[case][2])


def seed_of(case):
    return int(hashlib.sha256(case.encode()).hexdigest()[:7], 16)


def graph_fingerprint(symbol_json):
    """sha256 of the nodes and heads of a symbol JSON, independent of its formatting."""
    graph = json.loads(symbol_json)
    canonical = json.dumps([graph['nodes'], graph['heads']], sort_keys=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def train_dtype(symbol_json):
    """The dtype of the training-mode comparison: float64 for networks with BatchNorm.

    Networks with random weights and batch statistics are badly conditioned (the gradients of
    batch-normalised networks explode with depth at initialisation): MXNet's own float32 and
    float64 results differ by up to 0.4% in the logits of the deepest networks here, and by
    more than 1e-4 in gradients even for ResNet-18, above all in gradients that vanish in
    theory (a bias followed by BatchNorm) or are sums with heavy cancellation (the first
    BatchNorm's beta). In float64 the two libraries agree to 1e-6 or better. The networks
    without BatchNorm are well conditioned and compare in float32 (MXNet's LRN, in AlexNet, has
    no float64 kernel anyway)."""
    has_batch_norm = any(node['op'] == 'BatchNorm' for node in json.loads(symbol_json)['nodes'])
    return 'float64' if has_batch_norm else 'float32'


def without_dropout(symbol_json):
    """The same graph with Dropout's p set to 0, so training-mode passes are deterministic."""
    graph = json.loads(symbol_json)
    for node in graph['nodes']:
        if node['op'] == 'Dropout':
            node['attrs']['p'] = '0'
    return json.dumps(graph)


def uniform(rng, shape):
    """float32 values in [-1, 1) on a 2**-15 grid (cheap to draw, the same in every NumPy)."""
    draws = rng.randint(-2 ** 15, 2 ** 15, size=shape, dtype=np.int16).astype(np.float32)
    return draws * np.float32(2 ** -15)


def fill(shapes, seed):
    """name -> float32 array for every input, parameter and auxiliary state in `shapes`, drawn
    in sorted-name order from RandomState(seed): weights with variance 2/fan_in (He), biases,
    betas and moving means in [-0.1, 0.1), gammas and moving variances in [0.9, 1.1), anything
    else (the data) in [-1, 1)."""
    rng = np.random.RandomState(seed)
    arrays = {}
    for name in sorted(shapes):
        shape = tuple(shapes[name])
        values = uniform(rng, shape)
        if name.endswith('_weight'):
            values *= np.float32(np.sqrt(6.0 / np.prod(shape[1:])))
        elif name.endswith(('_bias', '_beta', '_moving_mean')):
            values *= np.float32(0.1)
        elif name.endswith(('_gamma', '_moving_var')):
            values = np.float32(1) + np.float32(0.1) * values
        arrays[name] = values
    return arrays


def head_gradient(shape, seed):
    return uniform(np.random.RandomState(seed + 1), shape)


def summarize(gradient):
    """(L2 norm, largest magnitude, PROBES values at evenly spaced flat positions)."""
    flat = np.asarray(gradient, dtype=np.float64).ravel()
    positions = np.linspace(0, flat.size - 1, PROBES).astype(np.int64)
    return np.linalg.norm(flat), np.abs(flat).max(), flat[positions]

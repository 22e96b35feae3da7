"""Issue 5 targets, in one interleaved run against PyTorch eager and the reference MXNet 1.9.1:

* ResNet-50 (v1) inference at batch 1 and 8, 224x224: at most 0.9x the faster of the two
  (mxtorch runs the bound, fused inference plan: BatchNorm folded into convolutions, in-place
  ReLU, channels-last convolutions, no autograd);
* a CIFAR ResNet-20 (v2) training step at batch 32: at most 1.05x the faster of the two.

MXNet runs from its own virtual environment (MXREF_PYTHON, default /tmp/mxref/bin/python, made
with `python3.11 -m venv /tmp/mxref && /tmp/mxref/bin/pip install numpy==1.23.5 mxnet==1.9.1`)
in a worker process (mxnet_worker.py) that times the same graphs on request; without it the
benchmark compares mxtorch with PyTorch only.
"""
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import mxtorch as mx
from mxtorch.models import resnet
from harness import interleaved, report
from workers import Worker, available

MXREF = os.environ.get('MXREF_PYTHON', '/tmp/mxref/bin/python')


# ---- the same networks in plain PyTorch ------------------------------------------------------
def conv_bn(cin, cout, kernel, stride=1):
    return nn.Sequential(nn.Conv2d(cin, cout, kernel, stride, kernel // 2, bias=False),
                         nn.BatchNorm2d(cout, eps=2e-5))


class Bottleneck(nn.Module):
    """ResNet v1 bottleneck as mxtorch.models.resnet(version=1): stride on the first 1x1."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        inner = cout // 4
        self.body = nn.ModuleList([conv_bn(cin, inner, 1, stride), conv_bn(inner, inner, 3),
                                   conv_bn(inner, cout, 1)])
        self.shortcut = conv_bn(cin, cout, 1, stride) if (cin != cout or stride != 1) else None

    def forward(self, x):
        out = F.relu(self.body[0](x))
        out = F.relu(self.body[1](out))
        out = self.body[2](out)
        return F.relu(out + (x if self.shortcut is None else self.shortcut(x)))


class ResNet50(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.stem = conv_bn(3, 64, 7, 2)
        blocks, cin = [], 64
        for stage, (count, cout) in enumerate(zip((3, 4, 6, 3), (256, 512, 1024, 2048))):
            for i in range(count):
                blocks.append(Bottleneck(cin, cout, 2 if stage > 0 and i == 0 else 1))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(2048, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.stem(x)), 3, 2, 1)
        x = self.blocks(x)
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class PreActUnit(nn.Module):
    """ResNet v2 basic unit as mxtorch.models.resnet(version=2) for CIFAR: the first unit of
    every stage has a projection shortcut, as in MXNet's resnet."""

    def __init__(self, cin, cout, stride, project):
        super().__init__()
        self.bn1, self.bn2 = nn.BatchNorm2d(cin, eps=2e-5), nn.BatchNorm2d(cout, eps=2e-5)
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.shortcut = nn.Conv2d(cin, cout, 1, stride, bias=False) if project else None

    def forward(self, x):
        act1 = F.relu(self.bn1(x))
        out = self.conv2(F.relu(self.bn2(self.conv1(act1))))
        return out + (x if self.shortcut is None else self.shortcut(act1))


class ResNet20(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.bn_data = nn.BatchNorm2d(3, eps=2e-5)          # fix_gamma: gamma 1, beta learned
        self.bn_data.weight.requires_grad_(False)
        self.conv0 = nn.Conv2d(3, 16, 3, 1, 1, bias=False)
        units, cin = [], 16
        for stage, cout in enumerate((16, 32, 64)):
            for i in range(3):
                units.append(PreActUnit(cin, cout, 2 if stage > 0 and i == 0 else 1, i == 0))
                cin = cout
        self.units = nn.Sequential(*units)
        self.bn1 = nn.BatchNorm2d(64, eps=2e-5)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.units(self.conv0(self.bn_data(x)))
        return self.fc(F.adaptive_avg_pool2d(F.relu(self.bn1(x)), 1).flatten(1))


# ---- the reference MXNet in its own process (its OpenMP threads sleep as soon as a step ends:
# spinning threads would steal the cores from whichever candidate runs next) ----------------------
MXNET_ENV = {'MXNET_ENGINE_TYPE': 'NaiveEngine', 'OMP_WAIT_POLICY': 'PASSIVE', 'KMP_BLOCKTIME': '0'}


# ---- the measurements -------------------------------------------------------------------------
def inference(batch, worker):
    sym = resnet.get_symbol(1000, 50, '3,224,224', version=1)
    exe = sym.simple_bind(mx.cpu(), grad_req='null', data=(batch, 3, 224, 224))
    rng = np.random.RandomState(0)
    for name, arr in list(exe.arg_dict.items()) + list(exe.aux_dict.items()):
        arr[:] = rng.uniform(0.5, 1.5, arr.shape) if name.endswith('var') else \
            rng.normal(0, 0.05, arr.shape)
    candidates = {'mxtorch (bound, fused)': lambda: exe.forward(is_train=False)}
    model = ResNet50().eval()
    x = torch.randn(batch, 3, 224, 224)

    def torch_step():
        with torch.no_grad():
            return model(x)
    candidates['PyTorch eager'] = torch_step
    if worker is not None:
        candidates['MXNet 1.9.1'] = worker.step_fn(mode='infer', json=sym.tojson(),
                                                   data=[batch, 3, 224, 224])
    medians = interleaved(candidates, rounds=7, seconds=1.0 if batch == 1 else 2.0, warmup=2)
    return report('ResNet-50 v1 inference, batch %d, 224x224' % batch, medians,
                  _faster(medians), unit=1e3, unit_name='ms')


def training(worker):
    sym = resnet.get_symbol(10, 20, '3,32,32')
    mod = mx.mod.Module(sym)
    mod.bind([('data', (32, 3, 32, 32))], [('softmax_label', (32,))])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer_params={'learning_rate': 0.01, 'momentum': 0.9})
    rng = np.random.RandomState(0)
    batch = mx.io.DataBatch([mx.nd.array(rng.rand(32, 3, 32, 32))],
                            [mx.nd.array(rng.randint(0, 10, 32))])

    def mxtorch_step():
        mod.forward_backward(batch)
        mod.update()

    model = ResNet20().train()
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.01,
                          momentum=0.9)
    x = torch.from_numpy(batch.data[0].asnumpy())
    y = torch.from_numpy(batch.label[0].asnumpy()).long()

    def torch_step():
        loss = F.cross_entropy(model(x), y, reduction='sum') / 32
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    candidates = {'mxtorch Module': mxtorch_step, 'PyTorch eager': torch_step}
    if worker is not None:
        candidates['MXNet 1.9.1'] = worker.step_fn(mode='train', json=sym.tojson(),
                                                   data=[32, 3, 32, 32], label=[32])
    medians = interleaved(candidates, rounds=9, seconds=1.0)
    return report('CIFAR ResNet-20 (v2) training step, batch 32', medians, _faster(medians),
                  unit=1e3, unit_name='ms')


def _faster(medians):
    return min((name for name in medians if not name.startswith('mxtorch')), key=medians.get)


def main():
    worker = Worker(MXREF, 'mxnet_worker.py', MXNET_ENV) if available(MXREF, 'mxnet') else None
    try:
        return [inference(1, worker), inference(8, worker), training(worker)]
    finally:
        if worker is not None:
            worker.close()


if __name__ == '__main__':
    main()

"""Run every benchmark in this folder, one after the other (figures: RESULTS.md).

    python benchmarks/run_all.py [name ...]     e.g. python benchmarks/run_all.py executor module
"""
import importlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BENCHMARKS = ['executor', 'module', 'compile', 'bucketing', 'resnet', 'dist', 'gluon', 'sparse']


def _default():
    """Every benchmark; bench_gpu only where a GPU is (name it to dry-run it on the CPU)."""
    import torch
    return BENCHMARKS + (['gpu'] if torch.cuda.is_available() else [])


def main(names):
    sys.path.insert(0, HERE)
    for name in names or _default():
        print('\n==== bench_%s' % name, flush=True)
        module = importlib.import_module('bench_%s' % name)
        module.main()


if __name__ == '__main__':
    main(sys.argv[1:])

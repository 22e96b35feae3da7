"""Model definitions with MXNet's layer names (checkpoints trained in MXNet load by name)."""
from . import lenet, mlp

__all__ = ['lenet', 'mlp']

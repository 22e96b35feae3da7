"""mx.mod / mx.module: Module API."""
from .base_module import BaseModule
from .module import Module
from .executor_group import DataParallelExecutorGroup

__all__ = ['BaseModule', 'Module', 'DataParallelExecutorGroup']

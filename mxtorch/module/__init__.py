"""mx.mod / mx.module: Module API."""
from .base_module import BaseModule
from .module import Module
from .executor_group import DataParallelExecutorGroup
from .sequential_module import SequentialModule
from .python_module import PythonModule, PythonLossModule

__all__ = ['BaseModule', 'Module', 'DataParallelExecutorGroup', 'SequentialModule',
           'PythonModule', 'PythonLossModule']

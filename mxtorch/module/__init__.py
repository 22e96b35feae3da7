"""mx.mod / mx.module: Module API."""
from .base_module import BaseModule
from .module import Module
from .bucketing_module import BucketingModule
from .executor_group import DataParallelExecutorGroup
from .sequential_module import SequentialModule
from .python_module import PythonModule, PythonLossModule

__all__ = ['BaseModule', 'Module', 'BucketingModule', 'DataParallelExecutorGroup', 'SequentialModule',
           'PythonModule', 'PythonLossModule']

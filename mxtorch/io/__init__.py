"""mx.io: data descriptions, batches and data iterators."""
from . import io, utils
from .io import DataDesc, DataBatch, DataIter, ResizeIter, PrefetchingIter
from .ndarray_iter import NDArrayIter
from .native import MXDataIter
from .csv_iter import CSVIter
from .mnist_iter import MNISTIter
from .libsvm_iter import LibSVMIter
from .image_record_iter import (ImageRecordIter, ImageRecordIter_v1, ImageRecordUInt8Iter,
                                ImageRecordUInt8Iter_v1, ImageRecordInt8Iter)
from .image_det_record_iter import ImageDetRecordIter

__all__ = ['DataDesc', 'DataBatch', 'DataIter', 'ResizeIter', 'PrefetchingIter', 'NDArrayIter',
           'MXDataIter', 'CSVIter', 'MNISTIter', 'LibSVMIter', 'ImageRecordIter',
           'ImageRecordIter_v1', 'ImageRecordUInt8Iter', 'ImageRecordUInt8Iter_v1',
           'ImageRecordInt8Iter', 'ImageDetRecordIter']

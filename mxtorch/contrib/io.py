"""mx.contrib.io: a Gluon DataLoader seen as a DataIter, for Module.fit and other DataIter users."""
from .. import ndarray as nd
from ..io import DataDesc, DataIter

__all__ = ['DataLoaderIter']


class DataLoaderIter(DataIter):
    """Batches of a gluon DataLoader yielding (data, label) as DataBatches.

    The batch size and the shapes of `provide_data`/`provide_label` come from the loader's first
    batch; data and label are cast to `dtype`. A shorter last batch is padded up to the batch
    size (its `pad` says by how many rows)."""

    def __init__(self, loader, data_name='data', label_name='softmax_label', dtype='float32'):
        super().__init__()
        self._loader = loader
        first_data, first_label = next(iter(loader))
        self.batch_size = first_data.shape[0]
        self.dtype = dtype
        self.provide_data = [DataDesc(data_name, first_data.shape, dtype)]
        self.provide_label = [DataDesc(label_name, first_label.shape, dtype)]
        self._current_batch = None
        self.reset()

    def reset(self):
        self._iter = iter(self._loader)

    def iter_next(self):
        self._current_batch = next(self._iter, None)
        return self._current_batch is not None

    def _padded(self, array):
        array = array.astype(self.dtype)
        if not self.getpad():
            return [array]
        full = nd.empty((self.batch_size,) + tuple(array.shape[1:]), dtype=self.dtype)
        full[:array.shape[0]] = array
        return [full]

    def getdata(self):
        return self._padded(self._current_batch[0])

    def getlabel(self):
        return self._padded(self._current_batch[1])

    def getpad(self):
        return self.batch_size - self._current_batch[0].shape[0]

    def getindex(self):
        return None

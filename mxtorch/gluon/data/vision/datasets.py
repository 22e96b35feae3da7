"""gluon.data.vision datasets: MNIST, FashionMNIST, CIFAR10/100 (MXNet's files under `root`,
fetched when missing or when their SHA-1 differs), ImageRecordDataset, ImageFolderDataset."""
import gzip
import os
import struct
import tarfile
import warnings

import numpy as np

from .... import base, image, nd, recordio
from ...utils import _get_repo_file_url, check_sha1, download
from .. import dataset

__all__ = ['MNIST', 'FashionMNIST', 'CIFAR10', 'CIFAR100', 'ImageRecordDataset',
           'ImageFolderDataset']


def _default_root(name):
    return os.path.join(base.data_dir(), 'datasets', name)


class MNIST(dataset._DownloadedDataset):
    """MNIST digits: (28, 28, 1) uint8 images and int32 labels from the gzipped IDX files."""
    _files = {True: (('train-images-idx3-ubyte.gz', '6c95f4b05d2bf285e1bfb0e7960c31bd3b3f8a7d'),
                     ('train-labels-idx1-ubyte.gz', '2a80914081dc54586dbdf242f9805a6b8d2a15fc')),
              False: (('t10k-images-idx3-ubyte.gz', 'c3a25af1f52dad7f726cce8cacb138654b760d48'),
                      ('t10k-labels-idx1-ubyte.gz', '763e7fa3757d93b0cdec073cef058b2004252c17'))}
    _namespace = 'mnist'

    def __init__(self, root=_default_root('mnist'), train=True, transform=None):
        self._train = train
        (self._train_data, self._train_label), (self._test_data, self._test_label) = \
            self._files[True], self._files[False]
        super().__init__(root, transform)

    def _fetch(self, entry):
        name, sha1 = entry
        return download(_get_repo_file_url('gluon/dataset/' + self._namespace, name),
                        path=self._root, sha1_hash=sha1)

    def _get_data(self):
        data, label = (self._train_data, self._train_label) if self._train else \
            (self._test_data, self._test_label)
        data_file, label_file = self._fetch(data), self._fetch(label)
        with gzip.open(label_file, 'rb') as fin:
            struct.unpack('>II', fin.read(8))
            label = np.frombuffer(fin.read(), dtype=np.uint8).astype(np.int32)
        with gzip.open(data_file, 'rb') as fin:
            struct.unpack('>IIII', fin.read(16))
            data = np.frombuffer(fin.read(), dtype=np.uint8).reshape(len(label), 28, 28, 1)
        self._data = nd.array(data, dtype=data.dtype)
        self._label = label


class FashionMNIST(MNIST):
    """Fashion-MNIST, in MNIST's format."""
    _files = {True: (('train-images-idx3-ubyte.gz', '0cf37b0d40ed5169c6b3aba31069a9770ac9043d'),
                     ('train-labels-idx1-ubyte.gz', '236021d52f1e40852b06a4c3008d8de8aef1e40b')),
              False: (('t10k-images-idx3-ubyte.gz', '626ed6a7c06dd17c0eec72fa3be1740f146a2863'),
                      ('t10k-labels-idx1-ubyte.gz', '17f9ab60e7257a1620f4ad76bbbaf857c3920701'))}
    _namespace = 'fashion-mnist'

    def __init__(self, root=_default_root('fashion-mnist'), train=True, transform=None):
        super().__init__(root, train, transform)


class CIFAR10(dataset._DownloadedDataset):
    """CIFAR-10: (32, 32, 3) uint8 images and int32 labels from the binary batches."""
    _archive = ('cifar-10-binary.tar.gz', 'fab780a1e191a7eda0f345501ccd62d20f7ed891')
    _train_files = [('data_batch_1.bin', 'aadd24acce27caa71bf4b10992e9e7b2d74c2540'),
                    ('data_batch_2.bin', 'c0ba65cce70568cd57b4e03e9ac8d2a5367c1795'),
                    ('data_batch_3.bin', '1dd00a74ab1d17a6e7d73e185b69dbf31242f295'),
                    ('data_batch_4.bin', 'aab85764eb3584312d3c7f65fd2fd016e36a258e'),
                    ('data_batch_5.bin', '26e2849e66a845b7f1e4614ae70f4889ae604628')]
    _test_files = [('test_batch.bin', '67eb016db431130d61cd03c7ad570b013799c88c')]
    _namespace = 'cifar10'
    _label_bytes = 1

    def __init__(self, root=_default_root('cifar10'), train=True, transform=None):
        self._train = train
        self._archive_file = self._archive
        self._train_data, self._test_data = list(self._train_files), list(self._test_files)
        super().__init__(root, transform)

    def _label_column(self):
        return 0

    def _read_batch(self, filename):
        with open(filename, 'rb') as fin:
            raw = np.frombuffer(fin.read(), dtype=np.uint8)
        raw = raw.reshape(-1, 3072 + self._label_bytes)
        images = raw[:, self._label_bytes:].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        return images, raw[:, self._label_column()].astype(np.int32)

    def _get_data(self):
        files = [(os.path.join(self._root, name), sha1)
                 for name, sha1 in self._train_data + self._test_data]
        if any(not os.path.exists(path) or not check_sha1(path, sha1) for path, sha1 in files):
            archive = download(_get_repo_file_url('gluon/dataset/' + self._namespace,
                                                  self._archive_file[0]),
                               path=self._root, sha1_hash=self._archive_file[1])
            with tarfile.open(archive) as tar:
                tar.extractall(self._root)
        chosen = self._train_data if self._train else self._test_data
        data, label = zip(*(self._read_batch(os.path.join(self._root, name))
                            for name, _ in chosen))
        data = np.concatenate(data)
        self._data = nd.array(data, dtype=data.dtype)
        self._label = np.concatenate(label)


class CIFAR100(CIFAR10):
    """CIFAR-100: coarse labels, or the fine ones with fine_label=True."""
    _archive = ('cifar-100-binary.tar.gz', 'a0bb982c76b83111308126cc779a992fa506b90b')
    _train_files = [('train.bin', 'e207cd2e05b73b1393c74c7f5e7bea451d63e08e')]
    _test_files = [('test.bin', '8fb6623e830365ff53cf14adec797474f5478006')]
    _namespace = 'cifar100'
    _label_bytes = 2

    def __init__(self, root=_default_root('cifar100'), fine_label=False, train=True,
                 transform=None):
        self._fine_label = fine_label
        super().__init__(root, train, transform)

    def _label_column(self):
        return int(self._fine_label)


class ImageRecordDataset(dataset.RecordFileDataset):
    """(decoded image, label) pairs of an indexed RecordIO file of packed images."""

    def __init__(self, filename, flag=1, transform=None):
        super().__init__(filename)
        self._flag, self._transform = flag, transform

    def __getitem__(self, idx):
        header, img = recordio.unpack(super().__getitem__(idx))
        img = image.imdecode(img, self._flag)
        if self._transform is not None:
            return self._transform(img, header.label)
        return img, header.label


class ImageFolderDataset(dataset.Dataset):
    """Images in root/<class name>/*.jpg|jpeg|png; labels number the sorted class folders."""

    def __init__(self, root, flag=1, transform=None):
        self._root = os.path.expanduser(root)
        self._flag, self._transform = flag, transform
        self._exts = ['.jpg', '.jpeg', '.png']
        self._list_images(self._root)

    def _list_images(self, root):
        self.synsets, self.items = [], []
        for folder in sorted(os.listdir(root)):
            path = os.path.join(root, folder)
            if not os.path.isdir(path):
                warnings.warn('Ignoring %s, which is not a directory.' % path, stacklevel=3)
                continue
            label = len(self.synsets)
            self.synsets.append(folder)
            for name in sorted(os.listdir(path)):
                filename = os.path.join(path, name)
                ext = os.path.splitext(filename)[1]
                if ext.lower() not in self._exts:
                    warnings.warn('Ignoring %s of type %s. Only support %s'
                                  % (filename, ext, ', '.join(self._exts)))
                    continue
                self.items.append((filename, label))

    def __getitem__(self, idx):
        filename, label = self.items[idx]
        img = image.imread(filename, self._flag)
        if self._transform is not None:
            return self._transform(img, label)
        return img, label

    def __len__(self):
        return len(self.items)

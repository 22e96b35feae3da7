"""mx.image.detection: not built yet in mxtorch (ImageDetIter, CreateDetAugmenter and the
Det* augmenters of MXNet 1.9.1); importing mx.image works, these names are absent."""
__all__ = []

"""Spatial operators: Convolution, Deconvolution, Pooling, UpSampling, LRN, ROIPooling, Crop,
Pad, depth_to_space / space_to_depth."""

"""Normalisation layers beyond BatchNorm: LayerNorm, InstanceNorm, GroupNorm, L2Normalization."""

"""Gathering and scattering: pick, one_hot, take, batch_take, gather_nd, scatter_nd, ..."""

"""LeakyReLU and its variants (leaky, prelu, elu, selu, gelu, rrelu)."""

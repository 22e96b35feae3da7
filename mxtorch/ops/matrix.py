"""Layout and combination operators: transpose, expand_dims, Concat, SliceChannel, slice, tile,
repeat, stack, broadcast_*, where, dot, batch_dot, Sequence* ..."""

"""Device placement of a graph's nodes from their `ctx_group` attribute (MXNet's group2ctx).

As MXNet's PlaceDevice pass: a node whose `__ctx_group__` names a group runs on that group's
context; an operator without a group runs where its first placed input does; a node still
unplaced (a variable, say) goes where its first placed consumer runs; the rest use the
executor's context.
"""
from ..base import MXNetError


def place_nodes(order, ctx, group2ctx):
    """{id(node): Context} for every node of `order` (topological)."""
    device = {}
    group2ctx = group2ctx or {}
    for node in order:
        group = node.attrs.get('__ctx_group__')
        if group is not None and group2ctx:
            if group not in group2ctx:
                raise MXNetError('The device assignment not found for group %s' % group)
            device[id(node)] = group2ctx[group]
        elif node.op is not None:
            placed = [device[id(c)] for c, _ in node.inputs if id(c) in device]
            if placed:
                device[id(node)] = placed[0]
    for node in reversed(order):
        if id(node) in device:
            for child, _ in node.inputs:
                device.setdefault(id(child), device[id(node)])
    return {id(node): device.get(id(node), ctx) for node in order}

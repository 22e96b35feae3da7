"""Reductions and orderings: sum, mean, prod, max, min, norm, argmax, argmin, topk, sort, ..."""

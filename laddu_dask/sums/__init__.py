"""Exact summation: one representation of exact partial sums, its grouped form, and one
generic reduction.

Every sum over events in laddu-dask is the correctly rounded exact sum of its terms (what
:func:`math.fsum` returns), the same to the last bit however the terms are partitioned and
merged.  Terms are split into exact high and low parts and binned by key, sign and
exponent into exact float64 bin sums (:mod:`laddu_dask.sums.bins`); from there they become

* :class:`ExactPartials` (:mod:`laddu_dask.sums.exact`): one exact sum per quantity, a
  fixed-point Python integer, which merges exactly in any grouping and order and rounds
  once (:meth:`ExactPartials.to_floats`);
* :class:`GroupedPartials` (:mod:`laddu_dask.sums.grouped`): the exact sums of many
  quantities in many groups (a histogram's bins), kept as the bins' doubles by key, merged
  by re-binning and rounded once per group; :meth:`ExactPartials.from_groups` is its
  fixed-point form.

:func:`reduction` (:mod:`laddu_dask.sums.reduction`) is ``dask.array.reduction``'s
pattern: ``chunk`` maps a piece of the data to a partial, ``combine`` merges a list of
partials (``split_every`` at a time, in a tree) and ``aggregate`` makes the result;
eagerly on a list, or as the tasks of a Dask graph (:func:`combine_tree` merges partials
computed elsewhere).

Examples
--------
>>> import math
>>> terms = [1e16, 1.0, -1e16, 1e-3]
>>> exact_sum(terms) == math.fsum(terms)
True
>>> reduction([[1e16, 1.0], [-1e16], [1e-3]], ExactPartials.from_terms, ExactPartials.merge,
...           ExactPartials.to_floats, split_every=2).tolist() == [math.fsum(terms)]
True
>>> parts = [GroupedPartials.from_terms([0, 1], [t], (2, 1)) for t in ([1e16, 2.0], [-1e16, 1.0])]
>>> combine_tree(parts).to_floats().tolist()
[[0.0], [3.0]]
"""

from laddu_dask.sums.exact import (
    FIXED_SCALE_BITS,
    ExactPartials,
    exact_aggregate,
    exact_chunk,
    exact_sum,
    fsum_rows,
    work_bytes,
)
from laddu_dask.sums.grouped import GroupedPartials
from laddu_dask.sums.reduction import combine_tree, merge, reduction

__all__ = ["FIXED_SCALE_BITS", "ExactPartials", "GroupedPartials", "combine_tree", "exact_aggregate",
           "exact_chunk", "exact_sum", "fsum_rows", "merge", "reduction", "work_bytes"]

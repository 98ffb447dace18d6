"""Broadphase: which candidate shape pairs reach the narrowphase this step.

All three of RaiSim's broadphase types return a superset of the pairs whose world AABBs
overlap, so they give identical contacts (the narrowphase decides):

- None_: every candidate pair (brute force).
- Sap3Axis: sweep and prune. Shapes are sorted by their AABB's lower x bound; each shape is
  tested against the next `sap_window` shapes in that order (x overlap is then a range
  condition) on all three axes. If a shape's x interval reaches past its window, the step
  sets the contact overflow flag (raise `sap_window`). Half-spaces are not swept: their
  pairs are tested directly.
- MultiBoxPrune: a regular grid over [mbpWorldMin, mbpWorldMax] with cells of mbpCellSize
  (at most mbpMaxCellsPerAxis per axis); each AABB, grown by mbpPadding, covers a box of
  cells (clamped to the grid, so objects outside the bounds land in border cells); two shapes
  are candidates when their cell boxes intersect and their AABBs overlap.

Fixed-shape note: the per-pair tests cost O(pairs) vector work, which on these batched
workloads is cheap next to the narrowphase; what the broadphase buys is the narrowphase's
fixed pair capacity per type group (see detection.py).
"""

import jax.numpy as jnp

from raisim_jax.types import BroadphaseType


def aabb_overlap(min_a, max_a, min_b, max_b):
  """(...,) bool: the boxes [min_a, max_a] and [min_b, max_b] intersect (closed)."""
  return jnp.all((min_a <= max_b) & (min_b <= max_a), axis=-1)


def sweep_and_prune(aabb_min, aabb_max, sweepable, pair_lookup, num_pairs, window):
  """Sap3Axis over the sweepable shapes.

  Args:
    aabb_min, aabb_max: (ns, 3) world AABBs.
    sweepable: (ns,) bool, False for unbounded shapes (half-spaces) and shapes that collide
      with nothing.
    pair_lookup: (ns, ns) int32 pair index (-1: not a candidate pair).
    num_pairs: static total number of candidate pairs.
    window: static number of following shapes each shape is tested against.

  Returns:
    (hits (num_pairs,) bool over the pair list, overflow () bool).
  """
  ns = aabb_min.shape[0]
  sweep_key = jnp.where(jnp.asarray(sweepable), aabb_min[:, 0], jnp.inf)
  order = jnp.argsort(sweep_key)
  rank = jnp.arange(ns)[:, None] + jnp.arange(1, window + 1)[None, :]
  in_range = rank < ns
  first = order[:, None]
  second = order[jnp.clip(rank, 0, ns - 1)]
  hit = in_range & aabb_overlap(aabb_min[first], aabb_max[first],
                                aabb_min[second], aabb_max[second])
  hit &= jnp.isfinite(sweep_key[first]) & jnp.isfinite(sweep_key[second])
  pair = pair_lookup[first, second]
  hit &= pair >= 0
  hits = jnp.zeros((num_pairs + 1,), bool).at[jnp.where(hit, pair, num_pairs)].set(True)
  # Overflow: the shape right after the window still starts inside this shape's x interval.
  next_rank = jnp.arange(ns) + window + 1
  next_shape = order[jnp.clip(next_rank, 0, ns - 1)]
  reaches = (next_rank < ns) & (sweep_key[next_shape] <= aabb_max[order, 0])
  overflow = jnp.any(reaches & jnp.isfinite(sweep_key[order]))
  return hits[:num_pairs], overflow


def grid_cells(aabb_min, aabb_max, collision):
  """(ns, 3) lowest and highest MultiBoxPrune cell indices covered by each padded AABB."""
  cell = collision.mbp_cell_size
  extent = collision.mbp_world_max - collision.mbp_world_min
  cells_per_axis = jnp.clip(jnp.ceil(extent / cell), 1, collision.mbp_max_cells_per_axis)
  cell = extent / cells_per_axis
  top = cells_per_axis - 1

  def index(x):
    return jnp.clip(jnp.floor((x - collision.mbp_world_min) / cell), 0, top)

  return (index(aabb_min - collision.mbp_padding), index(aabb_max + collision.mbp_padding))


def pair_candidates(collision, aabb_min, aabb_max, shape_a, shape_b, sap_hits, unbounded):
  """(P,) bool: the broadphase verdict for the pairs (shape_a, shape_b) of one group.

  `sap_hits` is the Sap3Axis result over the whole pair list already gathered for these pairs
  (None for the other broadphase types, and for a sweep whose window reaches every shape,
  whose verdict is the AABB overlap itself); `unbounded` (static) marks a group with a
  half-space, whose pairs are tested directly."""
  overlap = aabb_overlap(aabb_min[shape_a], aabb_max[shape_a],
                         aabb_min[shape_b], aabb_max[shape_b])
  if collision.broadphase == BroadphaseType.None_:
    return jnp.ones(shape_a.shape, bool)
  if collision.broadphase == BroadphaseType.Sap3Axis:
    return overlap if unbounded or sap_hits is None else sap_hits
  lo, hi = grid_cells(aabb_min, aabb_max, collision)
  share_cells = jnp.all((lo[shape_a] <= hi[shape_b]) & (lo[shape_b] <= hi[shape_a]), axis=-1)
  return share_cells & overlap

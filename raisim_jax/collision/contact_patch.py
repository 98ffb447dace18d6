"""Up to four vertices that span a contact patch: what a convex mesh reports where one of its
faces (or many nearly coplanar vertices) touches another surface, in place of the four
deepest vertices, which on a flat foot are four arbitrary ones, possibly all on one side."""

import jax.numpy as jnp

from raisim_jax.math import reduce


def _take(score, depth, free):
  """(index, flag) of the free vertex of largest positive `score`, else of the deepest free
  vertex (flag: whether that vertex is free at all)."""
  best = reduce.argmax(jnp.where(free, score, -jnp.inf))
  deepest = reduce.argmax(jnp.where(free, depth, -jnp.inf))
  pick = jnp.where(free[best] & (score[best] > 0), best, deepest)
  return pick, free[pick]


def patch_corners(xy, depth, real, valid):
  """Indices (4,) and flags (4,) of up to four vertices within the margin that span their
  contact patch. The deepest real vertex comes first; then `a`, the valid vertex farthest
  from it, and `b`, the one farthest from `a` (a near-diameter of the patch, whether or not
  the deepest is inside it), then the vertex farthest from the line ab; where the deepest is
  itself `b`, the farthest vertices on both sides of that line. A pick that adds no extent
  is the deepest vertex not yet picked instead, so a pose with at most four vertices within
  the margin reports them all. xy (V, 2): positions in the plane."""
  n = depth.shape[0]
  first = reduce.argmax(jnp.where(real, depth, -jnp.inf))
  ids = jnp.arange(n)

  def distance2(i):
    offset = xy - xy[i]
    return jnp.sum(offset * offset, axis=-1)

  def side(i, j):   # twice the signed area of (i, j, vertex) for every vertex
    edge, offset = xy[j] - xy[i], xy - xy[i]
    return edge[0] * offset[:, 1] - edge[1] * offset[:, 0]

  free = valid & (ids != first)
  a, a_ok = _take(distance2(first), depth, free)
  free = free & (ids != a)
  far_from_a = distance2(a)
  b_is_first = reduce.argmax(jnp.where(valid, far_from_a, -jnp.inf)) == first
  # Branch 1, the deepest is an end of the near-diameter: both sides of the line (first, a).
  across = side(first, a)
  c1, c1_ok = _take(jnp.abs(across), depth, free)
  sign = jnp.where(across[c1] >= 0, 1.0, -1.0).astype(across.dtype)
  d1, d1_ok = _take(-sign * across, depth, free & (ids != c1))
  # Branch 2: b, the far end from a, then the farthest from the line (a, b).
  b2, b2_ok = _take(far_from_a, depth, free)
  c2, c2_ok = _take(jnp.abs(side(a, b2)), depth, free & (ids != b2))
  index = jnp.stack([first, a, jnp.where(b_is_first, c1, b2), jnp.where(b_is_first, d1, c2)])
  flags = jnp.stack([valid[first], a_ok, jnp.where(b_is_first, c1_ok, b2_ok),
                     jnp.where(b_is_first, d1_ok, c2_ok)])
  return index, flags

"""Host-side candidate pair table: every pair of collision shapes that could ever touch,
grouped by (type_a, type_b) so each group runs one vmapped narrowphase function.

Whether a candidate pair is tested in a step is decided in the step (broadphase, collision
group/mask, body types), so changing a filter, a material or a body type needs no recompile.
"""

import numpy as np

from raisim_jax.collision.shapes import ShapeType


def candidate_pairs(shape_body, shape_type, excluded_bodies=frozenset()):
  """All (a, b) shape pairs on different bodies, not both half-spaces, with type_a <= type_b.

  Args:
    shape_body: (ns,) collision-body index of each shape.
    shape_type: (ns,) ShapeType code of each shape.
    excluded_bodies: set of (body, body) pairs, smaller index first, that never collide.

  Returns:
    list of (shape_a, shape_b) in a deterministic order.
  """
  pairs = []
  n = len(shape_body)
  for i in range(n):
    for j in range(i + 1, n):
      if shape_body[i] == shape_body[j]:
        continue
      if (min(shape_body[i], shape_body[j]), max(shape_body[i], shape_body[j])) in excluded_bodies:
        continue
      if shape_type[i] == ShapeType.HALFSPACE and shape_type[j] == ShapeType.HALFSPACE:
        continue
      a, b = (i, j) if shape_type[i] <= shape_type[j] else (j, i)
      pairs.append((a, b))
  return pairs


def group_pairs(pairs, shape_type):
  """{(type_a, type_b): [(pair_index, shape_a, shape_b), ...]} in sorted type order."""
  groups = {}
  for index, (a, b) in enumerate(pairs):
    groups.setdefault((int(shape_type[a]), int(shape_type[b])), []).append((index, a, b))
  return dict(sorted(groups.items()))


def pair_lookup_table(pairs, num_shapes):
  """(ns, ns) int32 table of pair indices, symmetric, -1 where no candidate pair exists."""
  table = -np.ones((num_shapes, num_shapes), np.int32)
  for index, (a, b) in enumerate(pairs):
    table[a, b] = table[b, a] = index
  return table


def split_bits(value):
  """A 64-bit group/mask as (low, high) uint32 words (works without jax x64)."""
  value = int(value) & ((1 << 64) - 1)
  return np.array([value & 0xFFFFFFFF, value >> 32], np.uint32)

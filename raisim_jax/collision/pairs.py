"""Host-side candidate pair table: every pair of collision shapes that could ever touch,
grouped by (type_a, type_b) so each group runs one vmapped narrowphase function.

Whether a candidate pair is tested in a step is decided in the step (broadphase, collision
group/mask, body types), so changing a filter, a material or a body type needs no recompile.
"""

import numpy as np

from raisim_jax.collision.shapes import ShapeType


def candidate_pairs(shape_type, fixed_body=None, excluded_bodies=frozenset()):
  """All (a, b) shape pairs that are not both half-spaces, with type_a <= type_b. Whether
  a pair is enabled (different bodies, not excluded) is a leaf (`enabled_pairs`), so shapes
  may change bodies without changing this list; only pairs of shapes whose bodies can never
  change (`fixed_body[i]` >= 0: articulated links) are dropped here when the bodies are equal
  or excluded.

  Args:
    shape_type: (ns,) ShapeType code of each shape.
    fixed_body: optional (ns,) body index of shapes whose body is fixed, -1 elsewhere.
    excluded_bodies: set of (body, body) pairs, smaller index first, that never collide.

  Returns:
    list of (shape_a, shape_b) in a deterministic order.
  """
  pairs = []
  n = len(shape_type)
  fixed_body = [-1] * n if fixed_body is None else fixed_body
  for i in range(n):
    for j in range(i + 1, n):
      if fixed_body[i] >= 0 and fixed_body[j] >= 0 and (
          fixed_body[i] == fixed_body[j] or (min(fixed_body[i], fixed_body[j]),
                                             max(fixed_body[i], fixed_body[j])) in excluded_bodies):
        continue
      if shape_type[i] == ShapeType.HALFSPACE and shape_type[j] == ShapeType.HALFSPACE:
        continue
      a, b = (i, j) if shape_type[i] <= shape_type[j] else (j, i)
      pairs.append((a, b))
  return pairs


def enabled_pairs(pairs, shape_body, excluded_bodies=frozenset()):
  """(P,) bool: the pair's shapes are on different bodies and the body pair (smaller index
  first) is not in `excluded_bodies`."""
  enabled = np.ones(len(pairs), bool)
  for k, (a, b) in enumerate(pairs):
    body_a, body_b = int(shape_body[a]), int(shape_body[b])
    enabled[k] = body_a != body_b and (min(body_a, body_b), max(body_a, body_b)) not in \
        excluded_bodies
  return enabled


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

"""The one table of pair functions: for each (type_a, type_b), its function and its point count.

A pair family module declares each function with `register(type_a, type_b, points=K)`, which
records both in `PAIRS`; `collide` and `num_points` read nothing else. Keys are in ShapeType
code order (type_a <= type_b); `collide` serves the other order by swapping the arguments and
flipping the normals. Every pair function returns exactly `points` contact slots (the
narrowphase tests check it for every registered pair).
"""

import dataclasses
from typing import Callable

import jax
import jax.numpy as jnp

from raisim_jax.types import ContactPoints
from raisim_jax.collision.shapes import ShapeType


@dataclasses.dataclass(frozen=True)
class PairEntry:
  """A registered pair: `function(size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0)` returns
  `ContactPoints` with `points` (static) slots."""
  function: Callable
  points: int


#: (ShapeType a, ShapeType b), a <= b -> PairEntry. Filled by the family modules on import.
PAIRS: dict = {}


def register(type_a, type_b, points):
  """Decorator: declares `fn` as the narrowphase of (type_a, type_b) with `points` slots."""
  ta, tb = ShapeType(int(type_a)), ShapeType(int(type_b))
  if ta > tb:
    raise ValueError(f"register pairs in ShapeType order: got {ta.name}-{tb.name}")

  def decorate(fn):
    if (ta, tb) in PAIRS:
      raise ValueError(f"narrowphase for {ta.name}-{tb.name} registered twice")
    PAIRS[(ta, tb)] = PairEntry(fn, int(points))
    return fn
  return decorate


def _key(type_a, type_b):
  ta, tb = ShapeType(int(type_a)), ShapeType(int(type_b))
  if (ta, tb) in PAIRS:
    return (ta, tb), False
  if (tb, ta) in PAIRS:
    return (tb, ta), True
  raise ValueError(f"no narrowphase for {ta.name}-{tb.name}")


def num_points(type_a, type_b):
  """Static number K of contact slots `collide` returns for the pair (any order)."""
  return PAIRS[_key(type_a, type_b)[0]].points


def _resize(cp, k):
  n = cp.depth.shape[0]
  if n == k:
    return cp
  if n > k:  # keep the k deepest valid points
    _, idx = jax.lax.top_k(jnp.where(cp.valid, cp.depth, -jnp.inf), k)
    return jax.tree_util.tree_map(lambda x: x[idx], cp)
  pad = k - n
  return ContactPoints(
      jnp.concatenate([cp.position, jnp.zeros((pad, 3), cp.position.dtype)]),
      jnp.concatenate([cp.normal, jnp.broadcast_to(cp.normal[:1], (pad, 3))]),
      jnp.concatenate([cp.depth, jnp.zeros((pad,), cp.depth.dtype)]),
      jnp.concatenate([cp.valid, jnp.zeros((pad,), bool)]))


def collide(type_a, type_b, size_a, R_a, p_a, size_b, R_b, p_b, max_points=None, margin=0.0):
  """Contacts between shape A and shape B (types static ints, any order).

  Normals point to A. With `max_points`, the result has exactly that many slots (the deepest
  valid points kept, or invalid padding); otherwise `num_points(type_a, type_b)` slots.
  """
  key, swapped = _key(type_a, type_b)
  fn = PAIRS[key].function
  if swapped:
    cp = fn(size_b, R_b, p_b, size_a, R_a, p_a, margin).flip()
  else:
    cp = fn(size_a, R_a, p_a, size_b, R_b, p_b, margin)
  if max_points is not None:
    cp = _resize(cp, int(max_points))
  return cp

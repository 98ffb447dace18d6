"""Minkowski Portal Refinement (XenoCollide / libccd `ccdMPRPenetration`) with static iterations.

Works on any pair of convex shapes given by support maps. Fixed trip counts (`lax.fori_loop`)
with `done` flags instead of early exits, so it is jit/vmap/grad compatible.

Convention: D = A - B (Minkowski difference), support_D(d) = support_A(d) - support_B(-d).
The ray from an interior point v0 = c_A - c_B of D towards the origin crosses D's boundary at a
portal triangle; its outward normal n_D is the penetration direction. Moving A by -depth * n_D
separates the shapes, so the contact normal pointing to A is -n_D. The reported depth is the
distance from the origin to the converged portal plane, i.e. the penetration along that normal
(exact where the deepest point lies along the centre line; an upper bound of the minimum
translational distance otherwise).
"""

import jax
import jax.numpy as jnp

from raisim_jax.math import safe

PORTAL_ITERATIONS = 16
REFINE_ITERATIONS = 32


def _cross(a, b):
  return jnp.cross(a, b)


def mpr(support_a, support_b, center_a, center_b, tolerance=1e-6,
        portal_iterations=PORTAL_ITERATIONS, refine_iterations=REFINE_ITERATIONS):
  """Penetration of two convex shapes by MPR.

  support_a/support_b: world direction (3,) -> world support point (3,).
  Returns (hit, normal (towards A), depth, point_a, point_b): point_a on A's surface, point_b
  on B's surface (barycentric on the portal), depth >= 0 where hit.
  """
  dtype = center_a.dtype

  def sup(d):
    a = support_a(d)
    b = support_b(-d)
    return jnp.stack([a - b, a, b])  # (3, 3): Minkowski point, A point, B point

  ex = jnp.array([1.0, 0.0, 0.0], dtype=dtype)
  ey = jnp.array([0.0, 1.0, 0.0], dtype=dtype)
  v0 = center_a - center_b
  tiny = 1e-10
  v0 = jnp.where(safe.norm(v0) < tiny, v0 + 1e-7 * ex, v0)

  n = -v0
  v1 = sup(n)
  miss = jnp.dot(v1[0], n) <= 0.0
  n = _cross(v1[0], v0)
  n_norm = safe.norm(n)
  # Origin on the line through v0 and v1: the boundary point along the ray is v1 itself.
  on_segment = n_norm <= 1e-12 * (safe.norm(v1[0]) * safe.norm(v0) + 1e-30)
  perpendicular = _cross(v0, jnp.where(jnp.abs(v0[0]) < 0.9 * safe.norm(v0), ex, ey))
  n = jnp.where(on_segment, perpendicular, n)
  v2 = sup(n)
  miss = miss | ((jnp.dot(v2[0], n) <= 0.0) & ~on_segment)
  n = _cross(v1[0] - v0, v2[0] - v0)
  swap = jnp.dot(n, v0) > 0.0
  v1, v2 = jnp.where(swap, v2, v1), jnp.where(swap, v1, v2)
  n = jnp.where(swap, -n, n)

  def portal_body(_, state):
    v1, v2, v3, n, found, miss = state
    w3 = sup(n)
    active = ~found & ~miss
    new_miss = active & (jnp.dot(w3[0], n) <= 0.0)
    c1 = jnp.dot(_cross(v1[0], w3[0]), v0) < 0.0
    c2 = jnp.dot(_cross(w3[0], v2[0]), v0) < 0.0
    go = active & ~new_miss
    replace2 = go & c1
    replace1 = go & ~c1 & c2
    now_found = go & ~c1 & ~c2
    v2n = jnp.where(replace2, w3, v2)
    v1n = jnp.where(replace1, w3, v1)
    n_new = jnp.where(replace2, _cross(v1[0] - v0, w3[0] - v0),
                      jnp.where(replace1, _cross(w3[0] - v0, v2[0] - v0), n))
    v3n = jnp.where(now_found, w3, v3)
    return v1n, v2n, v3n, n_new, found | now_found, miss | new_miss

  v3 = v2
  v1, v2, v3, n, found, miss = jax.lax.fori_loop(
      0, portal_iterations, portal_body, (v1, v2, v3, n, on_segment, miss))

  def refine_body(_, state):
    v1, v2, v3, done = state
    nd = safe.normalize(_cross(v2[0] - v1[0], v3[0] - v1[0]))
    v4 = sup(nd)
    d4 = jnp.dot(v4[0], nd)
    gap = jnp.minimum(jnp.minimum(d4 - jnp.dot(v1[0], nd), d4 - jnp.dot(v2[0], nd)),
                      d4 - jnp.dot(v3[0], nd))
    converged = done | (gap <= tolerance) | jnp.all(nd == 0.0)
    v4v0 = _cross(v4[0], v0)
    a = jnp.dot(v1[0], v4v0) > 0.0
    b = jnp.dot(v2[0], v4v0) > 0.0
    c = jnp.dot(v3[0], v4v0) > 0.0
    r1 = (a & b) | (~a & ~c)
    r3 = a & ~b
    r2 = ~a & c
    upd = ~converged
    v1n = jnp.where(upd & r1, v4, v1)
    v2n = jnp.where(upd & r2, v4, v2)
    v3n = jnp.where(upd & r3, v4, v3)
    return v1n, v2n, v3n, converged

  skip = on_segment | miss | ~found
  v1, v2, v3, _ = jax.lax.fori_loop(0, refine_iterations, refine_body, (v1, v2, v3, skip))

  normal_d = safe.normalize(_cross(v2[0] - v1[0], v3[0] - v1[0]))
  depth = jnp.dot(normal_d, v1[0])
  # Barycentric coordinates of the origin's projection on the portal triangle.
  projection = depth * normal_d
  tri_n = _cross(v2[0] - v1[0], v3[0] - v1[0])
  area = jnp.dot(tri_n, tri_n)
  l1 = safe.divide(jnp.dot(_cross(v2[0] - projection, v3[0] - projection), tri_n), area, 1.0 / 3)
  l2 = safe.divide(jnp.dot(_cross(v3[0] - projection, v1[0] - projection), tri_n), area, 1.0 / 3)
  l3 = 1.0 - l1 - l2
  point_a = l1 * v1[1] + l2 * v2[1] + l3 * v3[1]
  point_b = l1 * v1[2] + l2 * v2[2] + l3 * v3[2]

  # Degenerate ray case: origin on the segment v0-v1.
  seg_n = safe.normalize(v1[0])
  normal_d = jnp.where(on_segment, seg_n, normal_d)
  depth = jnp.where(on_segment, jnp.dot(v1[0], seg_n), depth)
  point_a = jnp.where(on_segment, v1[1], point_a)
  point_b = jnp.where(on_segment, v1[2], point_b)

  hit = ~miss & (found | on_segment) & (depth >= 0.0)
  return hit, -normal_d, depth, point_a, point_b

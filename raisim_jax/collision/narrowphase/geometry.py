"""Closest-point geometry shared by the pair families.

`point_<shape>(c, size, R, p)` gives, in world coordinates, the closest point of a solid to a
point c: (surface point q, outward unit normal at q towards c, signed distance: < 0 inside).
Also segment closest points and the capsule's end spheres.
"""

import jax.numpy as jnp

from raisim_jax.collision.narrowphase.contact_points import ez
from raisim_jax.collision.shapes import ShapeType
from raisim_jax.math import dense, reduce, safe

_mv = dense.unrolled_matvec   # XLA:CPU's dot per 3 x 3 product under vmap costs more


def point_box(c, size, R, p):
  h = 0.5 * size[:3]
  x = _mv(R.T, c - p)
  q = jnp.clip(x, -h, h)
  delta = x - q
  dist = safe.norm(delta)
  outside = dist > 0.0
  face_gap = h - jnp.abs(x)
  k = jnp.argmin(face_gap)
  sign_k = jnp.where(x[k] >= 0.0, 1.0, -1.0)
  inner_n = jnp.zeros(3, dtype=c.dtype).at[k].set(sign_k)
  inner_q = x.at[k].set(sign_k * h[k])
  n_local = jnp.where(outside, safe.normalize(delta), inner_n)
  q_local = jnp.where(outside, q, inner_q)
  sd = jnp.where(outside, dist, -face_gap[k])
  return p + _mv(R, q_local), _mv(R, n_local), sd


def point_triangles(x, a, b, c):
  """Closest points of the triangles (a, b, c) to the point x (3,), as (3, T) coordinate
  rows (a, b, c are (3, T) too: coordinates first, so that every operation runs on (T,)
  rows, 4x faster under vmap on XLA:CPU than (T, 3) rows). By the Voronoi regions of each
  triangle's vertices, edges and face (Ericson, Real-Time Collision Detection, 5.1.5): every
  region's point computed and the triangle's own picked, no branch; a point triangle
  (a = b = c, the hull tables' padding) gives its vertex. The divisions are gradient-safe
  where a region's denominator is 0 (that region is then not picked)."""
  dot = lambda u, v: u[0] * v[0] + u[1] * v[1] + u[2] * v[2]
  x = x[:, None]
  ab, ac = b - a, c - a
  d1, d2 = dot(ab, x - a), dot(ac, x - a)
  d3, d4 = dot(ab, x - b), dot(ac, x - b)
  d5, d6 = dot(ab, x - c), dot(ac, x - c)
  va, vb, vc = d3 * d6 - d5 * d4, d5 * d2 - d1 * d6, d1 * d4 - d3 * d2
  # The closest point is a + s ab + t ac; (s, t) per region, the first region that holds
  # wins: vertex a, vertex b, edge ab, vertex c, edge ac, edge bc, else the face.
  w = safe.divide(d4 - d3, (d4 - d3) + (d5 - d6))
  zero, one = jnp.zeros_like(d1), jnp.ones_like(d1)
  regions = (((d1 <= 0) & (d2 <= 0), zero, zero),
             ((d3 >= 0) & (d4 <= d3), one, zero),
             ((vc <= 0) & (d1 >= 0) & (d3 <= 0), safe.divide(d1, d1 - d3), zero),
             ((d6 >= 0) & (d5 <= d6), zero, one),
             ((vb <= 0) & (d2 >= 0) & (d6 <= 0), zero, safe.divide(d2, d2 - d6)),
             ((va <= 0) & (d4 - d3 >= 0) & (d5 - d6 >= 0), one - w, w))
  total = va + vb + vc
  s, t = safe.divide(vb, total), safe.divide(vc, total)
  for holds, s_region, t_region in reversed(regions):
    s, t = jnp.where(holds, s_region, s), jnp.where(holds, t_region, t)
  return a + s * ab + t * ac


def point_hull(c, hull, R, p):
  """Closest point of a convex hull (`shapes.Hull`, placed by R, p) to the world point c,
  exact: outside, the nearest of its boundary triangles' closest points (normal along
  c - q); inside, on the surface or within rounding of it, the nearest face plane (its
  normal, q the projection of c onto it). Padded table rows change nothing (their planes
  always hold, their triangles are a hull vertex)."""
  x = _mv(R.T, c - p)
  planes = hull.planes
  s = _mv(planes[:, :3], x) + planes[:, 3]
  k = reduce.argmax(s)
  s_max, face_normal = s[k], planes[k, :3]
  a, b, d = (hull.vertices[hull.triangles[:, j], :3].T for j in range(3))   # (3, T) each
  closest = point_triangles(x, a, b, d)
  j = reduce.argmax(-jnp.sum((x[:, None] - closest) ** 2, axis=0))
  q_out = closest[:, j]
  # Within rounding of the surface x - q is noise (its direction arbitrary, its derivative
  # not unit): there the nearest face plane serves, off by at most that rounding.
  rounding = 64 * jnp.finfo(x.dtype).eps * (jnp.max(jnp.abs(x))
                                            + jnp.max(jnp.abs(hull.vertices[:, :3])))
  outside = s_max > rounding
  n_local = jnp.where(outside, safe.normalize(x - q_out, fallback=face_normal), face_normal)
  q_local = jnp.where(outside, q_out, x - s_max * face_normal)
  sd = jnp.where(outside, safe.norm(x - q_out), s_max)
  return p + _mv(R, q_local), _mv(R, n_local), sd


def point_segment(c, a, b):
  """Closest point on segment [a, b] to c."""
  ab = b - a
  t = jnp.clip(safe.divide(jnp.dot(c - a, ab), jnp.dot(ab, ab)), 0.0, 1.0)
  return a + t * ab


def _closest_2d_segment(x, a, b):
  ab = b - a
  t = jnp.clip(safe.divide(jnp.dot(x - a, ab), jnp.dot(ab, ab)), 0.0, 1.0)
  q = a + t * ab
  return q, safe.norm(x - q)


def point_cylinder(c, size, R, p):
  r, hh = size[0], 0.5 * size[1]
  x = _mv(R.T, c - p)
  radial = safe.normalize(x.at[2].set(0.0), fallback=jnp.array([1.0, 0.0, 0.0], x.dtype))
  rho = safe.norm(x[:2])
  z = x[2]
  rho_q = jnp.minimum(rho, r)
  z_q = jnp.clip(z, -hh, hh)
  d2 = jnp.stack([rho - rho_q, z - z_q])
  dist = safe.norm(d2)
  outside = dist > 0.0
  n2_out = safe.normalize(d2)
  side_gap = r - rho
  cap_gap = hh - jnp.abs(z)
  zs = jnp.where(z >= 0.0, 1.0, -1.0)
  use_side = side_gap < cap_gap
  n2_in = jnp.where(use_side, jnp.array([1.0, 0.0]), jnp.stack([0.0, zs]))
  q2_in = jnp.where(use_side, jnp.stack([r, z]), jnp.stack([rho, zs * hh]))
  n2 = jnp.where(outside, n2_out, n2_in)
  q2 = jnp.where(outside, jnp.stack([rho_q, z_q]), q2_in)
  sd = jnp.where(outside, dist, -jnp.minimum(side_gap, cap_gap))
  e_z = ez(c.dtype)
  q_local = q2[0] * radial + q2[1] * e_z
  n_local = n2[0] * radial + n2[1] * e_z
  return p + _mv(R, q_local), _mv(R, n_local), sd


def point_cone(c, size, R, p):
  r, h = size[0], size[1]
  x = _mv(R.T, c - p)
  radial = safe.normalize(x.at[2].set(0.0), fallback=jnp.array([1.0, 0.0, 0.0], x.dtype))
  pt = jnp.stack([safe.norm(x[:2]), x[2]])
  base0 = jnp.stack([jnp.zeros_like(r), -0.25 * h])
  rim = jnp.stack([r, -0.25 * h])
  apex = jnp.stack([jnp.zeros_like(r), 0.75 * h])
  q_base, d_base = _closest_2d_segment(pt, base0, rim)
  q_slant, d_slant = _closest_2d_segment(pt, rim, apex)
  slant_n = safe.normalize(jnp.stack([h, r]))
  inside = (pt[1] >= -0.25 * h) & (jnp.dot(pt - rim, slant_n) <= 0.0)
  use_base = d_base < d_slant
  q2 = jnp.where(use_base, q_base, q_slant)
  dist = jnp.minimum(d_base, d_slant)
  n2_in = jnp.where(use_base, jnp.array([0.0, -1.0], dtype=x.dtype), slant_n)
  # Outside, the normal is along (point - closest); at zero distance use the face normal.
  n2 = jnp.where(inside, n2_in, safe.normalize(pt - q2, fallback=n2_in))
  sd = jnp.where(inside, -dist, dist)
  e_z = ez(c.dtype)
  return (p + _mv(R, q2[0] * radial + q2[1] * e_z), _mv(R, n2[0] * radial + n2[1] * e_z), sd)


#: ShapeType -> point_<shape>, for the solids a sphere or a capsule axis point is tested against.
CLOSEST_POINT = {ShapeType.BOX: point_box, ShapeType.CYLINDER: point_cylinder,
                 ShapeType.CONE: point_cone}


def capsule_ends(size, R, p):
  """Centres (world) of a capsule's two end spheres, along its local z axis."""
  half = 0.5 * size[1] * R[:, 2]
  return p - half, p + half


def capsule_surface_point(center, radius, axis_out, toward, depth):
  """Move an end-sphere contact onto the capsule's surface.

  A capsule end sphere (centre `center`) touching along `toward` (unit, from the capsule to the
  other shape) has its extreme point center + r * toward; where `toward` points back along the
  axis (toward . axis_out < 0) that point is inside the capsule's cylindrical part. The contact
  then uses the cylinder's surface point center + r * m, m = toward without its axial part, with
  the depth reduced by r (1 - m . toward) (exact for a flat counterpart). Returns (surface
  point of the capsule, depth).
  """
  inward = jnp.dot(toward, axis_out) < 0.0
  m = safe.normalize(toward - jnp.dot(toward, axis_out) * axis_out, fallback=toward)
  m = jnp.where(inward, m, toward)
  return center + radius * m, depth - radius * (1.0 - jnp.dot(m, toward))


def segment_segment(p1, q1, p2, q2):
  """Closest points of segments [p1,q1], [p2,q2] (Ericson, RTCD 5.1.9), gradient-safe.
  Coordinates along the first axis: (3,) points, or (3, E) rows of E segment pairs
  (broadcasting, e.g. p1 (3, 1) against p2 (3, E): one segment against E, every operation
  on (E,) rows)."""
  dot = lambda u, v: u[0] * v[0] + u[1] * v[1] + u[2] * v[2]
  cross = lambda u, v: jnp.stack([u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2],
                                  u[0] * v[1] - u[1] * v[0]])
  d1, d2, r = q1 - p1, q2 - p2, p1 - p2
  a, e, f = dot(d1, d1), dot(d2, d2), dot(d2, r)
  c, b = dot(d1, r), dot(d1, d2)
  # a e - b^2 and b f - c e by Lagrange's identity, as |d1 x d2|^2 and (d1 x d2) . (d2 x r):
  # written as differences they cancel for nearly parallel segments (float32: the parameter
  # was noise at 1e-3 rad, and a capsule along a hull edge got its contact at the wrong place).
  normal = cross(d1, d2)
  denom = dot(normal, normal)
  parallel = denom <= 1e-12 * a * e
  s = jnp.where(parallel, 0.0,
                jnp.clip(safe.divide(dot(normal, cross(d2, r)), jnp.where(parallel, 0.0, denom)),
                         0.0, 1.0))
  t = safe.divide(b * s + f, e)
  s = jnp.where(t < 0.0, jnp.clip(safe.divide(-c, a), 0.0, 1.0),
                jnp.where(t > 1.0, jnp.clip(safe.divide(b - c, a), 0.0, 1.0), s))
  t = jnp.clip(t, 0.0, 1.0)
  return p1 + s * d1, p2 + t * d2

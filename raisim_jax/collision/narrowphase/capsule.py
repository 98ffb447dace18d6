"""Capsule pairs: capsule-capsule by segment closest points (two points when parallel), and
box/cylinder/cone (A) vs capsule (B) and capsule (A) vs convex mesh (B) by exact sphere
contacts of the capsule's end spheres and of the deepest point of its axis (golden-section
search on the shape's convex signed distance; for a hull, on its face planes inside and by
its edges outside).
"""

import jax
import jax.numpy as jnp

from raisim_jax.collision.narrowphase import geometry
from raisim_jax.collision.narrowphase.contact_points import concat, ez, one
from raisim_jax.collision.narrowphase.registry import register
from raisim_jax.collision.narrowphase.sphere import sphere_sphere_points, sphere_vs
from raisim_jax.collision.shapes import ShapeType, bounding_radius
from raisim_jax.math import dense, reduce, safe

B, CY, CO, CA, ME = (ShapeType.BOX, ShapeType.CYLINDER, ShapeType.CONE, ShapeType.CAPSULE,
                     ShapeType.MESH)
_mv = dense.unrolled_matvec


@register(CA, CA, points=2)
def collide_capsule_capsule(size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0):
  a0, a1 = geometry.capsule_ends(size_a, R_a, p_a)
  b0, b1 = geometry.capsule_ends(size_b, R_b, p_b)
  ra, rb = size_a[0], size_b[0]
  xa, xb = geometry.segment_segment(a0, a1, b0, b1)
  general = sphere_sphere_points(xa, ra, xb, rb, margin)
  # Parallel axes: the two ends of the overlap of B's projection on A's segment.
  axis = R_a[:, 2]
  sin2 = jnp.sum(jnp.cross(axis, R_b[:, 2]) ** 2)
  ha = 0.5 * size_a[1]
  t0, t1 = jnp.dot(b0 - p_a, axis), jnp.dot(b1 - p_a, axis)
  lo = jnp.maximum(jnp.minimum(t0, t1), -ha)
  hi = jnp.minimum(jnp.maximum(t0, t1), ha)
  parallel = (sin2 < 1e-6) & (hi - lo > 1e-9 * (1.0 + size_a[1]))
  xa_lo, xa_hi = p_a + lo * axis, p_a + hi * axis
  first = sphere_sphere_points(xa_lo, ra, geometry.point_segment(xa_lo, b0, b1), rb, margin)
  second = sphere_sphere_points(xa_hi, ra, geometry.point_segment(xa_hi, b0, b1), rb, margin)
  pick = jax.tree_util.tree_map(lambda u, v: jnp.where(parallel, u, v), first, general)
  second = second.replace(valid=second.valid & parallel)
  return concat(pick, second)


# Box/cylinder/cone (A) vs capsule (B).

GOLDEN_ITERATIONS = 48


def _deepest_on_segment(closest, e0, e1):
  """Parameter t in [0, 1] minimising the signed distance of e0 + t (e1 - e0) to a convex solid.

  The signed distance of a convex solid is a convex function, so a golden-section search with a
  static iteration count finds its minimum on the segment.
  """
  return _golden_minimum(lambda t: closest(e0 + t * (e1 - e0))[2], e0.dtype)


def _axis_point_contact(closest, c, t, e0, e1, radius, margin):
  """Contact of the capsule's axis point c = e0 + t (e1 - e0) (the SDF minimiser), shape = A.

  Depth r - sd(c) is exact. Where the SDF is smooth at an interior minimiser its normal is
  perpendicular to the axis and the sphere point c - r n lies on the capsule. Inside the shape
  the minimum can sit on a kink of the SDF (two faces equally close) with a normal n that has
  an axial part (alpha = n . axis); c - r n is then inside the capsule. The contact keeps the
  exact depth and A's exact surface point q and takes the capsule's cylinder point
  x_B = c + s axis - r m (m: radial part of n) at distance r - sd from q (one quadratic in s),
  i.e. the normal is tilted from n by the smallest angle that puts both points on the surfaces.
  Of the normals on both sides of a kink the one with the least axial part is used. Dropped where that point leaves the cylindrical part or n is along the axis.
  """
  q, n_out, sd = closest(c)
  depth = radius - sd
  seg = e1 - e0
  length = safe.norm(seg)
  axis = safe.normalize(seg, fallback=ez(c.dtype))
  alpha = jnp.dot(n_out, axis)
  # On a kink the face normal on either side of c is a valid one with the same depth: take the
  # one with the least axial part (its surface point q = c - sd n, exact for the flat faces and
  # to O(1e-12) for the curved ones at this probe distance).
  for probe in (-1e-6, 1e-6):
    n_side = closest(c + probe * seg)[1]
    alpha_side = jnp.dot(n_side, axis)
    better = (sd < 0.0) & (jnp.abs(alpha_side) < jnp.abs(alpha) - 1e-3)
    q = jnp.where(better, c - sd * n_side, q)
    n_out = jnp.where(better, n_side, n_out)
    alpha = jnp.where(better, alpha_side, alpha)
  m = safe.normalize(n_out - alpha * axis, fallback=n_out)
  beta = jnp.dot(n_out, m)
  g = jnp.maximum(-sd, 0.0)
  # |q - x_B|^2 = (s - g alpha)^2 + (g beta + r)^2 = (r + g)^2
  disc = jnp.maximum(g * g * alpha * alpha + 2.0 * radius * g * (1.0 - beta), 0.0)
  root = jnp.where(disc > 0.0, jnp.sqrt(jnp.where(disc > 0.0, disc, 1.0)), 0.0)
  s = g * alpha - jnp.sign(alpha) * root
  inside = sd < 0.0
  x_b = jnp.where(inside, c + s * axis - radius * m, c - radius * n_out)
  n = jnp.where(inside, safe.normalize(x_b - q, fallback=-n_out), -n_out)
  u = t * length + s
  on_cylinder = ~inside | ((u >= 0.0) & (u <= length) & (beta > 1e-6))
  return one(0.5 * (q + x_b), n, depth, (depth >= -margin) & on_cylinder)


def _capsule_against(closest, scale, size_b, R_b, p_b, t, margin):
  """Contacts of a convex shape (A, its closest-point function `closest`, a geometry
  `point_<shape>`) with a capsule (B): the exact sphere contacts of both end spheres, and of
  the axis point e0 + t (e1 - e0) where the shape's signed distance is least (`t`), kept
  where deeper than both ends. `scale`: the pair's size, for that comparison's tolerance."""
  e0, e1 = geometry.capsule_ends(size_b, R_b, p_b)
  spheres = [e0, e1, e0 + t * (e1 - e0)]
  # sphere (point of the capsule axis) vs the shape, flipped so that the shape is A
  ends = [sphere_vs(c, size_b[0], closest(c), margin).flip() for c in spheres]
  axis = R_b[:, 2]
  for i, out in ((0, -axis), (1, axis)):  # keep end points on the capsule's surface
    n = ends[i].normal[0]
    x, d = geometry.capsule_surface_point(spheres[i], size_b[0], out, n, ends[i].depth[0])
    ends[i] = one(x - 0.5 * d * n, n, d, d >= -margin)
  end_depth = jnp.max(jnp.where(jnp.concatenate([c.valid for c in ends[:2]]),
                                jnp.concatenate([c.depth for c in ends[:2]]), -jnp.inf))
  middle = _axis_point_contact(closest, spheres[2], t, e0, e1, size_b[0], margin)
  # The interior point is kept only where it is deeper than both end spheres (a threshold far
  # below the 1e-6 accuracy, so that a minimum just inside an end is not lost).
  middle = middle.replace(valid=middle.valid & (middle.depth > end_depth + 1e-10 * scale))
  return concat(ends[0], ends[1], middle)


def _shape_capsule(type_a, points=3):
  """Registers and returns the pair function of `type_a` (A) vs a capsule (B): both end
  spheres and the axis point, `points` = 3 slots."""
  closest_to = geometry.CLOSEST_POINT[type_a]

  def fn(size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0):
    closest = lambda x: closest_to(x, size_a, R_a, p_a)
    e0, e1 = geometry.capsule_ends(size_b, R_b, p_b)
    t = _deepest_on_segment(closest, e0, e1)
    scale = bounding_radius(type_a, size_a) + bounding_radius(CA, size_b)
    return _capsule_against(closest, scale, size_b, R_b, p_b, t, margin)
  fn.__name__ = fn.__qualname__ = f"collide_{ShapeType(type_a).name.lower()}_capsule"
  fn.__doc__ = ("Exact sphere contacts of the capsule's two end spheres and of the deepest "
                "point of its axis (golden-section search on the convex signed distance); the "
                f"interior point is reported when deeper than both ends. Up to {points} points.")
  return register(type_a, CA, points=points)(fn)


def _hull_deepest_on_segment(hull, R, p, e0, e1, end_distances):
  """Parameter t in [0, 1] of the point of the segment [e0, e1] (world) where the signed
  distance of the hull (`shapes.Hull` placed by R, p) is least, exactly, without searching
  on the costly distance itself: where the segment enters the hull the least distance is
  that of its face planes, max_f (n_f . x + c_f), a convex piecewise-linear function of t
  (golden-section search on it); where it stays outside, the nearest point is an end
  (`end_distances`, the two ends' signed distances) or the closest point to one of the
  hull's edges (segment-segment closest points against every triangle edge)."""
  x0, x1 = _mv(R.T, e0 - p), _mv(R.T, e1 - p)
  planes = hull.planes
  direction = x1 - x0
  offset, slope = _mv(planes[:, :3], x0) + planes[:, 3], _mv(planes[:, :3], direction)
  planes_at = lambda t: jnp.max(offset + t * slope)
  t_inside = _golden_minimum(planes_at, x0.dtype)
  corners = [hull.vertices[hull.triangles[:, j], :3].T for j in range(3)]   # (3, T) each
  starts = jnp.concatenate(corners, axis=1)                              # (3, 3T) edges
  ends = jnp.concatenate(corners[1:] + corners[:1], axis=1)
  on_axis, on_edge = geometry.segment_segment(x0[:, None], x1[:, None], starts, ends)
  k = reduce.argmax(-jnp.sum((on_axis - on_edge) ** 2, axis=0))
  t_edge = jnp.clip(safe.divide(jnp.dot(on_axis[:, k] - x0, direction),
                                jnp.dot(direction, direction)), 0.0, 1.0)
  edge_distance = safe.norm(on_axis[:, k] - on_edge[:, k])
  d0, d1 = end_distances
  t_outside = jnp.where(edge_distance < jnp.minimum(d0, d1), t_edge,
                        jnp.where(d1 < d0, 1.0, 0.0))
  return jnp.where(planes_at(t_inside) < 0.0, t_inside, t_outside)


def _golden_minimum(f, dtype):
  """Minimiser in [0, 1] of a convex f by GOLDEN_ITERATIONS golden-section steps."""
  ratio = 0.5 * (jnp.sqrt(5.0) - 1.0)

  def body(_, bounds):
    lo, hi = bounds
    t1 = hi - ratio * (hi - lo)
    t2 = lo + ratio * (hi - lo)
    left = f(t1) <= f(t2)
    return jnp.where(left, lo, t1), jnp.where(left, t2, hi)

  zero = jnp.zeros((), dtype)
  lo, hi = jax.lax.fori_loop(0, GOLDEN_ITERATIONS, body, (zero, zero + 1.0))
  return 0.5 * (lo + hi)


@register(CA, ME, points=3)
def collide_capsule_mesh(size_a, R_a, p_a, hull_b, R_b, p_b, margin=0.0):
  """A capsule (A) against a convex hull (B, `shapes.Hull`): the exact sphere contacts of the
  capsule's end spheres and of its axis point deepest in the hull (`geometry.point_hull`;
  the point by `_hull_deepest_on_segment`), the axis point kept where deeper than both
  ends. Up to 3 points."""
  closest = lambda x: geometry.point_hull(x, hull_b, R_b, p_b)
  e0, e1 = geometry.capsule_ends(size_a, R_a, p_a)
  t = _hull_deepest_on_segment(hull_b, R_b, p_b, e0, e1, (closest(e0)[2], closest(e1)[2]))
  scale = bounding_radius(ME, hull_b) + bounding_radius(CA, size_a)
  return _capsule_against(closest, scale, size_a, R_a, p_a, t, margin).flip()


collide_box_capsule = _shape_capsule(B)
collide_cylinder_capsule = _shape_capsule(CY)
collide_cone_capsule = _shape_capsule(CO)

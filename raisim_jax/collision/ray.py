"""Ray casting against the primitive shapes: RaiSim's World::rayTest as a pure function.

Every shape is a closed convex solid, so the ray segment {origin + t d : t in [0, length]}
(d = direction / |direction|) meets it in one closed interval [t_in, t_out] (possibly empty).
The reported hit is its lower end t_in:

  * a ray starting outside the solid reports the entry point on the surface, with the
    outward unit normal of the surface there;
  * INSIDE-START RULE: a ray starting inside the solid (or exactly on its surface) reports
    distance 0, position = start and normal = -d (there is no entry surface; -d is the
    direction a ray would have to "enter" from). The ground (half-space, solid below its
    plane) follows the same rule: a ray starting below the ground hits it at distance 0.
  * a hit needs t_in <= length (inclusive); otherwise it is a miss.

The interval is computed in the shape frame in closed form: slabs (box axes, the cylinder and
cone height ranges, the half-space), quadratics (sphere, cylinder side, cone lateral surface),
a union for the capsule (cylinder body and two spheres), and one half-line per face plane for
a convex mesh (its hull, collision/shapes.py). Misses return finite numbers
(distance = length, position = the ray's end, normal = 0), and every square root and division
is guarded, so the outputs and their gradients are finite for any input (jit/vmap/grad safe).
"""

import jax
import jax.numpy as jnp
import numpy as np

from raisim_jax.collision.detection import shape_geometry, shape_world_poses
from raisim_jax.collision.shapes import ShapeType
from raisim_jax.math import safe
from raisim_jax.struct import dataclass

_BIG = 1.0e30  # "infinite" interval end (finite in float32); only compared and selected.


@dataclass
class RayHit:
  """The closest hit of a ray test.

  Attributes:
    hit: () bool, whether anything was hit.
    distance: () distance from the start along the unit direction (length if no hit).
    position: (3,) world hit point (the ray's end if no hit).
    normal: (3,) world unit surface normal at the hit (see the inside-start rule; 0 if no hit).
    object_index: () int32 collision-body row of the hit body (-1 if no hit;
      collision/collision_bodies.py).
    shape_index: () int32 row of the hit shape in model.collision.shapes (-1 if no hit).
  """
  hit: jax.Array
  distance: jax.Array
  position: jax.Array
  normal: jax.Array
  object_index: jax.Array
  shape_index: jax.Array


# ---- intervals -----------------------------------------------------------------------------
# An interval is (lo, hi, normal_at_lo); empty when lo > hi.

def _intersect(intervals):
  """Intersection of intervals; the entry normal is that of the constraint entered last."""
  los = jnp.stack([i[0] for i in intervals])
  his = jnp.stack([i[1] for i in intervals])
  normals = jnp.stack([i[2] for i in intervals])
  k = jnp.argmax(los)
  return los[k], jnp.min(his), normals[k]


def _union_convex(intervals):
  """Union of intervals known to form one interval (pieces of a convex solid)."""
  los = jnp.stack([i[0] for i in intervals])
  his = jnp.stack([i[1] for i in intervals])
  normals = jnp.stack([i[2] for i in intervals])
  nonempty = los <= his
  los_masked = jnp.where(nonempty, los, _BIG)
  k = jnp.argmin(los_masked)
  lo = jnp.where(jnp.any(nonempty), los[k], _BIG)
  hi = jnp.where(jnp.any(nonempty), jnp.max(jnp.where(nonempty, his, -_BIG)), -_BIG)
  return lo, hi, normals[k]


def _slab(o, d, lower, upper, axis_vector):
  """{t : lower <= o + t d <= upper} for scalars o, d; axis_vector is the slab's +axis.

  lower=None: the half-line o + t d <= upper.
  """
  parallel = d == 0
  t_upper = safe.divide(upper - o, d)
  if lower is None:
    t_lower = jnp.where(d > 0, -_BIG, _BIG)
    inside = o <= upper
  else:
    t_lower = safe.divide(lower - o, d)
    inside = (o >= lower) & (o <= upper)
  lo = jnp.minimum(t_lower, t_upper)
  hi = jnp.maximum(t_lower, t_upper)
  lo = jnp.where(parallel, jnp.where(inside, -_BIG, _BIG), lo)
  hi = jnp.where(parallel, jnp.where(inside, _BIG, -_BIG), hi)
  normal = jnp.where(d > 0, -axis_vector, axis_vector)  # entering through the lower face
  return lo, hi, normal


def _quadratic_roots(a, b, c):
  """Real roots r1 <= r2 of a t^2 + 2 b t + c (a > 0) and whether they exist (disc >= 0)."""
  disc = b * b - a * c
  real = (disc >= 0) & (a > 0)
  sq = jnp.sqrt(jnp.where(disc > 0, disc, 1.0)) * (disc > 0)
  # Numerically stable form: q = -(b + sign(b) sqrt(disc)); roots q / a and c / q.
  q = -(b + jnp.where(b >= 0, sq, -sq))
  r_a = safe.divide(q, a)
  r_b = safe.divide(c, q, fallback=r_a)  # q == 0 only for b == disc == 0: double root 0 = q/a
  return jnp.minimum(r_a, r_b), jnp.maximum(r_a, r_b), real


def _sphere_interval(o, d, r):
  """Ray o + t d (|d| = 1) against the solid ball |x| <= r at the origin."""
  b = jnp.dot(o, d)
  c = jnp.dot(o, o) - r * r
  r1, r2, real = _quadratic_roots(jnp.ones_like(b), b, c)
  normal = safe.normalize(o + r1 * d)
  lo = jnp.where(real, r1, _BIG)
  hi = jnp.where(real, r2, -_BIG)
  return lo, hi, normal


def _cylinder_side_interval(o, d, r):
  """Ray against the infinite solid cylinder x^2 + y^2 <= r^2."""
  a = d[0] * d[0] + d[1] * d[1]
  b = o[0] * d[0] + o[1] * d[1]
  c = o[0] * o[0] + o[1] * o[1] - r * r
  r1, r2, real = _quadratic_roots(a, b, c)
  p = o + r1 * d
  normal = safe.normalize(p.at[2].set(0.0))
  parallel = a == 0
  inside = c <= 0
  lo = jnp.where(parallel, jnp.where(inside, -_BIG, _BIG), jnp.where(real, r1, _BIG))
  hi = jnp.where(parallel, jnp.where(inside, _BIG, -_BIG), jnp.where(real, r2, -_BIG))
  return lo, hi, normal


_E = np.eye(3)


def _local_interval(t, size, o, d, length):
  """[t_in, t_out] and the entry normal (shape frame) of the segment t in [0, length]."""
  dtype = o.dtype
  e = jnp.asarray(_E, dtype)
  segment = (jnp.zeros((), dtype), jnp.asarray(length, dtype), -d)  # inside-start normal
  if t == ShapeType.SPHERE:
    return _intersect([segment, _sphere_interval(o, d, size[0])])
  if t == ShapeType.BOX:
    half = 0.5 * size[:3]
    return _intersect([segment] + [_slab(o[i], d[i], -half[i], half[i], e[i]) for i in range(3)])
  if t == ShapeType.CYLINDER:
    r, h = size[0], size[1]
    return _intersect([segment, _slab(o[2], d[2], -0.5 * h, 0.5 * h, e[2]),
                       _cylinder_side_interval(o, d, r)])
  if t == ShapeType.CAPSULE:
    r, h = size[0], size[1]
    offset = 0.5 * h * e[2]
    pieces = [
        _intersect([_slab(o[2], d[2], -0.5 * h, 0.5 * h, e[2]),
                    _cylinder_side_interval(o, d, r)]),
        _sphere_interval(o - offset, d, r),
        _sphere_interval(o + offset, d, r),
    ]
    return _intersect([segment, _union_convex(pieces)])
  if t == ShapeType.HALFSPACE:
    # size[0] is the world height; the local frame is the world translated to the plane.
    return _intersect([segment, _slab(o[2], d[2], None, jnp.zeros((), dtype), e[2])])
  if t == ShapeType.CONE:
    return _cone_interval(size, o, d, segment)
  if t == ShapeType.MESH:
    return _intersect([segment, _polytope_interval(size.planes, o, d)])
  raise ValueError(f"no ray test for shape type {t!r}")


def _polytope_interval(planes, o, d):
  """Ray against the convex polytope {x : n . x + c <= 0 for every plane row (n, c)} of
  `planes` (F, 4): the intersection of one half-line per plane (padding rows (0, 0, 0, -1)
  hold everywhere); the entry normal is the outward normal of the plane entered last."""
  normals, offsets = planes[:, :3], planes[:, 3]
  height = normals @ o + offsets          # > 0: the start is outside this plane
  rate = normals @ d
  crossing = safe.divide(-height, rate, fallback=0.0)
  lower = jnp.where(rate < 0, crossing, -_BIG)
  upper = jnp.where(rate > 0, crossing, _BIG)
  parallel = rate == 0
  lower = jnp.where(parallel, jnp.where(height > 0, _BIG, -_BIG), lower)
  upper = jnp.where(parallel, jnp.where(height > 0, -_BIG, _BIG), upper)
  k = jnp.argmax(lower)
  return lower[k], jnp.min(upper), normals[k]


def _cone_interval(size, o, d, segment):
  """Solid cone = slab -h/4 <= z <= 3h/4 intersected with rho^2 <= k^2 (3h/4 - z)^2.

  Inside the slab the quadratic condition is exactly the (convex) upper nappe, so the answer
  is an interval whose ends are among: the slab ends (if they satisfy the quadratic) and the
  quadratic's roots inside the slab.
  """
  dtype = o.dtype
  e = jnp.asarray(_E, dtype)
  r, h = size[0], size[1]
  apex = 0.75 * h
  k2 = (r / h) ** 2
  s0, s1, slab_normal = _intersect([segment, _slab(o[2], d[2], -0.25 * h, apex, e[2])])

  def f(t):
    p = o + t * d
    return p[0] ** 2 + p[1] ** 2 - k2 * (apex - p[2]) ** 2

  def lateral_normal(t):
    p = o + t * d
    return safe.normalize(jnp.stack([p[0], p[1], k2 * (apex - p[2])]))

  w = apex - o[2]
  a = d[0] ** 2 + d[1] ** 2 - k2 * d[2] ** 2
  b = o[0] * d[0] + o[1] * d[1] + k2 * w * d[2]
  c = o[0] ** 2 + o[1] ** 2 - k2 * w * w
  # Roots of a t^2 + 2 b t + c for any sign of a (a == 0: the linear root -c / 2b).
  disc = b * b - a * c
  sq = jnp.sqrt(jnp.where(disc > 0, disc, 1.0)) * (disc > 0)
  q = -(b + jnp.where(b >= 0, sq, -sq))
  linear = a == 0
  root1 = jnp.where(linear, safe.divide(-c, 2.0 * b, fallback=_BIG), safe.divide(q, a, _BIG))
  root2 = jnp.where(linear, _BIG, safe.divide(c, q, fallback=root1))
  root_ok1 = (disc >= 0) & (root1 >= s0) & (root1 <= s1) & ~(linear & (b == 0))
  root_ok2 = (disc >= 0) & (root2 >= s0) & (root2 <= s1) & ~linear

  slab_ok = s0 <= s1
  ok = jnp.stack([slab_ok & (f(jnp.where(slab_ok, s0, 0.0)) <= 0),
                  slab_ok & (f(jnp.where(slab_ok, s1, 0.0)) <= 0),
                  slab_ok & root_ok1, slab_ok & root_ok2])
  ts = jnp.stack([s0, s1, jnp.where(root_ok1, root1, 0.0), jnp.where(root_ok2, root2, 0.0)])
  normals = jnp.stack([slab_normal, e[2],
                       lateral_normal(jnp.where(root_ok1, root1, 0.0)),
                       lateral_normal(jnp.where(root_ok2, root2, 0.0))])
  k_in = jnp.argmin(jnp.where(ok, ts, _BIG))
  any_ok = jnp.any(ok)
  lo = jnp.where(any_ok, ts[k_in], _BIG)
  hi = jnp.where(any_ok, jnp.max(jnp.where(ok, ts, -_BIG)), -_BIG)
  return lo, hi, normals[k_in]


def ray_shape(shape_type, size, R, p, origin, direction, length):
  """Ray against one shape (type a static ShapeType code).

  Args:
    size: (4,) shape size (half-space: size[0] is the plane's world height; R, p unused);
      for a MESH its `shapes.Hull` (the face planes are used).
    R, p: shape -> world rotation (3, 3) and the shape origin (3,).
    origin, direction: (3,) ray start and direction (normalised here; must be non-zero).
    length: ray length.

  Returns:
    (hit () bool, distance (), point (3,), normal (3,)), world frame; see the module doc.
  """
  t = ShapeType(shape_type)
  origin = jnp.asarray(origin)
  dtype = jnp.result_type(origin, *jax.tree.leaves(size), float)
  origin = origin.astype(dtype)
  d = safe.normalize(jnp.asarray(direction, dtype))
  length = jnp.asarray(length, dtype)
  if t == ShapeType.HALFSPACE:
    R = jnp.eye(3, dtype=dtype)
    p = jnp.array([0.0, 0.0, 1.0], dtype) * size[0]
  o_local = R.T @ (origin - p)
  d_local = R.T @ d
  lo, hi, n_local = _local_interval(t, size, o_local, d_local, length)
  hit = (lo <= hi) & (lo >= 0) & (lo <= length)
  distance = jnp.where(hit, lo, length)
  normal = jnp.where(hit, R @ n_local, 0.0)
  return hit, distance, origin + distance * d, normal


def ray_test(model, state, start, direction, length, ignore_body=-1,
             collision_mask_bits=(0xFFFFFFFF, 0xFFFFFFFF)) -> RayHit:
  """The closest hit of a ray over all collision shapes (RaiSim's World::rayTest).

  Args:
    start, direction: (3,) world ray start and direction (normalised here).
    length: ray length; hits with distance in [0, length] count.
    ignore_body: collision-body row of a body whose shapes are ignored (-1: none).
    collision_mask_bits: (2,) uint32 low/high words; a shape is hit only if
      (its collision group & mask) != 0.
  """
  shapes = model.collision.shapes
  shape_type = np.asarray(shapes.shape_type, np.int32)
  body = shapes.body
  ns = len(shape_type)
  dtype = jnp.result_type(jnp.asarray(start), float)
  start = jnp.asarray(start, dtype)
  d = safe.normalize(jnp.asarray(direction, dtype))
  length = jnp.asarray(length, dtype)
  if ns == 0:
    return RayHit(hit=jnp.zeros((), bool), distance=length, position=start + length * d,
                  normal=jnp.zeros(3, dtype), object_index=jnp.asarray(-1, jnp.int32),
                  shape_index=jnp.asarray(-1, jnp.int32))
  positions, rotations, sizes = shape_world_poses(model, state)
  hits = jnp.zeros(ns, bool)
  distances = jnp.zeros(ns, dtype)
  normals = jnp.zeros((ns, 3), dtype)
  for code in np.unique(shape_type):
    index = np.nonzero(shape_type == code)[0]
    geometry = jax.tree.map(
        lambda x: x.astype(dtype) if jnp.issubdtype(x.dtype, jnp.floating) else x,
        shape_geometry(shapes, sizes, code, index))
    h, dist, _, n = jax.vmap(
        lambda s, r, p: ray_shape(int(code), s, r, p, start, d, length))(
            geometry, rotations[index].astype(dtype), positions[index].astype(dtype))
    hits = hits.at[index].set(h)
    distances = distances.at[index].set(dist)
    normals = normals.at[index].set(n)
  mask = jnp.asarray(collision_mask_bits, jnp.uint32)
  hits = hits & jnp.any((shapes.collision_group & mask) != 0, axis=-1)
  hits = hits & (jnp.asarray(body) != ignore_body)
  k = jnp.argmin(jnp.where(hits, distances, jnp.inf))
  any_hit = jnp.any(hits)
  distance = jnp.where(any_hit, distances[k], length)
  return RayHit(hit=any_hit, distance=distance, position=start + distance * d,
                normal=jnp.where(any_hit, normals[k], 0.0),
                object_index=jnp.where(any_hit, jnp.asarray(body)[k], -1).astype(jnp.int32),
                shape_index=jnp.where(any_hit, k, -1).astype(jnp.int32))

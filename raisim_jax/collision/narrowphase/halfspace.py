"""Ground pairs (the halfspace is B, normal +z, height size_b[0]): the deepest candidate
points of the shape below the plane."""

import jax
import jax.numpy as jnp

from raisim_jax.collision import contact_patch, shapes
from raisim_jax.collision.narrowphase import geometry
from raisim_jax.collision.narrowphase.contact_points import ez, one
from raisim_jax.types import ContactPoints
from raisim_jax.collision.narrowphase.registry import register
from raisim_jax.collision.shapes import ShapeType
from raisim_jax.math import dense, safe

S, B, CY, CO, CA, ME, H = (ShapeType.SPHERE, ShapeType.BOX, ShapeType.CYLINDER, ShapeType.CONE,
                           ShapeType.CAPSULE, ShapeType.MESH, ShapeType.HALFSPACE)


@register(S, H, points=1)
def collide_sphere_halfspace(size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0):
  e_z = ez(p_a.dtype)
  lowest = p_a - size_a[0] * e_z
  depth = size_b[0] - lowest[2]
  return one(lowest + 0.5 * depth * e_z, e_z, depth, depth >= -margin)


def _box_vertices(size, R, p):
  signs = jnp.array([[sx, sy, sz] for sx in (-1.0, 1.0) for sy in (-1.0, 1.0)
                     for sz in (-1.0, 1.0)], dtype=p.dtype)
  return p + dense.unrolled_matmul(signs * (0.5 * size[:3]), R.T)


def _rim_points(center, axis, radius, toward):
  """Four points on a circle (centre, axis, radius), the first the most extreme in `toward`."""
  fallback = jnp.cross(axis, jnp.where(jnp.abs(axis[0]) < 0.9, jnp.array([1.0, 0, 0]),
                                       jnp.array([0, 1.0, 0])).astype(axis.dtype))
  e = safe.normalize(toward - jnp.dot(toward, axis) * axis, fallback=safe.normalize(fallback))
  f = jnp.cross(axis, e)
  return center + radius * jnp.stack([e, f, -e, -f])


def plane_candidates(shape_type, size, R, p, down):
  """Points of a shape that can be deepest below a plane whose inward direction is `down`."""
  t = ShapeType(shape_type)
  if t == S:
    return (p + size[0] * down)[None]
  if t == B:
    return _box_vertices(size, R, p)
  if t == CA:
    e0, e1 = geometry.capsule_ends(size, R, p)
    return jnp.stack([e0, e1]) + size[0] * down
  if t == CY:
    axis = R[:, 2]
    hh = 0.5 * size[1]
    return jnp.concatenate([_rim_points(p - hh * axis, axis, size[0], down),
                            _rim_points(p + hh * axis, axis, size[0], down)])
  if t == CO:
    axis = R[:, 2]
    apex = p + 0.75 * size[1] * axis
    return jnp.concatenate([apex[None],
                            _rim_points(p - 0.25 * size[1] * axis, axis, size[0], down)])
  raise ValueError(t)


def _deepest(points, depth, normal, k, margin):
  """Top-k of candidate points (on A) by depth; position midway, normal shared."""
  if points.shape[0] > k:
    _, idx = jax.lax.top_k(depth, k)
    points, depth = points[idx], depth[idx]
  position = points + 0.5 * depth[:, None] * normal
  normals = jnp.broadcast_to(normal, points.shape)
  return ContactPoints(position, normals, depth, depth >= -margin)


def _shape_halfspace(shape_type, points):
  """Registers and returns the pair function of `shape_type` (A) on the ground: the `points`
  deepest of its `plane_candidates`."""
  name = ShapeType(shape_type).name.lower()

  def fn(size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0):
    e_z = ez(p_a.dtype)
    pts = plane_candidates(shape_type, size_a, R_a, p_a, -e_z)
    return _deepest(pts, size_b[0] - pts[:, 2], e_z, points, margin)
  fn.__name__ = fn.__qualname__ = f"collide_{name}_halfspace"
  fn.__doc__ = f"{name.upper()} (A) on the ground (B): up to {points} points."
  return register(shape_type, H, points=points)(fn)


collide_box_halfspace = _shape_halfspace(B, points=4)
collide_cylinder_halfspace = _shape_halfspace(CY, points=4)
collide_cone_halfspace = _shape_halfspace(CO, points=4)


@register(CA, H, points=2)
def collide_capsule_halfspace(size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0):
  """Capsule (A) on the ground (B): the deepest surface point at each end, 2 points."""
  e_z = ez(p_a.dtype)
  e0, e1 = geometry.capsule_ends(size_a, R_a, p_a)
  axis = R_a[:, 2]
  points, depths = [], []
  for end, out in ((e0, -axis), (e1, axis)):
    x, d = geometry.capsule_surface_point(end, size_a[0], out, -e_z,
                                          size_b[0] - end[2] + size_a[0])
    points.append(x)
    depths.append(d)
  return _deepest(jnp.stack(points), jnp.stack(depths), e_z, 2, margin)


@register(ME, H, points=4)
def collide_mesh_halfspace(hull_a, R_a, p_a, size_b, R_b, p_b, margin=0.0):
  """Convex hull (A, a `shapes.Hull`) on the ground (B): up to 4 of its vertices within the
  margin, chosen to span the contact patch (the deepest first), not the 4 deepest: a flat
  foot's many coplanar vertices would otherwise give 4 points on one side of it."""
  e_z = ez(p_a.dtype)
  world = shapes.hull_world_vertices(hull_a, R_a, p_a)
  depth = size_b[0] - world[:, 2]
  real = hull_a.vertices[:, 3] > 0
  index, flags = contact_patch.patch_corners(world[:, :2], depth, real, real & (depth >= -margin))
  points, depth = world[index], depth[index]
  return ContactPoints(points + 0.5 * depth[:, None] * e_z,
                       jnp.broadcast_to(e_z, points.shape), depth, flags)

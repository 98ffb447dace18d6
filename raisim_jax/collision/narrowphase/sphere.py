"""Sphere pairs (the sphere is A): closed forms and closest points, one contact each.

Sphere-halfspace is with the other ground pairs in `halfspace.py`.
"""

import jax.numpy as jnp

from raisim_jax.collision.narrowphase import geometry
from raisim_jax.collision.narrowphase.contact_points import ez, from_surface
from raisim_jax.collision.narrowphase.registry import register
from raisim_jax.collision.shapes import ShapeType
from raisim_jax.math import safe

S, B, CY, CO, CA, ME = (ShapeType.SPHERE, ShapeType.BOX, ShapeType.CYLINDER, ShapeType.CONE,
                        ShapeType.CAPSULE, ShapeType.MESH)


def sphere_vs(c, r, closest, margin):
  """Contact of a sphere (centre c, radius r, A) with a solid, given the solid's closest point
  to c (`geometry.point_<shape>`)."""
  q, n, sd = closest
  depth = r - sd
  return from_surface(q, n, depth, margin)


@register(S, S, points=1)
def collide_sphere_sphere(size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0):
  n = safe.normalize(p_a - p_b, fallback=ez(p_a.dtype))
  depth = size_a[0] + size_b[0] - safe.norm(p_a - p_b)
  return from_surface(p_b + size_b[0] * n, n, depth, margin)


@register(S, B, points=1)
def collide_sphere_box(size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0):
  return sphere_vs(p_a, size_a[0], geometry.point_box(p_a, size_b, R_b, p_b), margin)


@register(S, CY, points=1)
def collide_sphere_cylinder(size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0):
  return sphere_vs(p_a, size_a[0], geometry.point_cylinder(p_a, size_b, R_b, p_b), margin)


@register(S, CO, points=1)
def collide_sphere_cone(size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0):
  return sphere_vs(p_a, size_a[0], geometry.point_cone(p_a, size_b, R_b, p_b), margin)


@register(S, ME, points=1)
def collide_sphere_mesh(size_a, R_a, p_a, hull_b, R_b, p_b, margin=0.0):
  """A sphere against a convex hull (`shapes.Hull`): the hull's exact closest point."""
  return sphere_vs(p_a, size_a[0], geometry.point_hull(p_a, hull_b, R_b, p_b), margin)


def sphere_sphere_points(ca, ra, cb, rb, margin):
  """Sphere-sphere contact from centres and radii (for points of capsule axes)."""
  return collide_sphere_sphere(jnp.stack([ra, 0, 0, 0]).astype(ca.dtype), None, ca,
                               jnp.stack([rb, 0, 0, 0]).astype(ca.dtype), None, cb, margin)


@register(S, CA, points=1)
def collide_sphere_capsule(size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0):
  e0, e1 = geometry.capsule_ends(size_b, R_b, p_b)
  q = geometry.point_segment(p_a, e0, e1)
  return sphere_sphere_points(p_a, size_a[0], q, size_b[0], margin)

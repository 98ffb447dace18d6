"""6-D spatial algebra in world coordinates, linear part FIRST: motion m = [v; w], force
f = [f; n]. Plain functions on (..., 6) / (..., 6, 6) arrays, no operator overloading.

raisim_jax's articulated core expresses every spatial vector in world coordinates with the
world origin as reference point (Plücker coordinates of the world frame), so parent-to-child
propagation needs no transforms: velocities and forces simply add along the tree.
"""

import jax.numpy as jnp

from raisim_jax.math.rotation import skew


def motion_cross(v, m):
  """v x m (motion on motion), (..., 6) [lin; ang]: [w x m_v + v x m_w; w x m_w]."""
  vl, w = v[..., :3], v[..., 3:]
  ml, mw = m[..., :3], m[..., 3:]
  return jnp.concatenate([jnp.cross(w, ml) + jnp.cross(vl, mw), jnp.cross(w, mw)], axis=-1)


def force_cross(v, f):
  """v x* f (motion on force), (..., 6) [lin; ang]: [w x f; w x n + v x f]."""
  vl, w = v[..., :3], v[..., 3:]
  fl, n = f[..., :3], f[..., 3:]
  return jnp.concatenate([jnp.cross(w, fl), jnp.cross(w, n) + jnp.cross(vl, fl)], axis=-1)


def inertia_matrix(mass, com, inertia_com):
  """Spatial inertia (..., 6, 6) about the origin, [lin; ang] order.

  mass (...,), com (..., 3) and inertia_com (..., 3, 3) (rotational inertia about the COM) all
  expressed in the same frame: [[m I, -m [c]], [m [c], I_c - m [c][c]]].
  """
  c = skew(com)
  m = mass[..., None, None]
  eye = jnp.eye(3, dtype=com.dtype)
  top = jnp.concatenate([m * eye, -m * c], axis=-1)
  bottom = jnp.concatenate([m * c, inertia_com - m * (c @ c)], axis=-1)
  return jnp.concatenate([top, bottom], axis=-2)


def point_velocity(v, point):
  """Linear velocity (..., 3) of the material point at `point` of a spatial velocity v."""
  return v[..., :3] + jnp.cross(v[..., 3:], point)


def wrench_at_origin(force, torque, point):
  """Spatial force about the origin of a force applied at `point` plus a pure torque."""
  return jnp.concatenate([force, torque + jnp.cross(point, force)], axis=-1)


def wrench_at_point(f, point):
  """(force, torque about `point`) of a spatial force f about the origin."""
  return f[..., :3], f[..., 3:] - jnp.cross(point, f[..., :3])

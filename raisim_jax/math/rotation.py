"""Rotation-matrix helpers (3x3, body -> world), batched over leading axes."""

import jax.numpy as jnp


def skew(v):
  """Skew-symmetric matrix (..., 3, 3) with skew(v) @ w == cross(v, w)."""
  x, y, z = v[..., 0], v[..., 1], v[..., 2]
  zero = jnp.zeros_like(x)
  return jnp.stack([
      jnp.stack([zero, -z, y], -1),
      jnp.stack([z, zero, -x], -1),
      jnp.stack([-y, x, zero], -1),
  ], axis=-2)


def rotate_inertia(rotation, inertia_body):
  """World-frame inertia R I_B R^T of a body-frame inertia (..., 3, 3)."""
  return jnp.einsum("...ij,...jk,...lk->...il", rotation, inertia_body, rotation)


def rpy_to_matrix(rpy):
  """Rotation matrix of URDF roll-pitch-yaw: Rz(yaw) @ Ry(pitch) @ Rx(roll)."""
  cr, sr = jnp.cos(rpy[..., 0]), jnp.sin(rpy[..., 0])
  cp, sp = jnp.cos(rpy[..., 1]), jnp.sin(rpy[..., 1])
  cy, sy = jnp.cos(rpy[..., 2]), jnp.sin(rpy[..., 2])
  return jnp.stack([
      jnp.stack([cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr], -1),
      jnp.stack([sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr], -1),
      jnp.stack([-sp, cp * sr, cp * cr], -1),
  ], axis=-2)

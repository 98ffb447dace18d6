"""Unit quaternions in RaiSim's (w, x, y, z) order.

All functions act on the last axis and broadcast over leading axes. A quaternion `q` maps body
coordinates to world coordinates: `rotate(q, v_body) == to_matrix(q) @ v_body`.
"""

import jax.numpy as jnp

from raisim_jax.math import safe


def multiply(p, q):
  """Hamilton product p ⊗ q of (..., 4) quaternions (w, x, y, z)."""
  pw, px, py, pz = p[..., 0], p[..., 1], p[..., 2], p[..., 3]
  qw, qx, qy, qz = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
  return jnp.stack([
      pw * qw - px * qx - py * qy - pz * qz,
      pw * qx + px * qw + py * qz - pz * qy,
      pw * qy - px * qz + py * qw + pz * qx,
      pw * qz + px * qy - py * qx + pz * qw,
  ], axis=-1)


def conjugate(q):
  """Conjugate (inverse for unit q) of (..., 4) quaternions."""
  return q * jnp.array([1.0, -1.0, -1.0, -1.0], dtype=q.dtype)


def to_matrix(q):
  """Rotation matrix (..., 3, 3) of unit quaternions (..., 4) (w, x, y, z), body -> world."""
  w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
  return jnp.stack([
      jnp.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)], -1),
      jnp.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)], -1),
      jnp.stack([2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)], -1),
  ], axis=-2)


def from_matrix(rotation):
  """Unit quaternion (..., 4) with w >= 0 of rotation matrices (..., 3, 3).

  Shepperd's method, branch-free: all four candidate formulas are evaluated and the
  numerically largest pivot is selected with `where`.
  """
  r = rotation
  trace = r[..., 0, 0] + r[..., 1, 1] + r[..., 2, 2]
  # Four candidates, each well conditioned when its pivot is the largest.
  pivots = jnp.stack([trace, r[..., 0, 0], r[..., 1, 1], r[..., 2, 2]], axis=-1)
  s_w = jnp.sqrt(jnp.maximum(1.0 + trace, 1e-30)) * 2
  s_x = jnp.sqrt(jnp.maximum(1.0 + r[..., 0, 0] - r[..., 1, 1] - r[..., 2, 2], 1e-30)) * 2
  s_y = jnp.sqrt(jnp.maximum(1.0 + r[..., 1, 1] - r[..., 0, 0] - r[..., 2, 2], 1e-30)) * 2
  s_z = jnp.sqrt(jnp.maximum(1.0 + r[..., 2, 2] - r[..., 0, 0] - r[..., 1, 1], 1e-30)) * 2
  cand_w = jnp.stack([0.25 * s_w, (r[..., 2, 1] - r[..., 1, 2]) / s_w,
                      (r[..., 0, 2] - r[..., 2, 0]) / s_w, (r[..., 1, 0] - r[..., 0, 1]) / s_w], -1)
  cand_x = jnp.stack([(r[..., 2, 1] - r[..., 1, 2]) / s_x, 0.25 * s_x,
                      (r[..., 0, 1] + r[..., 1, 0]) / s_x, (r[..., 0, 2] + r[..., 2, 0]) / s_x], -1)
  cand_y = jnp.stack([(r[..., 0, 2] - r[..., 2, 0]) / s_y, (r[..., 0, 1] + r[..., 1, 0]) / s_y,
                      0.25 * s_y, (r[..., 1, 2] + r[..., 2, 1]) / s_y], -1)
  cand_z = jnp.stack([(r[..., 1, 0] - r[..., 0, 1]) / s_z, (r[..., 0, 2] + r[..., 2, 0]) / s_z,
                      (r[..., 1, 2] + r[..., 2, 1]) / s_z, 0.25 * s_z], -1)
  best = jnp.argmax(pivots, axis=-1)[..., None]
  q = jnp.where(best == 0, cand_w, jnp.where(best == 1, cand_x, jnp.where(best == 2, cand_y, cand_z)))
  q = jnp.where(q[..., :1] < 0, -q, q)
  return safe.normalize(q)


def rotate(q, v):
  """Rotate vectors v (..., 3) by unit quaternions q (..., 4): R(q) v."""
  qv = q[..., 1:]
  t = 2.0 * jnp.cross(qv, v)
  return v + q[..., :1] * t + jnp.cross(qv, t)


def rotate_inverse(q, v):
  """Rotate vectors v (..., 3) by the inverse of unit quaternions q: R(q)^T v."""
  return rotate(conjugate(q), v)


def from_axis_angle(axis, angle):
  """Quaternion (..., 4) of a rotation by `angle` (...,) about unit `axis` (..., 3)."""
  half = 0.5 * angle
  return jnp.concatenate([jnp.cos(half)[..., None], jnp.sin(half)[..., None] * axis], axis=-1)


def exp_map(rotation_vector):
  """Quaternion of the rotation vector (..., 3) (axis * angle); smooth and safe at zero."""
  angle = safe.norm(rotation_vector, axis=-1)
  half = 0.5 * angle
  # sin(half)/angle -> 1/2 as angle -> 0; the series branch keeps the gradient finite.
  small = angle < 1e-6
  safe_angle = jnp.where(small, 1.0, angle)
  scale = jnp.where(small, 0.5 - angle**2 / 48.0, jnp.sin(half) / safe_angle)
  return jnp.concatenate([jnp.cos(half)[..., None], scale[..., None] * rotation_vector], axis=-1)


def cayley(rotation_vector):
  """Unit quaternion of the Cayley rotation cay(v^) = (I - v^/2)^-1 (I + v^/2).

  For v = dt * omega this is a second-order-accurate rotation by omega over dt (angle
  2 atan(|v|/2)); it is the exact rotation partner of the implicit-midpoint rule, which is why
  the single-body integrator uses it (it conserves angular momentum exactly). Smooth everywhere.
  """
  q = jnp.concatenate([jnp.ones_like(rotation_vector[..., :1]), 0.5 * rotation_vector], axis=-1)
  return safe.normalize(q)


def log_map(q):
  """Rotation vector (..., 3) (axis * angle, angle in [0, pi]) of unit quaternions (..., 4);
  the inverse of `exp_map`. Smooth and gradient-safe at the identity."""
  q = jnp.where(q[..., :1] < 0, -q, q)            # the shorter of the two rotations
  w, v = q[..., 0], q[..., 1:]
  s = safe.norm(v, axis=-1)
  small = s < 1e-6
  safe_s = jnp.where(small, 1.0, s)
  safe_w = jnp.where(small, jnp.maximum(w, 1e-12), 1.0)
  scale = jnp.where(small, 2.0 / safe_w, 2.0 * jnp.arctan2(s, w) / safe_s)
  return scale[..., None] * v

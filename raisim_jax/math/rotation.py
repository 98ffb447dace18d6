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


def inverse3(matrix, singular_fallback=True):
  """Inverse of (..., 3, 3) matrices by cofactors (much faster than a batched LAPACK call).

  With `singular_fallback` (default), a zero determinant is replaced by 1, so singular input
  (e.g. a padded contact block) gives the finite adjugate instead of inf/NaN. Without it,
  singular input gives inf/NaN, as a LAPACK inverse does (for callers that must not hide it)."""
  m = matrix
  cofactor_rows = jnp.stack([
      jnp.cross(m[..., 1, :], m[..., 2, :]),
      jnp.cross(m[..., 2, :], m[..., 0, :]),
      jnp.cross(m[..., 0, :], m[..., 1, :]),
  ], axis=-2)
  determinant = jnp.sum(m[..., 0, :] * cofactor_rows[..., 0, :], axis=-1)
  if singular_fallback:
    determinant = jnp.where(determinant == 0, 1.0, determinant)
  return jnp.swapaxes(cofactor_rows, -1, -2) / determinant[..., None, None]

"""Small constructors of the narrowphase's output type (`types.ContactPoints`) that the pair
families share."""

import jax.numpy as jnp

from raisim_jax.types import ContactPoints


def ez(dtype):
  """World +z (the ground's normal) in `dtype`."""
  return jnp.array([0.0, 0.0, 1.0], dtype=dtype)


def one(position, normal, depth, valid):
  """A single contact (K = 1)."""
  return ContactPoints(position[None], normal[None], depth[None], valid[None])


def concat(*cps):
  """The contacts of several `ContactPoints`, in order."""
  return ContactPoints(*[jnp.concatenate([getattr(c, f) for c in cps], axis=0)
                         for f in ("position", "normal", "depth", "valid")])


def from_surface(point_b, normal, depth, margin):
  """One contact from B's deepest surface point, the normal to A and the depth."""
  return one(point_b - 0.5 * depth * normal, normal, depth, depth >= -margin)

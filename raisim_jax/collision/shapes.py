"""Convex collision shapes in RaiSim's conventions: type codes, support maps, AABBs, radii.

Every shape is placed in the world by the position `p` (3,) of its shape-frame origin and the
rotation matrix `R` (3, 3), body -> world. The shape's axis is the shape frame's z axis.
Size parameters are RaiSim's objectParam, a (4,) array:

    SPHERE     (radius, 0, 0, 0)
    BOX        (x, y, z, 0)          full side lengths, centred
    CYLINDER   (radius, height, 0, 0) centred, height = total length along z
    CONE       (radius, height, 0, 0) origin at the COM: base disc at z = -h/4, apex at +3h/4
    CAPSULE    (radius, height, 0, 0) height = distance between the hemisphere centres
    MESH       (0, 0, 0, 0)          a convex hull: its geometry is a `Hull` of its rows of
                                     the hull tables (`ShapeModel.hull_vertices` (V, 4): xyz,
                                     1 for a vertex and 0 for padding; `hull_planes` (F, 4);
                                     `hull_triangles` (T, 3) int32),
                                     passed in place of the size to the functions that take
                                     one
    HALFSPACE  (height, 0, 0, 0)      RaiSim's Ground: world plane z = height, solid below

All functions are pure JAX, jit/vmap/grad safe (gradient-safe normalisation, no NaN at zero
directions). Type codes are static Python ints.
"""

import enum
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from raisim_jax.math import dense, safe

HALFSPACE_EXTENT = 1.0e6  # finite "infinite" x/y extent of the ground's AABB


class ShapeType(enum.IntEnum):
  SPHERE = 0
  BOX = 1
  CYLINDER = 2
  CONE = 3
  CAPSULE = 4
  MESH = 5        # codes as RaiSim's ObjectType (types.ObjectType)
  HALFSPACE = 6


class Hull(NamedTuple):
  """A MESH shape's geometry, shape frame: vertices (V, 4) xyz and 1 for a vertex, 0 for
  padding (a repeated vertex); planes (F, 4) (n, c) with n . x + c <= 0 inside, padding
  (0, 0, 0, -1); triangles (T, 3) int32 the boundary's triangles as rows of `vertices`,
  padding (0, 0, 0). Batched functions see leading axes on all three."""
  vertices: jax.Array
  planes: jax.Array
  triangles: jax.Array


def hull_world_vertices(hull, R, p):
  """(V, 3) world positions of a Hull's vertex rows (padding rows repeat a real vertex) for
  the hull placed by R (3, 3), p (3,). Written as unrolled products: under vmap XLA:CPU runs
  a (V, 3) @ (3, 3) dot per world (1.3 us for 64 rows, against 0.04 us)."""
  return p + dense.unrolled_matmul(hull.vertices[:, :3], R.T)


def hull_rows(shape_type):
  """(ns,) int32 row of each MESH shape in the hull tables (the MESH shapes in shape order),
  -1 for the other shapes: static, from the static type tuple."""
  is_mesh = np.asarray(shape_type, np.int32).reshape(-1) == ShapeType.MESH
  return np.where(is_mesh, np.cumsum(is_mesh) - 1, -1).astype(np.int32)


_EX = jnp.array([1.0, 0.0, 0.0])


def _unit(d, fallback):
  return safe.normalize(d, fallback=jnp.broadcast_to(fallback, d.shape).astype(d.dtype))


def _sign(x):
  """+1 for x >= 0, -1 otherwise (never 0, so a support point is always a surface point)."""
  return jnp.where(x >= 0, 1.0, -1.0).astype(x.dtype)


def support_local(shape_type, size, d):
  """Support point (shape frame) of a shape in the shape-frame direction d (3,)."""
  t = ShapeType(shape_type)
  z = jnp.array([0.0, 0.0, 1.0], dtype=d.dtype)
  if t == ShapeType.SPHERE:
    return size[0] * _unit(d, z)
  if t == ShapeType.BOX:
    return 0.5 * size[:3] * _sign(d)
  if t == ShapeType.CAPSULE:
    return size[0] * _unit(d, z) + z * (0.5 * size[1] * _sign(d[2]))
  if t == ShapeType.CYLINDER:
    radial = _unit(d.at[2].set(0.0), _EX.astype(d.dtype))
    return size[0] * radial + z * (0.5 * size[1] * _sign(d[2]))
  if t == ShapeType.CONE:
    h = size[1]
    radial = _unit(d.at[2].set(0.0), _EX.astype(d.dtype))
    rim = size[0] * radial - z * (0.25 * h)
    apex = z * (0.75 * h)
    return jnp.where(jnp.dot(apex, d) >= jnp.dot(rim, d), apex, rim)
  raise ValueError(f"no support map for {t!r}")


def support(shape_type, size, R, p, direction):
  """World support point of the shape (type static) in the world direction `direction` (3,)."""
  return p + R @ support_local(shape_type, size, R.T @ direction)


def aabb(shape_type, size, R, p):
  """World axis-aligned bounding box (min (3,), max (3,)); exact (tight) for every type."""
  t = ShapeType(shape_type)
  if t == ShapeType.HALFSPACE:
    big = jnp.asarray(HALFSPACE_EXTENT, dtype=size.dtype)
    lo = jnp.stack([-big, -big, -big])
    hi = jnp.stack([big, big, size[0]])
    return lo, hi
  if t == ShapeType.MESH:   # `size` is a Hull; padding repeats a vertex
    world = hull_world_vertices(size, R, p)
    return jnp.min(world, axis=0), jnp.max(world, axis=0)
  if t == ShapeType.SPHERE:
    e = jnp.full((3,), size[0])
  elif t == ShapeType.BOX:
    e = jnp.abs(R) @ (0.5 * size[:3])
  elif t == ShapeType.CAPSULE:
    e = jnp.abs(R[:, 2]) * 0.5 * size[1] + size[0]
  elif t == ShapeType.CYLINDER:
    # Disc of radius r with normal a spans r * sqrt(1 - a_i^2) = r * |(R_i0, R_i1)| along i.
    e = jnp.abs(R[:, 2]) * 0.5 * size[1] + size[0] * safe.norm(R[:, :2], axis=1)
  elif t == ShapeType.CONE:
    eye = jnp.eye(3, dtype=R.dtype)
    hi = jnp.stack([support(t, size, R, p, eye[i])[i] for i in range(3)])
    lo = jnp.stack([support(t, size, R, p, -eye[i])[i] for i in range(3)])
    return lo, hi
  else:
    raise ValueError(t)
  return p - e, p + e


def bounding_radius(shape_type, size):
  """Radius of the smallest origin-centred sphere enclosing the shape (halfspace: inf)."""
  t = ShapeType(shape_type)
  if t == ShapeType.SPHERE:
    return size[0]
  if t == ShapeType.BOX:
    return 0.5 * jnp.sqrt(jnp.sum(size[:3] ** 2))
  if t == ShapeType.CAPSULE:
    return size[0] + 0.5 * size[1]
  if t == ShapeType.CYLINDER:
    return jnp.sqrt(size[0] ** 2 + 0.25 * size[1] ** 2)
  if t == ShapeType.CONE:
    return jnp.maximum(0.75 * size[1], jnp.sqrt(size[0] ** 2 + (0.25 * size[1]) ** 2))
  if t == ShapeType.HALFSPACE:
    return jnp.asarray(jnp.inf, dtype=size.dtype)
  if t == ShapeType.MESH:   # `size` is a Hull; padding repeats a vertex
    return jnp.sqrt(jnp.max(jnp.sum(size.vertices[:, :3] ** 2, axis=-1)))
  raise ValueError(t)

"""OO view of one visual object of an articulated system (RaiSim's VisObject).

An articulated system has two lists of them: getVisOb(), its visual shapes (URDF `<visual>`
elements; MJCF geoms, which are both drawn and collided), and getVisColOb(), its collision
bodies drawn as shapes. Both follow body order and, inside a body, file order. A VisObject
holds its system, its list and its index; every attribute reads the system's description, so
a collision body moved with setCollisionBodyPositionOffset moves its VisObject too.

Frames: `offset` and `rot` are in the body frame (RaiSim's parent joint frame); the system's
getVisObPose / getVisColObPose give the world pose.
"""

import numpy as np

from raisim_jax.oo.articulated_collision import collision_geometries
from raisim_jax.oo.objects import read_only
from raisim_jax.oo.precision import in_world_precision


def geometries(description, collision):
  """[(body index, Geometry)] of the visual (collision=False) or collision shapes."""
  if collision:
    return collision_geometries(description)
  return [(b, g) for b, body in enumerate(description.bodies) for g in body.visuals]


@in_world_precision
class VisObject:
  """Visual object `index` of `system`'s visual (collision=False) or collision list."""

  def __init__(self, system, collision, index):
    self._system = system
    self._collision = bool(collision)
    self._index = int(index)

  def _entry(self):
    return geometries(self._system._entry.description, self._collision)[self._index]

  @property
  def localIdx(self) -> int:
    """Index of the body that carries the object."""
    return self._entry()[0]

  @property
  def name(self) -> str:
    return self._entry()[1].name

  @property
  def shape(self) -> str:
    """'box', 'sphere', 'cylinder', 'capsule', 'ellipsoid' or 'mesh'."""
    return self._entry()[1].shape

  @property
  def visShapeParam(self):
    """(4,) RaiSim's shape parameters: box (x, y, z, 0) full lengths, sphere (r, 0, 0, 0),
    cylinder / capsule (r, length, 0, 0), ellipsoid (three radii, 0), mesh zeros."""
    g = self._entry()[1]
    params = np.zeros(4)
    if g.shape in ("box", "ellipsoid"):
      params[:3] = g.size
    elif g.shape == "sphere":
      params[0] = g.radius
    elif g.shape in ("cylinder", "capsule"):
      params[:2] = g.radius, g.length
    return read_only(params)

  @property
  def fileName(self) -> str:
    """Mesh file path ('' for primitives and inline meshes)."""
    return self._entry()[1].filename

  @property
  def scale(self):
    return read_only(self._entry()[1].scale)

  @property
  def offset(self):
    """(3,) position in the body frame."""
    return read_only(self._entry()[1].pos)

  @property
  def rot(self):
    """(3, 3) orientation in the body frame."""
    return read_only(self._entry()[1].rot)

  @property
  def color(self):
    """(4,) RGBA from the file (URDF material color, MJCF rgba or material); the URDF default
    (0.7, 0.7, 0.7, 1) where the file gives none."""
    color = self._entry()[1].color
    return read_only(color if color is not None else (0.7, 0.7, 0.7, 1.0))

  @property
  def material(self) -> str:
    """Contact material name of the shape ('' if none)."""
    return self._entry()[1].material

  def __repr__(self):
    return (f"VisObject(name={self.name!r}, shape={self.shape!r}, "
            f"localIdx={self.localIdx})")

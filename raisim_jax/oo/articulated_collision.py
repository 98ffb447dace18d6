"""OO view of one collision body of an articulated system (RaiSim's CollisionDefinition).

A system's collision bodies are its URDF `<collision>` elements, in body order and, inside a
body (links merged through fixed joints included), in file order; each is named
"LINK_NAME/INDEX" (the INDEX-th collision of that link). The view holds its system and its
index in that list, never a value: every getter reads the system's description (the one
mutable copy), every setter writes it and projects it into the compiled model (no recompile;
a material name new to the world recompiles once).

Offsets are in the body frame (RaiSim's "parent joint frame": a body's frame is its parent
joint frame after the joint motion).
"""

import numpy as np

from raisim_jax import validation
from raisim_jax.oo.objects import read_only
from raisim_jax.oo.precision import in_world_precision

# Number of shape parameters each URDF geometry takes (RaiSim's setCollisionBodyShapeParameters).
SHAPE_PARAMETERS = {"sphere": ("radius",), "cylinder": ("radius", "length"),
                    "capsule": ("radius", "length"), "box": ("x", "y", "z")}
# Geometries the simulation collides (a mesh as its convex hull, without shape parameters).
SIMULATED_SHAPES = frozenset(SHAPE_PARAMETERS) | {"mesh"}


def collision_geometries(description):
  """[(body index, Geometry)] of an ArticulatedDescription, in collision-body order."""
  return [(b, g) for b, body in enumerate(description.bodies) for g in body.collisions]


@in_world_precision
class CollisionDefinition:
  """Collision body `index` of articulated system `system` (see the module docstring)."""

  def __init__(self, system, index):
    self._system = system
    self._index = int(index)

  def _geometry(self):
    return collision_geometries(self._system._entry.description)[self._index][1]

  @property
  def name(self) -> str:
    return self._geometry().name

  def getName(self) -> str:
    return self.name

  @property
  def localIdx(self) -> int:
    """Index of the body that carries this collision body."""
    return collision_geometries(self._system._entry.description)[self._index][0]

  def getIndex(self) -> int:
    """Position in the system's getCollisionBodies() list (the `id` of
    setCollisionBodyShapeParameters and the offset setters)."""
    return self._index

  def getShape(self) -> str:
    """Geometry kind: 'box', 'sphere', 'cylinder', 'capsule', 'mesh' or (MJCF) 'ellipsoid'."""
    return self._geometry().shape

  def getShapeParameters(self):
    """RaiSim's shape parameters: sphere (r,), cylinder / capsule (r, length), box (x, y, z),
  ellipsoid (three radii)."""
    g = self._geometry()
    if g.shape == "sphere":
      return read_only([g.radius])
    if g.shape in ("cylinder", "capsule"):
      return read_only([g.radius, g.length])
    if g.shape == "box":
      return read_only(g.size)
    if g.shape == "ellipsoid":
      return read_only(g.size)
    raise ValueError(f"collision body '{g.name}' is a mesh: it has no shape parameters")

  @property
  def posOffset(self):
    """(3,) read-only: position in the body frame. Assign to move it."""
    return read_only(self._geometry().pos)

  @posOffset.setter
  def posOffset(self, value):
    self._system.setCollisionBodyPositionOffset(self._index, value)

  @property
  def rotOffset(self):
    """(3, 3) read-only: orientation in the body frame. Assign to turn it."""
    return read_only(self._geometry().rot)

  @rotOffset.setter
  def rotOffset(self, value):
    self._system.setCollisionBodyOrientationOffset(self._index, value)

  def getMaterial(self) -> str:
    return self._geometry().material or "default"

  def setMaterial(self, material):
    """Contact material of this collision body (RaiSim's material system names)."""
    if not isinstance(material, str) or not material:
      raise ValueError(f"argument 'material' must be a non-empty material name, got {material!r}")
    geometry = self._geometry()
    require_simulated(geometry)
    geometry.material = material
    self._system._world._collision_geometry_changed()

  def __repr__(self):
    return f"CollisionDefinition(name={self.name!r}, localIdx={self.localIdx})"


def require_simulated(geometry):
  """ValueError for an ellipsoid collision body: it is skipped by the simulation (the loader
  warned), so an edit of one would change nothing."""
  if geometry.shape not in SIMULATED_SHAPES:
    raise ValueError(f"collision body '{geometry.name}' is a {geometry.shape}: collision "
                     "ellipsoids are not simulated yet, so it cannot be edited")


def set_shape_parameters(geometry, params):
  """Writes RaiSim's Vec<4> shape parameters into a URDF Geometry (validated)."""
  require_simulated(geometry)
  if geometry.shape not in SHAPE_PARAMETERS:
    raise ValueError(f"collision body '{geometry.name}' is a {geometry.shape}: it has no "
                     f"shape parameters (its offsets and material can be set)")
  names = SHAPE_PARAMETERS[geometry.shape]
  params = np.asarray(params, np.float64).reshape(-1)
  if params.size not in (len(names), 4):
    raise ValueError(f"argument 'params' must have {len(names)} (or 4) entries for a "
                     f"{geometry.shape}, got {params.size}")
  values = [validation.positive(params[k], f"params[{k}] ({name})")
            for k, name in enumerate(names)]
  if geometry.shape == "sphere":
    geometry.radius = values[0]
  elif geometry.shape == "box":
    geometry.size = np.asarray(values)
  else:
    geometry.radius, geometry.length = values

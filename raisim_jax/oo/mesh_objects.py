"""World.addMesh: RaiSim's mesh objects, their overloads and collision modes.

A Mesh is one rigid body whose collision shapes are convex hulls in the mesh frame:
CONVEX_HULL gives one (io/collision_mesh.py), CONVEXIFY (the default) one per CoACD part
(io/convex_decomposition.py). ORIGINAL_MESH (non-convex triangle-mesh collision) is not
simulated by raisim_jax and is refused, as is RaiSim's fallback to it when CoACD fails.
Overloads without inertia estimate it as RaiSim does: a uniform box filling the scaled mesh's
axis-aligned bounding box, centred on it.
"""

import dataclasses
import os
from typing import Optional

import numpy as np

from raisim_jax import validation
from raisim_jax.description import CollisionShape, MeshSource
from raisim_jax.dynamics import mass_properties
from raisim_jax.io import collision_mesh, convex_decomposition
from raisim_jax.io.convex_decomposition import CoacdOptions
from raisim_jax.types import MeshCollisionMode, ObjectType

_TAIL = ("collisionGroup", "collisionMask", "coacdOptions")


@dataclasses.dataclass
class MeshArguments:
  """addMesh's arguments after its overload was resolved; inertia and COM None where the
  overload estimates them."""
  file: str
  mass: float
  inertia: Optional[np.ndarray]
  com: Optional[np.ndarray]
  scale: float
  material: str
  collision_mode: MeshCollisionMode
  collision_group: int
  collision_mask: int
  coacd_options: CoacdOptions


def parse_arguments(file, args, kwargs) -> MeshArguments:
  """Resolves addMesh's file overloads (World.addMesh's docstring) from the arguments after
  the file. Raises TypeError for an argument unknown, given twice, or of no overload, and
  ValueError for a bad value, naming the argument."""
  known = {"mass", "inertia", "COM", "scale", "material", "collisionMode", *_TAIL}
  unknown = set(kwargs) - known
  if unknown:
    raise TypeError(f"addMesh: unknown argument(s) {', '.join(sorted(unknown))}")
  positional = list(args)
  explicit = "inertia" in kwargs or "COM" in kwargs or (
      len(positional) >= 2 and np.ndim(positional[1]) == 2)
  names = ["mass"] + (["inertia", "COM"] if explicit else []) + ["scale", "material"]
  tail = list(_TAIL)
  if len(positional) > len(names) and isinstance(positional[len(names)], CoacdOptions):
    names.append("coacdOptions")      # (..., material, coacdOptions, group, mask)
    tail.remove("coacdOptions")
  elif len(positional) > len(names) and isinstance(positional[len(names)], MeshCollisionMode):
    names.append("collisionMode")     # (..., material, collisionMode, group, mask, options)
  names += tail
  if len(positional) > len(names):
    raise TypeError(f"addMesh: too many positional arguments ({len(positional) + 1} given)")
  values = {}
  for name, value in zip(names, positional):
    values[name] = value
  for name, value in kwargs.items():
    if name in values:
      raise TypeError(f"addMesh: argument '{name}' given twice")
    values[name] = value
  if "mass" not in values:
    raise TypeError("addMesh: missing argument 'mass'")
  if explicit and ("inertia" not in values or "COM" not in values):
    raise TypeError("addMesh: the explicit-inertia overload takes both 'inertia' and 'COM'")
  options = values.get("coacdOptions", CoacdOptions())
  if not isinstance(options, CoacdOptions):
    raise ValueError(f"addMesh: argument 'coacdOptions' must be a CoacdOptions, got "
                     f"{type(options).__name__}")
  try:
    mode = MeshCollisionMode(values.get("collisionMode", MeshCollisionMode.CONVEXIFY))
  except ValueError:
    raise ValueError(f"addMesh: argument 'collisionMode' must be a MeshCollisionMode, got "
                     f"{values['collisionMode']!r}") from None
  if mode == MeshCollisionMode.ORIGINAL_MESH:
    raise ValueError("addMesh: MeshCollisionMode.ORIGINAL_MESH (collision with the "
                     "non-convex triangle mesh) is not supported by raisim_jax; use "
                     "CONVEXIFY (convex parts by CoACD) or CONVEX_HULL")
  if not isinstance(file, (str, os.PathLike)):
    raise TypeError(f"addMesh: the first argument must be a mesh file path or a Mesh to "
                    f"clone, got {type(file).__name__}")
  return MeshArguments(
      file=os.fspath(file), mass=validation.positive(values["mass"], "mass"),
      inertia=validation.inertia(values["inertia"], "inertia") if explicit else None,
      com=validation.vector(values["COM"], 3, "COM") if explicit else None,
      scale=validation.positive(values.get("scale", 1.0), "scale"),
      material=material_name(values.get("material", "")), collision_mode=mode,
      collision_group=values.get("collisionGroup", 1),
      collision_mask=values.get("collisionMask", -1), coacd_options=options)


def material_name(material) -> str:
  """addMesh's `material` as a material name: "" is the default material. Raises ValueError
  for a non-string."""
  if not isinstance(material, str):
    raise ValueError(f"addMesh: argument 'material' must be a string, got {material!r}")
  return material or "default"


@dataclasses.dataclass
class MeshBody:
  """What addMesh adds: mass, inertia (3, 3) about the COM, COM (3,) in the mesh frame, the
  collision shapes (MESH hulls, mesh frame) and the MeshSource."""
  mass: float
  inertia: np.ndarray
  com: np.ndarray
  shapes: list
  source: MeshSource


def mesh_body(arguments: MeshArguments) -> MeshBody:
  """Reads, convexifies and measures the mesh of `arguments`.

  Raises:
    ValueError naming the file: missing, unreadable, flat, not decomposable by CoACD (where
    RaiSim would fall back to ORIGINAL_MESH), or a part without volume.
  """
  path, scale = arguments.file, arguments.scale
  if not os.path.isfile(path):
    raise ValueError(f"addMesh: mesh file '{path}' not found")
  try:
    mesh = collision_mesh.read_mesh(path)
  except ValueError as error:
    raise ValueError(f"addMesh: {error}") from None
  vertices = mesh[0] * scale
  if vertices.shape[0] < 4:
    raise ValueError(f"addMesh: mesh file '{path}' holds {vertices.shape[0]} vertices; a "
                     f"collision mesh needs at least 4")
  parts = ()
  if arguments.collision_mode == MeshCollisionMode.CONVEX_HULL:
    hulls = [_hull(vertices, path, "")]
  else:
    try:
      parts = tuple(convex_decomposition.decompose(path, scale, arguments.coacd_options, mesh))
    except ValueError as error:
      raise ValueError(f"addMesh: {error}; RaiSim would fall back to collision with the "
                       f"original triangle mesh, which raisim_jax does not simulate: pass "
                       f"collisionMode=MeshCollisionMode.CONVEX_HULL") from None
    hulls = [_hull(part, path, f" (CoACD part {k})") for k, (part, _) in enumerate(parts)]
  low, high = vertices.min(axis=0), vertices.max(axis=0)
  if arguments.inertia is None:
    inertia = mass_properties.box_inertia(arguments.mass, *(high - low))
    com = 0.5 * (low + high)
  else:
    inertia, com = arguments.inertia, arguments.com
  shapes = [CollisionShape(ObjectType.MESH, np.zeros(4), material=arguments.material, hull=h)
            for h in hulls]
  source = MeshSource(
      file=path, scale=scale, collision_mode=arguments.collision_mode,
      coacd_options=(arguments.coacd_options
                     if arguments.collision_mode == MeshCollisionMode.CONVEXIFY else None),
      convex_parts=parts)
  return MeshBody(mass=arguments.mass, inertia=np.asarray(inertia, np.float64),
                  com=np.asarray(com, np.float64), shapes=shapes, source=source)


def _hull(points, path, what):
  try:
    return collision_mesh.convex_hull(points)
  except ValueError as error:
    raise ValueError(f"addMesh: mesh file '{path}'{what}: {error}") from None


def export_obj(source: MeshSource, path):
  """Writes the mesh of `source` (its file's triangles, scaled, mesh frame) as OBJ `path`.

  Raises:
    ValueError naming the mesh file where it can no longer be read."""
  if not os.path.isfile(source.file):
    raise ValueError(f"exportMeshAssetsToObj: mesh file '{source.file}' no longer exists")
  try:
    vertices, faces = collision_mesh.read_mesh(source.file)
  except ValueError as error:
    raise ValueError(f"exportMeshAssetsToObj: {error}") from None
  collision_mesh.write_obj_parts(
      path, [(vertices * source.scale, faces)],
      comment=f"{os.path.basename(source.file)} scaled by {source.scale!r}")

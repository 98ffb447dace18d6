"""MuJoCo MJCF models read into articulated descriptions (the spec's experimental subset).

Supported (world.txt, "MJCF reader"): `<worldbody>` with nested `<body>`s, `free`, `slide`,
`hinge` and `ball` joints, primitive geoms (plane, sphere, capsule, box, cylinder, ellipsoid;
`fromto`), mesh geoms of `<asset><mesh>`es (file relative to `compiler meshdir`/`assetdir`, else
to the MJCF file; any format trimesh reads; `scale`; inline `vertex`/`face`; inertia modes
legacy, convex, exact: see io/mesh_inertia.py), `<inertial>` or inertia computed from the
geoms (MuJoCo's density 1000 or `mass`), geom colors (`rgba`, `<asset><material rgba>`: every
geom is a visual object, see oo/visual_objects.py), `<default>`
classes (`class`, `childclass`, nested defaults), `<compiler angle eulerseq meshdir
inertiafromgeom>`, `<option timestep gravity>` (and `iterations` of a `solver="PGS"` model:
MuJoCo's PGS iteration is one Gauss-Seidel sweep, so it becomes the contact solver's maxIter;
MuJoCo's default 100 when absent), joint `range` / `limited` / `damping` /
`armature` / `stiffness` / `springref` / `ref`, and `<motor>` actuators (joint, gear,
ctrlrange), kept as `Actuator`s for mapping controls to generalized forces.

How MJCF maps onto the URDF-level records (`LinkSpec`, `JointSpec`) that `urdf.build_description`
merges: every MJCF body becomes a link with the body's name and frame. A body with joints
j1..jk (anchors p_i, axes in the body frame) is reached through a chain
    parent --j1 (at body pos + R p1, body rot)--> "<body>/j1" --j2 (at p2 - p1)--> ...
         --jk--> "<body>/jk" --fixed (at -pk)--> <body>
(MuJoCo applies a body's joints in order, each about its own anchor), so massless links sit
between the joints of one body; a body without joints is welded to its parent (fixed joint).
A top-level body with a free joint is a floating-base system whose base frame is the body
frame; one without is fixed to the world (root link "world"). Each top-level body is one
system. The worldbody's horizontal plane is the ground; its other geoms are the collision and
visual shapes of link "worldbody", welded to the world in one more fixed system, "world"
(STATIC_SYSTEM), whose only body is static. Coordinates: a slide or hinge coordinate here is
MuJoCo's qpos minus the joint's `ref` (the model pose is the zero configuration); an unnamed
body is "body<MuJoCo body id>"; the free joint's velocity is (linear, angular) in the world
frame here, (linear world, angular body) in MuJoCo (tests/test_mjcf.py's
`Mapping` converts states and is checked against MuJoCo's kinematics and mass matrix).

Collision filtering: MuJoCo collides two geoms when (contype1 & conaffinity2) | (contype2 &
conaffinity1). Where the model's (contype, conaffinity) pairs do not all collide with each
other (and with MuJoCo's default (1, 1), what an object added later through the World's API
stands for), each geom gets RaiSim collision bits that reproduce that test exactly with
RaiSim's AND rule (`collision_bits`: one group bit per distinct pair, bit 0 for (1, 1), the
ground's STATIC bit 63 for the plane; the mask holds the bits of every pair it collides with),
across systems, the static "world" system and the ground alike. Besides, a pair of bodies of
one system none of whose geom pairs passes the test is never a candidate pair
(`ignoreCollisionBetween`, which saves its narrowphase), and a body never collides with its
parent MJCF body (MuJoCo's filterparent, on unless `<option><flag filterparent="disable">`):
bodies welded together are one link here as they are one weld group in MuJoCo, and a body
reached through its joints' massless chain gets an `ignoreCollisionBetween` with its parent
body's link (RaiSim's doNotCollideWithParent alone would exclude only the chain's last
massless link: Gymnasium's humanoid then started with its thighs 9.6 cm deep in its pelvis).
Friction: each geom's sliding friction and whether its condim is 1 become a contact material
("mjcf_friction_<value>", with "_condim1" appended for condim 1) and every pair of them gets
MuJoCo's combination (`pair_friction`): the larger friction of the two, or none when both
geoms have condim 1 (a contact takes the larger condim; Gymnasium's humanoid and hopper: limb
against limb), with no restitution (MuJoCo's contacts are soft and do not bounce).

Unsupported elements (include, tendon, equality, sensor, contact pairs and excludes, composite,
flexcomp, ...) and settings that change MuJoCo's physics but are not mapped (`<option>`
attributes other than the above, `<option><flag>`s other than filterparent, geom margin / gap /
solref / solimp / solmix / priority / fluid terms, condim 4 and 6's torsional and rolling
friction, joint frictionloss / solref / solimp / margin / actuator force ranges, a free
joint's damping, armature, stiffness and frictionloss, ball joint ranges) produce one warning
listing what was ignored; unsupported geoms (hfield, sdf,
a primitive fitted to a mesh) and joint types raise an error naming the element and its line.
Mesh geoms collide as the convex hull of their vertices, as in MuJoCo (not with the model's
own bodies: loading warns, naming them); ellipsoid geoms give their exact mass properties but
do not collide yet (loading warns, naming them)."""

import dataclasses
import math
import os
import warnings
from typing import Optional

import numpy as np
from lxml import etree

from raisim_jax.io import collision_mesh, mesh_inertia
from raisim_jax.io.articulated_description import (Geometry, Inertial, JointSpec, LinkSpec,
                                                   axis_angle_matrix)
from raisim_jax.types import (JOINT_DIMS, JOINT_FIXED, JOINT_PRISMATIC, JOINT_REVOLUTE,
                              JOINT_SPHERICAL)

_IGNORED = {"include", "tendon", "equality", "sensor", "contact", "composite", "flexcomp",
            "keyframe", "extension", "plugin", "deformable", "custom"}
_VISUAL = {"visual", "statistic", "size", "light", "camera", "site"}
_JOINT_TYPES = {"hinge": JOINT_REVOLUTE, "slide": JOINT_PRISMATIC, "ball": JOINT_SPHERICAL}
# Attributes that change MuJoCo's physics and that the reader does not map: present (after
# the defaults) in a file, they are named in the load warning.
_IGNORED_GEOM = ("margin", "gap", "solref", "solimp", "solmix", "priority", "fluidshape",
                 "fluidcoef")
_IGNORED_JOINT = ("frictionloss", "margin", "solreflimit", "solimplimit", "solreffriction",
                  "solimpfriction", "springdamper", "actuatorfrclimited", "actuatorfrcrange",
                  "actuatorgravcomp")
_FREE_JOINT_TERMS = ("damping", "armature", "stiffness", "frictionloss")
# <option> attributes read: the rest are named in the load warning.
_OPTION_READ = ("timestep", "gravity")
_DEFAULT_DENSITY = 1000.0
# The fixed articulated system holding the worldbody's geoms other than planes (named after
# MuJoCo's world body, a name no MJCF body can take).
STATIC_SYSTEM = "world"
_DEFAULT_RGBA = (0.5, 0.5, 0.5, 1.0)


@dataclasses.dataclass
class _Mesh:
  """A mesh asset: its file (empty when given inline), unscaled vertices (N, 3), scale, and
  mass properties of the scaled solid at unit density (mesh frame): volume, com (3,), inertia
  per unit mass (3, 3)."""
  path: str
  vertices: np.ndarray
  scale: np.ndarray
  volume: float
  com: np.ndarray
  inertia_unit: np.ndarray


@dataclasses.dataclass
class Actuator:
  """A `<motor>`: generalized force gear * clip(ctrl, ctrlrange) on joint `joint`."""
  name: str
  joint: str
  gear: float
  ctrl_range: Optional[tuple]


@dataclasses.dataclass
class Actuation:
  """The motors acting on one system: generalized force = gear_matrix @ clip(ctrl, low, high).

  Attributes:
    names: (nu,) actuator names.
    gear_matrix: (nv, nu) gear of actuator k on the dof of its joint.
    ctrl_low, ctrl_high: (nu,) control bounds (-inf / inf where not limited).
  """
  names: list
  gear_matrix: np.ndarray
  ctrl_low: np.ndarray
  ctrl_high: np.ndarray

  def generalized_force(self, ctrl):
    """(nv,) generalized force of controls (nu,) (NumPy or JAX: usable inside jit)."""
    import jax.numpy as jnp
    return self.gear_matrix @ jnp.clip(ctrl, self.ctrl_low, self.ctrl_high)


def actuation(actuators, description):
  """Actuation of `actuators` on the system `description` (their joints must be its hinge or
  slide joints; ValueError otherwise)."""
  dof_of, offset = {}, 0
  for body in description.bodies:
    size = JOINT_DIMS[body.joint_type][1]
    if size == 1:
      dof_of[body.joint_name] = offset
    offset += size
  chosen = [a for a in actuators if a.joint in dof_of]
  gear = np.zeros((offset, len(chosen)))
  for k, a in enumerate(chosen):
    gear[dof_of[a.joint], k] = a.gear
  low = np.array([a.ctrl_range[0] if a.ctrl_range else -np.inf for a in chosen])
  high = np.array([a.ctrl_range[1] if a.ctrl_range else np.inf for a in chosen])
  return Actuation([a.name for a in chosen], gear, low, high)


@dataclasses.dataclass
class MjcfSystem:
  """One top-level body tree: its links and joints (URDF-level), each slide/hinge joint's
  `ref`, and the (contype, conaffinity) of each body's colliding geoms."""
  name: str
  links: list
  joints: list
  floating: bool
  base_pos: np.ndarray
  base_quat: np.ndarray
  refs: dict
  filters: dict = dataclasses.field(default_factory=dict)   # body -> [(contype, conaffinity)]
  parents: dict = dataclasses.field(default_factory=dict)   # MJCF body -> its MJCF parent body


@dataclasses.dataclass
class MjcfModel:
  path: str
  time_step: Optional[float]
  gravity: Optional[np.ndarray]
  ground_height: Optional[float]
  ground_material: str
  systems: list
  actuators: list
  ignored: list
  filter_parent: bool = True   # <option><flag filterparent>
  ground_collision_mask: int = -1   # the plane's bits (collision_bits); -1: collides with all
  solver_iterations: Optional[int] = None   # <option solver="PGS" iterations> (MuJoCo: 100)


def is_mjcf(path):
  """Whether `path` is an XML file whose root element is <mujoco>."""
  try:
    with open(path, "rb") as file:   # closed when the first element returns early
      for _, element in etree.iterparse(file, events=("start",)):
        return element.tag == "mujoco"
  except (OSError, etree.XMLSyntaxError):
    return False
  return False


class _Reader:
  def __init__(self, path):
    self.path = os.path.abspath(str(path))
    try:
      self.root = etree.parse(self.path, etree.XMLParser(remove_comments=True)).getroot()
    except OSError:
      raise FileNotFoundError(f"{path}: MJCF file not found") from None
    except etree.XMLSyntaxError as error:
      raise ValueError(f"{path}: malformed XML (line {error.lineno}): {error.msg}") from None
    self.ignored = []
    self.body_count = 0
    self.collision_classes = []     # (colliding Geometry, (contype, conaffinity))
    compiler = self.root.find("compiler")
    attrs = dict(compiler.attrib) if compiler is not None else {}
    self.degrees = attrs.get("angle", "degree") == "degree"
    self.eulerseq = attrs.get("eulerseq", "xyz")
    if attrs.get("coordinate", "local") != "local":
      raise self.error(compiler, "coordinate='global' is not supported (MuJoCo 3 removed it)")
    self.inertia_from_geom = attrs.get("inertiafromgeom", "auto")
    self.autolimits = attrs.get("autolimits", "true") == "true"
    directory = os.path.dirname(self.path)
    self.mesh_dir = os.path.join(directory, attrs.get("meshdir", attrs.get("assetdir", "")))
    self.defaults = {}
    for default in self.root.findall("default"):
      self._read_defaults(default, {})
    self.mesh_assets, self.materials, self.meshes = {}, {}, {}
    for asset in self.root.findall("asset"):
      for child in asset:
        if child.tag == "mesh":
          name = child.get("name") or os.path.splitext(os.path.basename(child.get("file", "")))[0]
          self.mesh_assets[name] = child
        elif child.tag == "material":
          self.materials[child.get("name", "")] = child
        elif child.tag in ("hfield", "skin"):
          self.ignored.append(f"<asset><{child.tag}>")

  def error(self, element, message):
    tag = element.tag if element is not None else "mujoco"
    line = element.sourceline if element is not None else "?"
    return ValueError(f"{self.path}, line {line}, <{tag}>: {message}")

  def note_ignored(self, tag, values, names):
    """Lists each of `names` present in `values` as "`tag` `name`" (e.g. "geom margin") in
    the load warning."""
    self.ignored.extend(f"{tag} {name}" for name in names if name in values)

  # ---- defaults --------------------------------------------------------------------------
  def _read_defaults(self, element, inherited):
    name = element.get("class", "main")
    own = {tag: dict(values) for tag, values in inherited.items()}
    for child in element:
      if not isinstance(child.tag, str) or child.tag == "default":
        continue
      own.setdefault(child.tag, {}).update(child.attrib)
    self.defaults[name] = own
    for child in element.findall("default"):
      self._read_defaults(child, own)

  def attributes(self, element, childclass):
    """The element's attributes over its class defaults (own `class`, else the enclosing
    body's `childclass`, else "main")."""
    name = element.get("class") or childclass or "main"
    if name not in self.defaults and name != "main":
      raise self.error(element, f"unknown default class '{name}'")
    tag = "joint" if element.tag == "freejoint" else element.tag
    values = dict(self.defaults.get(name, {}).get(tag, {}))
    values.update(element.attrib)
    return values

  # ---- assets ---------------------------------------------------------------------------
  def mesh(self, geom, values):
    """The _Mesh of a mesh geom's `mesh` asset (loaded once per asset)."""
    name = values.get("mesh")
    if name is None:
      raise self.error(geom, "a mesh geom needs a 'mesh' attribute")
    if name not in self.mesh_assets:
      raise self.error(geom, f"unknown mesh asset '{name}'")
    if name not in self.meshes:
      self.meshes[name] = self._load_mesh(self.mesh_assets[name])
    return self.meshes[name]

  def _load_mesh(self, element):
    import trimesh
    values = self.attributes(element, None)
    scale = self.numbers(element, values, "scale", 3, default=[1.0, 1.0, 1.0])
    for unsupported in ("refpos", "refquat"):
      if unsupported in values:
        raise self.error(element, f"attribute '{unsupported}' is not supported")
    if "file" in values:
      path = os.path.join(self.mesh_dir, values["file"])
      if not os.path.isfile(path):
        raise self.error(element, f"mesh file '{values['file']}' not found (looked for {path})")
      try:
        vertices, faces = collision_mesh.read_mesh(path)
      except ValueError as error:
        raise self.error(element, str(error)) from None
    elif "vertex" in values:
      path = ""
      vertices = self.numbers(element, values, "vertex").reshape(-1, 3)
      if "face" in values:
        faces = self.numbers(element, values, "face").reshape(-1, 3).astype(np.int64)
      else:   # MuJoCo: a point cloud is replaced by its convex hull
        hull = trimesh.Trimesh(vertices, process=False).convex_hull
        vertices, faces = np.asarray(hull.vertices), np.asarray(hull.faces)
    else:
      raise self.error(element, "a mesh asset needs 'file' or 'vertex'")
    if not np.all(np.isfinite(vertices)) or len(faces) == 0:
      raise self.error(element, "mesh has no faces or non-finite vertices")
    mode = values.get("inertia", "legacy")
    if mode not in mesh_inertia.MODES:
      raise self.error(element, f"inertia='{mode}' is not supported (one of "
                                f"{', '.join(mesh_inertia.MODES)})")
    try:
      volume, com, inertia = mesh_inertia.mass_properties(vertices * scale, faces, mode)
    except ValueError as error:
      raise self.error(element, str(error)) from None
    return _Mesh(path=path, vertices=vertices, scale=scale, volume=volume, com=com,
                 inertia_unit=inertia / volume)

  def color(self, geom, values):
    """(4,) RGBA a MuJoCo renderer shows a geom in: its own `rgba` when set (class defaults
    included) and not MuJoCo's default, else its material's, else the default grey."""
    if "rgba" in values:
      rgba = self.numbers(geom, values, "rgba", 4)
      if "material" not in values or not np.array_equal(rgba, _DEFAULT_RGBA):
        return rgba
    if "material" in values:
      material = self.materials.get(values["material"])
      if material is None:
        raise self.error(geom, f"unknown material '{values['material']}'")
      return self.numbers(material, self.attributes(material, None), "rgba", 4,
                          default=[1.0, 1.0, 1.0, 1.0])
    return np.array(_DEFAULT_RGBA)

  # ---- numbers and frames --------------------------------------------------------------
  def numbers(self, element, values, name, count=None, default=None):
    raw = values.get(name)
    if raw is None:
      if default is None:
        raise self.error(element, f"attribute '{name}' is required")
      return np.asarray(default, np.float64)
    try:
      result = np.asarray([float(v) for v in raw.split()], np.float64)
    except ValueError:
      raise self.error(element, f"attribute '{name}': '{raw}' is not a list of numbers") \
          from None
    if count is not None and result.shape[0] != count:
      raise self.error(element, f"attribute '{name}' needs {count} numbers, got "
                                f"{result.shape[0]}")
    if not np.all(np.isfinite(result)):
      raise self.error(element, f"attribute '{name}' must be finite, got '{raw}'")
    return result

  def angle(self, value):
    return math.radians(value) if self.degrees else value

  def rotation(self, element, values):
    """(3, 3) orientation from quat / axisangle / euler / xyaxes / zaxis (identity if none)."""
    if "quat" in values:
      q = self.numbers(element, values, "quat", 4)
      norm = np.linalg.norm(q)
      if norm < 1e-12:
        raise self.error(element, "attribute 'quat' must not be zero")
      return _quat_to_matrix(q / norm)
    if "axisangle" in values:
      a = self.numbers(element, values, "axisangle", 4)
      return _axis_angle(a[:3], self.angle(a[3]), element, self)
    if "euler" in values:
      angles = [self.angle(v) for v in self.numbers(element, values, "euler", 3)]
      rotation = np.eye(3)
      for axis_name, angle in zip(self.eulerseq, angles):
        axis = np.eye(3)["xyz".index(axis_name.lower())]
        step = _axis_angle(axis, angle, element, self)
        # lowercase: intrinsic (rotate about the moving axes), uppercase: extrinsic.
        rotation = rotation @ step if axis_name.islower() else step @ rotation
      return rotation
    if "xyaxes" in values:
      v = self.numbers(element, values, "xyaxes", 6)
      x = v[:3] / np.linalg.norm(v[:3])
      y = v[3:] - x * (x @ v[3:])
      y = y / np.linalg.norm(y)
      return np.stack([x, y, np.cross(x, y)], axis=1)
    if "zaxis" in values:
      return _z_to(self.numbers(element, values, "zaxis", 3))
    return np.eye(3)


def _quat_to_matrix(q):
  w, x, y, z = q
  return np.array([
      [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
      [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
      [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _matrix_to_quat(r):
  w = math.sqrt(max(0.0, 1.0 + r[0, 0] + r[1, 1] + r[2, 2])) / 2
  x = math.sqrt(max(0.0, 1.0 + r[0, 0] - r[1, 1] - r[2, 2])) / 2
  y = math.sqrt(max(0.0, 1.0 - r[0, 0] + r[1, 1] - r[2, 2])) / 2
  z = math.sqrt(max(0.0, 1.0 - r[0, 0] - r[1, 1] + r[2, 2])) / 2
  x = math.copysign(x, r[2, 1] - r[1, 2])
  y = math.copysign(y, r[0, 2] - r[2, 0])
  z = math.copysign(z, r[1, 0] - r[0, 1])
  q = np.array([w, x, y, z])
  return q / np.linalg.norm(q)


def _axis_angle(axis, angle, element, reader):
  if np.linalg.norm(axis) < 1e-12:
    raise reader.error(element, "rotation axis must not be zero")
  return axis_angle_matrix(axis, angle)


def _z_to(direction):
  """A rotation whose z axis is `direction` (MuJoCo's minimal rotation from +z)."""
  z = direction / np.linalg.norm(direction)
  axis = np.cross([0.0, 0.0, 1.0], z)
  s, c = np.linalg.norm(axis), z[2]
  if s < 1e-12:
    return np.eye(3) if c > 0 else np.diag([1.0, -1.0, -1.0])
  k = axis / s
  skew = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
  return np.eye(3) + s * skew + (1 - c) * skew @ skew


# ---- geoms ---------------------------------------------------------------------------------
def _geom(reader, element, values):
  """(Geometry (None for a plane), whether it collides, mass, centre of mass in the body frame,
  inertia about that centre in the body frame)."""
  kind = values.get("type", "sphere")
  reader.note_ignored("geom", values, _IGNORED_GEOM)
  size = reader.numbers(element, values, "size", default=[0.0, 0.0, 0.0])
  if "mesh" in values and kind != "mesh":
    raise reader.error(element, f"fitting a {kind} to mesh '{values['mesh']}' is not supported")
  if "fromto" in values:
    if kind not in ("capsule", "cylinder", "box", "ellipsoid"):
      raise reader.error(element, f"fromto is not allowed on a {kind}")
    ends = reader.numbers(element, values, "fromto", 6)
    axis = ends[:3] - ends[3:]   # MuJoCo's geom z axis points from `to` to `from`
    half = np.linalg.norm(axis) / 2
    if half <= 0:
      raise reader.error(element, "fromto's two points coincide")
    pos, rot = (ends[:3] + ends[3:]) / 2, _z_to(axis)
    # MuJoCo: radius and half-length for capsules and cylinders; (r, r, half) for the others.
    size = np.array([size[0], half] if kind in ("capsule", "cylinder") else
                    [size[0], size[0], half])
  else:
    pos = reader.numbers(element, values, "pos", 3, default=[0, 0, 0])
    rot = reader.rotation(element, values)
  if kind == "plane":
    return None, False, 0.0, pos, np.zeros((3, 3))
  needed = {"sphere": 1, "capsule": 2, "cylinder": 2, "box": 3, "ellipsoid": 3}.get(kind, 0)
  if size.shape[0] < needed or np.any(size[:needed] <= 0):
    raise reader.error(element, f"a {kind} needs {needed} positive size numbers, got "
                                f"'{values.get('size', '')}'")
  com = np.zeros(3)                        # in the geom frame
  if kind == "mesh":
    mesh = reader.mesh(element, values)
    volume, com, inertia_unit = mesh.volume, mesh.com, mesh.inertia_unit
    geometry = Geometry("mesh", pos, rot, filename=mesh.path, scale=mesh.scale,
                        vertices=mesh.vertices)
  elif kind == "sphere":
    r = size[0]
    volume, inertia_unit = 4 / 3 * math.pi * r**3, np.full(3, 2 / 5 * r * r)
    geometry = Geometry("sphere", pos, rot, radius=r)
  elif kind == "capsule":
    r, h = size[0], 2 * size[1]
    cylinder, sphere = math.pi * r * r * h, 4 / 3 * math.pi * r**3
    volume = cylinder + sphere
    # MuJoCo's capsule: a cylinder and two hemispheres displaced along z.
    axial = (cylinder * r * r / 2 + sphere * 2 / 5 * r * r) / volume
    lateral = (cylinder * (3 * r * r + h * h) / 12
               + sphere * (2 / 5 * r * r + h * (3 * r + 2 * h) / 8)) / volume
    inertia_unit = np.array([lateral, lateral, axial])
    geometry = Geometry("capsule", pos, rot, radius=r, length=h)
  elif kind == "cylinder":
    r, h = size[0], 2 * size[1]
    volume = math.pi * r * r * h
    inertia_unit = np.array([(3 * r * r + h * h) / 12, (3 * r * r + h * h) / 12, r * r / 2])
    geometry = Geometry("cylinder", pos, rot, radius=r, length=h)
  elif kind == "box":
    full = 2 * size[:3]
    volume = float(np.prod(full))
    x, y, z = full
    inertia_unit = np.array([y * y + z * z, x * x + z * z, x * x + y * y]) / 12
    geometry = Geometry("box", pos, rot, size=full)
  elif kind == "ellipsoid":
    a, b, c = size[:3]
    volume = 4 / 3 * math.pi * a * b * c
    inertia_unit = np.array([b * b + c * c, a * a + c * c, a * a + b * b]) / 5
    geometry = Geometry("ellipsoid", pos, rot, size=np.array(size[:3]))
  else:
    raise reader.error(element, f"geom type '{kind}' is not supported by raisim_jax's MJCF "
                                f"reader (plane, sphere, capsule, cylinder, box, ellipsoid, "
                                f"mesh)")
  if "mass" in values:
    mass = float(reader.numbers(element, values, "mass", 1)[0])
  else:
    mass = float(reader.numbers(element, values, "density", 1, [_DEFAULT_DENSITY])[0]) * volume
  geometry.name = values.get("name", "")
  geometry.sourceline = element.sourceline
  geometry.material = friction_material(reader, element, values)
  geometry.color = reader.color(element, values)
  contype_conaffinity = _collision_class(reader, element, values)
  collides = contype_conaffinity != (0, 0)
  if collides:
    reader.collision_classes.append((geometry, contype_conaffinity))
  inertia = mass * (np.diag(inertia_unit) if np.ndim(inertia_unit) == 1 else inertia_unit)
  return geometry, collides, mass, pos + rot @ com, rot @ inertia @ rot.T


def friction_material(reader, element, values):
  """The contact material standing for a geom's sliding friction (MuJoCo default 1) and
  whether it is frictionless (condim 1): "mjcf_friction_<friction>" or
  "mjcf_friction_<friction>_condim1". condim 4 and 6 (torsional and rolling friction) keep
  their sliding friction and are listed as ignored."""
  friction = float(reader.numbers(element, values, "friction", default=[1.0])[0])
  if friction < 0:
    raise reader.error(element, f"friction must not be negative, got {friction}")
  condim = values.get("condim", "3").strip()
  if condim not in ("1", "3", "4", "6"):
    raise reader.error(element, f"condim must be 1, 3, 4 or 6, got '{condim}'")
  if condim in ("4", "6"):
    reader.ignored.append(f"geom condim {condim} (torsional/rolling friction)")
  return f"mjcf_friction_{friction!r}" + ("_condim1" if condim == "1" else "")


def pair_friction(first, second):
  """MuJoCo's friction coefficient of a contact between geoms of the `friction_material`s
  `first` and `second`: the contact has the larger condim of the two and the larger friction,
  so it is frictionless only when both geoms have condim 1."""
  def parse(name):
    body = name[len("mjcf_friction_"):]
    return float(body.removesuffix("_condim1")), body.endswith("_condim1")
  (f1, frictionless1), (f2, frictionless2) = parse(first), parse(second)
  return 0.0 if frictionless1 and frictionless2 else max(f1, f2)


def _combine(parts):
  """Inertial of point-free rigid parts [(mass, com, inertia about com, body frame)]."""
  mass = sum(p[0] for p in parts)
  if mass <= 0:
    return Inertial()
  com = sum(p[0] * p[1] for p in parts) / mass
  inertia = np.zeros((3, 3))
  for m, c, i in parts:
    d = c - com
    inertia += i + m * (d @ d * np.eye(3) - np.outer(d, d))
  return Inertial(mass=mass, com=com, inertia=inertia)


# ---- bodies and joints ---------------------------------------------------------------------
def _read_body(reader, element, parent, childclass, system, pending_links, pending_joints,
               top_level):
  """Adds the links/joints of `element` (an MJCF <body>) under link `parent`."""
  values = dict(element.attrib)
  childclass = element.get("childclass", childclass)
  reader.body_count += 1       # MuJoCo's body id (document order, the worldbody is 0)
  name = element.get("name") or f"body{reader.body_count}"
  pos = reader.numbers(element, values, "pos", 3, default=[0, 0, 0])
  rot = reader.rotation(element, values)
  link = LinkSpec(name=name, sourceline=element.sourceline)
  geom_parts = []
  joints = []
  for child in element:
    if not isinstance(child.tag, str):
      continue
    if child.tag in ("joint", "freejoint"):
      joints.append(child)
    elif child.tag == "geom":
      gvalues = reader.attributes(child, childclass)
      geometry, collides, mass, com, inertia = _geom(reader, child, gvalues)
      if geometry is None:
        raise reader.error(child, "a plane must belong to the worldbody")
      geometry.link = name
      geometry.name = geometry.name or f"{name}/{len(link.visuals)}"
      if collides:
        link.collisions.append(geometry)
        system.filters.setdefault(name, []).append(_collision_class(reader, child, gvalues))
      link.visuals.append(geometry)
      geom_parts.append((mass, com, inertia))
    elif child.tag == "inertial":
      ivalues = dict(child.attrib)
      imass = float(reader.numbers(child, ivalues, "mass", 1)[0])
      ipos = reader.numbers(child, ivalues, "pos", 3)
      irot = reader.rotation(child, ivalues)
      if "diaginertia" in ivalues:
        local = np.diag(reader.numbers(child, ivalues, "diaginertia", 3))
      else:
        f = reader.numbers(child, ivalues, "fullinertia", 6)
        local = np.array([[f[0], f[3], f[4]], [f[3], f[1], f[5]], [f[4], f[5], f[2]]])
      link.inertial = Inertial(mass=imass, com=ipos, inertia=irot @ local @ irot.T)
    elif child.tag in _VISUAL:
      continue
    elif child.tag != "body":
      reader.ignored.append(f"<{child.tag}>")
  explicit = element.find("inertial") is not None
  if not explicit or reader.inertia_from_geom == "true":
    if geom_parts and (reader.inertia_from_geom != "false"):
      link.inertial = _combine(geom_parts)
  pending_links.append(link)

  free = [j for j in joints if j.tag == "freejoint"
          or reader.attributes(j, childclass).get("type", "hinge") == "free"]
  if free:
    if not top_level or len(joints) != 1:
      raise reader.error(free[0], "a free joint must be the only joint of a top-level body")
    system.floating = True
    system.base_pos, system.base_quat = pos, _matrix_to_quat(rot)
    fvalues = reader.attributes(free[0], childclass)
    nonzero = {k for k in _FREE_JOINT_TERMS
               if k in fvalues and reader.numbers(free[0], fvalues, k, 1)[0] != 0.0}
    reader.note_ignored("free joint", nonzero, _FREE_JOINT_TERMS)
    return name, childclass
  previous, anchor = parent, np.zeros(3)
  for k, joint in enumerate(joints):
    jvalues = reader.attributes(joint, childclass)
    kind = jvalues.get("type", "hinge")
    if kind not in _JOINT_TYPES:
      raise reader.error(joint, f"joint type '{kind}' is not supported")
    reader.note_ignored("joint", jvalues, _IGNORED_JOINT)
    jname = jvalues.get("name") or f"{name}_joint{k}"
    jpos = reader.numbers(joint, jvalues, "pos", 3, default=[0, 0, 0])
    axis = reader.numbers(joint, jvalues, "axis", 3, default=[0, 0, 1])
    if np.linalg.norm(axis) < 1e-12:
      raise reader.error(joint, "attribute 'axis' must not be zero")
    spec = JointSpec(name=jname, type=_JOINT_TYPES[kind], parent=previous,
                     child=f"{name}/{jname}", axis=axis / np.linalg.norm(axis),
                     sourceline=joint.sourceline)
    if k == 0:
      spec.pos, spec.rot = pos + rot @ jpos, rot
    else:
      spec.pos = jpos - anchor
    scale = (math.pi / 180 if reader.degrees else 1.0) if kind == "hinge" else 1.0
    ref = float(jvalues.get("ref", "0")) * scale
    limited = jvalues.get("limited", "auto")
    if limited == "true" or (limited == "auto" and reader.autolimits and "range" in jvalues):
      if kind == "ball":
        reader.ignored.append("ball joint range")
      else:
        low, high = reader.numbers(joint, jvalues, "range", 2) * scale
        spec.lower, spec.upper = low - ref, high - ref
    spec.damping = float(jvalues.get("damping", "0"))
    spec.rotor_inertia = float(jvalues.get("armature", "0"))
    spec.stiffness = float(jvalues.get("stiffness", "0"))
    if spec.stiffness and kind != "ball":
      spec.spring_mount = np.array([float(jvalues.get("springref", "0")) * scale - ref])
    system.refs[jname] = ref if kind != "ball" else 0.0
    pending_joints.append(spec)
    pending_links.append(LinkSpec(name=spec.child, sourceline=joint.sourceline))
    previous, anchor = spec.child, jpos
  fixed = JointSpec(name=f"{name}/anchor" if joints else f"{name}/weld", type=JOINT_FIXED,
                    parent=previous, child=name, sourceline=element.sourceline)
  if joints:
    fixed.pos = -anchor
  else:
    fixed.pos, fixed.rot = pos, rot
  pending_joints.append(fixed)
  return name, childclass


def _read_tree(reader, element, parent, childclass, system, top_level=False):
  name, childclass = _read_body(reader, element, parent, childclass, system, system.links,
                                system.joints, top_level)
  system.parents[name] = parent
  for child in element.findall("body"):
    _read_tree(reader, child, name, childclass, system)


def load(path):
  """MjcfModel of the MJCF file `path` (warns once about ignored elements).

  Raises:
    FileNotFoundError, ValueError: naming the file, the line and the element.
  """
  reader = _Reader(path)
  root = reader.root
  time_step = gravity = iterations = None
  option = root.find("option")
  if option is not None:
    values = dict(option.attrib)
    if "timestep" in values:
      time_step = float(reader.numbers(option, values, "timestep", 1)[0])
    if "gravity" in values:
      gravity = reader.numbers(option, values, "gravity", 3)
    if values.get("solver") == "PGS":
      iterations = _sweeps(reader, option, values.pop("iterations", "100"))
      values.pop("solver")
    reader.note_ignored("option", values, sorted(set(values) - set(_OPTION_READ)))
  flag = root.find("option/flag")
  filter_parent = flag is None or flag.get("filterparent", "enable") != "disable"
  if flag is not None:
    reader.note_ignored("option/flag", flag.attrib, sorted(set(flag.attrib) - {"filterparent"}))
  for child in root:
    if isinstance(child.tag, str) and child.tag in _IGNORED:
      reader.ignored.append(f"<{child.tag}>")
  worldbody = root.find("worldbody")
  if worldbody is None:
    raise reader.error(root, "no <worldbody>")
  ground, ground_material, systems, plane_class = None, "default", [], DEFAULT_CLASS
  static_link = LinkSpec(name="worldbody", sourceline=worldbody.sourceline)
  for child in worldbody:
    if not isinstance(child.tag, str):
      continue
    if child.tag == "geom":
      values = reader.attributes(child, None)
      if values.get("type", "sphere") != "plane":
        _add_static_geom(reader, child, values, static_link)
        continue
      normal = reader.rotation(child, values)[:, 2]
      if not np.allclose(normal, [0, 0, 1]):
        raise reader.error(child, "only a horizontal plane (the ground) is supported")
      ground = float(reader.numbers(child, values, "pos", 3, [0, 0, 0])[2])
      ground_material = friction_material(reader, child, values)
      plane_class = _collision_class(reader, child, values)
      reader.note_ignored("geom", values, _IGNORED_GEOM)
    elif child.tag == "body":
      system = MjcfSystem(name=child.get("name", f"body{len(systems)}"), links=[],
                          joints=[], floating=False, base_pos=np.zeros(3),
                          base_quat=np.array([1.0, 0, 0, 0]), refs={})
      if not _is_floating(reader, child):
        system.links.append(LinkSpec(name="world", sourceline=child.sourceline))
        parent = "world"
      else:
        parent = None
      _read_tree(reader, child, parent, child.get("childclass"), system, top_level=True)
      systems.append(system)
    elif child.tag in _VISUAL:
      continue
    else:
      reader.ignored.append(f"<worldbody><{child.tag}>")
  if static_link.visuals:
    weld = JointSpec(name="worldbody/weld", type=JOINT_FIXED, parent="world",
                     child=static_link.name, sourceline=worldbody.sourceline)
    world_link = LinkSpec(name="world", sourceline=worldbody.sourceline)
    systems.append(MjcfSystem(name=STATIC_SYSTEM, links=[world_link, static_link],
                              joints=[weld], floating=False, base_pos=np.zeros(3),
                              base_quat=np.array([1.0, 0, 0, 0]), refs={}))
  actuators = []
  actuator = root.find("actuator")
  if actuator is not None:
    for motor in actuator:
      if not isinstance(motor.tag, str):
        continue
      if motor.tag != "motor" or "joint" not in motor.attrib:
        reader.ignored.append(f"<actuator><{motor.tag}>")
        continue
      values = reader.attributes(motor, None)
      limited = values.get("ctrllimited", "auto")
      ctrl_range = None
      if limited == "true" or (limited == "auto" and reader.autolimits
                               and "ctrlrange" in values):
        ctrl_range = tuple(reader.numbers(motor, values, "ctrlrange", 2))
      gear = float(reader.numbers(motor, values, "gear", default=[1.0])[0])
      actuators.append(Actuator(values.get("name", ""), values["joint"], gear, ctrl_range))
  ground_mask = _assign_collision_bits(reader, plane_class)
  if reader.ignored:
    warnings.warn(f"{reader.path}: ignored by raisim_jax's MJCF reader: "
                  f"{', '.join(sorted(set(reader.ignored)))}", stacklevel=3)
  return MjcfModel(path=reader.path, time_step=time_step, gravity=gravity,
                   ground_height=ground, ground_material=ground_material, systems=systems,
                   actuators=actuators,
                   ignored=sorted(set(reader.ignored)), filter_parent=filter_parent,
                   solver_iterations=iterations, ground_collision_mask=ground_mask)


# ---- collision filtering -------------------------------------------------------------------
DEFAULT_CLASS = (1, 1)      # MuJoCo's default (contype, conaffinity)
STATIC_BIT = 63             # RaiSim's collision group of static objects (the ground)
_MAX_CLASS_BITS = 63        # group bits 0..62 for the geoms' (contype, conaffinity) pairs


def mujoco_collides(first, second):
  """MuJoCo's test on two geoms' (contype, conaffinity): (t1 & a2) | (t2 & a1) != 0."""
  return bool((first[0] & second[1]) | (second[0] & first[1]))


def collision_bits(classes, plane_class):
  """RaiSim (group, mask) bits that reproduce MuJoCo's filter under RaiSim's AND rule, or None
  where every pair of `classes` (distinct (contype, conaffinity) of the colliding geoms),
  MuJoCo's default (1, 1) and `plane_class` collide (RaiSim's default bits then do the same).

  Each class gets one group bit (bit 0 for (1, 1), so that an object added later with
  RaiSim's default group behaves as a default MuJoCo geom); its mask holds the bits of the
  classes it collides with, and STATIC_BIT where it collides with the plane (the ground's
  group; with no plane, as with a default geom). MuJoCo's test is symmetric, so "A accepts B
  and B accepts A" is exactly it. Returns ({class: (group, mask)}, the ground's mask)."""
  ordered = [DEFAULT_CLASS] + sorted(set(classes) - {DEFAULT_CLASS})
  everything = ordered + [plane_class]
  if all(mujoco_collides(a, b) for a in everything for b in everything):
    return None
  if len(ordered) > _MAX_CLASS_BITS:
    raise ValueError(f"{len(ordered)} distinct (contype, conaffinity) pairs: at most "
                     f"{_MAX_CLASS_BITS} can be mapped to RaiSim's 64 collision bits")
  bit = {c: 1 << k for k, c in enumerate(ordered)}
  bits = {c: (bit[c], sum(bit[o] for o in ordered if mujoco_collides(c, o))
              | ((1 << STATIC_BIT) if mujoco_collides(c, plane_class) else 0))
          for c in ordered}
  ground_mask = sum(bit[o] for o in ordered if mujoco_collides(plane_class, o))
  return bits, ground_mask


def _assign_collision_bits(reader, plane_class):
  """Sets each colliding geom's collision bits (`collision_bits`) where MuJoCo's filter needs
  them; returns the ground's collision mask (-1: collides with everything)."""
  try:
    mapped = collision_bits([c for _, c in reader.collision_classes], plane_class)
  except ValueError as error:
    raise ValueError(f"{reader.path}: {error}") from None
  if mapped is None:
    return -1
  bits, ground_mask = mapped
  for geometry, contype_conaffinity in reader.collision_classes:
    geometry.collision_group, geometry.collision_mask = bits[contype_conaffinity]
  return ground_mask


def _collision_class(reader, element, values):
  """A geom's (contype, conaffinity): non-negative 32-bit integers (MuJoCo's defaults 1)."""
  out = []
  for name in ("contype", "conaffinity"):
    text = values.get(name, "1").strip()
    try:
      value = int(text)
    except ValueError:
      value = -1
    if not 0 <= value < 2 ** 32:
      raise reader.error(element, f"attribute '{name}' must be a non-negative 32-bit integer, "
                                  f"got '{text}'")
    out.append(value)
  return tuple(out)


def _add_static_geom(reader, element, values, link):
  """Adds a worldbody geom other than a plane to `link` ("worldbody", welded to the world in
  the fixed system STATIC_SYSTEM): geoms welded to MuJoCo's world body are static, and collide
  with every other body (MuJoCo's parent filter leaves the world body out)."""
  geometry, collides, _, _, _ = _geom(reader, element, values)
  geometry.link = link.name
  geometry.name = geometry.name or f"{link.name}/{len(link.visuals)}"
  if collides:
    link.collisions.append(geometry)
  link.visuals.append(geometry)


def _sweeps(reader, option, text):
  """`<option iterations>` of a PGS model: MuJoCo's PGS iteration is one Gauss-Seidel sweep
  over the constraints, the unit of the contact solver's maxIter."""
  try:
    count = int(text)
  except ValueError:
    count = 0
  if count < 1:
    raise reader.error(option, f"iterations must be a positive integer, got '{text}'")
  return count


def _is_floating(reader, body):
  for child in body:
    if child.tag == "freejoint":
      return True
    if child.tag == "joint":
      if reader.attributes(child, body.get("childclass")).get("type", "hinge") == "free":
        return True
  return False

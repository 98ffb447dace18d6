"""RaiSim world configuration files (XML) read into a plain description of what to build.

The format (world.txt, "World Configuration File"; material_system.txt's example):

    <raisim version="1.0">
      <params> <height value="2"/> </params>             (or <param name= value=>)
      <timeStep value="0.001"/>  <gravity value="0 0 -9.81"/>  <erp erp="0.1"/>
      <material>
        <default friction="0.8" restitution="0" restitution_threshold="0"/>
        <pair_prop name1="steel" name2="rubber" friction="0.8" restitution="0.15"
                   restitution_threshold="0.001"/>
      </material>
      <objects>
        <ground name="floor" height="0" material="steel"/>
        <sphere name="ball" mass="1" material="rubber" collision_group="collision[1]"
                com="0 0 0" (optional: the COM in the shape frame, as setCom)>
          <dim radius="0.5"/>  <inertia xx= xy= xz= yy= yz= zz=/>  (optional)
          <state pos="0 0 @@height" quat="1 0 0 0" lin_vel="0 0 0" ang_vel="0 0 0"/>
        </sphere>
        <box> <dim x= y= z=/> ...   <cylinder>, <capsule>, <cone>: <dim radius= height=/>
        <compound mass= com=> <inertia/> <children> <box material=> <dim/>
          <state pos= quat=/> (or rot= 9 numbers, row-major) </box> ... </children>
          <state/> </compound>
        <articulated_system name= urdf_path= res_dir= collision_group= collision_mask=>
          <state qpos="..." qvel="..."/>  <pd p_gain= d_gain= p_target= d_target=/>
        </articulated_system>
        <array idx="@@i" start="0" end="3" increment="1"> ...@@i... </array>
        <include path="other.xml"/>
      </objects>
    </raisim>

Both spellings of every name are read (`timeStep`/`time_step`, `linVel`/`lin_vel`,
`articulatedSystem`/`articulated_system`, ...): names are normalized to snake_case.
`[THIS_DIR]` in any attribute is the directory of the file it is written in; `@@name` and
`{expressions}` are io/template.py's, with the caller's params over the file's <params>;
`<array>` repeats its children for idx = start, start + increment, ... while idx < end (a C
for loop; *interpretation*: the spec does not say whether `end` is included); an object with
`exist="false"` (or 0) is skipped. Vectors may be separated by spaces or commas. Collision
groups and masks are integers or `collision[i|j|...]` (bits COLLISION(i) | COLLISION(j)),
`collision[-1]` every group.

Elements this engine does not simulate are refused with an error naming element and line
(`<wire>`, `<mesh>`, `<heightmap>`, an `erp2` other than 0); visual-only ones (`<camera>`,
`appearance` attributes are kept) produce one warning listing what was ignored.
"""

import dataclasses
import os
import re
import warnings
from typing import Optional

import numpy as np
from lxml import etree

from raisim_jax.io import template
from raisim_jax.math import quaternion

ALL_GROUPS = -1
_SHAPES = {"sphere": ("radius",), "box": ("x", "y", "z"), "cylinder": ("radius", "height"),
           "capsule": ("radius", "height"), "cone": ("radius", "height")}
_REFUSED = {
    "wire": "wires (constraints between objects) are not simulated by raisim_jax",
    "mesh": "<mesh> objects are not read from world files yet (World.addMesh adds them)",
    "heightmap": "height maps are not supported by raisim_jax's World yet",
}
_VISUAL_ONLY = {"camera", "visuals", "light", "background", "appearance"}


def snake_case(name):
  """`timeStep` -> `time_step`; already snake_case names are kept (`timestep` too)."""
  return re.sub(r"(?<=[a-z0-9])([A-Z])", lambda m: "_" + m.group(1).lower(), name)


@dataclasses.dataclass
class State:
  """Initial pose and velocity of a single body (world frame)."""
  pos: np.ndarray
  quat: np.ndarray
  lin_vel: np.ndarray
  ang_vel: np.ndarray


@dataclasses.dataclass
class CompoundChild:
  kind: str
  dims: dict
  material: str
  pos: np.ndarray
  rotation: np.ndarray        # (3, 3) child frame -> compound frame
  appearance: str


@dataclasses.dataclass
class ObjectSpec:
  """One object of the file. `dims` by the shape's dimension names; `inertia` (3, 3) body
  frame or None (from the geometry); `state` for single bodies; `qpos`, `qvel`, PD fields and
  `urdf_path` / `res_dir` for articulated systems; `where` names file and line."""
  kind: str
  where: str
  name: str = ""
  mass: float = 0.0
  dims: dict = dataclasses.field(default_factory=dict)
  material: str = "default"
  collision_group: int = 1
  collision_mask: int = ALL_GROUPS
  body_type: str = "dynamic"
  appearance: str = ""
  inertia: Optional[np.ndarray] = None
  com: Optional[np.ndarray] = None
  state: Optional[State] = None
  height: float = 0.0
  children: list = dataclasses.field(default_factory=list)
  urdf_path: str = ""
  res_dir: str = ""
  qpos: Optional[np.ndarray] = None
  qvel: Optional[np.ndarray] = None
  p_gain: Optional[np.ndarray] = None
  d_gain: Optional[np.ndarray] = None
  p_target: Optional[np.ndarray] = None
  d_target: Optional[np.ndarray] = None


@dataclasses.dataclass
class WorldFile:
  """What a world file asks for; None: not given (the World keeps its default)."""
  path: str
  time_step: Optional[float] = None
  gravity: Optional[np.ndarray] = None
  erp: Optional[float] = None
  default_material: Optional[tuple] = None          # (friction, restitution, threshold)
  # (m1, m2, friction, restitution, threshold, static friction, its velocity) (None: unset)
  material_pairs: list = dataclasses.field(default_factory=list)
  objects: list = dataclasses.field(default_factory=list)
  ignored: list = dataclasses.field(default_factory=list)


class _Element:
  """An element with its attributes substituted and normalized (snake_case names)."""

  def __init__(self, node, scope, source, this_dir):
    self.tag = snake_case(node.tag) if isinstance(node.tag, str) else ""
    self.node = node
    self.line = node.sourceline
    self.source = source
    self.where = f"{source}, line {self.line}, <{node.tag}>"
    self.attributes = {}
    for key, raw in node.attrib.items():
      if self.tag == "array" and key == "idx":
        self.attributes[key] = raw           # the loop variable's name, defined by the array
        continue
      value = raw.replace("[THIS_DIR]", this_dir)
      value = template.substitute(value, scope, f"{source}, line {self.line}: ")
      self.attributes[snake_case(key)] = value

  def error(self, message):
    return ValueError(f"{self.where}: {message}")

  def text(self, name, default=None):
    if name in self.attributes:
      return self.attributes[name]
    if default is None:
      raise self.error(f"attribute '{name}' is required")
    return default

  def number(self, name, default=None, positive=False, nonnegative=False):
    raw = self.attributes.get(name)
    if raw is None:
      if default is None:
        raise self.error(f"attribute '{name}' is required")
      return float(default)
    try:
      value = float(raw)
    except ValueError:
      raise self.error(f"attribute '{name}': '{raw}' is not a number") from None
    if not np.isfinite(value):
      raise self.error(f"attribute '{name}' must be finite, got {raw}")
    if positive and value <= 0:
      raise self.error(f"attribute '{name}' must be positive, got {raw}")
    if nonnegative and value < 0:
      raise self.error(f"attribute '{name}' must not be negative, got {raw}")
    return value

  def vector(self, name, size=None, default=None):
    raw = self.attributes.get(name)
    if raw is None:
      if default is None:
        raise self.error(f"attribute '{name}' is required")
      return np.asarray(default, np.float64)
    parts = [p for p in re.split(r"[\s,]+", raw.strip()) if p]
    try:
      values = np.asarray([float(p) for p in parts], np.float64)
    except ValueError:
      raise self.error(f"attribute '{name}': '{raw}' is not a list of numbers") from None
    if size is not None and values.shape[0] != size:
      raise self.error(f"attribute '{name}' needs {size} numbers, got {values.shape[0]}")
    if not np.all(np.isfinite(values)):
      raise self.error(f"attribute '{name}' must be finite, got {raw}")
    return values

  def collision_bits(self, name, default):
    raw = self.attributes.get(name)
    if raw is None:
      return default
    raw = raw.strip()
    match = re.fullmatch(r"collision\[(.*)\]", raw)
    try:
      if match is None:
        return int(raw)
      indices = [int(i) for i in match.group(1).split("|")]
    except ValueError:
      raise self.error(f"attribute '{name}': '{raw}' is neither an integer nor "
                       f"collision[i|j|...]") from None
    if -1 in indices:
      return ALL_GROUPS
    for i in indices:
      if not 0 <= i < 64:
        raise self.error(f"attribute '{name}': group {i} is outside [0, 63]")
    return int(sum(1 << i for i in set(indices)))


def _exists(element):
  raw = element.attributes.get("exist")
  if raw is None:
    return True
  value = raw.strip().lower()
  if value in ("true", "1", "1.0"):
    return True
  if value in ("false", "0", "0.0"):
    return False
  raise element.error(f"attribute 'exist' must be true or false, got '{raw}'")


def _parse_file(path):
  try:
    tree = etree.parse(str(path), etree.XMLParser(remove_comments=True))
  except OSError:
    raise FileNotFoundError(f"{path}: world file not found") from None
  except etree.XMLSyntaxError as error:
    raise ValueError(f"{path}: malformed XML (line {error.lineno}): {error.msg}") from None
  return tree.getroot()


def _file_params(root, scope, source, this_dir):
  """{name: value} declared in the file's <params> (before the caller's)."""
  found = {}
  for params in root.iter("params"):
    element = _Element(params, scope, source, this_dir)
    found.update(element.attributes)
    for child in params:
      if not isinstance(child.tag, str):
        continue
      entry = _Element(child, {**scope, **found}, source, this_dir)
      if entry.tag == "param":
        found[entry.text("name")] = entry.text("value")
      else:
        found[child.tag] = entry.text("value")
  return found


def load(path, params=None):
  """WorldFile of the RaiSim world file `path`; `params` as io/template.parameter_map.

  Raises:
    FileNotFoundError: the file (or an included one) does not exist.
    ValueError: malformed XML, a template error, a bad or missing number, an unknown or
      unsupported element; the message names the file, the line and the element.
  """
  path = os.path.abspath(str(path))
  world = WorldFile(path=path)
  caller = template.parameter_map(params)
  _read(path, caller, world)
  if world.ignored:
    warnings.warn(f"{path}: ignored (visual only or unknown to raisim_jax): "
                  f"{', '.join(sorted(set(world.ignored)))}", stacklevel=3)
  return world


def _read(path, caller, world):
  root = _parse_file(path)
  source, this_dir = path, os.path.dirname(path)
  if root.tag != "raisim":
    raise ValueError(f"{source}, line {root.sourceline}: root element must be <raisim>, got "
                     f"<{root.tag}> (an MJCF file has <mujoco>)")
  scope = {**_file_params(root, caller, source, this_dir), **caller}
  for node in root:
    if not isinstance(node.tag, str):
      continue
    element = _Element(node, scope, source, this_dir)
    tag = element.tag
    if tag == "params":
      continue
    if tag in ("time_step", "timestep"):
      world.time_step = element.number("value", positive=True)
    elif tag == "gravity":
      world.gravity = element.vector("value", 3)
    elif tag == "erp":
      world.erp = element.number("erp", nonnegative=True)
      if element.number("erp2", default=0.0) != 0.0:
        raise element.error("'erp2' (a damping term of the error dynamics) is not supported "
                            "by raisim_jax; remove it or set it to 0")
    elif tag == "material":
      _material(element, scope, world)
    elif tag == "objects":
      _objects(node, scope, source, this_dir, world)
    elif tag == "include":
      _include(element, caller, world)
    elif tag in _REFUSED:
      raise element.error(_REFUSED[tag])
    elif tag in _VISUAL_ONLY:
      world.ignored.append(f"<{node.tag}>")
    else:
      raise element.error(f"unknown element <{node.tag}> (expected timeStep, gravity, erp, "
                          f"material, objects, params, include)")


def _include(element, caller, world):
  name = element.attributes.get("path") or element.attributes.get("file")
  if name is None:
    raise element.error("attribute 'path' is required")
  included = name if os.path.isabs(name) else os.path.join(os.path.dirname(element.source),
                                                           name)
  if not os.path.isfile(included):
    raise FileNotFoundError(f"{element.where}: included file '{name}' not found "
                            f"({os.path.normpath(included)})")
  _read(os.path.abspath(included), caller, world)


def _material(element, scope, world):
  for node in element.node:
    if not isinstance(node.tag, str):
      continue
    entry = _Element(node, scope, element.source, os.path.dirname(element.source))
    if entry.tag == "default":
      world.default_material = (entry.number("friction", 0.8, nonnegative=True),
                                entry.number("restitution", 0.0, nonnegative=True),
                                entry.number("restitution_threshold", 0.0, nonnegative=True))
    elif entry.tag == "pair_prop":
      static = [entry.number(n, nonnegative=True) if n in entry.attributes else None
                for n in ("static_friction", "static_friction_threshold_velocity")]
      world.material_pairs.append((entry.text("name1"), entry.text("name2"),
                                   entry.number("friction", nonnegative=True),
                                   entry.number("restitution", nonnegative=True),
                                   entry.number("restitution_threshold", nonnegative=True),
                                   *static))
    else:
      raise entry.error("unknown element in <material> (expected default, pair_prop)")


def _objects(node, scope, source, this_dir, world):
  for child in node:
    if not isinstance(child.tag, str):
      continue
    element = _Element(child, scope, source, this_dir)
    tag = element.tag
    if tag == "array":
      _array(element, child, scope, source, this_dir, world)
    elif tag == "include":
      _include(element, scope, world)
    elif not _exists(element):
      continue
    elif tag in _SHAPES:
      world.objects.append(_single_body(element, tag, scope))
    elif tag == "ground":
      world.objects.append(ObjectSpec(
          kind="ground", where=element.where, name=element.attributes.get("name", ""),
          height=element.number("height", 0.0), material=element.text("material", "default"),
          collision_mask=element.collision_bits("collision_mask", ALL_GROUPS),
          appearance=element.attributes.get("appearance", "")))
    elif tag == "compound":
      world.objects.append(_compound(element, scope))
    elif tag == "articulated_system":
      world.objects.append(_articulated(element, scope))
    elif tag in _REFUSED:
      raise element.error(_REFUSED[tag])
    else:
      raise element.error(f"unknown object <{child.tag}>")


def _array(element, node, scope, source, this_dir, world):
  raw = element.attributes.get("idx", "")
  match = re.fullmatch(r"\s*@@([A-Za-z_][A-Za-z0-9_]*)\s*", raw)
  if match is None:
    raise element.error(f"attribute 'idx' must name a variable as @@name, got '{raw}'")
  start, end, increment = (element.number(n) for n in ("start", "end", "increment"))
  if any(v != int(v) for v in (start, end, increment)):
    raise element.error("start, end and increment must be integers")
  if increment == 0:
    raise element.error("increment must not be 0")
  for index in range(int(start), int(end), int(increment)):
    # The array's children, read again with the index bound (lines stay the file's own).
    _objects(node, {**scope, match.group(1): str(index)}, source, this_dir, world)


def _children(element, scope):
  """{tag: _Element} of the direct children (dim, state, inertia, children, pd)."""
  result = {}
  for node in element.node:
    if isinstance(node.tag, str):
      child = _Element(node, scope, element.source, os.path.dirname(element.source))
      result[child.tag] = child
  return result


def _inertia(children):
  if "inertia" not in children:
    return None
  e = children["inertia"]
  xx, xy, xz, yy, yz, zz = (e.number(n) for n in ("xx", "xy", "xz", "yy", "yz", "zz"))
  return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


def _state(children, element):
  state = children.get("state")
  if state is None:
    raise element.error("child <state pos=...> is required")
  quat = state.vector("quat", 4, default=[1, 0, 0, 0])
  if np.linalg.norm(quat) < 1e-12:
    raise state.error("attribute 'quat' must not be zero")
  return State(pos=state.vector("pos", 3), quat=quat / np.linalg.norm(quat),
               lin_vel=state.vector("lin_vel", 3, default=[0, 0, 0]),
               ang_vel=state.vector("ang_vel", 3, default=[0, 0, 0]))


def _dims(children, element, kind):
  dim = children.get("dim")
  if dim is None:
    raise element.error("child <dim> is required")
  return {name: dim.number(name, positive=True) for name in _SHAPES[kind]}


def _body_type(element):
  body_type = element.attributes.get("body_type", "dynamic").strip().lower()
  if body_type not in ("dynamic", "kinematic", "static"):
    raise element.error(f"attribute 'body_type' must be dynamic, kinematic or static, got "
                        f"'{body_type}'")
  return body_type


def _single_body(element, kind, scope):
  children = _children(element, scope)
  return ObjectSpec(
      kind=kind, where=element.where, name=element.attributes.get("name", ""),
      mass=element.number("mass", positive=True), dims=_dims(children, element, kind),
      material=element.text("material", "default"),
      collision_group=element.collision_bits("collision_group", 1),
      collision_mask=element.collision_bits("collision_mask", ALL_GROUPS),
      body_type=_body_type(element), appearance=element.attributes.get("appearance", ""),
      inertia=_inertia(children), state=_state(children, element),
      com=element.vector("com", 3) if "com" in element.attributes else None)


def _compound(element, scope):
  children = _children(element, scope)
  if "children" not in children:
    raise element.error("child <children> is required")
  parts = []
  for node in children["children"].node:
    if not isinstance(node.tag, str):
      continue
    part = _Element(node, scope, element.source, os.path.dirname(element.source))
    if part.tag not in ("sphere", "box", "cylinder", "capsule"):
      raise part.error("a compound child must be a sphere, box, cylinder or capsule")
    grand = _children(part, scope)
    pose = grand.get("state")
    pos = pose.vector("pos", 3, default=[0, 0, 0]) if pose else np.zeros(3)
    if pose is not None and "rot" in pose.attributes:     # row-major 3x3 (exportToXml)
      rotation = pose.vector("rot", 9).reshape(3, 3)
    else:
      quat = pose.vector("quat", 4, default=[1, 0, 0, 0]) if pose else np.array([1.0, 0, 0, 0])
      if np.linalg.norm(quat) < 1e-12:
        raise pose.error("attribute 'quat' must not be zero")
      rotation = np.asarray(quaternion.to_matrix(quat / np.linalg.norm(quat)))
    parts.append(CompoundChild(kind=part.tag, dims=_dims(grand, part, part.tag),
                               material=part.text("material", "default"), pos=pos,
                               rotation=rotation,
                               appearance=part.attributes.get("appearance", "")))
  inertia = _inertia(children)
  if inertia is None:
    raise element.error("child <inertia> is required for a compound")
  return ObjectSpec(
      kind="compound", where=element.where, name=element.attributes.get("name", ""),
      mass=element.number("mass", positive=True), com=element.vector("com", 3, [0, 0, 0]),
      collision_group=element.collision_bits("collision_group", 1),
      collision_mask=element.collision_bits("collision_mask", ALL_GROUPS),
      body_type=_body_type(element), appearance=element.attributes.get("appearance", ""),
      inertia=inertia, state=_state(children, element), children=parts)


def _articulated(element, scope):
  children = _children(element, scope)
  urdf = element.text("urdf_path")
  if not os.path.isabs(urdf):
    urdf = os.path.join(os.path.dirname(element.source), urdf)
  spec = ObjectSpec(
      kind="articulated_system", where=element.where, name=element.attributes.get("name", ""),
      urdf_path=urdf, res_dir=element.attributes.get("res_dir", ""),
      collision_group=element.collision_bits("collision_group", 1),
      collision_mask=element.collision_bits("collision_mask", ALL_GROUPS))
  state = children.get("state")
  if state is not None:
    spec.qpos = state.vector("qpos") if "qpos" in state.attributes else None
    spec.qvel = state.vector("qvel") if "qvel" in state.attributes else None
  pd = children.get("pd")
  if pd is not None:
    for name in ("p_gain", "d_gain", "p_target", "d_target"):
      if name in pd.attributes:
        setattr(spec, name, pd.vector(name))
  return spec

"""URDF loader (RaiSim dialect) and programmatic construction (RaiSim's `Child`, option 4).

`load_urdf(path_or_string, res_path="", joint_order=None) -> ArticulatedDescription`.

RaiSim extensions handled: `capsule` geometry (`radius`, `height`), `spherical` and `floating`
joint types, `<dynamics rotor_inertia spring_mount stiffness>`, `<material><contact name/>`
inside `<collision>`, a root link named `world` (fixed base), extra `<?xml ...?>` declarations.
Every error is a `ValueError` naming the source (file path or "<string>"), the element and its
line.
"""

from __future__ import annotations

import dataclasses
import os
import re
import warnings
from typing import Optional, Sequence

import numpy as np
from lxml import etree

from raisim_jax import validation
from raisim_jax.io import number_checks, template, urdf_sensors
from raisim_jax.types import (JOINT_FIXED, JOINT_FLOATING, JOINT_PRISMATIC, JOINT_REVOLUTE,
                              JOINT_SPHERICAL)
from raisim_jax.io.articulated_description import (
    ArticulatedDescription, BodyDescription, FrameDescription, Geometry, Inertial, JointSpec,
    LinkSpec, PinSpec, rpy_to_matrix)

_JOINT_TYPES = {
    "fixed": JOINT_FIXED,
    "floating": JOINT_FLOATING,
    "revolute": JOINT_REVOLUTE,
    "continuous": JOINT_REVOLUTE,
    "prismatic": JOINT_PRISMATIC,
    "spherical": JOINT_SPHERICAL,
    "ball": JOINT_SPHERICAL,
}

_XML_DECL = re.compile(r"<\?xml[^>]*\?>")


class _Ctx:
  """Error context: the source name; also the robot-level material colors by name."""

  def __init__(self, source: str):
    self.source = source
    self.colors = {}

  def error(self, element_desc: str, line, message: str) -> ValueError:
    where = f" (line {line})" if line is not None else ""
    return ValueError(f"{self.source}: {element_desc}{where}: {message}")


def _is_xml_string(text: str) -> bool:
  stripped = text.lstrip()
  return stripped.startswith("<") or "<robot" in text


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------

def _floats(ctx, el, what, attr, count, default=None):
  raw = el.get(attr) if el is not None else None
  if raw is None:
    if default is None:
      raise ctx.error(what, getattr(el, "sourceline", None), f"missing attribute '{attr}'")
    return np.asarray(default, dtype=float)
  try:
    values = [float(v) for v in raw.split()]
  except ValueError:
    raise ctx.error(what, el.sourceline, f"malformed number in {attr}=\"{raw}\"") from None
  if count is not None and len(values) != count:
    raise ctx.error(what, el.sourceline,
                    f"{attr}=\"{raw}\" must have {count} numbers, got {len(values)}")
  if not all(np.isfinite(values)):
    raise ctx.error(what, el.sourceline, f"non-finite number in {attr}=\"{raw}\"")
  return np.asarray(values, dtype=float)


def _float(ctx, el, what, attr, default=None, allow_infinite=False):
  """One number attribute; NaN is never accepted, +-inf only with `allow_infinite` (a limit
  that is absent)."""
  if el is None or el.get(attr) is None:
    if default is None:
      raise ctx.error(what, getattr(el, "sourceline", None), f"missing attribute '{attr}'")
    return float(default)
  raw = el.get(attr)
  try:
    value = float(raw)
  except ValueError:
    raise ctx.error(what, el.sourceline, f"malformed number {attr}=\"{raw}\"") from None
  if np.isnan(value) or (np.isinf(value) and not allow_infinite):
    raise ctx.error(what, el.sourceline, f"non-finite number {attr}=\"{raw}\"")
  return value


def _origin(ctx, parent_el, what):
  el = parent_el.find("origin")
  if el is None:
    return np.zeros(3), np.eye(3)
  xyz = _floats(ctx, el, what, "xyz", 3, default=np.zeros(3))
  rpy = _floats(ctx, el, what, "rpy", 3, default=np.zeros(3))
  return xyz, rpy_to_matrix(rpy)


def _geometry(ctx, el, what, base_dir, res_path):
  pos, rot = _origin(ctx, el, what)
  geom_el = el.find("geometry")
  if geom_el is None or len(geom_el) == 0:
    raise ctx.error(what, el.sourceline, "missing <geometry>")
  shape_el = [c for c in geom_el if isinstance(c.tag, str)][0]
  tag = shape_el.tag
  g = Geometry(shape=tag, pos=pos, rot=rot, sourceline=shape_el.sourceline)
  if tag == "box":
    g.size = _floats(ctx, shape_el, what, "size", 3)
  elif tag == "sphere":
    g.radius = _float(ctx, shape_el, what, "radius")
  elif tag == "cylinder":
    g.radius = _float(ctx, shape_el, what, "radius")
    g.length = _float(ctx, shape_el, what, "length")
  elif tag == "capsule":
    g.radius = _float(ctx, shape_el, what, "radius")
    height = shape_el.get("height", shape_el.get("length"))
    if height is None:
      raise ctx.error(what, shape_el.sourceline, "capsule needs 'height'")
    g.length = _float(ctx, shape_el, what, "height" if shape_el.get("height") else "length")
  elif tag == "mesh":
    filename = shape_el.get("filename")
    if not filename:
      raise ctx.error(what, shape_el.sourceline, "mesh without 'filename'")
    g.filename = _resolve_mesh(filename, base_dir, res_path)
    g.scale = _floats(ctx, shape_el, what, "scale", None, default=np.ones(3))
    if g.scale.size not in (1, 3):
      raise ctx.error(what, shape_el.sourceline,
                      f"mesh scale=\"{shape_el.get('scale')}\" must have 1 or 3 numbers")
    if g.scale.size == 1:
      g.scale = np.repeat(g.scale, 3)
  else:
    raise ctx.error(what, shape_el.sourceline, f"unknown geometry <{tag}>")
  mat = el.find("material")
  if mat is not None and mat.find("contact") is not None:
    g.material = mat.find("contact").get("name", "")
  if mat is not None and mat.find("color") is not None:
    g.color = _floats(ctx, mat.find("color"), what, "rgba", 4)
  elif mat is not None and mat.get("name") in ctx.colors:
    g.color = ctx.colors[mat.get("name")]
  return g


def _resolve_mesh(filename, base_dir, res_path):
  """package://pkg/rel, file://abs or relative, as a path: the first that exists of res_path
  joined with pkg/rel and with rel (RaiSim's resource directory), then, walking up from the
  URDF's directory, every ancestor joined with pkg/rel, then every ancestor joined with rel
  (a package's root above its URDF, as ROS finds it; the package-qualified paths first, so a
  file of the same name in the URDF's own package does not shadow another package's). The
  first candidate when none exists."""
  name = filename
  if name.startswith("file://"):
    return name[len("file://"):]
  if name.startswith("package://"):
    rest = name[len("package://"):]
    inside = rest.split("/", 1)[-1]
    candidates = [os.path.join(res_path, rest), os.path.join(res_path, inside)] if res_path \
        else []
    ancestors = []
    directory = os.path.abspath(base_dir) if base_dir else ""
    while directory:
      ancestors.append(directory)
      parent = os.path.dirname(directory)
      directory = parent if parent != directory else ""
    candidates += [os.path.join(a, rest) for a in ancestors]
    candidates += [os.path.join(a, inside) for a in ancestors]
    for c in candidates:
      if os.path.exists(c):
        return c
    return candidates[0] if candidates else rest
  if os.path.isabs(name):
    return name
  for root in (res_path, base_dir):
    if root and os.path.exists(os.path.join(root, name)):
      return os.path.join(root, name)
  root = res_path or base_dir
  return os.path.join(root, name) if root else name


def _parse_link(ctx, el, base_dir, res_path) -> LinkSpec:
  name = el.get("name")
  what = f"link '{name}'"
  if not name:
    raise ctx.error("link", el.sourceline, "link without a name")
  link = LinkSpec(name=name, sourceline=el.sourceline)
  inertial_el = el.find("inertial")
  if inertial_el is not None:
    pos, rot = _origin(ctx, inertial_el, what)
    mass_el = inertial_el.find("mass")
    mass = _float(ctx, mass_el, what, "value", default=0.0) if mass_el is not None else 0.0
    in_el = inertial_el.find("inertia")
    inertia = np.zeros((3, 3))
    if in_el is not None:
      vals = {k: _float(ctx, in_el, what, k, default=0.0)
              for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
      inertia = np.array([[vals["ixx"], vals["ixy"], vals["ixz"]],
                          [vals["ixy"], vals["iyy"], vals["iyz"]],
                          [vals["ixz"], vals["iyz"], vals["izz"]]])
    # Ranges (mass >= 0, positive semi-definite inertia) are checked in build_description.
    # inertia given in the inertial frame: re-express in the link frame.
    link.inertial = Inertial(mass=mass, com=pos, inertia=rot @ inertia @ rot.T)
  for i, c in enumerate(el.findall("collision")):
    g = _geometry(ctx, c, f"{what} <collision>", base_dir, res_path)
    g.link = name
    link.collisions.append(g)
  for v in el.findall("visual"):
    g = _geometry(ctx, v, f"{what} <visual>", base_dir, res_path)
    g.link = name
    link.visuals.append(g)
  sensor_file = el.get("sensor")
  if sensor_file:
    path = sensor_file if os.path.isabs(sensor_file) else os.path.join(
        res_path or base_dir or os.getcwd(), sensor_file)
    try:
      link.sensors = urdf_sensors.read_sensor_set(path, name)
    except FileNotFoundError as error:
      raise ctx.error(what, el.sourceline, str(error)) from None
  return link


def _parse_joint(ctx, el) -> JointSpec:
  name = el.get("name")
  what = f"joint '{name}'"
  if not name:
    raise ctx.error("joint", el.sourceline, "joint without a name")
  type_name = el.get("type")
  if type_name not in _JOINT_TYPES:
    raise ctx.error(what, el.sourceline, f"unknown joint type '{type_name}'")
  parent_el, child_el = el.find("parent"), el.find("child")
  if parent_el is None or not parent_el.get("link"):
    raise ctx.error(what, el.sourceline, "missing <parent link=...>")
  if child_el is None or not child_el.get("link"):
    raise ctx.error(what, el.sourceline, "missing <child link=...>")
  pos, rot = _origin(ctx, el, what)
  joint = JointSpec(name=name, type=_JOINT_TYPES[type_name], parent=parent_el.get("link"),
                    child=child_el.get("link"), pos=pos, rot=rot, sourceline=el.sourceline)
  axis_el = el.find("axis")
  if axis_el is not None:
    axis = _floats(ctx, axis_el, what, "xyz", 3, default=np.array([1.0, 0.0, 0.0]))
    n = np.linalg.norm(axis)
    if n == 0 and joint.type in (JOINT_REVOLUTE, JOINT_PRISMATIC):
      raise ctx.error(what, axis_el.sourceline, "zero joint axis")
    joint.axis = axis / n if n > 0 else np.array([1.0, 0.0, 0.0])
  limit_el = el.find("limit")
  if limit_el is not None:
    joint.lower = _float(ctx, limit_el, what, "lower", default=-np.inf, allow_infinite=True)
    joint.upper = _float(ctx, limit_el, what, "upper", default=np.inf, allow_infinite=True)
    joint.velocity_limit = _float(ctx, limit_el, what, "velocity", default=np.inf,
                                  allow_infinite=True)
    joint.effort_limit = _float(ctx, limit_el, what, "effort", default=np.inf,
                                allow_infinite=True)
  if type_name == "continuous":
    joint.lower, joint.upper = -np.inf, np.inf
  if joint.type in (JOINT_REVOLUTE, JOINT_PRISMATIC) and joint.lower > joint.upper:
    # Bullet's convention, used by files in pybullet_data: upper < lower means "no limit".
    warnings.warn(f"{ctx.source}: {what} (line {limit_el.sourceline}): <limit> lower "
                  f"{joint.lower} is above upper {joint.upper}; the joint is taken as unlimited "
                  f"(Bullet's convention)", stacklevel=4)
    joint.lower, joint.upper = -np.inf, np.inf
  if joint.type == JOINT_SPHERICAL and validation.cone_angle_problem(joint.upper):
    raise ctx.error(what, limit_el.sourceline, "<limit upper>: "
                    + validation.cone_angle_problem(joint.upper))
  mimic_el = el.find("mimic")
  if mimic_el is not None:
    warnings.warn(f"{ctx.source}: {what} (line {mimic_el.sourceline}): <mimic joint="
                  f"'{mimic_el.get('joint')}'> is not simulated: the joint moves on its own",
                  stacklevel=4)
  dyn_el = el.find("dynamics")
  if dyn_el is not None:
    joint.damping = _float(ctx, dyn_el, what, "damping", default=0.0)
    joint.friction = _float(ctx, dyn_el, what, "friction", default=0.0)
    if joint.friction > 0:
      warnings.warn(f"{ctx.source}: {what} (line {dyn_el.sourceline}): <dynamics friction> "
                    f"{joint.friction} is not simulated (joint friction is not modelled; "
                    f"damping is)", stacklevel=4)
    joint.rotor_inertia = _float(ctx, dyn_el, what, "rotor_inertia", default=0.0)
    joint.stiffness = _float(ctx, dyn_el, what, "stiffness", default=0.0)
    if dyn_el.get("spring_mount") is not None:
      joint.spring_mount = _floats(ctx, dyn_el, what, "spring_mount", None)
  return joint


def parse_urdf(path_or_string: str, res_path: str = "", params=None):
  """Parse URDF text or file into (robot name, [LinkSpec], [JointSpec], source name,
  constraints), constraints = ([PinSpec], nominal_config or None, line of the block).
  `params` (not None): the text is a template (io/template.py), preprocessed first."""
  if _is_xml_string(path_or_string):
    text, source, base_dir = path_or_string, "<string>", ""
  else:
    source = path_or_string
    if not os.path.isfile(path_or_string):
      raise ValueError(f"{source}: URDF file not found")
    with open(path_or_string, "r", encoding="utf-8", errors="replace") as f:
      text = f.read()
    base_dir = os.path.dirname(os.path.abspath(path_or_string))
  if params is not None:   # line for line, so URDF errors keep their line numbers
    text = template.preprocess(text, params, source)
  ctx = _Ctx(source)
  # RaiSim accepts (and ignores) any <?xml ...?> declaration, also a second one.
  # Replace each by spaces on the same line so that line numbers are kept.
  text = _XML_DECL.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
  try:
    root = etree.fromstring(text.encode("utf-8"),
                            parser=etree.XMLParser(remove_comments=True))
  except etree.XMLSyntaxError as e:
    raise ValueError(f"{source}: malformed XML (line {e.lineno}): {e.msg}") from None
  if root.tag != "robot":
    raise ctx.error(f"<{root.tag}>", root.sourceline, "root element must be <robot>")
  for el in root.findall("material"):
    if el.find("color") is not None:
      ctx.colors[el.get("name")] = _floats(ctx, el.find("color"), "<material>", "rgba", 4)
  links, joints, constraints = [], [], ([], None, None)
  for el in root:
    if el.tag == "link":
      links.append(_parse_link(ctx, el, base_dir, res_path))
    elif el.tag == "joint":
      joints.append(_parse_joint(ctx, el))
    elif el.tag == "constraints":
      if constraints[2] is not None:
        raise ctx.error("<constraints>", el.sourceline,
                        f"second constraints block (the first is on line {constraints[2]})")
      constraints = _parse_constraints(ctx, el)
  return root.get("name", ""), links, joints, source, constraints


def _parse_constraints(ctx, el):
  """`<constraints nominal_config="..."><pin body1 body2 anchor/>...</constraints>`."""
  what = "<constraints>"
  nominal = _floats(ctx, el, what, "nominal_config", None) if el.get("nominal_config") else None
  pins = []
  for child in el:
    if not isinstance(child.tag, str):
      continue
    if child.tag != "pin":
      raise ctx.error(f"<constraints><{child.tag}>", child.sourceline,
                      "unsupported constraint (supported: pin)")
    pin_what = "<pin>"
    names = []
    for attr in ("body1", "body2"):
      name = child.get(attr)
      if not name:
        raise ctx.error(pin_what, child.sourceline, f"missing attribute '{attr}'")
      names.append(name)
    anchor = _floats(ctx, child, pin_what, "anchor", 3, default=np.zeros(3))
    pins.append(PinSpec(body1=names[0], body2=names[1], anchor=anchor,
                        sourceline=child.sourceline))
  if pins and nominal is None:
    raise ctx.error(what, el.sourceline, "missing attribute 'nominal_config' (the generalized "
                    "coordinate at which the pins' anchors coincide)")
  return pins, nominal, el.sourceline


def _attach_constraints(ctx, desc: ArticulatedDescription, constraints):
  """Checks the pins against the merged tree and stores them in `desc`."""
  pins, nominal, line = constraints
  if not pins:
    return desc
  if nominal.shape[0] != desc.gc_dim:
    raise ctx.error("<constraints>", line,
                    f"nominal_config has {nominal.shape[0]} numbers; the system's generalized "
                    f"coordinate has {desc.gc_dim}")
  for pin in pins:
    bodies = []
    for name in (pin.body1, pin.body2):
      try:
        bodies.append(desc.link_placement(name)[0])
      except KeyError:
        raise ctx.error("<pin>", pin.sourceline, f"link '{name}' does not exist") from None
    if bodies[0] == bodies[1]:
      raise ctx.error("<pin>", pin.sourceline,
                      f"links '{pin.body1}' and '{pin.body2}' are rigidly joined (same body): "
                      "a pin between them constrains nothing")
  desc.pins = list(pins)
  desc.nominal_config = np.asarray(nominal, float)
  return desc


# ---------------------------------------------------------------------------------------------
# Tree building (shared by the URDF loader and Child)
# ---------------------------------------------------------------------------------------------

def _combine(a: Inertial, b_mass, b_com, b_inertia) -> Inertial:
  """Sum of two rigid inertials expressed in the same frame."""
  m = a.mass + b_mass
  if m <= 0:
    return Inertial(mass=0.0, com=np.zeros(3), inertia=a.inertia + b_inertia)
  com = (a.mass * a.com + b_mass * b_com) / m

  def shift(mass, c):
    d = c - com
    return mass * (np.dot(d, d) * np.eye(3) - np.outer(d, d))

  inertia = a.inertia + shift(a.mass, a.com) + b_inertia + shift(b_mass, b_com)
  return Inertial(mass=m, com=com, inertia=inertia)


def build_description(name, links: Sequence[LinkSpec], joints: Sequence[JointSpec],
                      source: str = "<string>", joint_order: Optional[Sequence[str]] = None
                      ) -> ArticulatedDescription:
  """Merge raw links/joints into movable bodies in RaiSim's joint order (see module doc)."""
  ctx = _Ctx(source)
  inertia_errors = {link.name: error for link in links
                    if (error := number_checks.check_link(ctx, link)) is not None}
  for joint in joints:
    number_checks.check_joint(ctx, joint)
  link_by_name = {}
  for l in links:
    if l.name in link_by_name:
      raise ctx.error(f"link '{l.name}'", l.sourceline, "duplicate link name")
    link_by_name[l.name] = l
  children = {l.name: [] for l in links}
  parent_joint = {}
  seen_joint_names = set()
  for j in joints:
    what = f"joint '{j.name}'"
    if j.name in seen_joint_names:
      raise ctx.error(what, j.sourceline, "duplicate joint name")
    seen_joint_names.add(j.name)
    if j.parent not in link_by_name:
      raise ctx.error(what, j.sourceline, f"parent link '{j.parent}' does not exist")
    if j.child not in link_by_name:
      raise ctx.error(what, j.sourceline, f"child link '{j.child}' does not exist")
    if j.child in parent_joint:
      raise ctx.error(what, j.sourceline,
                      f"link '{j.child}' already has parent joint '{parent_joint[j.child].name}'")
    parent_joint[j.child] = j
    children[j.parent].append(j)
  roots = [l for l in links if l.name not in parent_joint]
  if not links:
    raise ValueError(f"{source}: <robot>: no links")
  if len(roots) == 0:
    j = joints[0]
    raise ctx.error(f"joint '{j.name}'", j.sourceline, "kinematic loop: no root link")
  if len(roots) > 1:
    raise ctx.error(f"link '{roots[1].name}'", roots[1].sourceline,
                    f"two root links ('{roots[0].name}' and '{roots[1].name}')")
  root = roots[0]
  # cycle check: every link must be reachable from the root.
  reachable, stack = set(), [root.name]
  while stack:
    n = stack.pop()
    reachable.add(n)
    stack += [j.child for j in children[n] if j.child not in reachable]
  for j in joints:
    if j.child not in reachable:
      raise ctx.error(f"joint '{j.name}'", j.sourceline, "kinematic loop (cycle) in the tree")

  bodies, frames = [], []
  fixed_base = root.name == "world"

  def new_body(link, joint: Optional[JointSpec], jtype, parent_idx, jpos, jrot, jname):
    j = joint or JointSpec(name=jname, type=jtype, parent="", child=link.name)
    b = BodyDescription(
        name=link.name, joint_name=jname, joint_type=jtype, parent=parent_idx,
        joint_pos=np.asarray(jpos, float), joint_rot=np.asarray(jrot, float),
        axis=np.asarray(j.axis, float), mass=0.0, com=np.zeros(3), inertia=np.zeros((3, 3)),
        rotor_inertia=j.rotor_inertia, damping=j.damping, friction=j.friction,
        stiffness=j.stiffness, spring_mount=j.spring_mount, lower=j.lower, upper=j.upper,
        velocity_limit=j.velocity_limit, effort_limit=j.effort_limit)
    bodies.append(b)
    return len(bodies) - 1

  def absorb(body_idx, link, pos, rot):
    """Merge link (pose pos/rot in the body frame) into body body_idx."""
    b = bodies[body_idx]
    li = link.inertial
    merged = _combine(Inertial(b.mass, b.com, b.inertia), li.mass, pos + rot @ li.com,
                      rot @ li.inertia @ rot.T)
    b.mass, b.com, b.inertia = merged.mass, merged.com, merged.inertia
    for kind, src, dst in (("c", link.collisions, b.collisions), ("v", link.visuals, b.visuals)):
      for g in src:
        g2 = dataclasses.replace(g, pos=pos + rot @ g.pos, rot=rot @ g.rot)
        dst.append(g2)
    b.links.append(link.name)

  def visit(link, body_idx, pos, rot):
    """Depth-first: link is rigidly attached to body body_idx with pose (pos, rot)."""
    absorb(body_idx, link, pos, rot)
    for j in children[link.name]:
      child = link_by_name[j.child]
      jpos = pos + rot @ j.pos
      jrot = rot @ j.rot
      if j.type == JOINT_FIXED:
        frames.append(FrameDescription(j.name, body_idx, jpos, jrot, JOINT_FIXED, link.name,
                                       child.name))
        visit(child, body_idx, jpos, jrot)
      elif j.type == JOINT_FLOATING:
        raise ctx.error(f"joint '{j.name}'", j.sourceline,
                        "a floating joint is only allowed at the root")
      else:
        idx = new_body(child, j, j.type, body_idx, jpos, jrot, j.name)
        frames.append(FrameDescription(j.name, idx, np.zeros(3), np.eye(3), j.type, link.name,
                                       child.name))
        visit(child, idx, np.zeros(3), np.eye(3))

  if fixed_base:
    world_children = children["world"]
    if len(world_children) != 1:
      raise ctx.error("link 'world'", root.sourceline,
                      f"world must have exactly one child joint, has {len(world_children)}")
    j = world_children[0]
    child = link_by_name[j.child]
    if j.type == JOINT_FIXED:
      idx = new_body(child, j, JOINT_FIXED, -1, j.pos, j.rot, j.name)
    elif j.type == JOINT_FLOATING:
      idx = new_body(child, j, JOINT_FLOATING, -1, j.pos, j.rot, j.name)
      fixed_base = False
    else:
      idx = new_body(child, j, j.type, -1, j.pos, j.rot, j.name)
    frames.append(FrameDescription(j.name, idx, np.zeros(3), np.eye(3), bodies[idx].joint_type,
                                   "world", child.name))
    visit(child, idx, np.zeros(3), np.eye(3))
  else:
    idx = new_body(root, None, JOINT_FLOATING, -1, np.zeros(3), np.eye(3), "ROOT")
    frames.append(FrameDescription("ROOT", idx, np.zeros(3), np.eye(3), JOINT_FLOATING, "world",
                                   root.name))
    visit(root, idx, np.zeros(3), np.eye(3))

  # Collision body names "LINK/INDEX" per link.
  for b in bodies:
    counts = {}
    for g in b.collisions:
      k = counts.get(g.link, 0)
      g.name = f"{g.link}/{k}"
      counts[g.link] = k + 1

  lines = {**{l.name: l.sourceline for l in links}, **{j.name: j.sourceline for j in joints}}
  number_checks.check_merged_inertias(ctx, bodies, inertia_errors)
  number_checks.check_moving_bodies_have_inertia(ctx, bodies, lines)
  number_checks.check_mass_matrix_is_regular(ctx, bodies, lines)
  if joint_order is not None:
    bodies, frames = _reorder(ctx, bodies, frames, joint_order)

  desc = ArticulatedDescription(name=name, bodies=bodies, frames=frames, fixed_base=fixed_base,
                                source=source, links=list(links), joints=list(joints))
  return desc


def _reorder(ctx, bodies, frames, joint_order):
  names = [b.joint_name for b in bodies]
  order = list(joint_order)
  if names[0] not in order:
    order = [names[0]] + order
  for n in order:
    if n not in names:
      raise ctx.error(f"jointOrder entry '{n}'", None, "is not a movable joint of the system")
  if sorted(order) != sorted(names):
    missing = [n for n in names if n not in order]
    raise ctx.error("jointOrder", None, f"missing movable joints {missing}")
  perm = [names.index(n) for n in order]
  new_index = {old: new for new, old in enumerate(perm)}
  out = []
  for new, old in enumerate(perm):
    b = dataclasses.replace(bodies[old])
    b.parent = -1 if b.parent < 0 else new_index[b.parent]
    if b.parent >= new:
      raise ctx.error(f"jointOrder entry '{b.joint_name}'", None,
                      f"comes before its parent joint '{bodies[bodies[old].parent].joint_name}'")
    out.append(b)
  frames = [dataclasses.replace(f, body=new_index[f.body]) for f in frames]
  return out, frames


def load_urdf(path_or_string: str, res_path: str = "",
              joint_order: Optional[Sequence[str]] = None, params=None) -> ArticulatedDescription:
  """Load a URDF file or URDF text into an `ArticulatedDescription`.

  Args:
    path_or_string: a file path, or the URDF text (detected: starts with '<' after stripping,
      or contains '<robot').
    res_path: resource directory for mesh filenames (default: the URDF's directory).
    joint_order: optional movable-joint names giving the body/joint order (RaiSim's
      `jointOrder`); a joint must come after its parent joint.
    params: template parameters (a mapping name -> value, or ParameterContainer-like
      objects): the URDF is a template with @@name variables and {expressions}.
  Raises:
    ValueError naming the source, the element and its line.
  """
  name, links, joints, source, constraints = parse_urdf(path_or_string, res_path, params)
  desc = build_description(name, links, joints, source, joint_order)
  if desc.sensors:
    warnings.warn(f"{source}: the sensors of robot '{name}' "
                  f"({', '.join(sorted({s.type for s in desc.sensors}))}) are read and stored "
                  f"(ArticulatedDescription.sensors) but not simulated by raisim_jax yet",
                  stacklevel=3)
  return _attach_constraints(_Ctx(source), desc, constraints)


# ---------------------------------------------------------------------------------------------
# Option 4: programmatic construction (RaiSim's raisim::Child)
# ---------------------------------------------------------------------------------------------

@dataclasses.dataclass
class ChildJoint:
  """Joint of a `Child`: type name ('revolute', 'prismatic', 'spherical', 'fixed', 'floating'),
  origin in the parent link frame, axis in the joint frame, limits and RaiSim dynamics."""
  name: str
  type: str = "fixed"
  pos: Sequence[float] = (0.0, 0.0, 0.0)
  rpy: Sequence[float] = (0.0, 0.0, 0.0)
  axis: Sequence[float] = (1.0, 0.0, 0.0)
  lower: float = -np.inf
  upper: float = np.inf
  velocity_limit: float = np.inf
  effort_limit: float = np.inf
  damping: float = 0.0
  friction: float = 0.0
  rotor_inertia: float = 0.0
  stiffness: float = 0.0
  spring_mount: Optional[Sequence[float]] = None


@dataclasses.dataclass
class ChildBody:
  """Inertial properties (COM and inertia in the link frame) and shapes of a `Child`."""
  mass: float = 0.0
  com: Sequence[float] = (0.0, 0.0, 0.0)
  inertia: Sequence[Sequence[float]] = ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))
  collisions: list = dataclasses.field(default_factory=list)   # Geometry in the link frame
  visuals: list = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Child:
  """A tree node (RaiSim's `raisim::Child`): a link (`name`, `body`), its parent `joint`,
  movable children (`child`) and rigidly attached children (`fixed_bodies`, whose joints are
  of type 'fixed'). The root's joint is ignored unless `fixed_base` is requested in
  `description_from_child`."""
  name: str
  joint: ChildJoint = None
  body: ChildBody = dataclasses.field(default_factory=ChildBody)
  child: list = dataclasses.field(default_factory=list)
  fixed_bodies: list = dataclasses.field(default_factory=list)


def description_from_child(root: Child, fixed_base: bool = False, name: str = "",
                           joint_order=None) -> ArticulatedDescription:
  """Build the same `ArticulatedDescription` a URDF with this tree would give.

  fixed_base=True attaches `root` to a link named 'world' through `root.joint` (a fixed joint
  named 'world_joint' if `root.joint` is None).
  """
  links, joints = [], []

  def to_link(c: Child):
    mass = float(c.body.mass)
    inertia = np.asarray(c.body.inertia, float)
    cols = [dataclasses.replace(g, link=c.name) for g in c.body.collisions]
    vis = [dataclasses.replace(g, link=c.name) for g in c.body.visuals]
    return LinkSpec(name=c.name, inertial=Inertial(mass, np.asarray(c.body.com, float), inertia),
                    collisions=cols, visuals=vis)

  def to_joint(j: ChildJoint, parent, child, force_fixed=False):
    if j.type not in _JOINT_TYPES:
      raise ValueError(f"<Child>: joint '{j.name}': unknown joint type '{j.type}'")
    axis = np.asarray(j.axis, float)
    return JointSpec(name=j.name, type=JOINT_FIXED if force_fixed else _JOINT_TYPES[j.type],
                     parent=parent, child=child, pos=np.asarray(j.pos, float),
                     rot=rpy_to_matrix(j.rpy), axis=axis / np.linalg.norm(axis), lower=j.lower,
                     upper=j.upper, velocity_limit=j.velocity_limit,
                     effort_limit=j.effort_limit, damping=j.damping, friction=j.friction,
                     rotor_inertia=j.rotor_inertia, stiffness=j.stiffness,
                     spring_mount=None if j.spring_mount is None else np.asarray(j.spring_mount,
                                                                                  float))

  def walk(c: Child):
    links.append(to_link(c))
    # URDF file order equivalent: children in list order, fixed bodies first.
    for f in c.fixed_bodies:
      joints.append(to_joint(f.joint or ChildJoint(name=f"{c.name}_to_{f.name}"), c.name, f.name,
                             force_fixed=True))
      walk(f)
    for ch in c.child:
      if ch.joint is None:
        raise ValueError(f"<Child>: link '{ch.name}': child without a joint")
      joints.append(to_joint(ch.joint, c.name, ch.name))
      walk(ch)

  if fixed_base:
    links.append(LinkSpec(name="world"))
    joints.append(to_joint(root.joint or ChildJoint(name="world_joint"), "world", root.name,
                           force_fixed=root.joint is None))
  walk(root)
  return build_description(name, links, joints, "<Child>", joint_order)

"""A World from a parsed RaiSim world file (io/world_xml.py), built through the World's own
API so every value goes through the same checks as a script's calls (an error names the
file, line and element it came from); and the reverse, `export`, which writes a World as a
file that builds the same Model and State (floats written with repr: exact in float64)."""

import os
import warnings

import numpy as np
from lxml import etree

from raisim_jax.io import mjcf, urdf
from raisim_jax.oo.articulated_system import ArticulatedSystemOption
from raisim_jax.oo.objects import CompoundObjectChild, Transformation
from raisim_jax.types import BodyType, ControlMode, ObjectType

_BODY_TYPES = {"dynamic": BodyType.DYNAMIC, "kinematic": BodyType.KINEMATIC,
               "static": BodyType.STATIC}
_CHILD_TYPES = {"sphere": ObjectType.SPHERE, "box": ObjectType.BOX,
                "cylinder": ObjectType.CYLINDER, "capsule": ObjectType.CAPSULE}


def populate(world, spec):
  """Applies WorldFile `spec` to `world` (settings first, then the objects in file order)."""
  if spec.time_step is not None:
    world.setTimeStep(spec.time_step)
  if spec.gravity is not None:
    world.setGravity(spec.gravity)
  if spec.erp is not None:
    world.setERP(spec.erp)
  if spec.default_material is not None:
    world.setDefaultMaterial(*spec.default_material)
  for name1, name2, friction, restitution, threshold, static, static_velocity in \
      spec.material_pairs:
    world.setMaterialPairProp(name1, name2, friction, restitution, threshold, static,
                              static_velocity)
  for obj in spec.objects:
    try:
      _add(world, obj)
    except (ValueError, TypeError, KeyError) as error:
      raise ValueError(f"{obj.where}: {error}") from None


def populate_mjcf(world, model):
  """Applies an MjcfModel (io/mjcf.py): time step, gravity, a PGS model's iterations as the
  contact solver's maxIter, the ground plane, one articulated system per top-level body at
  MuJoCo's model pose (named after the body). The motors are kept as
  `world.mjcfActuation[system name]` (io.mjcf.Actuation: generalized_force(ctrl))."""
  if model.time_step is not None:
    world.setTimeStep(model.time_step)
  if model.gravity is not None:
    world.setGravity(model.gravity)
  if model.solver_iterations is not None:
    world.setContactSolverParam(1.0, 0.7, 1.0, model.solver_iterations,
                                world._description.solver.threshold)
  if model.ground_height is not None:
    world.addGround(model.ground_height, model.ground_material,
                    model.ground_collision_mask).setName("floor")
  materials = {model.ground_material} if model.ground_height is not None else set()
  for system in model.systems:
    materials |= {g.material for link in system.links for g in link.collisions}
  materials = sorted(materials)
  for i, first in enumerate(materials):
    for second in materials[i:]:
      world.setMaterialPairProp(first, second, mjcf.pair_friction(first, second), 0.0, 0.0)
  world.mjcfActuation = {}
  for system in model.systems:
    description = urdf.build_description(system.name, system.links, system.joints, model.path)
    view = world._add_articulated(
        description, 1, -1, ArticulatedSystemOption(doNotCollideWithParent=model.filter_parent),
        source=model.path)
    view.setName(system.name)
    world.mjcfActuation[system.name] = mjcf.actuation(model.actuators, description)
    _mujoco_collision_filter(view, description, system.filters)
    if model.filter_parent:
      _mujoco_parent_filter(view, description, system.parents)
    if system.floating:
      gc = view.getGeneralizedCoordinate()
      gc[:3], gc[3:7] = system.base_pos, system.base_quat
      view.setGeneralizedCoordinate(gc)


def _mujoco_collision_filter(view, description, filters):
  """ignoreCollisionBetween for every pair of bodies no geom pair of which MuJoCo collides."""
  per_body = [[f for link in body.links for f in filters.get(link, [])]
              for body in description.bodies]
  for i in range(len(per_body)):
    for j in range(i + 1, len(per_body)):
      if per_body[i] and per_body[j] and not any(
          (t1 & a2) or (t2 & a1) for t1, a1 in per_body[i] for t2, a2 in per_body[j]):
        view.ignoreCollisionBetween(i, j)


def _mujoco_parent_filter(view, description, parents):
  """ignoreCollisionBetween each MJCF body's link and its parent MJCF body's link (MuJoCo's
  filterparent over weld groups), where the joints' massless chain puts links between them."""
  body_of = {link: index for index, body in enumerate(description.bodies) for link in body.links}
  for child, parent in parents.items():
    if parent not in body_of or child not in body_of:   # a top-level body (parent None)
      continue
    i, j = body_of[child], body_of[parent]
    if i != j and description.bodies[i].parent != j and description.bodies[j].parent != i:
      view.ignoreCollisionBetween(i, j)


def _add(world, obj):
  if obj.kind == "ground":
    view = world.addGround(obj.height, obj.material, obj.collision_mask)
  elif obj.kind == "articulated_system":
    view = world.addArticulatedSystem(obj.urdf_path, obj.res_dir, (), obj.collision_group,
                                      obj.collision_mask)
    _articulated_state(view, obj)
  else:
    if obj.kind == "compound":
      children = [CompoundObjectChild(
          _CHILD_TYPES[c.kind], _object_param(c.kind, c.dims), c.material, c.appearance,
          Transformation(c.pos, c.rotation))
                  for c in obj.children]
      view = world.addCompound(children, obj.mass, obj.com, obj.inertia, obj.collision_group,
                               obj.collision_mask)
    else:
      add = {"sphere": world.addSphere, "box": world.addBox, "cylinder": world.addCylinder,
             "capsule": world.addCapsule, "cone": world.addCone}[obj.kind]
      dims = [obj.dims[k] for k in ("radius", "x", "y", "z", "height") if k in obj.dims]
      view = add(*dims, obj.mass, obj.material, obj.collision_group, obj.collision_mask)
      if obj.inertia is not None:
        view.setInertia(obj.inertia)
      if obj.com is not None:
        view.setCom(obj.com)
    view.setPosition(*obj.state.pos)
    view.setOrientation(*obj.state.quat)
    view.setVelocity(*obj.state.lin_vel, *obj.state.ang_vel)
    if obj.body_type != "dynamic":
      view.setBodyType(_BODY_TYPES[obj.body_type])
  if obj.name:
    view.setName(obj.name)
  if obj.appearance and hasattr(view, "setAppearance"):
    view.setAppearance(obj.appearance)
  return view


def _object_param(kind, dims):
  values = {"sphere": ("radius",), "box": ("x", "y", "z"), "cylinder": ("radius", "height"),
            "capsule": ("radius", "height")}[kind]
  return np.array([dims[k] for k in values] + [0.0] * (4 - len(values)))


def _articulated_state(view, obj):
  if obj.qpos is not None or obj.qvel is not None:
    qpos = view.getGeneralizedCoordinate() if obj.qpos is None else obj.qpos
    qvel = view.getGeneralizedVelocity() if obj.qvel is None else obj.qvel
    view.setState(qpos, qvel)
  if obj.p_gain is not None or obj.d_gain is not None:
    dof = view.getDOF()
    view.setControlMode(ControlMode.PD_PLUS_FEEDFORWARD_TORQUE)
    view.setPdGains(np.zeros(dof) if obj.p_gain is None else obj.p_gain,
                    np.zeros(dof) if obj.d_gain is None else obj.d_gain)
  if obj.p_target is not None or obj.d_target is not None:
    view.setPdTarget(view.getGeneralizedCoordinate() if obj.p_target is None else obj.p_target,
                     np.zeros(view.getDOF()) if obj.d_target is None else obj.d_target)


def _vector(values):
  return " ".join(repr(float(v)) for v in np.ravel(values))


def _sub(parent, tag, **attributes):
  return etree.SubElement(parent, tag, {k: v if isinstance(v, str) else _vector(v)
                                        for k, v in attributes.items()})


def _inertia_element(parent, inertia):
  i = np.asarray(inertia, np.float64)
  _sub(parent, "inertia", xx=i[0, 0], xy=i[0, 1], xz=i[0, 2], yy=i[1, 1], yz=i[1, 2],
       zz=i[2, 2])


def _dims_of(kind, size):
  names = {"sphere": ("radius",), "box": ("x", "y", "z"), "cylinder": ("radius", "height"),
           "capsule": ("radius", "height"), "cone": ("radius", "height")}[kind]
  return {n: size[k] for k, n in enumerate(names)}


_KINDS = {ObjectType.SPHERE: "sphere", ObjectType.BOX: "box", ObjectType.CYLINDER: "cylinder",
          ObjectType.CAPSULE: "capsule", ObjectType.CONE: "cone"}
_BODY_TYPE_NAMES = {v: k for k, v in _BODY_TYPES.items()}


def _refuse(condition, what):
  if condition:
    raise ValueError(f"exportToXml: {what} cannot be written to a RaiSim world file")


def export(world, path):
  """Writes `world` to the RaiSim world file `path` (URDF texts that are not files of their
  own, such as URDF strings and preprocessed templates, are written next to it as
  <object name>.urdf). Raises ValueError naming a setting the format cannot hold."""
  description = world._description
  directory = os.path.dirname(os.path.abspath(path))
  root = etree.Element("raisim", version="1.0")
  _sub(root, "timeStep", value=[world.getTimeStep()])
  _sub(root, "gravity", value=world.getGravity())
  _sub(root, "erp", erp=[description.solver.erp])
  material = _sub(root, "material")
  default = description.default_material
  _refuse(default.c_static_f != default.c_f or default.v_static != 0.0,
          "a default material with its own static friction")
  _sub(material, "default", friction=[default.c_f], restitution=[default.c_r],
       restitution_threshold=[default.r_th])
  for (name1, name2), pair in description.material_pairs.items():
    _sub(material, "pair_prop", name1=name1, name2=name2, friction=[pair.c_f],
         restitution=[pair.c_r], restitution_threshold=[pair.r_th],
         static_friction=[pair.c_static_f], static_friction_threshold_velocity=[pair.v_static])
  objects = _sub(root, "objects")
  for index, view in enumerate(world._objects):
    name = view.getName()
    if view.getObjectType() == ObjectType.ARTICULATED_SYSTEM:
      _export_articulated(objects, view, index, directory)
    else:
      _export_single(world, objects, view, name)
  etree.ElementTree(root).write(str(path), pretty_print=True, xml_declaration=True,
                                encoding="utf-8")


def _export_single(world, objects, view, name):
  d = view._description
  common = dict(name=name) if name else {}
  if d.appearance:
    common["appearance"] = d.appearance
  _refuse(d.linear_damping != 0 or np.any(np.asarray(d.angular_damping) != 0),
          f"the damping of '{name}'")
  _refuse(d.object_type == ObjectType.MESH,
          f"the mesh object '{name}' (raisim_jax reads no <mesh> element)")
  if d.object_type == ObjectType.HALFSPACE:
    _sub(objects, "ground", height=[float(view.getPosition()[2])],
         material=d.shapes[0].material, collision_mask=str(int(d.collision_mask)), **common)
    return
  attributes = dict(mass=[float(view.getMass())], collision_group=str(int(d.collision_group)),
                    collision_mask=str(int(d.collision_mask)),
                    body_type=_BODY_TYPE_NAMES[BodyType(int(d.body_type))], **common)
  if d.object_type == ObjectType.COMPOUND:
    element = _sub(objects, "compound", com=np.asarray(d.com), **attributes)
    _inertia_element(element, d.inertia)
    children = _sub(element, "children")
    for child in world._compound_children[id(d)]:
      kind = _KINDS[ObjectType(int(child.objectType))]
      part = _sub(children, kind, material=child.material,
                  **({"appearance": child.appearance} if child.appearance else {}))
      _sub(part, "dim", **{k: [v] for k, v in _dims_of(kind, child.objectParam).items()})
      _sub(part, "state", pos=child.trans.pos, rot=np.asarray(child.trans.rot))
  else:
    kind = _KINDS[ObjectType(int(d.object_type))]
    element = _sub(objects, kind, material=d.shapes[0].material, com=np.asarray(d.com),
                   **attributes)
    _sub(element, "dim", **{k: [v] for k, v in _dims_of(kind, d.size).items()})
    _inertia_element(element, d.inertia)
  _sub(element, "state", pos=view.getPosition(), quat=view.getQuaternion(),
       lin_vel=view.getLinearVelocity(), ang_vel=view.getAngularVelocity())


# Per-body numbers a setter can change after loading (setMass, setJointDamping, ...); the
# world file refers to the URDF, which holds the loaded values.
_EDITABLE_BODY_FIELDS = {"mass": "setMass", "com": "the centre of mass",
                         "inertia": "the inertia", "rotor_inertia": "setRotorInertia",
                         "damping": "setJointDamping", "friction": "the joint friction",
                         "stiffness": "the joint stiffness", "lower": "setJointLimits",
                         "upper": "setJointLimits", "velocity_limit": "the velocity limits",
                         "effort_limit": "the effort limits"}


def _refuse_edits_of_the_urdf(entry, name):
  """Raises where the system's dynamics were edited after loading (the world file refers to
  the URDF, so the edit would be lost on reload): each body's numbers against the URDF's,
  bodies matched by link name, and actuation limits set with setActuationLimits."""
  _refuse(entry.actuation_lower is not None or entry.actuation_upper is not None,
          f"setActuationLimits on '{name}'")
  with warnings.catch_warnings():   # the file's warnings were given when it was added
    warnings.simplefilter("ignore")
    loaded = urdf.load_urdf(entry.urdf_text or entry.source, res_path=entry.res_path)
  loaded_bodies = {body.name: body for body in loaded.bodies}
  for body in entry.description.bodies:
    original = loaded_bodies.get(body.name)
    if original is None:
      continue
    for field, setter in _EDITABLE_BODY_FIELDS.items():
      now, then = getattr(body, field), getattr(original, field)
      if now is None or then is None:
        continue
      _refuse(not np.array_equal(np.asarray(now, float), np.asarray(then, float)),
              f"{setter} on '{name}' (link '{body.name}': {field} differs from its URDF's)")


def _export_articulated(objects, view, index, directory):
  entry = view._entry
  name = view.getName()
  _refuse(bool(entry.springs), f"springs added to '{name}' with addSpring")
  _refuse(bool(entry.ignored_body_pairs), f"ignoreCollisionBetween on '{name}'")
  if entry.urdf_text:
    urdf_path = os.path.join(directory, f"{name or f'articulated_{index}'}.urdf")
    with open(urdf_path, "w", encoding="utf-8") as f:
      f.write(entry.urdf_text)
  else:
    _refuse(not entry.source, f"'{name}', built from a Child tree (it has no URDF),")
    urdf_path = os.path.abspath(entry.source)
  _refuse_edits_of_the_urdf(entry, name)
  attributes = dict(urdf_path=urdf_path, collision_group=str(int(entry.collision_group)),
                    collision_mask=str(int(entry.collision_mask)))
  if name:
    attributes["name"] = name
  if entry.res_path:
    attributes["res_dir"] = os.path.abspath(entry.res_path)
  element = _sub(objects, "articulated_system", **attributes)
  _sub(element, "state", qpos=view.getGeneralizedCoordinate(),
       qvel=view.getGeneralizedVelocity())
  if view.getControlMode() == ControlMode.PD_PLUS_FEEDFORWARD_TORQUE:
    p_gain, d_gain = view.getPdGains()
    p_target, d_target = view.getPdTarget()
    _sub(element, "pd", p_gain=p_gain, d_gain=d_gain, p_target=p_target, d_target=d_target)

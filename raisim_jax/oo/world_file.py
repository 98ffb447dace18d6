"""Builds a World from a parsed RaiSim world file (io/world_xml.py) through the World's own
API, so every value goes through the same checks as a script's calls; an error names the
file, line and element it came from."""

import numpy as np

from raisim_jax.math import quaternion
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
          Transformation(c.pos, np.asarray(quaternion.to_matrix(c.quat))))
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

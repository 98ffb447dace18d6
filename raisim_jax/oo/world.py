"""The OO World, with RaiSim's names: a builder for the description, a compiled (Model, State)
cache and the jitted pure step. It holds no physics.

Adding or removing an object changes the structure and recompiles on the next use; setting a
state or a physical parameter writes new leaves and reuses the compiled step.
"""

import copy
import dataclasses
import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from raisim_jax import validation
from raisim_jax.oo import (compilation_cache, mesh_objects, objects, precision, stored_steps,
                           world_file)
from raisim_jax.oo.stored_steps import StoredStep
from raisim_jax.oo.precision import in_world_precision
from raisim_jax.oo.articulated_collision import SIMULATED_SHAPES, collision_geometries
from raisim_jax.oo.articulated_system import ArticulatedSystem, ArticulatedSystemOption
from raisim_jax.collision import pairs
from raisim_jax.collision.ray import ray_test
from raisim_jax.compile import (SHAPE_TYPE_OF_OBJECT, Capacity, check_contact_settings,
                                block_move_for, collision_model, compile_world,
                                link_collision_shapes,
                                material_names, material_table, resolve_dtype,
                                sleeping_model, with_solver_settings)
from raisim_jax.host_arrays import device_array
from raisim_jax.oo.contact import Contact
from raisim_jax.description import (ALL_GROUPS, STATIC_GROUP, ArticulatedEntry,
                                    BroadphaseSettings, CollisionShape, ContactSettings,
                                    MaterialPairProperties, SingleBodyDescription,
                                    SleepSettings, WorldDescription)
from raisim_jax.io import mjcf, template, urdf, urdf_modules, world_xml
from raisim_jax.oo.ray_collision import RayCollisionItem, RayCollisionList
from raisim_jax.dynamics import gauss_seidel, mass_properties
from raisim_jax.collision import collision_bodies
from raisim_jax.step import integrate1, integrate2, step, step_no_contact_detection
from raisim_jax.types import BodyType, ObjectType
from raisim_jax.math import rotation

# One dispatch per contact listing: the contact frames of a State's buffer (types.Contacts).
_contact_frames = jax.jit(rotation.contact_frame)


# One compiled step per (bucketed) structure, shared by every World of the process; across
# processes the compiled step is stored (stored_steps.py) and its XLA compilation cached
# (compilation_cache.py).
def _one_world(function, block_move):
  """`function(model, state)` with `SolverModel.block_move` set: the World's steps are never
  vmapped, so a move runs on every row ("every_row": the compacted copy for batches would
  only add compile) or not at all ("off")."""
  def one_world(model, state):
    return function(model.replace(solver=model.solver.replace(block_move=block_move)), state)
  return one_world


# The island block move (dynamics/island_block.py) lets stacks and piles of single bodies
# converge in a few sweeps, and is ~40% of a world of single bodies' step compile. A World
# first steps with plain programs (no move, at most PLAIN_SWEEP_LIMIT sweeps); the first solve
# that runs into that limit (or into maxIter, when that is smaller and the move could have
# run) is redone by the program with the move, which the World then keeps. A 10-object world
# of boxes and spheres dropped on the ground needs at most 18 plain sweeps (5 with the move)
# and never compiles the move; a stack switches in its first steps.
PLAIN_SWEEP_LIMIT = 32

_STEP = StoredStep("step", _one_world(step, "every_row"))
_STEP_PLAIN = StoredStep("step_plain", _one_world(step, "off"))
_INTEGRATE1 = StoredStep("integrate1", integrate1)
_INTEGRATE2 = StoredStep("integrate2", _one_world(integrate2, "every_row"))
_INTEGRATE2_PLAIN = StoredStep("integrate2_plain", _one_world(integrate2, "off"))
# Without contact detection there are no contacts, so no move: "off" solves the same.
_STEP_NO_CONTACT_DETECTION = StoredStep("step_no_contact_detection",
                                        _one_world(step_no_contact_detection, "off"))
_RAY_TEST = jax.jit(ray_test)

def bucket_capacity(count: int) -> int:
  """Rows compiled for `count` bodies (or shapes of one type): 0, else the next power of
  two >= 4. Adding or removing objects inside a bucket keeps every static shape of the
  step, so the compiled step is reused."""
  return 0 if count == 0 else max(4, 1 << (int(count) - 1).bit_length())


def _padded_material_names(names, capacity):
  """`names` followed by unused placeholder names up to `capacity` entries."""
  return list(names) + [f"\x00unused{k}" for k in range(len(names), capacity)]


def COLLISION(index: int) -> int:
  """The collision-group bit of group `index` (0..63), as raisim::COLLISION."""
  index = int(index)
  if not 0 <= index < 64:
    raise ValueError(f"argument 'index' must be in [0, 63], got {index}")
  return 1 << index


def _material_properties(friction, restitution, threshold, static_friction, static_velocity):
  friction = validation.non_negative(friction, "friction")
  restitution = validation.non_negative(restitution, "restitution")
  if restitution > 1.0:
    warnings.warn(f"restitution {restitution} > 1: every bounce adds energy (RaiSim accepts "
                  f"it; a physical material has 0 <= restitution <= 1)", stacklevel=4)
  threshold = validation.non_negative(threshold, "resThreshold")
  if (static_friction is None) != (static_velocity is None):
    raise ValueError("arguments 'staticFriction' and 'staticFrictionThresholdVelocity' must be "
                     "given together")
  if static_friction is None:
    static_friction, static_velocity = friction, 0.0
  static_friction = validation.non_negative(static_friction, "staticFriction")
  static_velocity = validation.non_negative(static_velocity, "staticFrictionThresholdVelocity")
  return MaterialPairProperties(friction, restitution, threshold, static_friction,
                                static_velocity)


def _collision_bits(value, name):
  """A 64-bit group/mask; -1 (RaiSim's CollisionGroup(-1)) means all groups."""
  if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
    raise ValueError(f"argument '{name}' must be an integer of collision bits, got {value!r}")
  value = int(value)
  if value < 0:
    value &= ALL_GROUPS
  if value > ALL_GROUPS:
    raise ValueError(f"argument '{name}' must fit in 64 bits, got {value}")
  return value


def _every_local_body(localIdx) -> bool:
  """RaiSim's localIdx = size_t(-1) (any negative int here): every local body."""
  return (isinstance(localIdx, (int, np.integer)) and not isinstance(localIdx, (bool, np.bool_))
          and localIdx < 0)


_VIEW_CLASS = {
    ObjectType.SPHERE: objects.Sphere, ObjectType.BOX: objects.Box,
    ObjectType.CYLINDER: objects.Cylinder, ObjectType.CONE: objects.Cone,
    ObjectType.CAPSULE: objects.Capsule, ObjectType.HALFSPACE: objects.Ground,
    ObjectType.COMPOUND: objects.Compound, ObjectType.MESH: objects.Mesh,
}

_BODY_MODEL_FIELD = {"mass": "mass", "inertia": "inertia_body",
                     "linear_damping": "linear_damping", "angular_damping": "angular_damping",
                     "body_type": "body_type"}


_ARTICULATED_SETTINGS = ("resPath", "jointOrder", "collisionGroup", "collisionMask", "options")


def _is_parameter_list(value):
  """A template's parameters: a mapping, or a list of ParameterContainer / (name, value)."""
  if isinstance(value, dict):
    return True
  return (isinstance(value, (list, tuple)) and len(value) > 0 and all(
      isinstance(v, ParameterContainer) or (isinstance(v, (list, tuple)) and len(v) == 2)
      for v in value))


def _articulated_arguments(args, kwargs):
  """{resPath, jointOrder, collisionGroup, collisionMask, options, modules, params} from
  addArticulatedSystem's positional and keyword arguments after the URDF (see its
  docstring); a TypeError names an argument given twice, unknown, or of no overload."""
  settings = dict(resPath="", jointOrder=(), collisionGroup=1, collisionMask=-1, options=None,
                  modules=None, params=None)
  unknown = set(kwargs) - set(settings)
  if unknown:
    raise TypeError(f"addArticulatedSystem: unknown argument(s) {', '.join(sorted(unknown))}")
  positional = list(args)
  if positional and not isinstance(positional[0], (str, os.PathLike)):
    second = positional.pop(0)
    if _is_parameter_list(second):
      settings["params"] = second
    elif isinstance(second, (list, tuple)) and all(isinstance(m, (str, os.PathLike))
                                                   for m in second):
      settings["modules"] = list(second)
    else:
      raise TypeError(f"addArticulatedSystem: the second argument must be resPath (a path), "
                      f"a list of URDF module file names, or template parameters (a dict or "
                      f"a list of ParameterContainer), got {type(second).__name__}")
  if len(positional) > len(_ARTICULATED_SETTINGS):
    raise TypeError("addArticulatedSystem: too many positional arguments")
  for name, value in zip(_ARTICULATED_SETTINGS, positional):
    if name in kwargs:
      raise TypeError(f"addArticulatedSystem: argument '{name}' given twice")
    settings[name] = value
  settings.update(kwargs)
  if not isinstance(settings["resPath"], (str, os.PathLike)):
    raise TypeError(f"addArticulatedSystem: argument 'resPath' must be a path string, got "
                    f"{type(settings['resPath']).__name__}")
  if settings["params"] is not None and not _is_parameter_list(settings["params"]) \
      and settings["params"] != {}:
    raise TypeError("addArticulatedSystem: 'params' must be a dict or a list of "
                    "ParameterContainer")
  return settings


@dataclasses.dataclass
class ParameterContainer:
  """One template parameter (RaiSim's ParameterContainer): `@@name` in a template takes
  `value` (a string, or a number written in full precision)."""
  name: str
  value: object


class DivergenceError(RuntimeError):
  """A step made the world's state non-finite (NaN or inf); the world keeps the state before
  that step."""


@jax.jit
def _written(leaves, row, values):
  """{name: leaves[name] with `row` (an index; None: every row) set to values[name], cast to
  the leaf's dtype}: one XLA call for all the leaves a setter writes (eager `.at[].set` cost a
  dispatch of ~100 us per leaf, a device_put ~25 us). The results stay committed to the
  leaves' device (they depend on the leaves), as the step's cache needs (see World._model)."""
  index = () if row is None else row
  return {name: leaf.at[index].set(jnp.asarray(values[name]).astype(leaf.dtype))
          for name, leaf in leaves.items()}


_AWAKE = {"quiet_steps": np.asarray(0), "sleeping": np.asarray(False)}


def _awake(bodies, row):
  """SingleBodyState fields with the quiet-step counters of `row` (an index or an index array;
  None: every body) restarted: awake (`_written`)."""
  return _written({name: getattr(bodies, name) for name in _AWAKE}, row, _AWAKE)


@in_world_precision
class World:
  """A RaiSim world: objects, gravity, time step and time, stepped by the pure core.

  Args:
    configFile: optional RaiSim world file (XML) to build the world from
      (io/world_xml.py); objects can be added in code afterwards.
    params: template parameters of the file (a dict name -> value or a list of
      ParameterContainer), over the file's own <params>.
    dtype: float64 (default, RaiSim's precision) or float32 (keyword).
  """

  def __init__(self, configFile=None, params=None, *, dtype=jnp.float64):
    if configFile is not None and not isinstance(configFile, (str, os.PathLike)):
      raise TypeError(f"World(configFile): expected the path of a world file, got "
                      f"{configFile!r}; pass a precision as World(dtype=...)")
    with precision.context(dtype):
      self._dtype = resolve_dtype(dtype)
    self._description = WorldDescription()
    self._objects = []
    self._compound_children = {}
    self._device = jax.local_devices()[0]   # this process's (devices()[0]: maybe not)
    self._device_sharding = jax.sharding.SingleDeviceSharding(self._device)
    self._body_types_cache = None   # (Model, host BodyType table): _collision_body_types
    self._committed_model = None
    self._plain_model = None
    self._plain_sweep_limit = None
    self._uses_block_move = False   # see PLAIN_SWEEP_LIMIT
    self._state = None
    self._dirty = True
    self._configuration_number = 0
    self._contact_cache = None
    self._capacity_marks = {}     # "bodies" / ShapeType code -> compiled rows (never shrinks)
    self._compiled_capacity = None
    self._compiled_material_names = []
    stored_steps.use_directory(compilation_cache.enable_default())
    self._config_file = ""
    if configFile is not None:
      # In the world's precision like its public methods: the file's rotations go through
      # the jnp quaternion helpers, which round to float32 where x64 is off.
      with precision.context(self._dtype):
        self._load_config(configFile, params)

  def _load_config(self, configFile, params):
    if mjcf.is_mjcf(configFile):
      if params:
        raise ValueError(f"{configFile}: template parameters apply to RaiSim world files, "
                         f"not to MJCF")
      model = mjcf.load(configFile)
      self._config_file = model.path
      world_file.populate_mjcf(self, model)
    else:
      spec = world_xml.load(configFile, params)
      self._config_file = spec.path
      world_file.populate(self, spec)

  def exportToXml(self, dirOrPath, fileName=None):
    """Writes this world as a RaiSim world file: exportToXml(dir, fileName) or
    exportToXml(path). Loading it (World(path)) gives the same Model and State (poses,
    velocities, masses, inertias, materials, collision filters, PD settings); a setting the
    format cannot hold (damping, added springs, ignoreCollisionBetween, a Child-built
    system) raises ValueError."""
    path = str(dirOrPath) if fileName is None else os.path.join(str(dirOrPath), str(fileName))
    self._ensure_compiled()
    world_file.export(self, path)

  def exportMeshAssetsToObj(self, directory, prefix="mesh"):
    """Writes every Mesh object's mesh as an OBJ file `<directory>/<prefix>_<k>.obj` (k counts
    the meshes in the world's object order, which the returned paths follow): its triangles
    in the mesh frame, in metres, with the object's scale applied (one mesh, no materials).
    Creates `directory` if needed. Raises ValueError naming a mesh whose file is gone."""
    if not isinstance(prefix, str) or not prefix or os.sep in prefix:
      raise ValueError(f"argument 'prefix' must be a non-empty file-name prefix, got {prefix!r}")
    os.makedirs(str(directory), exist_ok=True)
    paths = []
    for view in self._objects:
      if view.getObjectType() != ObjectType.MESH:
        continue
      path = os.path.join(str(directory), f"{prefix}_{len(paths)}.obj")
      mesh_objects.export_obj(view._description.mesh, path)
      paths.append(path)
    return paths

  def getConfigFile(self) -> str:
    """The world file this world was built from ("" for a world built in code)."""
    return self._config_file

  # ---- compile cache --------------------------------------------------------------------
  def _single_objects(self):
    return [o for o in self._objects if isinstance(o, objects.SingleBodyObject)]

  def _articulated_objects(self):
    return [o for o in self._objects if isinstance(o, ArticulatedSystem)]

  def _body_row(self, obj) -> int:
    """Row of a single-body object in the Model/State single-body arrays (object order;
    padding rows follow)."""
    for row, candidate in enumerate(self._single_objects()):
      if candidate is obj:
        return row
    raise KeyError(f"object '{obj.getName()}' is not in this world (was it removed?)")

  def _articulated_row(self, obj) -> int:
    """Index of an articulated system in Model.articulated / State.articulated."""
    for row, candidate in enumerate(self._articulated_objects()):
      if candidate is obj:
        return row
    raise KeyError(f"object '{obj.getName()}' is not in this world (was it removed?)")

  def _articulated_state(self, obj):
    return self._current_state().articulated[self._articulated_row(obj)]

  def _articulated_model(self, obj):
    return self._current_model().articulated[self._articulated_row(obj)]

  def _write_articulated_state(self, obj, **fields):
    """Replaces fields of an articulated system's state (values cast to the world dtype)."""
    self._ensure_compiled()
    row = self._articulated_row(obj)
    systems = list(self._state.articulated)
    system = systems[row]
    systems[row] = system.replace(**_written(
        {name: getattr(system, name) for name in fields}, None,
        {name: np.asarray(value) for name, value in fields.items()}))
    self._set_state(self._state.replace(articulated=tuple(systems)), committed=True)

  def _write_articulated_model(self, obj, system_model):
    """Replaces an articulated system's model (same structure: no recompile)."""
    self._ensure_compiled()
    row = self._articulated_row(obj)
    systems = list(self._model.articulated)
    systems[row] = system_model
    self._model = self._model.replace(articulated=tuple(systems))

  def _sync_description_from_state(self):
    """Copies the current state into the descriptions before a structural recompile. Once
    dirty, the descriptions are already current (the state is stale and its rows no longer
    match the object list), so a second edit in a row copies nothing."""
    if self._state is None or self._dirty:
      return
    for obj, system in zip(self._articulated_objects(), self._state.articulated):
      obj._entry.generalized_coordinate = np.asarray(system.generalized_coordinate, np.float64)
      obj._entry.generalized_velocity = np.asarray(system.generalized_velocity, np.float64)
      obj._entry.feedforward_force = np.asarray(system.feedforward_force, np.float64)
      obj._entry.p_target = np.asarray(system.p_target, np.float64)
      obj._entry.d_target = np.asarray(system.d_target, np.float64)
    bodies = jax.tree.map(np.asarray, self._state.bodies)
    for index, obj in enumerate(self._single_objects()):
      d = obj._description
      d.position = bodies.position[index].astype(np.float64)
      d.quaternion = bodies.quaternion[index].astype(np.float64)
      d.linear_velocity = bodies.linear_velocity[index].astype(np.float64)
      d.angular_velocity = bodies.angular_velocity[index].astype(np.float64)
      d.external_force = bodies.external_force[index].astype(np.float64)
      d.external_torque = bodies.external_torque[index].astype(np.float64)
    self._description.time = float(self._state.time)

  def _layout(self):
    """(description, capacity): the world description (single bodies in object order) and
    the padded capacity to compile it with: body rows and single-body shape rows per type
    rounded up to buckets (high-water marks, never shrinking, so a remove-add cycle does
    not recompile)."""
    singles = self._single_objects()
    self._description.bodies = [obj._description for obj in singles]
    self._description.articulated = [obj._entry for obj in self._articulated_objects()]
    shape_counts = {}
    for obj in singles:
      for shape in obj._description.shapes:
        code = int(SHAPE_TYPE_OF_OBJECT[shape.object_type])
        shape_counts[code] = shape_counts.get(code, 0) + 1
    marks = self._capacity_marks
    marks["bodies"] = max(marks.get("bodies", 0), bucket_capacity(len(singles)))
    for code, count in shape_counts.items():
      marks[code] = max(marks.get(code, 0), bucket_capacity(count))
    shapes = tuple(sorted((k, v) for k, v in marks.items() if k != "bodies"))
    return self._description, Capacity(bodies=marks["bodies"], shapes=shapes)

  def _material_names(self, description):
    """The compiled material names: the known ones keep their ids, new ones take unused
    slots; a bucket (power of two >= 8) of ids, so a new name rarely recompiles."""
    names = [n for n in self._compiled_material_names if not n.startswith("\x00")]
    names += [n for n in material_names(description) if n not in names]
    return _padded_material_names(names, bucket_capacity(max(len(names), 8)))

  def _ensure_compiled(self):
    if self._dirty:
      description, capacity = self._layout()
      self._compiled_material_names = self._material_names(description)
      # Unsupported collision geometry was reported when the system was added.
      model, state = compile_world(description, self._dtype,
                                   names=self._compiled_material_names, capacity=capacity,
                                   warn=False)
      self._model = model
      self._compiled_capacity = capacity
      self._set_state(state)
      self._dirty = False

  def _structure_changed(self):
    self._sync_description_from_state()
    self._dirty = True
    self._configuration_number += 1

  # Every Model / State the world holds is committed to its device, like the step's outputs:
  # jit keys its cache on committedness, so one leaf written by a setter as an uncommitted
  # array made the next integrate() compile the whole step again (15 s for a quadruped).
  @property
  def _model(self):
    return self._committed_model

  @_model.setter
  def _model(self, model):
    self._committed_model = self._on_device(model)
    self._plain_model = None   # _solving_step's copy with its sweep limit, made when needed

  def _current_state(self):
    self._ensure_compiled()
    return self._state

  def _set_state(self, state, committed=False):
    """Holds `state`, committed to the world's device (see `_model`); `committed=True` where
    every leaf already is: the step's outputs and the setters' writes (`_written`)."""
    self._state = state if committed else self._on_device(state)
    self._contact_cache = None

  def _on_device(self, tree):
    """`tree` with every leaf committed to this world's device. Leaves already there (all
    but the few a setter wrote) are kept: a device_put of the whole State cost a setter ~0.5
    ms, as much as a quadruped's step."""
    leaves, treedef = jax.tree.flatten(tree)
    moving = [i for i, leaf in enumerate(leaves) if not self._is_on_device(leaf)]
    if moving:
      for i, leaf in zip(moving, jax.device_put([leaves[i] for i in moving], self._device)):
        leaves[i] = leaf
    return jax.tree.unflatten(treedef, leaves)

  def _is_on_device(self, leaf):
    return (isinstance(leaf, jax.Array) and leaf.committed
            and leaf.sharding == self._device_sharding)

  def _current_model(self):
    self._ensure_compiled()
    return self._model

  def compile(self):
    """(model, state): the pure-core pytrees of this world, for jit/vmap/grad use. The
    Model leaves out the island block move where no dynamic single body can have two contact
    rows with single bodies (`block_move_for`: it would never run; ~25% less XLA compile for
    a world of robots on the ground)."""
    self._ensure_compiled()
    solver = self._model.solver
    move = block_move_for(self._model, solver.block_move)
    if move == solver.block_move:
      return self._model, self._state
    return self._model.replace(solver=solver.replace(block_move=move)), self._state

  def getMaterialIndex(self, name):
    """Row/column of material `name` in the compiled Model's pair table
    (`model.solver.pair_table`, `batching.WorldParameters.friction`); a raisim_jax extension
    for per-world parameters. KeyError for a material no object or pair uses."""
    self._ensure_compiled()
    if name not in self._compiled_material_names:
      known = ", ".join(n for n in self._compiled_material_names if not n.startswith("\x00"))
      raise KeyError(f"unknown material '{name}' (the world's materials: {known})")
    return self._compiled_material_names.index(name)

  def setState(self, state):
    """Replaces the world's State (e.g. one taken from a batched rollout)."""
    self._ensure_compiled()
    self._set_state(state)

  # ---- writes from object views ---------------------------------------------------------
  def _write_body_state(self, obj, fields):
    """Writes state rows of a single body; while the world awaits a recompile (objects were
    added) the description takes the values, so building a scene compiles once."""
    if self._dirty:
      for name, value in fields.items():
        setattr(obj._description, name, np.array(value, np.float64))
      return
    index = self._body_row(obj)
    bodies = self._state.bodies
    # Any edit keeps the body's island awake (the spec's sleeping rules).
    values = {**{name: np.asarray(value) for name, value in fields.items()}, **_AWAKE}
    updates = _written({name: getattr(bodies, name) for name in values}, index, values)
    self._set_state(self._state.replace(bodies=bodies.replace(**updates)), committed=True)

  def _write_body_model(self, obj, **fields):
    description = obj._description
    for name, value in fields.items():
      setattr(description, name, value)
    if self._dirty:
      return
    index = self._body_row(obj)
    bodies = self._model.bodies
    values = {_BODY_MODEL_FIELD[name]: np.asarray(value) for name, value in fields.items()}
    updates = _written({name: getattr(bodies, name) for name in values}, index, values)
    self._model = self._model.replace(bodies=bodies.replace(**updates))
    self._wake_rows([index])

  def _add_external_load(self, obj, force, torque):
    if self._dirty:
      d = obj._description
      self._write_body_state(obj, {"external_force": d.external_force + force,
                                   "external_torque": d.external_torque + torque})
      return
    index = self._body_row(obj)
    bodies = self._state.bodies
    self._write_body_state(obj, {
        "external_force": np.asarray(bodies.external_force)[index] + force,
        "external_torque": np.asarray(bodies.external_torque)[index] + torque,
    })

  def _index_of(self, obj) -> int:
    for index, candidate in enumerate(self._objects):
      if candidate is obj:
        return index
    raise KeyError(f"object '{obj.getName()}' is not in this world (was it removed?)")

  def _rename(self, obj, name):
    if name and any(o is not obj and o.getName() == name for o in self._objects):
      raise ValueError(f"argument 'name': an object named '{name}' already exists")
    obj._description.name = name

  # ---- adding objects -------------------------------------------------------------------
  def _add_body(self, object_type, size, mass, inertia, material, group, mask, body_type,
                shapes=None, com=None, position=None, mesh=None):
    description = SingleBodyDescription(
        name="", object_type=object_type, size=np.asarray(size, np.float64),
        mass=float(mass), inertia=np.asarray(inertia, np.float64),
        com=np.zeros(3) if com is None else com,
        shapes=shapes if shapes is not None else [
            CollisionShape(object_type, np.asarray(size, np.float64), material=material)],
        body_type=body_type,
        collision_group=_collision_bits(group, "collisionGroup"),
        collision_mask=_collision_bits(mask, "collisionMask"),
        mesh=mesh,
    )
    if position is not None:
      description.position = position
    self._structure_changed()
    view = _VIEW_CLASS[object_type](self, description)
    self._objects.append(view)
    return view

  def addSphere(self, radius, mass, material="default", collisionGroup=1, collisionMask=-1):
    """Adds a dynamic sphere; its body origin is its COM."""
    radius = validation.positive(radius, "radius")
    mass = validation.positive(mass, "mass")
    return self._add_body(ObjectType.SPHERE, [radius, 0, 0, 0], mass,
                          mass_properties.sphere_inertia(mass, radius), material,
                          collisionGroup, collisionMask, BodyType.DYNAMIC)

  def addBox(self, xLength, yLength, zLength, mass, material="default", collisionGroup=1,
             collisionMask=-1):
    """Adds a dynamic box of full side lengths x, y, z."""
    dims = [validation.positive(v, n) for v, n in
            ((xLength, "xLength"), (yLength, "yLength"), (zLength, "zLength"))]
    mass = validation.positive(mass, "mass")
    return self._add_body(ObjectType.BOX, dims + [0], mass,
                          mass_properties.box_inertia(mass, *dims), material,
                          collisionGroup, collisionMask, BodyType.DYNAMIC)

  def _add_axial(self, object_type, inertia_function, radius, height, mass, material, group,
                 mask):
    radius = validation.positive(radius, "radius")
    height = validation.positive(height, "height")
    mass = validation.positive(mass, "mass")
    return self._add_body(object_type, [radius, height, 0, 0], mass,
                          inertia_function(mass, radius, height), material, group, mask,
                          BodyType.DYNAMIC)

  def addCylinder(self, radius, height, mass, material="default", collisionGroup=1,
                  collisionMask=-1):
    """Adds a dynamic cylinder (axis z, total length `height`)."""
    return self._add_axial(ObjectType.CYLINDER, mass_properties.cylinder_inertia, radius,
                           height, mass, material, collisionGroup, collisionMask)

  def addCapsule(self, radius, height, mass, material="default", collisionGroup=1,
                 collisionMask=-1):
    """Adds a dynamic capsule (axis z, `height` between the hemisphere centres)."""
    return self._add_axial(ObjectType.CAPSULE, mass_properties.capsule_inertia, radius,
                           height, mass, material, collisionGroup, collisionMask)

  def addCone(self, radius, height, mass, material="default", collisionGroup=1,
              collisionMask=-1):
    """Adds a dynamic cone (axis z, origin at the COM: base at -h/4, apex at +3h/4)."""
    return self._add_axial(ObjectType.CONE, mass_properties.cone_inertia, radius, height,
                           mass, material, collisionGroup, collisionMask)

  def addGround(self, zHeight=0.0, material="default", collisionMask=-1):
    """Adds the static half-space z <= zHeight (collision group 63)."""
    height = float(zHeight)
    if not np.isfinite(height):
      raise ValueError(f"argument 'zHeight' must be finite, got {zHeight!r}")
    return self._add_body(ObjectType.HALFSPACE, [height, 0, 0, 0], 0.0, np.eye(3), material,
                          STATIC_GROUP, collisionMask, BodyType.STATIC,
                          shapes=[CollisionShape(ObjectType.HALFSPACE,
                                                 np.array([0.0, 0, 0, 0]), material=material)],
                          position=np.array([0.0, 0.0, height]))

  def addCompound(self, children, mass, COM, inertia, collisionGroup=1, collisionMask=-1):
    """Adds one rigid body made of primitive `children` (CompoundObjectChild list).

    Args:
      children: CompoundObjectChild list; each child's `trans` places it in the compound frame.
      mass: total mass. COM: (3,) centre of mass in the compound frame. inertia: (3, 3) about
        the COM, compound frame. The body's position is its COM.
    """
    mass = validation.positive(mass, "mass")
    com = validation.vector(COM, 3, "COM")
    inertia = validation.inertia(inertia, "inertia")
    if len(children) == 0:
      raise ValueError("argument 'children' must hold at least one CompoundObjectChild")
    shapes = []
    for k, child in enumerate(children):
      if child.objectType not in (ObjectType.SPHERE, ObjectType.BOX, ObjectType.CYLINDER,
                                  ObjectType.CONE, ObjectType.CAPSULE):
        raise ValueError(f"children[{k}]: objectType {child.objectType!r} is not a primitive")
      size = validation.vector(child.objectParam, 4, f"children[{k}].objectParam")
      count = 3 if child.objectType == ObjectType.BOX else (
          1 if child.objectType == ObjectType.SPHERE else 2)
      if np.any(size[:count] <= 0):
        raise ValueError(f"children[{k}].objectParam must be positive, got {size[:count]}")
      shapes.append(CollisionShape(
          child.objectType, size,
          position=validation.vector(child.trans.pos, 3, f"children[{k}].trans.pos"),
          rotation=validation.rotation_matrix(child.trans.rot, f"children[{k}].trans.rot"),
          material=child.material))
    view = self._add_body(ObjectType.COMPOUND, [0, 0, 0, 0], mass, inertia, "default",
                          collisionGroup, collisionMask, BodyType.DYNAMIC, shapes=shapes,
                          com=com)
    self._compound_children[id(view._description)] = list(children)
    return view

  def addMesh(self, meshFileInObjFormat, *args, **kwargs):
    """Adds a dynamic rigid body that collides through the convex hulls of a mesh file (any
    format trimesh reads: OBJ, STL, DAE, ...); RaiSim's overloads:

      addMesh(file, mass, scale=1, material="", collisionGroup=1, collisionMask=-1)
      addMesh(file, mass, scale, material, collisionMode, collisionGroup=1,
              collisionMask=-1, coacdOptions=CoacdOptions())
      addMesh(file, mass, scale, material, coacdOptions, collisionGroup=1, collisionMask=-1)
      addMesh(file, mass, inertia, COM, scale=1, material="", ...)   # the same three tails
      addMesh(meshToClone, material="", collisionGroup=1, collisionMask=-1)

    collisionMode (MeshCollisionMode): CONVEXIFY (default) collides through CoACD's convex
    parts, cached beside the file (io/convex_decomposition.py); CONVEX_HULL through one
    convex hull. Each hull keeps at most 64 vertices (io/collision_mesh.py). ORIGINAL_MESH,
    and RaiSim's fallback to it where CoACD fails, are refused: raisim_jax does not collide
    non-convex triangle meshes. Without `inertia` and `COM` the body is a uniform box filling
    the scaled mesh's axis-aligned bounding box (its centre the COM). `inertia` (3, 3) is
    about the COM, mesh frame; `COM` (3,) in the mesh frame. The body's position is its
    COM's. material "" is the default material. A clone shares the source's shapes, mass and
    inertia (not its state).

    Raises:
      ValueError naming the argument or the file (missing, unreadable, flat, not
      decomposable); TypeError for arguments of no overload."""
    if isinstance(meshFileInObjFormat, objects.Mesh):
      return self._clone_mesh(meshFileInObjFormat, *args, **kwargs)
    arguments = mesh_objects.parse_arguments(meshFileInObjFormat, args, kwargs)
    body = mesh_objects.mesh_body(arguments)
    return self._add_body(ObjectType.MESH, [0, 0, 0, 0], body.mass, body.inertia, "default",
                          arguments.collision_group, arguments.collision_mask,
                          BodyType.DYNAMIC, shapes=body.shapes, com=body.com,
                          mesh=body.source)

  def _clone_mesh(self, meshToClone, material="", collisionGroup=1, collisionMask=-1):
    material = mesh_objects.material_name(material)
    source = meshToClone._description
    shapes = [dataclasses.replace(shape, material=material,
                                  collision_group=None, collision_mask=None)
              for shape in source.shapes]
    return self._add_body(ObjectType.MESH, [0, 0, 0, 0], source.mass, source.inertia.copy(),
                          "default", collisionGroup, collisionMask, BodyType.DYNAMIC,
                          shapes=shapes, com=source.com.copy(), mesh=source.mesh)

  def addArticulatedSystem(self, filePathOrURDFScript, *args, **kwargs):
    """Adds an articulated system; RaiSim's three overloads, told apart by the second argument:

      addArticulatedSystem(urdf, resPath="", jointOrder=(), collisionGroup=1,
                           collisionMask=-1, options=None)
      addArticulatedSystem(urdf, modules, resPath="", ...)   # a list of module file names
      addArticulatedSystem(template, params, resPath="", ...)  # a dict name -> value or a
                                                               # list of ParameterContainer

    `urdf` is a path, URDF text (decided by content) or a `Child` tree (programmatic
    construction). Modules are inserted before `</robot>` (io/urdf_modules.py; the composed
    file is written into the URDF's directory or resPath); a template's `@@name` variables
    and `{expressions}` are evaluated first (io/template.py). The generalized coordinate
    starts at zero joint angles with an identity base orientation."""
    settings = _articulated_arguments(args, kwargs)
    modules, params = settings.pop("modules"), settings.pop("params")
    resPath, jointOrder = settings["resPath"], settings["jointOrder"]
    collisionGroup, collisionMask = settings["collisionGroup"], settings["collisionMask"]
    options = settings["options"]
    if modules:
      if isinstance(filePathOrURDFScript, urdf.Child):
        raise TypeError("addArticulatedSystem: URDF modules need a URDF path or text, not a "
                        "Child tree")
      filePathOrURDFScript = urdf_modules.compose(str(filePathOrURDFScript), modules,
                                                  str(resPath))
    if options is None:
      options = ArticulatedSystemOption()
    if not isinstance(options, ArticulatedSystemOption):
      raise ValueError(f"argument 'options' must be an ArticulatedSystemOption, got "
                       f"{type(options).__name__}")
    if isinstance(filePathOrURDFScript, urdf.Child):
      description = urdf.description_from_child(
          filePathOrURDFScript, joint_order=list(jointOrder) or None)
      source, urdf_text = "", ""
    else:
      text = str(filePathOrURDFScript)
      description = urdf.load_urdf(text, res_path=resPath, joint_order=list(jointOrder) or None,
                                   params=params)
      is_text = text.lstrip().startswith("<") or "<robot" in text
      source = "" if is_text else text
      urdf_text = text if is_text else ""
      if params is not None:
        if not is_text:
          with open(text, encoding="utf-8") as f:
            urdf_text = f.read()
        urdf_text = template.preprocess(urdf_text, params, text if not is_text else "<string>")
    return self._add_articulated(description, collisionGroup, collisionMask, options,
                                 source=source, res_path=str(resPath), urdf_text=urdf_text)

  def _add_articulated(self, description, collision_group, collision_mask, options, **entry):
    """Adds an articulated system from its merged description (a URDF's, an MJCF body
    tree's); `entry`: ArticulatedEntry fields (source, res_path, urdf_text)."""
    entry = ArticulatedEntry(
        name="", description=description,
        generalized_coordinate=description.zero_configuration(),
        generalized_velocity=np.zeros(description.dof),
        feedforward_force=np.zeros(description.dof),
        collision_group=_collision_bits(collision_group, "collisionGroup"),
        collision_mask=_collision_bits(collision_mask, "collisionMask"),
        do_not_collide_with_parent=bool(options.doNotCollideWithParent), **entry)
    meshes = [g.name or g.link for _, g in collision_geometries(description)
              if g.shape == "mesh"]
    if meshes and not options.convexifyCollisionMeshes:
      raise ValueError(f"ArticulatedSystemOption.convexifyCollisionMeshes = False (collision "
                       f"with the original triangle meshes) is not supported: collision meshes "
                       f"collide as their convex hulls (set it True); meshes: "
                       f"{', '.join(meshes)}")
    # Once, at the user's addArticulatedSystem call: collision meshes read (a missing file
    # raises here) and a warning for collision bodies that will not collide.
    link_collision_shapes(entry, warn=True, stacklevel=5)
    self._structure_changed()
    view = ArticulatedSystem(self, entry)
    self._objects.append(view)
    return view

  def removeObject(self, obj):
    """Removes an object; the world recompiles on next use."""
    index = self._index_of(obj)
    self._structure_changed()
    del self._objects[index]

  # ---- lookup ---------------------------------------------------------------------------
  def getObject(self, key):
    """getObject(name) or getObject(worldIndex). KeyError if absent."""
    if isinstance(key, str):
      for obj in self._objects:
        if obj.getName() == key:
          return obj
      raise KeyError(f"no object named '{key}' in the world")
    index = int(key)
    if not 0 <= index < len(self._objects):
      raise KeyError(f"no object with world index {index} (the world has "
                     f"{len(self._objects)} objects)")
    return self._objects[index]

  def getObjList(self):
    return list(self._objects)

  def getConfigurationNumber(self) -> int:
    return self._configuration_number

  # ---- gravity, time ---------------------------------------------------------------------
  def setGravity(self, gravity):
    """Sets gravity (m/s^2, world frame) and wakes every sleeping island."""
    gravity = validation.vector(gravity, 3, "gravity")
    self._description.gravity = gravity
    if not self._dirty:
      self._model = self._model.replace(gravity=jnp.asarray(gravity, self._dtype))
      self.wakeAll()

  # ---- sleeping islands ------------------------------------------------------------------
  def setSleepingEnabled(self, enabled):
    """Enables or disables sleeping islands (on by default; a Model leaf: no recompile).
    Rules: dynamics/sleeping.py's docstring."""
    self._description.sleeping.enabled = bool(enabled)
    self._sleeping_changed()

  def isSleepingEnabled(self) -> bool:
    return bool(self._description.sleeping.enabled)

  def setSleepingParameters(self, linearVelThreshold, angularVelThreshold, quietSteps):
    """An island sleeps once all its bodies stayed below `linearVelThreshold` (m/s) and
    `angularVelThreshold` (rad/s) for `quietSteps` consecutive steps (defaults 0.002, 0.01,
    2)."""
    steps = quietSteps
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
      raise ValueError(f"argument 'quietSteps' must be an integer >= 1, got {quietSteps!r}")
    self.setSleepingVelocityThresholds(linearVelThreshold, angularVelThreshold)
    self._description.sleeping.quiet_steps = int(steps)
    self._sleeping_changed()

  def setSleepingVelocityThresholds(self, linearVelThreshold, angularVelThreshold):
    linear = validation.non_negative(linearVelThreshold, "linearVelThreshold")
    angular = validation.non_negative(angularVelThreshold, "angularVelThreshold")
    settings = self._description.sleeping
    settings.linear_threshold, settings.angular_threshold = linear, angular
    self._sleeping_changed()

  def getSleepingParameters(self) -> SleepSettings:
    """A copy of the sleeping settings (enabled, linear_threshold, angular_threshold,
    quiet_steps)."""
    return copy.deepcopy(self._description.sleeping)

  def wakeObject(self, obj):
    """Wakes `obj` and with it its island: its quiet-step counter restarts, so the island
    stays awake for at least quietSteps steps. Articulated systems never sleep."""
    if obj not in self._articulated_objects():
      self._wake_rows([self._body_row(obj)])

  def wakeAll(self):
    self._wake_rows(None)

  def isObjectSleeping(self, obj) -> bool:
    """True if the object's island slept through the last step."""
    if obj in self._articulated_objects():
      return False
    row = self._body_row(obj)        # raises for an object that is not in this world
    if self._dirty or self._state is None:
      return False
    return bool(np.asarray(self._state.bodies.sleeping)[row])

  def _sleeping_changed(self):
    if not self._dirty:
      self._model = self._model.replace(
          sleeping=sleeping_model(self._description.sleeping, self._dtype))

  def _wake_rows(self, rows):
    """Restarts the quiet-step counters of single-body `rows` (None: all)."""
    if self._dirty or self._state is None:
      return       # a recompile starts every body awake
    bodies = self._state.bodies
    awake = _awake(bodies, None if rows is None else np.asarray(rows))
    self._set_state(self._state.replace(bodies=bodies.replace(**awake)), committed=True)

  def getGravity(self):
    return np.array(self._description.gravity, np.float64)

  def setTimeStep(self, dt):
    dt = validation.positive(dt, "dt")
    if dt > validation.LARGE_TIME_STEP:
      warnings.warn(f"setTimeStep({dt}): a time step above {validation.LARGE_TIME_STEP} s "
                    f"makes contacts, PD control and integration inaccurate or unstable "
                    f"(RaiSim accepts it; typical steps are 1e-4 .. 1e-2 s)", stacklevel=3)
    self._description.time_step = dt
    if not self._dirty:
      self._model = self._model.replace(time_step=jnp.asarray(dt, self._dtype))

  def getTimeStep(self) -> float:
    return float(self._description.time_step)

  def getWorldTime(self) -> float:
    return float(self._current_state().time)

  def setWorldTime(self, time):
    time = float(time)
    if not np.isfinite(time):
      raise ValueError(f"argument 'time' must be finite, got {time!r}")
    self._ensure_compiled()
    self._set_state(self._state.replace(**_written({"time": self._state.time}, None,
                                                   {"time": np.asarray(time)})),
                    committed=True)

  # ---- stepping ---------------------------------------------------------------------------
  def integrate(self):
    """integrate1() then integrate2(): one time step."""
    self._ensure_compiled()
    self._accept_step(self._solving_step(_STEP_PLAIN, _STEP), "integrate")

  def integrate1(self):
    """Collision detection for the current configuration."""
    self._ensure_compiled()
    self._accept_step(_INTEGRATE1(self._model, self._state), "integrate1")

  def integrate2(self):
    """Contact solve and integration; advances the world time."""
    self._ensure_compiled()
    self._accept_step(self._solving_step(_INTEGRATE2_PLAIN, _INTEGRATE2), "integrate2")

  def _solving_step(self, plain, with_block_move):
    """The state after one step of `plain` (no island block move) where its solve stopped
    before PLAIN_SWEEP_LIMIT sweeps, else of `with_block_move`, which this World then keeps
    using (see PLAIN_SWEEP_LIMIT)."""
    if not self._uses_block_move:
      if self._plain_model is None:
        solver = self._model.solver
        limit = int(solver.max_iterations)
        # The move needs a dynamic single body with two rows among single bodies and more
        # than BLOCK_SWEEP sweeps: elsewhere (a robot or a lone ball on the ground, maxIter
        # <= BLOCK_SWEEP) the plain solve is the solve.
        if block_move_for(self._model) != "off" and limit > gauss_seidel.BLOCK_SWEEP:
          limit = self._plain_sweep_limit = min(limit, PLAIN_SWEEP_LIMIT)
        else:
          self._plain_sweep_limit = None
        self._plain_model = jax.device_put(self._model.replace(solver=solver.replace(
            max_iterations=jnp.asarray(limit, solver.max_iterations.dtype))), self._device)
      new_state = plain(self._plain_model, self._state)
      if (self._plain_sweep_limit is None
          or int(new_state.solver_iterations) < self._plain_sweep_limit):
        return new_state
      self._uses_block_move = True
    return with_block_move(self._model, self._state)

  def integrateNoContactDetection(self):
    """One step that skips collision detection (no contacts are solved)."""
    self._ensure_compiled()
    self._accept_step(_STEP_NO_CONTACT_DETECTION(self._model, self._state),
                      "integrateNoContactDetection")

  def _accept_step(self, new_state, call):
    """Takes the stepped state, or raises DivergenceError (keeping the state before the
    step) when a pose or velocity became non-finite; warns when the contact buffer
    overflowed (contacts were dropped)."""
    if not bool(new_state.finite):
      culprits = self._non_finite_objects(new_state)
      raise DivergenceError(
          f"World.{call}(): the state became non-finite in the step from world time "
          f"{float(self._state.time):.6g} s (object{'s' if len(culprits) > 1 else ''}: "
          f"{', '.join(culprits) or 'unknown'}); the world keeps the state before that step. "
          f"Typical causes: a time step too large for the stiffness (PD gains, springs), "
          f"huge forces, or overlapping bodies pushed apart violently")
    if bool(new_state.contacts.overflow) and not bool(self._state.contacts.overflow):
      warnings.warn(
          f"World.{call}(): at world time {float(new_state.time):.6g} s more contacts were "
          f"found than the contact buffer holds ({new_state.contacts.active.shape[0]}); the "
          f"extra ones were dropped, so bodies may sink or pass through each other. Raise it "
          f"with World.setContactCapacity(n)", stacklevel=4)
    self._set_state(new_state, committed=True)

  def _non_finite_objects(self, state):
    """Labels of the objects whose pose or velocity is not finite: 'name' (index i), or for
    an unnamed object its type (an articulated system: the file it came from)."""
    def label(obj, kind):
      name = obj.getName()
      where = f"(index {obj.getIndexInWorld()})"
      return f"'{name}' {where}" if name else f"an unnamed {kind} {where}"

    def system_kind(obj):
      source = obj.getRobotDescriptionfFileName()
      return f"articulated system from '{source}'" if source else "articulated system"

    labels = []
    b = jax.tree.map(np.asarray, state.bodies)
    for row, obj in enumerate(self._single_objects()):
      values = [b.position[row], b.quaternion[row], b.linear_velocity[row],
                b.angular_velocity[row]]
      if not all(np.all(np.isfinite(np.asarray(v))) for v in values):
        labels.append(label(obj, obj.getObjectType().name))
    for obj, system in zip(self._articulated_objects(), state.articulated):
      if not (np.all(np.isfinite(np.asarray(system.generalized_coordinate)))
              and np.all(np.isfinite(np.asarray(system.generalized_velocity)))):
        labels.append(label(obj, system_kind(obj)))
    return labels

  # ---- materials ----------------------------------------------------------------------------
  def _materials_changed(self):
    """Writes the pair table leaf; a new material name takes an unused id (no recompile) or,
    past the compiled id capacity, recompiles."""
    if self._dirty:
      return
    names = self._material_names(self._description)
    if len(names) != len(self._compiled_material_names):
      self._structure_changed()
      return
    self._compiled_material_names = names
    table = device_array(material_table(self._description, names), self._dtype)
    self._model = self._model.replace(solver=self._model.solver.replace(pair_table=table))

  def setMaterialPairProp(self, mat1, mat2, friction, restitution, resThreshold,
                          staticFriction=None, staticFrictionThresholdVelocity=None):
    """Sets the properties of a material pair (order of the names does not matter)."""
    props = _material_properties(friction, restitution, resThreshold, staticFriction,
                                 staticFrictionThresholdVelocity)
    self._description.material_pairs[tuple(sorted((str(mat1), str(mat2))))] = props
    self._materials_changed()

  def setDefaultMaterial(self, friction, restitution, resThreshold, staticFriction=None,
                         staticFrictionThresholdVelocity=None):
    """Properties of every pair without its own setMaterialPairProp."""
    self._description.default_material = _material_properties(
        friction, restitution, resThreshold, staticFriction, staticFrictionThresholdVelocity)
    self._materials_changed()

  def getMaterialPairProperties(self, mat1, mat2) -> MaterialPairProperties:
    key = tuple(sorted((str(mat1), str(mat2))))
    return copy.copy(self._description.material_pairs.get(key,
                                                         self._description.default_material))

  def setObjectMaterial(self, obj, material, localIdx=-1):
    """Sets the contact material of an object's collision shapes: all of them (localIdx -1),
    or those of local body `localIdx` (see _local_shapes)."""
    if not isinstance(material, str) or not material:
      raise ValueError(f"argument 'material' must be a non-empty material name, got {material!r}")
    for shape in self._local_shapes(obj, localIdx):
      shape.material = material
    self._collision_geometry_changed()
    return True

  def setObjectCollisionFilter(self, obj, collisionGroup, collisionMask, localIdx=-1):
    """Sets the collision group and mask of an object's collision shapes (between steps; no
    recompile): the object's own bits (localIdx -1; every shape's own bits are dropped), or
    the bits of local body `localIdx`'s shapes only (see _local_shapes)."""
    group = _collision_bits(collisionGroup, "collisionGroup")
    mask = _collision_bits(collisionMask, "collisionMask")
    if _every_local_body(localIdx):
      owner = obj._entry if isinstance(obj, ArticulatedSystem) else obj._description
      owner.collision_group, owner.collision_mask = group, mask
      group = mask = None
    for shape in self._local_shapes(obj, localIdx):
      shape.collision_group, shape.collision_mask = group, mask
    self._collision_geometry_changed()
    return True

  @staticmethod
  def _local_shapes(obj, localIdx):
    """The collision shapes of `obj` that RaiSim's `localIdx` selects: every one for a
    negative index (RaiSim's size_t(-1)); else a single body's shape `localIdx` (a compound's
    child; 0 for the others) or an articulated system's collision bodies on body `localIdx`
    (raw URDF geometries: ellipsoids included)."""
    if isinstance(obj, ArticulatedSystem):
      geometries = collision_geometries(obj._entry.description)
      if _every_local_body(localIdx):
        return [g for _, g in geometries]
      body = obj._body(localIdx, "localIdx")
      chosen = [g for b, g in geometries if b == body]
      if not any(g.shape in SIMULATED_SHAPES for g in chosen):
        raise ValueError(f"argument 'localIdx' = {body}: body '{obj.getBodyNames()[body]}' "
                         f"has no simulated collision body (ellipsoids are not simulated "
                         f"yet), so this edit would change nothing")
      return chosen
    shapes = obj._description.shapes
    if _every_local_body(localIdx):
      return list(shapes)
    return [shapes[validation.index(localIdx, len(shapes), "localIdx",
                                    "collision shapes on the object")]]

  def _collision_geometry_changed(self):
    """Projects the descriptions' collision shapes (sizes, offsets, materials, filters) into
    the compiled Model: the step is reused unless the projection's static structure changed
    (a material name the model does not know recompiles)."""
    if self._dirty:
      return
    self._materials_changed()
    if self._dirty:
      return
    collision = collision_model(self._description, self._dtype, self._compiled_material_names,
                                warn=False, capacity=self._compiled_capacity)
    old = self._model.collision
    if (jax.tree.structure(collision) != jax.tree.structure(old)
        or jax.tree.map(np.shape, collision) != jax.tree.map(np.shape, old)):
      self._structure_changed()
      return
    self._model = self._model.replace(collision=collision)

  # ---- contact solver and detection settings -------------------------------------------------
  def setERP(self, erp, erp2=0.0):
    """Error-reduction rate: each step removes erp * depth of a penetration at the position
    level (no velocity is added; default 0.2). erp2 (RaiSim's velocity-level term) is not
    supported: a non-zero erp2 raises."""
    if float(erp2) != 0.0:
      raise ValueError(f"setERP: argument 'erp2' = {erp2} is not supported (raisim_jax "
                       f"corrects penetration at the position level only); pass erp2=0")
    self._description.solver.erp = validation.non_negative(erp, "erp")
    self._solver_settings_changed(erp=self._description.solver.erp)

  def setContactSolverParam(self, alpha_init, alpha_min, alpha_decay, maxIter, threshold):
    """maxIter and threshold of the contact solver (the alphas are ignored, as in RaiSim).
    Both are Model leaves: no recompile while maxIter <= the compiled iteration capacity
    (150, 300, 600, ...)."""
    if not validation.whole_number(maxIter) or maxIter < 1:
      raise ValueError(f"argument 'maxIter' must be an integer >= 1 (RaiSim's size_t), "
                       f"got {maxIter!r}")
    max_iterations = int(maxIter)
    solver = self._description.solver
    solver.max_iterations = max_iterations
    solver.threshold = validation.non_negative(threshold, "threshold")
    self._solver_settings_changed(max_iterations=max_iterations, threshold=solver.threshold)

  def setContactSolverIterationOrder(self, order):
    """Fixes the sweep order. This solver is always deterministic; `order` True sweeps the
    contacts first to last, False last to first (a Model leaf: no recompile)."""
    self._description.solver.reverse_order = not bool(order)
    self._solver_settings_changed(reverse_order=self._description.solver.reverse_order)

  def _solver_settings_changed(self, **settings):
    if not self._dirty:
      self._model = with_solver_settings(self._model, **settings)

  def setContactSolverDifferentiable(self, flag):
    """True (default): steps with contacts can be differentiated in reverse and forward mode
    (the derivative chosen by `setContactSolverGradient`); False: forward-only programs
    (the solve on the leading contact slots that hold every world's contacts, coloured
    sweeps), the fastest for batched rollouts, forward-mode autodiff only."""
    self._description.solver.differentiable = bool(flag)
    if not self._dirty:
      self._model = self._model.replace(solver=self._model.solver.replace(
          differentiable=bool(flag)))

  def setContactSolverGradient(self, gradient):
    """How the differentiable solve is differentiated (a raisim_jax extension):
    "unrolled" (default): the derivative of the sweeps actually run (a fixed-length scan;
    reverse-mode time and memory grow with the sweeps): the simulation's derivative;
    "implicit": the derivative of the converged solution (implicit function theorem; the
    solve stops at its threshold, reverse mode stores one sweep's linearization: ~3x less
    gradient time in benchmarks/gradients.py), the simulation's derivative where that
    solution is unique, not where statically indeterminate contacts slide (a box turning on
    four corners: off by up to 2.5%; docs/contact_solver.md, Gradients)."""
    if gradient not in gauss_seidel.GRADIENTS:
      raise ValueError(f"setContactSolverGradient: expected one of {gauss_seidel.GRADIENTS}, "
                       f"got {gradient!r}")
    self._description.solver.gradient = gradient
    if not self._dirty:
      self._model = self._model.replace(solver=self._model.solver.replace(gradient=gradient))

  def getContactSettings(self) -> ContactSettings:
    return copy.deepcopy(self._description.contact_settings)

  def setContactSettings(self, settings: ContactSettings):
    """Replaces the contact detection settings (recompiles on the next step)."""
    if not isinstance(settings, ContactSettings):
      raise ValueError("argument 'settings' must be a ContactSettings")
    check_contact_settings(settings)
    self._description.contact_settings = copy.deepcopy(settings)
    self._structure_changed()

  def getBroadphaseSettings(self) -> BroadphaseSettings:
    return copy.deepcopy(self._description.contact_settings.broadphase)

  def setBroadphaseSettings(self, settings: BroadphaseSettings):
    if not isinstance(settings, BroadphaseSettings):
      raise ValueError("argument 'settings' must be a BroadphaseSettings")
    self._description.contact_settings.broadphase = copy.deepcopy(settings)
    self._structure_changed()

  def setContactCapacity(self, capacity):
    """Size of the contact buffer (default: automatic). Exceeding it sets the overflow flag."""
    capacity = int(capacity)
    if capacity < 1:
      raise ValueError(f"argument 'capacity' must be >= 1, got {capacity}")
    self._description.contact_capacity = capacity
    self._structure_changed()

  # ---- contacts ------------------------------------------------------------------------------
  def _collision_body_owners(self):
    """[(world object, local body index)] per collision body (collision_bodies.py order)."""
    owners = [None] * self._current_model().num_bodies   # placeholders own nothing
    for row, obj in enumerate(self._single_objects()):
      owners[row] = (obj, 0)
    for obj in self._articulated_objects():
      owners += [(obj, b) for b in range(obj._entry.description.num_bodies)]
    return owners

  def _contacts(self):
    """Per-object contact lists (built once per state): {world index: [Contact, ...]}, and
    the contact problem. A self-collision appears twice in its system's list (once per
    side); the second has skip() True."""
    if self._contact_cache is None:
      contacts = self._current_state().contacts
      active = np.asarray(contacts.active)
      slots = np.nonzero(active)[0]
      # The listed slots' fields, read on the host (float fields as float64) in one pass.
      fields = {name: np.asarray(getattr(contacts, name))[slots] for name in (
          "position", "normal", "depth", "impulse", "inverse_apparent_inertia",
          "body_a", "body_b", "shape_a", "shape_b")}
      if slots.size:   # derived, not stored (types.Contacts)
        fields["frame"] = np.asarray(_contact_frames(contacts.normal))[slots]
      fields = {name: values.astype(np.float64) if np.issubdtype(values.dtype, np.floating)
                else values for name, values in fields.items()}
      owners = self._collision_body_owners()
      body_types = self._collision_body_types()
      entries = []
      for problem_index, slot in enumerate(slots):
        data = {name: values[problem_index] for name, values in fields.items()}
        (object_a, local_a), (object_b, local_b) = (owners[int(data["body_a"])],
                                                    owners[int(data["body_b"])])
        data.update(object_a=object_a.getIndexInWorld(), object_b=object_b.getIndexInWorld(),
                    local_a=local_a, local_b=local_b, self_collision=object_a is object_b)
        entries.append((problem_index, slot, data))
      per_object = {}
      for problem_index, slot, data in entries:
        for is_a in (True, False):
          body = int(data["body_a"] if is_a else data["body_b"])
          if body_types[body] == BodyType.STATIC:
            continue  # RaiSim does not store contacts on static bodies
          key = int(data["object_a"] if is_a else data["object_b"])
          per_object.setdefault(key, []).append((problem_index, slot, is_a, data))
      views = {}
      for key, items in per_object.items():
        views[key] = []
        listed = set()
        for k, (problem_index, slot, is_a, data) in enumerate(items):
          other = int(data["object_b"] if is_a else data["object_a"])
          pair_list = per_object.get(other, [])
          pair_index = next((j for j, it in enumerate(pair_list)
                             if it[1] == slot and it[2] != is_a), -1)
          views[key].append(Contact(self, slot, is_a, k, pair_index, problem_index, data,
                                    skip=slot in listed))
          listed.add(slot)
      problem = [Contact(self, slot, True, -1, -1, problem_index, data)
                 for problem_index, slot, data in entries]
      self._contact_cache = (views, problem)
    return self._contact_cache

  def _collision_body_types(self):
    """(NB,) BodyType of every collision body on the host, kept per Model (computed eagerly
    from device leaves, it cost two XLA dispatches per contact listing)."""
    model = self._current_model()
    if self._body_types_cache is None or self._body_types_cache[0] is not model:
      self._body_types_cache = (model,
                                np.asarray(collision_bodies.collision_body_types(model)))
    return self._body_types_cache[1]

  def getContactProblem(self):
    """Every contact of the last integrate1 (object A's view), in contact-problem order."""
    return list(self._contacts()[1])

  def _object_contacts(self, obj):
    return list(self._contacts()[0].get(obj.getIndexInWorld(), []))

  def getContactOverflow(self) -> bool:
    """True if the last collision detection exceeded a pair or contact capacity."""
    return bool(self._current_state().contacts.overflow)

  def getContactSolverIterations(self) -> int:
    """Sweeps the contact solver used in the last integrate2."""
    return int(self._current_state().solver_iterations)

  # ---- ray test --------------------------------------------------------------------------------
  def rayTest(self, start, direction, length, objectId=-10, localId=-10, collisionMask=-1):
    """The closest hit of a ray (RaiSim's World::rayTest) as a RayCollisionList (0 or 1 item).

    Shapes of the object whose objectId AND localId both match are ignored (single bodies and
    compounds have localId 0; the default -10 matches nothing). A shape is hit only if
    (its collision group & collisionMask) != 0; -1 means all groups. A ray starting inside a
    shape hits it at distance 0 with normal -direction (see raisim_jax.collision.ray).
    """
    start = validation.vector(start, 3, "start")
    direction = validation.vector(direction, 3, "direction")
    if not np.linalg.norm(direction) > 0:
      raise ValueError(f"argument 'direction' must be non-zero, got {direction}")
    length = validation.positive(length, "length")
    object_id = objectId.getIndexInWorld() if hasattr(objectId, "getIndexInWorld") else int(objectId)
    ignore = -1  # the core works in collision-body rows, not world indices
    if 0 <= object_id < len(self._objects):
      owners = self._collision_body_owners()
      ignored = self._objects[object_id]
      ignore = next((row for row, owner in enumerate(owners)
                     if owner is not None and owner[0] is ignored
                     and owner[1] == int(localId)), -1)
    mask = pairs.split_bits(_collision_bits(collisionMask, "collisionMask"))
    model, state = self.compile()
    result = jax.device_get(_RAY_TEST(model, state, start, direction, length,
                                           np.int32(ignore), mask))
    if not bool(result.hit):
      return RayCollisionList()
    obj, local = self._collision_body_owners()[int(result.object_index)]
    return RayCollisionList([RayCollisionItem(
        obj, result.position, result.normal, result.distance, local)])
"""Description -> (Model, State): validation, dtype cast and static tables, on the host."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np

from raisim_jax import joint_springs
from raisim_jax.collision import detection, narrowphase, pairs
from raisim_jax.collision.shapes import ShapeType
from raisim_jax.description import CollisionShape, WorldDescription
from raisim_jax.dynamics import joint_limits, pins
from raisim_jax.dynamics.tree import compile_articulated
from raisim_jax.types import (ArticulatedState, BodyType, BroadphaseType, CollisionModel, Model,
                              ObjectType, PairGroup, ShapeModel, SingleBodyModel,
                              SingleBodyState, SolverModel, State)

SHAPE_TYPE_OF_OBJECT = {
    ObjectType.SPHERE: ShapeType.SPHERE, ObjectType.BOX: ShapeType.BOX,
    ObjectType.CYLINDER: ShapeType.CYLINDER, ObjectType.CONE: ShapeType.CONE,
    ObjectType.CAPSULE: ShapeType.CAPSULE, ObjectType.HALFSPACE: ShapeType.HALFSPACE,
}


def resolve_dtype(dtype):
  """The JAX float dtype to compile with; enables x64 when float64 is asked for."""
  dtype = jnp.dtype(dtype)
  if dtype not in (jnp.float32, jnp.float64):
    raise ValueError(f"argument 'dtype' must be float32 or float64, got {dtype}")
  if dtype == jnp.float64 and not jax.config.jax_enable_x64:
    # RaiSim computes in double precision; scripts that ask for it get it.
    jax.config.update("jax_enable_x64", True)
  return dtype


def _check_body(body, index):
  where = f"object {index} ('{body.name}')"
  if body.body_type == BodyType.DYNAMIC and not body.mass > 0:
    raise ValueError(f"{where}: argument 'mass' must be positive for a DYNAMIC body, "
                     f"got {body.mass}")
  if body.body_type == BodyType.DYNAMIC and np.linalg.eigvalsh(body.inertia).min() <= 0:
    raise ValueError(f"{where}: argument 'inertia' must be positive definite")


def material_names(description: WorldDescription):
  """Material names in id order: 'default' first, then first appearance."""
  names = ["default"]
  for body in description.bodies:
    for shape in body.shapes:
      if shape.material not in names:
        names.append(shape.material)
  for entry in description.articulated:
    for body in entry.description.bodies:
      for geometry in body.collisions:
        if geometry.material and geometry.material not in names:
          names.append(geometry.material)
  for a, b in description.material_pairs:
    for name in (a, b):
      if name not in names:
        names.append(name)
  return names


def material_table(description: WorldDescription, names):
  """(nm, nm, 5) pair table: the default everywhere, then the defined pairs (symmetric)."""
  table = np.tile(np.asarray(description.default_material.as_row(), np.float64),
                  (len(names), len(names), 1))
  index = {name: i for i, name in enumerate(names)}
  for (a, b), props in description.material_pairs.items():
    table[index[a], index[b]] = table[index[b], index[a]] = props.as_row()
  return table


def iteration_capacity(max_iterations):
  """Static length of the differentiable solver's sweep scan: 150 * 2^k >= max_iterations,
  so maxIter edits up to it reuse the compiled step."""
  capacity = 150
  while capacity < int(max_iterations):
    capacity *= 2
  return capacity


def with_solver_settings(model, **settings):
  """`model` with SolverModel fields replaced; `max_iterations` and `reverse_order` become
  their int32 leaves (and `max_iterations` grows `iteration_capacity` when it must), floats
  keep the model's dtype."""
  solver = model.solver
  if "max_iterations" in settings:
    count = int(settings["max_iterations"])
    settings["max_iterations"] = jnp.asarray(count, jnp.int32)
    settings["iteration_capacity"] = max(solver.iteration_capacity, iteration_capacity(count))
  if "reverse_order" in settings:
    settings["reverse_order"] = jnp.asarray(int(bool(settings["reverse_order"])), jnp.int32)
  for name in ("threshold", "erp"):
    if name in settings:
      settings[name] = jnp.asarray(settings[name], solver.threshold.dtype)
  return model.replace(solver=solver.replace(**settings))


def _default_contact_capacity(groups, num_shapes):
  total = sum(int(g.shape_a.shape[0]) * g.points for g in groups)
  return int(min(total, max(16, 8 * num_shapes)))


def link_collision_shapes(entry, warn=True):
  """[(body index, CollisionShape)] of an articulated system's collision geometry, in the
  body frames. Collision meshes are not simulated yet: they are skipped with one warning
  per system naming the collision bodies (when `warn`)."""
  shapes, skipped = [], []
  for body_index, body in enumerate(entry.description.bodies):
    for geometry in body.collisions:
      object_type, size = _geometry_shape(geometry)
      if object_type is None:
        skipped.append(geometry.name or geometry.link)
        continue
      shapes.append((body_index, CollisionShape(
          object_type=object_type, size=size, position=np.asarray(geometry.pos, float),
          rotation=np.asarray(geometry.rot, float), material=geometry.material or "default")))
  if skipped and warn:
    warnings.warn(f"articulated system '{entry.name or entry.description.name}': collision "
                  f"meshes are not supported yet; these collision bodies do not collide: "
                  f"{', '.join(skipped)}", stacklevel=3)
  return shapes


def _geometry_shape(geometry):
  """(ObjectType, size (4,)) of a URDF geometry, (None, None) for a mesh."""
  size = np.zeros(4)
  if geometry.shape == "box":
    size[:3] = geometry.size
    return ObjectType.BOX, size
  if geometry.shape == "sphere":
    size[0] = geometry.radius
    return ObjectType.SPHERE, size
  if geometry.shape in ("cylinder", "capsule"):
    size[:2] = geometry.radius, geometry.length
    return (ObjectType.CYLINDER if geometry.shape == "cylinder" else ObjectType.CAPSULE), size
  return None, None


def excluded_body_pairs(description: WorldDescription):
  """Collision-body index pairs that never collide: a body and its parent body
  (doNotCollideWithParent) and the pairs named by ignoreCollisionBetween."""
  excluded = set()
  offset = len(description.bodies)
  for entry in description.articulated:
    bodies = entry.description.bodies
    if entry.do_not_collide_with_parent:
      for b, body in enumerate(bodies):
        if body.parent >= 0:
          excluded.add((offset + body.parent, offset + b))
    for a, b in entry.ignored_body_pairs:
      excluded.add((offset + min(a, b), offset + max(a, b)))
    offset += len(bodies)
  return excluded


def collision_model(description, dtype, names, warn=True):
  """The CollisionModel of a world description: shape tables (sizes, offsets, materials as
  rows of `names`, filters), candidate pair groups and broadphase settings. Its static
  structure depends only on the shapes' count, types and bodies, the excluded pairs and the
  settings, so a changed size, offset, material or filter projects into a compiled model
  without recompiling the step."""
  settings = description.contact_settings
  max_points = int(settings.maxContactsPerPair)
  if not 1 <= max_points <= detection.KEY_STRIDE:
    raise ValueError(f"ContactSettings.maxContactsPerPair must be in [1, 8], got {max_points}")
  broadphase_type = BroadphaseType(int(settings.broadphase.type))
  material_id = {name: i for i, name in enumerate(names)}
  rows = []
  for body_index, body in enumerate(description.bodies):
    for shape in body.shapes:
      rows.append((body_index, SHAPE_TYPE_OF_OBJECT[shape.object_type], shape,
                   body.collision_group, body.collision_mask))
  offset = len(description.bodies)
  body_offsets = []
  internal_limit = {}   # collision body -> (system, allowed internal contacts)
  for s, entry in enumerate(description.articulated):
    for b in range(entry.description.num_bodies):
      internal_limit[offset + b] = (s, int(entry.allowed_internal_contacts))
    body_offsets.append(offset)
    for body_index, shape in link_collision_shapes(entry, warn):
      rows.append((offset + body_index, SHAPE_TYPE_OF_OBJECT[shape.object_type], shape,
                   entry.collision_group, entry.collision_mask))
    offset += entry.description.num_bodies
  num_shapes = len(rows)
  shape_body = tuple(r[0] for r in rows)
  shape_type = tuple(int(r[1]) for r in rows)

  def stack(values, shape, kind=np.float64):
    return np.asarray(values, kind).reshape((num_shapes,) + shape)

  shape_model = ShapeModel(
      size=jnp.asarray(stack([r[2].size for r in rows], (4,)), dtype),
      position_body=jnp.asarray(stack([r[2].position for r in rows], (3,)), dtype),
      rotation_body=jnp.asarray(stack([r[2].rotation for r in rows], (3, 3)), dtype),
      material=jnp.asarray(stack([material_id[r[2].material] for r in rows], (), np.int32)),
      collision_group=jnp.asarray(stack([pairs.split_bits(r[3]) for r in rows], (2,),
                                        np.uint32)),
      collision_mask=jnp.asarray(stack([pairs.split_bits(r[4]) for r in rows], (2,),
                                       np.uint32)),
      body=shape_body, shape_type=shape_type)

  candidate = pairs.candidate_pairs(shape_body, shape_type, excluded_body_pairs(description))
  groups = []
  for (type_a, type_b), members in pairs.group_pairs(candidate, shape_type).items():
    index = np.asarray([m[0] for m in members], np.int32)
    points = min(narrowphase.num_points(type_a, type_b), max_points)
    limit, any_internal = [], False
    for _, a, b in members:
      owner_a = internal_limit.get(shape_body[a])
      owner_b = internal_limit.get(shape_body[b])
      internal = owner_a is not None and owner_b is not None and owner_a[0] == owner_b[0]
      any_internal |= internal
      limit.append(min(points, owner_a[1]) if internal else points)
    groups.append(PairGroup(
        shape_a=jnp.asarray([m[1] for m in members], jnp.int32),
        shape_b=jnp.asarray([m[2] for m in members], jnp.int32),
        pair_index=jnp.asarray(index), point_limit=jnp.asarray(limit, jnp.int32),
        type_a=type_a, type_b=type_b, points=points,
        limited=any_internal and points > 1))
  capacity = description.contact_capacity
  if capacity is None:
    capacity = _default_contact_capacity(groups, num_shapes)
  bp = settings.broadphase
  return CollisionModel(
      shapes=shape_model, groups=tuple(groups),
      pair_lookup=jnp.asarray(pairs.pair_lookup_table(candidate, num_shapes)),
      mbp_world_min=jnp.asarray(bp.mbpWorldMin, dtype),
      mbp_world_max=jnp.asarray(bp.mbpWorldMax, dtype),
      mbp_cell_size=jnp.asarray(bp.mbpCellSize, dtype),
      mbp_padding=jnp.asarray(bp.mbpPadding, dtype),
      margin=jnp.asarray(settings.sweptCcdSpeculativeMargin, dtype),
      broadphase=int(broadphase_type),
      articulated_body_offset=tuple(body_offsets),
      sap_window=int(max(1, min(num_shapes - 1, 64))),
      mbp_max_cells_per_axis=int(bp.mbpMaxCellsPerAxis),
      contact_capacity=int(capacity))


def compile_world(description: WorldDescription, dtype=jnp.float64):
  """Compiles a world description into the pure core's pytrees.

  Returns:
    (model, state): Model and State with float leaves of `dtype`.
  """
  dtype = resolve_dtype(dtype)
  bodies = description.bodies
  for index, body in enumerate(bodies):
    _check_body(body, index)

  def stack(values, shape):
    if not values:
      return jnp.zeros((0,) + shape, dtype)
    return jnp.asarray(np.stack([np.asarray(v, np.float64).reshape(shape) for v in values]),
                       dtype)

  names = material_names(description)
  solver = description.solver
  body_model = SingleBodyModel(
      mass=stack([b.mass for b in bodies], ()),
      inertia_body=stack([b.inertia for b in bodies], (3, 3)),
      com_body=stack([b.com for b in bodies], (3,)),
      linear_damping=stack([b.linear_damping for b in bodies], ()),
      angular_damping=stack([b.angular_damping for b in bodies], (3,)),
      body_type=jnp.asarray([int(b.body_type) for b in bodies], jnp.int32).reshape(len(bodies)),
  )
  collision = collision_model(description, dtype, names)
  articulated = tuple(_articulated_model(entry, dtype) for entry in description.articulated)
  model = Model(
      bodies=body_model,
      collision=collision,
      solver=SolverModel(
          threshold=jnp.asarray(solver.threshold, dtype),
          erp=jnp.asarray(solver.erp, dtype),
          pair_table=jnp.asarray(material_table(description, names), dtype),
          max_iterations=jnp.asarray(int(solver.max_iterations), jnp.int32),
          reverse_order=jnp.asarray(int(bool(solver.reverse_order)), jnp.int32),
          iteration_capacity=iteration_capacity(solver.max_iterations),
          differentiable=bool(solver.differentiable)),
      gravity=jnp.asarray(description.gravity, dtype),
      time_step=jnp.asarray(description.time_step, dtype),
      articulated=articulated,
      joint_limits=joint_limits.joint_limit_model(articulated),
      pins=pins.pin_model([entry.description for entry in description.articulated],
                          articulated, dtype),
      num_bodies=len(bodies),
  )
  body_state = SingleBodyState(
      position=stack([b.position for b in bodies], (3,)),
      quaternion=stack([b.quaternion for b in bodies], (4,)),
      linear_velocity=stack([b.linear_velocity for b in bodies], (3,)),
      angular_velocity=stack([b.angular_velocity for b in bodies], (3,)),
      external_force=stack([b.external_force for b in bodies], (3,)),
      external_torque=stack([b.external_torque for b in bodies], (3,)),
  )
  state = State(bodies=body_state,
                contacts=detection.empty_contacts(collision.contact_capacity, dtype),
                time=jnp.asarray(description.time, dtype),
                solver_iterations=jnp.zeros((), jnp.int32),
                articulated=tuple(_articulated_state(entry, dtype)
                                  for entry in description.articulated),
                joint_limits=joint_limits.empty_joint_limit_state(model.joint_limits, dtype),
                pins=pins.empty_pin_state(model.pins, dtype),
                finite=jnp.ones((), bool))
  return model, state


def _articulated_model(entry, dtype):
  """The system's ArticulatedModel with the entry's gains, control mode, actuation limits and
  integration scheme."""
  model = compile_articulated(entry.description, dtype)
  leaves = {"pd_enabled": jnp.asarray(float(entry.control_mode == 1), dtype)}
  if entry.springs:
    stiffness, mount = joint_springs.spring_leaves(model, entry.description, entry.springs)
    leaves.update(stiffness=jnp.asarray(stiffness, dtype), spring_mount=jnp.asarray(mount, dtype))
  for name in ("p_gain", "d_gain", "actuation_lower", "actuation_upper"):
    value = getattr(entry, name)
    if value is not None:
      leaves[name] = jnp.asarray(value, dtype)
  return model.replace(integration_scheme=int(entry.integration_scheme), **leaves)


def _articulated_state(entry, dtype):
  nv = entry.description.dof
  p_target = (entry.description.zero_configuration() if entry.p_target is None
              else entry.p_target)
  d_target = np.zeros(nv) if entry.d_target is None else entry.d_target
  return ArticulatedState(
      generalized_coordinate=jnp.asarray(entry.generalized_coordinate, dtype),
      generalized_velocity=jnp.asarray(entry.generalized_velocity, dtype),
      generalized_acceleration=jnp.zeros((nv,), dtype),
      feedforward_force=jnp.asarray(entry.feedforward_force, dtype),
      external_wrench=jnp.zeros((entry.description.num_bodies, 6), dtype),
      p_target=jnp.asarray(p_target, dtype), d_target=jnp.asarray(d_target, dtype),
      generalized_force=jnp.zeros((nv,), dtype))

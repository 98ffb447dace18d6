"""Description -> (Model, State): validation, dtype cast and static tables, on the host."""

import dataclasses
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from raisim_jax import joint_springs
from raisim_jax.collision import detection, narrowphase, pairs
from raisim_jax.collision.shapes import ShapeType
from raisim_jax.io import collision_mesh
from raisim_jax.host_arrays import device_array, device_ones, device_zeros
from raisim_jax.description import CollisionShape, SingleBodyDescription, WorldDescription
from raisim_jax.dynamics import island_block, joint_limits, pins
from raisim_jax.dynamics.tree import compile_articulated
from raisim_jax.types import (ArticulatedState, BodyType, BroadphaseType, CollisionModel, Model,
                              ObjectType, PairGroup, ShapeModel, SingleBodyModel,
                              SingleBodyState, SleepingModel, SolverModel, State)

SHAPE_TYPE_OF_OBJECT = {
    ObjectType.SPHERE: ShapeType.SPHERE, ObjectType.BOX: ShapeType.BOX,
    ObjectType.CYLINDER: ShapeType.CYLINDER, ObjectType.CONE: ShapeType.CONE,
    ObjectType.CAPSULE: ShapeType.CAPSULE, ObjectType.MESH: ShapeType.MESH,
    ObjectType.HALFSPACE: ShapeType.HALFSPACE,
}
_OBJECT_OF_SHAPE_TYPE = {int(v): k for k, v in SHAPE_TYPE_OF_OBJECT.items()}


def resolve_dtype(dtype):
  """The JAX float dtype to compile with: float32 or float64. float64 needs x64 enabled (the
  OO World enables it in a thread-local context around its own calls, raisim_jax/precision.py);
  the pure core never changes process-wide JAX configuration."""
  dtype = np.dtype(dtype)
  if dtype not in (np.float32, np.float64):
    raise ValueError(f"argument 'dtype' must be float32 or float64, got {dtype}")
  if dtype == np.float64 and not jax.config.jax_enable_x64:
    raise ValueError(
        "float64 needs JAX's 64-bit mode: call jax.config.update('jax_enable_x64', True) "
        "once at start-up, or compile and step inside `with jax.enable_x64(True):` (or pass "
        "dtype=jnp.float32)")
  return jnp.dtype(dtype)


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


def block_move_for(model: Model, default="compact"):
  """`SolverModel.block_move` for `model` as it is now: `default` where some DYNAMIC single
  body can have `island_block.MIN_ROWS` contact rows with single bodies, else "off".

  The island block move solves only such bodies' islands (`island_block.has_candidates`), so
  elsewhere it never runs and leaving it out of the trace changes no result; it saves its XLA
  compile (a quadruped's 10-step rollout, float64: 60 -> 45 s on a 2-core AVX2 CPU). Counted
  on the host from the candidate pairs whose collision groups and masks accept each other
  (each pair's contact slots, `PairGroup.points`, capped by its `point_limit`): a robot on
  the ground has no dynamic single body; a lone ball on the ground one row; a box on the
  ground four. Body types, groups and masks are leaves, so a Model edited afterwards in the
  pure core (a body made DYNAMIC) keeps "off" and solves with sweeps alone (the same
  solutions, more sweeps); set it back with `with_solver_settings(model, block_move=...)`."""
  body_type = np.asarray(model.bodies.body_type)
  n = body_type.shape[0]
  shapes = model.collision.shapes
  body = np.asarray(shapes.body)
  group, mask = np.asarray(shapes.collision_group), np.asarray(shapes.collision_mask)
  rows = np.zeros(n, np.int64)
  for pair_group in model.collision.groups:
    a, b = np.asarray(pair_group.shape_a), np.asarray(pair_group.shape_b)
    singles = np.asarray(pair_group.enabled) & (body[a] < n) & (body[b] < n)
    a, b = a[singles], b[singles]
    # Detection's own filter (groups and masks, a dynamic side) on the pairs of single bodies.
    counted = detection.filter_passes(group, mask, body_type, body, a, b)
    points = np.minimum(pair_group.points, np.asarray(pair_group.point_limit))[singles][counted]
    for side in (body[a[counted]], body[b[counted]]):
      np.add.at(rows, side, points)
  if np.any((body_type == BodyType.DYNAMIC) & (rows >= island_block.MIN_ROWS)):
    return default
  return "off"


def with_solver_settings(model, **settings):
  """`model` with SolverModel fields replaced; `max_iterations` and `reverse_order` become
  their int32 leaves (and `max_iterations` grows `iteration_capacity` when it must), floats
  keep the model's dtype."""
  solver = model.solver
  if "max_iterations" in settings:
    count = int(settings["max_iterations"])
    settings["max_iterations"] = device_array(count, jnp.int32)
    settings["iteration_capacity"] = max(solver.iteration_capacity, iteration_capacity(count))
  if "reverse_order" in settings:
    settings["reverse_order"] = device_array(int(bool(settings["reverse_order"])), jnp.int32)
  for name in ("threshold", "erp"):
    if name in settings:
      settings[name] = device_array(settings[name], solver.threshold.dtype)
  return model.replace(solver=solver.replace(**settings))


def _default_contact_capacity(groups, num_shapes):
  total = sum(int(g.shape_a.shape[0]) * g.points for g in groups)
  return int(min(total, max(16, 8 * num_shapes)))


def link_collision_shapes(entry, warn=True, stacklevel=3):
  """[(body index, CollisionShape)] of an articulated system's collision geometry, in the
  body frames. A collision mesh becomes the convex hull of its vertices
  (io/collision_mesh.py), which collides with everything but the system's own collision
  bodies (one warning per system naming the meshes, when `warn` and the system has other
  collision bodies); ellipsoids are not simulated yet: they are skipped with one warning per
  system naming the collision bodies (when `warn`).

  Raises:
    ValueError naming the file, link and line of a collision mesh that cannot be read or
    has no volume."""
  shapes, skipped, meshes = [], [], []
  for body_index, body in enumerate(entry.description.bodies):
    for geometry in body.collisions:
      object_type, size = _geometry_shape(geometry)
      if object_type is None:
        skipped.append(f"{geometry.name or geometry.link} ({geometry.shape})")
        continue
      hull = None
      if object_type == ObjectType.MESH:
        hull = _geometry_hull(entry, geometry)
        meshes.append(geometry.name or geometry.link)
      shapes.append((body_index, CollisionShape(
          object_type=object_type, size=size, position=np.asarray(geometry.pos, float),
          rotation=np.asarray(geometry.rot, float), material=geometry.material or "default",
          collision_group=geometry.collision_group, collision_mask=geometry.collision_mask,
          hull=hull)))
  name = entry.name or entry.description.name
  if skipped and warn:
    warnings.warn(f"articulated system '{name}': collision ellipsoids are not supported yet; "
                  f"these collision bodies do not collide: {', '.join(skipped)}",
                  stacklevel=stacklevel)
  if meshes and warn and sum(len(b.collisions) for b in entry.description.bodies) > 1:
    warnings.warn(f"articulated system '{name}': its collision meshes collide (as convex "
                  f"hulls) with the ground and other objects, but not with the system's own "
                  f"collision bodies (no self-collision through meshes: the hulls of "
                  f"concave links overlap at their joints): {', '.join(meshes)}",
                  stacklevel=stacklevel)
  return shapes


def _geometry_hull(entry, geometry):
  """The ConvexHull of a mesh geometry: its file's, or its inline vertices' (MJCF)."""
  try:
    if geometry.vertices is not None:
      return collision_mesh.convex_hull(np.asarray(geometry.vertices) * geometry.scale)
    return collision_mesh.load_hull(geometry.filename, geometry.scale)
  except ValueError as error:
    line = f", line {geometry.sourceline}" if geometry.sourceline else ""
    raise ValueError(f"{entry.description.source}: collision mesh of link '{geometry.link}'"
                     f"{line}: {error}") from None


def _collision_filter(shape, owner):
  """(group, mask) of a CollisionShape: its own bits where set, else its owner's (a
  SingleBodyDescription or an ArticulatedEntry)."""
  group = owner.collision_group if shape.collision_group is None else shape.collision_group
  mask = owner.collision_mask if shape.collision_mask is None else shape.collision_mask
  return group, mask


def _geometry_shape(geometry):
  """(ObjectType, size (4,)) of a URDF geometry, (None, None) for an ellipsoid."""
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
  if geometry.shape == "mesh":
    return ObjectType.MESH, size
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


@dataclasses.dataclass(frozen=True)
class Capacity:
  """Rows to compile beyond what a description holds, so that bodies and shapes added later
  fit the same compiled step (the OO World rounds its counts up to buckets). Padding rows
  are inert: STATIC bodies without shapes, shapes with collision group and mask 0.

  Attributes:
    bodies: single-body rows (at least the description's count).
    shapes: ((ShapeType code, rows), ...) single-body shape rows per type.
  """
  bodies: int = 0
  shapes: tuple = ()


_PLACEHOLDER_SHAPE = CollisionShape(ObjectType.SPHERE, np.full(4, 0.1))
_PLACEHOLDER_HULL = collision_mesh.ConvexHull(   # a padding MESH row: a corner tetrahedron
    vertices=np.array([[0, 0, 0], [0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1]]),
    planes=np.array([[-1.0, 0, 0, 0], [0, -1.0, 0, 0], [0, 0, -1.0, 0],
                     [*np.full(3, 3 ** -0.5), -0.1 * 3 ** -0.5]]),
    triangles=np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]], np.int32))


def placeholder_body():
  """An inert single-body padding row: STATIC, no shapes."""
  return SingleBodyDescription(name="", object_type=ObjectType.SPHERE, size=np.full(4, 0.1),
                               mass=1.0, inertia=np.eye(3), com=np.zeros(3), shapes=[],
                               body_type=BodyType.STATIC, collision_group=0, collision_mask=0)


def _padded(description, capacity):
  """The description with placeholder single bodies up to `capacity.bodies` rows."""
  missing = capacity.bodies - len(description.bodies)
  if missing <= 0:
    return description
  return dataclasses.replace(description,
                             bodies=list(description.bodies) + [placeholder_body()
                                                                for _ in range(missing)])


_UNSUPPORTED_CONTACT_SETTINGS = {
    "gjkMaxIterations": "the narrowphase has no GJK (closed forms, SAT, exact minimum overlap)",
    "gjkTolerance": "the narrowphase has no GJK (closed forms, SAT, exact minimum overlap)",
    "epaMaxIterations": "the narrowphase has no EPA (closed forms, SAT, exact minimum overlap)",
    "epaTolerance": "the narrowphase has no EPA (closed forms, SAT, exact minimum overlap)",
    "sweptCcdEnabled": "swept continuous collision detection is not implemented; fast thin "
                       "objects rely on the speculative margin (sweptCcdSpeculativeMargin)",
    "sweptCcdMinSpeed": "swept continuous collision detection is not implemented",
}


def check_contact_settings(settings):
  """Raises ValueError for a ContactSettings field this engine cannot honour (set to other
  than its default) or a maxContactsPerPair outside [1, 8]."""
  default = type(settings)()
  for name, why in _UNSUPPORTED_CONTACT_SETTINGS.items():
    if getattr(settings, name) != getattr(default, name):
      raise ValueError(f"ContactSettings.{name} = {getattr(settings, name)!r} is not "
                       f"supported: {why}; leave it at {getattr(default, name)!r}")
  max_points = int(settings.maxContactsPerPair)
  if not 1 <= max_points <= detection.KEY_STRIDE:
    raise ValueError(f"ContactSettings.maxContactsPerPair must be in [1, 8], got {max_points}")
  margin = float(settings.sweptCcdSpeculativeMargin)
  if not (np.isfinite(margin) and margin >= 0):
    raise ValueError(f"ContactSettings.sweptCcdSpeculativeMargin must be finite and >= 0, "
                     f"got {margin}")


def collision_model(description, dtype, names, warn=True, capacity=Capacity()):
  """The CollisionModel of a world description: shape tables (sizes, offsets, materials as
  rows of `names`, filters, bodies), candidate pair groups and broadphase settings.

  Single-body shapes come in blocks of one type (ShapeType order), each padded to
  `capacity.shapes`; articulated link shapes follow. The static structure depends only on
  the block sizes, the link shapes, the excluded link pairs and the settings, so a changed
  size, offset, material, filter or body of a single-body shape projects into a compiled
  model without recompiling the step."""
  description = _padded(description, capacity)
  settings = description.contact_settings
  check_contact_settings(settings)
  max_points = int(settings.maxContactsPerPair)
  broadphase_type = BroadphaseType(int(settings.broadphase.type))
  material_id = {name: i for i, name in enumerate(names)}
  by_type = {}
  for body_index, body in enumerate(description.bodies):
    for shape in body.shapes:
      # Shapes are placed relative to the body's COM (the state's position).
      relative = dataclasses.replace(shape, position=np.asarray(shape.position, float)
                                     - np.asarray(body.com, float))
      by_type.setdefault(int(SHAPE_TYPE_OF_OBJECT[shape.object_type]), []).append(
          (body_index, relative) + _collision_filter(shape, body) + (-1,))
  block_rows = dict(capacity.shapes)
  rows = []   # (body, shape type, CollisionShape, group, mask, fixed body or -1)
  for code in sorted(set(by_type) | {c for c, n in block_rows.items() if n > 0}):
    block = by_type.get(code, [])
    padding = max(0, block_rows.get(code, 0) - len(block))
    placeholder = dataclasses.replace(
        _PLACEHOLDER_SHAPE, object_type=_OBJECT_OF_SHAPE_TYPE[code],
        hull=_PLACEHOLDER_HULL if code == ShapeType.MESH else None)
    block = block + [(0, placeholder, 0, 0, -1)] * padding
    rows += [(r[0], code) + r[1:] for r in block]
  offset = len(description.bodies)
  body_offsets = []
  internal_limit = {}   # collision body -> (system, allowed internal contacts)
  for s, entry in enumerate(description.articulated):
    for b in range(entry.description.num_bodies):
      internal_limit[offset + b] = (s, int(entry.allowed_internal_contacts))
    body_offsets.append(offset)
    for body_index, shape in link_collision_shapes(entry, warn):
      rows.append((offset + body_index, int(SHAPE_TYPE_OF_OBJECT[shape.object_type]), shape)
                  + _collision_filter(shape, entry) + (offset + body_index,))
    offset += entry.description.num_bodies
  num_shapes = len(rows)
  shape_body = [r[0] for r in rows]
  shape_type = tuple(int(r[1]) for r in rows)

  def stack(values, shape, kind=np.float64):
    return np.asarray(values, kind).reshape((num_shapes,) + shape)

  hull_vertices, hull_planes, hull_triangles = collision_mesh.hull_tables(
      [r[2].hull for r in rows if r[1] == ShapeType.MESH])
  shape_model = ShapeModel(
      size=device_array(stack([r[2].size for r in rows], (4,)), dtype),
      position_body=device_array(stack([r[2].position for r in rows], (3,)), dtype),
      rotation_body=device_array(stack([r[2].rotation for r in rows], (3, 3)), dtype),
      material=device_array(stack([material_id[r[2].material] for r in rows], (), np.int32)),
      collision_group=device_array(stack([pairs.split_bits(r[3]) for r in rows], (2,),
                                        np.uint32)),
      collision_mask=device_array(stack([pairs.split_bits(r[4]) for r in rows], (2,),
                                       np.uint32)),
      body=device_array(np.asarray(shape_body, np.int32).reshape(num_shapes)),
      hull_vertices=device_array(hull_vertices, dtype),
      hull_planes=device_array(hull_planes, dtype),
      hull_triangles=device_array(hull_triangles),
      shape_type=shape_type)

  excluded = excluded_body_pairs(description)
  system_of_body = {body: owner[0] for body, owner in internal_limit.items()}

  def internal_mesh_pair(a, b):
    """Both shapes on one articulated system and one of them a mesh: not simulated (its
    warning is link_collision_shapes')."""
    system_a, system_b = system_of_body.get(shape_body[a]), system_of_body.get(shape_body[b])
    return (system_a is not None and system_a == system_b
            and ShapeType.MESH in (shape_type[a], shape_type[b]))

  candidate = [(a, b) for a, b in pairs.candidate_pairs(shape_type, [r[5] for r in rows],
                                                        excluded)
               if not internal_mesh_pair(a, b)]
  enabled = pairs.enabled_pairs(candidate, shape_body, excluded)
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
        shape_a=device_array([m[1] for m in members], jnp.int32),
        shape_b=device_array([m[2] for m in members], jnp.int32),
        pair_index=device_array(index), point_limit=device_array(limit, jnp.int32),
        enabled=device_array(np.asarray(enabled[index], bool).reshape(len(members))),
        type_a=type_a, type_b=type_b, points=points,
        limited=any_internal and points > 1))
  capacity = description.contact_capacity
  if capacity is None:
    capacity = _default_contact_capacity(groups, num_shapes)
  bp = settings.broadphase
  return CollisionModel(
      shapes=shape_model, groups=tuple(groups),
      pair_lookup=device_array(pairs.pair_lookup_table(candidate, num_shapes)),
      mbp_world_min=device_array(bp.mbpWorldMin, dtype),
      mbp_world_max=device_array(bp.mbpWorldMax, dtype),
      mbp_cell_size=device_array(bp.mbpCellSize, dtype),
      mbp_padding=device_array(bp.mbpPadding, dtype),
      margin=device_array(settings.sweptCcdSpeculativeMargin, dtype),
      broadphase=int(broadphase_type),
      articulated_body_offset=tuple(body_offsets),
      sap_window=int(max(1, min(num_shapes - 1, 64))),
      mbp_max_cells_per_axis=int(bp.mbpMaxCellsPerAxis),
      contact_capacity=int(capacity))


def sleeping_model(settings, dtype) -> SleepingModel:
  """The Model leaves of SleepingSettings."""
  return SleepingModel(enabled=device_array(bool(settings.enabled), bool),
                       linear_threshold=device_array(settings.linear_threshold, dtype),
                       angular_threshold=device_array(settings.angular_threshold, dtype),
                       quiet_steps=device_array(int(settings.quiet_steps), jnp.int32))


def compile_world(description: WorldDescription, dtype=jnp.float64, names=None,
                  capacity=Capacity(), warn=True):
  """Compiles a world description into the pure core's pytrees.

  Args:
    description: the world.
    dtype: float32 or float64 (needs x64 enabled).
    names: material names in id order (default: `material_names(description)`); a
      longer list leaves ids free for names added later without changing the Model's shapes.
    capacity: padding rows (Capacity) for bodies and shapes added later.
    warn: warn once per articulated system about collision geometry that is not simulated
      (the OO World warns when the system is added instead).

  Returns:
    (model, state): Model and State with float leaves of `dtype`.
  """
  dtype = resolve_dtype(dtype)
  for index, body in enumerate(description.bodies):
    _check_body(body, index)
  if capacity.bodies and capacity.bodies < len(description.bodies):
    raise ValueError(f"argument 'capacity': {capacity.bodies} body rows for "
                     f"{len(description.bodies)} bodies")
  description = _padded(description, capacity)
  bodies = description.bodies

  def stack(values, shape):
    if not values:
      return device_zeros((0,) + shape, dtype)
    return device_array(np.stack([np.asarray(v, np.float64).reshape(shape) for v in values]),
                       dtype)

  used = material_names(description)
  if names is None:
    names = used
  elif set(used) - set(names):
    raise ValueError(f"argument 'names' lacks the materials {sorted(set(used) - set(names))}")
  solver = description.solver
  body_model = SingleBodyModel(
      mass=stack([b.mass for b in bodies], ()),
      inertia_body=stack([b.inertia for b in bodies], (3, 3)),
      linear_damping=stack([b.linear_damping for b in bodies], ()),
      angular_damping=stack([b.angular_damping for b in bodies], (3,)),
      body_type=device_array(np.reshape([int(b.body_type) for b in bodies], len(bodies)), jnp.int32),
  )
  collision = collision_model(description, dtype, names, warn=warn, capacity=capacity)
  articulated = tuple(_articulated_model(entry, dtype) for entry in description.articulated)
  model = Model(
      bodies=body_model,
      collision=collision,
      solver=SolverModel(
          threshold=device_array(solver.threshold, dtype),
          erp=device_array(solver.erp, dtype),
          pair_table=device_array(material_table(description, names), dtype),
          max_iterations=device_array(int(solver.max_iterations), jnp.int32),
          reverse_order=device_array(int(bool(solver.reverse_order)), jnp.int32),
          iteration_capacity=iteration_capacity(solver.max_iterations),
          differentiable=bool(solver.differentiable),
          gradient=solver.gradient),
      gravity=device_array(description.gravity, dtype),
      time_step=device_array(description.time_step, dtype),
      articulated=articulated,
      joint_limits=joint_limits.joint_limit_model(articulated),
      pins=pins.pin_model([entry.description for entry in description.articulated],
                          articulated, dtype),
      sleeping=sleeping_model(description.sleeping, dtype),
      num_bodies=len(bodies),
  )
  body_state = SingleBodyState(
      position=stack([b.position for b in bodies], (3,)),
      quaternion=stack([b.quaternion for b in bodies], (4,)),
      linear_velocity=stack([b.linear_velocity for b in bodies], (3,)),
      angular_velocity=stack([b.angular_velocity for b in bodies], (3,)),
      external_force=stack([b.external_force for b in bodies], (3,)),
      external_torque=stack([b.external_torque for b in bodies], (3,)),
      quiet_steps=device_zeros((len(bodies),), jnp.int32),
      sleeping=device_zeros((len(bodies),), bool),
  )
  state = State(bodies=body_state,
                contacts=detection.empty_contacts(collision.contact_capacity, dtype),
                time=device_array(description.time, dtype),
                solver_iterations=device_zeros((), jnp.int32),
                articulated=tuple(_articulated_state(entry, dtype)
                                  for entry in description.articulated),
                joint_limits=joint_limits.empty_joint_limit_state(model.joint_limits, dtype),
                pins=pins.empty_pin_state(model.pins, dtype),
                finite=device_ones((), bool))
  return model, state


def _articulated_model(entry, dtype):
  """The system's ArticulatedModel with the entry's gains, control mode, actuation limits and
  integration scheme."""
  model = compile_articulated(entry.description, dtype)
  leaves = {"pd_enabled": device_array(float(entry.control_mode == 1), dtype)}
  if entry.springs:
    stiffness, mount = joint_springs.spring_leaves(model, entry.description, entry.springs)
    leaves.update(stiffness=device_array(stiffness, dtype), spring_mount=device_array(mount, dtype))
  for name in ("p_gain", "d_gain", "actuation_lower", "actuation_upper"):
    value = getattr(entry, name)
    if value is not None:
      leaves[name] = device_array(value, dtype)
  return model.replace(integration_scheme=int(entry.integration_scheme), **leaves)


def _articulated_state(entry, dtype):
  nv = entry.description.dof
  p_target = (entry.description.zero_configuration() if entry.p_target is None
              else entry.p_target)
  d_target = np.zeros(nv) if entry.d_target is None else entry.d_target
  return ArticulatedState(
      generalized_coordinate=device_array(entry.generalized_coordinate, dtype),
      generalized_velocity=device_array(entry.generalized_velocity, dtype),
      generalized_acceleration=device_zeros((nv,), dtype),
      feedforward_force=device_array(entry.feedforward_force, dtype),
      external_wrench=device_zeros((entry.description.num_bodies, 6), dtype),
      p_target=device_array(p_target, dtype), d_target=device_array(d_target, dtype),
      generalized_force=device_zeros((nv,), dtype))

"""Many worlds in one compiled step: replication, per-world parameters (domain randomization),
masked reset of finished worlds, snapshots, and the batch axis split across devices and
processes.

Every function here is pure and traceable: use it inside `jit`/`vmap`. A batch is the same
pytree with a leading axis of size N on every leaf; `jax.vmap(rj.step)(models, states)` steps
it (or `in_axes=(None, 0)` when all worlds share one Model).

Domain randomization: `parameters(model, state)` reads one world's physical parameters into a
`WorldParameters` pytree; change its leaves per world (under `vmap`, from a PRNG key) and
`apply_parameters(model, state, params)` writes them back, recomputing what depends on them:
a ground height moves the ground body (its position is state), a material pair's friction and
restitution are written symmetrically (the solver reads the pair table either way round), and
`scale_masses` scales every inertia with its mass (a denser body of the same shape).

Devices: `shard(batch)` splits the leading axis over a 1-D mesh of devices (NamedSharding),
and `sharded_vmap(rj.step, (None, 0))` steps it as one program per device, with no
communication between devices (worlds are independent). Several processes (hosts): after
`jax.distributed.initialize(...)` in each, `shard_process_local(local_batch)` assembles the
global batch from each process's own worlds; each process steps its part. A Model shared by
all worlds goes to every device with `replicate_on(model)`.
"""

from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from raisim_jax.collision.shapes import ShapeType
from raisim_jax.struct import dataclass
from raisim_jax.types import Model, State

# Columns of SolverModel.pair_table.
_FRICTION, _RESTITUTION = 0, 1


def replicate(tree, n: int):
  """`tree` (a Model, a State, a Control, ...) with every leaf repeated along a new leading
  axis of size `n`."""
  return jax.tree.map(lambda x: jnp.broadcast_to(x, (n,) + jnp.shape(x)), tree)


def masked_reset(done, fresh, current):
  """Per world b: `fresh[b]` where `done[b]`, else `current[b]` (any pytrees of batched
  leaves, e.g. States; `fresh` may also be one unbatched tree, used for every world).

  Args:
    done: (N,) bool.
  """
  done = jnp.asarray(done, bool)

  def select(new, old):
    new = jnp.broadcast_to(new, old.shape)
    mask = done.reshape(done.shape + (1,) * (old.ndim - 1))
    return jnp.where(mask, new, old)
  return jax.tree.map(select, fresh, current)


def batch_mesh(devices=None, axis_name: str = "batch") -> Mesh:
  """A 1-D device mesh (all devices of all processes by default) for the batch axis."""
  return Mesh(np.array(jax.devices() if devices is None else devices), (axis_name,))


def _check_divisible(tree, count, what):
  for leaf in jax.tree.leaves(tree):
    if jnp.ndim(leaf) == 0 or jnp.shape(leaf)[0] % count:
      raise ValueError(f"{what}: every leaf needs a leading batch axis divisible by {count} "
                       f"devices, got a leaf of shape {jnp.shape(leaf)}")


def shard(tree, mesh: Optional[Mesh] = None):
  """A batched tree placed with its leading axis split evenly across `mesh`'s devices (one
  process; `batch_mesh()` by default).

  Raises:
    ValueError: a leaf whose leading axis is not divisible by the device count.
  """
  mesh = batch_mesh() if mesh is None else mesh
  _check_divisible(tree, mesh.devices.size, "shard")
  return jax.device_put(tree, NamedSharding(mesh, PartitionSpec(mesh.axis_names[0])))


def replicate_on(tree, mesh: Optional[Mesh] = None):
  """`tree` (e.g. the Model all worlds share) with a full copy on every device of `mesh`, so
  that it can meet a sharded batch in one jitted call. In a multi-process run every process
  passes the same value."""
  mesh = batch_mesh() if mesh is None else mesh
  sharding = NamedSharding(mesh, PartitionSpec())
  if jax.process_count() == 1:
    return jax.device_put(tree, sharding)
  return jax.tree.map(
      lambda x: jax.make_array_from_process_local_data(sharding, np.asarray(x)), tree)


def sharded_vmap(fn, in_axes, mesh: Optional[Mesh] = None):
  """`jit(vmap(fn, in_axes))` run as one program per device of `mesh` (`jax.shard_map`):
  arguments with axis 0 are split along the batch, those with None are replicated, outputs
  are batched and split. Each device's worlds converge, skip and stop on their own: the
  batch-wide early exits of the step (batched_cond.py) reduce over the device's worlds only,
  so no device waits for another (a plain jit of a sharded vmap would all-reduce every sweep
  across devices).

  Args:
    fn: per-world function, e.g. `rj.step` (model, state[, control]) -> state.
    in_axes: tuple with 0 or None per positional argument.
  """
  mesh = batch_mesh() if mesh is None else mesh
  axis = mesh.axis_names[0]
  specs = tuple(PartitionSpec() if a is None else PartitionSpec(axis) for a in in_axes)
  # check_vma=False: the step's batch-wide conds (batched_cond.py) mix per-device values
  # with constants, which shard_map's varying-axis type check would reject; every output is
  # per-device by construction.
  return jax.jit(jax.shard_map(jax.vmap(fn, in_axes=tuple(in_axes)), mesh=mesh,
                               in_specs=specs, out_specs=PartitionSpec(axis),
                               check_vma=False))


def shard_process_local(local_tree, mesh: Optional[Mesh] = None):
  """The global batch (leading axis = the processes' local batches concatenated in process
  order) of a multi-process run, from this process's own `local_tree`.

  Raises:
    ValueError: a local leading axis not divisible by this process's device count.
  """
  mesh = batch_mesh() if mesh is None else mesh
  _check_divisible(local_tree, jax.local_device_count(), "shard_process_local")
  sharding = NamedSharding(mesh, PartitionSpec(mesh.axis_names[0]))
  return jax.tree.map(
      lambda x: jax.make_array_from_process_local_data(sharding, np.asarray(x)), local_tree)


def snapshot(tree):
  """A copy of a (batched) State or Model that later steps cannot alias: restoring it is
  continuing from it (states are immutable values; this also copies device buffers, so a
  snapshot survives buffer donation by a jitted step)."""
  return jax.tree.map(jnp.copy, tree)


@dataclass
class ArticulatedParameters:
  """Physical parameters of one articulated system.

  Attributes:
    mass: (nb,) body masses; inertia: (nb, 3, 3) about the COM, body frame.
    p_gain, d_gain: (nv,) PD gains; damping: (nv,) joint damping.
  """
  mass: jax.Array
  inertia: jax.Array
  p_gain: jax.Array
  d_gain: jax.Array
  damping: jax.Array


@dataclass
class WorldParameters:
  """Physical parameters of one world (see the module docstring).

  Attributes:
    gravity: (3,) world frame.
    body_mass: (n,) single-body masses (the Model's padded rows included); body_inertia:
      (n, 3, 3) about the COM, body frame.
    friction, restitution: (nm, nm) per material pair (the World's material indices:
      World.getMaterialIndex).
    ground_height: () z of the ground (the first half-space), 0 if the world has none.
    articulated: one ArticulatedParameters per articulated system, world order.
  """
  gravity: jax.Array
  body_mass: jax.Array
  body_inertia: jax.Array
  friction: jax.Array
  restitution: jax.Array
  ground_height: jax.Array
  articulated: tuple = ()


def _ground_shape(model: Model) -> Optional[int]:
  types = model.collision.shapes.shape_type
  return next((k for k, t in enumerate(types) if t == ShapeType.HALFSPACE), None)


def parameters(model: Model, state: State) -> WorldParameters:
  """The current WorldParameters of one world."""
  table = model.solver.pair_table
  ground = _ground_shape(model)
  height = (state.bodies.position[model.collision.shapes.body[ground], 2]
            if ground is not None else jnp.zeros((), model.gravity.dtype))
  return WorldParameters(
      gravity=model.gravity, body_mass=model.bodies.mass,
      body_inertia=model.bodies.inertia_body, friction=table[..., _FRICTION],
      restitution=table[..., _RESTITUTION], ground_height=height,
      articulated=tuple(ArticulatedParameters(mass=a.mass, inertia=a.inertia,
                                              p_gain=a.p_gain, d_gain=a.d_gain,
                                              damping=a.damping)
                        for a in model.articulated))


def apply_parameters(model: Model, state: State, params: WorldParameters):
  """(model, state) of one world with `params` written in (shapes must match `parameters`'
  output; a pair table is symmetrized as (t + tᵀ) / 2, which leaves a symmetric one as is)."""
  table = model.solver.pair_table
  symmetric = lambda t: (t + jnp.swapaxes(t, 0, 1)) / 2   # noqa: E731
  table = table.at[..., _FRICTION].set(symmetric(params.friction))
  table = table.at[..., _RESTITUTION].set(symmetric(params.restitution))
  if len(params.articulated) != len(model.articulated):
    raise ValueError(f"params.articulated has {len(params.articulated)} systems, the model "
                     f"{len(model.articulated)}")
  articulated = tuple(
      a.replace(mass=p.mass, inertia=p.inertia, p_gain=p.p_gain, d_gain=p.d_gain,
                damping=p.damping)
      for a, p in zip(model.articulated, params.articulated))
  model = model.replace(
      gravity=params.gravity,
      bodies=model.bodies.replace(mass=params.body_mass, inertia_body=params.body_inertia),
      solver=model.solver.replace(pair_table=table), articulated=articulated)
  ground = _ground_shape(model)
  if ground is not None:
    body = model.collision.shapes.body[ground]
    state = state.replace(bodies=state.bodies.replace(
        position=state.bodies.position.at[body, 2].set(params.ground_height)))
  return model, state


def scale_masses(params: WorldParameters, body_scale=1.0, articulated_scale=()) -> \
    WorldParameters:
  """`params` with single-body masses and inertias times `body_scale` ((), or (n,) per body)
  and system k's link masses and inertias times `articulated_scale[k]` ((), or (nb,))."""
  body_scale = jnp.broadcast_to(jnp.asarray(body_scale, params.body_mass.dtype),
                                params.body_mass.shape)
  articulated = list(params.articulated)
  for k, scale in enumerate(articulated_scale):
    a = articulated[k]
    s = jnp.broadcast_to(jnp.asarray(scale, a.mass.dtype), a.mass.shape)
    articulated[k] = a.replace(mass=a.mass * s, inertia=a.inertia * s[:, None, None])
  return params.replace(body_mass=params.body_mass * body_scale,
                        body_inertia=params.body_inertia * body_scale[:, None, None],
                        articulated=tuple(articulated))


def set_pair(table, i: int, j: int, value):
  """An (nm, nm) pair table with entries (i, j) and (j, i) set to `value`."""
  return table.at[i, j].set(value).at[j, i].set(value)

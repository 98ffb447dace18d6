"""Collision detection inside the step: shape poses -> AABBs -> broadphase -> per-group
narrowphase -> a compacted, fixed-capacity contact buffer.

The narrowphase runs only on the broadphase survivors of each pair group, in one world and
under vmap alike (batched_cond.masked_map). The contact buffer holds
`CollisionModel.contact_capacity` contacts (static; exceeding it sets `Contacts.overflow`).
Contacts are ordered by (type group, pair, point): deterministic, so warm starts and solver
sweeps are reproducible.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from raisim_jax import batched_cond, contact_heads
from raisim_jax.collision import broadphase, collision_bodies, narrowphase, shapes
from raisim_jax.collision.shapes import ShapeType
from raisim_jax.math import dense
from raisim_jax.types import BodyType, BroadphaseType, Contacts, Model, State
from raisim_jax.host_arrays import device_array

KEY_STRIDE = 8  # points per pair in a warm-start key (maxContactsPerPair <= 8)
NARROWPHASE_CHUNK = 4  # candidate pairs per narrowphase chunk (skipped when no survivor)


def shape_world_poses(model: Model, state: State):
  """World poses of the collision shapes (single bodies and articulated links).

  Returns:
    (positions (ns, 3), rotations (ns, 3, 3) shape -> world, sizes (ns, 4)); a half-space's
    size[0] is its world height (its body's z).
  """
  shape_model = model.collision.shapes
  body = shape_model.body
  body_positions, body_rotations = collision_bodies.collision_body_poses(model, state)
  body_rotation = body_rotations[body]
  positions = body_positions[body] + dense.unrolled_matvec(body_rotation,
                                                           shape_model.position_body)
  rotations = dense.unrolled_matmul(body_rotation, shape_model.rotation_body)
  halfspace = np.asarray(shape_model.shape_type) == ShapeType.HALFSPACE
  sizes = shape_model.size.at[:, 0].set(
      jnp.where(jnp.asarray(halfspace), positions[:, 2], shape_model.size[:, 0]))
  return positions, rotations, sizes


def shape_geometry(shape_model, sizes, shape_type, shape):
  """What the shape functions take for shapes `shape` (int, traced or static, any shape)
  of one type: their size rows (..., 4), or for MESH shapes their `shapes.Hull` rows
  (vertices (..., V, 4), planes (..., F, 4), triangles (..., T, 3)) (collision/shapes.py)."""
  if ShapeType(int(shape_type)) != ShapeType.MESH:
    return sizes[shape]
  row = jnp.asarray(shapes.hull_rows(shape_model.shape_type))[shape]
  return shapes.Hull(shape_model.hull_vertices.astype(sizes.dtype)[row],
                     shape_model.hull_planes.astype(sizes.dtype)[row],
                     shape_model.hull_triangles[row])


def shape_aabbs(shape_model, positions, rotations, sizes):
  """(ns, 3) lower and upper world AABB corners, computed per shape type (vmapped)."""
  shape_type = np.asarray(shape_model.shape_type)
  lo = jnp.zeros_like(positions)
  hi = jnp.zeros_like(positions)
  for code in np.unique(shape_type):
    index = np.nonzero(shape_type == code)[0]
    box_lo, box_hi = jax.vmap(lambda s, r, p: shapes.aabb(int(code), s, r, p))(
        shape_geometry(shape_model, sizes, code, index), rotations[index], positions[index])
    lo = lo.at[index].set(box_lo)
    hi = hi.at[index].set(box_hi)
  return lo, hi


def filter_passes(group, mask, body_type, body_of_shape, a, b):
  """(P,) bool: collision group/mask AND logic, and at least one DYNAMIC body.

  group, mask: (S, 2) uint32 bits per shape; body_type: per body; body_of_shape: (S,);
  a, b: (P,) shape indices. Written with array methods only, so NumPy inputs stay on the
  host (the OO world's edits call it there without dispatching any XLA op) and traced
  inputs trace."""
  a_accepts_b = ((group[b] & mask[a]) != 0).any(axis=-1)
  b_accepts_a = ((group[a] & mask[b]) != 0).any(axis=-1)
  moving = ((body_type[body_of_shape[a]] == BodyType.DYNAMIC)
            | (body_type[body_of_shape[b]] == BodyType.DYNAMIC))
  return a_accepts_b & b_accepts_a & moving


def _depth_rank(depth, valid):
  """(K,) rank of each valid point of one pair by depth, deepest 0 (ties by slot order);
  invalid points rank after every valid one."""
  k = depth.shape[-1]
  earlier = np.tril(np.ones((k, k), bool), -1)          # earlier[i, j]: j < i
  deeper = (depth[None, :] > depth[:, None]) | ((depth[None, :] == depth[:, None]) & earlier)
  rank = jnp.sum(deeper & valid[None, :], axis=-1)
  return jnp.where(valid, rank, k)


def detect_contacts(model: Model, state: State) -> Contacts:
  """All contacts of the current configuration, compacted into the contact buffer.

  `body_a` / `body_b` are collision-body indices (collision/collision_bodies.py)."""
  collision = model.collision
  shape_model = collision.shapes
  dtype = model.dtype
  positions, rotations, sizes = shape_world_poses(model, state)
  aabb_lo, aabb_hi = shape_aabbs(shape_model, positions, rotations, sizes)
  # Grown by the speculative margin, so pairs closer than the margin reach the narrowphase.
  aabb_lo, aabb_hi = aabb_lo - collision.margin, aabb_hi + collision.margin
  body_of_shape = shape_model.body
  num_pairs = int(sum(g.shape_a.shape[0] for g in collision.groups))

  body_types = collision_bodies.collision_body_types(model)
  overflow = jnp.zeros((), bool)
  sap_hits = None
  # A window that reaches every other shape (worlds of up to sap_window + 1 shapes) makes the
  # sweep's verdict each pair's AABB overlap, never an overflow: those pairs are tested
  # directly, without the sort (3% of Gymnasium's ant's batched step) and the window's gathers.
  sweeps = collision.sap_window < len(shape_model.shape_type) - 1
  if collision.broadphase == BroadphaseType.Sap3Axis and num_pairs and sweeps:
    # Half-spaces are tested directly; shapes that collide with nothing (group or mask 0,
    # e.g. the OO world's padding rows) are left out of the sweep.
    sweepable = ((np.asarray(shape_model.shape_type) != ShapeType.HALFSPACE)
                 & jnp.any(shape_model.collision_group != 0, axis=-1)
                 & jnp.any(shape_model.collision_mask != 0, axis=-1))
    sap_hits, overflow = broadphase.sweep_and_prune(
        aabb_lo, aabb_hi, sweepable, collision.pair_lookup, num_pairs, collision.sap_window)

  slot_fields = []
  for group in collision.groups:
    a, b = group.shape_a, group.shape_b
    unbounded = ShapeType.HALFSPACE in (group.type_a, group.type_b)
    candidate = broadphase.pair_candidates(
        collision, aabb_lo, aabb_hi, a, b,
        None if sap_hits is None else sap_hits[group.pair_index], unbounded)
    candidate &= group.enabled & filter_passes(
        shape_model.collision_group, shape_model.collision_mask, body_types, body_of_shape, a, b)

    def collide_pair(shape_a, shape_b, point_limit, group=group):
      points = narrowphase.collide(
          group.type_a, group.type_b,
          shape_geometry(shape_model, sizes, group.type_a, shape_a), rotations[shape_a],
          positions[shape_a], shape_geometry(shape_model, sizes, group.type_b, shape_b),
          rotations[shape_b], positions[shape_b], max_points=group.points,
          margin=collision.margin)
      if group.limited:
        points = points.replace(
            valid=points.valid & (_depth_rank(points.depth, points.valid) < point_limit))
      return points

    # Only the broadphase survivors are evaluated, also under vmap (batched_cond); their
    # shapes' poses are gathered inside the map, so a group no world reaches gathers nothing
    # (gathered before it, the rotations of a standing quadruped's 168 unreached pairs were
    # ~20% of its detection).
    points = batched_cond.masked_map(collide_pair, candidate, a, b, group.point_limit,
                                     chunk=NARROWPHASE_CHUNK)
    k = group.points
    valid = points.valid   # False off the candidates (masked_map's zeros)
    key = (group.pair_index[:, None] * KEY_STRIDE
           + jnp.arange(k, dtype=jnp.int32)[None, :]).astype(jnp.int32)
    slot_fields.append(dict(
        valid=valid,
        position=points.position, normal=points.normal, depth=points.depth,
        shape_a=jnp.broadcast_to(a[:, None], (a.shape[0], k)),
        shape_b=jnp.broadcast_to(b[:, None], (b.shape[0], k)),
        key=key))

  capacity = collision.contact_capacity
  if not slot_fields:
    return empty_contacts(capacity, dtype)
  # Every group's candidate points, one slot per point, in order (N slots in all).
  points = [{name: value.reshape((-1,) + value.shape[2:]) for name, value in f.items()}
            for f in slot_fields]
  starts = np.cumsum([0] + [p["valid"].shape[0] for p in points])
  valid = jnp.concatenate([p.pop("valid") for p in points])
  count = jnp.sum(valid)

  def flat_at(index):
    """{field: (size, ...)} the candidate slots `index` (size,) in the world's dtype.

    A small head gathers from each group and selects by slot range instead of gathering from
    the groups' concatenation: XLA materializes that concatenation (a standing quadruped's
    414 candidate points' positions and normals: ~5% of its batched step) and does not fuse
    it into the gather."""
    if index.shape[0] * len(points) > starts[-1]:
      values = {name: jnp.concatenate([p[name] for p in points])[index] for name in points[0]}
    else:
      values = {}
      for p, start, stop in zip(points, starts[:-1], starts[1:]):   # later groups overwrite
        local, inside = jnp.clip(index - start, 0, stop - start - 1), index >= start
        for name, field in p.items():
          picked = field[local]
          mask = inside.reshape(index.shape + (1,) * (picked.ndim - 1))
          values[name] = jnp.where(mask, picked, values[name]) if name in values else picked
    # The world's dtype (a narrowphase constant must not promote float32 worlds).
    return {name: value.astype(dtype) if jnp.issubdtype(value.dtype, jnp.floating) else value
            for name, value in values.items()}

  overflow |= count > capacity

  empty = _empty_buffer(capacity, dtype)

  def compacted(size, _):
    """The buffer with the first `size` valid slots compacted into its head (every world's
    valid slots when `size` is a head that holds them) and the rest empty."""
    if size == 0:
      return jax.tree.map(jnp.asarray, empty).replace(overflow=overflow)
    index = first_valid(valid, size)
    active = jnp.arange(size) < count
    empty_head = contact_heads.leading(empty, size)

    at_index = flat_at(index)

    def gathered(field, empty_field):
      """The valid slots' `field` in the head; an empty slot's value elsewhere (selected
      before any use, so no gradient meets a padded candidate's values)."""
      mask = active.reshape((size,) + (1,) * (np.ndim(empty_field) - 1))
      return jnp.where(mask, at_index[field], empty_field)

    shape_a = gathered("shape_a", empty_head.shape_a)
    shape_b = gathered("shape_b", empty_head.shape_b)
    head = empty_head.replace(
        active=active,
        position=gathered("position", empty_head.position),
        normal=gathered("normal", empty_head.normal),
        depth=gathered("depth", empty_head.depth),
        shape_a=shape_a, shape_b=shape_b,
        body_a=jnp.where(active, body_of_shape[jnp.maximum(shape_a, 0)], empty_head.body_a),
        body_b=jnp.where(active, body_of_shape[jnp.maximum(shape_b, 0)], empty_head.body_b),
        key=gathered("key", empty_head.key),
        overflow=overflow)
    return contact_heads.with_leading(empty, head)

  # The gathers and frames run on the smallest head of the buffer that holds every world's
  # contacts (contact_heads; under vmap one switch for the batch), the slots past it are the
  # empty buffer's constants: bodies in the air skip the compaction (9 bodies falling, batch
  # 1,024, one core: 106k -> 138-149k world-steps/s). Differentiable mode keeps two branches
  # (none, all), as its solve keeps one (more would grow its gradients' compile). The small
  # heads share one compaction into the largest of them: its slots past the contacts are
  # empty, so it is the smaller head's buffer too (one traced compaction less; gathering 8
  # slots costs what gathering 4 does).
  heads = contact_heads.head_sizes(capacity)
  if model.solver.differentiable:
    heads = heads[:1]
  groups = contact_heads.grouped(heads, share_small=True)
  branch = contact_heads.branch_of_tier(groups)
  return jax.lax.switch(branch[contact_heads.tier(count, heads)],
                        [functools.partial(compacted, max(sizes)) for sizes in groups]
                        + [functools.partial(compacted, capacity)], None)


def first_valid(valid, size: int):
  """(size,) int32 indices of the first `size` True entries of `valid` (N,), in order; past
  the last True entry the indices are of False entries (the caller masks those slots).

  A head much smaller than N is a `top_k` of the reversed positions: `jnp.nonzero` is a
  cumulative sum over all N entries and a scatter: 3.1 ms against 0.8 ms for 1,024 worlds'
  first 8 of 414 candidate points (a standing quadruped's, one core); no faster for a head
  above a quarter of N."""
  n = valid.shape[0]
  if 4 * size > n or n >= 2**24:   # positions exact in float32
    return jnp.nonzero(valid, size=size, fill_value=0)[0].astype(jnp.int32)
  position_score = jnp.where(valid, jnp.arange(n, 0, -1, dtype=jnp.float32), 0.0)
  return jax.lax.top_k(position_score, size)[1].astype(jnp.int32)


def _empty_buffer(capacity: int, dtype) -> Contacts:
  """A contact buffer with every slot inactive, as NumPy arrays: what `detect_contacts`
  writes to a slot it leaves empty."""
  def filled(row, *shape):
    return np.broadcast_to(np.asarray(row, dtype), (capacity,) + shape)

  minus_one = np.full((capacity,), -1, np.int32)
  return Contacts(
      active=np.zeros((capacity,), bool), position=filled(np.zeros(3), 3),
      normal=filled([0.0, 0.0, 1.0], 3),
      depth=filled(0.0), shape_a=minus_one, shape_b=minus_one, body_a=minus_one,
      body_b=minus_one, key=minus_one, impulse=filled(np.zeros(3), 3),
      inverse_apparent_inertia=filled(np.eye(3), 3, 3), overflow=np.asarray(False))


def empty_contacts(capacity: int, dtype) -> Contacts:
  """A contact buffer with every slot inactive (host-built arrays)."""
  return jax.tree.map(device_array, _empty_buffer(capacity, dtype))

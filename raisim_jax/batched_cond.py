"""Conditional work that stays skipped under `jax.vmap`.

For one world, `lax.cond` skips the branch not taken: the narrowphase of pairs the
broadphase rejected, contact rows that are empty, solver sweeps after convergence. Under
`vmap` a cond with a batched predicate becomes a `select` that computes both branches in
every world, so a batch of standing robots paid the narrowphase of every candidate pair.

The helpers here decide on `any_world(predicate)`: the predicate of one world when not
batched, and "true in some world of the batch" under `vmap` (a `custom_vmap` reduction over
the batch axis, applied again for each nested vmap). The cond's predicate is then unbatched,
so it stays a real cond: the branch runs for the whole batch only when some world needs it,
and `run_where` keeps the other worlds' values, so a batched run equals the per-world runs.

Derivatives: `any_world` is only ever applied to boolean predicates (no tangent); the conds
are ordinary `lax.cond`s, differentiable in forward and reverse mode and in every order of
`vmap` and `grad` (a batched-predicate cond would wrap its operands in `stop_gradient`,
which reverse mode cannot transpose when the cond sits on a tangent path).
"""

import math

import jax
import jax.numpy as jnp
from jax.custom_batching import custom_vmap


@custom_vmap
def any_world(predicate):
  """() bool: `predicate` for one world; under vmap, whether it holds in any world."""
  return predicate


@any_world.def_vmap
def _any_over_batch(axis_size, in_batched, predicate):
  del axis_size
  if in_batched[0]:
    predicate = jnp.any(predicate, axis=0)
  return any_world(predicate), False


def run_where(predicate, fn, operand):
  """`fn(operand)` where the () bool `predicate` holds, `operand` elsewhere (per world).

  `fn` runs (for every world of a batch) only when `any_world(predicate)`; the worlds whose
  predicate is False keep `operand` exactly. `fn` must return a pytree like `operand`."""
  def branch(x):
    y = fn(x)
    return jax.tree.map(lambda new, old: jnp.where(predicate, new, old), y, x)

  return jax.lax.cond(any_world(predicate), branch, lambda x: x, operand)


GROUPED_FROM_CHUNKS = 64   # masked_map groups its chunks from this many on


def masked_map(fn, mask, *args, chunk=4):
  """`vmap(fn)(*args)` on the rows where `mask` (R,) holds; zeros elsewhere.

  Nothing runs when no world of the batch has a survivor (one `cond`): a standing
  quadruped's 12 narrowphase groups have survivors in one (feet on the ground), and the
  compaction and chunk loop of the other 11 cost its batched detection 20 -> 12 us per
  world-step (batch 1,024, one core). Rows that fit one chunk are evaluated where they are,
  without compaction. Otherwise the survivors are compacted first, then evaluated `chunk`
  rows at a time; a chunk is skipped when no world of the batch has a survivor in it, so the
  cost is the batch size times the largest survivor count, not times R. From
  GROUPED_FROM_CHUNKS chunks on, they run in groups of about sqrt(R / chunk) (a scan over
  groups, a skipped group costing one `cond`, of scans over their chunks): one flat scan
  over every chunk paid a `cond` per chunk even where all were skipped, 8,160 of them for a
  pile of 216 spheres' 32,640 pairs (about 5 ms per step for ~230 survivors).

  Args:
    fn: function of one row of each argument, returning a pytree of arrays.
    mask: (R,) bool.
    *args: arrays with leading axis R.
    chunk: static rows per chunk.

  Returns:
    fn's output pytree stacked over the R rows (rows off the mask are zero / False).
  """
  mask = jnp.asarray(mask)
  args = tuple(jnp.asarray(a) for a in args)
  rows = mask.shape[0]
  chunk = max(1, min(chunk, rows))
  chunks = -(-rows // chunk)
  # Chunks per group; small maps stay one flat scan (groups' extra conds cost more than they
  # skip there: the 9-body scene's 7 chunks).
  group = math.isqrt(chunks) if chunks >= GROUPED_FROM_CHUNKS else 1
  groups = -(-rows // (chunk * group))
  trips = groups * group
  count = jnp.sum(mask.astype(jnp.int32))
  one = jax.eval_shape(fn, *(a[0] for a in args))

  def skipped(*size):
    """A branch returning fn's output pytree as zeros with leading axes `size`."""
    return lambda _: jax.tree.map(lambda e: jnp.zeros(size + e.shape, e.dtype), one)

  def masked(r):
    """Row-stacked `r` (R, ...) with the rows off the mask zero."""
    return jnp.where(mask.reshape((rows,) + (1,) * (r.ndim - 1)), r, jnp.zeros((), r.dtype))

  def in_place(_):
    return jax.tree.map(masked, jax.vmap(fn)(*args))

  def compacted(_):
    (index,) = jnp.nonzero(mask, size=trips * chunk, fill_value=0)

    def one_chunk(inputs):
      start, slots = inputs
      return jax.lax.cond(any_world(count > start),
                          lambda s: jax.vmap(fn)(*(a[s] for a in args)), skipped(chunk), slots)

    def one_group(inputs):
      start, slots = inputs
      run = lambda x: jax.lax.map(one_chunk, (start + jnp.arange(group, dtype=jnp.int32) * chunk,
                                              x))
      return jax.lax.cond(any_world(count > start), run, skipped(group, chunk), slots)

    if group == 1:
      result = jax.lax.map(one_chunk, (jnp.arange(trips, dtype=jnp.int32) * chunk,
                                       index.reshape(trips, chunk)))
    else:
      result = jax.lax.map(one_group, (jnp.arange(groups, dtype=jnp.int32) * (group * chunk),
                                       index.reshape(groups, group, chunk)))
    # Back to row order by a gather (reverse mode transposes it to a scatter-add): row r is
    # compacted slot (number of survivors before r).
    slot = jnp.maximum(jnp.cumsum(mask.astype(jnp.int32)) - 1, 0)

    return jax.tree.map(lambda r, e: masked(r.reshape((trips * chunk,) + e.shape)[slot]),
                        result, one)

  return jax.lax.cond(any_world(count > 0), in_place if rows <= chunk else compacted,
                      skipped(rows), None)

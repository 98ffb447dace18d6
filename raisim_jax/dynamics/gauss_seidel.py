"""Gauss-Seidel sweeps over a world's solver rows (contacts, joint limits, pins).

The rows (contacts, joint limits, pins) and their data are built by
`contact_dynamics.solve_contacts`; this module only iterates them. A sweep visits the active
rows in index order (reversed when `reverse_order`), solves each 3x3 block exactly with the
others fixed and applies the impulse change to the bodies at once (in worlds of single bodies
solved with `early_exit`, sweeps after the first go by colour instead: rows sharing no movable
body solved together, `_schedule`):
    c'_i = v_i(u) - G_ii lambda_i,   lambda_i <- local_solve(G_ii, c'_i),   u += W_i d lambda_i
with v_i the row's contact-frame relative velocity (`row_velocity`) and u the carried
velocities (single bodies' linear (n, 3) and angular (n, 3), the systems' stacked generalized
velocity (NV,)). When a solve is still going after BLOCK_SWEEP sweeps, every island of single
bodies (bodies connected by contacts, held by static ones) solves its contact rows as one
block (`island_block`: redundant corner contacts and stacks, which per-contact sweeps leave
creeping when friction is near its limit, or running to the sweep cap when masses differ).

Derivatives (`Layout.implicit`, from `SolverModel.gradient`): "implicit" (opt-in) runs the
early-exit solve on values without derivatives and attaches the derivative of its converged
fixed point (`_with_implicit_derivative`: one sweep linearized at the solution, the linear
fixed-point problem solved by restarted GMRES, `_linear_fixed_point`, in forward mode and
transposed in reverse mode; docs/contact_solver.md, Gradients).
"unrolled" (the default): with `early_exit` off, a solve is a scan of `iteration_capacity` fixed-trip sweeps
whose converged ones are skipped (`batched_cond.run_where`), so forward and reverse mode both
differentiate it; the derivative is that of the sweeps actually run. Each fixed-trip sweep is
a `jax.checkpoint`: reverse mode keeps its input carry and recomputes its row visits, where it
had stored every visit of every sweep (~25 MB per world-step for 96 contact slots; a batch of
64 x 50 steps asked for 66 GB). The island block move (`_block_move`) is differentiated
at the root of its Newton solve, not through its iterations (`island_block.correction`).
`early_exit` alone (a `while_loop` over the active rows) differentiates in forward mode only.
"""

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.ad_checkpoint import checkpoint_name

from raisim_jax import batched_cond
from raisim_jax.dynamics import contact_solver, island_block
from raisim_jax.math import dense

ROW_CONTACT = 0
ROW_JOINT_LIMIT = 1
ROW_PIN = 2
GRADIENTS = ("implicit", "unrolled")   # SolverModel.gradient
ROW_CHUNK = 8  # rows per chunk of a fixed-trip sweep (chunks past the active rows skipped)


class Layout(NamedTuple):
  """Static description of the rows.

  Attributes:
    rows: R, contact rows then joint-limit rows then pin rows.
    has_singles: the world has single bodies (the single-body terms of a row exist).
    has_systems: the world has articulated degrees of freedom (J and W exist).
    num_limits: joint-limit rows.
    num_pins: pin rows (the last ones).
    iteration_capacity: trip count of the fixed-length sweep scans.
    early_exit: the primal iterates in a `while_loop` over the active rows (else a scan of
      `iteration_capacity` fixed-trip sweeps with converged ones skipped).
    block_bodies: number of single bodies when the island block correction
      (`island_block`) is compiled in, 0 when it is off.
    colour_width: 1: every sweep visits one row at a time, in index order. W > 1 (worlds of
      single bodies with `early_exit` only): after the first sweep the rows are coloured so
      that no two rows of a colour share a movable body, and each later sweep solves the
      colours one after another, up to W rows of a colour at once (`_schedule`).
    compact_block: fixed-trip solves run the island block move on the compacted active rows
      where every world's fit (`_block_move`); False: on every row (one traced move).
    implicit: derivatives by the implicit function theorem at the converged impulses
      (`_implicit_solve`): the primal is the early-exit solve with no derivative traced
      through it; `early_exit` and `colour_width` then describe that primal.
  """
  rows: int
  has_singles: bool
  has_systems: bool
  num_limits: int
  num_pins: int
  iteration_capacity: int
  early_exit: bool
  block_bodies: int = 0
  colour_width: int = 1
  compact_block: bool = True
  implicit: bool = False


def row_velocity(layout, problem, velocity, i):
  """(3,) contact-frame relative velocity of row i for carried velocities `velocity`
  (linear (n, 3), angular (n, 3), generalized (NV,))."""
  linear, angular, generalized = velocity
  v = jnp.zeros(3, problem["delassus"].dtype)
  if layout.has_singles:
    a, b = problem["index_a"][i], problem["index_b"][i]
    r_a, r_b = problem["r_a"][i], problem["r_b"][i]
    world = (problem["weight_a"][i] * (linear[a] + jnp.cross(angular[a], r_a))
             - problem["weight_b"][i] * (linear[b] + jnp.cross(angular[b], r_b)))
    v = v + dense.unrolled_matvec(problem["frame"][i], world)
  if layout.has_systems:
    v = v + dense.unrolled_matvec(problem["jac"][i], generalized)
  return v


def rows_velocity(layout, problem, velocity):
  """(R, 3) `row_velocity` of every row."""
  if not layout.rows:   # nothing to index (a world with no contact, limit or pin rows)
    return jnp.zeros((0, 3), problem["delassus"].dtype)
  return jax.vmap(row_velocity, in_axes=(None, None, None, 0))(
      layout, problem, velocity, jnp.arange(layout.rows))


def rows_velocity_magnitude(layout, problem, free_velocity, impulses):
  """(R,) bound on the magnitude of the terms a row's velocity is summed from: the free
  velocities and every row's impulse effect, in absolute values, through the row. Their
  rounding (eps times this) is the noise floor of the row's velocity.

  free_velocity: (linear (n, 3), angular (n, 3), generalized (NV,)); impulses: (R, 3).
  Reads the entrywise absolute values of `jac` (R, 3, NV) and of `inverse_jt` laid out as
  (NV, R * 3) from `problem["abs_jac"]` and `problem["abs_inverse_jt"]` (`solve` takes them
  once: taken here, XLA transposed the (R, NV, 3) array in every sweep).
  """
  linear, angular, generalized = free_velocity
  impulse_size = jnp.sqrt(jnp.sum(impulses * impulses, axis=-1))    # (R,)
  magnitude = jnp.zeros(layout.rows, impulses.dtype)
  if layout.has_singles:
    norm = lambda x: jnp.sqrt(jnp.sum(x * x, axis=-1))
    inv_mass, inv_inertia = problem["inv_mass"], problem["inv_inertia"]
    linear_size, angular_size = norm(linear), norm(angular)
    for side in ("a", "b"):
      body, weight = problem["index_" + side], jnp.abs(problem["weight_" + side])
      linear_size = linear_size.at[body].add(weight * inv_mass[body] * impulse_size)
      # 3 x the largest entry of I^-1 bounds its row sums.
      angular_size = angular_size.at[body].add(
          weight * jnp.max(jnp.abs(inv_inertia[body]), axis=(1, 2)) * 3.0
          * norm(problem["r_" + side]) * impulse_size)
    for side in ("a", "b"):
      body = problem["index_" + side]
      magnitude = magnitude + jnp.abs(problem["weight_" + side]) * (
          linear_size[body] + angular_size[body] * norm(problem["r_" + side]))
  if layout.has_systems:
    generalized_size = jnp.abs(generalized) + problem["abs_inverse_jt"] @ jnp.abs(
        impulses).reshape(-1)
    magnitude = magnitude + jnp.max(problem["abs_jac"] @ generalized_size, axis=-1)
  return magnitude


def _apply_rows(layout, problem, velocity, impulses, rows=None):
  """`velocity` after the impulse changes `impulses` (K, 3) (contact frames) of the rows
  `rows` (K,) at once; `rows` None: every row (K = R)."""
  take = (lambda x: x) if rows is None else (lambda x: x[rows])
  linear, angular, generalized = velocity
  if layout.has_singles:
    inv_mass, inv_inertia = problem["inv_mass"], problem["inv_inertia"]
    world_impulse = jnp.einsum("rji,rj->ri", take(problem["frame"]), impulses)
    for side, sign in (("a", 1.0), ("b", -1.0)):
      body, weight = take(problem["index_" + side]), sign * take(problem["weight_" + side])
      torque = jnp.einsum("rij,rj->ri", inv_inertia[body],
                          jnp.cross(take(problem["r_" + side]), world_impulse))
      linear = linear.at[body].add((weight * inv_mass[body])[:, None] * world_impulse)
      angular = angular.at[body].add(weight[:, None] * torque)
  if layout.has_systems:
    generalized = generalized + jnp.einsum("rnj,rj->n", take(problem["inverse_jt"]), impulses)
  return linear, angular, generalized


def _apply(layout, problem, velocity, i, delta):
  """`velocity` after row i's impulse change `delta` (3,) (contact frame). Scalar code, not
  `_apply_rows` of one row: its scatters with a (1,) index array made reverse mode through
  the sweeps several times slower (a batched robot gradient test 58 -> 257 s)."""
  linear, angular, generalized = velocity
  if layout.has_singles:
    world_impulse = dense.unrolled_matvec(problem["frame"][i].T, delta)
    inv_mass, inv_inertia = problem["inv_mass"], problem["inv_inertia"]
    for side, sign in (("a", 1.0), ("b", -1.0)):
      body, weight = problem["index_" + side][i], sign * problem["weight_" + side][i]
      linear = linear.at[body].add(weight * inv_mass[body] * world_impulse)
      angular = angular.at[body].add(
          weight * dense.unrolled_matvec(inv_inertia[body],
                                         jnp.cross(problem["r_" + side][i], world_impulse)))
  if layout.has_systems:
    generalized = generalized + dense.unrolled_matvec(problem["inverse_jt"][i], delta)
  return linear, angular, generalized


def apply_all(layout, problem, velocity, impulses):
  """`velocity` after every row's impulse (R, 3) (contact frames) at once."""
  return _apply_rows(layout, problem, velocity, impulses)


def _local_solve(layout, problem, i, c_prime):
  """(3,) impulse of row i for its free velocity c' with the other rows fixed."""
  delassus, target = problem["delassus"], problem["target"]

  def contact(_):
    return contact_solver.solve_single_contact(delassus[i], c_prime, problem["friction"][i],
                                               target[i])

  def limit(_):
    lam = jnp.maximum((target[i] - c_prime[2]) / delassus[i, 2, 2], 0.0)
    return jnp.zeros(3, delassus.dtype).at[2].set(lam)

  def pin(_):
    # Bilateral: v = G lambda + c' = 0 (least norm where G is singular).
    first_pin = layout.rows - layout.num_pins
    return -problem["pin_inverse"][jnp.maximum(i - first_pin, 0)] @ c_prime

  if not (layout.num_limits or layout.num_pins):
    return contact(None)
  # Without contact rows (the zero contact head) the contact branch is never taken: a limit
  # or pin solve stands in for it, so the local contact solve is not traced there.
  if layout.rows == layout.num_limits + layout.num_pins:
    contact = limit if layout.num_limits else pin
  branches = (contact, limit if layout.num_limits else contact,
              pin if layout.num_pins else contact)
  return jax.lax.switch(problem["kind"][i], branches, None)


def _visit(layout, problem, carry, i):
  """Solves row i: carry (velocity, impulses (R, 3), largest impulse change so far that is
  above rounding)."""
  velocity, impulses, change = carry
  block = problem["delassus"][i]
  c_prime = (row_velocity(layout, problem, velocity, i)
             - dense.unrolled_matvec(block, impulses[i]))
  new = _local_solve(layout, problem, i, c_prime)
  delta = new - impulses[i]
  velocity = _apply(layout, problem, velocity, i, delta)
  return velocity, impulses.at[i].set(new), jnp.maximum(
      change, _progress(problem, block, delta, problem["velocity_magnitude"][i]))


def _progress(problem, block, delta, velocity_magnitude):
  """The largest entry of a row's impulse change `delta` (3,), or 0 where its effect on the
  row's own velocity is within the rounding of the terms that velocity is summed from
  (`rows_velocity_magnitude`): rounding noise, not progress, which does not count towards the
  sweep's change. Counted, part of it lost to rounding in the bodies' velocities made the next
  sweep repeat it, a constant drift that ran to the sweep cap (float32 hopper: ~1e-6 N s per
  sweep on its foot, followed by its ankle's limit row)."""
  rounding = problem["rounding"] * velocity_magnitude
  progress = jnp.max(jnp.abs(dense.unrolled_matvec(block, delta))) > rounding
  return jnp.where(progress, jnp.max(jnp.abs(delta)), 0.0)


def _visit_colour(layout, problem, carry, rows, valid):
  """Solves the rows `rows` (W,) of one colour where `valid` (W,): they share no movable
  body, so solving them together from the same velocities is exactly a Gauss-Seidel pass over
  them in any order. An invalid slot changes nothing (its writes are dropped)."""
  velocity, impulses, change = carry
  safe = jnp.where(valid, rows, 0)
  blocks = problem["delassus"][safe]
  c_prime = (jax.vmap(row_velocity, in_axes=(None, None, None, 0))(layout, problem, velocity,
                                                                  safe)
             - jnp.einsum("wij,wj->wi", blocks, impulses[safe]))
  new = jax.vmap(_local_solve, in_axes=(None, None, 0, 0))(layout, problem, safe, c_prime)
  delta = jnp.where(valid[:, None], new - impulses[safe], 0.0)
  velocity = _apply_rows(layout, problem, velocity, delta, safe)
  steps = jax.vmap(functools.partial(_progress, problem))(
      blocks, delta, problem["velocity_magnitude"][safe])
  dropped = jnp.where(valid, rows, layout.rows)        # out of range: the write is dropped
  return (velocity, impulses.at[dropped].set(new, mode="drop"),
          jnp.maximum(change, jnp.max(jnp.where(valid, steps, 0.0))))


COLOURS_IN_MASK = 32   # colours tracked per body as bits; a row finding none free gets its own


def _schedule(layout, problem):
  """The colour order of a sweep (W = `layout.colour_width` > 1), computed once per solve
  (the active rows do not change during it); read with `_slot`. The active rows are coloured
  greedily in index order, each taking the smallest colour that no earlier row sharing a
  movable body (inverse mass > 0, on a side the row acts on) has; rows of one colour share no
  movable body, so solving them together is exactly a Gauss-Seidel pass over them. A sweep
  runs the colours one after another, each in slots of up to W of its rows (a colour of 9
  rows takes 3 slots of 4). The rows are placed by colour with a counting sort (an argsort
  cost the 9-body scene at batch 1,024 11% of its step).

  Returns a dict: num_slots (), order (R,) rows by colour, counts / slots / slot_end /
  colour_start (C,) per colour (C = COLOURS_IN_MASK + R)."""
  rows, width = layout.rows, layout.colour_width
  row_active = problem["row_active"]
  num_active, active_order = _active_rows(layout, problem)
  bodies = problem["inv_mass"].shape[0]
  movable = problem["inv_mass"] > 0
  colours = COLOURS_IN_MASK + rows

  def node(side, i):
    body = problem["index_" + side][i]
    acts = movable[body] & (problem["weight_" + side][i] != 0)
    return jnp.where(acts, body, bodies)                      # `bodies`: a scratch node

  def assign(k, carry):
    taken, counts, colour, rank = carry                        # taken: (bodies + 1,) bits
    i = active_order[k]
    a, b = node("a", i), node("b", i)
    free = ~(taken[a] | taken[b])
    lowest = free & (~free + jnp.uint32(1))
    c = jnp.where(free == 0, COLOURS_IN_MASK + k,
                  jax.lax.population_count(lowest - jnp.uint32(1)).astype(jnp.int32))
    bit = jnp.where(free == 0, jnp.uint32(0), lowest)
    taken = taken.at[a].set(taken[a] | bit).at[b].set(taken[b] | bit).at[bodies].set(0)
    return taken, counts.at[c].add(1), colour.at[i].set(c), rank.at[i].set(counts[c])

  start = (jnp.zeros((bodies + 1,), jnp.uint32), jnp.zeros((colours,), jnp.int32),
           jnp.zeros((rows,), jnp.int32), jnp.zeros((rows,), jnp.int32))
  _, counts, colour, rank = jax.lax.fori_loop(0, num_active, assign, start)
  colour_start = jnp.cumsum(counts) - counts
  position = jnp.where(row_active, colour_start[colour] + rank, rows)
  order = jnp.zeros((rows,), jnp.int32).at[position].set(jnp.arange(rows, dtype=jnp.int32),
                                                        mode="drop")
  slots = (counts + width - 1) // width
  slot_end = jnp.cumsum(slots)
  return dict(num_slots=slot_end[-1], order=order, counts=counts, slots=slots,
              slot_end=slot_end, colour_start=colour_start)


def _slot(layout, problem, j):
  """(rows (W,), valid (W,)) solved at step j of a coloured sweep; `reverse_order` reverses
  the slots (the colours' order; within a slot the order does not matter)."""
  rows, width, schedule = layout.rows, layout.colour_width, problem["schedule"]
  num_slots = schedule["num_slots"]
  j = jnp.where(problem["reverse_order"] > 0, num_slots - 1 - j, j)
  in_range = (j >= 0) & (j < num_slots)
  slot_end, slots, counts = schedule["slot_end"], schedule["slots"], schedule["counts"]
  c = jnp.clip(jnp.searchsorted(slot_end, j, side="right"), 0, slot_end.shape[0] - 1)
  within = (j - (slot_end[c] - slots[c])) * width + jnp.arange(width)
  valid = (within < counts[c]) & in_range
  return schedule["order"][jnp.clip(schedule["colour_start"][c] + within, 0, rows - 1)], valid


def _active_rows(layout, problem):
  """(() number of active rows, (R,) the active rows in index order, padded with row 0)."""
  row_active = problem["row_active"]
  (active_order,) = jnp.nonzero(row_active, size=layout.rows, fill_value=0)
  return jnp.sum(row_active.astype(jnp.int32)), active_order


def _order(layout, problem):
  """(number of active rows, k -> row visited at position k of a sweep): the active rows in
  index order, reversed when the model says so."""
  num_active, active_order = _active_rows(layout, problem)

  def row_at(k):
    position = jnp.where(problem["reverse_order"] > 0, num_active - 1 - k, k)
    return active_order[jnp.clip(position, 0, layout.rows - 1)]

  return num_active, row_at


def _with_rounding(layout, problem, impulses):
  """`problem` with this sweep's row noise floors (from the impulses at the sweep's start)."""
  magnitude = jax.lax.stop_gradient(
      rows_velocity_magnitude(layout, problem, problem["free_velocity"], impulses))
  return {**problem, "velocity_magnitude": magnitude}


BLOCK_SWEEP = 4   # sweeps after which the island block correction runs, if still going


def _block_move(layout, problem, carry, when):
  """carry (velocity, impulses, change, sweeps) after the island block correction, where
  `when(carry)` holds (the solve is still going after BLOCK_SWEEP sweeps) and some dynamic
  body has at least `island_block.MIN_ROWS` contact rows with single bodies (`island_block`:
  the rows of an island of single bodies couple to no other row, so one block move solves
  them). Elsewhere (under vmap: in the worlds where) nothing happens, and when no world needs
  it the move is skipped: solves that converge within BLOCK_SWEEP sweeps (a scene at rest
  without tangential load), a ball on the ground (one row), robots (their contacts are with
  links). The carried `change` is kept: the last sweep's change exceeded the tolerance, so at
  least one sweep follows the move.

  Not from the start of every solve: run there, it cost 3x the whole step of 4 boxes and 4
  spheres at rest (batch 1,024: 17.4k -> 5.4k world-steps/s). Rematerialized in reverse mode:
  what it stores is its inputs and the root of its Newton solve (`island_block.NEWTON_ROOT`,
  (n + 1, 6)), not its intermediates (per-body 6x6 blocks, conjugate-gradient iterations);
  going back it recomputes them from the root, not the Newton steps (which carry no
  derivative: `island_block.correction`). Batch 64 x 10 steps of 2 sliding boxes and 2 spheres
  (float32): gradient 3.09 -> 2.63 s with the root kept.
  """
  if not layout.block_bodies:
    return carry
  n = layout.block_bodies
  num_active, active_order = _active_rows(layout, problem)

  def delta_on_every_row(velocity, impulses):
    block = island_block.prepare(problem, n)
    return island_block.correction(block, problem, rows_velocity(layout, problem, velocity),
                                   impulses, n)

  def delta_on_active_rows(size, velocity, impulses):
    rows = active_order[:size]
    subset = island_block.rows_subset(problem, rows, jnp.arange(size) < num_active, n)
    velocities = jax.vmap(row_velocity, in_axes=(None, None, None, 0))(layout, problem,
                                                                       velocity, rows)
    delta = island_block.correction(island_block.prepare(subset, n), subset, velocities,
                                    impulses[rows], n)
    return jnp.zeros_like(impulses).at[rows].add(delta)   # the padding's delta is zero

  def correct(carry):
    velocity, impulses, change, sweeps = carry
    # Forward-only solves already run on the leading contact slots that hold every world's
    # contacts (contact_dynamics.solve_contacts' heads); the differentiable one on them all.
    size = island_block.compact_size(layout.rows) if layout.compact_block else None
    if size is None:
      delta = delta_on_every_row(velocity, impulses)
    else:   # one branch for the whole batch: the compact one where every world's rows fit
      delta = jax.lax.cond(batched_cond.any_world(num_active > size),
                           delta_on_every_row,
                           functools.partial(delta_on_active_rows, size), velocity, impulses)
    return apply_all(layout, problem, velocity, delta), impulses + delta, change, sweeps

  candidates = island_block.has_candidates(problem, n)
  return batched_cond.run_where(candidates & when(carry),
                                jax.checkpoint(correct, policy=island_block.KEEP_NEWTON_ROOT),
                                carry)


def _fixed_sweep(layout, problem, carry):
  """One sweep with a fixed trip count (reverse-mode transposable): chunks of ROW_CHUNK
  positions, a chunk past the active rows skipped (under vmap: past every world's).
  carry: (velocity, impulses, change, sweeps)."""
  velocity, impulses, _, sweeps = carry
  problem = _with_rounding(layout, problem, impulses)
  num_active, row_at = _order(layout, problem)

  def visit_position(inner, k):
    new = _visit(layout, problem, inner, row_at(k))
    return jax.tree.map(lambda n, o: jnp.where(k < num_active, n, o), new, inner), None

  def chunk(inner, ks):
    return batched_cond.run_where(
        ks[0] < num_active, lambda c: jax.lax.scan(visit_position, c, ks)[0], inner), None

  positions = np.arange(-(-layout.rows // ROW_CHUNK) * ROW_CHUNK,
                        dtype=np.int32).reshape(-1, ROW_CHUNK)
  dtype = impulses.dtype
  (velocity, impulses, change), _ = jax.lax.scan(
      chunk, (velocity, impulses, jnp.zeros((), dtype)), jnp.asarray(positions))
  return velocity, impulses, change, sweeps + 1


def _active_sweep(layout, problem, carry):
  """One sweep over exactly the active rows (dynamic trip count: forward only): one row at a
  time in index order, or by colour when `problem` holds a `_schedule`."""
  velocity, impulses, _, sweeps = carry
  problem = _with_rounding(layout, problem, impulses)
  inner = (velocity, impulses, jnp.zeros((), impulses.dtype))
  if "schedule" in problem:
    velocity, impulses, change = jax.lax.fori_loop(
        0, problem["schedule"]["num_slots"],
        lambda j, c: _visit_colour(layout, problem, c, *_slot(layout, problem, j)), inner)
  else:
    num_active, row_at = _order(layout, problem)
    velocity, impulses, change = jax.lax.fori_loop(
        0, num_active, lambda k, c: _visit(layout, problem, c, row_at(k)), inner)
  return velocity, impulses, change, sweeps + 1


def sweep_groups(capacity):
  """(groups, sweeps per group) of the fixed-trip scan: about sqrt(capacity) each, at least
  `capacity` trips in all (the trips past it never run: `max_iterations <= capacity`)."""
  per_group = max(1, math.isqrt(max(capacity - 1, 0)) + 1)
  return -(-capacity // per_group), per_group


def _fixed_sweeps(layout, problem, start, keep_going):
  """`iteration_capacity` fixed-trip sweeps from carry `start`, each skipped (under vmap: for
  the worlds where) `keep_going(carry)` is False; the block move before sweep BLOCK_SWEEP.

  The sweeps run in about sqrt(capacity) groups of about sqrt(capacity), a group skipped
  whole by one `cond` once no world keeps going: a solve that converges in a few sweeps pays
  ~2 sqrt(capacity) skipped trips, not `capacity` (one flat scan of 150 trips cost a resting
  9-body world ~300 us of its ~570 us step, converged after one sweep). One scan body holds
  both the move and the sweep: two scans around the move compiled the sweep twice (a
  700-step gradient test: 175 s instead of 104 s)."""
  at_block = lambda carry: keep_going(carry) & (carry[3] == BLOCK_SWEEP)

  sweep = jax.checkpoint(functools.partial(_fixed_sweep, layout, problem), prevent_cse=False)

  def iterate(carry, _):
    carry = _block_move(layout, problem, carry, at_block)
    return batched_cond.run_where(keep_going(carry), sweep, carry), None

  groups, per_group = sweep_groups(layout.iteration_capacity)

  def group(carry, _):
    run = lambda c: jax.lax.scan(iterate, c, None, length=per_group)[0]
    return batched_cond.run_where(keep_going(carry), run, carry), None

  return jax.lax.scan(group, start, None, length=groups)[0]


def _active_sweeps(layout, problem, start, keep_going):
  """Sweeps over the active rows in a `while_loop` from carry `start` while
  `keep_going(carry)` (under vmap the batch stops when every world converged; forward mode
  only), the block move after BLOCK_SWEEP of them. Two loops around the move, not a cond in
  every sweep: the cond's copies of the carry cost a third of the step of 4 boxes and
  4 spheres at rest at batch 1,024.

  With `colour_width` > 1 the first sweep goes row by row and the rows are coloured
  (`_schedule`) only where the solve is still going after it: a warm-started scene at rest
  converges in that sweep, and colouring it every step cost the 9-body scene at rest 11% of
  its step at batch 1,024."""
  def loop(problem, carry, also):
    return jax.lax.while_loop(lambda c: keep_going(c) & also(c),
                              functools.partial(_active_sweep, layout, problem), carry)

  def remaining_sweeps(problem, carry):
    if layout.block_bodies:
      carry = loop(problem, carry, lambda c: c[3] < BLOCK_SWEEP)
      carry = _block_move(layout, problem, carry, keep_going)
    return loop(problem, carry, lambda c: True)

  if layout.colour_width == 1:
    return remaining_sweeps(problem, start)
  # One cond around the colouring and every later sweep: a schedule of zeros carried through
  # the loops where no world needs one cost a world of falling bodies a third of its step.
  start = loop(problem, start, lambda c: c[3] < 1)
  coloured = lambda carry: remaining_sweeps(
      {**problem, "schedule": _schedule(layout, problem)}, carry)
  return batched_cond.run_where(keep_going(start), coloured, start)


VELOCITY_ROUNDING_ULPS = 64   # rounding of a row velocity, in ulps of its terms' magnitude
IMPULSE_ROUNDING_ULPS = 64    # rounding of a sweep's impulse change, in ulps of the largest


def solve(layout, problem, free_velocity, impulse0):
  """Gauss-Seidel from the warm start `impulse0` (R, 3) on top of `free_velocity` until the
  largest impulse change of a sweep is at most `problem["threshold"]` (or, where that is below
  rounding, IMPULSE_ROUNDING_ULPS ulps of the largest impulse) or `max_iterations` sweeps ran.
  A row's update counts towards that change only when its effect on the row's
  velocity exceeds VELOCITY_ROUNDING_ULPS ulps of the terms the velocity is summed from
  (float32: the velocity of a body moving at metres per second is not known better).
  With `threshold` 0 neither rounding floor applies: sweeps run until one changes nothing,
  or to the cap.

  Returns:
    (velocity (linear, angular, generalized), impulses (R, 3), () int32 sweeps).
  """
  if layout.implicit and layout.rows:
    return _implicit_solve(layout, problem, free_velocity, impulse0)
  dtype = impulse0.dtype
  velocity = apply_all(layout, problem, free_velocity, impulse0)
  if not layout.rows:
    return velocity, impulse0, jnp.zeros((), jnp.int32)
  start = (velocity, impulse0, jnp.asarray(jnp.inf, dtype), jnp.zeros((), jnp.int32))
  num_active, _ = _order(layout, problem)

  # In float32 a row velocity of bodies moving at metres per second carries rounding errors
  # of ~1e-6 m/s; an impulse change below that cannot converge, and rounding that an update
  # loses in the bodies' velocities makes the next sweep repeat it (a constant drift to the
  # cap: 256 Gymnasium hoppers, one foot contact, 1.5% of steps at 150 sweeps). The gate is a
  # stopping rule only (no gradient flows through it); its floors are refreshed every sweep.
  # threshold = 0 asks for every sweep up to maxIter, as in RaiSim: no rounding floors, a
  # sweep counts as progress whenever it changed any impulse (gradient checks use this to
  # keep the iteration count the same for nearby inputs).
  floors_on = problem["threshold"] > 0
  problem = _prepared(layout, problem, free_velocity)
  # A sweep cannot change an impulse by less than its own rounding either: in float32 the
  # threshold (1e-8 by default) is below one ulp of a typical impulse (float64: ~1e-14
  # relative, below any threshold in use).
  impulse_floor = jnp.where(floors_on, IMPULSE_ROUNDING_ULPS * jnp.finfo(dtype).eps,
                            0.0).astype(dtype)

  def keep_going(carry):
    tolerance = jnp.maximum(problem["threshold"], impulse_floor * jnp.max(jnp.abs(carry[1])))
    return ((carry[2] > tolerance) & (carry[3] < problem["max_iterations"])
            & (num_active > 0))

  sweeps_from = _active_sweeps if layout.early_exit else _fixed_sweeps
  velocity, impulses, _, sweeps = sweeps_from(layout, problem, start, keep_going)
  return velocity, impulses, sweeps


def _prepared(layout, problem, free_velocity):
  """`problem` with what every sweep reads besides the rows: |J| and |W| for the rounding
  floors, the free velocities and the rounding factor (`solve`)."""
  dtype = problem["delassus"].dtype
  floors_on = problem["threshold"] > 0
  if layout.has_systems:
    problem = {**problem, "abs_jac": jnp.abs(problem["jac"]),
               "abs_inverse_jt": jnp.abs(jnp.swapaxes(problem["inverse_jt"], 0, 1)).reshape(
                   problem["inverse_jt"].shape[1], -1)}
  return {**problem, "free_velocity": free_velocity,
          "rounding": jnp.where(floors_on, VELOCITY_ROUNDING_ULPS * jnp.finfo(dtype).eps,
                                0.0).astype(dtype)}


def _sweep_map(layout, impulses, floats, others, free_velocity):
  """(R, 3) impulses after one plain Gauss-Seidel sweep (`_fixed_sweep`, no block move)
  from `impulses`: the map whose fixed point the solve converges to. `floats` / `others`:
  the problem's floating / other entries (split so that only floats carry tangents)."""
  problem = _prepared(layout, {**floats, **others}, free_velocity)
  velocity = apply_all(layout, problem, free_velocity, impulses)
  zero = jnp.zeros((), impulses.dtype)
  return _fixed_sweep(layout, problem, (velocity, impulses, zero, jnp.zeros((), jnp.int32)))[1]


# Checkpoint name of the implicit mode's converged impulses: a `jax.checkpoint` policy that
# saves it (step.ROLLOUT_SAVED) lets reverse mode skip the primal sweeps when it recomputes a
# step, since the implicit derivative needs only their result.
IMPLICIT_SOLUTION = "gauss_seidel_implicit_solution"
IMPLICIT_TOLERANCE_ULPS = 256  # the linear solve stops at this relative residual, in ulps
KRYLOV_RESTART = 12            # Krylov vectors per GMRES cycle


def _linear_fixed_point(layout, matvec, b):
  """x with matvec(x) = (I - A) x = b, A the sweep map's Jacobian at the solution (or its
  transpose), by restarted GMRES from x = 0: cycles of KRYLOV_RESTART Arnoldi steps (Gram-
  Schmidt twice) and a least-squares solve of the small Hessenberg system, until the residual
  is within IMPLICIT_TOLERANCE_ULPS ulps of |b| or after about `layout.iteration_capacity`
  products. Not `jax.scipy.sparse.linalg.gmres`: its triangular solve divides by zero where
  I - A is singular (statically indeterminate contacts: a load moved between a box's four
  corners is a fixed direction of the sweeps, an eigenvalue 1 of A), which made every
  gradient NaN; `jnp.linalg.lstsq` takes the least-norm solution there. The sweeps' own
  linear iteration x <- b + A x (Richardson) crawls where the sweeps do: a box held by
  static friction on its four corners, whose primal converged by the island block move,
  kept 1e-7 of a zero derivative after 150 of its steps.

  b: (R, 3). Returns x: (R, 3)."""
  dtype, shape = b.dtype, b.shape
  tolerance = IMPLICIT_TOLERANCE_ULPS * jnp.finfo(dtype).eps
  restart = min(KRYLOV_RESTART, b.size)
  cycles = max(1, -(-layout.iteration_capacity // restart))
  times = lambda v: matvec(v.reshape(shape)).reshape(-1)
  rhs = b.reshape(-1)
  goal = tolerance * jnp.sqrt(jnp.sum(rhs * rhs))
  below = jnp.arange(restart + 1)

  def normalized(v):
    size = jnp.sqrt(jnp.sum(v * v))
    return jnp.where(size > 0, v / jnp.where(size > 0, size, 1.0), 0.0), size

  def cycle(carry):
    x, residual, k = carry
    start, beta = normalized(residual)
    basis = jnp.zeros((restart + 1, rhs.size), dtype).at[0].set(start)

    def arnoldi(j, carry):
      basis, hessenberg = carry
      w = times(basis[j])
      h = jnp.zeros(restart + 1, dtype)
      for _ in range(2):                         # Gram-Schmidt twice: orthogonal to rounding
        step = jnp.where(below <= j, basis @ w, 0.0)
        w, h = w - step @ basis, h + step
      w, size = normalized(w)
      return basis.at[j + 1].set(w), hessenberg.at[:, j].set(h.at[j + 1].set(size))

    basis, hessenberg = jax.lax.fori_loop(
        0, restart, arnoldi, (basis, jnp.zeros((restart + 1, restart), dtype)))
    target = jnp.zeros(restart + 1, dtype).at[0].set(beta)
    y = jnp.linalg.lstsq(hessenberg, target)[0]
    # The new residual from the Arnoldi relation (A V_k = V_k+1 H): no product, so the
    # linearized sweep is traced once per solve.
    return x + y @ basis[:restart], (target - hessenberg @ y) @ basis, k + 1

  def keep_going(carry):
    _, residual, k = carry
    return (jnp.sqrt(jnp.sum(residual * residual)) > goal) & (k < cycles)

  start = (jnp.zeros_like(rhs), rhs, jnp.zeros((), jnp.int32))
  return jax.lax.while_loop(keep_going, cycle, start)[0].reshape(shape)


@functools.partial(jax.custom_jvp, nondiff_argnums=(0,))
def _with_implicit_derivative(layout, impulses, floats, others, free_velocity):
  """`impulses` (R, 3), the converged solution of the problem (floats, others,
  free_velocity), carrying the derivative of that solution: the tangent d solves
  d = A d + B t (A, B: the sweep map's Jacobians at the solution with respect to the
  impulses and to the problem's floats and free velocities, t their tangents;
  `_linear_fixed_point` solves it, and its transpose in reverse mode). The
  impulses' own tangent (the warm start's) is dropped: the fixed point does not depend on
  where the sweeps started (where it is unique)."""
  del layout, floats, others, free_velocity
  return impulses


@_with_implicit_derivative.defjvp
def _with_implicit_derivative_jvp(layout, primals, tangents):
  impulses, floats, others, free_velocity = primals
  _, d_floats, _, d_free = tangents
  _, linear = jax.linearize(
      lambda x, f, v: _sweep_map(layout, x, f, others, v), impulses, floats, free_velocity)
  zero_floats = jax.tree.map(jnp.zeros_like, floats)
  zero_free = jax.tree.map(jnp.zeros_like, free_velocity)
  # A sweep leaves an inactive row's impulse as it is (a unit row and column of A): taken out
  # of A, (I - A) is the identity there instead of zero, so that a cotangent on such a row's
  # impulse (a loss over the whole buffer) keeps the system consistent.
  active = others["row_active"][:, None]
  a_times = lambda x: jnp.where(active, linear(x, zero_floats, zero_free), 0.0)
  rhs = linear(jnp.zeros_like(impulses), d_floats, d_free)
  d_impulses = jax.lax.custom_linear_solve(
      lambda x: x - a_times(x), rhs, functools.partial(_linear_fixed_point, layout),
      functools.partial(_linear_fixed_point, layout))
  return impulses, d_impulses


def _implicit_solve(layout, problem, free_velocity, impulse0):
  """`solve` with derivatives by the implicit function theorem: the primal is the
  early-exit solve (`layout.early_exit`, forward only) run on values without derivatives,
  and the converged impulses get the fixed point's derivative (`_with_implicit_derivative`):
  reverse mode solves one transposed linear fixed-point problem per solve instead of going
  back through every sweep, and stores one sweep's linearization, whatever the number of
  sweeps the primal ran."""
  primal_layout = layout._replace(implicit=False)
  frozen = jax.lax.stop_gradient
  _, impulses, sweeps = solve(primal_layout, frozen(problem), frozen(free_velocity),
                              frozen(impulse0))
  impulses = checkpoint_name(impulses, IMPLICIT_SOLUTION)
  floats = {k: v for k, v in problem.items()
            if v is not None and jnp.issubdtype(jnp.result_type(v), jnp.floating)}
  others = {k: v for k, v in problem.items() if k not in floats}
  impulses = _with_implicit_derivative(primal_layout, impulses, floats, others, free_velocity)
  return apply_all(layout, problem, free_velocity, impulses), impulses, sweeps

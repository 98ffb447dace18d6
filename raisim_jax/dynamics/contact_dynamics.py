"""The world's contact problem and RaiSim's per-contact solver over it.

One problem per world: every contact (single body vs single body, link vs anything,
self-collision) and every joint-limit row is a 3-row block i with
    v_i = F_i [(v_a + w_a x r_a) - (v_b + w_b x r_b)] + J_i u
where F_i is the transposed contact frame (rows x, y, z; z = normal towards A), the first term
is the single-body part (a, b single bodies, weights 0 for sides that are links) and J_i
(3, NV) the articulated part over the stacked generalized velocities u of all systems (A's
Jacobian minus B's, in the contact frame). The Delassus block is
    G_ii = F_i (K_a(r_a) + K_b(r_b)) F_i^T + J_i W_i,   W_i = M_eff^-1 J_i^T,
K(r) = m^-1 I - [r]x I_w^-1 [r]x, and M_eff the block-diagonal effective mass matrix of the
systems with their implicit PD, springs and damping (dynamics/articulated_integrate.py),
inverted once per step. Each Gauss-Seidel visit solves block i exactly with the others fixed
and applies its impulse change to the bodies at once (v_a += m^-1 F^T dl, ...; u += W_i dl):
the dense v = G lambda + c sweep without forming the off-diagonal blocks.

Row kinds: contacts use the exact local solve on the Coulomb cone
(`contact_solver.solve_single_contact`); joint-limit rows are unilateral 1-D rows along the
joint, or along a spherical joint's rotation axis for its cone limit (dynamics/joint_limits.py),
with x, y rows empty; pin rows (closed loops, dynamics/pins.py) are bilateral 3-D rows on the
world axes, solved with the pseudo-inverse of their unregularized block (a pin whose bodies
can only move in a plane has a rank-2 block), warm-started from last step's impulse and
position-corrected by erp * G^+ (-error). Contact rows only get a small relative
regularization of their block (`_regularization`) so a link that moves in a subspace still
has an invertible block. Per-system work (Jacobians of contact rows, M_eff^-1 J^T) runs once
per structure group of systems under vmap (dynamics/system_groups.py).

Where RaiSim's material system enters (docs/contact_solver.md):
- target normal velocity: the bounce (from the approach speed at the start of the step) for a
  touching contact, and depth / dt (the approach that just closes the gap) for a gap within
  the speculative margin;
- penetration is removed at the position level (erp * depth per step: single bodies by
  `_single_body_correction`, systems by a generalized displacement W_i e_z erp depth / G_zz),
  not by a velocity bias, so it never adds kinetic energy;
- friction coefficient interpolated from the static one by the start-of-step sliding speed.
Warm start: integrate1 copies last step's normal impulses to contacts with the same
(pair, point) key (`warm_start_impulse`); joint-limit rows keep theirs when the same limit
stays active.
"""

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from raisim_jax import batched_cond, contact_heads
from raisim_jax.collision import collision_bodies
from raisim_jax.dynamics import (articulated_integrate, contact_solver, gauss_seidel, jacobian,
                                 joint_limits, system_groups)
from raisim_jax.dynamics import pins as pins_lib
from raisim_jax.dynamics import single_body
from raisim_jax.math import dense, rotation
from raisim_jax.struct import dataclass, static_field
from raisim_jax.types import (BodyType, Contacts, JointLimitModel, Model, State,
                              StepVelocity)

ROW_CONTACT = gauss_seidel.ROW_CONTACT
ROW_JOINT_LIMIT = gauss_seidel.ROW_JOINT_LIMIT
ROW_PIN = gauss_seidel.ROW_PIN
# Rows of one colour solved together in worlds of single bodies (gauss_seidel._schedule). A
# robot's rows all share its generalized velocity, so worlds with robots visit rows one by
# one; so does the differentiable mode (reverse mode through the coloured visit's vmapped
# local solves and index-array scatters made gradient workflows 2-4x slower). 8 rows fill one
# AVX vector of float32 lanes; every other width from 4 to 64 was slower on the 216-sphere pile
# (figures: docs/architecture.md, Performance notes, "Coloured sweeps").
COLOUR_WIDTH = 8
# Solves of fewer rows (the zero, small and most quarter heads of the contact buffer) visit
# them one by one: their colours hold few rows each, and the colouring cost more than it
# saved. Forward-only, float32, batch 64, 50 steps, coloured / row by row: 2 boxes + 2
# spheres sliding (10 contacts on the 24-slot head) 2,478 / 3,132 world-steps/s, compile
# 40.3 / 29.7 s; 27 spheres settled (27 contacts, 72-slot head) 319 / 322; 64 spheres
# settled (60 contacts, 136-slot head, batch 16) 108 / 99.
COLOUR_MIN_ROWS = 32


@dataclass
class ContactSolution:
  """Result of one world's contact solve.

  Attributes:
    velocity: single-body StepVelocity with the impulses applied.
    generalized_velocity: tuple of (nv_s,) end-of-step velocities, one per system.
    contacts: Contacts with `impulse` and `inverse_apparent_inertia` set.
    joint_limits: JointLimitState of this step (None without limited joints).
    pins: PinState of this step (None without pins).
    iterations: () int32 sweeps used.
    body_displacement: (n, 3) single-body position corrections (erp * depth).
    generalized_displacement: tuple of (nv_s,) articulated position corrections.
  """
  velocity: StepVelocity
  generalized_velocity: tuple
  contacts: Contacts
  joint_limits: object
  pins: object
  iterations: jax.Array
  body_displacement: jax.Array
  generalized_displacement: tuple


# Largest entry (m) of a contact row's relative Jacobian that counts as zero: round-off of a
# cancellation between two lever arms of at most ~10 m (float32, float64).
_IMMOBILE_JACOBIAN = {False: 1e-5, True: 1e-11}


def _regularization(dtype):
  """Relative compliance added to articulated Delassus blocks (see solve_contacts)."""
  # Large enough that round-off along a null direction (~1e-16 of the block's scale) gives an
  # impulse far below the convergence threshold, small enough to leave the physics unchanged.
  return 1e-7 if jnp.finfo(dtype).bits > 32 else 1e-5


def _pseudo_inverse(blocks):
  """(R, 3, 3) Moore-Penrose inverses of symmetric PSD blocks: eigenvalues below 1e-9 of the
  largest (1e-5 in float32) count as zero, so a direction no joint can move takes no impulse."""
  return dense.psd_pseudo_inverse3(blocks, 1e-9 if jnp.finfo(blocks.dtype).bits > 32 else 1e-5)


def warm_start_impulse(model: Model, previous: Contacts, contacts: Contacts):
  """(C, 3) last step's impulse of the contact with the same key, zero if none.

  Keys are compared slot against slot. In forward-only mode only the leading `h` slots of
  both buffers are compared, `h` the smallest of `contact_heads.head_sizes` past which no
  world of the batch has an active slot in either buffer (a switch, as `solve_contacts`): the
  whole comparison of a quadruped's 168 slots cost ~5% of its step at batch 1,024 for 4
  contacts. Differentiable mode compares every slot (more branches would grow its gradients'
  compile)."""
  if previous.key.shape[0] == 0 or contacts.key.shape[0] == 0:
    return jnp.zeros_like(contacts.impulse)

  def matched(sizes, _):
    if min(sizes) == 0:   # no world of the batch has a contact in either buffer
      return jnp.zeros_like(contacts.impulse)
    current, last = (buffer if size == buffer.key.shape[0]
                     else contact_heads.leading(buffer, size)
                     for buffer, size in ((contacts, sizes[0]), (previous, sizes[1])))
    same = (current.key[:, None] == last.key[None, :]) & last.active[None, :]
    same &= current.active[:, None]
    found = jnp.any(same, axis=1)
    source = jnp.argmax(same, axis=1)
    # Only the normal impulse is carried over: warm-starting the friction of redundant
    # contacts (four box corners) left Gauss-Seidel stalled in a creeping state that passed
    # the impulse-change threshold (1e-4 m drift in 2 s on an incline; 4e-6 with this).
    normal_only = last.impulse[source].at[:, :2].set(0.0)
    impulse = jnp.where(found[:, None], normal_only, 0.0)
    if sizes[0] == contacts.key.shape[0]:
      return impulse
    return jnp.zeros_like(contacts.impulse).at[:sizes[0]].set(impulse)

  whole = (contacts.key.shape[0], previous.key.shape[0])
  heads = contact_heads.head_sizes(min(whole))
  if model.solver.differentiable or not heads:
    return matched(whole, None)

  def reach(active):
    """One past the last active slot."""
    return jnp.max(jnp.where(active, jnp.arange(1, active.shape[0] + 1), 0))

  extent = jnp.maximum(reach(contacts.active), reach(previous.active))
  return jax.lax.switch(contact_heads.tier(extent, heads),
                        [functools.partial(matched, (head, head)) for head in heads]
                        + [functools.partial(matched, whole)], None)


def _system_offsets(model: Model):
  """Static start of each system's generalized velocities in the stacked vector, and NV."""
  offsets, total = [], 0
  for system_model in model.articulated:
    offsets.append(total)
    total += system_model.num_gv
  return offsets, total


ARTICULATED_ROW_CHUNK = 8   # contact rows per chunk of the articulated row terms


def _contact_rows_articulated(model: Model, contacts: Contacts, terms):
  """Articulated part of the contact rows, evaluated only where a contact touches a system.

  Returns:
    jac (C, 3, NV): A's Jacobian minus B's over the stacked generalized velocities, in the
      contact frame; inverse_jt (C, NV, 3): M_eff^-1 J^T (block-diagonal M_eff, one
      product with M_eff^-1 per system); block (C, 3, 3): the articulated part
      J M_eff^-1 J^T of the Delassus blocks; touches (C, S) bool: which systems each
      contact touches.
    Rows of inactive contacts and of contacts between single bodies are zero.

  The rows run through `batched_cond.masked_map`: chunks of ARTICULATED_ROW_CHUNK contacts
  past the last one that touches a system are skipped (under vmap: past every world's).
  Computed for every slot of the buffer, a standing quadruped (168 slots, 4 feet in contact)
  spent most of its step on the Jacobians and solves of empty slots.
  """
  owner_system, owner_local = collision_bodies.body_owner_tables(model)
  owner_system, owner_local = jnp.asarray(owner_system), jnp.asarray(owner_local)
  body_a, body_b = jnp.maximum(contacts.body_a, 0), jnp.maximum(contacts.body_b, 0)
  system_a = jnp.where(contacts.active, owner_system[body_a], -1)
  system_b = jnp.where(contacts.active, owner_system[body_b], -1)
  local_a, local_b = owner_local[body_a], owner_local[body_b]
  total_dofs = sum(system_model.num_gv for system_model in model.articulated)
  kinematics = tuple(t.kinematics for t in terms)
  indices = tuple(jnp.asarray(s, jnp.int32) for s in range(len(terms)))

  def one_row(system_a, local_a, system_b, local_b, position, frame):
    """(3, NV) J, (NV, 3) M_eff^-1 J^T and (3, 3) J M_eff^-1 J^T of one contact."""
    def system_block(system_model, kinematics, term, s):
      def side(system_of_side, local):
        on = system_of_side == s
        jac = jacobian.point_jacobian(system_model, kinematics, jnp.where(on, local, 0),
                                      position)
        return jnp.where(on, jac, 0.0)

      jac = dense.unrolled_matmul(frame, side(system_a, local_a) - side(system_b, local_b))
      if not system_model.num_gv:
        return jac, jnp.zeros((0, 3), jac.dtype)
      return jac, articulated_integrate.solve_mass_rows(term.mass_inverse, jac)

    blocks = system_groups.map_systems(system_block, model.articulated, kinematics, terms,
                                       indices)
    jac = jnp.concatenate([jac for jac, _ in blocks], axis=-1)
    inverse_jt = jnp.concatenate([w for _, w in blocks], axis=0)
    return jac, inverse_jt, dense.unrolled_matmul(jac, inverse_jt)

  touching = (system_a >= 0) | (system_b >= 0)
  touches = jnp.stack([(system_a == s) | (system_b == s) for s in range(len(terms))], axis=-1)
  capacity = contacts.active.shape[0]
  if not capacity:    # no contact slots (collisions off): nothing to map over
    dtype = contacts.position.dtype
    return (jnp.zeros((0, 3, total_dofs), dtype), jnp.zeros((0, total_dofs, 3), dtype),
            jnp.zeros((0, 3, 3), dtype), touches)
  jac, inverse_jt, block = batched_cond.masked_map(
      one_row, touching, system_a, local_a, system_b, local_b, contacts.position,
      contacts.frame, chunk=ARTICULATED_ROW_CHUNK)
  return jac, inverse_jt, block, touches


def _limit_jacobians(model: Model, vector, offsets, total_dofs):
  """(L, 3, NV) joint-limit rows (z row = `vector` (L, 3) on the row's columns, see
  joint_limits.limit_columns) and (L, S) touches."""
  limits = model.joint_limits
  columns = joint_limits.stacked_columns(limits, offsets)
  rows = np.repeat(np.arange(limits.count), 3)
  jac = jnp.zeros((limits.count, 3, total_dofs), vector.dtype)
  jac = jac.at[rows, 2, columns.reshape(-1)].add(vector.reshape(-1))
  touches = np.zeros((limits.count, len(model.articulated)), bool)
  touches[np.arange(limits.count), np.asarray(limits.system)] = True
  return jac, jnp.asarray(touches)


def _limit_row_terms(model: Model, terms, vector, offsets, total_dofs):
  """(L, NV, 3) M_eff^-1 J^T and (L, 3, 3) J M_eff^-1 J^T of the joint-limit rows.

  A limit row's Jacobian (`_limit_jacobians`) is zero but for its z row, `vector` (L, 3) on
  three static columns of its system, so the first is zero but for its z column, the
  combination of M_eff^-1's rows at those columns (M_eff^-1 is symmetric), and the second
  zero but for its (z, z) entry, `vector` dotted with that column at the same columns.
  Gathers and weighted sums: as matrix products (the dense (L, 3, NV) Jacobian times
  M_eff^-1, then J times that) they were XLA:CPU's batched tiny dots, ~9% of the standing
  quadruped's batched step at batch 1,024 (2026-12-02 profile)."""
  limits = model.joint_limits
  system = np.asarray(limits.system)
  local = joint_limits.limit_columns(limits)                           # (L, 3) in its system
  parts, order = [], []
  for s, (system_model, term) in enumerate(zip(model.articulated, terms)):
    rows = np.flatnonzero(system == s)
    if rows.size:
      combination = jnp.sum(vector[rows][:, :, None] * term.mass_inverse[local[rows]], axis=1)
      parts.append(jnp.pad(combination, ((0, 0), (offsets[s], total_dofs - offsets[s]
                                                   - system_model.num_gv))))
      order.append(rows)
  column = jnp.concatenate(parts)                                      # (L, NV), by system
  order = np.concatenate(order)
  if np.any(order != np.arange(order.size)):
    column = column[np.argsort(order)]                                 # back to row order
  stacked = jnp.asarray(joint_limits.stacked_columns(limits, offsets))
  diagonal = jnp.sum(vector * jnp.take_along_axis(column, stacked, axis=1), axis=1)
  zero = jnp.zeros_like(column)
  inverse_jt = jnp.stack([zero, zero, column], axis=-1)
  z_z = np.zeros((3, 3))
  z_z[2, 2] = 1.0
  block = diagonal[:, None, None] * jnp.asarray(z_z, column.dtype)
  return inverse_jt, block


def _mobility_weighted(inv_mass, inv_inertia, body, weight, r):
  """(R, 3, 3) weight * K(r) of single body `body` at offsets r (world frame)."""
  skew = rotation.skew(r)
  eye = jnp.eye(3, dtype=r.dtype)
  k = inv_mass[body][:, None, None] * eye - skew @ inv_inertia[body] @ skew
  return weight[:, None, None] * k


def solve_contacts(model: Model, state: State, velocity: StepVelocity,
                   contacts: Contacts, terms=(), frozen_rows=None) -> ContactSolution:
  """Solves the world's contact and joint-limit problem (`_solve`), in forward-only mode on
  the buffer's first `h` slots, `h` the smallest of `contact_heads.head_sizes` that holds
  every world's contacts (the whole buffer when none does).

  Every row's setup (Delassus block, velocities, targets, rounding floors, position
  correction) is computed over every slot it is given, active or not: 64 empty slots cost the
  9-body scene ~11 us of its ~20 us step at batch 1,024, and the standing quadruped (4
  contacts in 168 slots) ran 17.1k / 23.8k / 27.5k world-steps/s at batch 1,024 on heads of
  48 / 16 / 8 slots. The buffer is active-first, so when the active count (of every world of a
  batch: `batched_cond.any_world`) fits in a head, solving the head alone is the same solve;
  the tail keeps its empty slots (zero impulse, identity inverse apparent inertia, as the
  whole solve reports them). Each size is one more traced setup and, but for the small heads
  of worlds with articulated systems (which share one), one more traced sweep loop (compile
  time). Differentiable mode solves the whole buffer: more branches would multiply the
  compile of its gradients. Arguments and result as `_solve`.
  """
  capacity = contacts.active.shape[0]
  heads = contact_heads.head_sizes(capacity)
  if model.solver.differentiable or not heads:
    return _solve(model, state, velocity, contacts, terms, frozen_rows)
  count = jnp.sum(contacts.active.astype(jnp.int32))
  tier = contact_heads.tier(count, heads)

  # The limit rows once for every branch (None without limited joints).
  limits = joint_limits.limit_rows(model, state, tuple(t.free_velocity for t in terms),
                                   model.time_step)
  has_systems = _system_offsets(model)[1] > 0      # as `_solve` decides it

  def on_heads(sizes, _, model=model, state=state, limits=limits, singles=True):
    """The solve on the smallest of the heads `sizes` (consecutive entries of `heads`) that
    holds every world's contacts, their rows set up on that head and padded with empty
    contact rows to the largest (`_with_empty_contact_rows`), so that the heads share one
    traced sweep loop."""
    def set_up(size, _):
      return _set_up_rows(model, state, velocity, contact_heads.leading(contacts, size), terms,
                          None if frozen_rows is None else frozen_rows[:size], limits, singles)

    if len(sizes) == 1:
      rows = set_up(sizes[0], None)
    else:
      padded = lambda size, _: _with_empty_contact_rows(set_up(size, _), contacts, sizes[-1])
      rows = jax.lax.switch(tier - heads.index(sizes[0]),
                            [functools.partial(padded, size) for size in sizes], None)
    solution = _finish(model, state, velocity, rows, _sweep(rows))
    tail = contacts.replace(
        impulse=jnp.zeros_like(contacts.impulse),
        inverse_apparent_inertia=jnp.broadcast_to(jnp.eye(3, dtype=model.dtype),
                                                  contacts.inverse_apparent_inertia.shape))
    return solution.replace(contacts=contact_heads.with_leading(tail, solution.contacts))

  # In worlds with articulated systems the small heads share one traced sweep loop (rows
  # padded to the larger head): Gymnasium's humanoid compiled ~5 s faster (three alternating
  # runs: 64.8 -> 59.7 s on average), at the same step time. The lean small heads keep their
  # own: padded, the standing quadruped's (lean head of 4) step ran ~10% slower; so do worlds
  # of single bodies, whose steps are as cheap (docs/architecture.md, "Compile time of the
  # heads").
  groups = contact_heads.grouped(heads, share_small=has_systems)
  # The zero head has no contact row, so no row has a single-body side: its solve leaves the
  # single bodies out (the same solve, fewer kernels; the humanoid in the air with active
  # limits stepped 3-9% faster). Worlds without articulated systems keep them, as the zero
  # head was measured for them.
  branches = ([functools.partial(on_heads, sizes, singles=sizes != (0,) or not has_systems)
               for sizes in groups]
              + [lambda _: _solve(model, state, velocity, contacts, terms, frozen_rows, limits)])
  drop_limits = bool(model.joint_limits.count)
  drop_singles = has_systems and model.num_bodies > 0
  lean_branch = None
  if drop_limits or drop_singles:
    # Lean small heads, taken where they give the same solve for every world of the batch
    # (the usual case for robots standing or walking on the ground): no limit row is active
    # (an inactive row takes no impulse), and no contact touches a single body that can
    # move (the ground and other STATIC bodies take no impulse and have no velocity, so
    # their side of a row is zero). Without the limit rows' setup and sweep visits a
    # standing quadruped (12 limit rows, batch 1,024, one core) ran 24.5k -> 31.6k
    # world-steps/s; without the single-body part (the Delassus blocks' single-body terms,
    # island rows and block move, position correction) another 31.9k -> 35.8k.
    # Trajectories are bit-identical.
    lean = jnp.asarray(True)
    if drop_singles:
      lean = ~batched_cond.any_world(_touches_moving_single(model, state, velocity, contacts))
    lean_model, lean_state, inactive = model, state, None
    if drop_limits:
      lean &= ~batched_cond.any_world(jnp.any(limits["active"]))
      lean_model = model.replace(joint_limits=JointLimitModel())
      lean_state = state.replace(
          joint_limits=joint_limits.empty_joint_limit_state(JointLimitModel(), model.dtype))
      # Taken only where every row is inactive: no impulse.
      inactive = joint_limits.limit_state(state.joint_limits, limits,
                                          jnp.zeros_like(limits["gap"]))

    def lean_heads(sizes, _):
      solution = on_heads(sizes, _, model=lean_model, state=lean_state,
                          limits=None if drop_limits else limits, singles=not drop_singles)
      return solution if inactive is None else solution.replace(joint_limits=inactive)

    # The zero and small heads, each with its own sweeps (see above); past them the tier
    # table's last entry, which `fits` never takes.
    small = tuple(h for h in heads if h <= max(contact_heads.SMALL_HEADS))
    lean_groups = contact_heads.grouped(small, share_small=False)
    lean_branch = len(branches) + contact_heads.branch_of_tier(lean_groups)
    branches += [functools.partial(lean_heads, sizes) for sizes in lean_groups]
  branch = contact_heads.branch_of_tier(groups)[tier]
  if lean_branch is not None:
    fits = tier < len(small)
    branch = jnp.where(lean & fits, lean_branch[jnp.minimum(tier, len(small))], branch)
  return jax.lax.switch(branch, branches, None)


# gauss_seidel problem entries that are not per row (every other entry has R rows).
_NOT_PER_ROW = ("threshold", "max_iterations", "reverse_order", "pin_inverse", "inv_mass",
                "inv_inertia")


def _with_empty_contact_rows(rows: "_Rows", buffer: Contacts, size: int) -> "_Rows":
  """`rows` set up on the first C slots of the contact buffer `buffer`, extended to its first
  `size` slots: empty contact rows (inactive, no body, identity Delassus block, zero
  Jacobian and warm start) inserted after the C contact rows, before the joint-limit and pin
  rows, and the buffer's own (inactive) slots C..size-1 as their contacts. The sweeps visit
  active rows only, so the solve is the same up to rounding (sums over the rows may associate
  differently); its layout is that of every head padded to `size`, so they share one traced
  sweep loop."""
  head = rows.contacts.active.shape[0]
  extra = size - head
  if not extra:
    return rows

  def insert(x, fill):
    filler = jnp.broadcast_to(jnp.asarray(fill, x.dtype), (extra,) + x.shape[1:])
    return jnp.concatenate([x[:head], filler, x[head:]])

  def append(x, fill):
    return jnp.concatenate([x, jnp.full((extra,) + x.shape[1:], fill, x.dtype)])

  layout = rows.layout
  eye = np.eye(3)
  no_body = rows.problem["inv_mass"].shape[0] if layout.has_singles else 0   # island rows: n
  fills = dict(frame=eye, delassus=eye, kind=ROW_CONTACT, row_active=False, index_a=0,
               index_b=0, weight_a=0, weight_b=0, r_a=0, r_b=0, jac=0, inverse_jt=0,
               friction=0, target=0, island_body=no_body)
  assert layout.colour_width == 1, "padded rows would change a coloured schedule"
  problem = {}
  for key, value in rows.problem.items():
    assert key in fills or key in _NOT_PER_ROW, f"problem[{key!r}]: per row or not?"
    problem[key] = insert(value, fills[key]) if key in fills else value
  tail = contact_heads.leading(buffer, size)
  single = rows.single
  if single is not None:
    single = tuple(append(x, False if x.dtype == bool else 0) for x in single)
  return rows.replace(
      layout=layout._replace(rows=layout.rows + extra), problem=problem,
      impulse0=insert(rows.impulse0, 0),
      found=contact_heads.with_leading(tail, rows.found),
      contacts=contact_heads.with_leading(tail, rows.contacts),
      frozen_rows=None if rows.frozen_rows is None else append(rows.frozen_rows, False),
      active_c=append(rows.active_c, False),
      unmasked_delassus=insert(rows.unmasked_delassus, eye),
      single=single,
      touches=None if rows.touches is None else insert(rows.touches, False))


def _touches_moving_single(model: Model, state: State, velocity: StepVelocity,
                           contacts: Contacts):
  """() bool: some contact of the buffer (frozen ones included) has a side on a single body
  that an impulse can move (DYNAMIC) or that moves (nonzero velocity at the start of the
  step or in its free velocity)."""
  n = model.num_bodies
  bodies = state.bodies
  moving = ((model.bodies.body_type == BodyType.DYNAMIC)
            | jnp.any(bodies.linear_velocity != 0, axis=-1)
            | jnp.any(bodies.angular_velocity != 0, axis=-1)
            | jnp.any(velocity.linear != 0, axis=-1) | jnp.any(velocity.angular != 0, axis=-1))

  def side(body):
    return (body >= 0) & (body < n) & moving[jnp.clip(body, 0, n - 1)]

  return jnp.any(contacts.active & (side(contacts.body_a) | side(contacts.body_b)))


BLOCK_MOVES = ("compact", "every_row", "off")   # SolverModel.block_move


def _solve(model: Model, state: State, velocity: StepVelocity,
           contacts: Contacts, terms=(), frozen_rows=None, limits=None,
           singles=True) -> ContactSolution:
  """Solves the world's contact and joint-limit problem over every slot of `contacts`:
  `_set_up_rows`, the Gauss-Seidel sweeps (`gauss_seidel.solve`), `_finish`.
  Arguments as `_set_up_rows`."""
  rows = _set_up_rows(model, state, velocity, contacts, terms, frozen_rows, limits, singles)
  return _finish(model, state, velocity, rows, _sweep(rows))


def _sweep(rows: "_Rows"):
  """(velocity, impulses, sweeps) of `gauss_seidel.solve` on the rows."""
  return gauss_seidel.solve(rows.layout, rows.problem, rows.free_velocity, rows.impulse0)


@dataclass
class _Rows:
  """One world's contact problem, set up (`_set_up_rows`) for the sweeps and what `_finish`
  needs after them. R rows: C contact rows, then L joint-limit and P pin rows.

  Attributes:
    layout: static gauss_seidel.Layout.
    problem: gauss_seidel's problem dict (its row arrays have R rows).
    free_velocity: (linear (n, 3), angular (n, 3), generalized (NV,)) without contacts.
    impulse0: (R, 3) warm start.
    found: the contacts as given (frozen ones active), C slots.
    contacts: the contacts solved (frozen ones inactive; immobile ones still active).
    frozen_rows: None or (C,) bool.
    active_c: (C,) bool contact rows solved.
    unmasked_delassus: (R, 3, 3) Delassus blocks before inactive rows became identity.
    limits: None or this step's joint-limit rows (`joint_limits.limit_rows`).
    single: None or (single_a, single_b, body_a, body_b) (C,) of the single-body sides.
    touches: None or (R, S) bool rows acting on each system.
    pin_error: None or the pin rows' (P, 3) errors.
  The single bodies' inverse masses, M_eff^-1 J^T and the pin rows' pseudo-inverses are
  `problem`'s (inv_mass, inverse_jt, pin_inverse).
  """
  layout: Any = static_field()
  problem: dict
  free_velocity: tuple
  impulse0: jax.Array
  found: Contacts
  contacts: Contacts
  frozen_rows: Any
  active_c: jax.Array
  unmasked_delassus: jax.Array
  limits: Any
  single: Any
  touches: Any
  pin_error: Any


def _set_up_rows(model: Model, state: State, velocity: StepVelocity,
                 contacts: Contacts, terms=(), frozen_rows=None, limits=None,
                 singles=True) -> _Rows:
  """Sets up the world's contact and joint-limit problem over every slot of `contacts`.

  Args:
    model: Model.
    state: State at the start of the step (poses, start-of-step velocities).
    velocity: free single-body StepVelocity (no contacts) of this step.
    contacts: this step's contacts (from integrate1); their `impulse` is the warm start.
    terms: tuple of ArticulatedStepTerms, one per system (free velocities, M_eff^-1).
    frozen_rows: None, or (C,) bool contacts left out of the solve and the position
      correction (those of sleeping islands): they stay active in the returned contacts with
      their warm-start impulse and their inverse apparent inertia.
    limits: None, or this step's joint-limit rows (`joint_limits.limit_rows`) when the caller
      already has them.
    singles: False leaves the single bodies out of the solve (rows keep only their
      articulated sides; the single bodies' velocities and position corrections are not
      computed): the caller's promise that no contact touches a single body that moves.

  Returns:
    _Rows.
  """
  block_move = model.solver.block_move
  if block_move not in BLOCK_MOVES:
    raise ValueError(f"SolverModel.block_move = {block_move!r}: expected one of {BLOCK_MOVES}")
  if model.solver.gradient not in gauss_seidel.GRADIENTS:
    raise ValueError(f"SolverModel.gradient = {model.solver.gradient!r}: expected one of "
                     f"{gauss_seidel.GRADIENTS}")
  found = contacts
  if frozen_rows is not None:
    contacts = contacts.replace(active=contacts.active & ~frozen_rows)
  dtype = model.dtype
  dt = model.time_step
  n = model.num_bodies
  offsets, total_dofs = _system_offsets(model)
  num_systems = len(model.articulated)
  capacity = contacts.active.shape[0]

  # ---- rows: contacts, then joint limits -------------------------------------------------
  active_c = contacts.active
  body_a = jnp.maximum(contacts.body_a, 0)
  body_b = jnp.maximum(contacts.body_b, 0)
  # Frozen rows keep their sides, so that their inverse apparent inertia is reported.
  single_a = found.active & (contacts.body_a < n)
  single_b = found.active & (contacts.body_b < n)
  if limits is None:
    limits = joint_limits.limit_rows(model, state, tuple(t.free_velocity for t in terms), dt)
  num_limits = model.joint_limits.count
  num_pins = model.pins.count if model.pins is not None else 0
  num_extra = num_limits + num_pins

  frame = contacts.frame
  row_active = active_c
  kind = jnp.zeros((capacity,), jnp.int32)
  if num_extra:
    frame = jnp.concatenate([frame, jnp.broadcast_to(jnp.eye(3, dtype=dtype),
                                                     (num_extra, 3, 3))])
    row_active = jnp.concatenate([active_c] + ([limits["active"]] if num_limits else [])
                                 + [jnp.ones((num_pins,), bool)])
    kind = jnp.concatenate([kind, jnp.full((num_limits,), ROW_JOINT_LIMIT, jnp.int32),
                            jnp.full((num_pins,), ROW_PIN, jnp.int32)])
  rows = row_active.shape[0]

  def pad(x, value=0):
    """Extends a per-contact array with the joint-limit and pin rows."""
    if not num_extra:
      return x
    return jnp.concatenate([x, jnp.full((num_extra,) + x.shape[1:], value, x.dtype)])

  weight_a = pad(single_a.astype(dtype))
  weight_b = pad(single_b.astype(dtype))
  index_a = pad(jnp.where(single_a, body_a, 0))
  index_b = pad(jnp.where(single_b, body_b, 0))

  # Single-body part.
  has_singles = n > 0 and singles
  if has_singles:
    com = state.bodies.position
    r_a = pad(contacts.position - com[jnp.minimum(body_a, n - 1)])
    r_b = pad(contacts.position - com[jnp.minimum(body_b, n - 1)])
    inv_mass = single_body.inverse_mass(model)
    inv_inertia = single_body.inverse_inertia_world(model, state)
    mobility = (_mobility_weighted(inv_mass, inv_inertia, index_a, weight_a, r_a)
                + _mobility_weighted(inv_mass, inv_inertia, index_b, weight_b, r_b))
    delassus = frame @ mobility @ jnp.swapaxes(frame, -1, -2)
  else:
    delassus = jnp.zeros((rows, 3, 3), dtype)
  single_mobility = jnp.trace(delassus, axis1=-2, axis2=-1)

  # Articulated part.
  has_systems = total_dofs > 0
  if has_systems:
    jac, inverse_jt, articulated_block, touches = _contact_rows_articulated(model, contacts,
                                                                           terms)
    extra_jac, extra_inverse_jt, extra_block, extra_touches = [], [], [], []
    if num_limits:
      jac_l, touches_l = _limit_jacobians(model, limits["vector"], offsets, total_dofs)
      inverse_jt_l, block_l = _limit_row_terms(model, terms, limits["vector"], offsets,
                                                total_dofs)
      extra_jac.append(jac_l)
      extra_inverse_jt.append(inverse_jt_l)
      extra_block.append(block_l)
      extra_touches.append(touches_l)
    if num_pins:
      jac_p, pin_error, touches_p = pins_lib.pin_rows(
          model, tuple(t.kinematics for t in terms), offsets, total_dofs)

      def inverse_mass_times_rows(system_model, term, js):
        """(P, nv, 3) M_eff^-1 J_s^T of one system's columns js (P*3, nv)."""
        if not system_model.num_gv:
          return jnp.zeros((num_pins, 0, 3), dtype)
        ws = articulated_integrate.solve_mass(term.mass_inverse, js.T)      # (nv, P*3)
        return jnp.swapaxes(ws.T.reshape(num_pins, 3, system_model.num_gv), 1, 2)

      column_blocks = tuple(
          jac_p[:, :, offsets[s]:offsets[s] + model.articulated[s].num_gv].reshape(
              num_pins * 3, model.articulated[s].num_gv) for s in range(num_systems))
      blocks = system_groups.map_systems(inverse_mass_times_rows, model.articulated, terms,
                                         column_blocks)
      inverse_jt_p = jnp.concatenate(blocks, axis=1)                       # (P, NV, 3)
      extra_jac.append(jac_p)
      extra_inverse_jt.append(inverse_jt_p)
      extra_block.append(jnp.einsum("rin,rnj->rij", jac_p, inverse_jt_p))
      extra_touches.append(touches_p)
    if num_extra:
      jac = jnp.concatenate([jac] + extra_jac)
      inverse_jt = jnp.concatenate([inverse_jt] + extra_inverse_jt)        # (R, NV, 3)
      articulated_block = jnp.concatenate([articulated_block] + extra_block)
      touches = jnp.concatenate([touches] + extra_touches)
    delassus = delassus + articulated_block
    # A link that can move only in a subspace (a 2-dof arm touching its own base cannot move
    # along the contact's x axis) gives a singular block, which the exact local solve would
    # answer with zero impulse. A relative compliance (`_regularization`) of the trace makes
    # it invertible; the impulse along a null direction is then ~0 and the rest is unchanged
    # to that relative accuracy.
    if num_pins:
      pin_inverse = _pseudo_inverse(delassus[rows - num_pins:])
    # Contact rows only: pin rows use the pseudo-inverse of the unregularized block (their c'
    # must be computed with the same block, or the difference is amplified each sweep).
    trace = jnp.where(kind == ROW_CONTACT, jnp.trace(delassus, axis1=-2, axis2=-1), 0.0)
    delassus = delassus + (_regularization(dtype) * trace)[:, None, None] * jnp.eye(3, dtype=dtype)
    generalized_start = jnp.concatenate([s.generalized_velocity for s in state.articulated])
    generalized_free = jnp.concatenate([t.free_velocity for t in terms])
  # A contact that no body can act on (two links turning about the same axis through the
  # contact point, a link against a static body along a locked direction): both sides move
  # alike, the relative Jacobian vanishes up to round-off and its block is zero. No impulse
  # can change it, so it is left out of the solve and the position correction (its block
  # would be inverted).
  immobile = single_mobility <= 0.0
  if has_systems:
    immobile &= jnp.max(jnp.abs(jac), axis=(1, 2)) <= _IMMOBILE_JACOBIAN[jnp.finfo(dtype).bits > 32]
  immobile &= kind == ROW_CONTACT
  row_active = row_active & ~immobile
  active_c = active_c & ~immobile[:capacity]
  eye = jnp.eye(3, dtype=dtype)
  unmasked_delassus = delassus
  delassus = jnp.where(row_active[:, None, None], delassus, eye)
  if num_limits:
    # Joint-limit rows act along z only: unit x, y so the block stays invertible.
    limit_rows = (kind == ROW_JOINT_LIMIT)[:, None, None]
    delassus = jnp.where(limit_rows, delassus * jnp.asarray(np.diag([0.0, 0.0, 1.0]), dtype)
                         + jnp.asarray(np.diag([1.0, 1.0, 0.0]), dtype), delassus)

  # ---- material properties and targets from the start-of-step velocities -----------------
  shapes = model.collision.shapes
  material_a = shapes.material[jnp.maximum(contacts.shape_a, 0)]
  material_b = shapes.material[jnp.maximum(contacts.shape_b, 0)]
  props = model.solver.pair_table[material_a, material_b]
  no_generalized = jnp.zeros((0,), dtype)
  problem = dict(
      frame=frame, delassus=delassus, kind=kind, row_active=row_active,
      threshold=model.solver.threshold, max_iterations=model.solver.max_iterations,
      reverse_order=model.solver.reverse_order,
      pin_inverse=pin_inverse if num_pins else None)
  if has_singles:
    problem.update(index_a=index_a, index_b=index_b, weight_a=weight_a, weight_b=weight_b,
                   r_a=r_a, r_b=r_b, inv_mass=inv_mass, inv_inertia=inv_inertia)
    problem.update(_island_rows(n, inv_mass, active_c, single_a, single_b, body_a, body_b,
                               rows))
  if has_systems:
    problem.update(jac=jac, inverse_jt=inverse_jt)
  implicit = model.solver.differentiable and model.solver.gradient == "implicit"
  early_exit = implicit or not model.solver.differentiable
  layout = gauss_seidel.Layout(rows=rows, has_singles=has_singles, has_systems=has_systems,
                               num_limits=num_limits, num_pins=num_pins,
                               iteration_capacity=model.solver.iteration_capacity,
                               early_exit=early_exit,
                               block_bodies=n if has_singles and block_move != "off" else 0,
                               compact_block=(block_move == "compact"
                                              and model.solver.differentiable),
                               colour_width=(COLOUR_WIDTH if has_singles and not has_systems
                                             and not model.solver.differentiable
                                             and rows >= COLOUR_MIN_ROWS else 1),
                               implicit=implicit)
  relative_c = gauss_seidel.rows_velocity(
      layout, problem, (state.bodies.linear_velocity, state.bodies.angular_velocity,
                        generalized_start if has_systems else no_generalized))[:capacity]
  approach_speed = -relative_c[:, 2]
  tangential_speed = jnp.sqrt(relative_c[:, 0]**2 + relative_c[:, 1]**2 + 1e-30)
  friction = contact_solver.static_friction_coefficient(
      props[:, 0], props[:, 3], props[:, 4], tangential_speed)
  bounce = contact_solver.bounce_velocity(props[:, 1], props[:, 2], approach_speed)
  depth = contacts.depth
  free_velocity = (velocity.linear, velocity.angular,
                   generalized_free if has_systems else no_generalized)
  free_relative = gauss_seidel.rows_velocity(layout, problem, free_velocity)
  target = jnp.where(active_c, contact_target(depth, dt, bounce, -free_relative[:capacity, 2]),
                     0.0)
  impulse0 = jnp.where(active_c[:, None], contacts.impulse, 0.0)
  friction = pad(friction)
  if num_limits:
    target = jnp.concatenate([target, jnp.where(limits["active"], limits["target"], 0.0)])
    warm = jnp.where(limits["active"], limits["warm"], 0.0)
    impulse0 = jnp.concatenate([impulse0, jnp.zeros((num_limits, 3), dtype).at[:, 2].set(warm)])
  if num_pins:
    target = jnp.concatenate([target, jnp.zeros((num_pins,), dtype)])
    impulse0 = jnp.concatenate([impulse0, state.pins.impulse])
  problem.update(friction=friction, target=target)
  return _Rows(
      layout=layout, problem=problem, free_velocity=free_velocity, impulse0=impulse0,
      found=found, contacts=contacts, frozen_rows=frozen_rows, active_c=active_c,
      unmasked_delassus=unmasked_delassus, limits=limits if num_limits else None,
      single=(single_a, single_b, body_a, body_b) if has_singles else None,
      touches=touches if has_systems else None,
      pin_error=pin_error if num_pins else None)


def _finish(model: Model, state: State, velocity: StepVelocity, rows: _Rows,
            swept) -> ContactSolution:
  """The ContactSolution of the rows `rows` (set up from `state`) and the sweeps' result
  `swept` ((velocity, impulses (R, 3), sweeps) of `gauss_seidel.solve`): reported contacts
  and limit and pin states, the position correction (erp * penetration, no velocity added)."""
  layout, problem = rows.layout, rows.problem
  carry_velocity, impulses, iterations = swept
  dtype = model.dtype
  n = model.num_bodies
  offsets, _ = _system_offsets(model)
  num_systems = len(model.articulated)
  contacts, found, frozen_rows, limits = rows.contacts, rows.found, rows.frozen_rows, rows.limits
  capacity = contacts.active.shape[0]
  num_limits, num_pins = layout.num_limits, layout.num_pins
  has_singles, has_systems = layout.has_singles, layout.has_systems
  delassus, active_c, depth = problem["delassus"], rows.active_c, contacts.depth
  linear, angular, generalized = carry_velocity
  velocity = velocity.replace(linear=linear, angular=angular)
  contacts = contacts.replace(impulse=impulses[:capacity],
                              inverse_apparent_inertia=delassus[:capacity])
  reported = contacts
  if frozen_rows is not None:
    reported = contacts.replace(
        active=found.active,
        impulse=jnp.where(frozen_rows[:, None], found.impulse, contacts.impulse),
        inverse_apparent_inertia=jnp.where(frozen_rows[:, None, None],
                                           rows.unmasked_delassus[:capacity],
                                           contacts.inverse_apparent_inertia))

  # ---- position correction (erp * penetration, no velocity added) ---------------------------
  penetration = jnp.where(active_c & (depth > 0), depth, 0.0)
  limit_state = None
  if num_limits:
    limit_state = joint_limits.limit_state(state.joint_limits, limits,
                                           impulses[capacity:capacity + num_limits, 2])
    penetration = jnp.concatenate(
        [penetration, jnp.where(limits["active"], limit_state.violation, 0.0)])
  body_displacement = jnp.zeros((n, 3), dtype)
  if has_singles:
    body_displacement = _single_body_correction(model, contacts, *rows.single,
                                                problem["inv_mass"])
  pin_state = None
  if num_pins:
    pin_state = state.pins.replace(impulse=impulses[capacity + num_limits:],
                                   error=rows.pin_error)
    penetration = jnp.concatenate([penetration, jnp.zeros((num_pins,), dtype)])
  generalized_displacement = ()
  if has_systems:
    push = model.solver.erp * penetration / delassus[:, 2, 2]
    counts = jnp.sum((rows.touches & (penetration > 0)[:, None]).astype(dtype), axis=0)
    displacement = jnp.einsum("rn,r->n", problem["inverse_jt"][:, :, 2], push)
    pin_displacement = 0.0
    if num_pins:
      request = -model.solver.erp * jnp.einsum("pij,pj->pi", problem["pin_inverse"],
                                               rows.pin_error)
      pin_displacement = jnp.einsum("pnj,pj->n", problem["inverse_jt"][layout.rows - num_pins:],
                                    request)
    pieces = []
    for s in range(num_systems):
      nv = model.articulated[s].num_gv
      pieces.append(displacement[offsets[s]:offsets[s] + nv] / jnp.maximum(counts[s], 1.0))
    if num_pins:
      pieces = [piece + pin_displacement[offsets[s]:offsets[s] + piece.shape[0]]
                for s, piece in enumerate(pieces)]
    generalized_displacement = tuple(pieces)
    split = tuple(generalized[offsets[s]:offsets[s] + model.articulated[s].num_gv]
                  for s in range(num_systems))
  else:
    split = tuple(jnp.zeros((0,), dtype) for _ in range(num_systems))
    generalized_displacement = split
  return ContactSolution(velocity=velocity, generalized_velocity=split, contacts=reported,
                         joint_limits=limit_state, pins=pin_state, iterations=iterations,
                         body_displacement=body_displacement,
                         generalized_displacement=generalized_displacement)


def _island_rows(n, inv_mass, active_c, single_a, single_b, body_a, body_b, rows):
  """`island_body` (R, 2) int32 of the island block correction (dynamics/island_block.py):
  for each active contact between two single bodies of which at least one is dynamic, the
  dynamic body on side A and on side B (n where that side is static or kinematic); (n, n) for
  every other row (contacts with links, joint limits, pins, inactive slots)."""
  mobile_a = single_a & (inv_mass[jnp.minimum(body_a, n - 1)] > 0)
  mobile_b = single_b & (inv_mass[jnp.minimum(body_b, n - 1)] > 0)
  eligible = active_c & single_a & single_b & (mobile_a | mobile_b)
  side_a = jnp.where(eligible & mobile_a, body_a, n)
  side_b = jnp.where(eligible & mobile_b, body_b, n)
  body = jnp.stack([side_a, side_b], axis=-1).astype(jnp.int32)
  extra = rows - body.shape[0]
  return dict(island_body=jnp.concatenate([body, jnp.full((extra, 2), n, jnp.int32)]))


def contact_target(depth, dt, bounce, free_approach_speed):
  """(C,) target normal velocity of the contact rows.

  A touching contact (depth >= 0) gets the bounce of its start-of-step approach speed. A gap
  within the speculative margin (depth < 0) gets depth / dt, the approach that exactly closes
  it in this step, unless the free motion closes it within the step and the impact bounces:
  then the bounce happens in this step, from the approach speed of the impact. (Closing the gap
  first and bouncing on the next step would apply restitution to the speed gap / dt instead,
  which killed a bounce whenever a step started inside the margin.) The body then turns back
  up to the margin (1e-4 m) short of touching.
  """
  closes = free_approach_speed * dt >= -depth
  speculative = jnp.where(closes & (bounce > 0), bounce, depth / dt)
  return jnp.where(depth >= 0, bounce, speculative)


def _single_body_correction(model, contacts, single_a, single_b, body_a, body_b, inv_mass):
  """(n, 3) world displacements of the single bodies that remove a fraction erp of each
  penetration.

  Each penetrating contact asks for erp * depth along its normal, split between its single
  bodies by inverse mass (a link side takes no share here: articulated systems get their own
  correction); a body's displacement is the mean of the requests on it (so a box resting on
  four corners moves once, not four times). Static and kinematic bodies never move."""
  n = model.num_bodies
  inv_a = jnp.where(single_a, inv_mass[jnp.minimum(body_a, n - 1)], 0.0)
  inv_b = jnp.where(single_b, inv_mass[jnp.minimum(body_b, n - 1)], 0.0)
  index_a = jnp.where(single_a, body_a, 0)
  index_b = jnp.where(single_b, body_b, 0)
  share = inv_a + inv_b
  push = jnp.where(contacts.active & (contacts.depth > 0) & (share > 0),
                   model.solver.erp * contacts.depth / jnp.where(share > 0, share, 1.0), 0.0)
  request = push[:, None] * contacts.normal
  displacement = jnp.zeros((n, 3), request.dtype)
  displacement = displacement.at[index_a].add(inv_a[:, None] * request)
  displacement = displacement.at[index_b].add(-inv_b[:, None] * request)
  involved_a = ((push > 0) & single_a).astype(request.dtype)
  involved_b = ((push > 0) & single_b).astype(request.dtype)
  count = jnp.zeros((n,), request.dtype).at[index_a].add(involved_a).at[index_b].add(involved_b)
  return displacement / jnp.maximum(count, 1.0)[:, None]

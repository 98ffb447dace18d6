"""Joint position limits as hard stops: unilateral rows of the world's contact problem.

RaiSim (spec, "Joint limits"): a joint at a limit behaves as if it hit a hard stop, a
collision with zero restitution, solved by the contact solver and not listed in getContacts.

For each revolute / prismatic joint with a finite limit one row acts at the nearer limit. With
gap g = q - lower (or upper - q) and the row velocity v = +u (or -u) along the joint:
    impulse >= 0,  v+ >= -g / dt,  impulse (v+ + g / dt) = 0
so the joint may close the gap within the step but not pass the limit (speculative, like the
contact margin), and a joint already past a limit (g < 0) is stopped (v+ >= 0) and moved back
by erp * (-g) at the position level, as contacts are. A row is active when the free motion or
the current speed could reach the limit within two steps.

A spherical joint takes a cone limit (RaiSim's {angle, NOT_USED}): the rotation angle of the
joint, theta = 2 atan2(|q_xyz|, |q_w|) in [0, pi], stays <= angle. Its row acts on the joint's
three velocity dofs along -a (a: the unit rotation axis, the same in the parent and the child
frame, so d theta / dt = a . omega in either), with gap = angle - theta.
"""

import jax
import jax.numpy as jnp
import numpy as np

from raisim_jax.types import JOINT_PRISMATIC, JOINT_REVOLUTE, JOINT_SPHERICAL
from raisim_jax.math import safe
from raisim_jax.types import JointLimitModel, JointLimitState
from raisim_jax.host_arrays import device_zeros

LIMIT_MARGIN = 1e-6  # rows within this of their limit are always active (rad or m)


def joint_limit_model(articulated) -> JointLimitModel:
  """The limited joints of every system, as static tables: revolute / prismatic joints with a
  finite lower or upper limit, spherical joints with a finite cone angle (joint_upper at the
  joint's first coordinate)."""
  system, dof, coordinate, cone = [], [], [], []
  for s, model in enumerate(articulated):
    lower, upper = np.asarray(model.joint_lower), np.asarray(model.joint_upper)
    for body, joint_type in enumerate(model.joint_type):
      c = model.gc_offset[body]
      if joint_type in (JOINT_REVOLUTE, JOINT_PRISMATIC):
        limited = np.isfinite(lower[c]) or np.isfinite(upper[c])
      elif joint_type == JOINT_SPHERICAL:
        limited = np.isfinite(upper[c])
      else:
        continue
      if limited:
        system.append(s)
        dof.append(model.gv_offset[body])
        coordinate.append(c)
        cone.append(joint_type == JOINT_SPHERICAL)
  return JointLimitModel(system=tuple(system), dof=tuple(dof), coordinate=tuple(coordinate),
                         cone=tuple(cone))


def limit_columns(limits: JointLimitModel):
  """(L, 3) static generalized-velocity columns (inside the row's system) that each row acts
  on: the joint's dof three times for a revolute / prismatic row (only the first carries a
  coefficient), the three angular dofs for a cone row."""
  return np.asarray([[d, d + 1, d + 2] if cone else [d, d, d]
                     for d, cone in zip(limits.dof, limits.cone)], np.int64).reshape(-1, 3)


def stacked_columns(limits: JointLimitModel, offsets):
  """(L, 3) static columns of each row (`limit_columns`) in the stacked generalized
  velocities of all systems (`offsets`: each system's start in them)."""
  return limit_columns(limits) + np.asarray(
      [offsets[s] for s in limits.system], np.int64).reshape(-1, 1)


def _cone_row(quaternion, angle):
  """(gap (,), row vector (3,)) of a spherical joint's cone limit at joint quaternion
  (w, x, y, z): gap = angle - theta, row = -a (a the unit rotation axis; zero at theta = 0,
  where the row cannot be active for a positive angle)."""
  q = jnp.where(quaternion[0] < 0, -quaternion, quaternion)
  sine = safe.norm(q[1:])
  theta = 2.0 * jnp.arctan2(sine, q[0])
  axis = safe.divide(q[1:], sine)
  return angle - theta, -axis


def limit_state(previous: JointLimitState, rows, row_impulse) -> JointLimitState:
  """JointLimitState of this step (RaiSim's getJointLimitViolations) from its rows
  (`limit_rows`) and each row's impulse (L,) along its row: impulses signed along the joint
  (zero where a row is inactive), violations past the limit at the start of the step."""
  return previous.replace(
      active=rows["active"], upper=rows["upper"],
      impulse=jnp.where(rows["active"], rows["direction"] * row_impulse, 0.0),
      violation=jnp.maximum(-rows["gap"], 0.0))


def empty_joint_limit_state(limits: JointLimitModel, dtype) -> JointLimitState:
  count = limits.count
  return JointLimitState(active=device_zeros((count,), bool), upper=device_zeros((count,), bool),
                         impulse=device_zeros((count,), dtype),
                         violation=device_zeros((count,), dtype))


def limit_rows(model, state, free_velocities, dt):
  """The joint-limit rows of this step.

  Args:
    model: Model; state: State at the start of the step.
    free_velocities: tuple of (nv_s,) free velocities, one per system.
    dt: time step.

  Returns:
    dict of (L,) arrays: active, upper (acting at the upper limit; always for a cone),
    direction (sign of the stored impulse: +1 lower, -1 upper, +1 cone), vector ((L, 3) row
    coefficients on `limit_columns`), gap (signed distance to the limit, negative past it),
    target (lowest allowed row velocity), warm (last step's impulse if the same row was active
    at the same limit).
  """
  limits = model.joint_limits
  if not limits.count:
    return None
  # Every system's vectors concatenated; rows gather from them with static indices (one
  # vectorized evaluation for all rows of all systems).
  gc_start = np.cumsum([0] + [m.num_gc for m in model.articulated])
  gv_start = np.cumsum([0] + [m.num_gv for m in model.articulated])
  system = np.asarray(limits.system)
  coordinate = gc_start[system] + np.asarray(limits.coordinate)
  cone = np.asarray(limits.cone, bool)
  gc = jnp.concatenate([s.generalized_coordinate for s in state.articulated])
  lower = jnp.concatenate([m.joint_lower for m in model.articulated])[coordinate]
  upper = jnp.concatenate([m.joint_upper for m in model.articulated])[coordinate]
  q = gc[coordinate]
  gap_lower, gap_upper = q - lower, upper - q
  at_upper = (gap_upper < gap_lower) | cone
  direction = jnp.where(at_upper & ~cone, -1.0, 1.0).astype(gc.dtype)
  gap = jnp.where(at_upper, gap_upper, gap_lower)
  zero = jnp.zeros_like(direction)
  vector = jnp.stack([direction, zero, zero], axis=-1)
  if cone.any():
    # Only the cone rows' coordinates go through the quaternion math: a revolute row's
    # neighbouring coordinates can be all zero, whose atan2 / norm would put NaN into the
    # gradient even behind a where.
    rows = np.nonzero(cone)[0]
    quaternion_index = coordinate[rows][:, None] + np.arange(4)
    cone_gap, cone_vector = jax.vmap(_cone_row)(gc[quaternion_index], upper[rows])
    gap = gap.at[rows].set(cone_gap)
    vector = vector.at[rows].set(cone_vector)
  columns = stacked_columns(limits, gv_start)
  gv = jnp.concatenate([s.generalized_velocity for s in state.articulated])
  gv_free = jnp.concatenate(free_velocities)
  u = jnp.sum(vector * gv[columns], axis=-1)
  u_free = jnp.sum(vector * gv_free[columns], axis=-1)
  reach = 2.0 * dt * jnp.maximum(jnp.abs(u), jnp.abs(u_free))
  active = gap < reach + LIMIT_MARGIN
  target = jnp.where(gap > 0, -gap / dt, 0.0)
  previous = state.joint_limits
  warm = jnp.where(active & previous.active & (previous.upper == at_upper),
                   direction * previous.impulse, 0.0)
  return dict(active=active, upper=at_upper, direction=direction, vector=vector, gap=gap,
              target=target, warm=warm)

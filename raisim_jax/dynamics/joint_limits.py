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

import jax.numpy as jnp
import numpy as np

from raisim_jax.dynamics.tree import JOINT_PRISMATIC, JOINT_REVOLUTE, JOINT_SPHERICAL
from raisim_jax.math import safe
from raisim_jax.types import JointLimitModel, JointLimitState

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


def _cone_row(quaternion, angle):
  """(gap (,), row vector (3,)) of a spherical joint's cone limit at joint quaternion
  (w, x, y, z): gap = angle - theta, row = -a (a the unit rotation axis; zero at theta = 0,
  where the row cannot be active for a positive angle)."""
  q = jnp.where(quaternion[0] < 0, -quaternion, quaternion)
  sine = safe.norm(q[1:])
  theta = 2.0 * jnp.arctan2(sine, q[0])
  axis = safe.divide(q[1:], sine)
  return angle - theta, -axis


def empty_joint_limit_state(limits: JointLimitModel, dtype) -> JointLimitState:
  count = limits.count
  return JointLimitState(active=jnp.zeros((count,), bool), upper=jnp.zeros((count,), bool),
                         impulse=jnp.zeros((count,), dtype), violation=jnp.zeros((count,), dtype))


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
  gaps, uppers, directions, vectors = [], [], [], []
  for s, d, c, cone in zip(limits.system, limits.dof, limits.coordinate, limits.cone):
    system_model = model.articulated[s]
    gc = state.articulated[s].generalized_coordinate
    if cone:
      gap, vector = _cone_row(gc[c:c + 4], system_model.joint_upper[c])
      gaps.append(gap)
      uppers.append(jnp.asarray(True))
      directions.append(jnp.ones((), gc.dtype))
      vectors.append(vector)
      continue
    gap_lower = gc[c] - system_model.joint_lower[c]
    gap_upper = system_model.joint_upper[c] - gc[c]
    at_upper = gap_upper < gap_lower
    direction = jnp.where(at_upper, -1.0, 1.0).astype(gc.dtype)
    gaps.append(jnp.where(at_upper, gap_upper, gap_lower))
    uppers.append(at_upper)
    directions.append(direction)
    vectors.append(jnp.stack([direction, jnp.zeros_like(direction), jnp.zeros_like(direction)]))
  gap, at_upper, direction, vector = map(jnp.stack, (gaps, uppers, directions, vectors))
  columns = limit_columns(limits)
  u = jnp.stack([state.articulated[s].generalized_velocity[columns[i]]
                 for i, s in enumerate(limits.system)])
  u_free = jnp.stack([free_velocities[s][columns[i]] for i, s in enumerate(limits.system)])
  u, u_free = jnp.sum(vector * u, axis=-1), jnp.sum(vector * u_free, axis=-1)
  reach = 2.0 * dt * jnp.maximum(jnp.abs(u), jnp.abs(u_free))
  active = gap < reach + LIMIT_MARGIN
  target = jnp.where(gap > 0, -gap / dt, 0.0)
  previous = state.joint_limits
  warm = jnp.where(active & previous.active & (previous.upper == at_upper),
                   direction * previous.impulse, 0.0)
  return dict(active=active, upper=at_upper, direction=direction, vector=vector, gap=gap,
              target=target, warm=warm)

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
"""

import jax.numpy as jnp
import numpy as np

from raisim_jax.dynamics.tree import JOINT_PRISMATIC, JOINT_REVOLUTE
from raisim_jax.types import JointLimitModel, JointLimitState

LIMIT_MARGIN = 1e-6  # rows within this of their limit are always active (rad or m)


def joint_limit_model(articulated) -> JointLimitModel:
  """The limited joints (finite lower or upper) of every system, as static tables."""
  system, dof, coordinate = [], [], []
  for s, model in enumerate(articulated):
    lower, upper = np.asarray(model.joint_lower), np.asarray(model.joint_upper)
    for body, joint_type in enumerate(model.joint_type):
      if joint_type not in (JOINT_REVOLUTE, JOINT_PRISMATIC):
        continue
      c = model.gc_offset[body]
      if np.isfinite(lower[c]) or np.isfinite(upper[c]):
        system.append(s)
        dof.append(model.gv_offset[body])
        coordinate.append(c)
  return JointLimitModel(system=tuple(system), dof=tuple(dof), coordinate=tuple(coordinate))


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
    dict of (L,) arrays: active, upper (acting at the upper limit), direction (+1 lower,
    -1 upper), gap (signed distance to the limit, negative past it), target (lowest allowed
    row velocity), warm (last step's impulse if the same row was active at the same limit).
  """
  limits = model.joint_limits
  if not limits.count:
    return None
  q, u, u_free, lower, upper = [], [], [], [], []
  for s, d, c in zip(limits.system, limits.dof, limits.coordinate):
    system_model = model.articulated[s]
    q.append(state.articulated[s].generalized_coordinate[c])
    u.append(state.articulated[s].generalized_velocity[d])
    u_free.append(free_velocities[s][d])
    lower.append(system_model.joint_lower[c])
    upper.append(system_model.joint_upper[c])
  q, u, u_free, lower, upper = map(jnp.stack, (q, u, u_free, lower, upper))
  gap_lower, gap_upper = q - lower, upper - q
  at_upper = gap_upper < gap_lower
  gap = jnp.where(at_upper, gap_upper, gap_lower)
  direction = jnp.where(at_upper, -1.0, 1.0).astype(q.dtype)
  reach = 2.0 * dt * jnp.maximum(jnp.abs(u), jnp.abs(u_free))
  active = gap < reach + LIMIT_MARGIN
  target = jnp.where(gap > 0, -gap / dt, 0.0)
  previous = state.joint_limits
  warm = jnp.where(active & previous.active & (previous.upper == at_upper),
                   direction * previous.impulse, 0.0)
  return dict(active=active, upper=at_upper, direction=direction, gap=gap, target=target,
              warm=warm)

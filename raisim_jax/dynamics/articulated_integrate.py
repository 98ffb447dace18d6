"""Time stepping of one articulated system, RaiSim's way.

Per step (all dynamics evaluated at the start-of-step state q, u):

1. Actuation and passive elements are implicit in the velocity. With PD gains kp, kd, joint
   springs k (rest `spring_mount`) and damping d, the forces are taken at the end-of-step
   velocity u+ and the predicted position q + dt u+:
       M (u+ - u) = dt [tau_ff + kp (e - dt u+) + kd (v* - u+) + k (e_s - dt u+) - d u+ - h]
   where e = target (-) q and e_s = mount (-) q are configuration differences (quaternion
   joints: rotation vectors, `configuration_difference`). Hence the effective mass matrix
       M_eff = M + diag(dt (d + kd) + dt^2 (k + kp))      (rotor inertia is already in M)
   and the free velocity u_free = u + dt M_eff^-1 tau, tau = tau_ff + kp (e - dt u) +
   kd (v* - u) + k (e_s - dt u) - d u - h. This is the spec's "stable PD": a stiff PD stays
   stable where an explicit one diverges. The contact solver then adds M_eff^-1 J^T lambda.
2. Actuation limits (setActuationLimits) bound tau_ff + PD force, evaluated at u: a dof whose
   force would exceed a bound gets the bound as a constant force, and its gains leave M_eff
   for this step (the bound is then exact).
3. Joint velocity limits act after the contact solve as impulses at the joints
   (`limit_velocity`): torques on the dofs past their limit, through M_eff^-1, that bring
   exactly those dofs back to the limit. A joint torque is internal to the system, so a
   floating robot's momentum is kept (clipping u+ entry by entry instead moved the base
   with no force: a free-flying two-link robot gained energy at every step).
4. Positions follow the system's IntegrationScheme (types.IntegrationScheme): SEMI_IMPLICIT
   (default, as single bodies) q += dt u+; TRAPEZOID q += dt (u + u+)/2; EULER q += dt u.

Configuration updates (RaiSim convention): revolute / prismatic q += dt u; spherical
q <- exp(dt w_parent) (x) q; floating p += dt v_world, q <- exp(dt w_world) (x) q.
"""

import jax
import jax.numpy as jnp
import numpy as np

from raisim_jax import batched_cond
from raisim_jax.dynamics import crba, rnea
from raisim_jax.dynamics import kinematics as kin_lib
from raisim_jax.dynamics import tree as tree_lib
from raisim_jax.types import (JOINT_FLOATING, JOINT_PRISMATIC, JOINT_REVOLUTE,
                                      JOINT_SPHERICAL)
from raisim_jax.math import dense, quaternion, safe
from raisim_jax.struct import dataclass
from raisim_jax.types import IntegrationScheme


def integrate_configuration(model, gc, gv, dt):
  """q(t + dt) (nq,) from q and a constant generalized velocity u (RaiSim convention)."""
  out = gc
  for i, jt in enumerate(model.joint_type):
    o, v = model.gc_offset[i], model.gv_offset[i]
    if jt in (JOINT_REVOLUTE, JOINT_PRISMATIC):
      out = out.at[o].add(dt * gv[v])
    elif jt == JOINT_SPHERICAL:
      q = quaternion.multiply(quaternion.exp_map(dt * gv[v:v + 3]), gc[o:o + 4])
      out = out.at[o:o + 4].set(safe.normalize(q))
    elif jt == JOINT_FLOATING:
      out = out.at[o:o + 3].add(dt * gv[v:v + 3])
      q = quaternion.multiply(quaternion.exp_map(dt * gv[v + 3:v + 6]), gc[o + 3:o + 7])
      out = out.at[o + 3:o + 7].set(safe.normalize(q))
  return out


def configuration_difference(model, gc_from, gc_to):
  """(nv,) tangent vector e with integrate_configuration(model, gc_from, e, 1) == gc_to:
  coordinate differences for revolute / prismatic joints, rotation vectors
  log(q_to (x) q_from^-1) (parent frame; world for the floating base) for quaternions."""
  out = jnp.zeros(model.num_gv, gc_from.dtype)
  for i, jt in enumerate(model.joint_type):
    o, v = model.gc_offset[i], model.gv_offset[i]
    if jt in (JOINT_REVOLUTE, JOINT_PRISMATIC):
      out = out.at[v].set(gc_to[o] - gc_from[o])
    elif jt == JOINT_SPHERICAL:
      rotation = quaternion.multiply(safe.normalize(gc_to[o:o + 4]),
                                     quaternion.conjugate(safe.normalize(gc_from[o:o + 4])))
      out = out.at[v:v + 3].set(quaternion.log_map(rotation))
    elif jt == JOINT_FLOATING:
      out = out.at[v:v + 3].set(gc_to[o:o + 3] - gc_from[o:o + 3])
      rotation = quaternion.multiply(
          safe.normalize(gc_to[o + 3:o + 7]),
          quaternion.conjugate(safe.normalize(gc_from[o + 3:o + 7])))
      out = out.at[v + 3:v + 6].set(quaternion.log_map(rotation))
  return out


@dataclass
class ArticulatedStepTerms:
  """What the contact solver and the position update need from one system's step.

  Attributes:
    kinematics: Kinematics at the start-of-step state (with velocities).
    mass_inverse: (nv, nv) M_eff^-1 (module docstring), formed once per step so that every
      solve with M_eff (free velocity, contact and limit rows) is a matrix product.
    free_velocity: (nv,) u_free, the end-of-step velocity without contact impulses.
    position_error: (nv,) PD error e = target (-) q at the start of the step.
    clamped: (nv,) bool, dofs whose actuation force sits on a limit this step.
    actuation_force: (nv,) tau_ff + PD force evaluated at u (the bound where clamped).
    stiffness: (nv,) PD stiffness in M_eff (0 where clamped or in FORCE_AND_TORQUE mode).
    damping: (nv,) PD damping in M_eff (same).
  """
  kinematics: kin_lib.Kinematics
  mass_inverse: jax.Array
  free_velocity: jax.Array
  position_error: jax.Array
  clamped: jax.Array
  actuation_force: jax.Array
  stiffness: jax.Array
  damping: jax.Array


def _scalar_or_spherical_spring_error(model, gc):
  """(nv,) mount (-) q for revolute, prismatic and spherical joints; 0 for the base."""
  error = configuration_difference(model, gc, model.spring_mount)
  floating = np.asarray([jt == JOINT_FLOATING for jt in model.joint_type])
  if floating.any():
    mask = np.ones(model.num_gv)
    for i in np.nonzero(floating)[0]:
      mask[model.gv_offset[i]:model.gv_offset[i] + 6] = 0.0
    error = error * jnp.asarray(mask, error.dtype)
  return error


def step_terms(model, gc, gv, feedforward_force, p_target, d_target, gravity, dt,
               external_wrench=None) -> ArticulatedStepTerms:
  """Implicit actuation and passive forces, M_eff and the free velocity of one step.

  gc (nq,), gv (nv,), feedforward_force (nv,), p_target (nq,), d_target (nv,), gravity (3,),
  dt (), external_wrench (B, 6) [force; torque about the body origin] world frame or None."""
  kin = kin_lib.forward_kinematics(model, gc, gv)
  mass = crba.mass_matrix_from_kinematics(model, kin)
  bias = rnea.bias_force_from_kinematics(model, kin, gv, gravity, external_wrench)

  position_error = configuration_difference(model, gc, p_target)
  kp, kd = model.pd_enabled * model.p_gain, model.pd_enabled * model.d_gain
  wanted = feedforward_force + kp * (position_error - dt * gv) + kd * (d_target - gv)
  clamped = (wanted < model.actuation_lower) | (wanted > model.actuation_upper)
  actuation = jnp.clip(wanted, model.actuation_lower, model.actuation_upper)
  kp = jnp.where(clamped, 0.0, kp)
  kd = jnp.where(clamped, 0.0, kd)

  spring_error = _scalar_or_spherical_spring_error(model, gc)
  passive = model.stiffness * (spring_error - dt * gv) - model.damping * gv
  extra = dt * (model.damping + kd) + dt * dt * (model.stiffness + kp)
  inverse = dense.spd_inverse(mass + jnp.diag(extra),
                              tree_lib.elimination_levels(model.parent, model.dof_body))
  free = gv + dt * solve_mass(inverse, actuation + passive - bias)
  return ArticulatedStepTerms(kinematics=kin, mass_inverse=inverse, free_velocity=free,
                              position_error=position_error, clamped=clamped,
                              actuation_force=actuation, stiffness=kp, damping=kd)


def solve_mass(inverse, rhs):
  """M_eff^-1 rhs for rhs (nv,) or (nv, k), from ArticulatedStepTerms.mass_inverse."""
  return inverse @ rhs


def solve_mass_rows(inverse, rows):
  """(nv, k) M_eff^-1 rows^T for rows (k, nv) (a Jacobian), from ArticulatedStepTerms.
  mass_inverse, computed as (rows M_eff^-1)^T: M_eff^-1 is exactly symmetric
  (dense.spd_inverse), and XLA:CPU copies a batch of small rows^T into a transposed layout
  before the dot (a third of the standing quadruped's articulated contact rows)."""
  return (rows @ inverse).T


def generalized_force(terms: ArticulatedStepTerms, feedforward_force, d_target, gv_next, dt):
  """(nv,) feed-forward + PD force the implicit step applied (getGeneralizedForce): the PD at
  the end-of-step velocity and predicted position, the bound on clamped dofs."""
  pd = (terms.stiffness * (terms.position_error - dt * gv_next)
        + terms.damping * (d_target - gv_next))
  return jnp.where(terms.clamped, terms.actuation_force, feedforward_force + pd)


# Active-set rounds of `limit_velocity`. Real robots' sets settle in one or two (A1 and
# rsc's all_joints, 200 random states each). Random SPD couplings (n 2-6, 30% of the limits
# inf) against the exact solution by enumeration: 35 of 1,000 missed at 3 block rounds, 2 of
# 6,000 at 8 (their sets cycle; 4 sweeps of coordinate descent after the rounds fixed
# neither); with the least-index rounds after the block ones, 0 of 10,500 (and 0 of 200 at
# n 6-8).
VELOCITY_LIMIT_ROUNDS = 8
SINGLE_CHANGE_ROUNDS_PER_DOF = 2   # least-index rounds after them, per dof


def limit_velocity(model, mass_inverse, gv):
  """(nv,) u+ with every dof inside its joint velocity limit l (`model.velocity_limit`, inf:
  none), by generalized impulses tau at the dofs (RaiSim's "velocity limit forces acting at
  the joint"): u+ = u + A tau with A = M_eff^-1 (`mass_inverse`, (nv, nv)) and, per dof,
  tau_j = 0 and |u+_j| <= l_j, or tau_j pushing back (sign opposite to u+_j) and u+_j = +-l_j.
  A joint's impulse acts on its parent and child alike, so the rest of the system (a floating
  base) responds as to any joint torque and a free robot keeps its momentum.

  Solved by active sets: the dofs past their limit hold at it (tau_S = A_SS^-1 (+-l - u)_S);
  each round releases the dofs whose impulse pulls and adds those the others pushed past,
  all at once for VELOCITY_LIMIT_ROUNDS rounds, then one at a time, the first in index order
  (which ends the rare cycles of the block changes). A round runs only where the sets still
  change; what is still past after all rounds is clipped. Skipped where no dof is past
  (under vmap: in no world); not traced at all when every limit is a concrete inf."""
  limit = model.velocity_limit
  if not gv.shape[0] or (not isinstance(limit, jax.core.Tracer)
                         and not np.isfinite(np.asarray(limit)).any()):
    return gv   # no dofs (a fixed system of static shapes), or no finite limit
  limit = jnp.asarray(limit, gv.dtype)
  past = lambda u: jnp.abs(u) > limit
  identity = jnp.eye(gv.shape[0], dtype=gv.dtype)

  def impulses(gv):
    rounds = VELOCITY_LIMIT_ROUNDS + SINGLE_CHANGE_ROUNDS_PER_DOF * gv.shape[0]

    def solve(k, carry):
      active, side, _, _ = carry
      system = jnp.where(active[:, None] & active[None, :], mass_inverse, identity)
      wanted = jnp.where(active, side * limit - gv, 0.0)
      tau = jnp.where(active, dense.spd_inverse(system) @ wanted, 0.0)
      limited = gv + mass_inverse @ tau
      joining = ~active & past(limited)
      wrong = joining | (active & (tau * side > 0))    # past its limit, or pulling
      # The first VELOCITY_LIMIT_ROUNDS change every wrong dof at once; the later ones only
      # the first (a least-index rule, which does not cycle where block changes can).
      first = jnp.arange(gv.shape[0]) == jnp.argmax(wrong)
      change = jnp.where(k < VELOCITY_LIMIT_ROUNDS, wrong, wrong & first)
      side = jnp.where(change & joining, jnp.sign(limited), side)
      return active ^ change, side, limited, ~jnp.any(wrong)

    # A round runs only where the sets still change (under vmap: in some world), so a batch
    # pays for the rounds its slowest world needs (one or two for robots), not for `rounds`.
    _, _, limited, _ = jax.lax.fori_loop(
        0, rounds,
        lambda k, carry: batched_cond.run_where(~carry[3], lambda c: solve(k, c), carry),
        (past(gv), jnp.sign(gv), gv, jnp.zeros((), bool)))
    return jnp.clip(limited, -limit, limit)

  return jax.lax.cond(batched_cond.any_world(jnp.any(past(gv))), impulses, lambda u: u, gv)


def end_of_step(model, gc, gv, gv_solved, dt, mass_inverse, displacement=None):
  """(q, u) at the end of the step from the solved velocity: u+ is brought inside the
  velocity limits (`limit_velocity`, with M_eff^-1 `mass_inverse`), then q moves by the
  system's IntegrationScheme; `displacement` (nv,) is a position-only correction (penetration
  removal) applied with it."""
  gv_next = limit_velocity(model, mass_inverse, gv_solved)
  return update_configuration(model, gc, gv, gv_next, dt, displacement), gv_next


def update_configuration(model, gc, gv, gv_next, dt, displacement=None):
  """q at the end of the step by the system's IntegrationScheme (see `end_of_step`)."""
  scheme = model.integration_scheme
  if scheme == IntegrationScheme.TRAPEZOID:
    velocity = 0.5 * (gv + gv_next)
  elif scheme == IntegrationScheme.EULER:
    velocity = gv
  else:
    velocity = gv_next
  if displacement is not None:
    velocity = velocity + displacement / dt
  return integrate_configuration(model, gc, velocity, dt)


def integrate_articulated(model, gc, gv, generalized_force_ff, gravity, dt, external_wrench=None,
                          p_target=None, d_target=None):
  """One contact-free step of one system -> (gc, gv): the step the world takes when nothing
  touches the system (same code path). Targets default to the current state (no PD pull)."""
  dtype = model.dtype
  gc, gv = jnp.asarray(gc, dtype), jnp.asarray(gv, dtype)
  p_target = gc if p_target is None else jnp.asarray(p_target, dtype)
  d_target = jnp.zeros_like(gv) if d_target is None else jnp.asarray(d_target, dtype)
  terms = step_terms(model, gc, gv, jnp.asarray(generalized_force_ff, dtype), p_target,
                     d_target, jnp.asarray(gravity, dtype), dt, external_wrench)
  return end_of_step(model, gc, gv, terms.free_velocity, dt, terms.mass_inverse)

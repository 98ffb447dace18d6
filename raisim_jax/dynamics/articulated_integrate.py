"""Free (contact-free) integration of an articulated system: semi-implicit Euler.

u+ = u + dt * ABA(q, u, tau_total) (all dynamics evaluated at q, as in RaiSim's
integrate1/integrate2 split), then q is integrated with the step's mean velocity
u_mid = (u + u+) / 2 (default, position_velocity="average") or with u+ ("next", the textbook
symplectic Euler):
  revolute / prismatic: q += dt u;
  spherical: q <- exp(dt w_parent) ⊗ q (w in the joint / parent frame), normalized;
  floating: p += dt v_world, q <- exp(dt w_world) ⊗ q, normalized.
Joint damping d and springs k (revolute/prismatic: rest `spring_mount`) are applied as in
RaiSim, implicitly: tau -= d u + k (q - q_mount) and diag(M) += dt d + dt^2 k (the "damped
inverse mass matrix"). Spherical springs are not applied yet.

Why the mean velocity: with q += dt u+, a body in free fall lands dt g t / 2 below the exact
trajectory at time t (q_n = exact + g dt t_n / 2), so the potential energy, and hence the
total energy, drifts by m |g|^2 dt t / 2, growing without bound (5e-3 relative over 5 s at
dt = 1e-4 on all_joints; 0.16 J of 31 J). With u_mid the position update is exact for constant
acceleration, at the same cost (one ABA per step, nothing evaluated at a second
configuration); the remaining drift is O(dt) from the velocity-dependent terms (about
1e-6 of the kinetic energy per second at dt = 1e-4). See docs/articulated.md.
"""

import jax.numpy as jnp
import numpy as np

from raisim_jax.dynamics import aba
from raisim_jax.dynamics.tree import (JOINT_FLOATING, JOINT_PRISMATIC, JOINT_REVOLUTE,
                                      JOINT_SPHERICAL)
from raisim_jax.math import quaternion


def _scalar_joint_indices(model):
  gc_idx, gv_idx = [], []
  for i, jt in enumerate(model.joint_type):
    if jt in (JOINT_REVOLUTE, JOINT_PRISMATIC):
      gc_idx.append(model.gc_offset[i])
      gv_idx.append(model.gv_offset[i])
  return np.asarray(gc_idx, dtype=int), np.asarray(gv_idx, dtype=int)


def spring_damper_force(model, gc, gv):
  """Generalized force (nv,) of joint springs and dampers: -d u - k (q - q_mount)."""
  tau = -model.damping * gv
  gc_idx, gv_idx = _scalar_joint_indices(model)
  if gc_idx.size:
    tau = tau.at[gv_idx].add(-model.stiffness[gv_idx] * (gc[gc_idx] - model.spring_mount[gc_idx]))
  return tau


def integrate_configuration(model, gc, gv, dt):
  """q(t + dt) (nq,) from q and a constant generalized velocity u (RaiSim convention)."""
  out = gc
  for i, jt in enumerate(model.joint_type):
    o, v = model.gc_offset[i], model.gv_offset[i]
    if jt in (JOINT_REVOLUTE, JOINT_PRISMATIC):
      out = out.at[o].add(dt * gv[v])
    elif jt == JOINT_SPHERICAL:
      q = quaternion.multiply(quaternion.exp_map(dt * gv[v:v + 3]), gc[o:o + 4])
      out = out.at[o:o + 4].set(quaternion.normalize(q))
    elif jt == JOINT_FLOATING:
      out = out.at[o:o + 3].add(dt * gv[v:v + 3])
      q = quaternion.multiply(quaternion.exp_map(dt * gv[v + 3:v + 6]), gc[o + 3:o + 7])
      out = out.at[o + 3:o + 7].set(quaternion.normalize(q))
  return out


POSITION_VELOCITIES = ("average", "next")


def integrate_articulated(model, gc, gv, generalized_force, gravity, dt, external_wrench=None,
                          position_velocity="average"):
  """One semi-implicit Euler step without contacts -> (gc, gv).

  gc (nq,), gv (nv,), generalized_force (nv,), gravity (3,), dt scalar, external_wrench
  (B, 6) optional [force; torque about the body origin], world frame. position_velocity
  (static): "average" integrates q with (u + u+) / 2, "next" with u+ (see module doc).
  """
  if position_velocity not in POSITION_VELOCITIES:
    raise ValueError(f"position_velocity must be one of {POSITION_VELOCITIES}, got {position_velocity!r}")
  dtype = model.dtype
  gc, gv = jnp.asarray(gc, dtype), jnp.asarray(gv, dtype)
  tau = jnp.asarray(generalized_force, dtype) + spring_damper_force(model, gc, gv)
  armature = model.rotor_inertia + dt * model.damping + dt * dt * model.stiffness
  du = aba.forward_dynamics(model, gc, gv, tau, gravity, external_wrench, armature)
  gv_new = gv + dt * du
  gv_pos = 0.5 * (gv + gv_new) if position_velocity == "average" else gv_new
  return integrate_configuration(model, gc, gv_pos, dt), gv_new

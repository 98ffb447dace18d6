"""Free (contact-free) integration of an articulated system: semi-implicit Euler.

u+ = u + dt * ABA(q, u, tau_total), then q is integrated with u+:
  revolute / prismatic: q += dt u;
  spherical: q <- exp(dt w_parent) ⊗ q (w in the joint / parent frame), normalized;
  floating: p += dt v_world, q <- exp(dt w_world) ⊗ q, normalized.
Joint damping d and springs k (revolute/prismatic: rest `spring_mount`) are applied as in
RaiSim, implicitly: tau -= d u + k (q - q_mount) and diag(M) += dt d + dt^2 k (the "damped
inverse mass matrix"). Spherical springs are not applied yet.
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


def integrate_articulated(model, gc, gv, generalized_force, gravity, dt, external_wrench=None):
  """One semi-implicit Euler step without contacts -> (gc, gv).

  gc (nq,), gv (nv,), generalized_force (nv,), gravity (3,), dt scalar, external_wrench
  (B, 6) optional [force; torque about the body origin], world frame.
  """
  dtype = model.dtype
  gc, gv = jnp.asarray(gc, dtype), jnp.asarray(gv, dtype)
  tau = jnp.asarray(generalized_force, dtype) + spring_damper_force(model, gc, gv)
  armature = model.rotor_inertia + dt * model.damping + dt * dt * model.stiffness
  du = aba.forward_dynamics(model, gc, gv, tau, gravity, external_wrench, armature)
  gv_new = gv + dt * du
  return integrate_configuration(model, gc, gv_new, dt), gv_new

"""Recursive Newton-Euler: inverse dynamics, nonlinearities and joint reaction wrenches.

World-frame spatial formulation ([lin; ang] about the world origin): body accelerations are
sums over supporting dofs, body forces are summed over subtrees, both as mask products.
Gravity enters as the base acceleration a_0 = [-g; 0].

External wrenches `external_wrench` (B, 6) are [force; torque] in the world frame acting on
each body, the torque taken about the body frame origin (RaiSim body position).
"""

import jax.numpy as jnp
import numpy as np

from raisim_jax.dynamics import kinematics as kin_lib
from raisim_jax.dynamics import tree as tree_lib
from raisim_jax.math import spatial


def external_wrench_at_origin(kin, external_wrench):
  """(B, 6) wrenches [f; n about body origin] -> spatial forces about the world origin."""
  return spatial.wrench_at_origin(external_wrench[:, :3], external_wrench[:, 3:], kin.body_pos)


def _subtree_forces(model, kin, gv, ga, gravity, external_wrench):
  dtype = model.dtype
  support = jnp.asarray(tree_lib.dof_support(model.parent, model.dof_body), dtype)
  a0 = jnp.concatenate([-jnp.asarray(gravity, dtype), jnp.zeros(3, dtype)])
  acc = a0[None, :] + support @ (kin.motion_subspace * ga[:, None]
                                 + kin.motion_subspace_dot * gv[:, None])
  inertia = kin.spatial_inertia
  v = kin.body_velocity
  f = (jnp.einsum("bij,bj->bi", inertia, acc)
       + spatial.force_cross(v, jnp.einsum("bij,bj->bi", inertia, v)))
  if external_wrench is not None:
    f = f - external_wrench_at_origin(kin, jnp.asarray(external_wrench, dtype))
  sub = jnp.asarray(tree_lib.subtree_matrix(model.parent), dtype)
  return sub @ f                                                   # (B, 6) subtree totals


def inverse_dynamics(model, gc, gv, ga, gravity, external_wrench=None):
  """tau (nv,) = M(q) ga + h(q, u) (minus J^T of external wrenches), RaiSim convention.

  Rotor inertia contributes rotor_inertia * ga. gravity: (3,) world acceleration vector.
  """
  dtype = model.dtype
  gc, gv, ga = (jnp.asarray(x, dtype) for x in (gc, gv, ga))
  kin = kin_lib.forward_kinematics(model, gc, gv)
  total = _subtree_forces(model, kin, gv, ga, gravity, external_wrench)
  dof_body = np.asarray(model.dof_body, dtype=int)
  tau = jnp.einsum("ai,ai->a", kin.motion_subspace, total[dof_body])
  return tau + model.rotor_inertia * ga


def bias_force_from_kinematics(model, kin, gv, gravity, external_wrench=None):
  """h (nv,) at precomputed `Kinematics` (with velocity): Coriolis, centrifugal and gravity
  terms minus the generalized force of the external wrenches (B, 6) [force; torque about the
  body origin], world frame. tau = M du/dt + h."""
  total = _subtree_forces(model, kin, gv, jnp.zeros(model.num_gv, model.dtype), gravity,
                          external_wrench)
  dof_body = np.asarray(model.dof_body, dtype=int)
  return jnp.einsum("ai,ai->a", kin.motion_subspace, total[dof_body])


def nonlinearities(model, gc, gv, gravity):
  """h(q, u) (nv,): Coriolis, centrifugal and gravity terms (getNonlinearities(gravity))."""
  return inverse_dynamics(model, gc, gv, jnp.zeros(model.num_gv, model.dtype), gravity)


def joint_wrenches(model, gc, gv, ga, gravity, external_wrench=None):
  """Force (B, 3) and torque (B, 3) that each joint transmits from the parent to the child
  subtree, world frame, torque about the joint (body origin) position
  (getForceAtJointInWorldFrame / getTorqueAtJointInWorldFrame). Includes actuation.
  """
  dtype = model.dtype
  gc, gv, ga = (jnp.asarray(x, dtype) for x in (gc, gv, ga))
  kin = kin_lib.forward_kinematics(model, gc, gv)
  total = _subtree_forces(model, kin, gv, ga, gravity, external_wrench)
  return spatial.wrench_at_point(total, kin.body_pos)

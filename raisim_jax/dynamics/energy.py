"""Energies and momenta of an articulated system (world frame).

kinetic_energy = 1/2 u^T M u (rotor inertia included, as in RaiSim's getKineticEnergy);
potential_energy = -sum m_i g . c_i (zero at the world origin height).
"""

import jax.numpy as jnp

from raisim_jax.dynamics import crba


def kinetic_energy(model, kin, gv):
  """1/2 u^T M u (scalar); equals the bodies' kinetic energy plus 1/2 rotor_inertia u^2."""
  v = kin.body_velocity
  body = 0.5 * jnp.einsum("bi,bij,bj->", v, kin.spatial_inertia, v)
  return body + 0.5 * jnp.sum(model.rotor_inertia * gv * gv)


def potential_energy(model, kin, gravity):
  """sum_i m_i (-g) . c_i (scalar), gravity (3,) (getPotentialEnergy)."""
  return -jnp.sum(model.mass * (kin.com_pos @ jnp.asarray(gravity, model.dtype)))


def total_energy(model, kin, gv, gravity):
  """Kinetic + potential energy (getEnergy)."""
  return kinetic_energy(model, kin, gv) + potential_energy(model, kin, gravity)


def linear_momentum(model, kin):
  """Total linear momentum (3,) (getLinearMomentum)."""
  h = jnp.einsum("bij,bj->bi", kin.spatial_inertia, kin.body_velocity)
  return jnp.sum(h[:, :3], axis=0)


def angular_momentum(model, kin, reference_point):
  """Total angular momentum (3,) about `reference_point` (world) (getAngularMomentum)."""
  h = jnp.sum(jnp.einsum("bij,bj->bi", kin.spatial_inertia, kin.body_velocity), axis=0)
  return h[3:] - jnp.cross(jnp.asarray(reference_point, model.dtype), h[:3])


def generalized_momentum(model, kin, gv):
  """M u (nv,) (getGeneralizedMomentum)."""
  return crba.mass_matrix_from_kinematics(model, kin) @ gv

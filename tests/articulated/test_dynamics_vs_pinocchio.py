"""M, h, ABA, RNEA, body poses, frame Jacobians, COM and energies vs Pinocchio (1e-9 rel)."""

import jax
import numpy as np
import pytest

from raisim_jax.dynamics import aba, crba, energy, jacobian, kinematics, rnea
from tests.articulated.robots import EXAMPLE_ROBOT_DATA, random_state, robot

# rsc and pybullet_data robots, then example-robot-data's (EXAMPLE_ROBOT_DATA: ANYmal C,
# solo12, Talos, TIAGo with 54 dofs, UR5, Unitree G1).
ROBOTS = ["a1", "kuka", "all_joints", "fixed_arm", *EXAMPLE_ROBOT_DATA]
GRAVITY = np.array([0.0, 0.0, -9.81])
RTOL = 1e-9


def _close(actual, expected, scale=None):
  actual, expected = np.asarray(actual), np.asarray(expected)
  scale = max(1.0, np.abs(expected).max()) if scale is None else scale
  err = np.abs(actual - expected).max() / scale
  assert err < RTOL, f"relative error {err:.3e}"




def _check(name, seeds):
  desc, model, oracle = robot(name)
  mm = jax.jit(crba.mass_matrix)
  hh = jax.jit(rnea.nonlinearities)
  fd = jax.jit(aba.forward_dynamics)
  inv = jax.jit(rnea.inverse_dynamics)
  fk = jax.jit(kinematics.forward_kinematics)
  for seed in seeds:
    rng = np.random.default_rng(seed)
    q, u, tau = random_state(desc, rng)
    _close(mm(model, q), oracle.mass_matrix(q))
    _close(hh(model, q, u, GRAVITY), oracle.nonlinearities(q, u, GRAVITY))
    a_ref = oracle.forward_dynamics(q, u, tau, GRAVITY)
    _close(fd(model, q, u, tau, GRAVITY), a_ref)
    _close(inv(model, q, u, a_ref, GRAVITY), tau)
    kin = fk(model, q, u)
    pos_ref, rot_ref = oracle.body_poses(q)
    _close(kin.body_pos, pos_ref)
    _close(kin.body_rot, rot_ref)
    if not model.fixed_base:  # Pinocchio leaves the universe-attached base out of its COM/PE
      _close(kinematics.center_of_mass(model, kin), oracle.com(q))
      _close(energy.potential_energy(model, kin, GRAVITY), oracle.potential_energy(q, GRAVITY))
    # RaiSim's kinetic energy is 1/2 u^T M u (rotor inertia included)
    m_ref = oracle.mass_matrix(q)
    _close(energy.kinetic_energy(model, kin, u), 0.5 * u @ m_ref @ u)
    if not np.any(np.asarray(model.rotor_inertia)):
      _close(energy.kinetic_energy(model, kin, u), oracle.kinetic_energy(q, u))
    _close(energy.generalized_momentum(model, kin, u), oracle.mass_matrix(q) @ u)
    fpos, frot = kinematics.frame_poses(model, kin)
    flin, fang = kinematics.frame_velocities(model, kin)
    for f, fname in enumerate(model.frame_names):
      if not oracle.model.existFrame(fname):
        continue
      p_ref, j_ref = oracle.frame_jacobian(q, fname)
      _close(fpos[f], p_ref)
      _close(jacobian.frame_jacobian(model, kin, f), j_ref[:3])
      _close(jacobian.frame_rotational_jacobian(model, kin, f), j_ref[3:])
      _close(flin[f], j_ref[:3] @ u)
      _close(fang[f], j_ref[3:] @ u)


@pytest.mark.parametrize("name", ROBOTS)
def test_vs_pinocchio(name):
  _check(name, range(10))


@pytest.mark.slow
@pytest.mark.parametrize("name", ROBOTS)
def test_vs_pinocchio_many_states(name):
  _check(name, range(100, 150))

"""The convention conversion itself: T orthogonal, kinetic energy invariant, M consistent."""

import numpy as np
import pytest

from tests.articulated.robots import random_state, robot


@pytest.mark.parametrize("name", ["a1", "all_joints"])
def test_conversion_consistent(name):
  desc, _, oracle = robot(name)
  rng = np.random.default_rng(1)
  q, u, tau = random_state(desc, rng)
  t = oracle.transform(q)
  np.testing.assert_allclose(t @ t.T, np.eye(desc.dof), atol=1e-12)
  m = oracle.mass_matrix(q)
  if not np.any(oracle.model.armature):
    np.testing.assert_allclose(0.5 * u @ m @ u, oracle.kinetic_energy(q, u), rtol=1e-10)
  # aba(tau) consistent with M, h
  h = oracle.nonlinearities(q, u, [0, 0, -9.81])
  np.testing.assert_allclose(np.linalg.solve(m, tau - h),
                             oracle.forward_dynamics(q, u, tau, [0, 0, -9.81]), rtol=1e-8,
                             atol=1e-9)
  # classical base acceleration: pinocchio's spatial frame accel vs finite differences
  assert np.isfinite(h).all()

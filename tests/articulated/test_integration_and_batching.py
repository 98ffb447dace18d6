"""Jacobians vs finite differences, energy conservation, pendulum period, jit/vmap batching."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from raisim_jax.dynamics import aba, articulated_integrate, crba, energy, jacobian, kinematics, rnea
from tests.articulated.robots import RSC, random_state, robot

import os
from raisim_jax.dynamics.tree import compile_articulated
from raisim_jax.io.urdf import load_urdf
from raisim_jax.types import IntegrationScheme


@pytest.mark.parametrize("name", ["a1", "all_joints"])
def test_jacobians_finite_differences(name):
  desc, model, _ = robot(name)
  q, u, _ = random_state(desc, np.random.default_rng(3))
  eps = 1e-6
  fk = jax.jit(kinematics.forward_kinematics)
  step = lambda t: articulated_integrate.integrate_configuration(model, jnp.asarray(q), jnp.asarray(u), t)
  kin = fk(model, q, u)
  kin_p, kin_m = fk(model, step(eps), u), fk(model, step(-eps), u)
  fpos, _ = kinematics.frame_poses(model, kin)
  pos_p, _ = kinematics.frame_poses(model, kin_p)
  pos_m, _ = kinematics.frame_poses(model, kin_m)
  for f in range(len(model.frame_names)):
    j = jacobian.frame_jacobian(model, kin, f)
    np.testing.assert_allclose(j @ u, (pos_p[f] - pos_m[f]) / (2 * eps), atol=1e-7)
    jd = jacobian.frame_jacobian_dot(model, kin, f)
    jd_fd = (jacobian.frame_jacobian(model, kin_p, f) - jacobian.frame_jacobian(model, kin_m, f)) / (2 * eps)
    np.testing.assert_allclose(jd, jd_fd, atol=1e-6)
    b = model.frame_body[f]
    rd = jacobian.rotational_jacobian_dot(model, kin, b)
    rd_fd = (jacobian.rotational_jacobian(model, kin_p, b) - jacobian.rotational_jacobian(model, kin_m, b)) / (2 * eps)
    np.testing.assert_allclose(rd, rd_fd, atol=1e-6)


def _energy_drift(duration, dt=1e-4, gravity=-9.81, scheme=IntegrationScheme.TRAPEZOID):
  """Free all_joints chain (floating base, revolute, prismatic, spherical; no damping) for
  `duration` s -> (E(T) - E(0), initial kinetic energy K0, total mass).

  Drift is judged against K0, not |E0|: E0 is dominated by the potential energy, whose
  reference (base height) is arbitrary, so |dE| / |E0| would flatter the integrator.
  """
  desc = load_urdf(os.path.join(RSC, "all_joints.urdf"))
  for b in desc.bodies:
    b.damping = 0.0
  model = compile_articulated(desc, jnp.float64).replace(integration_scheme=int(scheme))
  assert not np.any(np.asarray(model.damping)) and not np.any(np.asarray(model.stiffness))
  q, u, _ = random_state(desc, np.random.default_rng(5))
  u = 0.3 * u  # K0 ~ 1.5 J: moderate spin of every joint and the base
  g = jnp.array([0.0, 0.0, gravity])
  tau = jnp.zeros(model.num_gv)

  def energies(q, u):
    kin = kinematics.forward_kinematics(model, q, u)
    return energy.total_energy(model, kin, u, g), energy.kinetic_energy(model, kin, u)

  def body(carry, _):
    q, u = carry
    return articulated_integrate.integrate_articulated(model, q, u, tau, g, dt), None

  steps = int(round(duration / dt))
  e0, k0 = energies(jnp.asarray(q), jnp.asarray(u))
  (q1, u1), _ = jax.jit(lambda c: jax.lax.scan(body, c, None, length=steps))((jnp.asarray(q), jnp.asarray(u)))
  e1, _ = energies(q1, u1)
  return float(e1 - e0), float(k0), float(np.sum(np.asarray(model.mass)))


@pytest.mark.parametrize("gravity", [-9.81, 0.0])
def test_energy_conserved_5s(gravity):
  """Requirement: relative drift < 1e-4 over 5 s at dt = 1e-4 (measured 7.1e-5 with gravity,
  7.8e-6 without; about 3 s of runtime each, so not marked slow)."""
  de, k0, _ = _energy_drift(5.0, 1e-4, gravity)
  assert abs(de) / k0 < 1e-4


@pytest.mark.parametrize("gravity", [-9.81, 0.0])
def test_energy_drift_falls_linearly_with_dt(gravity):
  drifts = [abs(_energy_drift(0.2, dt, gravity)[0]) for dt in (4e-4, 2e-4, 1e-4)]
  assert drifts[1] <= 0.55 * drifts[0] and drifts[2] <= 0.55 * drifts[1], drifts


def test_energy_drift_of_semi_implicit_position_update_is_free_fall_bias():
  """SEMI_IMPLICIT (the default, what contacts need: q += dt u+ closes a speculative gap
  exactly) puts a falling body dt g t / 2 low at time t, so E drifts by -m |g|^2 dt t / 2,
  while the same chain without gravity conserves energy to 2e-6 of K0."""
  duration, dt, g = 0.2, 1e-4, 9.81
  de, k0, mass = _energy_drift(duration, dt, -g, scheme=IntegrationScheme.SEMI_IMPLICIT)
  np.testing.assert_allclose(de, -mass * g * g * dt * duration / 2, rtol=1e-3)
  de0, _, _ = _energy_drift(duration, dt, 0.0, scheme=IntegrationScheme.SEMI_IMPLICIT)
  assert abs(de0) / k0 < 2e-6


def test_pendulum_small_angle_period():
  model = compile_articulated(load_urdf(os.path.join(RSC, "pendulum.urdf")), jnp.float64)
  m, l, i_c = 2.0, 0.5, 0.1
  inertia = i_c + m * l * l
  g = 9.81
  period = 2 * np.pi * np.sqrt(inertia / (m * g * l))
  dt = 1e-4
  gravity = jnp.array([0.0, 0.0, -g])

  def body(carry, _):
    q, u = carry
    q, u = articulated_integrate.integrate_articulated(model, q, u, jnp.zeros(1), gravity, dt)
    return (q, u), q[0]

  n = int(1.5 * period / dt)
  _, qs = jax.jit(lambda c: jax.lax.scan(body, c, None, length=n))((jnp.array([0.01]), jnp.zeros(1)))
  qs = np.asarray(qs)
  # zero crossings from + to - : one period apart
  cross = np.where((qs[:-1] > 0) & (qs[1:] <= 0))[0]
  up = np.where((qs[:-1] < 0) & (qs[1:] >= 0))[0]
  measured = 2 * (up[0] - cross[0]) * dt
  assert abs(measured - period) / period < 2e-3


def test_jit_vmap_1024_matches_unbatched():
  desc, model, _ = robot("a1")
  rng = np.random.default_rng(7)
  states = [random_state(desc, rng) for _ in range(1024)]
  qs = jnp.asarray(np.stack([s[0] for s in states]))
  us = jnp.asarray(np.stack([s[1] for s in states]))
  taus = jnp.asarray(np.stack([s[2] for s in states]))
  g = jnp.array([0.0, 0.0, -9.81])
  fd = jax.jit(jax.vmap(lambda q, u, t: aba.forward_dynamics(model, q, u, t, g)))(qs, us, taus)
  mm = jax.jit(jax.vmap(lambda q: crba.mass_matrix(model, q)))(qs)
  tau = jax.jit(jax.vmap(lambda q, u, a: rnea.inverse_dynamics(model, q, u, a, g)))(qs, us, fd)
  np.testing.assert_allclose(tau, taus, rtol=1e-8, atol=1e-8)
  for k in (0, 511, 1023):
    np.testing.assert_allclose(fd[k], aba.forward_dynamics(model, qs[k], us[k], taus[k], g), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(mm[k], crba.mass_matrix(model, qs[k]), rtol=1e-12, atol=1e-12)
  # vmap over models (domain randomisation): masses as a batch
  models = jax.tree_util.tree_map(lambda x: jnp.stack([x, x]), model)
  models = models.replace(mass=models.mass.at[1].multiply(2.0))
  out = jax.vmap(lambda m: crba.mass_matrix(m, qs[0]))(models)
  assert not np.allclose(out[0], out[1])


def test_inverse_mass_matrix_and_joint_wrenches():
  desc, model, _ = robot("all_joints")
  q, u, tau = random_state(desc, np.random.default_rng(9))
  m = crba.mass_matrix(model, q)
  np.testing.assert_allclose(aba.inverse_mass_matrix(model, q) @ m, np.eye(model.num_gv), atol=1e-9)
  g = jnp.array([0.0, 0.0, -9.81])
  a = aba.forward_dynamics(model, q, u, tau, g)
  force, torque = rnea.joint_wrenches(model, q, u, a, g)
  kin = kinematics.forward_kinematics(model, q, u)
  # a revolute joint's actuation = axis . joint torque
  i = 1
  axis_w = kin.joint_frame_rot[i] @ model.joint_axis[i]
  np.testing.assert_allclose(axis_w @ torque[i], tau[model.gv_offset[i]] - model.rotor_inertia[model.gv_offset[i]] * a[model.gv_offset[i]], rtol=1e-9, atol=1e-9)
  # root wrench of a free-floating base is zero (no external forces)
  np.testing.assert_allclose(force[0], tau[:3], atol=1e-9)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 6])
def test_pivot_inverse_matches_numpy_and_keeps_singular_pivots_non_finite(k):
  """ABA's closed-form pivot inverse (1/d, cofactors, 3x3 blocks) against numpy's LU inverse;
  an exactly singular pivot must not come back as a finite matrix."""
  a = np.random.default_rng(k).normal(size=(20, k, k))
  d = a @ a.transpose(0, 2, 1) + 0.1 * np.eye(k)
  np.testing.assert_allclose(aba.pivot_inverse(jnp.asarray(d)), np.linalg.inv(d), rtol=1e-9,
                             atol=1e-9)
  assert not np.all(np.isfinite(aba.pivot_inverse(jnp.zeros((1, k, k)))))

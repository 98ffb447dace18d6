"""Single rigid bodies against closed-form mechanics (float64)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import raisim_jax as rj
from raisim_jax.dynamics import single_body
from raisim_jax.math import quaternion as quat

G = 9.81


def test_free_fall_matches_semi_implicit_closed_form_and_continuous_limit():
  world = rj.World()
  dt = 1e-3
  world.setTimeStep(dt)
  ball = world.addSphere(0.1, 2.0)
  ball.setPosition(0, 0, 10)
  n = 1000
  for _ in range(n):
    world.integrate()
  # Semi-implicit Euler: v_k = -g k dt, z_n = z0 - g dt^2 n (n + 1) / 2, exactly.
  assert ball.getPosition()[2] == pytest.approx(10 - G * dt**2 * n * (n + 1) / 2, abs=1e-12)
  assert ball.getLinearVelocity()[2] == pytest.approx(-G * n * dt, abs=1e-12)
  # Continuous closed form within the scheme's O(dt) error.
  assert ball.getPosition()[2] == pytest.approx(10 - 0.5 * G * 1.0**2, abs=G * dt)
  assert world.getWorldTime() == pytest.approx(1.0, abs=1e-12)


def test_projectile_range_and_apex():
  world = rj.World()
  dt = 1e-4
  world.setTimeStep(dt)
  ball = world.addSphere(0.1, 1.0)
  v0, angle = 10.0, np.deg2rad(30)
  ball.setVelocity([v0 * np.cos(angle), 0, v0 * np.sin(angle)], [0, 0, 0])
  model, state = world.compile()
  flight_time = 2 * v0 * np.sin(angle) / G
  n = int(round(flight_time / dt))
  final, trajectory = jax.jit(rj.rollout, static_argnums=2)(model, state, n)
  assert float(final.bodies.position[0, 0]) == pytest.approx(v0**2 * np.sin(2 * angle) / G,
                                                             rel=1e-3)
  apex = float(trajectory.bodies.position[:, 0, 2].max())
  assert apex == pytest.approx((v0 * np.sin(angle))**2 / (2 * G), rel=1e-3)


def _spinning_box_drift(dt, duration=10.0):
  world = rj.World()
  world.setGravity([0, 0, 0])
  world.setTimeStep(dt)
  box = world.addBox(1.0, 0.4, 0.1, 1.0)  # intermediate principal axis: body y
  box.setAngularVelocity([0.01, 5.0, 0.01])
  model, state = world.compile()
  energy0 = single_body.kinetic_energy(model, state)[0]
  momentum0 = single_body.angular_momentum(model, state)[0]
  _, trajectory = jax.jit(rj.rollout, static_argnums=2)(model, state, int(round(duration / dt)))
  energy = jax.vmap(single_body.kinetic_energy, (None, 0))(model, trajectory)[:, 0]
  momentum = jax.vmap(single_body.angular_momentum, (None, 0))(model, trajectory)[:, 0]
  y_axis_along_momentum = quat.to_matrix(trajectory.bodies.quaternion[:, 0])[:, :, 1] @ (
      momentum0 / jnp.linalg.norm(momentum0))
  energy_drift = float(jnp.max(jnp.abs(energy / energy0 - 1)))
  momentum_drift = float(jnp.max(jnp.linalg.norm(momentum - momentum0, axis=-1))
                         / jnp.linalg.norm(momentum0))
  return energy_drift, momentum_drift, np.asarray(y_axis_along_momentum)


# Largest relative energy drift over 10 s, about 10x what the integrator achieves (measured
# 4.7e-8, 1.5e-9, 4.2e-11 for dt = 4, 2, 1 ms): the implicit midpoint rule conserves the kinetic
# energy exactly, so the drift is the residual of its fixed number of fixed-point iterations.
ENERGY_DRIFT_BOUND = {4e-3: 5e-7, 2e-3: 2e-8, 1e-3: 5e-10}
# Angular momentum is conserved exactly; measured 0.6-2.3e-12 relative (round-off over the steps).
MOMENTUM_DRIFT_BOUND = 2e-11


def test_intermediate_axis_flip_conserves_energy_and_angular_momentum():
  drifts = {}
  for dt in (4e-3, 2e-3, 1e-3):
    energy_drift, momentum_drift, y_axis = _spinning_box_drift(dt)
    drifts[dt] = energy_drift
    assert energy_drift < ENERGY_DRIFT_BOUND[dt], (dt, energy_drift)
    assert momentum_drift < MOMENTUM_DRIFT_BOUND, (dt, momentum_drift)
    # The Dzhanibekov flip: the spin axis turns over (y along L goes from +1 to about -1).
    assert y_axis[0] > 0.99 and y_axis.min() < -0.99
  # The fixed-point residual falls fast with dt (measured ~32x per halving): at least 8x.
  assert drifts[2e-3] <= drifts[4e-3] / 8
  assert drifts[1e-3] <= drifts[2e-3] / 8


def test_kinematic_body_keeps_velocity_and_static_body_never_moves():
  world = rj.World()
  world.setTimeStep(1e-2)
  belt = world.addBox(1, 1, 0.1, 1.0)
  belt.setBodyType(rj.BodyType.KINEMATIC)
  belt.setVelocity([1.0, 0, 0], [0, 0, 0.5])
  pillar = world.addBox(1, 1, 1, 1.0)
  pillar.setPosition(5, 0, 0)
  pillar.setBodyType(rj.BodyType.STATIC)
  pillar.setExternalForce(0, [100.0, 0, 0])
  ground = world.addGround()
  for _ in range(100):
    world.integrate()
  np.testing.assert_allclose(belt.getLinearVelocity(), [1, 0, 0], atol=1e-12)
  np.testing.assert_allclose(belt.getAngularVelocity(), [0, 0, 0.5], atol=1e-12)
  np.testing.assert_allclose(belt.getPosition(), [1.0, 0, 0], atol=1e-12)
  # It turned 0.5 rad about z.
  yaw = np.arctan2(belt.getRotationMatrix()[1, 0], belt.getRotationMatrix()[0, 0])
  assert yaw == pytest.approx(2 * np.arctan(0.5 * 1e-2 / 2) * 100, abs=1e-12)
  np.testing.assert_array_equal(pillar.getPosition(), [5, 0, 0])
  np.testing.assert_array_equal(pillar.getLinearVelocity(), [0, 0, 0])
  np.testing.assert_array_equal(ground.getPosition(), [0, 0, 0])


def test_external_force_and_torque_apply_for_one_step_then_clear():
  world = rj.World()
  world.setGravity([0, 0, 0])
  dt = 1e-2
  world.setTimeStep(dt)
  ball = world.addSphere(0.5, 2.0)
  ball.setExternalForce(0, [4.0, 0, 0])
  ball.setExternalTorque(0, [0, 0, 0.3])
  world.integrate()
  np.testing.assert_allclose(ball.getLinearVelocity(), [4.0 / 2.0 * dt, 0, 0], atol=1e-14)
  inertia = 0.4 * 2.0 * 0.25
  np.testing.assert_allclose(ball.getAngularVelocity(), [0, 0, 0.3 * dt / inertia], atol=1e-14)
  np.testing.assert_array_equal(ball.getExternalForce(), [0, 0, 0])
  world.integrate()
  np.testing.assert_allclose(ball.getLinearVelocity(), [4.0 / 2.0 * dt, 0, 0], atol=1e-14)


def test_force_at_a_world_point_produces_the_moment_about_the_com():
  world = rj.World()
  world.setGravity([0, 0, 0])
  dt = 1e-3
  world.setTimeStep(dt)
  box = world.addBox(2, 1, 1, 3.0)
  box.setExternalForce(0, [0, 0, 1.0], [0, 6.0, 0])  # at x = 1 (the +x face), along y
  world.integrate()
  np.testing.assert_allclose(box.getLinearVelocity(), [0, 2.0 * dt, 0], atol=1e-14)
  izz = 3.0 * (4 + 1) / 12
  # torque = r x F = (0, 0, 1) x (0, 6, 0) = (-6, 0, 0)
  ixx = 3.0 * (1 + 1) / 12
  np.testing.assert_allclose(box.getAngularVelocity(), [-6.0 * dt / ixx, 0, 0], rtol=1e-6)
  del izz


def test_linear_damping_decays_velocity_exponentially():
  world = rj.World()
  world.setGravity([0, 0, 0])
  dt = 1e-4
  world.setTimeStep(dt)
  ball = world.addSphere(0.5, 2.0)
  ball.setLinearDamping(1.0)
  ball.setLinearVelocity([1.0, 0, 0])
  model, state = world.compile()
  final, _ = jax.jit(rj.rollout, static_argnums=2)(model, state, 10000)
  # m dv/dt = -c v  ->  v = exp(-c t / m)
  assert float(final.bodies.linear_velocity[0, 0]) == pytest.approx(np.exp(-0.5), rel=1e-4)


def test_angular_damping_decays_spin():
  world = rj.World()
  world.setGravity([0, 0, 0])
  dt = 1e-4
  world.setTimeStep(dt)
  ball = world.addSphere(0.5, 2.0)
  ball.setAngularDamping([0.2, 0.2, 0.2])
  ball.setAngularVelocity([0, 0, 1.0])
  model, state = world.compile()
  final, _ = jax.jit(rj.rollout, static_argnums=2)(model, state, 10000)
  inertia = 0.4 * 2.0 * 0.25
  assert float(final.bodies.angular_velocity[0, 2]) == pytest.approx(np.exp(-0.2 / inertia),
                                                                     rel=1e-3)


def test_inertia_of_shapes_matches_textbook_formulas():
  world = rj.World()
  m = 2.0
  np.testing.assert_allclose(world.addSphere(0.5, m).getInertiaMatrix_B(),
                             np.eye(3) * 0.4 * m * 0.25)
  np.testing.assert_allclose(world.addBox(1, 2, 3, m).getInertiaMatrix_B(),
                             np.diag([13, 10, 5]) * m / 12)
  np.testing.assert_allclose(world.addCylinder(0.5, 2, m).getInertiaMatrix_B(),
                             np.diag([m * (0.75 + 4) / 12, m * (0.75 + 4) / 12, m * 0.125]))
  np.testing.assert_allclose(world.addCone(0.5, 2, m).getInertiaMatrix_B(),
                             np.diag([3 / 20 * m * 0.25 + 3 / 80 * m * 4] * 2 + [0.3 * m * .25]))
  # A capsule of zero-length cylinder is a sphere.
  capsule = world.addCapsule(0.5, 1e-12, m)
  np.testing.assert_allclose(capsule.getInertiaMatrix_B(), np.eye(3) * 0.4 * m * 0.25,
                             rtol=1e-9)
  # Capsule inertia by Monte-Carlo integration of the solid.
  rng = np.random.default_rng(0)
  r, h = 0.3, 1.0
  points = rng.uniform([-r, -r, -h / 2 - r], [r, r, h / 2 + r], size=(400000, 3))
  axis_distance = np.maximum(np.abs(points[:, 2]) - h / 2, 0)
  inside = points[:, 0]**2 + points[:, 1]**2 + axis_distance**2 <= r * r
  p = points[inside]
  ixx = m * np.mean(p[:, 1]**2 + p[:, 2]**2)
  izz = m * np.mean(p[:, 0]**2 + p[:, 1]**2)
  inertia = world.addCapsule(r, h, m).getInertiaMatrix_B()
  assert inertia[0, 0] == pytest.approx(ixx, rel=1e-2)
  assert inertia[2, 2] == pytest.approx(izz, rel=1e-2)


def test_float32_compiles_and_stays_float32():
  world = rj.World(dtype=jnp.float32)
  world.addBox(1, 1, 1, 1.0).setAngularVelocity([0.1, 2.0, 0.1])
  model, state = world.compile()
  new = jax.jit(rj.step)(model, state)
  for leaf in jax.tree.leaves(new):
    if jnp.issubdtype(leaf.dtype, jnp.floating):
      assert leaf.dtype == jnp.float32

"""Sleeping islands (world.txt, "Sleeping islands"; rules in raisim_jax/dynamics/sleeping.py).

Oracles: the spec's counting rule (an island sleeps once every body in it stayed below both
velocity thresholds for quietSteps consecutive steps), closed-form free flight and free fall
for the bodies that must stay awake, and exactness (a sleeping body's pose does not change by
a single bit; its velocity is zero)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import raisim_jax as rj
from tests import world_steps

G = 9.81


def _stack(quiet_steps=None, dt=1e-3):
  """Three 0.5 x 0.5 x 0.2 m boxes stacked exactly at rest on the ground."""
  world = rj.World()
  world.setTimeStep(dt)
  world.addGround()
  if quiet_steps is not None:
    world.setSleepingParameters(0.002, 0.01, quiet_steps)
  boxes = []
  for k in range(3):
    box = world.addBox(0.5, 0.5, 0.2, 1.0)
    box.setPosition(0, 0, 0.1 + 0.2 * k)
    boxes.append(box)
  return world, boxes


def _roll(world, steps):
  model, state = world.compile()
  final, trajectory = jax.jit(rj.rollout, static_argnums=2)(model, state, steps)
  world.setState(final)
  return trajectory


@pytest.mark.parametrize("quiet_steps", [2, 5])
def test_a_resting_stack_sleeps_after_quiet_steps_and_holds_its_pose_exactly(quiet_steps):
  world, boxes = _stack(quiet_steps)
  trajectory = _roll(world, 50)
  asleep = np.asarray(trajectory.bodies.sleeping[:, 1:4])
  # The counters reach quiet_steps after `quiet_steps` quiet steps; the next step sleeps.
  assert not asleep[:quiet_steps].any()
  assert asleep[quiet_steps:].all()
  position = np.asarray(trajectory.bodies.position[:, 1:4])
  quaternion = np.asarray(trajectory.bodies.quaternion[:, 1:4])
  assert np.array_equal(position[quiet_steps:], np.broadcast_to(position[quiet_steps],
                                                                 position[quiet_steps:].shape))
  assert np.array_equal(quaternion[quiet_steps:], np.broadcast_to(
      quaternion[quiet_steps], quaternion[quiet_steps:].shape))
  assert not np.asarray(trajectory.bodies.linear_velocity[quiet_steps:, 1:4]).any()
  assert not np.asarray(trajectory.bodies.angular_velocity[quiet_steps:, 1:4]).any()
  # Asleep, the contact solve has nothing left to do; the contacts stay reported.
  assert not np.asarray(trajectory.solver_iterations[quiet_steps:]).any()
  assert all(world.isObjectSleeping(box) for box in boxes)
  assert len(world.getContactProblem()) >= 12


def test_a_body_at_the_top_of_its_flight_never_sleeps():
  """dt = 1e-4 s: a ball thrown straight up stays below 0.002 m/s for ~4 steps at its apex.
  Touching nothing static, it must not sleep; its height follows semi-implicit Euler's closed
  form z_k = z0 + v0 k dt - g dt^2 k (k + 1) / 2."""
  world = rj.World()
  world.setTimeStep(1e-4)
  world.addGround()
  ball = world.addSphere(0.1, 1.0)
  ball.setPosition(0, 0, 1.0)
  ball.setVelocity([0, 0, 0.5], [0, 0, 0])
  steps = 1000                       # 0.1 s: the apex is at 0.051 s
  trajectory = _roll(world, steps)
  assert not np.asarray(trajectory.bodies.sleeping).any()
  k = np.arange(1, steps + 1)
  expected = 1.0 + 0.5 * k * 1e-4 - G * 1e-8 * k * (k + 1) / 2
  np.testing.assert_allclose(np.asarray(trajectory.bodies.position[:, 1, 2]), expected,
                             atol=1e-12)


def test_an_impact_wakes_the_island_and_it_sleeps_again_once_settled():
  world, boxes = _stack()
  world.integrate()
  for _ in range(5):
    world.integrate()
  assert all(world.isObjectSleeping(box) for box in boxes)
  ball = world.addSphere(0.1, 2.0)
  ball.setPosition(0.1, 0.0, 0.9)      # 0.2 m above the top box
  model, state = world.compile()
  final, trajectory = jax.jit(rj.rollout, static_argnums=2)(model, state, 600)
  world.setState(final)
  asleep = np.asarray(trajectory.bodies.sleeping[:, 1:5])
  contacts = trajectory.contacts
  touches = np.asarray(contacts.active & ((contacts.body_a == 4) | (contacts.body_b == 4)))
  contact = np.argmax(touches.any(axis=1))       # the first step with a contact of the ball
  # Free fall from 0.9 m reaches the top face (0.7 m) after sqrt(2 * 0.2 / g) = 0.202 s.
  assert abs(contact * 1e-3 - np.sqrt(0.4 / G)) < 3e-3
  assert not asleep[contact].any()          # the ball's island includes the whole stack
  assert asleep[-1].all()                   # ... and the settled island sleeps again
  assert float(final.bodies.position[4, 2]) == pytest.approx(0.7, abs=1e-3)


def test_edits_forces_and_wake_calls_wake_the_island():
  world, boxes = _stack()
  for _ in range(4):
    world.integrate()
  assert world.isObjectSleeping(boxes[0])
  # wakeObject wakes the whole island for quietSteps steps (2), then it sleeps again.
  world.wakeObject(boxes[2])
  assert not world.isObjectSleeping(boxes[2])
  world.integrate()
  assert not any(world.isObjectSleeping(box) for box in boxes)
  world.integrate()
  world.integrate()
  assert all(world.isObjectSleeping(box) for box in boxes)
  world.wakeAll()
  world.integrate()
  assert not any(world.isObjectSleeping(box) for box in boxes)
  for _ in range(2):
    world.integrate()
  # A pose edit wakes: the top box lifted by 5 cm falls freely (closed form) onto the stack.
  boxes[2].setPosition(0, 0, 0.55)
  world.integrate()
  assert not world.isObjectSleeping(boxes[2])
  assert boxes[2].getPosition()[2] == pytest.approx(0.55 - G * 1e-6, abs=1e-12)
  for _ in range(300):
    world.integrate()
  assert boxes[2].getPosition()[2] == pytest.approx(0.5, abs=1e-3)
  assert all(world.isObjectSleeping(box) for box in boxes)
  # A sustained horizontal push larger than friction (0.8 * 9.81 N) slides the top box.
  for _ in range(100):
    boxes[2].setExternalForce(0, [20.0, 0, 0])
    world.integrate()
  assert not world.isObjectSleeping(boxes[2])
  assert boxes[2].getPosition()[0] > 0.01
  # setGravity wakes everything.
  for _ in range(300):
    world.integrate()
  world.setGravity([0, 0, -9.81])
  assert not any(world.isObjectSleeping(box) for box in boxes)


def test_disabled_sleeping_never_sleeps_and_toggling_reuses_the_compiled_step():
  world_steps.clear()
  world, boxes = _stack()
  world.setSleepingEnabled(False)
  assert not world.isSleepingEnabled()
  for _ in range(10):
    world.integrate()
  assert not any(world.isObjectSleeping(box) for box in boxes)
  assert world.getContactSolverIterations() >= 1
  compiled = world_steps.compiled()    # the plain step, and the step with the block move
  world.setSleepingEnabled(True)
  world.setSleepingParameters(0.01, 0.05, 3)
  for _ in range(4):
    world.integrate()
  assert all(world.isObjectSleeping(box) for box in boxes)
  assert world_steps.compiled() == compiled <= 2
  settings = world.getSleepingParameters()
  assert (settings.enabled, settings.linear_threshold, settings.angular_threshold,
          settings.quiet_steps) == (True, 0.01, 0.05, 3)


def test_a_box_on_a_moving_kinematic_belt_stays_awake_and_rides_it():
  world = rj.World()
  world.setTimeStep(1e-3)
  world.addGround()
  belt = world.addBox(4.0, 1.0, 0.1, 1.0)
  belt.setBodyType(rj.BodyType.KINEMATIC)
  belt.setPosition(0, 0, 0.5)
  belt.setVelocity([0.001, 0, 0], [0, 0, 0])     # slower than the linear threshold
  box = world.addBox(0.2, 0.2, 0.2, 1.0)
  box.setPosition(0, 0, 0.65)
  for _ in range(500):
    world.integrate()
  assert not world.isObjectSleeping(box)
  # Static friction carries the box with the belt: 0.5 s at 1 mm/s.
  assert box.getPosition()[0] == pytest.approx(0.0005, abs=5e-5)


def test_bad_sleeping_parameters_name_the_argument():
  world = rj.World()
  with pytest.raises(ValueError, match="quietSteps"):
    world.setSleepingParameters(0.002, 0.01, 0)
  with pytest.raises(ValueError, match="quietSteps"):
    world.setSleepingParameters(0.002, 0.01, 1.5)
  with pytest.raises(ValueError, match="linearVelThreshold"):
    world.setSleepingVelocityThresholds(-1.0, 0.01)
  with pytest.raises(ValueError, match="angularVelThreshold"):
    world.setSleepingParameters(0.002, float("nan"), 2)


def test_batched_worlds_sleep_independently_and_gradients_stay_finite():
  """vmap over worlds: a world whose top box is pushed stays awake while the others sleep;
  the gradient of a rollout through sleeping steps is finite, and the sleeping top box's
  final height does not depend on its start velocity (zero derivative), while the pushed
  box's horizontal position does (d x / d v0 = time until friction stops it > 0)."""
  world, _ = _stack()
  model, state = world.compile()
  batch = rj.batching.replicate(state, 3)
  push = jnp.zeros((3,) + state.bodies.linear_velocity.shape).at[1, 3, 0].set(0.5)
  batch = batch.replace(bodies=batch.bodies.replace(
      linear_velocity=batch.bodies.linear_velocity + push))
  final = jax.jit(jax.vmap(lambda s: rj.rollout(model, s, 30)[0]))(batch)
  asleep = np.asarray(final.bodies.sleeping[:, 1:4])
  assert asleep[0].all() and asleep[2].all() and not asleep[1, 2]

  def top_x(v0):
    s = state.replace(bodies=state.bodies.replace(
        linear_velocity=state.bodies.linear_velocity.at[3, 0].set(v0)))
    return rj.rollout(model, s, 30)[0].bodies.position[3, 0]

  gradient = jax.jit(jax.grad(top_x))     # one program for both (eagerly: compiled twice)
  moving = gradient(jnp.asarray(0.5))
  resting = gradient(jnp.asarray(0.0))
  assert np.isfinite(float(moving)) and float(moving) > 0.0
  assert np.isfinite(float(resting))

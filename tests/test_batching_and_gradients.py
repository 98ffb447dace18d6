"""vmap over worlds and models, and gradients through the step (float64)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import raisim_jax as rj
from tests.jaxpr_walk import equations


def _tumbling_world():
  world = rj.World()
  world.setTimeStep(1e-2)
  world.addBox(1.0, 0.4, 0.1, 1.0)
  world.addCapsule(0.2, 0.5, 2.0).setPosition(10, 0, 0)  # apart: no contacts
  return world.compile()


def test_vmap_over_1000_states_equals_sequential_steps():
  model, state = _tumbling_world()
  n = 1000
  rng = np.random.default_rng(0)
  quats = rng.normal(size=(n, 2, 4))
  quats /= np.linalg.norm(quats, axis=-1, keepdims=True)
  batch = jax.tree.map(lambda x: jnp.broadcast_to(x, (n,) + x.shape), state)
  # Rows 0 and 1 are the two bodies (the World's compiled state pads rows after them).
  bodies = batch.bodies
  batch = batch.replace(bodies=bodies.replace(
      # the two bodies stay 10 m apart: this is the contact-free Newton-Euler path
      position=bodies.position.at[:, :2].set(
          rng.normal(size=(n, 2, 3)) + np.array([[0, 0, 0], [10, 0, 0]])),
      quaternion=bodies.quaternion.at[:, :2].set(quats),
      linear_velocity=bodies.linear_velocity.at[:, :2].set(rng.normal(size=(n, 2, 3))),
      angular_velocity=bodies.angular_velocity.at[:, :2].set(rng.normal(size=(n, 2, 3)) * 3)))
  batched = jax.jit(jax.vmap(rj.step, in_axes=(None, 0)))(model, batch)
  single = jax.jit(rj.step)
  for i in range(n):
    one = single(model, jax.tree.map(lambda x: x[i], batch))
    for a, b in zip(jax.tree.leaves(one), jax.tree.leaves(batched)):
      np.testing.assert_allclose(np.asarray(b[i]), np.asarray(a), rtol=1e-12, atol=1e-12)


def test_vmap_over_models_with_different_masses():
  world = rj.World()
  world.setGravity([0, 0, 0])
  world.setTimeStep(0.1)
  world.addSphere(0.5, 1.0)
  model, state = world.compile()
  masses = jnp.array([1.0, 2.0, 4.0])
  models = model.replace(bodies=model.bodies.replace(mass=masses[:, None]))
  axes = jax.tree.map(lambda _: None, model)
  axes = axes.replace(bodies=axes.bodies.replace(mass=0))
  rows = model.num_bodies   # the sphere, then the World's padding rows
  control = rj.Control(body_force=jnp.zeros((rows, 3)).at[0].set([8.0, 0, 0]),
                       body_torque=jnp.zeros((rows, 3)))
  out = jax.vmap(rj.step, in_axes=(axes, None, None))(models, state, control)
  np.testing.assert_allclose(out.bodies.linear_velocity[:, 0, 0], 0.1 * 8.0 / masses,
                             rtol=1e-14)


def test_grad_of_height_after_100_steps_wrt_initial_vertical_velocity():
  world = rj.World()
  dt = 1e-2
  world.setTimeStep(dt)
  ball = world.addSphere(0.1, 1.0)
  ball.setPosition(0, 0, 1.0)
  model, state = world.compile()

  def height_after(vz):
    s = state.replace(bodies=state.bodies.replace(
        linear_velocity=state.bodies.linear_velocity.at[0, 2].set(vz)))
    final, _ = rj.rollout(model, s, 100)
    return final.bodies.position[0, 2]

  value_and_grad = jax.jit(jax.value_and_grad(height_after))   # one program for both
  grad = value_and_grad(0.7)[1]
  assert float(grad) == pytest.approx(100 * dt, rel=1e-12)  # z = z0 + vz t - ...
  eps = 1e-6
  fd = (value_and_grad(0.7 + eps)[0] - value_and_grad(0.7 - eps)[0]) / (2 * eps)
  assert float(grad) == pytest.approx(float(fd), rel=1e-7)


def test_grad_with_respect_to_mass_and_rotation_is_finite_and_matches_fd():
  model, state = _tumbling_world()
  state = state.replace(bodies=state.bodies.replace(
      angular_velocity=state.bodies.angular_velocity.at[:2].set([[0.1, 3.0, 0.2],
                                                                 [1.0, 0.0, 0.5]])))
  zeros = jnp.zeros((model.num_bodies, 3))
  control = rj.Control(body_force=zeros.at[0].set([1.0, 0, 0]),
                       body_torque=zeros.at[:2].set([[0, 0, 0.3], [0.1, 0, 0]]))

  def loss(mass):
    m = model.replace(bodies=model.bodies.replace(mass=model.bodies.mass.at[0].set(mass)))
    final, _ = rj.rollout(m, state, 20, jax.tree.map(
        lambda x: jnp.broadcast_to(x, (20,) + x.shape), control))
    return final.bodies.position[0, 0] + final.bodies.quaternion[0, 1]

  value_and_grad = jax.jit(jax.value_and_grad(loss))   # one program for both
  grad = value_and_grad(1.0)[1]
  fd = (value_and_grad(1.0 + 1e-6)[0] - value_and_grad(1.0 - 1e-6)[0]) / 2e-6
  assert np.isfinite(grad)
  assert float(grad) == pytest.approx(float(fd), rel=1e-6)


def test_rollout_trajectory_has_one_entry_per_step():
  model, state = _tumbling_world()
  final, trajectory = rj.rollout(model, state, 7)
  assert trajectory.bodies.position.shape == (7, model.num_bodies, 3)
  np.testing.assert_allclose(trajectory.bodies.position[-1], final.bodies.position)
  assert float(final.time) == pytest.approx(0.07)


def _newton_scans(jaxpr):
  """Number of Newton-step while loops of the block move (named island_block.NEWTON_SCOPE)
  in `jaxpr` and its sub-jaxprs."""
  from raisim_jax.dynamics import island_block
  return sum(eqn.primitive.name == "while"
             and island_block.NEWTON_SCOPE in str(eqn.source_info.name_stack)
             for eqn in equations(jaxpr))


def test_a_rollout_gradient_runs_the_block_moves_newton_steps_only_forward():
  """Reverse mode through `rollout` recomputes each step (and each block move) from what it
  kept, which includes the root of the move's Newton solve: the gradient's program holds the
  Newton iterations of the forward pass only (one scan per branch of the move), where it
  held three (forward, the step's recompute, the move's recompute). Their values carry no
  derivative (island_block.correction), so running them again was pure cost."""
  world = rj.World()
  world.addGround()
  box = world.addBox(0.2, 0.2, 0.2, 1.0)
  box.setPosition(0, 0, 0.1)
  model, state = world.compile()

  def loss(velocity):
    start = rj.tree_replace(state, {"bodies.linear_velocity": velocity})
    return jnp.sum(rj.rollout(model, start, 2)[0].bodies.position ** 2)

  velocity = state.bodies.linear_velocity
  forward = _newton_scans(jax.make_jaxpr(loss)(velocity).jaxpr)
  assert forward >= 1
  assert _newton_scans(jax.make_jaxpr(jax.grad(loss))(velocity).jaxpr) == forward

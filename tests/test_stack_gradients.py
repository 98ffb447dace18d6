"""Gradients through exactly aligned box stacks (#9 item 2): autodiff equals central finite
differences where the contact set does not change.

The oracle is float64 central differences. The solver runs to `threshold = 0` (every sweep up
to the cap) in the sliding case: with the default early exit the trajectory is piecewise
smooth in the iteration count, and differences at 1e-6 measure those jumps, not the slope."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import raisim_jax as rj
from raisim_jax.compile import with_solver_settings


def _aligned_stack(top):
  """(model, state): a 0.2 m cube resting on the ground and a cube of edge `top` resting
  centred on it, both exactly aligned with the world axes."""
  world = rj.World()
  world.addGround()
  world.addBox(0.2, 0.2, 0.2, 1.0).setPosition(0, 0, 0.1)
  world.addBox(top, top, top, 1.0).setPosition(0, 0, 0.2 + top / 2)
  return world.compile()


def _final(model, state, steps):
  """(26,) positions, quaternions, linear and angular velocities of both boxes after
  `steps` steps."""
  final, _ = rj.rollout(model, state, steps)
  b = final.bodies
  return jnp.concatenate([b.position[:2].ravel(), b.quaternion[:2].ravel(),
                          b.linear_velocity[:2].ravel(), b.angular_velocity[:2].ravel()])


def _central_difference(f, x, h):
  return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize("top", [0.2, 0.15])
def test_shifting_the_lower_box_of_a_resting_aligned_stack(top):
  """d(state after 100 steps)/d(lower box y), reverse mode: the stack is translation
  invariant, so only the lower box's y moves (the issue measured entries up to 4.9 here)."""
  model, state = _aligned_stack(top)

  def final(dy):
    position = state.bodies.position.at[0, 1].add(dy)
    return _final(model, state.replace(bodies=state.bodies.replace(position=position)), 100)

  autodiff = jax.jit(jax.jacrev(final))(0.0)
  fd = _central_difference(jax.jit(final), 0.0, 1e-5)
  expected = np.zeros(26)
  expected[1] = 1.0
  np.testing.assert_allclose(fd, expected, atol=1e-9)
  np.testing.assert_allclose(autodiff, expected, atol=1e-9)


@pytest.mark.parametrize("top", [0.2, 0.15])
def test_upper_box_sliding_to_rest_on_an_aligned_stack(top):
  """d(state after 60 steps)/d(initial speed of the upper box, 0.3 m/s along x, spinning at
  1 rad/s), forward mode: it slides, sticks after ~40 steps and rests. Nonzero slopes of
  position, tilt and velocities; autodiff equals central differences at 1e-6."""
  model, state = _aligned_stack(top)
  model = with_solver_settings(model, threshold=0.0)
  velocity = state.bodies.linear_velocity.at[1, 0].set(0.3)
  spin = state.bodies.angular_velocity.at[1, 2].set(1.0)
  state = state.replace(bodies=state.bodies.replace(linear_velocity=velocity,
                                                    angular_velocity=spin))

  def final(dv):
    v = state.bodies.linear_velocity.at[1, 0].add(dv)
    return _final(model, state.replace(bodies=state.bodies.replace(linear_velocity=v)), 60)

  autodiff = np.asarray(jax.jit(jax.jacfwd(final))(0.0))
  f = jax.jit(final)
  fd = np.asarray(_central_difference(f, 0.0, 1e-6))
  assert np.max(np.abs(fd)) > 1e-2        # the slope is not trivially zero
  assert np.max(np.abs(fd - _central_difference(f, 0.0, 1e-4))) < 2e-5   # one contact mode
  np.testing.assert_allclose(autodiff, fd, atol=1e-7)

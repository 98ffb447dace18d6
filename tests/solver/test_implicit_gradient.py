"""Derivatives of the contact solve by the implicit function theorem (#12 6(b),
`SolverModel.gradient = "implicit"`): the primal is the early-exit solve, and the converged
impulses carry the fixed point's derivative (`gauss_seidel._with_implicit_derivative`).
Oracles: float64 central finite differences where the contact mode does not change and the
velocities are unique, and the sweeps-unrolled derivative (the default) of a solve run to
convergence."""

import contextlib
import io

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.ad_checkpoint import print_saved_residuals

import raisim_jax as rj
from raisim_jax.dynamics import gauss_seidel
from tests.legged import scenarios


def _sliding_box_world(gradient="implicit"):
  """A box on its 4 corner contacts (statically indeterminate: 4 normal rows, 3 constrained
  motions) sliding along x and y without turning, friction 0.5: it slides the whole time,
  and its velocities do not depend on how the load spreads over the corners (float64).
  Also a sphere sliding and spinning next to it."""
  world = rj.World()
  world.setTimeStep(2e-3)
  world.setDefaultMaterial(0.5, 0.0, 0.0)
  world.addGround()
  box = world.addBox(0.3, 0.2, 0.1, 2.0)
  box.setPosition(0.0, 0.0, 0.05)
  box.setVelocity([1.5, 0.2, 0.0], [0.0, 0.0, 0.0])
  sphere = world.addSphere(0.1, 1.0)
  sphere.setPosition(1.0, 0.0, 0.1)
  sphere.setVelocity([0.5, -0.3, 0.0], [2.0, 0.0, 1.0])
  world.setContactSolverGradient(gradient)
  return world.compile()


def _final_pose(model, state, steps):
  """Function of the box's initial linear velocity (3,): (position, linear and angular
  velocity of the box, then of the sphere) (18,) after `steps` steps."""
  def final(velocity):
    start = state.replace(bodies=state.bodies.replace(
        linear_velocity=state.bodies.linear_velocity.at[1].set(velocity)))
    end = rj.rollout(model, start, steps)[0].bodies
    return jnp.concatenate([end.position[1], end.linear_velocity[1], end.angular_velocity[1],
                            end.position[2], end.linear_velocity[2], end.angular_velocity[2]])
  return final


def _central_differences(values, x, h=1e-6):
  """(len(values(x)), len(x)) central differences of `values`, a compiled function (it is
  called, not traced: the tests pass one that also gives a derivative, so that no separate
  forward program compiles)."""
  return np.stack([(np.asarray(values(x.at[k].add(h))) - np.asarray(values(x.at[k].add(-h))))
                   / (2 * h) for k in range(x.shape[0])], axis=1)


def test_sliding_box_reverse_and_forward_mode_match_finite_differences():
  model, state = _sliding_box_world()
  assert model.solver.gradient == "implicit"
  final = _final_pose(model, state, 40)
  v0 = state.bodies.linear_velocity[1]
  reverse = np.asarray(jax.jit(jax.jacrev(final))(v0))     # (18, 3)

  def final_twice(velocity):
    value = final(velocity)
    return value, value

  forward_and_final = jax.jit(jax.jacfwd(final_twice, has_aux=True))
  forward = np.asarray(forward_and_final(v0)[0])
  fd = _central_differences(lambda v: forward_and_final(v)[1], v0)
  assert np.abs(fd).max() > 0.1
  # 2e-5: the corner loads the sweeps end on depend on their path, and through the
  # friction's moments a little of that reaches the box's yaw rate (8.7e-7 in the
  # differences, exactly 0 in the fixed point's derivative; docs/contact_solver.md).
  np.testing.assert_allclose(reverse, fd, atol=2e-5)
  np.testing.assert_allclose(forward, reverse, atol=1e-10)
  # The sweeps-unrolled derivative (the default) is the same derivative, as closely.
  unrolled, _ = _sliding_box_world("unrolled")
  assert unrolled.solver.gradient == "unrolled"
  np.testing.assert_allclose(
      reverse, np.asarray(jax.jit(jax.jacrev(_final_pose(unrolled, state, 40)))(v0)),
      atol=2e-5)
  sphere = slice(9, 18)                  # one contact: its solution is unique, and exact
  np.testing.assert_allclose(reverse[sphere], fd[sphere], atol=1e-8)


def test_gradient_wrt_friction_matches_finite_differences():
  """A Model leaf: d(final x of the sliding box)/d(friction coefficient of the pair)."""
  model, state = _sliding_box_world()

  def final_x(mu):
    table = model.solver.pair_table.at[..., 0].set(mu)
    m = model.replace(solver=model.solver.replace(pair_table=table))
    return rj.rollout(m, state, 40)[0].bodies.position[1, 0]

  value_and_grad = jax.jit(jax.value_and_grad(final_x))
  grad = float(value_and_grad(0.5)[1])
  h = 1e-6
  fd = (float(value_and_grad(0.5 + h)[0]) - float(value_and_grad(0.5 - h)[0])) / (2 * h)
  assert fd < -0.01                                  # more friction, shorter slide
  assert grad == pytest.approx(fd, rel=1e-6)


def test_held_by_static_friction_the_derivative_is_zero():
  """tests/solver/test_static_friction.py's box held by static friction under a push of
  0.99 mu m g, in implicit mode: its primal converges by the island block move, and the
  linear solve must reach the zero derivative that the plain sweeps' linear iteration
  approaches too slowly (1e-7 left after 150 steps)."""
  from tests.solver import test_static_friction as held

  mu = 0.5
  model, state = held._pushed_box(mu)
  model = model.replace(solver=model.solver.replace(gradient="implicit"))
  state = held._push_then(model, state, 0.99 * mu * held.GRAVITY, 20)

  def velocities(force):
    after = rj.step(model, state, held._push_control(model, force))
    return jnp.concatenate([after.bodies.linear_velocity[1], after.bodies.angular_velocity[1]])

  derivative = np.asarray(jax.jit(jax.jacrev(velocities))(0.99 * mu * held.GRAVITY))
  np.testing.assert_allclose(derivative, 0.0, atol=1e-9)


def test_standing_quadruped_pd_target_gradient_matches_finite_differences():
  """A robot on its 4 feet (contacts with links, sticking) under PD: d(base height and
  pitch after 20 steps)/d(knee targets), reverse mode, from a settled stance."""
  world, robot, nominal, feet = scenarios.standing_world("quadruped", jnp.float64)
  world.setContactSolverGradient("implicit")
  model, state = world.compile()
  settle = model.replace(solver=model.solver.replace(differentiable=False))
  state = jax.jit(lambda s: rj.rollout(settle, s, 400)[0])(state)
  assert int(jnp.sum(state.contacts.active)) >= 4

  def pose(knee_offset):
    system = state.articulated[0]
    s = state.replace(articulated=(system.replace(
        p_target=system.p_target.at[np.array([9, 12, 15, 18])].add(knee_offset)),))
    gc = rj.rollout(model, s, 20)[0].articulated[0].generalized_coordinate
    return gc[jnp.array([0, 2, 5])]

  # One program gives the Jacobian and, as its auxiliary output, the pose the differences
  # take (a separate forward program cost another ~50 s of compile).
  def pose_twice(knee_offset):
    value = pose(knee_offset)
    return value, value

  jacobian_and_pose = jax.jit(jax.jacrev(pose_twice, has_aux=True))
  jacobian = np.asarray(jacobian_and_pose(0.0)[0])
  h = 1e-6
  fd = (np.asarray(jacobian_and_pose(h)[1]) - np.asarray(jacobian_and_pose(-h)[1])) / (2 * h)
  assert np.all(np.isfinite(jacobian)) and np.abs(fd).max() > 1e-3
  np.testing.assert_allclose(jacobian, fd, rtol=1e-5, atol=1e-8)


def test_gradient_memory_does_not_grow_with_the_sweep_cap():
  """Reverse mode stores one sweep's linearization per solve, not one carry per sweep: the
  gradient's XLA temporaries are the same at maxIter 150 and 1,200."""
  model, state = _sliding_box_world()
  v0 = state.bodies.linear_velocity[1]
  temporaries = []
  for cap in (150, 1200):
    capped = model.replace(solver=model.solver.replace(
        max_iterations=jnp.asarray(cap, jnp.int32), iteration_capacity=cap))
    loss = lambda v, capped=capped: jnp.sum(_final_pose(capped, state, 5)(v))
    compiled = jax.jit(jax.grad(loss)).lower(v0).compile()
    temporaries.append(compiled.memory_analysis().temp_size_in_bytes)
  assert temporaries[0] == temporaries[1]


def test_batched_gradient_is_finite_where_worlds_have_no_contacts():
  """Worlds of a batch with no contact (the box thrown up) next to sliding ones: padded
  slots, empty solves and the batch-wide loops give finite, per-world gradients, of the
  final pose and of a loss over every slot's impulse (inactive ones included). One function
  returns both, so the batched and the single gradient are one program each."""
  model, state = _sliding_box_world()

  def pose_and_impulses(velocity):
    start = state.replace(bodies=state.bodies.replace(
        linear_velocity=state.bodies.linear_velocity.at[1].set(velocity)))
    end = rj.rollout(model, start, 10)[0]
    pose = jnp.concatenate([end.bodies.position[1], end.bodies.linear_velocity[1],
                            end.bodies.angular_velocity[1], end.bodies.position[2],
                            end.bodies.linear_velocity[2], end.bodies.angular_velocity[2]])
    return jnp.concatenate([pose, jnp.sum(end.contacts.impulse ** 2)[None]])

  velocities = jnp.array([[1.5, 0.2, 0.0], [0.0, 0.0, 3.0], [0.5, -0.1, 0.0]])
  batched = np.asarray(jax.jit(jax.vmap(jax.jacrev(pose_and_impulses)))(velocities))
  assert batched.shape == (3, 19, 3)
  assert np.all(np.isfinite(batched))
  single_gradient = jax.jit(jax.jacrev(pose_and_impulses))
  for k in range(3):
    single = np.asarray(single_gradient(velocities[k]))
    np.testing.assert_allclose(batched[k, :18], single[:18], atol=1e-10)
  # Thrown up, out of contact: x(T) = x0 + vx T exactly.
  assert batched[1][0, 0] == pytest.approx(10 * 2e-3, rel=1e-12)


def test_world_sets_the_gradient_and_rejects_unknown_ones():
  world = rj.World()
  world.addGround()
  world.addSphere(0.1, 1.0).setPosition(0, 0, 0.099)
  assert world.compile()[0].solver.gradient == "unrolled"       # the default
  world.setContactSolverGradient("implicit")
  assert world.compile()[0].solver.gradient == "implicit"
  world.integrate()                                 # an already stepped world
  world.setContactSolverGradient("unrolled")
  assert world.compile()[0].solver.gradient == "unrolled"
  with pytest.raises(ValueError, match="setContactSolverGradient.*'adjoint'"):
    world.setContactSolverGradient("adjoint")
  assert world.compile()[0].solver.gradient == "unrolled"


def test_reverse_mode_keeps_the_converged_impulses_instead_of_rerunning_the_sweeps():
  """`rollout`'s checkpoint policy (`rj.ROLLOUT_SAVED`) saves each step's converged
  impulses (named `gauss_seidel.IMPLICIT_SOLUTION`), so reverse mode's recompute of a step
  skips the primal sweeps; the gradient is the same as without saving them."""
  model, state = _sliding_box_world()
  v0 = state.bodies.linear_velocity[1]

  def one_step(velocity):
    start = state.replace(bodies=state.bodies.replace(
        linear_velocity=state.bodies.linear_velocity.at[1].set(velocity)))
    return rj.step(model, start).bodies.linear_velocity

  saving = jax.checkpoint(one_step, policy=rj.ROLLOUT_SAVED)
  printed = io.StringIO()
  with contextlib.redirect_stdout(printed):
    print_saved_residuals(saving, v0)
  named = [line.split()[0] for line in printed.getvalue().splitlines()
           if f"named {gauss_seidel.IMPLICIT_SOLUTION!r}" in line]
  assert named == [f"f64[{model.collision.contact_capacity},3]"]
  recomputed = jax.checkpoint(one_step, policy=jax.checkpoint_policies.nothing_saveable)
  np.testing.assert_allclose(np.asarray(jax.jacrev(saving)(v0)),
                             np.asarray(jax.jacrev(recomputed)(v0)), rtol=1e-12, atol=1e-14)

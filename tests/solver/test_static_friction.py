"""Static friction holds a pushed box exactly (#9 item 4), and the island block correction
behind it (dynamics/island_block.py) is a Euclidean projection onto the friction cones.

Oracle: Coulomb's law for a rigid box on flat ground. Below mu m g a horizontal push at the
COM leaves the box at rest; above it the box accelerates at (F - mu m g) / m."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import raisim_jax as rj
from raisim_jax.dynamics import island_block

GRAVITY = 9.81
DT = 1e-3


def _pushed_box(mu):
  world = rj.World()
  world.setTimeStep(DT)
  world.addGround(material="ground")
  world.setMaterialPairProp("ground", "box", mu, 0.0, 0.0)
  world.addBox(0.5, 0.5, 0.2, 1.0, material="box").setPosition(0, 0, 0.1)
  model, state = world.compile()
  settled = jax.jit(lambda s: rj.rollout(model, s, 500)[0])(state)
  return model, settled


def _push_control(model, force):
  """Control pushing the box (body 1) along x with `force` N at its COM."""
  zeros = rj.Control.zeros(model)
  return rj.Control(body_force=zeros.body_force.at[1, 0].set(force),
                    body_torque=zeros.body_torque)


def _push(model, state, force, seconds):
  """(positions (steps, 3), velocities (steps, 3)) of the box under a constant push along x."""
  control = _push_control(model, force)

  @jax.jit
  def run(state):
    def body(s, _):
      s = rj.step(model, s, control)
      return s, (s.bodies.position[1], s.bodies.linear_velocity[1])
    return jax.lax.scan(body, state, None, length=int(round(seconds / DT)))[1]

  return tuple(np.asarray(x) for x in run(state))


@pytest.mark.parametrize("mu, fraction", [(0.5, 0.99), (0.9, 0.999)])
def test_box_pushed_below_the_friction_limit_stays_put_for_10_seconds(mu, fraction):
  model, state = _pushed_box(mu)
  position, _ = _push(model, state, fraction * mu * GRAVITY, 10.0)
  drift = np.abs(position - np.asarray(state.bodies.position[1])).max()
  assert drift < 1e-9, drift       # was 5e-7 m (mu 0.5) before the block correction


def test_box_pushed_above_the_friction_limit_slides_at_coulombs_acceleration():
  mu = 0.5
  model, state = _pushed_box(mu)
  force = 1.01 * mu * GRAVITY
  _, velocity = _push(model, state, force, 1.0)
  expected = (force - mu * GRAVITY) * 1.0          # m = 1 kg, after 1 s
  np.testing.assert_allclose(velocity[-1, 0], expected, rtol=2e-3)
  np.testing.assert_allclose(velocity[-1, 1:], 0.0, atol=1e-7)   # solver tolerance


def test_batched_pushes_hold_or_slide_per_world_as_each_world_alone():
  """vmap over the push force: the worlds below mu m g hold (block move taken), the one above
  slides at Coulomb's acceleration, and each batched world equals its unbatched run."""
  mu = 0.5
  model, state = _pushed_box(mu)
  fractions = np.asarray([0.5, 0.99, 0.999, 1.01])

  def run(state, force):
    control = _push_control(model, force)
    final = jax.lax.fori_loop(0, 1000, lambda _, s: rj.step(model, s, control), state)
    return final.bodies.position[1], final.bodies.linear_velocity[1]

  forces = jnp.asarray(fractions * mu * GRAVITY)
  batch = rj.batching.replicate(state, len(fractions))
  position, velocity = jax.jit(jax.vmap(run))(batch, forces)
  start = np.asarray(state.bodies.position[1])
  for i, fraction in enumerate(fractions):
    if fraction < 1:
      assert np.abs(np.asarray(position[i]) - start).max() < 1e-9, fraction
    else:
      expected = (fraction - 1.0) * mu * GRAVITY * 1.0      # m = 1 kg, after 1 s
      np.testing.assert_allclose(velocity[i, 0], expected, rtol=2e-3)
  one_position, one_velocity = jax.jit(run)(state, forces[2])
  np.testing.assert_allclose(position[2], one_position, rtol=0, atol=1e-12)
  np.testing.assert_allclose(velocity[2], one_velocity, rtol=0, atol=1e-12)


def test_derivative_through_the_block_move_is_that_of_the_resting_solution():
  """A box held by static friction under a push (0.99 mu m g) stays at rest whatever the
  push, so d(its velocities after the step)/d(push) is zero, in reverse mode through the
  differentiable solve. The step's solve takes the island block move (more than BLOCK_SWEEP
  sweeps; the box does not move), whose Newton solve is differentiated at its root (one
  Newton step's derivative); without that tangent the derivative is the free push dt / m
  left over (0.6e-3 m/s per N here). Oracle: statics, and central differences."""
  from raisim_jax.dynamics import gauss_seidel

  mu = 0.5
  model, state = _pushed_box(mu)
  state = _push_then(model, state, 0.99 * mu * GRAVITY, 20)

  def velocities(force):
    """The box's twist after the step, and (that twist, the step's sweeps) as aux."""
    after = rj.step(model, state, _push_control(model, force))
    twist = jnp.concatenate([after.bodies.linear_velocity[1], after.bodies.angular_velocity[1]])
    return twist, (twist, after.solver_iterations)

  # One program gives the derivative, the values for the differences and the sweep count.
  program = jax.jit(jax.jacrev(velocities, has_aux=True))
  force = 0.99 * mu * GRAVITY
  derivative, (twist, sweeps) = program(force)
  derivative = np.asarray(derivative)
  assert int(sweeps) > gauss_seidel.BLOCK_SWEEP
  np.testing.assert_allclose(np.asarray(twist), 0.0, atol=1e-12)
  h = 1e-4
  difference = (np.asarray(program(force + h)[1][0])
                - np.asarray(program(force - h)[1][0])) / (2 * h)
  np.testing.assert_allclose(difference, 0.0, atol=1e-9)
  np.testing.assert_allclose(derivative, 0.0, atol=1e-9)


def _push_then(model, state, force, steps):
  """`state` after `steps` steps under a constant push along x."""
  control = _push_control(model, force)
  return jax.jit(lambda s: jax.lax.fori_loop(0, steps, lambda _, s: rj.step(model, s, control),
                                             s))(state)


def test_cone_projection_is_the_nearest_point_and_its_jacobian_is_exact():
  rng = np.random.default_rng(0)
  with jax.enable_x64(True):
    points = jnp.asarray(rng.normal(size=(400, 3)))
    mu = jnp.asarray(rng.uniform(0.1, 1.5, size=400))
    projected, jacobian = island_block.project_to_cone(points, mu)
    projected, jacobian = np.asarray(projected), np.asarray(jacobian)
    tangential = np.linalg.norm(projected[:, :2], axis=1)
    assert np.all(tangential <= np.asarray(mu) * projected[:, 2] + 1e-12)    # in the cone
    # Nearest point of a convex cone: the residual is orthogonal to the projection and lies
    # in the polar cone (|r_t| <= -r_n / mu).
    residual = np.asarray(points) - projected
    np.testing.assert_allclose(np.sum(residual * projected, axis=1), 0.0, atol=1e-12)
    assert np.all(np.asarray(mu) * np.linalg.norm(residual[:, :2], axis=1)
                  <= -residual[:, 2] + 1e-12)
    numeric = jax.vmap(jax.jacfwd(
        lambda p, m: island_block.project_to_cone(p[None], m[None])[0][0]))(points, mu)
    np.testing.assert_allclose(jacobian, np.asarray(numeric), atol=1e-12)


def test_inverse6_inverts_symmetric_positive_definite_matrices():
  rng = np.random.default_rng(1)
  with jax.enable_x64(True):
    a = rng.normal(size=(50, 6, 6))
    spd = a @ np.swapaxes(a, -1, -2) + 0.1 * np.eye(6)
    np.testing.assert_allclose(np.asarray(island_block.inverse6(jnp.asarray(spd))),
                               np.linalg.inv(spd), rtol=1e-9, atol=1e-9)


def _random_island(rng, num_bodies, rows, static_share, dtype=np.float64):
  """side_body (R, 2), side_twist (R, 2, 3, 6) of random rows (side b static with
  probability `static_share`) and the dense A^T A (identity W) of `_Operators._system`."""
  side_body = rng.integers(0, num_bodies, size=(rows, 2))
  side_body[:, 1] = np.where(rng.random(rows) < static_share, num_bodies, side_body[:, 1])
  side_twist = rng.normal(size=(rows, 2, 3, 6)).astype(dtype).astype(np.float64)
  side_twist[:, 1] *= (side_body[:, 1] < num_bodies)[:, None, None]
  dense = np.zeros((3 * rows, 6 * (num_bodies + 1)))
  for r in range(rows):
    for side in range(2):
      body = side_body[r, side]
      dense[3 * r:3 * r + 3, 6 * body:6 * body + 6] += side_twist[r, side]
  return side_body, side_twist, dense.T @ dense


def _island_solve(side_body, side_twist, rhs, num_bodies, dtype):
  ops = island_block._Operators(
      dict(side_twist=jnp.asarray(side_twist, dtype), side_body=jnp.asarray(side_body),
           label=jnp.zeros(num_bodies + 1, jnp.int32)), num_bodies)
  weight = jnp.broadcast_to(jnp.eye(3, dtype=dtype), (side_body.shape[0], 3, 3))
  x, residual = ops.solve_with_residual(weight, jnp.asarray(rhs, dtype))
  return np.asarray(x, np.float64).reshape(-1), float(residual)


def _regularized(normal, num_bodies, relative):
  traces = [np.trace(normal[6 * b:6 * b + 6, 6 * b:6 * b + 6]) for b in range(num_bodies + 1)]
  regularization = np.repeat([relative * (t if t > 0 else 1.0) for t in traces], 6)
  regularization[-6:] = 1.0    # the dump slot
  return normal + np.diag(regularization)


def test_island_solve_matches_a_dense_solve_and_reports_its_residual():
  """`_Operators.solve_with_residual` (the island move's matrix-free CG) against numpy's dense solve of
  (A^T A + r) x = b; the relative residual it reports against numpy's |(A^T A + r) x - b| / |b|
  of the returned x. The move is skipped when the least-squares solve's residual exceeds
  sqrt(eps): float32 islands whose solve cannot converge within CG_ITERATIONS steps."""
  rng = np.random.default_rng(2)
  num_bodies = 3
  side_body, side_twist, normal = _random_island(rng, num_bodies, 24, 0.4)
  rhs = rng.normal(size=(num_bodies + 1, 6))
  rhs[num_bodies] = 0.0
  system = _regularized(normal, num_bodies, 1e-12)
  with jax.enable_x64(True):
    x, residual = _island_solve(side_body, side_twist, rhs, num_bodies, jnp.float64)
  np.testing.assert_allclose(x, np.linalg.solve(system, rhs.reshape(-1)), rtol=1e-9,
                             atol=1e-12)
  assert residual <= 1e-12

  # 40 bodies in float32 with 50 rows between random pairs (under-determined: 240 unknowns,
  # 150 equations, held by the 1e-6 regularization): 60 CG steps cannot converge.
  num_bodies = 40
  side_body, side_twist, normal = _random_island(rng, num_bodies, 50, 0.2, np.float32)
  rhs = rng.normal(size=(num_bodies + 1, 6)).astype(np.float32).astype(np.float64)
  rhs[num_bodies] = 0.0
  system = _regularized(normal, num_bodies, 1e-6)
  x, residual = _island_solve(side_body, side_twist, rhs, num_bodies, jnp.float32)
  expected = np.linalg.norm(system @ x - rhs.reshape(-1)) / np.linalg.norm(rhs)
  assert expected > np.sqrt(np.finfo(np.float32).eps)
  np.testing.assert_allclose(residual, expected, rtol=1e-3)

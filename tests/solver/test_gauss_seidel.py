"""The step's contact solver, `contact_dynamics.solve_contacts`, on real scenes.

Each problem is one world's first step: `integrate1` fills the contacts, the free velocities
come from `single_body.free_velocity` and `articulated_integrate.step_terms` as in
`step.integrate2`. The checks never trust the solver's own bookkeeping: contact velocities
are recomputed from the returned body velocities (single bodies: v + w x r; links: forward
kinematics with the returned generalized velocity), and the NCP conditions, momentum balance,
padding, warm start, order, loop modes and gradients are judged on those.
"""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import raisim_jax as rj
from raisim_jax.collision import collision_bodies, detection
from raisim_jax import compile as compile_lib, contact_heads
from raisim_jax.dynamics import (articulated_integrate, contact_dynamics, gauss_seidel,
                                 kinematics)
from raisim_jax.dynamics import single_body
from raisim_jax.math import quaternion

DT = 1e-3
G_DT = 9.81 * DT

# Converged settings: the while_loop stops once a sweep changes no impulse by 1e-14 N s.
CONVERGED = dict(threshold=1e-14, max_iterations=3000, differentiable=False)

# A floating base box (on the ground) with an arm hinged at its +x face about y. Gravity
# turns the arm down (+q); the upper limit q <= 0 holds it level: a joint-limit row.
LANDER = """<?xml version="1.0"?>
<robot name="lander">
  <link name="base">
    <inertial><mass value="2"/><inertia ixx="0.03" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.05"/></inertial>
    <collision><geometry><box size="0.4 0.4 0.1"/></geometry></collision>
  </link>
  <joint name="hinge" type="revolute"><parent link="base"/><child link="arm"/>
    <origin xyz="0.2 0 0"/><axis xyz="0 1 0"/><limit lower="-1" upper="0" effort="0" velocity="0"/></joint>
  <link name="arm">
    <inertial><origin xyz="0.15 0 0"/><mass value="0.5"/>
      <inertia ixx="0.0003" ixy="0" ixz="0" iyy="0.004" iyz="0" izz="0.004"/></inertial>
    <collision><origin xyz="0.15 0 0" rpy="0 1.5707963268 0"/>
      <geometry><capsule radius="0.02" height="0.3"/></geometry></collision>
  </link>
</robot>"""


@pytest.fixture(autouse=True)
def _fresh_compiled_functions():
  """Each test of this file starts with JAX's in-memory caches cleared (the persistent cache
  stays on, reads and writes). Without it, writing a compile of this file to the persistent
  cache aborted the xdist worker inside XLA's `executable.serialize()` (jax's
  `compilation_cache.put_executable_and_time`): the head-boundary rollout in three cold-cache
  suite runs, and, deterministically, `test_gradients_match_finite_differences[stick]` (the
  16th test) when this file ran alone with an empty cache directory; never a test alone or
  in a pair, so it depends on the executables the earlier tests of the process keep alive.
  With the caches cleared before each test the file passed twice alone with an empty cache
  (2026-11-29). tests/conftest.py clears them after every module for the same reason."""
  jax.clear_caches()
  yield


# ------------------------------------------------------------------------------------------------
# Scenes


@functools.lru_cache(maxsize=None)
def pile():
  """Ground (body 0); box 1 resting on it (sticks); box 2 on box 1 sliding and spinning;
  box 3 falling onto box 2 across a 5e-5 m gap (a speculative contact, target -gap/dt); a
  ball rolling on the ground. mu = 0.5, no restitution, no static friction."""
  world = rj.World()
  world.setTimeStep(DT)
  world.setDefaultMaterial(0.5, 0.0, 0.0)
  world.addGround()
  box1 = world.addBox(0.4, 0.4, 0.2, 2.0)
  box2 = world.addBox(0.3, 0.3, 0.2, 1.0)
  box3 = world.addBox(0.2, 0.2, 0.1, 0.5)
  ball = world.addSphere(0.1, 1.0)
  box1.setPosition(0.0, 0.0, 0.1 - 1e-4)
  box2.setPosition(0.02, 0.01, 0.3 - 2e-4)
  box2.setVelocity(0.3, 0.1, 0.0, 0.0, 0.0, 0.4)
  box3.setPosition(0.03, 0.0, 0.45 - 2e-4 + 5e-5)
  box3.setVelocity(0.0, 0.0, -0.2, 0.0, 0.0, 0.0)
  ball.setPosition(1.0, 0.0, 0.1 - 1e-4)
  ball.setVelocity(0.5, 0.0, 0.0, 0.0, 5.0, 0.0)   # rolling: v = w x r
  return problem(world)


def pile_with(box2_velocity, mu):
  """The pile's contacts with box 2 (body 2) moving at `box2_velocity` (6,) and friction mu."""
  model, state, _, terms = pile()
  bodies = state.bodies
  state = state.replace(bodies=bodies.replace(
      linear_velocity=bodies.linear_velocity.at[2].set(box2_velocity[:3]),
      angular_velocity=bodies.angular_velocity.at[2].set(box2_velocity[3:])))
  model = with_solver(model, pair_table=model.solver.pair_table.at[..., 0].set(mu))
  velocity = single_body.free_velocity(model, state, bodies.external_force,
                                       bodies.external_torque)
  return model, state, velocity, terms


@functools.lru_cache(maxsize=None)
def lander():
  """The LANDER robot sliding at 0.3 m/s on ice (mu 0.2), a box riding on its base and one
  on its arm (mu 0.8 against the robot): base-ground contacts slide, the boxes stick, and the
  arm's upper limit is an active joint-limit row. Every contact row has an articulated part;
  the box rows also a single-body part."""
  world = rj.World()
  world.setTimeStep(DT)
  world.setDefaultMaterial(0.8, 0.0, 0.0)
  world.addGround(material="ice")
  world.setMaterialPairProp("ice", "default", 0.2, 0.0, 0.0)
  robot = world.addArticulatedSystem(LANDER)
  on_arm = world.addBox(0.1, 0.1, 0.1, 0.5)
  on_base = world.addBox(0.15, 0.15, 0.15, 1.0)
  # States only after every object is added: a robot.setState compiles the world, and two
  # later addBox calls then fail in World._sync_description_from_state (IndexError).
  robot.setState([0, 0, 0.05 - 1e-4, 1, 0, 0, 0, 0.0], [0.3, 0, 0, 0, 0, 0, 0.0])
  on_arm.setPosition(0.35, 0.0, 0.12 - 1e-4)
  on_arm.setVelocity(0.3, 0.0, 0.0, 0.0, 0.0, 0.0)
  on_base.setPosition(0.0, 0.0, 0.175 - 2e-4)
  on_base.setVelocity(0.3, 0.0, 0.0, 0.0, 0.0, 0.0)
  return problem(world)


_integrate1 = jax.jit(rj.integrate1)


def problem(world):
  """(model, state, velocity, terms) of the world's next step, built as step.integrate2 does."""
  model, state = world.compile()
  # Jitted: one program, not one per primitive (an eager integrate1 of the quadruped crashed a
  # worker in XLA's compiler once, inside a full parallel test run).
  state = _integrate1(model, state)
  bodies = state.bodies
  velocity = single_body.free_velocity(model, state, bodies.external_force,
                                       bodies.external_torque)
  terms = tuple(
      articulated_integrate.step_terms(
          system_model, system.generalized_coordinate, system.generalized_velocity,
          system.feedforward_force, system.p_target, system.d_target, model.gravity,
          model.time_step, system.external_wrench)
      for system_model, system in zip(model.articulated, state.articulated))
  return model, state, velocity, terms


def with_solver(model, **settings):
  return compile_lib.with_solver_settings(model, **settings)


_solve = jax.jit(contact_dynamics.solve_contacts)


def solve(model, state, velocity, terms, contacts=None, **settings):
  contacts = state.contacts if contacts is None else contacts
  return _solve(with_solver(model, **settings), state, velocity, contacts, terms)


# ------------------------------------------------------------------------------------------------
# Independent checks


def contact_velocities(model, state, contacts, solution):
  """(C, 3) end-of-step contact-frame velocity of A's contact point relative to B's, for every
  active slot: frame @ (v_a + w_a x r_a - v_b - w_b x r_b), links by forward kinematics."""
  n = model.num_bodies
  linear = np.asarray(solution.velocity.linear)
  angular = np.asarray(solution.velocity.angular)
  com = np.asarray(state.bodies.position)
  owner_system, owner_local = collision_bodies.body_owner_tables(model)
  spatial = [np.asarray(kinematics.forward_kinematics(
      system_model, system.generalized_coordinate, u).body_velocity)   # [v_origin; w]
      for system_model, system, u in zip(model.articulated, state.articulated,
                                         solution.generalized_velocity)]

  def point_velocity(body, p):
    if body < n:
      return linear[body] + np.cross(angular[body], p - com[body])
    twist = spatial[owner_system[body]][owner_local[body]]
    return twist[:3] + np.cross(twist[3:], p)

  c = jax.tree.map(np.asarray, contacts)
  return np.array([c.frame[i] @ (point_velocity(c.body_a[i], c.position[i])
                                 - point_velocity(c.body_b[i], c.position[i]))
                   for i in np.nonzero(c.active)[0]]).reshape(-1, 3)


def friction_and_target(model, contacts):
  """Per active slot: mu of the material pair and the target normal velocity (scenes have no
  restitution and no static friction: 0 when touching, -gap/dt across a speculative gap)."""
  c = jax.tree.map(np.asarray, contacts)
  active = np.nonzero(c.active)[0]
  material = np.asarray(model.collision.shapes.material)
  table = np.asarray(model.solver.pair_table)
  mu = table[material[c.shape_a[active]], material[c.shape_b[active]], 0]
  depth = c.depth[active]
  return mu, np.where(depth >= 0, 0.0, depth / DT)


def ncp_residuals(v, impulse, mu, target):
  """Per contact, the largest violation of: Signorini (lambda_z >= 0, v_z >= target,
  lambda_z (v_z - target) = 0), Coulomb (|lambda_t| <= mu lambda_z), maximum dissipation
  (inside the cone: v_t = 0; on it: v_t anti-parallel to lambda_t). Also returns the modes
  ('open', 'stick', 'slide')."""
  out, modes = [], []
  for vi, lam, m, t in zip(v, impulse, mu, target):
    gap = vi[2] - t
    tangential = np.linalg.norm(lam[:2])
    residual = [max(-lam[2], 0.0), max(-gap, 0.0), abs(lam[2] * gap),
                max(tangential - m * lam[2], 0.0)]
    if lam[2] <= 1e-12:
      modes.append('open')
    elif tangential < m * lam[2] * (1 - 1e-6):
      modes.append('stick')
      residual.append(np.abs(vi[:2]).max())
    else:
      modes.append('slide')
      residual.append(abs(vi[0] * lam[1] - vi[1] * lam[0]))     # anti-parallel ...
      residual.append(max(vi[:2] @ lam[:2], 0.0))               # ... not parallel
    out.append(max(residual))
  return np.array(out), modes


def momentum_residual(model, state, velocity, terms, contacts, solution):
  """Largest violation of M (v - v_free) = J^T lambda, recomputed per single body (force and
  torque about the COM) and per system (generalized impulse through point Jacobians taken by
  differentiating forward kinematics, M_eff from the step's M_eff^-1)."""
  c = jax.tree.map(np.asarray, contacts)
  n = model.num_bodies
  owner_system, owner_local = collision_bodies.body_owner_tables(model)
  active = np.nonzero(c.active)[0]
  world_impulse = np.einsum('cji,cj->ci', c.frame[active], c.impulse[active])
  mass = np.asarray(model.bodies.mass)
  dynamic = np.asarray(model.bodies.body_type) == rj.BodyType.DYNAMIC
  com = np.asarray(state.bodies.position)
  rot = np.asarray(jax.vmap(quaternion.to_matrix)(state.bodies.quaternion))
  inertia = rot @ np.asarray(model.bodies.inertia_body) @ np.swapaxes(rot, 1, 2)
  linear = np.zeros((n, 3))
  angular = np.zeros((n, 3))
  generalized = [np.zeros(sm.num_gv) for sm in model.articulated]
  for k, slot in enumerate(active):
    for body, sign in ((c.body_a[slot], 1.0), (c.body_b[slot], -1.0)):
      p = sign * world_impulse[k]
      if body < n:
        linear[body] += p
        angular[body] += np.cross(c.position[slot] - com[body], p)
      else:
        s, local = owner_system[body], owner_local[body]
        system_model, system = model.articulated[s], state.articulated[s]
        point = c.position[slot]

        def point_velocity(u):
          twist = kinematics.forward_kinematics(system_model, system.generalized_coordinate,
                                                u).body_velocity[local]
          return twist[:3] + jnp.cross(twist[3:], point)

        jac = np.asarray(jax.jacfwd(point_velocity)(jnp.zeros(system_model.num_gv)))
        generalized[s] += jac.T @ p
  residual = 0.0
  for b in np.nonzero(dynamic)[0]:
    dv = np.asarray(solution.velocity.linear[b] - velocity.linear[b])
    dw = np.asarray(solution.velocity.angular[b] - velocity.angular[b])
    residual = max(residual, np.abs(mass[b] * dv - linear[b]).max(),
                   np.abs(inertia[b] @ dw - angular[b]).max())
  for s, term in enumerate(terms):
    mass_inverse = np.asarray(term.mass_inverse)
    du = np.asarray(solution.generalized_velocity[s] - term.free_velocity)
    limit_impulse = np.zeros_like(du)
    if solution.joint_limits is not None:
      for row, (system, dof) in enumerate(zip(model.joint_limits.system,
                                              model.joint_limits.dof)):
        if system == s:
          limit_impulse[dof] += np.asarray(solution.joint_limits.impulse)[row]
    residual = max(residual, np.abs(np.linalg.solve(mass_inverse, du) - generalized[s]
                                    - limit_impulse).max())
  return residual


# ------------------------------------------------------------------------------------------------
# Tests


def test_two_balls_stacked_closed_form():
  """Ball 1 (1 kg) on the ground, ball 2 (3 kg) on ball 1, touching, at rest: the impulses are
  (m1 + m2) g dt and m2 g dt along the normals, no friction, and both balls end at rest."""
  world = rj.World()
  world.setTimeStep(DT)
  world.setDefaultMaterial(0.8, 0.0, 0.0)
  world.addGround()
  lower, upper = world.addSphere(0.1, 1.0), world.addSphere(0.1, 3.0)
  lower.setPosition(0.0, 0.0, 0.1)
  upper.setPosition(0.0, 0.0, 0.3)
  model, state, velocity, terms = problem(world)
  solution = solve(model, state, velocity, terms, **CONVERGED)
  c = jax.tree.map(np.asarray, solution.contacts)
  active = np.nonzero(c.active)[0]
  assert len(active) == 2
  # (body_a, body_b) -> lambda_z; the ball-ball normal points down, to A (the lower ball).
  expected = {(1, 0): 4.0 * G_DT, (1, 2): 3.0 * G_DT}
  for slot in active:
    np.testing.assert_allclose(c.impulse[slot], [0.0, 0.0, expected[c.body_a[slot],
                                                                      c.body_b[slot]]],
                               atol=1e-14)
  np.testing.assert_allclose(solution.velocity.linear[1:], 0.0, atol=1e-14)
  np.testing.assert_allclose(contact_velocities(model, state, c, solution), 0.0, atol=1e-14)


@pytest.mark.parametrize('scene', ['pile', 'lander'])
def test_converged_solution_satisfies_ncp_and_momentum(scene):
  """At convergence every contact meets the NCP to 1e-12 (both stick and slide occur, and
  the speculative contact of the pile reaches its target -gap/dt), every joint-limit row its
  1-D Signorini condition, and the body velocities are the free ones plus M^-1 J^T lambda."""
  model, state, velocity, terms = pile() if scene == 'pile' else lander()
  solution = solve(model, state, velocity, terms, **CONVERGED)
  contacts = solution.contacts
  assert int(solution.iterations) < CONVERGED['max_iterations']
  v = contact_velocities(model, state, contacts, solution)
  mu, target = friction_and_target(model, contacts)
  impulse = np.asarray(contacts.impulse)[np.asarray(contacts.active)]
  residual, modes = ncp_residuals(v, impulse, mu, target)
  assert residual.max() < 1e-12, residual
  assert {'stick', 'slide'} <= set(modes)
  assert momentum_residual(model, state, velocity, terms, contacts, solution) < 1e-12
  if scene == 'pile':
    speculative = target < 0
    assert speculative.sum() == 4 and np.all(impulse[speculative, 2] > 0)
    np.testing.assert_allclose(v[speculative, 2], target[speculative], atol=1e-12)
  else:
    # Every row has an articulated part (A or B is a link); the arm's limit row holds it.
    owner_system, _ = collision_bodies.body_owner_tables(model)
    c = jax.tree.map(np.asarray, contacts)
    slots = np.nonzero(c.active)[0]
    assert np.all((owner_system[c.body_a[slots]] == 0) | (owner_system[c.body_b[slots]] == 0))
    limits = solution.joint_limits
    assert bool(limits.active[0]) and bool(limits.upper[0])
    lam = -float(limits.impulse[0])                     # along the row (-1: upper limit)
    row_velocity = -float(solution.generalized_velocity[0][6])
    assert lam > 1e-4 and abs(row_velocity) < 1e-12     # q at its limit: target 0


def test_padded_slots_get_zero_impulse_and_change_nothing():
  """Inactive slots end with exactly zero impulse; garbage in them (poses, frames, depths,
  indices, warm-start impulses) and a larger buffer leave the solution unchanged, and the
  gradient reaching their inputs is finite and exactly zero."""
  model, state, velocity, terms = pile()
  contacts = state.contacts
  active = np.asarray(contacts.active)
  padded = ~active
  assert padded.sum() >= 8
  reference = solve(model, state, velocity, terms, **CONVERGED)
  assert np.all(np.asarray(reference.contacts.impulse)[padded] == 0.0)

  rng = np.random.default_rng(0)
  capacity = active.shape[0]
  garbage_frame = np.linalg.qr(rng.normal(size=(capacity, 3, 3)))[0]

  def fill(x, noise):
    mask = jnp.asarray(padded).reshape((-1,) + (1,) * (np.ndim(x) - 1))
    return jnp.where(mask, jnp.asarray(noise, jnp.asarray(x).dtype), x)

  num_shapes = model.collision.shapes.material.shape[0]
  num_collision_bodies = len(collision_bodies.body_owner_tables(model)[0])
  noisy = contacts.replace(
      position=fill(contacts.position, rng.normal(size=(capacity, 3))),
      normal=fill(contacts.normal, garbage_frame[:, 2]),
      depth=fill(contacts.depth, rng.normal(size=capacity)),
      impulse=fill(contacts.impulse, rng.normal(size=(capacity, 3))),
      body_a=fill(contacts.body_a, rng.integers(0, num_collision_bodies, capacity)),
      body_b=fill(contacts.body_b, rng.integers(0, num_collision_bodies, capacity)),
      shape_a=fill(contacts.shape_a, rng.integers(0, num_shapes, capacity)),
      shape_b=fill(contacts.shape_b, rng.integers(0, num_shapes, capacity)))
  garbage = solve(model, state, velocity, terms, contacts=noisy, **CONVERGED)
  assert np.all(np.asarray(garbage.contacts.impulse)[padded] == 0.0)
  np.testing.assert_array_equal(garbage.contacts.impulse, reference.contacts.impulse)
  np.testing.assert_array_equal(garbage.velocity.linear, reference.velocity.linear)
  np.testing.assert_array_equal(garbage.velocity.angular, reference.velocity.angular)

  # The same contacts in a 4x larger buffer: same impulses in the active slots.
  extra = detection.empty_contacts(3 * capacity, model.dtype)
  bigger = jax.tree.map(lambda x, y: jnp.concatenate([x, y]) if jnp.ndim(x) else x,
                        contacts, extra)
  big = solve(model, state, velocity, terms, contacts=bigger, **CONVERGED)
  np.testing.assert_allclose(big.contacts.impulse[:capacity], reference.contacts.impulse,
                             atol=1e-15)
  np.testing.assert_allclose(big.velocity.linear, reference.velocity.linear, atol=1e-15)
  assert np.all(np.asarray(big.contacts.impulse)[capacity:] == 0.0)

  # Gradients (differentiable scan) w.r.t. the float inputs of every slot.
  scan_model = with_solver(model, threshold=0.0, max_iterations=30, differentiable=True)
  weights = rng.normal(size=velocity.linear.shape)

  def loss(position, normal, depth, impulse):
    c = noisy.replace(position=position, normal=normal, depth=depth, impulse=impulse)
    s = contact_dynamics.solve_contacts(scan_model, state, velocity, c, terms)
    return jnp.sum(s.velocity.linear * weights) + jnp.sum(s.contacts.impulse ** 2)

  grads = jax.jit(jax.grad(loss, argnums=(0, 1, 2, 3)))(
      noisy.position, noisy.normal, noisy.depth, noisy.impulse)
  for g in grads:
    g = np.asarray(g)
    assert np.all(np.isfinite(g))
    assert np.all(g[padded] == 0.0)
  assert np.abs(np.asarray(grads[0])[active]).max() > 0.0


def test_no_active_contact_gives_free_velocity_and_identity_gradient():
  """The pile with every slot switched off: every impulse is zero, the bodies keep their
  free velocities, and the gradient through the solve is the identity."""
  model, state, velocity, terms = pile()
  contacts = state.contacts.replace(active=jnp.zeros_like(state.contacts.active))
  for differentiable in (True, False):
    solution = solve(model, state, velocity, terms, contacts, differentiable=differentiable)
    assert np.all(np.asarray(solution.contacts.impulse) == 0.0)
    np.testing.assert_array_equal(solution.velocity.linear, velocity.linear)
    np.testing.assert_array_equal(solution.velocity.angular, velocity.angular)
  scan_model = with_solver(model, max_iterations=5)
  grad = jax.jit(jax.grad(lambda linear: jnp.sum(contact_dynamics.solve_contacts(
      scan_model, state, velocity.replace(linear=linear), contacts, terms
  ).velocity.linear)))(velocity.linear)
  np.testing.assert_array_equal(grad, np.ones_like(grad))


def ncp_residual_of(model, state, solution):
  """Largest NCP residual of a solution over the active contacts."""
  active = np.asarray(state.contacts.active)
  mu, target = friction_and_target(model, state.contacts)
  v = contact_velocities(model, state, solution.contacts, solution)
  return ncp_residuals(v, np.asarray(solution.contacts.impulse)[active], mu, target)[0].max()


# Both scenes have redundant contacts (four box corners). The lander's converged body
# velocities do not depend on the iteration path (checked to 1e-9). On the pile, box 2 slides
# under box 3, and how box 3's weight spreads over the corners (not unique) sets the friction
# on box 2: different paths end at different NCP solutions (spins differ by ~1e-2 rad/s), so
# there only the NCP conditions are checked.
UNIQUE_VELOCITIES = {'lander': True, 'pile': False}


def assert_same_velocities(a, b, atol=1e-9):
  np.testing.assert_allclose(a.velocity.linear, b.velocity.linear, atol=atol)
  np.testing.assert_allclose(a.velocity.angular, b.velocity.angular, atol=atol)
  for u, w in zip(a.generalized_velocity, b.generalized_velocity):
    np.testing.assert_allclose(u, w, atol=atol)


@pytest.mark.parametrize('scene', ['pile', 'lander'])
def test_warm_start_reaches_the_same_solution_in_fewer_sweeps(scene):
  """Starting from the converged impulses (contacts.impulse, and the joint-limit rows' last
  impulses in state.joint_limits) the solver stops after one sweep at the same impulses;
  starting from what the step carries over (the contacts' normal parts, the limit rows'
  impulses) it needs fewer sweeps than from zero and ends at an NCP solution (the same body velocities
  where they are unique)."""
  model, state, velocity, terms = pile() if scene == 'pile' else lander()
  settings = dict(threshold=1e-12, max_iterations=3000, differentiable=False)
  cold = solve(model, state, velocity, terms, **settings)
  converged = cold.contacts.impulse
  warm_state = state
  if cold.joint_limits is not None:
    warm_state = state.replace(joint_limits=cold.joint_limits)
  warm = solve(model, warm_state, velocity, terms, state.contacts.replace(impulse=converged),
               **settings)
  assert int(cold.iterations) > 20 and int(warm.iterations) == 1
  np.testing.assert_allclose(warm.contacts.impulse, converged, atol=1e-12)
  normal = state.contacts.replace(impulse=converged.at[:, :2].set(0.0))
  partial = solve(model, warm_state, velocity, terms, normal, **settings)
  assert 1 < int(partial.iterations) < int(cold.iterations)
  assert ncp_residual_of(model, state, partial) < 1e-11
  if UNIQUE_VELOCITIES[scene]:
    assert_same_velocities(partial, cold)


@pytest.mark.parametrize('scene', ['pile', 'lander'])
def test_forward_and_reverse_order_both_converge(scene):
  """Sweeping the rows last to first (setContactSolverIterationOrder(False)) converges to an
  NCP solution too (the forward order's body velocities where they are unique)."""
  model, state, velocity, terms = pile() if scene == 'pile' else lander()
  forward = solve(model, state, velocity, terms, **CONVERGED)
  reverse = solve(model, state, velocity, terms, reverse_order=True, **CONVERGED)
  for solution in (forward, reverse):
    assert int(solution.iterations) < CONVERGED['max_iterations']
    assert ncp_residual_of(model, state, solution) < 1e-12
  if UNIQUE_VELOCITIES[scene]:
    assert_same_velocities(reverse, forward)
  else:
    assert not np.allclose(reverse.velocity.angular, forward.velocity.angular, atol=1e-4)


def test_iteration_cap_and_loop_modes_agree():
  """Both loop modes (differentiable scan, early-exit while_loop) give the same impulses and
  sweep counts, with and without reaching the threshold, and the cap is honoured."""
  model, state, velocity, terms = lander()
  for settings in (dict(threshold=1e-10, max_iterations=400), dict(threshold=0.0,
                                                                  max_iterations=3)):
    scan = solve(model, state, velocity, terms, differentiable=True, **settings)
    loop = solve(model, state, velocity, terms, differentiable=False, **settings)
    assert int(scan.iterations) == int(loop.iterations)
    np.testing.assert_allclose(scan.contacts.impulse, loop.contacts.impulse, atol=1e-15)
    np.testing.assert_allclose(scan.generalized_velocity[0], loop.generalized_velocity[0],
                               atol=1e-15)
  assert int(scan.iterations) == 3


def test_sweep_groups_cover_the_capacity_in_about_sqrt_groups():
  """The fixed-trip scan's groups: at least `capacity` trips, about sqrt(capacity) groups of
  about sqrt(capacity) sweeps (a converged solve pays ~2 sqrt(capacity) skipped trips)."""
  for capacity in (1, 2, 3, 4, 9, 10, 150, 400, 3000):
    groups, per_group = gauss_seidel.sweep_groups(capacity)
    assert groups * per_group >= capacity
    assert (groups - 1) * per_group < capacity        # no whole group past the capacity
    assert per_group <= math.isqrt(capacity) + 1 and groups <= math.isqrt(capacity) + 1


def test_batched_solves_match_single_solves():
  """vmap over worlds that differ in box 2's speed: each world's impulses and sweep count
  equal its own unbatched solve, in both loop modes."""
  model, state, velocity, terms = pile()
  speeds = np.linspace(-0.5, 0.5, 6)
  velocities = jax.vmap(lambda s: velocity.replace(
      linear=velocity.linear.at[2, 0].add(s)))(jnp.asarray(speeds))
  for differentiable in (True, False):
    m = with_solver(model, threshold=1e-10, max_iterations=300, differentiable=differentiable)
    batched = jax.jit(jax.vmap(contact_dynamics.solve_contacts, in_axes=(None, None, 0, None,
                                                                         None)))(
        m, state, velocities, state.contacts, terms)
    for k in (0, 3, 5):
      single = _solve(m, state, jax.tree.map(lambda x: x[k], velocities), state.contacts,
                      terms)
      np.testing.assert_allclose(batched.contacts.impulse[k], single.contacts.impulse,
                                 rtol=1e-12, atol=1e-15)
      assert int(batched.iterations[k]) == int(single.iterations)
    assert len(set(np.asarray(batched.iterations).tolist())) > 1


def boxes_on_ground(lifted):
  """Eight 0.2 m boxes on the ground (mu 0.5), those in `lifted` 1 m up: 4 contacts per box
  that rests."""
  world = rj.World()
  world.setTimeStep(DT)
  world.setDefaultMaterial(0.5, 0.0, 0.0)
  world.addGround()
  for k in range(8):
    box = world.addBox(0.2, 0.2, 0.2, 1.0 + 0.3 * k)
    box.setPosition(0.5 * k, 0.0, (1.0 if k in lifted else 0.1) - 1e-4)
    box.setVelocity(0.05 * k, 0.0, 0.0, 0.0, 0.0, 0.1)
  return problem(world)


def _assert_same_solution(a, b):
  for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
    np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-12, atol=1e-15)


_solve_whole_buffer = jax.jit(contact_dynamics._solve)


def _batched_solve(model, terms):
  """`solve_contacts` (forward-only: on a head) over a batch of (state, velocity, contacts,
  frozen rows); one compiled program for every batch of the same size, so each test below
  compiles the head switch once (its branches are most of a step's compile time)."""
  return jax.jit(jax.vmap(lambda s, v, c, rows: contact_dynamics.solve_contacts(
      model, s, v, c, terms, rows)))


def _check_batches(solve, model, terms, batches):
  """Each batch, a list of (state, velocity, contacts, frozen rows), solved together by
  `solve`; every world equals its own whole-buffer solve. Returns the batched solutions."""
  solutions = []
  for batch in batches:
    batched = solve(*jax.tree.map(lambda *x: jnp.stack(x), *batch))
    for k, (state, velocity, contacts, rows) in enumerate(batch):
      _assert_same_solution(jax.tree.map(lambda x: x[k], batched), _solve_whole_buffer(
          model, state.replace(contacts=contacts), velocity, contacts, terms, rows))
    solutions.append(batched)
  return solutions


def test_forward_only_solve_on_the_head_equals_the_whole_buffer():
  """Forward-only mode solves only the buffer's first `h` slots, `h` the smallest of
  `head_sizes` that holds every world's contacts (contact_dynamics.solve_contacts); the
  whole-buffer solve of the same inputs is its oracle: the same impulses and inverse apparent
  inertias in every slot, the same velocities and sweep count, with and without frozen
  (sleeping) rows. Eight boxes, one world per head and one that fits none, each in a batch of
  its own copies; a batch is solved on the head that holds its most crowded world, and each
  world still equals its own solve. (The lander's limit rows, which follow the contact rows:
  the next test.)"""
  settings = dict(threshold=1e-12, max_iterations=300, differentiable=False)
  # 32 contacts (no head), 12 (the quarter head), 8 and 4 (the small heads).
  worlds = [boxes_on_ground(lifted=lifted)
            for lifted in ((), range(3, 8), range(2, 8), range(1, 8))]
  model, _, _, terms = worlds[0]        # the same model in every world: only states differ
  model = with_solver(model, **settings)
  heads = contact_heads.head_sizes(worlds[0][1].contacts.active.shape[0])
  counts = [int(np.sum(np.asarray(s.contacts.active))) for _, s, _, _ in worlds]
  assert len(heads) == 4 and heads[0] == 0 and heads[3] < counts[0], (heads, counts)
  assert heads[2] < counts[1] <= heads[3] and heads[1] < counts[2] <= heads[2], (heads, counts)
  assert 0 < counts[3] <= heads[1], (heads, counts)
  none = jnp.zeros_like(worlds[0][1].contacts.active)
  single_worlds = [[(state, velocity, state.contacts, rows)] * len(worlds)
                   for _, state, velocity, _ in worlds
                   for rows in (none, none.at[:2].set(True) & state.contacts.active)]
  mixed = [(state, velocity, state.contacts, none) for _, state, velocity, _ in worlds]
  # On the whole buffer; on the quarter head (the most crowded world left out).
  _check_batches(_batched_solve(model, terms), model, terms,
                 single_worlds + [mixed, mixed[1:] + mixed[1:2]])


def test_forward_only_solve_without_an_active_limit_row_equals_the_solve_with_the_rows():
  """Where no world's joint-limit row is active, forward-only mode solves the zero and small
  heads without the limit rows (contact_dynamics.solve_contacts); the whole-buffer solve with
  the rows (inactive: no impulse) is its oracle: the same impulses, velocities, sweep count
  and reported limit state (inactive, zero impulse, the limit it faces, no violation). The
  lander's arm half-way between its limits: lifted (no contact), on 4 of its contacts (the
  small head) and on all 9 (the quarter head, solved with the rows); with its arm at the
  limit (an active row, which follows the contact rows) lifted (the limit row alone), on 4
  and on all 9 contacts, also with frozen (sleeping) rows; each world in a batch of two
  copies, and batches that mix them (one active world: with the rows). Lifted with the
  active row, the zero head solves the limit row without the single bodies (no contact row
  has a single-body side), while the boxes on the lander fall freely."""
  model, state, velocity, terms = lander()
  model = with_solver(model, threshold=1e-12, max_iterations=300, differentiable=False)
  capacity = state.contacts.active.shape[0]
  heads = contact_heads.head_sizes(capacity)
  count = int(np.sum(np.asarray(state.contacts.active)))
  assert heads[-2] < count <= heads[-1], (heads, count)          # 9 contacts: the quarter head
  four = state.contacts.replace(active=state.contacts.active & (jnp.arange(capacity) < 4))
  lifted = detection.empty_contacts(capacity, state.contacts.position.dtype)
  system = state.articulated[0]
  halfway = state.replace(articulated=(system.replace(
      generalized_coordinate=system.generalized_coordinate.at[7].set(-0.5)),))
  none = jnp.zeros_like(state.contacts.active)
  worlds = [(s.replace(contacts=c), velocity, c, none)
            for s, c in ((halfway, lifted), (halfway, four), (halfway, state.contacts),
                         (state, four), (state, lifted), (state, state.contacts))]
  frozen = [(s, v, c, none.at[:2].set(True) & c.active) for s, v, c, _ in worlds[3:]]
  solutions = _check_batches(_batched_solve(model, terms), model, terms,
                             [[w, w] for w in worlds + frozen]
                             + [worlds[:2], worlds[1:2] + worlds[3:4]])
  limits = [np.asarray(s.joint_limits.active[0]).tolist() for s in solutions[:len(worlds)]]
  assert limits == [[False]] * 3 + [[True]] * 3, limits
  # On all 9 contacts (the box on the arm among them) the active row takes an impulse; on 4
  # nothing pushes the arm into its limit (zero to rounding: 4e-20 when M_eff^-1 eliminated
  # one dof at a time, exactly 0 by tree levels, which keep the branches' zeros exact).
  assert float(np.abs(np.asarray(solutions[5].joint_limits.impulse)).min()) > 1e-4


def test_small_heads_of_a_robot_world_share_one_traced_sweep_loop(traced_layouts):
  """In a world with an articulated system, forward-only mode sets the rows of the small
  heads (4 and 8 slots) up on their own head and pads them with empty contact rows to the
  larger one, so both heads run one traced sweep loop (contact_dynamics.solve_contacts); the
  lean small heads and every other head keep their own. The sweep loops traced for the
  lander (1 joint-limit row, no pin): the zero head (the limit row), the shared small heads
  (8 contact rows + the limit row), the quarter head, the whole buffer, and the lean zero, 4
  and 8 heads (no limit row). (That the padded solve equals the whole-buffer solve: the
  lander's worlds on 4 contacts in the tests around this one.)"""
  model, state, velocity, terms = lander()
  model = with_solver(model, differentiable=False)
  capacity = state.contacts.active.shape[0]
  zero, four, eight, quarter = contact_heads.head_sizes(capacity)
  limits = model.joint_limits.count
  assert (zero, four, eight, limits) == (0, 4, 8, 1), (contact_heads.head_sizes(capacity), limits)
  jax.eval_shape(lambda s, v: contact_dynamics.solve_contacts(model, s, v, s.contacts, terms),
                 state, velocity)
  traced = [layout.rows for layout in traced_layouts]
  assert sorted(traced) == sorted([limits, eight + limits, quarter + limits,
                                   capacity + limits, 0, four, eight]), traced


def test_lean_heads_leave_out_only_single_bodies_that_do_not_move():
  """Forward-only mode solves the small heads without the single bodies where no contact
  touches one that can move (contact_dynamics.solve_contacts: a robot on the ground). The
  lander with its arm half-way between its limits and the box on its base made KINEMATIC;
  the buffer's head holds, in turn: the base on the ground (STATIC: lean); the kinematic box
  at rest (lean); the kinematic box pressed down into the base at 0.3 m/s (it moves: with the
  single bodies; solved lean, its contacts would take no impulse); the DYNAMIC box on the arm
  with a zero free velocity, and the base on the ground (with the single bodies).
  Oracle: the whole-buffer solve with the single bodies, in every world of batches of two
  copies and of mixed batches; and the predicate's verdict for each world."""
  model, state, _, terms = lander()
  kinematic_box, arm_box = 2, 1      # single-body rows (the ground is 0, padding 3)
  types = np.asarray(model.bodies.body_type)
  assert types[kinematic_box] == types[arm_box] == rj.BodyType.DYNAMIC, types
  model = with_solver(model, threshold=1e-12, max_iterations=300, differentiable=False)
  model = model.replace(bodies=model.bodies.replace(
      body_type=model.bodies.body_type.at[kinematic_box].set(rj.BodyType.KINEMATIC)))
  system = state.articulated[0]
  halfway = state.replace(articulated=(system.replace(
      generalized_coordinate=system.generalized_coordinate.at[7].set(-0.5)),))
  contacts = state.contacts
  capacity = contacts.active.shape[0]
  body_a, body_b = np.asarray(contacts.body_a), np.asarray(contacts.body_b)
  # Slots 0-3: the kinematic box on the base; 4: the arm's box; 5-8: the base on the ground.
  assert set(body_a[:4]) == {kinematic_box} and body_a[4] == arm_box, body_a
  assert set(body_b[5:9]) == {0}, body_b

  def head_of(slots):
    """The buffer with `slots` moved to its head (active) and every other slot inactive."""
    order = np.r_[slots, [k for k in range(capacity) if k not in slots]]
    moved = jax.tree.map(lambda x: x[order] if np.ndim(x) else x, contacts)
    return moved.replace(active=jnp.arange(capacity) < len(slots))

  def world(contacts, box_velocity, hold_arm_box=False):
    bodies = halfway.bodies
    moved = halfway.replace(contacts=contacts, bodies=bodies.replace(
        linear_velocity=bodies.linear_velocity.at[kinematic_box].set([0.0, 0.0, box_velocity])
        .at[arm_box].set(0.0)))
    velocity = single_body.free_velocity(model, moved, bodies.external_force,
                                         bodies.external_torque)
    if hold_arm_box:     # as if held against gravity: only its type says that it can move
      velocity = velocity.replace(linear=velocity.linear.at[arm_box].set(0.0))
    return moved, velocity, contacts, jnp.zeros((capacity,), bool)

  on_ground, on_box = head_of([5, 6, 7, 8]), head_of([0, 1, 2, 3])
  worlds = [world(on_ground, -0.3), world(on_box, 0.0), world(on_box, -0.3),
            world(head_of([4, 5, 6, 7, 8]), 0.0, hold_arm_box=True)]
  lean = [not bool(contact_dynamics._touches_moving_single(model, s, v, c))
          for s, v, c, _ in worlds]
  assert lean == [True, True, False, False], lean
  _check_batches(_batched_solve(model, terms), model, terms,
                 [[w, w] for w in worlds] + [worlds[:2], worlds[1:3], [worlds[0], worlds[3]]])


def test_forward_only_rollout_across_the_head_boundary_equals_the_whole_buffer(monkeypatch):
  """Eight boxes dropped one after another (forward-only solver, float64): the contact count
  grows from 0 past every `head_sizes` (0, 4, 8 and 24 of 96 slots), so the step switches
  from the zero head (no contact rows: every box still falls) to the small heads, the quarter
  head and the whole buffer inside one rollout, for a batch of two worlds whose counts cross at
  different steps. Oracle: the same rollout with the head solves off (no head sizes): the
  same trajectory and contact counts."""
  world = rj.World()
  world.setTimeStep(DT)
  world.setDefaultMaterial(0.5, 0.0, 0.0)
  world.addGround()
  for k in range(8):
    world.addBox(0.2, 0.2, 0.2, 1.0).setPosition(0.5 * k, 0.0, 0.11 + 0.02 * k)
  world.setContactSolverDifferentiable(False)
  model, state = world.compile()
  boxes = [o.getIndexInWorld() for o in world.getObjList()][1:]
  late = state.replace(bodies=state.bodies.replace(      # the last four boxes 5 cm higher
      position=state.bodies.position.at[jnp.asarray(boxes[4:]), 2].add(0.05)))
  states = jax.tree.map(lambda a, b: jnp.stack([a, b]), state, late)
  capacity = state.contacts.active.shape[0]

  def run():
    rollout = jax.jit(jax.vmap(lambda s: rj.rollout(model, s, 250)[1]))
    trajectory = rollout(states)
    return (np.asarray(trajectory.bodies.position),
            np.asarray(jnp.sum(trajectory.contacts.active, axis=-1)))

  positions, counts = run()
  zero, four, small, quarter = contact_heads.head_sizes(capacity)
  assert counts.max() > quarter and zero == 0 and np.any(counts == 0)
  assert np.any((counts > 0) & (counts <= four))
  assert np.any((counts > four) & (counts <= small))
  assert np.any((counts > small) & (counts <= quarter))
  assert not np.array_equal(counts[0], counts[1])       # the worlds cross at different steps
  monkeypatch.setattr(contact_heads, "head_sizes", lambda c: ())
  whole_positions, whole_counts = run()
  np.testing.assert_array_equal(counts, whole_counts)
  np.testing.assert_allclose(positions, whole_positions, rtol=0, atol=1e-12)


def _fd_check(fun, xs, rng, eps=1e-6, rtol=1e-5, atol=1e-9, directions=2):
  """Reverse-mode gradients of fun(*xs) against central differences along random directions
  in each argument separately; returns the gradients."""
  xs = tuple(jnp.asarray(x) for x in xs)
  fun = jax.jit(fun)
  grads = [np.asarray(g) for g in jax.jit(jax.grad(fun, argnums=tuple(range(len(xs)))))(*xs)]
  for k, g in enumerate(grads):
    assert np.all(np.isfinite(g))
    for _ in range(directions):
      d = rng.normal(size=g.shape)
      shifted = lambda sign: [x + sign * eps * d if j == k else x for j, x in enumerate(xs)]
      fd = (float(fun(*shifted(1.0))) - float(fun(*shifted(-1.0)))) / (2 * eps)
      np.testing.assert_allclose(np.sum(g * d), fd, rtol=rtol, atol=atol)
  return grads


# Through 300 sweeps of a sliding box the gradient follows the program's rounding (unoptimized:
# 152 against 271): XLA's full optimization, as the differences were taken with.
@pytest.mark.xla_optimized
@pytest.mark.parametrize('kind', ['stick', 'slide', 'mixed'])
def test_gradients_match_finite_differences(kind):
  """Reverse-mode gradients through the differentiable solve (300 fixed sweeps) w.r.t. the
  free velocities and the friction coefficient match central differences where no contact
  changes mode: box 2 sticking on box 1 (mu 2), sliding on it, and the whole mixed pile."""
  # Box 2 approaches box 1 at 1 cm/s: at rest on it, both boxes' free velocities are -g dt
  # and the first sweep's local problem sits exactly on the open/closed boundary (c'_z = 0),
  # where the solve has a kink and central differences average its two sides.
  box2 = {'stick': [0.0, 0.0, -0.01, 0.0, 0.0, 0.0],
          'slide': [0.6, 0.2, -0.01, 0.0, 0.0, 0.0],
          'mixed': [0.3, 0.1, -0.01, 0.0, 0.0, 0.4]}[kind]
  model, state, velocity, terms = pile_with(jnp.asarray(box2), 2.0 if kind == 'stick' else 0.5)
  model = with_solver(model, threshold=0.0, max_iterations=300, differentiable=True)
  base = solve(model, state, velocity, terms, threshold=0.0, max_iterations=300)
  mu, target = friction_and_target(model, state.contacts)
  active = np.asarray(state.contacts.active)
  v = contact_velocities(model, state, base.contacts, base)
  residual, modes = ncp_residuals(v, np.asarray(base.contacts.impulse)[active], mu, target)
  assert residual.max() < 1e-10
  c = jax.tree.map(np.asarray, state.contacts)
  box2 = (c.body_a[active] == 1) & (c.body_b[active] == 2)     # box 2 (B) on box 1 (A)
  assert box2.sum() == 4
  box2_modes = {m for m, b in zip(modes, box2) if b}
  if kind == 'stick':
    assert box2_modes == {'stick'}
  if kind == 'slide':
    assert box2_modes == {'slide'}
  if kind == 'mixed':
    assert {'stick', 'slide'} <= set(modes)
  rng = np.random.default_rng({'stick': 0, 'slide': 1, 'mixed': 2}[kind])
  weights = rng.normal(size=(2, model.num_bodies, 3))
  impulse_weights = rng.normal(size=state.contacts.impulse.shape)

  def output(s):
    return (jnp.sum(s.velocity.linear * weights[0]) + jnp.sum(s.velocity.angular * weights[1])
            + 100.0 * jnp.sum(s.contacts.impulse * impulse_weights))

  def loss(linear, angular, friction):
    table = model.solver.pair_table.at[..., 0].set(friction)
    return output(contact_dynamics.solve_contacts(
        with_solver(model, pair_table=table), state,
        velocity.replace(linear=linear, angular=angular), state.contacts, terms))

  g_linear, g_angular, g_mu = _fd_check(
      loss, (velocity.linear, velocity.angular, model.solver.pair_table[..., 0]), rng)
  assert np.abs(g_linear).max() > 0.1 and np.abs(g_angular).max() > 0.1
  if kind == 'stick':
    assert np.all(g_mu == 0.0)          # nothing sits on the cone: mu does not enter
  else:
    assert np.abs(g_mu).max() > 1e-3


def test_articulated_gradient_and_forward_mode_agree():
  """On the lander, d(solution)/d(free generalized velocity): the reverse-mode gradient of
  the scan mode matches central differences, and the forward-mode derivative of the
  while_loop mode equals it."""
  model, state, velocity, terms = lander()
  rng = np.random.default_rng(3)
  weights = rng.normal(size=model.articulated[0].num_gv)
  box_weights = rng.normal(size=velocity.linear.shape)

  def loss(mode_model, free):
    t = (terms[0].replace(free_velocity=free),)
    s = contact_dynamics.solve_contacts(mode_model, state, velocity, state.contacts, t)
    return jnp.sum(s.generalized_velocity[0] * weights) + jnp.sum(s.velocity.linear
                                                                  * box_weights)

  scan_model = with_solver(model, threshold=0.0, max_iterations=200, differentiable=True)
  loop_model = with_solver(model, threshold=0.0, max_iterations=200, differentiable=False)
  free = terms[0].free_velocity
  (grad,) = _fd_check(functools.partial(loss, scan_model), (free,), rng, directions=3)
  assert np.abs(grad).max() > 0.1
  direction = jnp.asarray(rng.normal(size=free.shape))
  _, tangent = jax.jit(lambda x, d: jax.jvp(functools.partial(loss, loop_model), (x,), (d,)))(
      free, direction)
  np.testing.assert_allclose(float(tangent), float(jnp.sum(grad * direction)), rtol=1e-10)

"""Divergence and dropped contacts are reported (issue #9 item 8): the State carries a per-world
`finite` flag, the OO layer raises DivergenceError naming the object and keeps the state before
the bad step, and a batch's other worlds are untouched (the contact-buffer overflow warning is
tested in tests/test_contacts.py)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import raisim_jax as rj


def _two_balls():
  world = rj.World()
  world.setTimeStep(1e-3)
  world.setGravity([0, 0, 0])
  calm = world.addSphere(0.1, 1.0)
  calm.setName("calm")
  wild = world.addSphere(0.1, 1.0)
  wild.setName("wild")
  calm.setPosition(0, 0, 1)
  wild.setPosition(5, 0, 1)
  return world, calm, wild


def test_an_unnamed_object_is_named_by_its_type_and_a_robot_by_its_file(tmp_path):
  """RaiSim's objects have no name unless given one: the error says what the object is (an
  articulated system by the URDF file it came from) instead of "''"."""
  path = tmp_path / "rod.urdf"
  path.write_text('<robot name="rod"><link name="base"><inertial><mass value="1"/>'
                  '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>'
                  '</link></robot>')
  world = rj.World()
  robot = world.addArticulatedSystem(str(path))
  ball = world.addSphere(0.1, 1.0)
  ball.setPosition(3, 0, 0)
  world.integrate()
  robot.setMass(0, 1e-10)                              # finite, but the steps overflow
  robot.setGeneralizedForce([1e300, 0, 0, 0, 0, 0])
  ball.setMass(1e-10)
  ball.setExternalForce(0, [1e300, 0.0, 0.0])
  with pytest.raises(rj.DivergenceError, match=r"objects: an unnamed SPHERE \(index 1\), an "
                                               r"unnamed articulated system from 'rod.urdf' "
                                               r"\(index 0\)"):
    world.integrate()


def test_non_finite_step_raises_naming_the_object_and_keeps_the_state():
  world, calm, wild = _two_balls()
  world.integrate()
  wild.setMass(1e-10)
  wild.setExternalForce(0, [1e300, 0.0, 0.0])       # finite, but 1e310 m/s^2 overflows
  before = wild.getPosition().copy()
  with pytest.raises(rj.DivergenceError, match=r"World.integrate\(\): the state became "
                                               r"non-finite .*object: 'wild' \(index 1\)"):
    world.integrate()
  np.testing.assert_array_equal(wild.getPosition(), before)
  np.testing.assert_allclose(world.getWorldTime(), 1e-3)
  wild.setMass(1.0)
  world.integrate()            # the pending force (the state before the step) is kept: finite now
  assert np.all(np.isfinite(wild.getPosition())) and wild.getPosition()[0] > before[0]


def test_finite_flag_is_per_world_in_a_batch_and_sticky():
  world, calm, wild = _two_balls()
  model, state = world.compile()
  rows = model.num_bodies   # the two balls, then the World's padding rows
  force = jnp.zeros((4, rows, 3)).at[2, 1, 0].set(jnp.nan)   # world 2's ball 'wild' gets NaN
  states = jax.tree.map(lambda x: jnp.broadcast_to(x, (4,) + x.shape), state)
  states = states.replace(bodies=states.bodies.replace(external_force=force))
  states = jax.vmap(rj.step, in_axes=(None, 0))(model, states)
  np.testing.assert_array_equal(states.finite, [True, True, False, True])
  ok = np.asarray(states.bodies.position)[[0, 1, 3]]
  assert np.all(np.isfinite(ok))
  np.testing.assert_allclose(ok, np.broadcast_to(ok[0], ok.shape))
  states = jax.vmap(rj.step, in_axes=(None, 0))(model, states)
  np.testing.assert_array_equal(states.finite, [True, True, False, True])


_LINK = ('<link name="{}"><inertial><mass value="0.02"/><inertia ixx="0.02" iyy="0.02" '
         'izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial><collision><geometry>'
         '<sphere radius="0.02"/></geometry></collision></link>')
_HINGE = ('<joint name="{}" type="revolute"><parent link="l0"/><child link="{}"/>'
          '<axis xyz="1 0 0"/></joint>')


def test_a_contact_no_body_can_act_on_gives_no_nan():
  """Found by tests/fuzz: two sibling links turning about one axis, with coincident spheres on
  it, touch (they are not parent and child), but no motion changes their gap: the Delassus
  block is zero. The contact is listed with zero impulse and the robot falls freely."""
  text = ('<robot name="siblings">' + _LINK.format("l0") + _LINK.format("l1")
          + _HINGE.format("j1", "l1") + _LINK.format("l2") + _HINGE.format("j2", "l2")
          + '</robot>')
  world = rj.World()
  world.setTimeStep(1e-3)
  robot = world.addArticulatedSystem(text)
  gc = robot.getGeneralizedCoordinate()
  gc[2] = 1.0
  robot.setGeneralizedCoordinate(gc)
  world.integrate()
  contacts = robot.getContacts()
  assert len(contacts) == 2 and all(c.isSelfCollision() for c in contacts)  # one per body
  for contact in contacts:
    np.testing.assert_array_equal(contact.getImpulse(), np.zeros(3))
  np.testing.assert_allclose(robot.getGeneralizedVelocity()[2], -9.81e-3, rtol=1e-9)
  for _ in range(10):
    world.integrate()
  assert np.all(np.isfinite(robot.getGeneralizedCoordinate()))


@pytest.mark.parametrize("dtype", [jnp.float64, jnp.float32], ids=["float64", "float32"])
def test_coincident_spheres_among_padded_slots_give_the_exact_finite_gradient(dtype):
  """Two spheres with the same centre: a zero-length normal (the narrowphase falls back to +z)
  in a contact buffer whose other slots are padding. No gravity, so the contact impulses are
  internal: the pair's momentum is conserved and its centre of mass moves at p / M whatever
  the contact does, hence d x_com(T) / d v_a,x = m_a T / M exactly. Forward values and every
  float leaf of the gradient w.r.t. the whole State (padded contact slots included) finite."""
  world = rj.World(dtype=dtype)
  world.setTimeStep(1e-3)
  world.setGravity([0, 0, 0])
  light, heavy = world.addSphere(0.1, 1.0), world.addSphere(0.1, 3.0)
  for ball in (light, heavy):
    ball.setPosition(0, 0, 1)
  light.setVelocity(0.2, 0, 0, 0, 0, 0)
  model, state = world.compile()
  steps, total = 10, 4.0

  def com_x(s):
    final, _ = rj.rollout(model, s, steps)
    return (1.0 * final.bodies.position[0, 0] + 3.0 * final.bodies.position[1, 0]) / total

  final, _ = jax.jit(rj.rollout, static_argnums=2)(model, state, steps)
  grads = jax.jit(jax.grad(com_x, allow_int=True))(state)
  position = np.asarray(final.bodies.position[:2])
  velocity = np.asarray(final.bodies.linear_velocity[:2])
  assert np.all(np.isfinite(position)) and np.all(np.isfinite(velocity))
  assert position[0, 2] != position[1, 2]          # pushed apart along the fallback normal
  momentum = 1.0 * velocity[0] + 3.0 * velocity[1]
  np.testing.assert_allclose(momentum, [0.2, 0, 0], atol=1e-12 if dtype == jnp.float64 else 1e-6)
  for leaf in jax.tree.leaves(grads):
    if leaf.dtype != jax.dtypes.float0:
      assert np.all(np.isfinite(np.asarray(leaf)))
  time = steps * 1e-3
  rtol = 1e-12 if dtype == jnp.float64 else 1e-5
  np.testing.assert_allclose(float(grads.bodies.linear_velocity[0, 0]), 1.0 * time / total,
                             rtol=rtol)
  np.testing.assert_allclose(float(grads.bodies.linear_velocity[1, 0]), 3.0 * time / total,
                             rtol=rtol)

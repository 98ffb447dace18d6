"""Contacts of articulated systems: self-collision and ignoreCollisionBetween, momentum
exchange with a single body, getContacts on a system, rayTest on links, and the batched,
differentiable step of a legged robot."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import raisim_jax as rj
from tests.legged import scenarios

# A base box, then two capsule links in the xz-plane hinged about y. Folding joint 2 swings
# link 2 back towards the base box (its grandparent, so the pair collides).
FOLDING = """<?xml version="1.0"?>
<robot name="folding">
  <link name="world"/>
  <joint name="mount" type="fixed"><parent link="world"/><child link="base"/>
    <origin xyz="0 0 0.1"/></joint>
  <link name="base">
    <inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
    <collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision>
  </link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="link1"/>
    <axis xyz="0 1 0"/><limit lower="-10" upper="10" effort="0" velocity="0"/></joint>
  <link name="link1">
    <inertial><origin xyz="0.15 0 0"/><mass value="1"/>
      <inertia ixx="0.0005" ixy="0" ixz="0" iyy="0.008" iyz="0" izz="0.008"/></inertial>
    <collision><origin xyz="0.15 0 0" rpy="0 1.5707963268 0"/>
      <geometry><capsule radius="0.02" height="0.3"/></geometry></collision>
  </link>
  <joint name="j2" type="revolute"><parent link="link1"/><child link="link2"/>
    <origin xyz="0.3 0 0"/><axis xyz="0 1 0"/><limit lower="-10" upper="10" effort="0" velocity="0"/></joint>
  <link name="link2">
    <inertial><origin xyz="0.15 0 0"/><mass value="0.5"/>
      <inertia ixx="0.0003" ixy="0" ixz="0" iyy="0.004" iyz="0" izz="0.004"/></inertial>
    <collision><origin xyz="0.15 0 0" rpy="0 1.5707963268 0"/>
      <geometry><capsule radius="0.02" height="0.3"/></geometry></collision>
  </link>
</robot>"""


def _fold(ignore):
  world = rj.World()
  world.setTimeStep(1e-3)
  world.setGravity([0, 0, 0])
  robot = world.addArticulatedSystem(FOLDING)
  if ignore:
    robot.ignoreCollisionBetween(0, 2)
  robot.setState([0.0, 1.5], [0.0, 4.0])
  angles, self_contacts, bodies, depth = [], 0, set(), 0.0
  for _ in range(600):
    world.integrate()
    angles.append(robot.getGeneralizedCoordinate()[1])
    for c in robot.getContacts():
      if c.isSelfCollision() and not c.skip():
        self_contacts += 1
        bodies.add(c.getlocalBodyIndex())
        depth = max(depth, c.getDepth())
  return np.asarray(angles), self_contacts, bodies, depth


def test_self_collision_stops_a_folding_link_and_ignore_lets_it_pass():
  # Link 2 folds back onto the base box (body 0, its grandparent): it stops there, and the
  # contact is a self-collision between bodies 0 and 2 that never penetrates 2 mm.
  angles, self_contacts, bodies, depth = _fold(ignore=False)
  assert self_contacts > 0 and bodies <= {0, 2} and depth < 2e-3
  passed, ignored_contacts, _, _ = _fold(ignore=True)
  assert ignored_contacts == 0
  # Without the pair, link 2 swings on through the box (both runs start alike).
  assert passed.max() > angles.max() + 0.3


def test_do_not_collide_with_parent_option():
  world = rj.World()
  robot = world.addArticulatedSystem(FOLDING, options=rj.ArticulatedSystemOption(
      doNotCollideWithParent=False))
  assert not robot.getOptions().doNotCollideWithParent
  robot.setState([0.0, 0.0], [0.0, 0.0])
  world.integrate()
  # Link 1 starts inside the base box and link 2 touches link 1 at the hinge: with parent
  # pairs enabled both report contacts.
  bodies = {tuple(sorted((c.getlocalBodyIndex(),))) for c in robot.getContacts()}
  assert bodies
  with pytest.raises(ValueError, match="options"):
    world.addArticulatedSystem(FOLDING, options={"doNotCollideWithParent": False})


PUSHER = """<?xml version="1.0"?>
<robot name="pusher">
  <link name="body">
    <inertial><mass value="2.0"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
    <collision><geometry><box size="0.2 0.2 0.2"/></geometry></collision>
  </link>
  <joint name="arm_joint" type="revolute"><parent link="body"/><child link="arm"/>
    <origin xyz="0 0 0"/><axis xyz="0 0 1"/></joint>
  <link name="arm">
    <inertial><mass value="0.5"/><inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial>
  </link>
</robot>"""


def test_robot_pushing_a_box_exchanges_momentum_consistently():
  """A floating two-body robot (2.5 kg) slides into a free 2.5 kg box in zero gravity, face
  to face with restitution 0: linear momentum is conserved to round-off and both move at
  half the speed afterwards."""
  world = rj.World()
  world.setTimeStep(1e-3)
  world.setGravity([0, 0, 0])
  robot = world.addArticulatedSystem(PUSHER)
  box = world.addBox(0.2, 0.2, 0.2, 2.5)
  box.setPosition(0.5, 0, 0)
  robot.setGeneralizedCoordinate([0, 0, 0, 1, 0, 0, 0, 0])
  robot.setGeneralizedVelocity([1.0, 0, 0, 0, 0, 0, 0])
  momentum0 = robot.getLinearMomentum() + 2.5 * box.getLinearVelocity()
  touched = False
  for _ in range(600):
    world.integrate()
    touched |= bool(box.getContacts())
    momentum = robot.getLinearMomentum() + 2.5 * box.getLinearVelocity()
    np.testing.assert_allclose(momentum, momentum0, atol=1e-9)
  assert touched
  assert box.getLinearVelocity()[0] == pytest.approx(0.5, abs=1e-6)
  assert robot.getGeneralizedVelocity()[0] == pytest.approx(0.5, abs=1e-6)
  contact = box.getContacts()[0] if box.getContacts() else None
  if contact is not None:
    assert world.getObject(contact.getPairObjectIndex()) is robot


def test_ray_hits_a_link():
  world = rj.World()
  robot = world.addArticulatedSystem(FOLDING)
  robot.setState([0.0, 0.0], [0.0, 0.0])
  hits = world.rayTest([0.45, 0.0, 1.0], [0, 0, -1], 5.0)
  (hit,) = list(hits)
  assert hit.getObject() is robot and hit.getLocalBodyIndex() == 2
  np.testing.assert_allclose(hit.getPosition(), [0.45, 0.0, 0.12], atol=1e-9)
  assert not list(world.rayTest([0.45, 0.0, 1.0], [0, 0, -1], 5.0, robot, 2))


def test_batched_legged_step_and_pd_target_gradient():
  """The quadruped's step jits and vmaps over 1,024 worlds (each its own PD target), and the
  gradient of the base height after a contact-free 30 ms fall w.r.t. the knee targets is
  finite and matches central finite differences (float64)."""
  world, robot, nominal, feet = scenarios.standing_world("quadruped", jnp.float64)
  model, state = world.compile()
  batch = 1024
  offsets = jnp.linspace(-0.2, 0.2, batch)
  states = jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), state)
  system = states.articulated[0]
  states = states.replace(articulated=(system.replace(
      p_target=system.p_target.at[:, 9].add(offsets)),))
  batched_model = model.replace(solver=model.solver.replace(differentiable=False))
  step = jax.jit(jax.vmap(rj.step, in_axes=(None, 0)))
  for _ in range(3):
    states = step(batched_model, states)
  gc = np.asarray(states.articulated[0].generalized_coordinate)
  assert np.all(np.isfinite(gc))
  assert not np.allclose(gc[0, 7:], gc[-1, 7:])
  one = state.replace(articulated=(state.articulated[0].replace(
      p_target=state.articulated[0].p_target.at[9].add(offsets[7])),))
  single_step = jax.jit(rj.step)
  single = single_step(model, single_step(model, single_step(model, one)))
  np.testing.assert_allclose(gc[7], single.articulated[0].generalized_coordinate, atol=1e-12)

  def height(knee_offset):
    s = state.replace(articulated=(state.articulated[0].replace(
        p_target=state.articulated[0].p_target.at[np.array([9, 12, 15, 18])].add(knee_offset)),))
    final, _ = rj.rollout(model, s, 30)
    return final.articulated[0].generalized_coordinate[2]

  # One program gives the values for the finite differences and the gradient.
  value_and_grad = jax.jit(jax.value_and_grad(height))
  grad = value_and_grad(0.1)[1]
  eps = 1e-5
  fd = (value_and_grad(0.1 + eps)[0] - value_and_grad(0.1 - eps)[0]) / (2 * eps)
  assert np.isfinite(grad) and abs(grad) > 1e-6
  assert grad == pytest.approx(float(fd), rel=1e-5, abs=1e-9)

"""Several robots in one world (issue: articulated systems II, item 8): systems of the same
structure are stepped together under one vmap (dynamics/system_groups.py), so the traced step
does not grow with the number of identical robots, and each robot moves exactly as it would
alone in the world."""

import importlib
import os

import jax
import numpy as np

import raisim_jax as rj
from raisim_jax.dynamics import system_groups

step_module = importlib.import_module("raisim_jax.step")
RSC = os.path.join(os.path.dirname(__file__), "..", "..", "rsc", "urdf")
ALL_JOINTS = os.path.join(RSC, "all_joints.urdf")
FIXED_ARM = os.path.join(RSC, "fixed_arm.urdf")


def _initial_states(robot, k):
  """A distinct dropped pose and velocity for copy k of all_joints.urdf."""
  gc = robot.getGeneralizedCoordinate()
  gc[:3] = [3.0 * k, 0.0, 0.25 + 0.05 * k]
  gc[3:7] = [np.cos(0.1 * k), np.sin(0.1 * k), 0.0, 0.0]
  gv = 0.2 * np.sin(np.arange(robot.getDOF()) + k)
  return gc, gv


def _world(copies, with_arm):
  world = rj.World()
  world.setTimeStep(2e-3)
  world.addGround()
  robots = []
  for k in copies:
    robot = world.addArticulatedSystem(ALL_JOINTS)
    robot.setState(*_initial_states(robot, k))
    robots.append(robot)
  arm = world.addArticulatedSystem(FIXED_ARM) if with_arm else None
  if arm is not None:
    arm.setState(0.3 * np.ones(arm.getGeneralizedCoordinateDim()), np.ones(arm.getDOF()))
  return world, robots, arm


def test_identical_systems_form_one_group_and_each_moves_as_if_alone():
  world, robots, arm = _world(range(3), with_arm=True)
  model, state = world.compile()
  assert system_groups.structure_groups(model.articulated) == [[0, 1, 2], [3]]
  steps = 60
  step = jax.jit(rj.step)
  for _ in range(steps):
    state = step(model, state)
  assert int(np.sum(np.asarray(state.contacts.active))) > 0      # they landed on the ground
  for k in range(3):
    alone, (robot,), _ = _world([k], with_arm=False)
    alone_model, alone_state = alone.compile()
    for _ in range(steps):
      alone_state = step(alone_model, alone_state)
    np.testing.assert_allclose(state.articulated[k].generalized_coordinate,
                               alone_state.articulated[0].generalized_coordinate, atol=1e-10)
    np.testing.assert_allclose(state.articulated[k].generalized_velocity,
                               alone_state.articulated[0].generalized_velocity, atol=1e-8)
  arm_alone, _, arm = _world([], with_arm=True)
  arm_model, arm_state = arm_alone.compile()
  for _ in range(steps):
    arm_state = step(arm_model, arm_state)
  np.testing.assert_allclose(state.articulated[3].generalized_coordinate,
                             arm_state.articulated[0].generalized_coordinate, atol=1e-10)


def test_velocity_step_does_not_grow_with_the_number_of_identical_robots():
  """integrate2's traced program (StableHLO lines) for 6 identical robots stays within 1.5x of
  one robot's; a Python loop per system made it grow about linearly (2.3x for 4 quadrupeds)."""
  sizes = []
  for count in (1, 6):
    world, _, _ = _world(range(count), with_arm=False)
    model, state = world.compile()
    state = step_module.integrate1(model, state)
    text = jax.jit(step_module.integrate2).lower(model, state).as_text()
    sizes.append(text.count("\n"))
  assert sizes[1] < 1.5 * sizes[0], sizes

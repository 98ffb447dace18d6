"""Meaningless settings (issue #9 item 7): rejected with an error naming the argument, or
accepted with a warning where RaiSim accepts them, and never a silent NaN."""

import os
import warnings

import numpy as np
import pytest

import raisim_jax as rj

RSC = os.path.join(os.path.dirname(__file__), "..", "rsc", "urdf")


def test_restitution_above_one_warns_and_bounces_at_that_ratio():
  world = rj.World()
  world.setTimeStep(1e-3)
  world.addGround(0.0, "floor")
  ball = world.addSphere(0.1, 1.0, "rubber")
  with pytest.warns(UserWarning, match=r"restitution 1.2 > 1: every bounce adds energy"):
    world.setMaterialPairProp("floor", "rubber", 0.0, 1.2, 0.0)
  # The setting does what it says: the ball leaves at 1.2 x its impact speed.
  ball.setPosition(0, 0, 0.15)
  ball.setLinearVelocity([0, 0, -1.0])
  impact = rebound = None
  for _ in range(200):
    v_before = ball.getLinearVelocity()[2]
    world.integrate()
    v_after = ball.getLinearVelocity()[2]
    if v_before < 0 <= v_after:
      impact, rebound = -v_before, v_after
      break
  assert impact is not None
  np.testing.assert_allclose(rebound / impact, 1.2, rtol=0.02)


def test_large_time_step_warns_small_ones_do_not():
  world = rj.World()
  with pytest.warns(UserWarning, match=r"setTimeStep\(1.0\): a time step above 0.05 s"):
    world.setTimeStep(1.0)
  assert world.getTimeStep() == 1.0
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    world.setTimeStep(1e-3)
  with pytest.raises(ValueError, match="argument 'dt' must be positive"):
    world.setTimeStep(0.0)


def _robot():
  world = rj.World()
  world.addGround()
  return world, world.addArticulatedSystem(os.path.join(RSC, "quadruped.urdf"))


def test_zero_base_quaternion_is_rejected_and_others_are_normalised():
  world, robot = _robot()
  gc = robot.getGeneralizedCoordinate()
  gc[2] = 0.6
  bad = gc.copy()
  bad[3:7] = 0.0
  with pytest.raises(ValueError, match=r"argument 'jointState': the quaternion of joint 0 "
                                       r"\(entries 3..6\) is zero"):
    robot.setGeneralizedCoordinate(bad)
  with pytest.raises(ValueError, match=r"argument 'genco': the quaternion"):
    robot.setState(bad, np.zeros(robot.getDOF()))
  scaled = gc.copy()
  scaled[3:7] = [2.0, 0.0, 0.0, 0.0]
  robot.setGeneralizedCoordinate(scaled)
  np.testing.assert_allclose(robot.getGeneralizedCoordinate()[3:7], [1, 0, 0, 0])
  world.integrate()
  assert np.all(np.isfinite(robot.getGeneralizedCoordinate()))


def test_absurd_velocities_are_rejected():
  world, robot = _robot()
  huge = np.zeros(robot.getDOF())
  huge[7] = 1e200
  with pytest.raises(ValueError, match=r"argument 'jointVel' has a speed of 1e\+200"):
    robot.setGeneralizedVelocity(huge)
  with pytest.raises(ValueError, match=r"argument 'genvel' has a speed"):
    robot.setState(robot.getGeneralizedCoordinate(), huge)
  ball = world.addSphere(0.1, 1.0)
  with pytest.raises(ValueError, match=r"argument 'linearVelocity' has a speed of 1e\+12"):
    ball.setLinearVelocity([0, 0, 1e12])
  with pytest.raises(ValueError, match=r"argument 'angularVelocity' has a speed"):
    ball.setVelocity([0, 0, 0], [1e9, 0, 0])
  ball.setLinearVelocity([0, 0, 300.0])      # fast, but a motion
  world.integrate()
  assert np.isfinite(ball.getPosition()).all()


def test_warnings_point_at_the_users_line():
  """The OO methods run inside a precision wrapper (oo/precision.py); warnings still name
  the caller's file, not raisim_jax's."""
  world = rj.World()
  with pytest.warns(UserWarning) as record:
    world.setTimeStep(0.1)
    world.setMaterialPairProp("a", "b", 0.5, 1.5, 0.0)
  assert [w.filename for w in record] == [__file__, __file__]
  world.setTimeStep(0.01)
  world.addGround()
  for k in range(3):
    world.addBox(0.3, 0.3, 0.3, 1.0).setPosition(k, 0, 0.14)
  world.setContactCapacity(2)
  with pytest.warns(UserWarning, match="setContactCapacity") as record:
    world.integrate()
  assert record[0].filename == __file__

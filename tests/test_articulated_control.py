"""Articulated control, passive elements and limits against closed forms: the stable implicit
PD (and the explicit PD it outlasts), actuation and velocity limits, joint-limit hard stops,
joint springs (revolute and spherical), and the integration schemes."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import raisim_jax as rj

G = 9.81

# A rod of mass m, length 2 l, hinged at its end about y, hanging along -z.
PENDULUM = """<?xml version="1.0"?>
<robot name="limited_pendulum">
  <link name="world"/>
  <joint name="mount" type="fixed"><parent link="world"/><child link="base"/>
    <origin xyz="0 0 1"/></joint>
  <link name="base"/>
  <joint name="hinge" type="revolute"><parent link="base"/><child link="rod"/>
    <axis xyz="0 1 0"/><limit lower="{lower}" upper="{upper}" effort="0" velocity="0"/>
    <dynamics damping="0" {spring}/></joint>
  <link name="rod">
    <inertial><origin xyz="0 0 -0.5"/><mass value="2.0"/>
      <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.01"/></inertial>
  </link>
</robot>"""
HINGE_INERTIA = 0.1 + 2.0 * 0.5 ** 2


def pendulum_world(lower=-3.0, upper=3.0, spring="", dt=1e-3, gravity=True):
  world = rj.World()
  world.setTimeStep(dt)
  if not gravity:
    world.setGravity([0, 0, 0])
  robot = world.addArticulatedSystem(PENDULUM.format(lower=lower, upper=upper, spring=spring))
  return world, robot


def test_stable_pd_tracks_a_step_with_gains_that_make_an_explicit_pd_diverge():
  """A hinge of inertia I = 0.6 kg m^2 at dt = 1e-2. With a = kp dt^2 / I and b = kd dt / I, an
  explicit PD (force from the start-of-step state, q moved with u+) is stable iff
  a + 2 b < 4 and b < 2. kp = 2e4, kd = 100 gives a + 2 b = 6.7: it diverges; a tenth of the
  gains (0.67) converges. The implicit PD settles on the target with the full gains."""
  kp, kd, dt, target = 2e4, 1e2, 1e-2, 0.5
  world, robot = pendulum_world(dt=dt, gravity=False)
  robot.setControlMode(rj.ControlMode.PD_PLUS_FEEDFORWARD_TORQUE)
  robot.setPdGains([kp], [kd])
  robot.setPdTarget([target], [0.0])
  for _ in range(200):
    world.integrate()
  assert robot.getGeneralizedCoordinate()[0] == pytest.approx(target, abs=1e-6)
  assert abs(robot.getGeneralizedVelocity()[0]) < 1e-6

  # The same gains applied explicitly (generalized force from the start-of-step state).
  world, robot = pendulum_world(lower=-1e9, upper=1e9, dt=dt, gravity=False)
  peak = 0.0
  for _ in range(60):
    q, u = robot.getGeneralizedCoordinate()[0], robot.getGeneralizedVelocity()[0]
    robot.setGeneralizedForce([kp * (target - q) - kd * u])
    world.integrate()
    peak = max(peak, abs(robot.getGeneralizedCoordinate()[0]))
    if not np.isfinite(peak) or peak > 1e3:
      break
  assert peak > 1e3 or not np.isfinite(peak)

  # A tenth of the gains is what the explicit PD tolerates here: it converges.
  world, robot = pendulum_world(lower=-1e9, upper=1e9, dt=dt, gravity=False)
  for _ in range(300):
    q, u = robot.getGeneralizedCoordinate()[0], robot.getGeneralizedVelocity()[0]
    robot.setGeneralizedForce([kp / 10 * (target - q) - kd / 10 * u])
    world.integrate()
  assert robot.getGeneralizedCoordinate()[0] == pytest.approx(target, abs=1e-3)


def test_implicit_pd_step_matches_the_closed_form_of_one_step():
  """One step of the implicit PD on the hinge (no gravity): (I + dt kd + dt^2 kp) u+ =
  I u + dt (kp (q* - q) + kd v*) and q+ = q + dt u+; getGeneralizedForce is the PD force at
  the end-of-step state."""
  kp, kd, dt = 300.0, 7.0, 1e-3
  world, robot = pendulum_world(dt=dt, gravity=False)
  robot.setState([0.2], [0.5])
  robot.setControlMode(rj.ControlMode.PD_PLUS_FEEDFORWARD_TORQUE)
  robot.setPdGains([kp], [kd])
  robot.setPdTarget([0.9], [0.3])
  robot.setGeneralizedForce([1.5])
  world.integrate()
  u_next = ((HINGE_INERTIA * 0.5 + dt * (kp * (0.9 - 0.2) + kd * 0.3 + 1.5))
            / (HINGE_INERTIA + dt * kd + dt * dt * kp))
  assert robot.getGeneralizedVelocity()[0] == pytest.approx(u_next, rel=1e-12)
  assert robot.getGeneralizedCoordinate()[0] == pytest.approx(0.2 + dt * u_next, rel=1e-12)
  force = 1.5 + kp * (0.9 - 0.2 - dt * u_next) + kd * (0.3 - u_next)
  assert robot.getGeneralizedForce()[0] == pytest.approx(force, rel=1e-12)
  assert robot.getGeneralizedAcceleration()[0] == pytest.approx(force / HINGE_INERTIA,
                                                                  rel=1e-9)


def test_actuation_limits_bound_feedforward_plus_pd_force():
  world, robot = pendulum_world(gravity=False)
  robot.setControlMode(rj.ControlMode.PD_PLUS_FEEDFORWARD_TORQUE)
  robot.setPdGains([1000.0], [10.0])
  robot.setPdTarget([1.0], [0.0])
  robot.setActuationLimits([2.0], [-0.5])
  np.testing.assert_array_equal(robot.getActuationUpperLimits(), [2.0])
  np.testing.assert_array_equal(robot.getActuationLowerLimits(), [-0.5])
  world.integrate()
  # The PD asks for ~1000 N m: the bound applies as a constant torque.
  assert robot.getGeneralizedForce()[0] == pytest.approx(2.0)
  assert robot.getGeneralizedAcceleration()[0] == pytest.approx(2.0 / HINGE_INERTIA, rel=1e-9)
  # Force mode: the feed-forward force is bounded too (lower bound here).
  robot.setControlMode(rj.ControlMode.FORCE_AND_TORQUE)
  robot.setState([0.0], [0.0])
  robot.setGeneralizedForce([-3.0])
  assert robot.getGeneralizedForce()[0] == pytest.approx(-0.5)
  world.integrate()
  assert robot.getGeneralizedAcceleration()[0] == pytest.approx(-0.5 / HINGE_INERTIA, rel=1e-9)
  with pytest.raises(ValueError, match="lower"):
    robot.setActuationLimits([1.0], [2.0])
  with pytest.raises(ValueError, match="mode"):
    robot.setControlMode(7)


def test_velocity_limit_clips_the_joint_speed():
  world, robot = pendulum_world(gravity=False)
  robot.setJointVelocityLimits([0.25])
  robot.setGeneralizedForce([5.0])
  for _ in range(100):
    world.integrate()
  assert robot.getGeneralizedVelocity()[0] == pytest.approx(0.25)
  # Accelerates at 5 / I until t1 = 0.25 I / 5, then coasts at the limit.
  t1 = 0.25 * HINGE_INERTIA / 5.0
  assert robot.getGeneralizedCoordinate()[0] == pytest.approx(
      0.5 * 5.0 / HINGE_INERTIA * t1**2 + 0.25 * (0.1 - t1), rel=2e-2)


@pytest.mark.parametrize("speed", [0.5, 3.0])
def test_pendulum_hits_its_joint_limit_and_stops_without_bounce(speed):
  world, robot = pendulum_world(lower=-0.4, upper=0.3, gravity=False)
  robot.setState([0.0], [speed])
  hit_step = None
  for k in range(int(0.6 / speed / 1e-3)):
    world.integrate()
    if hit_step is None and robot.getJointLimitViolations():
      hit_step = k
  q, u = robot.getGeneralizedCoordinate()[0], robot.getGeneralizedVelocity()[0]
  assert hit_step is not None and hit_step <= int(0.3 / speed / 1e-3) + 1
  assert q == pytest.approx(0.3, abs=1e-9)           # resting on the stop: zero restitution
  assert abs(u) < 1e-9
  assert robot.getContacts() == []                    # not listed as contacts (spec)


def test_joint_limit_impulses_remove_exactly_the_momentum_of_the_impact():
  """A joint 1 mm before its stop at 2 rad/s (dt = 1 ms): the first step lets it close the
  gap exactly (speculative row: u+ = gap / dt) and removes I (2 - 1); the next step removes
  the rest. Together the stop took -I * speed: zero restitution."""
  world, robot = pendulum_world(lower=-0.4, upper=0.3, gravity=False)
  speed, gap, dt = 2.0, 1e-3, 1e-3
  robot.setState([0.3 - gap], [speed])
  world.integrate()
  (first,) = robot.getJointLimitViolations()
  assert first.jointId == 1 and first.isUpper and first.imp_i[0] == first.impulse
  assert first.impulse == pytest.approx(-HINGE_INERTIA * (speed - gap / dt), rel=1e-9)
  assert robot.getGeneralizedCoordinate()[0] == pytest.approx(0.3, abs=1e-12)
  world.integrate()
  (second,) = robot.getJointLimitViolations()
  assert first.impulse + second.impulse == pytest.approx(-HINGE_INERTIA * speed, rel=1e-9)
  assert robot.getGeneralizedVelocity()[0] == pytest.approx(0.0, abs=1e-12)
  assert robot.getGeneralizedCoordinate()[0] == pytest.approx(0.3, abs=1e-12)


def test_joint_limit_holds_against_gravity_and_changes_with_setJointLimits():
  world, robot = pendulum_world(lower=-0.2, upper=0.2)
  robot.setState([0.1], [0.0])
  robot.setGeneralizedForce([50.0])                   # pushes into the upper stop
  for _ in range(300):
    world.integrate()
  assert robot.getGeneralizedCoordinate()[0] == pytest.approx(0.2, abs=1e-6)
  (violation,) = robot.getJointLimitViolations()
  torque = 50.0 - 2.0 * G * 0.5 * np.sin(0.2)          # net generalized force into the stop
  assert violation.impulse / world.getTimeStep() == pytest.approx(-torque, rel=1e-6)
  robot.setJointLimits([[-0.2, 0.5]])
  for _ in range(50):
    world.integrate()
  assert robot.getGeneralizedCoordinate()[0] > 0.21


def test_revolute_spring_oscillates_about_its_mount_at_the_analytic_frequency():
  k = 40.0
  world, robot = pendulum_world(spring=f'stiffness="{k}" spring_mount="0.3"', dt=1e-4,
                                gravity=False)
  robot.setIntegrationScheme(rj.IntegrationScheme.TRAPEZOID)
  robot.setState([0.5], [0.0])
  period = 2 * np.pi * np.sqrt(HINGE_INERTIA / k)
  qs = []
  for _ in range(int(1.25 * period / 1e-4)):
    world.integrate()
    qs.append(robot.getGeneralizedCoordinate()[0])
  qs = np.asarray(qs) - 0.3
  down = np.nonzero((qs[:-1] > 0) & (qs[1:] <= 0))[0]
  up = np.nonzero((qs[:-1] < 0) & (qs[1:] >= 0))[0]
  assert 2 * (up[0] - down[0]) * 1e-4 == pytest.approx(period, rel=2e-3)
  assert qs.min() == pytest.approx(-0.2, rel=2e-2)      # symmetric about the mount


SPHERICAL = """<?xml version="1.0"?>
<robot name="ball_joint">
  <link name="world"/>
  <joint name="mount" type="fixed"><parent link="world"/><child link="base"/></joint>
  <link name="base"/>
  <joint name="ball" type="spherical"><parent link="base"/><child link="body"/>
    <dynamics stiffness="{k}" spring_mount="{mount}"/></joint>
  <link name="body">
    <inertial><mass value="1.0"/>
      <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial>
  </link>
</robot>"""


def test_spherical_spring_oscillates_about_its_mount_quaternion():
  """A ball joint with a spring about its mount (a 0.4 rad turn about x); a body with
  isotropic inertia 0.02 started 0.1 rad further oscillates about the mount with period
  2 pi sqrt(I / k)."""
  k, inertia, dt = 2.0, 0.02, 1e-4
  mount = np.array([np.cos(0.2), np.sin(0.2), 0.0, 0.0])
  world = rj.World()
  world.setTimeStep(dt)
  world.setGravity([0, 0, 0])
  robot = world.addArticulatedSystem(SPHERICAL.format(k=k, mount=" ".join(map(str, mount))))
  robot.setIntegrationScheme(rj.IntegrationScheme.TRAPEZOID)
  robot.setGeneralizedCoordinate([np.cos(0.25), np.sin(0.25), 0.0, 0.0])
  period = 2 * np.pi * np.sqrt(inertia / k)
  angles = []
  for _ in range(int(1.25 * period / dt)):
    world.integrate()
    w, x = robot.getGeneralizedCoordinate()[:2]
    angles.append(2 * np.arctan2(x, w) - 0.4)
  angles = np.asarray(angles)
  down = np.nonzero((angles[:-1] > 0) & (angles[1:] <= 0))[0]
  up = np.nonzero((angles[:-1] < 0) & (angles[1:] >= 0))[0]
  assert 2 * (up[0] - down[0]) * dt == pytest.approx(period, rel=2e-3)
  assert angles.min() == pytest.approx(-0.1, rel=2e-2)


def test_integration_schemes_position_update():
  """TRAPEZOID, SEMI_IMPLICIT and EULER differ only in the velocity that moves q."""
  dt, torque = 1e-2, 0.7
  results = {}
  for scheme in (rj.IntegrationScheme.TRAPEZOID, rj.IntegrationScheme.SEMI_IMPLICIT,
                 rj.IntegrationScheme.EULER):
    world, robot = pendulum_world(dt=dt, gravity=False)
    robot.setIntegrationScheme(scheme)
    assert robot.getIntegrationScheme() == scheme
    robot.setState([0.1], [0.2])
    robot.setGeneralizedForce([torque])
    world.integrate()
    results[scheme] = robot.getGeneralizedCoordinate()[0]
  u_next = 0.2 + dt * torque / HINGE_INERTIA
  assert results[rj.IntegrationScheme.SEMI_IMPLICIT] == pytest.approx(0.1 + dt * u_next)
  assert results[rj.IntegrationScheme.EULER] == pytest.approx(0.1 + dt * 0.2)
  assert results[rj.IntegrationScheme.TRAPEZOID] == pytest.approx(0.1 + dt * (0.2 + u_next) / 2)
  world, robot = pendulum_world()
  with pytest.raises(ValueError, match="RUNGE_KUTTA_4"):
    robot.setIntegrationScheme(rj.IntegrationScheme.RUNGE_KUTTA_4)
  with pytest.raises(ValueError, match="scheme"):
    robot.setIntegrationScheme(9)


def test_pd_targets_and_gains_validate_their_dimensions():
  world, robot = pendulum_world()
  with pytest.raises(ValueError, match="pgain"):
    robot.setPdGains([1.0, 2.0], [1.0])
  with pytest.raises(ValueError, match="dgain"):
    robot.setDGains([-1.0])
  with pytest.raises(ValueError, match="posTarget"):
    robot.setPTarget([0.1, 0.2])
  with pytest.raises(ValueError, match="velTarget"):
    robot.setDTarget([np.nan])
  robot.setPdGains([3.0], [0.5])
  robot.setPdTarget([0.2], [0.1])
  p, d = robot.getPdGains()
  assert p[0] == 3.0 and d[0] == 0.5
  qt, vt = robot.getPdTarget()
  assert qt[0] == pytest.approx(0.2) and vt[0] == pytest.approx(0.1)
  # A bad velocity target leaves both targets as they were (checked before either is written).
  with pytest.raises(ValueError, match="velTarget"):
    robot.setPdTarget([0.7], [0.1, 0.2])
  qt, vt = robot.getPdTarget()
  assert qt[0] == pytest.approx(0.2) and vt[0] == pytest.approx(0.1)


# The same rod on a spherical joint whose <limit upper> is a cone angle (rotation angle cap).
SPHERICAL_PENDULUM = """<?xml version="1.0"?>
<robot name="cone_pendulum">
  <link name="world"/>
  <joint name="mount" type="fixed"><parent link="world"/><child link="base"/>
    <origin xyz="0 0 1"/></joint>
  <link name="base"/>
  <joint name="ball" type="spherical"><parent link="base"/><child link="rod"/>
    <limit upper="{angle}"/></joint>
  <link name="rod">
    <inertial><origin xyz="0 0 -0.5"/><mass value="2.0"/>
      <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.01"/></inertial>
  </link>
</robot>"""


def _rotation_angle(quaternion):
  w, v = abs(quaternion[0]), np.linalg.norm(quaternion[1:])
  return 2.0 * np.arctan2(v, w)


def test_spherical_cone_limit_stops_the_joint_at_its_angle_with_zero_bounce():
  """Zero gravity, spinning about x at 2 rad/s from the identity: the rotation angle reaches
  the 0.5 rad cone at t = 0.25 s and stays there; the cone's impulses add up to the angular
  momentum about the pivot, I_x * 2 with I_x = 0.1 + 2 * 0.5^2 (zero restitution)."""
  world = rj.World()
  world.setTimeStep(1e-3)
  world.setGravity([0, 0, 0])
  robot = world.addArticulatedSystem(SPHERICAL_PENDULUM.format(angle=0.5))
  assert robot.getJointLimits()[0].tolist() == [0.5, np.inf]
  robot.setState([1.0, 0.0, 0.0, 0.0], [2.0, 0.0, 0.0])
  total, angles, first_hit = 0.0, [], None
  for k in range(400):
    world.integrate()
    angles.append(_rotation_angle(robot.getGeneralizedCoordinate()))
    for violation in robot.getJointLimitViolations():
      assert violation.jointId == 1 and violation.isUpper and violation.impulse >= 0.0
      total += violation.impulse
      first_hit = k if first_hit is None else first_hit
  assert first_hit is not None and abs(first_hit - 249) <= 1
  assert max(angles) == pytest.approx(0.5, abs=1e-9)
  assert np.linalg.norm(robot.getGeneralizedVelocity()) < 1e-9
  assert total == pytest.approx((0.1 + 2.0 * 0.25) * 2.0, rel=1e-9)
  assert robot.getContacts() == []


def test_spherical_cone_limit_holds_against_a_torque_and_setJointLimits_moves_it():
  """Gravity on, a constant 5 N m about x pushes the rod into a 0.3 rad cone: it rests on the
  cone, where the cone's impulse per step balances 5 - m g l sin(0.3). Widening the cone with
  setJointLimits lets it swing further."""
  world = rj.World()
  world.setTimeStep(1e-3)
  robot = world.addArticulatedSystem(SPHERICAL_PENDULUM.format(angle=0.3))
  robot.setGeneralizedForce([5.0, 0.0, 0.0])
  for _ in range(1500):
    world.integrate()
  gc = robot.getGeneralizedCoordinate()
  assert _rotation_angle(gc) == pytest.approx(0.3, abs=1e-6)
  (violation,) = robot.getJointLimitViolations()
  assert violation.impulse / world.getTimeStep() == pytest.approx(
      5.0 - 2.0 * G * 0.5 * np.sin(0.3), rel=1e-5)
  limits = robot.getJointLimits()
  limits[0, 0] = 0.6
  robot.setJointLimits(limits)
  for _ in range(300):
    world.integrate()
  assert _rotation_angle(robot.getGeneralizedCoordinate()) > 0.35
  with pytest.raises(ValueError, match="spherical joint 'ball'.*cone angle must be in"):
    robot.setJointLimits([[-0.1, np.inf], [-np.inf, np.inf], [-np.inf, np.inf]])


def _period_and_centre(world, robot, q0, duration):
  """(period from successive downward and upward crossings of the mean, mean) of the hinge
  angle released at rest from q0."""
  robot.setState([q0], [0.0])
  qs = []
  for _ in range(int(duration / world.getTimeStep())):
    world.integrate()
    qs.append(robot.getGeneralizedCoordinate()[0])
  qs = np.asarray(qs)
  centre = 0.5 * (qs.max() + qs.min())
  shifted = qs - centre
  down = np.nonzero((shifted[:-1] > 0) & (shifted[1:] <= 0))[0]
  up = np.nonzero((shifted[:-1] < 0) & (shifted[1:] >= 0))[0]
  return 2 * abs(up[0] - down[0]) * world.getTimeStep(), centre


def test_addSpring_adds_to_the_urdf_spring_and_edits_apply():
  """URDF spring k=10 at 0.5 plus addSpring k=30 at 0.1: one spring k=40 about
  (10*0.5 + 30*0.1)/40 = 0.2, period 2 pi sqrt(I/40). Raising the added stiffness to 90
  through getSprings() gives k=100 about 0.14."""
  world, robot = pendulum_world(spring='stiffness="10" spring_mount="0.5"', dt=1e-4,
                                gravity=False)
  robot.setIntegrationScheme(rj.IntegrationScheme.TRAPEZOID)
  robot.addSpring(rj.SpringElement(childBodyId=1, stiffness=30.0, mount=[0.1]))
  period, centre = _period_and_centre(world, robot, 0.4, 1.0)
  assert period == pytest.approx(2 * np.pi * np.sqrt(HINGE_INERTIA / 40.0), rel=2e-3)
  assert centre == pytest.approx(0.2, abs=1e-3)
  (spring,) = robot.getSprings()
  spring.stiffness = 90.0
  period, centre = _period_and_centre(world, robot, 0.4, 1.0)
  assert period == pytest.approx(2 * np.pi * np.sqrt(HINGE_INERTIA / 100.0), rel=2e-3)
  assert centre == pytest.approx(0.14, abs=1e-3)
  with pytest.raises(ValueError, match="mount of joint 'hinge' must have 1 value"):
    robot.addSpring(rj.SpringElement(childBodyId=1, stiffness=1.0, mount=[1, 0, 0, 0]))
  with pytest.raises(ValueError, match="childBodyId must be a body index < 2"):
    robot.addSpring(rj.SpringElement(childBodyId=5, stiffness=1.0, mount=[0.0]))
  with pytest.raises(ValueError, match="stiffness"):
    spring.stiffness = -1.0
  assert len(robot.getSprings()) == 1


def test_spherical_springs_with_different_mounts_are_refused():
  world = rj.World()
  robot = world.addArticulatedSystem(SPHERICAL.format(k=5.0, mount="1 0 0 0"))
  with pytest.raises(ValueError, match="spherical joint 'ball' with different mounts"):
    robot.addSpring(rj.SpringElement(1, 5.0, [np.cos(0.3), np.sin(0.3), 0.0, 0.0]))
  assert robot.getSprings() == []
  robot.addSpring(rj.SpringElement(1, 5.0, [1.0, 0.0, 0.0, 0.0]))
  world.integrate()
  assert len(robot.getSprings()) == 1


def test_gradient_with_a_cone_limit_and_a_hinge_limit_at_zero_is_finite_and_right():
  """A spherical joint with a cone and a limited hinge below it at q = 0 (its neighbouring
  coordinates all zero): the step's gradient w.r.t. gc is finite and matches central finite
  differences (no limit active, so the step is smooth there)."""
  urdf = SPHERICAL_PENDULUM.format(angle=0.5).replace("</robot>", """
  <joint name="hinge" type="revolute"><parent link="rod"/><child link="tip"/>
    <origin xyz="0 0 -1"/><axis xyz="0 1 0"/><limit lower="-1" upper="1"/></joint>
  <link name="tip"><inertial><origin xyz="0 0 -0.5"/><mass value="1.0"/>
    <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
</robot>""")
  world = rj.World()
  world.setTimeStep(1e-3)
  world.setContactSolverDifferentiable(True)
  robot = world.addArticulatedSystem(urdf)
  robot.setGeneralizedCoordinate([np.cos(0.1), np.sin(0.1), 0.0, 0.0, 0.0])
  model, state = world.compile()

  def total(gc):
    moved = state.replace(articulated=(state.articulated[0].replace(generalized_coordinate=gc),))
    return jnp.sum(rj.step(model, moved).articulated[0].generalized_velocity)

  gc0 = state.articulated[0].generalized_coordinate
  value_and_grad = jax.jit(jax.value_and_grad(total))   # one program for both
  grad = np.asarray(value_and_grad(gc0)[1])
  assert np.all(np.isfinite(grad))
  value = lambda gc: value_and_grad(gc)[0]
  eps = 1e-6
  fd = [(value(gc0.at[i].add(eps)) - value(gc0.at[i].add(-eps))) / (2 * eps) for i in range(5)]
  np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)


# A floating chain: a box base, then hinges about z with velocity limits; no <inertial> origin
# offsets, so nothing is special about the numbers.
FLOATING_CHAIN = """<?xml version="1.0"?>
<robot name="floating_chain">
  <link name="base"><inertial><mass value="2.0"/>
    <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.03" iyz="0" izz="0.04"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="a"/>
    <origin xyz="0.2 0 0.05"/><axis xyz="0 0 1"/>
    <limit lower="-10" upper="10" effort="100" velocity="1.5"/></joint>
  <link name="a"><inertial><origin xyz="0.3 0.02 0"/><mass value="0.7"/>
    <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
  <joint name="j2" type="revolute"><parent link="a"/><child link="b"/>
    <origin xyz="0.6 0 0"/><axis xyz="0 0.6 0.8"/>
    <limit lower="-10" upper="10" effort="100" velocity="2.0"/></joint>
  <link name="b"><inertial><origin xyz="0.25 0 0"/><mass value="0.4"/>
    <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
</robot>"""


@pytest.mark.parametrize("joint_speeds", [(6.0, 0.5), (-6.0, 5.0)])
def test_velocity_limits_act_at_the_joints_of_a_floating_robot(joint_speeds):
  """Joint velocity limits are joint impulses (spec: "velocity limit forces acting at the
  joint"). Oracle: the same step without limits (a twin world): the difference of the two
  end-of-step velocities, times the mass matrix at the start of the step, is the impulse the
  limits applied; it must be zero on the floating base (no force on the robot as a whole: its
  momentum is kept) and on every dof inside its limit, and each dof past its limit ends exactly
  on it. Clipping u+ entry by entry, as before, moved the base with no force: pybullet_data's
  TwoJointRobot gained 4x its energy within a second of falling."""
  u = np.array([0.3, -0.2, 0.1, 0.5, -1.0, 2.0, *joint_speeds])
  worlds = []
  for limited in (True, False):
    world = rj.World()
    world.setGravity([0, 0, 0])
    robot = world.addArticulatedSystem(FLOATING_CHAIN)
    if not limited:
      robot.setJointVelocityLimits(np.full(robot.getDOF(), np.inf))
    robot.setGeneralizedVelocity(u)
    worlds.append((world, robot))
  mass = worlds[0][1].getMassMatrix()
  limits = worlds[0][1].getJointVelocityLimits()
  for world, _ in worlds:
    world.integrate()
  limited, free = (robot.getGeneralizedVelocity() for _, robot in worlds)
  impulse = mass @ (limited - free)
  acting = np.abs(impulse) > 1e-9
  assert acting.any() and not acting[:6].any()              # nothing on the floating base
  np.testing.assert_allclose(np.abs(limited[acting]), limits[acting], rtol=1e-12)
  assert np.all(impulse[acting] * limited[acting] < 0)      # it pushes back, never pulls
  assert np.all(np.abs(limited) <= limits + 1e-9)
  assert limited @ mass @ limited < free @ mass @ free                  # takes energy out


@pytest.mark.parametrize("name", ["TwoJointRobot_w_fixedJoints.urdf",
                                  "TwoJointRobot_wo_fixedJoints.urdf"])
def test_a_third_party_robot_dropped_on_the_ground_only_loses_energy(name):
  """pybullet_data's two-link robot, dropped from 0.6 m: its hinges spin past their 5 rad/s
  limit when it lands. A passive system's energy cannot grow (the oracle; the tolerance is
  the integrator's, 2% of the drop). With u+ clipped entry by entry it went from 13.5 J to
  54 J and flew 1.5 m high."""
  import pybullet_data
  from tests.articulated.robots import dropped_on_the_ground
  robot, energy, rise = dropped_on_the_ground(
      os.path.join(pybullet_data.getDataPath(), name), lift=0.6)
  assert rise < 0.02 * energy[0]
  assert energy[-1] < 0.15 * energy[0]
  assert robot.getGeneralizedCoordinate()[2] < 0.1


def exact_velocity_limits(inverse_mass, u, limit):
  """The velocity-limit solution by enumeration (the oracle): the unique u+ = u + A tau with,
  per dof, tau_j = 0 and |u+_j| <= l_j, or u+_j = +-l_j with tau_j pushing back (A SPD)."""
  import itertools
  n = len(u)
  for states in itertools.product(*[(0, 1, -1) if np.isfinite(l) else (0,) for l in limit]):
    held = [j for j in range(n) if states[j]]
    tau = np.zeros(n)
    if held:
      tau[held] = np.linalg.solve(inverse_mass[np.ix_(held, held)],
                                  np.array([states[j] * limit[j] for j in held]) - u[held])
    limited = u + inverse_mass @ tau
    if (np.all(np.abs(limited) <= limit + 1e-9)
        and all(tau[j] * states[j] <= 1e-12 for j in held)):
      return limited
  raise AssertionError("no solution")


def test_velocity_limit_impulses_are_the_exact_solution_for_random_couplings():
  """`limit_velocity` against enumeration over every dof's state (free, at its upper or lower
  limit) for 300 random SPD M_eff^-1 of 2-6 dofs, 30% of them unlimited: exact (1e-10) in
  every case (with 3 block active-set rounds and no least-index ones, 35 of 1,000 were not;
  with 8 block rounds alone, 2 of 6,000 over other seeds, whose sets cycled)."""
  from types import SimpleNamespace
  from raisim_jax.dynamics.articulated_integrate import limit_velocity
  limited = jax.jit(lambda limit, inverse_mass, u: limit_velocity(
      SimpleNamespace(velocity_limit=limit), inverse_mass, u))
  rng = np.random.default_rng(0)
  for _ in range(300):
    n = rng.integers(2, 7)
    b = rng.normal(size=(n, n))
    inverse_mass = b @ b.T + 0.05 * np.eye(n)
    u = rng.normal(size=n) * 3.0
    limit = np.abs(rng.normal(size=n)) + 0.2
    limit[rng.random(n) < 0.3] = np.inf
    np.testing.assert_allclose(limited(limit, inverse_mass, u),
                               exact_velocity_limits(inverse_mass, u, limit), atol=1e-10)


def test_velocity_limits_of_a_system_without_dofs_trace():
  """A system with no dofs (an MJCF worldbody's static shapes) has an empty limit vector; with
  the limits traced (a model passed as an argument) the least-index rounds took an argmax of
  an empty vector (found by tests/test_mjcf.py)."""
  from types import SimpleNamespace
  from raisim_jax.dynamics.articulated_integrate import limit_velocity
  empty = jnp.zeros((0,))
  out = jax.jit(lambda limit, inverse_mass, u: limit_velocity(
      SimpleNamespace(velocity_limit=limit), inverse_mass, u))(empty, jnp.zeros((0, 0)), empty)
  assert out.shape == (0,)

"""OO ArticulatedSystem against oracles: Pinocchio (tests/articulated/pinocchio_oracle.py),
finite differences, closed forms (pendulum, a free rigid body), independent NumPy/SciPy
integrations of the pendulum and the URDF text (lxml).

Every test gets fresh worlds (function-scoped fixtures: tests edit them freely); every getter
has at least one numeric check.
"""

import os

import jax.numpy as jnp
import numpy as np
import pinocchio as pin
import pybullet_data
import pytest
from lxml import etree

from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from raisim_jax.oo.articulated_system import CoordinateFrame, Frame, JointType
from raisim_jax.dynamics.articulated_integrate import integrate_configuration
from raisim_jax.types import BodyType, ControlMode, ObjectType
from raisim_jax.oo.world import World
from tests.articulated import robots

RSC = os.path.join(os.path.dirname(__file__), "..", "rsc", "urdf")
A1 = os.path.join(pybullet_data.getDataPath(), "a1/a1.urdf")
PENDULUM = os.path.join(RSC, "pendulum.urdf")
GRAVITY = np.array([0.0, 0.0, -9.81])

FREE_BODY = """<robot name="free"><link name="box"><inertial><origin xyz="0.1 0.2 -0.05"/>
<mass value="3.0"/><inertia ixx="0.2" ixy="0.01" ixz="0.0" iyy="0.3" iyz="0.02" izz="0.4"/>
</inertial></link></robot>"""
FREE_MASS, FREE_COM = 3.0, np.array([0.1, 0.2, -0.05])
FREE_INERTIA = np.array([[0.2, 0.01, 0.0], [0.01, 0.3, 0.02], [0.0, 0.02, 0.4]])

# rsc/urdf/pendulum.urdf: a rod of mass m, COM l below the hinge (1 m above the origin),
# inertia iyy about its COM; it swings about y.
PENDULUM_MASS, PENDULUM_COM_DEPTH, PENDULUM_IYY = 2.0, 0.5, 0.1
HINGE_INERTIA = PENDULUM_IYY + PENDULUM_MASS * PENDULUM_COM_DEPTH**2


def _rot(axis, angle):
  axis = np.asarray(axis, float) / np.linalg.norm(axis)
  k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
  return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def _quat(r):
  return np.array(pin.Quaternion(r).coeffs())[[3, 0, 1, 2]]


# ---- fixtures ---------------------------------------------------------------------------------

@pytest.fixture
def a1():
  """(world, system, oracle, q, u): a1 at a random state, Pinocchio oracle."""
  world = World()
  world.setTimeStep(1e-3)
  system = world.addArticulatedSystem(A1)
  _, _, oracle = robots.robot("a1")
  q, u, _ = robots.random_state(system._entry.description, np.random.default_rng(3))
  system.setState(q, u)
  return world, system, oracle, q, u


@pytest.fixture
def pendulum():
  world = World()
  world.setTimeStep(1e-3)
  return world, world.addArticulatedSystem(PENDULUM)


@pytest.fixture
def free_body():
  world = World()
  world.setGravity([0.0, 0.0, 0.0])
  world.setTimeStep(1e-3)
  return world, world.addArticulatedSystem(FREE_BODY)


# ---- names, indices, URDF data ----------------------------------------------------------------

def test_dimensions_names_and_indices(a1):
  _, system, _, _, _ = a1
  tree = etree.parse(A1)
  joints = tree.findall("joint")
  movable = [j for j in joints if j.get("type") != "fixed"]
  assert system.getObjectType() == ObjectType.ARTICULATED_SYSTEM
  assert system.getDOF() == system.getGeneralizedVelocityDim() == 6 + len(movable)
  assert system.getGeneralizedCoordinateDim() == 7 + len(movable)
  assert system.getNumberOfJoints() == len(system.getBodyNames()) == 1 + len(movable)
  names = system.getMovableJointNames()
  assert names[0] == "ROOT" and sorted(names[1:]) == sorted(j.get("name") for j in movable)
  assert sorted(system.getFrameNames()) == sorted(["ROOT"] + [j.get("name") for j in joints])
  # body i is the child link of movable joint i; its parent body owns the joint's parent link
  child = {j.get("name"): j.find("child").get("link") for j in joints}
  parent_link = {j.get("name"): j.find("parent").get("link") for j in joints}
  bodies = system.getBodyNames()
  parents = system.getParentVector()
  assert parents[0] == -1
  for i, name in enumerate(names[1:], start=1):
    assert bodies[i] == child[name]
    assert system.getBodyIdx(bodies[i]) == i
    owner = system.getFrameByLinkName(parent_link[name]).parentId
    assert parents[i] == owner
  gv_map = system.getMappingFromBodyIndexToGeneralizedVelocityIndex()
  gc_map = system.getMappingFromBodyIndexToGeneralizedCoordinateIndex()
  assert gv_map == [0] + list(range(6, 18)) and gc_map == [0] + list(range(7, 19))
  assert system.getGeneralizedVelocityIndex("FR_upper_joint") == 6 + names[1:].index(
      "FR_upper_joint")
  assert system.getJointType(0) == JointType.FLOATING
  for i, name in enumerate(names[1:], start=1):
    urdf_type = next(j.get("type") for j in movable if j.get("name") == name)
    assert system.getJointType(i) == {"revolute": JointType.REVOLUTE,
                                      "continuous": JointType.REVOLUTE,
                                      "prismatic": JointType.PRISMATIC}[urdf_type]
  assert system.getBodyType() == BodyType.DYNAMIC and system.getBodyType(0) == BodyType.DYNAMIC
  assert system.getRobotDescriptionFullPath() == A1
  assert system.getRobotDescriptionfFileName() == "a1.urdf"
  assert system.getRobotDescriptionfTopDirName() == os.path.dirname(A1)
  assert system.getResourceDir() == ""


def test_mass_properties_from_urdf(a1):
  _, system, _, _, _ = a1
  tree = etree.parse(A1)
  masses = [float(l.find("inertial/mass").get("value")) for l in tree.findall("link")
            if l.find("inertial/mass") is not None]
  assert np.isclose(system.getTotalMass(), sum(masses), rtol=1e-12)
  assert np.isclose(system.getMass().sum(), sum(masses), rtol=1e-12)
  assert np.isclose(system.getCompositeMass()[0], sum(masses), rtol=1e-12)
  # body 2 (FR_upper) has no merged link: mass, COM and inertia straight from the URDF
  link = next(l for l in tree.findall("link") if l.get("name") == system.getBodyNames()[2])
  inertial = link.find("inertial")
  assert system.getMass(2) == pytest.approx(float(inertial.find("mass").get("value")))
  com = np.array(inertial.find("origin").get("xyz").split(), float)
  np.testing.assert_allclose(system.getBodyCOM_B()[2], com, atol=1e-12)
  i = inertial.find("inertia").attrib
  inertia = np.array([[i["ixx"], i["ixy"], i["ixz"]], [i["ixy"], i["iyy"], i["iyz"]],
                      [i["ixz"], i["iyz"], i["izz"]]], float)
  rpy = np.array((inertial.find("origin").get("rpy") or "0 0 0").split(), float)
  assert np.allclose(rpy, 0)
  np.testing.assert_allclose(system.getInertia()[2], inertia, atol=1e-12)


def test_joint_placement_axes_and_frames_from_urdf(a1):
  _, system, oracle, q, _ = a1
  tree = etree.parse(A1)
  joints = {j.get("name"): j for j in tree.findall("joint")}
  names = system.getMovableJointNames()
  pos_p, rot_p, axis_p = (system.getJointPos_P(), system.getJointOrientation_P(),
                          system.getJointAxis_P())
  oracle_q = oracle.q_to_pin(q)
  pin.forwardKinematics(oracle.model, oracle.data, oracle_q)
  for i, name in enumerate(names[1:], start=1):
    j = joints[name]
    origin = j.find("origin")
    np.testing.assert_allclose(pos_p[i], np.array(origin.get("xyz").split(), float), atol=1e-12)
    rpy = np.array((origin.get("rpy") or "0 0 0").split(), float)
    np.testing.assert_allclose(rot_p[i], pin.rpy.rpyToMatrix(*rpy), atol=1e-12)
    axis = np.array(j.find("axis").get("xyz").split(), float)
    np.testing.assert_allclose(axis_p[i], rot_p[i] @ axis / np.linalg.norm(axis), atol=1e-12)
    world_axis = oracle.data.oMi[oracle.model.getJointId(name)].rotation @ axis
    np.testing.assert_allclose(system.getJointAxis(i), world_axis, atol=1e-10)
  # fixed-joint frame: offset in its body frame = the joint origin (parent link = body frame)
  toe = system.getFrameByName("FR_toe_fixed")
  assert isinstance(toe, CoordinateFrame)
  assert toe.parentId == system.getBodyIdx("FR_lower") and toe.parentName == "FR_lower"
  origin = joints["FR_toe_fixed"].find("origin")
  np.testing.assert_allclose(toe.position, np.array(origin.get("xyz").split(), float))
  np.testing.assert_allclose(toe.orientation, np.eye(3))
  index = system.getFrameIdxByName("FR_toe_fixed")
  assert system.getFrameIdxByLinkName("FR_toe") == index
  assert system.getFrameByLinkName("FR_toe").name == "FR_toe_fixed"
  assert system.getFrameByIdx(index).name == "FR_toe_fixed"
  assert [f.name for f in system.getFrames()] == system.getFrameNames()


# ---- kinematics against Pinocchio --------------------------------------------------------------

def test_state_and_base(a1):
  _, system, _, q, u = a1
  gc, gv = system.getState()
  np.testing.assert_array_equal(gc, q)
  np.testing.assert_array_equal(gv, u)
  quat = q[3:7] / np.linalg.norm(q[3:7])
  np.testing.assert_allclose(system.getBasePosition(), q[:3])
  np.testing.assert_allclose(system.getBaseQuaternion(), quat)
  np.testing.assert_allclose(system.getBaseOrientation(), robots.pinocchio_oracle
                             .quat_wxyz_to_matrix(quat), atol=1e-12)
  rot = _rot([1, 2, 3], 0.7)
  system.setBaseOrientation(rot)
  np.testing.assert_allclose(system.getBaseOrientation(), rot, atol=1e-12)
  system.setBaseOrientation(_quat(_rot([0, 1, 0], -0.3)))
  np.testing.assert_allclose(system.getBaseOrientation(), _rot([0, 1, 0], -0.3), atol=1e-12)
  system.setBasePos([1.0, 2.0, 3.0])
  np.testing.assert_allclose(system.getBasePosition(), [1, 2, 3])
  system.setBaseVelocity([0.1, 0.2, 0.3])
  system.setBaseAngularVelocity([0.4, 0.5, 0.6])
  np.testing.assert_allclose(system.getGeneralizedVelocity()[:6], [.1, .2, .3, .4, .5, .6])
  np.testing.assert_allclose(system.getGeneralizedVelocity()[6:], u[6:])
  system.updateKinematics()


def test_body_and_frame_kinematics_vs_pinocchio(a1):
  _, system, oracle, q, u = a1
  pos, rot = oracle.body_poses(q)
  for b in range(system.getNumberOfJoints()):
    r, p = system.getBodyPose(b)
    np.testing.assert_allclose(p, pos[b], atol=1e-10)
    np.testing.assert_allclose(r, rot[b], atol=1e-10)
    np.testing.assert_allclose(system.getPosition(b), pos[b], atol=1e-10)
    np.testing.assert_allclose(system.getBodyPosition(b), pos[b], atol=1e-10)
    np.testing.assert_allclose(system.getOrientation(b), rot[b], atol=1e-10)
    np.testing.assert_allclose(system.getBodyOrientation(b), rot[b], atol=1e-10)
    point_b = np.array([0.1, -0.2, 0.3])
    np.testing.assert_allclose(system.getPosition(b, point_b), pos[b] + rot[b] @ point_b,
                               atol=1e-10)
    np.testing.assert_allclose(system.getPositionInBodyCoordinate(b, pos[b] + rot[b] @ point_b),
                               point_b, atol=1e-10)
  v_pin = oracle.transform(q) @ u
  q_pin = oracle.q_to_pin(q)
  pin.forwardKinematics(oracle.model, oracle.data, q_pin, v_pin)
  pin.updateFramePlacements(oracle.model, oracle.data)
  lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
  for name in ["FR_toe_fixed", "RL_lower_joint", "FL_hip_fixed", "imu_joint"]:
    fid = oracle.model.getFrameId(name)
    placement = oracle.data.oMf[fid]
    local = np.array([0.05, 0.0, -0.1])
    for key in (name, system.getFrameIdxByName(name)):
      np.testing.assert_allclose(system.getFramePosition(key), placement.translation, atol=1e-10)
      np.testing.assert_allclose(system.getFrameOrientation(key), placement.rotation, atol=1e-10)
      np.testing.assert_allclose(system.getPositionInFrame(key, local), placement.act(local),
                                 atol=1e-10)
    velocity = pin.getFrameVelocity(oracle.model, oracle.data, fid, lwa)
    np.testing.assert_allclose(system.getFrameVelocity(name), velocity.linear, atol=1e-9)
    np.testing.assert_allclose(system.getFrameAngularVelocity(name), velocity.angular, atol=1e-9)
    p, jac = oracle.frame_jacobian(q, name)
    np.testing.assert_allclose(system.getDenseFrameJacobian(name), jac[:3], atol=1e-9)
    np.testing.assert_allclose(system.getDenseFrameRotationalJacobian(name), jac[3:], atol=1e-9)
    body = system.getFrameByName(name).parentId
    np.testing.assert_allclose(system.getDenseJacobian(body, p), jac[:3], atol=1e-9)
    np.testing.assert_allclose(system.getSparseJacobian(body, p), jac[:3], atol=1e-9)
    np.testing.assert_allclose(system.getDenseRotationalJacobian(body), jac[3:], atol=1e-9)
    np.testing.assert_allclose(system.getSparseRotationalJacobian(body), jac[3:], atol=1e-9)
    np.testing.assert_allclose(system.getAngularVelocity(body), velocity.angular, atol=1e-9)
  # a user-defined CoordinateFrame
  custom = CoordinateFrame(name="c", parentId=3, position=np.array([0.0, 0.1, 0.0]),
                           orientation=_rot([0, 0, 1], 0.5))
  np.testing.assert_allclose(system.getFramePosition(custom), pos[3] + rot[3] @ [0, 0.1, 0],
                             atol=1e-10)
  np.testing.assert_allclose(system.getFrameOrientation(custom), rot[3] @ _rot([0, 0, 1], .5),
                             atol=1e-10)


def test_velocities_and_jacobians_vs_finite_differences(a1):
  _, system, _, q, u = a1
  model = system._model()
  eps = 1e-6
  q_plus = np.asarray(integrate_configuration(model, jnp.asarray(q), jnp.asarray(u), eps))
  q_minus = np.asarray(integrate_configuration(model, jnp.asarray(q), jnp.asarray(u), -eps))
  point_b = np.array([0.02, -0.03, 0.1])
  bodies = [0, 3, 9]
  before = {b: (system.getDenseJacobian(b, Frame.BODY_FRAME, point_b),
                system.getDenseRotationalJacobian(b),
                system.getTimeDerivativeOfSparseJacobian(b, Frame.BODY_FRAME, point_b),
                system.getTimeDerivativeOfSparseRotationalJacobian(b),
                system.getVelocity(b, point_b), system.getVelocity(b),
                system.getAngularVelocity(b)) for b in bodies}
  samples = {}
  for key, qq in (("+", q_plus), ("-", q_minus)):
    system.setGeneralizedCoordinate(qq)
    samples[key] = {b: (system.getPosition(b, point_b), system.getPosition(b),
                        system.getOrientation(b),
                        system.getDenseJacobian(b, system.getPosition(b, point_b)),
                        system.getDenseRotationalJacobian(b)) for b in bodies}
  system.setGeneralizedCoordinate(q)          # back at q for the getters below
  for b in bodies:
    jac, jrot, jdot, jrot_dot, v_point, v_origin, omega = before[b]
    p, m = samples["+"][b], samples["-"][b]
    fd_point = (p[0] - m[0]) / (2 * eps)
    np.testing.assert_allclose(jac @ u, fd_point, atol=1e-6)
    np.testing.assert_allclose(v_point, fd_point, atol=1e-6)
    np.testing.assert_allclose(system.getVelocity(jac), fd_point, atol=1e-6)
    np.testing.assert_allclose(v_origin, (p[1] - m[1]) / (2 * eps), atol=1e-6)
    r_dot = (p[2] - m[2]) / (2 * eps)
    omega_fd = r_dot @ system.getOrientation(b).T
    omega_fd = np.array([omega_fd[2, 1], omega_fd[0, 2], omega_fd[1, 0]])
    np.testing.assert_allclose(jrot @ u, omega_fd, atol=1e-6)
    np.testing.assert_allclose(omega, omega_fd, atol=1e-6)
    np.testing.assert_allclose(jdot, (p[3] - m[3]) / (2 * eps), atol=1e-5)
    np.testing.assert_allclose(jrot_dot, (p[4] - m[4]) / (2 * eps), atol=1e-5)


def test_dynamics_vs_pinocchio(a1):
  world, system, oracle, q, u = a1
  mass_matrix = oracle.mass_matrix(q)
  np.testing.assert_allclose(system.getMassMatrix(), mass_matrix, atol=1e-9)
  np.testing.assert_allclose(system.getNonlinearities(GRAVITY),
                             oracle.nonlinearities(q, u, GRAVITY), atol=1e-8)
  np.testing.assert_allclose(system.getNonlinearities([0, 0, 0]),
                             oracle.nonlinearities(q, u, np.zeros(3)), atol=1e-8)
  np.testing.assert_allclose(system.getInverseMassMatrix(), np.linalg.inv(mass_matrix),
                             rtol=1e-7, atol=1e-7)
  np.testing.assert_allclose(system.getGeneralizedMomentum(), mass_matrix @ u, atol=1e-9)
  np.testing.assert_allclose(system.massMatrixVecMul(u), mass_matrix @ u, atol=1e-9)
  np.testing.assert_allclose(system.computeSparseInverse(mass_matrix), np.linalg.inv(mass_matrix),
                             rtol=1e-7, atol=1e-7)
  assert system.getKineticEnergy() == pytest.approx(oracle.kinetic_energy(q, u), rel=1e-10)
  assert system.getPotentialEnergy(GRAVITY) == pytest.approx(
      oracle.potential_energy(q, GRAVITY), rel=1e-10)
  assert system.getEnergy(GRAVITY) == pytest.approx(
      oracle.kinetic_energy(q, u) + oracle.potential_energy(q, GRAVITY), rel=1e-10)


def test_momentum_com_and_composites_vs_pinocchio(a1):
  _, system, oracle, q, u = a1
  model, data = oracle.model, oracle.data
  q_pin, v_pin = oracle.q_to_pin(q), oracle.transform(q) @ u
  pin.centerOfMass(model, data, q_pin, v_pin, True)       # subtree masses and COMs
  com = data.com[0].copy()
  np.testing.assert_allclose(system.getCOM(), com, atol=1e-10)
  np.testing.assert_allclose(system.getCompositeCOM()[0], com, atol=1e-10)
  pin.computeCentroidalMomentum(model, data, q_pin, v_pin)
  p, h_com = data.hg.linear.copy(), data.hg.angular.copy()
  np.testing.assert_allclose(system.getLinearMomentum(), p, atol=1e-9)
  np.testing.assert_allclose(system.getAngularMomentum(com), h_com, atol=1e-9)
  ref = np.array([0.3, -1.0, 2.0])
  np.testing.assert_allclose(system.getAngularMomentum(ref), h_com + np.cross(com - ref, p),
                             atol=1e-9)
  pin.forwardKinematics(model, data, q_pin)
  pin.centerOfMass(model, data, q_pin, True)     # subtree COMs in the joint frames
  comp_mass, comp_com = system.getCompositeMass(), system.getCompositeCOM()
  comp_inertia = system.getCompositeInertia()
  for b in range(system.getNumberOfJoints()):
    jid = oracle.pin_joint[b]
    assert comp_mass[b] == pytest.approx(data.mass[jid], rel=1e-12)
    np.testing.assert_allclose(comp_com[b], data.oMi[jid].act(data.com[jid]), atol=1e-10)
    total = pin.Inertia.Zero()
    for k in model.subtrees[jid]:
      total += data.oMi[k].act(model.inertias[k])
    np.testing.assert_allclose(comp_inertia[b], total.inertia, atol=1e-10)
  np.testing.assert_allclose(system.getBodyCOM_W()[2], oracle.body_poses(q)[0][2]
                             + oracle.body_poses(q)[1][2] @ system.getBodyCOM_B()[2], atol=1e-10)


def test_generalized_force_and_frame_acceleration_after_a_step(a1):
  world, system, oracle, q, u = a1
  world.setTimeStep(1e-5)
  tau = np.random.default_rng(5).normal(size=system.getDOF()) * 5.0
  # The free dynamics are the oracle: the random state is past some joint and velocity limits,
  # so those are lifted, and collision detection is skipped (links may overlap there).
  system.setJointLimits(np.tile([-np.inf, np.inf], (system.getDOF(), 1)))
  system.setJointVelocityLimits(np.full(system.getDOF(), np.inf))
  system.setGeneralizedForce(tau)
  np.testing.assert_array_equal(system.getFeedForwardGeneralizedForce(), tau)
  np.testing.assert_array_equal(system.getGeneralizedForce(), tau)
  names = ["FR_toe_fixed", "RL_lower_joint"]
  v0 = [system.getFrameVelocity(n) for n in names]
  world.integrateNoContactDetection()
  expected = np.linalg.solve(oracle.mass_matrix(q), tau - oracle.nonlinearities(q, u, GRAVITY))
  np.testing.assert_allclose(system.getGeneralizedAcceleration(), expected, rtol=1e-7,
                             atol=1e-7)
  np.testing.assert_allclose(system.getGeneralizedAcceleration(),
                             oracle.forward_dynamics(q, u, tau, GRAVITY), rtol=1e-7, atol=1e-7)
  dt = world.getTimeStep()
  for name, v in zip(names, v0):
    fd = (system.getFrameVelocity(name) - v) / dt
    acc = system.getFrameAcceleration(name)
    np.testing.assert_allclose(acc, fd, rtol=1e-3, atol=1e-3 * np.abs(fd).max())


# ---- pendulum: closed forms, stepping, joint wrenches, model setters -------------------------

def test_pendulum_closed_forms(pendulum):
  world, system = pendulum
  theta, omega = 0.8, -1.3
  system.setState([theta], [omega])
  m, l, iyy = 2.0, 0.5, 0.1
  hinge_inertia = iyy + m * l * l
  assert system.getTotalMass() == pytest.approx(m)
  np.testing.assert_allclose(system.getMassMatrix(), [[hinge_inertia]], rtol=1e-12)
  np.testing.assert_allclose(system.getNonlinearities(GRAVITY),
                             [m * 9.81 * l * np.sin(theta)], rtol=1e-12)
  np.testing.assert_allclose(system.getInverseMassMatrix(), [[1 / hinge_inertia]], rtol=1e-12)
  com = np.array([-l * np.sin(theta), 0.0, 1.0 - l * np.cos(theta)])
  np.testing.assert_allclose(system.getCOM(), com, atol=1e-12)
  np.testing.assert_allclose(system.getBodyCOM_W()[1], com, atol=1e-12)
  assert system.getKineticEnergy() == pytest.approx(0.5 * hinge_inertia * omega**2, rel=1e-12)
  assert system.getPotentialEnergy(GRAVITY) == pytest.approx(m * 9.81 * com[2], rel=1e-12)
  assert system.getEnergy(GRAVITY) == pytest.approx(
      0.5 * hinge_inertia * omega**2 + m * 9.81 * com[2], rel=1e-12)
  w = np.array([0.0, omega, 0.0])
  v_com = np.cross(w, com - [0, 0, 1])
  np.testing.assert_allclose(system.getLinearMomentum(), m * v_com, atol=1e-12)
  np.testing.assert_allclose(system.getAngularMomentum([0, 0, 1]), [0, hinge_inertia * omega, 0],
                             atol=1e-12)
  rot = _rot([0, 1, 0], theta)
  np.testing.assert_allclose(system.getCompositeInertia()[1],
                             rot @ np.diag([0.1, 0.1, 0.01]) @ rot.T, atol=1e-12)
  np.testing.assert_allclose(system.getCompositeMass(), [m, m])
  np.testing.assert_allclose(system.getBasePosition(), [0, 0, 1])
  np.testing.assert_allclose(system.getBaseOrientation(), np.eye(3))
  np.testing.assert_allclose(system.getBaseQuaternion(), [1, 0, 0, 0])
  np.testing.assert_allclose(system.getJointAxis(1), [0, 1, 0])
  assert system.getBodyType(0) == BodyType.STATIC and system.getBodyType(1) == BodyType.DYNAMIC
  assert system.getJointType(0) == JointType.FIXED
  np.testing.assert_allclose(system.getJointLimits(), [[-3.14, 3.14]])
  np.testing.assert_allclose(system.getJointVelocityLimits(), [100.0])
  np.testing.assert_allclose(system.getRotorInertia(), [0.0])


def test_mass_edited_in_place_then_updateMassInfo_changes_the_dynamics(pendulum):
  """RaiSim's pattern: getMass()[i] = m; getBodyCOM_B()[i] = c; updateMassInfo(). The
  hinge inertia becomes iyy + m l^2 with the new values (closed form), and only after
  updateMassInfo()."""
  world, system = pendulum
  system.setState([0.8], [0.0])
  m, l, iyy = 2.0, 0.5, 0.1
  masses = system.getMass()
  masses[1] = 3.0
  system.getBodyCOM_B()[1] = [0.0, 0.0, -0.4]
  np.testing.assert_allclose(system.getMassMatrix(), [[iyy + m * l * l]], rtol=1e-12)
  system.updateMassInfo()
  np.testing.assert_allclose(system.getMassMatrix(), [[iyy + 3.0 * 0.4 ** 2]], rtol=1e-12)
  assert system.getTotalMass() == pytest.approx(3.0)
  # The edit survives a structural recompile (the description holds it).
  world.addSphere(0.1, 1.0).setPosition(5, 0, 0)
  np.testing.assert_allclose(system.getMassMatrix(), [[iyy + 3.0 * 0.4 ** 2]], rtol=1e-12)
  # A bad in-place edit is rejected by updateMassInfo, naming the entry.
  system.getMass()[1] = -1.0
  with pytest.raises(ValueError, match=r"getMass\(\)\[1\]"):
    system.updateMassInfo()
  with pytest.raises(ValueError, match="read-only"):
    system.getJointPos_P()[0, 0] = 1.0


def _pendulum_acceleration(theta):
  """theta'' of the frictionless pendulum, I theta'' = -m g l sin(theta)."""
  return -PENDULUM_MASS * 9.81 * PENDULUM_COM_DEPTH * np.sin(theta) / HINGE_INERTIA


def _swing(world, system, theta0, steps):
  """(q, u) after each of `steps` world steps from rest at theta0."""
  system.setState([theta0], [0.0])
  q, u = np.empty(steps), np.empty(steps)
  for k in range(steps):
    world.integrate()
    q[k], u[k] = system.getGeneralizedCoordinate()[0], system.getGeneralizedVelocity()[0]
  return q, u


def _continuous_swing(theta0, dt, steps):
  """theta at t = dt, 2 dt, ... of the continuous pendulum (SciPy, tolerance 1e-12)."""
  sol = solve_ivp(lambda t, y: [y[1], _pendulum_acceleration(y[0])], (0.0, steps * dt),
                  [theta0, 0.0], t_eval=dt * np.arange(1, steps + 1), rtol=1e-12, atol=1e-12)
  return sol.y[0]


def test_pendulum_stepping_matches_independent_integrations(pendulum):
  """1 s of swinging from 1 rad against (a) the step's scheme (semi-implicit Euler,
  u+ = u + dt theta''(q), q+ = q + dt u+) recomputed in NumPy: equal to round-off; (b) the
  continuous solution (SciPy): the first-order error, halving with dt (measured 1.94e-3 rad at
  dt = 1 ms, 3.88e-3 at 2 ms)."""
  world, system = pendulum
  dt, steps, theta0 = 1e-3, 1000, 1.0
  q, u = _swing(world, system, theta0, steps)
  q_ref, u_ref = np.empty(steps), np.empty(steps)
  qk, uk = theta0, 0.0
  for k in range(steps):
    uk = uk + dt * _pendulum_acceleration(qk)
    qk = qk + dt * uk
    q_ref[k], u_ref[k] = qk, uk
  np.testing.assert_allclose(q, q_ref, rtol=0, atol=1e-12)
  np.testing.assert_allclose(u, u_ref, rtol=0, atol=1e-12)
  assert q.min() < -0.9                                    # it swings through to the other side
  error = np.abs(q - _continuous_swing(theta0, dt, steps)).max()
  assert error < 2.5e-3
  world.setTimeStep(2 * dt)
  q_coarse, _ = _swing(world, system, theta0, steps // 2)
  error_coarse = np.abs(q_coarse - _continuous_swing(theta0, 2 * dt, steps // 2)).max()
  assert 1.8 < error_coarse / error < 2.2                  # first order


def test_frictionless_pendulum_energy(pendulum):
  """The energy of the undamped pendulum, from the closed form E = I u^2 / 2 - m g l cos(q),
  oscillates by O(dt) without drifting (measured 8.6e-3 J of 5.3 J over 1 s at dt = 1 ms), and
  the scheme's modified energy E - dt/2 u m g l sin(q) (symplectic Euler) is conserved to
  O(dt^2) (measured 2.8e-6 J); getEnergy matches the closed form."""
  world, system = pendulum
  dt, steps, theta0 = 1e-3, 1000, 1.0
  q, u = _swing(world, system, theta0, steps)
  mgl = PENDULUM_MASS * 9.81 * PENDULUM_COM_DEPTH
  energy = 0.5 * HINGE_INERTIA * u**2 - mgl * np.cos(q)
  energy0 = -mgl * np.cos(theta0)
  assert np.abs(energy - energy0).max() < 1e-2
  modified = energy - 0.5 * dt * u * mgl * np.sin(q)
  assert np.abs(modified - energy0).max() < 3e-5
  # getEnergy's zero is the world origin; the hinge is 1 m above it.
  assert system.getEnergy(GRAVITY) == pytest.approx(energy[-1] + PENDULUM_MASS * 9.81 * 1.0,
                                                    rel=1e-12)


def test_pd_holds_the_pendulum_where_the_spring_balances_gravity(pendulum):
  """PD to a target under gravity settles where kp (q* - q) = m g l sin(q) (root by brentq)."""
  world, system = pendulum
  kp, kd, target = 50.0, 10.0, 0.3
  world.setTimeStep(1e-2)
  system.setControlMode(ControlMode.PD_PLUS_FEEDFORWARD_TORQUE)
  system.setPdGains([kp], [kd])
  system.setPdTarget([target], [0.0])
  system.setState([0.0], [0.0])
  for _ in range(400):
    world.integrate()
  mgl = PENDULUM_MASS * 9.81 * PENDULUM_COM_DEPTH
  balance = brentq(lambda q: kp * (target - q) - mgl * np.sin(q), 0.0, target, xtol=1e-15)
  assert system.getGeneralizedCoordinate()[0] == pytest.approx(balance, abs=1e-9)
  assert abs(system.getGeneralizedVelocity()[0]) < 1e-8
  assert balance < 0.9 * target                            # gravity pulls it measurably short


def test_pendulum_joint_wrench_newton_euler(pendulum):
  world, system = pendulum
  system.setState([np.pi / 2], [0.7])
  system.setComputeInverseDynamics(True)
  assert system.getComputeInverseDynamics()
  world.integrate()
  alpha = np.array([0.0, system.getGeneralizedAcceleration()[0], 0.0])
  omega = system.getAngularVelocity(1)
  hinge = system.getPosition(1)
  r = system.getBodyCOM_W()[1] - hinge
  m = 2.0
  force = m * (np.cross(alpha, r) + np.cross(omega, np.cross(omega, r)) - GRAVITY)
  rot = system.getOrientation(1)
  inertia = rot @ np.diag([0.1, 0.1, 0.01]) @ rot.T
  torque = np.cross(r, force) + inertia @ alpha + np.cross(omega, inertia @ omega)
  np.testing.assert_allclose(system.getForceAtJointInWorldFrame(1), force, rtol=1e-10,
                             atol=1e-10)
  np.testing.assert_allclose(system.getTorqueAtJointInWorldFrame(1), torque, rtol=1e-10,
                             atol=1e-10)
  # The unactuated hinge transmits no torque about its axis (up to the step's O(dt) lag),
  # and this planar motion needs no constraint torque either.
  assert np.abs(system.getTorqueAtJointInWorldFrame(1)).max() < 1e-3 * 2.0 * 9.81 * 0.5
  system.setComputeInverseDynamics(False)


def test_pendulum_external_torque_and_force(pendulum):
  world, system = pendulum
  hinge_inertia = 0.1 + 2.0 * 0.25
  system.setState([0.0], [0.0])
  system.setExternalTorque(1, [0.0, 3.0, 0.0])
  world.integrate()
  np.testing.assert_allclose(system.getGeneralizedAcceleration(), [3.0 / hinge_inertia],
                             rtol=1e-10)
  np.testing.assert_allclose(system.getExternalWrench(), 0.0)      # cleared by the step
  system.setState([0.0], [0.0])
  system.setExternalTorqueInBodyFrame(1, [0.0, -2.0, 0.0])
  system.setExternalForce("hinge", [5.0, 0.0, 0.0])   # at the hinge: no moment
  world.integrate()
  np.testing.assert_allclose(system.getGeneralizedAcceleration(), [-2.0 / hinge_inertia],
                             rtol=1e-10)
  system.setState([0.0], [0.0])
  system.setExternalForce(1, [4.0, 0.0, 0.0])          # at the COM, 0.5 below the hinge
  world.integrate()
  np.testing.assert_allclose(system.getGeneralizedAcceleration(), [-4.0 * 0.5 / hinge_inertia],
                             rtol=1e-10)
  system.setState([0.0], [0.0])
  system.setExternalForce(1, [0.0, 0.0, -1.0], [4.0, 0.0, 0.0])   # body point 1 m below
  system.clearExternalForcesAndTorques()
  np.testing.assert_allclose(system.getExternalWrench(), 0.0)
  world.integrate()
  np.testing.assert_allclose(system.getGeneralizedAcceleration(), [0.0], atol=1e-12)


def test_pendulum_model_setters(pendulum):
  world, system = pendulum
  dt = world.getTimeStep()
  system.setMass(1, 4.0)
  system.updateMassInfo()
  assert system.getMass(1) == 4.0 and system.getTotalMass() == pytest.approx(4.0)
  hinge_inertia = 0.1 + 4.0 * 0.25
  np.testing.assert_allclose(system.getMassMatrix(), [[hinge_inertia]], rtol=1e-12)
  system.setRotorInertia([0.3])
  np.testing.assert_allclose(system.getRotorInertia(), [0.3])
  np.testing.assert_allclose(system.getMassMatrix(), [[hinge_inertia + 0.3]], rtol=1e-12)
  system.setJointDamping([2.0])
  np.testing.assert_allclose(system.getJointDamping(), [2.0])
  np.testing.assert_allclose(system.getInverseMassMatrix(),
                             [[1 / (hinge_inertia + 0.3 + dt * 2.0)]], rtol=1e-12)
  np.testing.assert_allclose(system.computeSparseInverse(system.getMassMatrix()),
                             [[1 / (hinge_inertia + 0.3 + dt * 2.0)]], rtol=1e-12)
  np.testing.assert_allclose(system.massMatrixVecMul([2.0]), [2 * (hinge_inertia + 0.3)],
                             rtol=1e-12)
  system.setInertia(1, np.diag([0.29, 0.3, 0.02]))
  system.setBodyCOM_B(1, [0.0, 0.0, -0.25])
  hinge_inertia = 0.3 + 4.0 * 0.0625 + 0.3
  np.testing.assert_allclose(system.getMassMatrix(), [[hinge_inertia]], rtol=1e-12)
  system.setJointLimits([[-1.0, 2.0]])
  np.testing.assert_allclose(system.getJointLimits(), [[-1.0, 2.0]])
  system.setJointVelocityLimits([7.0])
  np.testing.assert_allclose(system.getJointVelocityLimits(), [7.0])
  system.setActuationLimits([5.0], [-4.0])
  np.testing.assert_allclose(system.getActuationUpperLimits(), [5.0])
  np.testing.assert_allclose(system.getActuationLowerLimits(), [-4.0])
  # The next step uses the new model: one semi-implicit step of the edited pendulum (mass 4,
  # COM 0.25 below the hinge, rotor inertia in M, damping taken at the end-of-step velocity),
  # (M + dt d) u+ = M u - dt m g l sin(q), q+ = q + dt u+; the limits are not reached.
  system.setState([0.5], [0.2])
  model, _ = world.compile()
  world.integrate()
  u_next = (hinge_inertia * 0.2 - dt * 4.0 * 9.81 * 0.25 * np.sin(0.5)) / (hinge_inertia
                                                                           + dt * 2.0)
  np.testing.assert_allclose(system.getGeneralizedVelocity(), [u_next], rtol=1e-12)
  np.testing.assert_allclose(system.getGeneralizedCoordinate(), [0.5 + dt * u_next], rtol=1e-12)
  np.testing.assert_allclose(float(model.articulated[0].damping[0]), 2.0)
  # a structural recompile keeps the edits (they live in the description too)
  extra = world.addArticulatedSystem(PENDULUM)
  assert system.getMass(1) == 4.0
  np.testing.assert_allclose(system.getMassMatrix(), [[hinge_inertia]], rtol=1e-12)
  np.testing.assert_allclose(system.getJointDamping(), [2.0])
  np.testing.assert_allclose(system.getJointLimits(), [[-1.0, 2.0]])
  np.testing.assert_allclose(system.getJointVelocityLimits(), [7.0])
  np.testing.assert_allclose(system.getActuationUpperLimits(), [5.0])
  world.removeObject(extra)
  # fixed base: setBasePos / setBaseOrientation move the body fixed to the world
  system.setState([0.0], [0.0])
  system.setBasePos([0.0, 0.0, 2.0])
  np.testing.assert_allclose(system.getBasePosition(), [0, 0, 2])
  np.testing.assert_allclose(system.getFramePosition("hinge"), [0, 0, 2])
  system.setBaseOrientation(_rot([1, 0, 0], np.pi / 2))
  np.testing.assert_allclose(system.getJointAxis(1), [0, 0, 1], atol=1e-12)


# ---- free rigid body: external loads ------------------------------------------------------------

def _free_step(world, system, rot, load):
  system.setState(np.concatenate([[0.3, -0.2, 0.5], _quat(rot)]), np.zeros(6))
  load()
  world.integrate()
  return system.getGeneralizedAcceleration()


def test_free_body_external_loads(free_body):
  world, system = free_body
  rot = _rot([1, -1, 2], 0.9)
  c_w = rot @ FREE_COM                     # origin -> COM, world
  inertia_w = rot @ FREE_INERTIA @ rot.T
  force = np.array([1.0, -2.0, 3.0])
  # at the COM: pure translation, a = F / m
  ga = _free_step(world, system, rot, lambda: system.setExternalForce(0, force))
  np.testing.assert_allclose(ga[:3], force / FREE_MASS, rtol=1e-10)
  np.testing.assert_allclose(ga[3:], 0.0, atol=1e-12)

  def expected(torque_about_com, f):
    alpha = np.linalg.solve(inertia_w, torque_about_com)
    return np.concatenate([f / FREE_MASS + np.cross(alpha, -c_w), alpha])

  pos_b = np.array([0.3, 0.0, -0.4])
  ga = _free_step(world, system, rot, lambda: system.setExternalForce(0, pos_b, force))
  np.testing.assert_allclose(ga, expected(np.cross(rot @ pos_b - c_w, force), force), rtol=1e-9)
  ga = _free_step(world, system, rot, lambda: system.setExternalForce(
      0, Frame.BODY_FRAME, force, Frame.WORLD_FRAME, system.getPosition(0, pos_b)))
  np.testing.assert_allclose(ga, expected(np.cross(rot @ pos_b - c_w, rot @ force), rot @ force),
                             rtol=1e-9)
  ga = _free_step(world, system, rot, lambda: system.setExternalForce("ROOT", force))
  np.testing.assert_allclose(ga, expected(np.cross(-c_w, force), force), rtol=1e-9)
  torque = np.array([0.5, 0.1, -0.3])
  ga = _free_step(world, system, rot, lambda: system.setExternalTorque(0, torque))
  np.testing.assert_allclose(ga, expected(torque, np.zeros(3)), rtol=1e-9)
  ga = _free_step(world, system, rot, lambda: system.setExternalTorqueInBodyFrame(0, torque))
  np.testing.assert_allclose(ga, expected(rot @ torque, np.zeros(3)), rtol=1e-9)
  # momentum of a moving free body: p = m v_com, L_com = I_w w
  v, w = np.array([0.1, 0.2, -0.3]), np.array([0.4, -0.5, 0.6])
  system.setState(np.concatenate([[0.3, -0.2, 0.5], _quat(rot)]), np.zeros(6))
  system.setBaseVelocity(v)
  system.setBaseAngularVelocity(w)
  np.testing.assert_allclose(system.getLinearMomentum(), FREE_MASS * (v + np.cross(w, c_w)),
                             rtol=1e-12)
  com = system.getCOM()
  np.testing.assert_allclose(com, system.getBasePosition() + c_w, rtol=1e-12)
  np.testing.assert_allclose(system.getAngularMomentum(com), inertia_w @ w, rtol=1e-12)
  np.testing.assert_allclose(system.getCompositeInertia()[0], inertia_w, rtol=1e-12)
  assert system.getKineticEnergy() == pytest.approx(
      0.5 * FREE_MASS * np.sum((v + np.cross(w, c_w))**2) + 0.5 * w @ inertia_w @ w, rel=1e-12)


def test_free_body_falls_as_the_closed_form(free_body):
  """A thrown floating base under gravity, not turning: semi-implicit Euler gives
  v_n = v0 + g n dt and p_n = p0 + n dt v0 + g dt^2 n (n + 1) / 2 exactly, within g dt t of
  the continuous parabola; the orientation stays put."""
  world, system = free_body
  world.setGravity(GRAVITY)
  dt, n = world.getTimeStep(), 500
  p0, v0, rot = np.array([0.3, -0.2, 5.0]), np.array([1.0, -0.5, 2.0]), _rot([1, -1, 2], 0.9)
  system.setState(np.concatenate([p0, _quat(rot)]), np.concatenate([v0, np.zeros(3)]))
  for _ in range(n):
    world.integrate()
  np.testing.assert_allclose(system.getBasePosition(),
                             p0 + n * dt * v0 + GRAVITY * dt**2 * n * (n + 1) / 2, atol=1e-12)
  np.testing.assert_allclose(system.getGeneralizedVelocity(),
                             np.concatenate([v0 + GRAVITY * n * dt, np.zeros(3)]), atol=1e-12)
  np.testing.assert_allclose(system.getBaseOrientation(), rot, atol=1e-12)
  t = n * dt
  np.testing.assert_allclose(system.getBasePosition(), p0 + v0 * t + 0.5 * GRAVITY * t**2,
                             atol=9.81 * dt * t)


# ---- errors ------------------------------------------------------------------------------------

def test_bad_inputs_raise_naming_the_argument(pendulum, free_body):
  _, system = pendulum
  with pytest.raises(ValueError, match="bodyIdx"):
    system.getPosition(5)
  with pytest.raises(ValueError, match="bodyIdx"):
    system.getDenseJacobian(-1, [0, 0, 0])
  with pytest.raises(ValueError, match="point_W"):
    system.getDenseJacobian(1, [0, 0])
  with pytest.raises(ValueError, match="frameId"):
    system.getFramePosition(7)
  with pytest.raises(KeyError, match="nope"):
    system.getFramePosition("nope")
  with pytest.raises(KeyError, match="nope"):
    system.getDenseFrameJacobian("nope")
  with pytest.raises(KeyError, match="nm"):
    system.getBodyIdx("nope")
  with pytest.raises(KeyError, match="name"):
    system.getGeneralizedVelocityIndex("nope")
  with pytest.raises(KeyError, match="name"):
    system.getFrameIdxByLinkName("nope")
  with pytest.raises(ValueError, match="jointState"):
    system.setGeneralizedCoordinate([0.0, 1.0])
  with pytest.raises(ValueError, match="tau"):
    system.setGeneralizedForce([np.nan])
  with pytest.raises(ValueError, match="fixed base"):
    system.setBaseVelocity([0, 0, 0])
  with pytest.raises(ValueError, match="fixed base"):
    system.setBaseAngularVelocity([0, 0, 0])
  with pytest.raises(ValueError, match="value"):
    system.setMass(1, -1.0)
  with pytest.raises(ValueError, match="dampingCoefficient"):
    system.setJointDamping([-1.0])
  with pytest.raises(ValueError, match="jointLimits"):
    system.setJointLimits([1.0, 2.0])
  with pytest.raises(ValueError, match="lower"):
    system.setActuationLimits([1.0], [2.0])
  with pytest.raises(ValueError, match="jointIndex"):
    system.getJointType(2)
  with pytest.raises(ValueError, match="'M'"):
    system.computeSparseInverse(np.eye(2))
  with pytest.raises(ValueError, match="referencePoint"):
    system.getAngularMomentum([1.0])
  with pytest.raises(ValueError, match="frame"):
    system.getDenseJacobian(1, Frame.PARENT_FRAME, [0, 0, 0])
  _, free = free_body
  with pytest.raises(ValueError, match="quat"):
    free.setBaseOrientation([1.0, 1.0, 0.0, 0.0])
  with pytest.raises(ValueError, match="rot"):
    free.setBaseOrientation(np.ones((3, 3)))
  with pytest.raises(ValueError, match="rotorInertia"):
    free.setRotorInertia([0, 0, 0, 0, 0, 1.0])      # one value per multi-dof joint

"""The OO World and SingleBodyObject API: every getter/setter round-trips and agrees with the
pure state; bad input raises a clear error naming the argument."""

import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import raisim_jax as rj
from raisim_jax.math import quaternion as quat

# Compares paths bit for bit: XLA's full optimization (tests/conftest.py), whose rounding
# the expected values were taken with.
pytestmark = pytest.mark.xla_optimized


@pytest.fixture
def world():
  return rj.World()


def _state_row(world, obj, field):
  _, state = world.compile()
  return np.asarray(getattr(state.bodies, field)[obj.getIndexInWorld()])


def test_names_indices_and_lookup(world):
  ground = world.addGround()
  ball = world.addSphere(0.5, 1.0)
  ball.setName("ball")
  assert ball.getName() == "ball"
  assert world.getObject("ball") is ball
  assert world.getObject(1) is ball
  assert ball.getIndexInWorld() == 1 and ground.getIndexInWorld() == 0
  assert world.getObjList() == [ground, ball]
  with pytest.raises(KeyError, match="no object named 'missing'"):
    world.getObject("missing")
  with pytest.raises(KeyError, match="world index 7"):
    world.getObject(7)
  with pytest.raises(ValueError, match="'ball' already exists"):
    world.addBox(1, 1, 1, 1).setName("ball")


def test_configuration_number_changes_when_objects_are_added_or_removed(world):
  n0 = world.getConfigurationNumber()
  box = world.addBox(1, 1, 1, 1)
  n1 = world.getConfigurationNumber()
  assert n1 > n0
  box.setPosition(1, 2, 3)
  assert world.getConfigurationNumber() == n1
  world.removeObject(box)
  assert world.getConfigurationNumber() > n1 and world.getObjList() == []


def test_gravity_time_step_and_world_time(world):
  np.testing.assert_allclose(world.getGravity(), [0, 0, -9.81])
  world.setGravity([0, 1.0, -3.0])
  np.testing.assert_allclose(world.getGravity(), [0, 1.0, -3.0])
  world.setTimeStep(0.002)
  assert world.getTimeStep() == 0.002
  ball = world.addSphere(0.1, 1.0)
  model, _ = world.compile()
  assert float(model.time_step) == 0.002
  np.testing.assert_allclose(model.gravity, [0, 1.0, -3.0])
  world.setWorldTime(3.0)
  world.integrate()
  assert world.getWorldTime() == pytest.approx(3.002)
  np.testing.assert_allclose(ball.getLinearVelocity(), [0, 0.002, -0.006], atol=1e-15)
  # setGravity / setTimeStep after compiling update the model without recompiling.
  world.setTimeStep(0.004)
  world.setGravity([0, 0, 0])
  model, _ = world.compile()
  assert float(model.time_step) == 0.004 and float(model.gravity[2]) == 0


def test_integrate1_then_integrate2_equals_integrate(world):
  ball = world.addBox(1, 0.5, 0.2, 1.0)
  ball.setAngularVelocity([0.3, 2.0, 0.1])
  other = rj.World()
  twin = other.addBox(1, 0.5, 0.2, 1.0)
  twin.setAngularVelocity([0.3, 2.0, 0.1])
  for _ in range(5):
    world.integrate1()
    world.integrate2()
    other.integrate()
  # One program against two: XLA fuses them differently, so they agree to rounding (a
  # machine with other vector units differed in the last bit), not bit for bit.
  np.testing.assert_allclose(ball.getQuaternion(), twin.getQuaternion(), rtol=0, atol=1e-15)
  np.testing.assert_allclose(ball.getAngularVelocity(), twin.getAngularVelocity(),
                             rtol=0, atol=1e-14)
  assert not np.array_equal(ball.getQuaternion(), [1, 0, 0, 0])
  assert world.getWorldTime() == other.getWorldTime()


def test_pose_setters_and_getters_round_trip(world):
  box = world.addBox(1, 2, 3, 4.0)
  box.setPosition([1.0, 2.0, 3.0])
  np.testing.assert_array_equal(box.getPosition(), [1, 2, 3])
  np.testing.assert_array_equal(box.getComPosition(), [1, 2, 3])
  np.testing.assert_array_equal(box.getPosition(0), [1, 2, 3])
  np.testing.assert_array_equal(_state_row(world, box, "position"), [1, 2, 3])
  box.setPosition(4.0, 5.0, 6.0)
  np.testing.assert_array_equal(box.getPosition(), [4, 5, 6])

  q = np.array([np.cos(0.3), 0, np.sin(0.3), 0])
  box.setOrientation(q)
  np.testing.assert_allclose(box.getQuaternion(), q)
  np.testing.assert_allclose(_state_row(world, box, "quaternion"), q)
  rot = np.array([[np.cos(0.6), 0, np.sin(0.6)], [0, 1, 0], [-np.sin(0.6), 0, np.cos(0.6)]])
  np.testing.assert_allclose(box.getRotationMatrix(), rot, atol=1e-15)
  np.testing.assert_allclose(box.getOrientation(), rot, atol=1e-15)
  box.setOrientation(1.0, 0.0, 0.0, 0.0)
  np.testing.assert_array_equal(box.getQuaternion(), [1, 0, 0, 0])
  box.setOrientation(rot)
  np.testing.assert_allclose(box.getQuaternion(), q, atol=1e-15)

  box.setPose([7.0, 8.0, 9.0], [1, 0, 0, 0])
  np.testing.assert_array_equal(box.getPosition(), [7, 8, 9])
  np.testing.assert_array_equal(box.getQuaternion(), [1, 0, 0, 0])
  box.setPose([0.0, 0.0, 1.0], rot)
  np.testing.assert_allclose(box.getQuaternion(), q, atol=1e-15)
  # A body-frame point in the world.
  np.testing.assert_allclose(box.getPosition(0, [1.0, 0, 0]), [0, 0, 1] + rot[:, 0])


def test_velocity_setters_and_getters_round_trip(world):
  ball = world.addSphere(0.5, 1.0)
  ball.setVelocity([1, 2, 3], [4, 5, 6])
  np.testing.assert_array_equal(ball.getLinearVelocity(), [1, 2, 3])
  np.testing.assert_array_equal(ball.getAngularVelocity(), [4, 5, 6])
  np.testing.assert_array_equal(_state_row(world, ball, "angular_velocity"), [4, 5, 6])
  ball.setVelocity(-1, -2, -3, -4, -5, -6)
  np.testing.assert_array_equal(ball.getLinearVelocity(), [-1, -2, -3])
  np.testing.assert_array_equal(ball.getAngularVelocity(), [-4, -5, -6])
  ball.setLinearVelocity([0.5, 0, 0])
  ball.setAngularVelocity([0, 0.5, 0])
  np.testing.assert_array_equal(_state_row(world, ball, "linear_velocity"), [0.5, 0, 0])
  np.testing.assert_array_equal(ball.getAngularVelocity(), [0, 0.5, 0])


def test_mass_inertia_com_setters(world):
  box = world.addBox(1, 2, 3, 4.0)
  assert box.getMass() == 4.0
  box.setMass(2.0)
  assert box.getMass() == 2.0
  model, _ = world.compile()
  assert float(model.bodies.mass[0]) == 2.0
  inertia = np.diag([2.0, 2.5, 3.0]) + 0.1 * (np.ones((3, 3)) - np.eye(3))
  box.setInertia(inertia)
  np.testing.assert_allclose(box.getInertiaMatrix_B(), inertia)
  np.testing.assert_allclose(box.getInertiaMatrix_B_rs(), inertia)
  rot = np.asarray(quat.to_matrix(jnp.array([np.cos(0.2), np.sin(0.2), 0, 0])))
  box.setOrientation(rot)
  np.testing.assert_allclose(box.getInertiaMatrix_W(), rot @ inertia @ rot.T, atol=1e-14)
  np.testing.assert_allclose(box.getInertiaMatrix_W_rs(), rot @ inertia @ rot.T, atol=1e-14)
  box.setCom([0.1, 0.2, 0.3])
  np.testing.assert_array_equal(box.getCom(), [0.1, 0.2, 0.3])
  np.testing.assert_array_equal(box.getBodyToComPosition_rs(), [0.1, 0.2, 0.3])
  model, _ = world.compile()   # the box's shape now sits at -com from the COM
  np.testing.assert_allclose(model.collision.shapes.position_body[0], [-0.1, -0.2, -0.3])


def test_energies_and_momentum(world):
  box = world.addBox(1, 2, 3, 4.0)
  box.setPosition(0, 0, 2.0)
  box.setVelocity([1, 0, 0], [0, 0, 2.0])
  izz = 4.0 * (1 + 4) / 12
  kinetic = 0.5 * 4.0 * 1.0 + 0.5 * izz * 4.0
  assert box.getKineticEnergy() == pytest.approx(kinetic, rel=1e-14)
  gravity = np.array([0, 0, -9.81])
  assert box.getPotentialEnergy(gravity) == pytest.approx(4.0 * 9.81 * 2.0, rel=1e-14)
  assert box.getEnergy(gravity) == pytest.approx(kinetic + 4.0 * 9.81 * 2.0, rel=1e-14)
  np.testing.assert_allclose(box.getLinearMomentum(), [4.0, 0, 0])


def test_damping_body_type_collision_filter_appearance(world):
  ball = world.addSphere(0.5, 1.0, "rubber", rj.COLLISION(2), rj.COLLISION(0) | rj.COLLISION(1))
  assert ball.getCollisionGroup() == 4 and ball.getCollisionMask() == 3
  ground = world.addGround(0.5, "steel")
  assert ground.getCollisionGroup() == 1 << 63
  assert ground.getCollisionMask() == (1 << 64) - 1
  assert ground.getHeight() == 0.5
  assert ground.getBodyType() == rj.BodyType.STATIC
  assert ground.getObjectType() == rj.ObjectType.HALFSPACE
  ball.setLinearDamping(0.3)
  ball.setAngularDamping([0.1, 0.2, 0.3])
  assert ball.getLinearDamping() == 0.3
  np.testing.assert_array_equal(ball.getAngularDamping(), [0.1, 0.2, 0.3])
  model, _ = world.compile()
  assert float(model.bodies.linear_damping[0]) == 0.3
  assert ball.getBodyType() == rj.BodyType.DYNAMIC
  ball.setBodyType(rj.BodyType.KINEMATIC)
  assert ball.getBodyType() == rj.BodyType.KINEMATIC
  model, _ = world.compile()
  assert int(model.bodies.body_type[0]) == rj.BodyType.KINEMATIC
  ball.setAppearance("0, 0.5, 0.5, 1.0")
  assert ball.getAppearance() == "0, 0.5, 0.5, 1.0"


def test_shape_getters(world):
  assert world.addSphere(0.25, 1).getRadius() == 0.25
  np.testing.assert_array_equal(world.addBox(1, 2, 3, 1).getDim(), [1, 2, 3])
  capsule = world.addCapsule(0.1, 0.5, 1)
  assert (capsule.getRadius(), capsule.getHeight()) == (0.1, 0.5)
  cylinder = world.addCylinder(0.2, 0.6, 1)
  assert (cylinder.getRadius(), cylinder.getHeight()) == (0.2, 0.6)
  cone = world.addCone(0.3, 0.9, 1)
  assert (cone.getRadius(), cone.getHeight()) == (0.3, 0.9)
  assert cone.getObjectType() == rj.ObjectType.CONE


def test_compound_has_given_inertia_and_children(world):
  children = [
      rj.CompoundObjectChild(rj.ObjectType.BOX, [1, 0.2, 0.2, 0],
                             trans=rj.Transformation(pos=[0, 0, 0])),
      rj.CompoundObjectChild(rj.ObjectType.SPHERE, [0.3, 0, 0, 0], material="rubber",
                             trans=rj.Transformation(pos=[0.5, 0, 0])),
  ]
  inertia = np.diag([0.1, 0.2, 0.3])
  compound = world.addCompound(children, 2.0, [0.2, 0, 0], inertia)
  assert compound.getMass() == 2.0
  np.testing.assert_array_equal(compound.getInertiaMatrix_B(), inertia)
  np.testing.assert_array_equal(compound.getCom(), [0.2, 0, 0])
  assert len(compound.getObjList()) == 2
  assert compound.getObjectType() == rj.ObjectType.COMPOUND
  # Children are placed in the compound frame; the compiled shapes sit relative to the COM
  # (the body's reference point): 0.5 - 0.2 = 0.3 m along x.
  model, _ = world.compile()
  offsets = np.asarray(model.collision.shapes.position_body)
  assert any(np.allclose(row, [0.3, 0, 0]) for row in offsets)
  compound.setAngularVelocity([0, 0, 1.0])
  world.setGravity([0, 0, 0])
  world.integrate()
  assert compound.getKineticEnergy() == pytest.approx(0.5 * 0.3, rel=1e-9)


@pytest.mark.parametrize("call, match", [
    (lambda w: w.addSphere(0.5, 0.0), "'mass' must be positive"),
    (lambda w: w.addSphere(0.5, -1.0), "'mass' must be positive"),
    (lambda w: w.addSphere(-0.5, 1.0), "'radius' must be positive"),
    (lambda w: w.addBox(1, 0, 1, 1.0), "'yLength' must be positive"),
    (lambda w: w.addCylinder(0.1, 0.0, 1.0), "'height' must be positive"),
    (lambda w: w.addSphere(0.5, 1.0).setMass(0.0), "'mass' must be positive"),
    (lambda w: w.addSphere(0.5, 1.0).setOrientation([1, 1, 0, 0]), "unit quaternion"),
    (lambda w: w.addSphere(0.5, 1.0).setOrientation([0, 0, 0, 0]), "unit quaternion"),
    (lambda w: w.addSphere(0.5, 1.0).setOrientation(np.ones((3, 3))), "rotation matrix"),
    (lambda w: w.addSphere(0.5, 1.0).setPosition([1, 2]), "'position' must have 3 elements"),
    (lambda w: w.addSphere(0.5, 1.0).setVelocity([1, 2, 3], [1, 2]),
     "'angularVelocity' must have 3 elements"),
    (lambda w: w.addSphere(0.5, 1.0).setExternalForce(0, [1, 2, 3, 4]),
     "'force' must have 3 elements"),
    (lambda w: w.addSphere(0.5, 1.0).setInertia(-np.eye(3)), "'inertia' must be positive"),
    (lambda w: w.addSphere(0.5, 1.0).setLinearVelocity([np.nan, 0, 0]), "must be finite"),
    (lambda w: w.setGravity([0, 0]), "'gravity' must have 3 elements"),
    (lambda w: w.setTimeStep(0), "'dt' must be positive"),
    (lambda w: rj.COLLISION(64), "'index' must be in"),
])
def test_bad_input_raises_clear_errors(world, call, match):
  with pytest.raises(ValueError, match=match):
    call(world)


def test_unknown_name_raises_key_error(world):
  with pytest.raises(KeyError):
    world.getObject("nobody")


def test_external_load_accumulates_until_integrate(world):
  ball = world.addSphere(0.5, 1.0)
  ball.setExternalForce(0, [1, 0, 0])
  ball.setExternalForce(0, [0, 2, 0])
  np.testing.assert_array_equal(ball.getExternalForce(), [1, 2, 0])
  ball.setExternalForce(0, [1, 0, 0], [0, 0, 1])  # at x = 1 along z: torque (0, -1, 0)
  np.testing.assert_array_equal(ball.getExternalTorque(), [0, -1, 0])
  ball.clearExternalForcesAndTorques()
  np.testing.assert_array_equal(ball.getExternalForce(), [0, 0, 0])


def test_sequences_of_adds_and_removes_after_stepping_keep_every_state():
  """Edits in a row after the world has stepped (issue: OO shell): two adds, then two
  removes, then a step; every survivor keeps its own state."""
  world = rj.World()
  world.setTimeStep(1e-3)
  world.setGravity([0, 0, 0])
  spheres = []
  for k in range(4):
    sphere = world.addSphere(0.1, 1.0)
    sphere.setPosition(10.0 * k, 0, 1)
    sphere.setVelocity(0, 1.0 + k, 0, 0, 0, 0)
    spheres.append(sphere)
  world.integrate()
  extra = [world.addSphere(0.2, 1.0), world.addBox(0.1, 0.1, 0.1, 1.0)]
  extra[0].setPosition(50, 0, 1)
  extra[1].setPosition(60, 0, 1)
  world.removeObject(spheres[1])
  world.removeObject(spheres[2])
  world.integrate()
  for k in (0, 3):
    np.testing.assert_allclose(spheres[k].getPosition(),
                               [10.0 * k, 2e-3 * (1.0 + k), 1.0], atol=1e-12)
  np.testing.assert_allclose(extra[0].getPosition(), [50, 0, 1], atol=1e-12)
  np.testing.assert_allclose(extra[1].getPosition(), [60, 0, 1], atol=1e-12)
  assert len(world.getObjList()) == 4


def test_setCom_moves_the_centre_of_mass_and_keeps_the_geometry_in_place(world):
  """A 0.2 m box resting on the ground: moving its COM 0.15 m along x (outside the footprint)
  keeps its faces where they were (a ray hits the top face at the same height; the resting
  contacts stay) and makes it tip over about the +x bottom edge, as statics says; the COM
  moved by R (com - old com)."""
  world.addGround()
  box = world.addBox(0.2, 0.2, 0.2, 1.0)
  box.setPosition(0, 0, 0.1)
  for _ in range(50):
    world.integrate()
  top = world.rayTest([0.05, 0.05, 1], [0, 0, -1], 2)[0].getPosition()[2]
  before = box.getPosition()
  box.setCom([0.15, 0, 0])
  np.testing.assert_allclose(box.getPosition(), before + [0.15, 0, 0], atol=1e-12)
  np.testing.assert_array_equal(box.getCom(), [0.15, 0, 0])
  assert world.rayTest([0.05, 0.05, 1], [0, 0, -1], 2)[0].getPosition()[2] == pytest.approx(
      top, abs=1e-9)
  for _ in range(300):
    world.integrate()
  # Tipping over the +x bottom edge: the body x axis turns downwards.
  tilt = np.degrees(np.arccos(np.clip(box.getRotationMatrix()[2, 2], -1, 1)))
  assert tilt > 30
  assert box.getRotationMatrix()[2, 0] < 0   # the body x axis points downwards
  centred = world.addBox(0.2, 0.2, 0.2, 1.0)
  centred.setPosition(2, 0, 0.1)
  for _ in range(300):
    world.integrate()
  assert centred.getRotationMatrix()[2, 2] == pytest.approx(1.0, abs=1e-6)


def test_getters_of_parameters_return_read_only_copies(world):
  box = world.addBox(0.2, 0.2, 0.2, 1.0)
  for array in (box.getInertiaMatrix_B(), box.getCom(), box.getAngularDamping()):
    with pytest.raises(ValueError, match="read-only"):
      array[0] = 1.0
  box.setInertia(np.diag([1.0, 2.0, 3.0]))            # the edit path
  np.testing.assert_array_equal(box.getInertiaMatrix_B(), np.diag([1.0, 2.0, 3.0]))


def test_set_inertia_warns_when_no_rigid_body_has_it(world):
  """Principal moments (1, 1, 3): 3 > 1 + 1, the triangle inequality every real body's
  moments satisfy. Accepted as RaiSim does, and simulated as given, with a warning; a thin
  disc's (1, 1, 2), on the boundary, and a box's moments give none."""
  box = world.addBox(1, 2, 3, 4.0)
  with pytest.warns(UserWarning, match="triangle inequality"):
    box.setInertia(np.diag([1.0, 1.0, 3.0]))
  np.testing.assert_array_equal(box.getInertiaMatrix_B(), np.diag([1.0, 1.0, 3.0]))
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    box.setInertia(np.diag([1.0, 1.0, 2.0]))
    box.setInertia(np.diag([4.0 * (4 + 9) / 12, 4.0 * (1 + 9) / 12, 4.0 * (1 + 4) / 12]))

"""RaiSim's Contact API on a resting ball, a box on a box, and the contact problem, checked
against closed-form geometry and impulses (float64)."""

import numpy as np
import pytest

import raisim_jax as rj

G = 9.81


@pytest.fixture
def ball_world():
  """A ball resting on the ground after 20 steps; fresh per test (tests step and edit it)."""
  world = rj.World()
  dt = 1e-3
  world.setTimeStep(dt)
  ground = world.addGround(0.0, "floor")
  ball = world.addSphere(0.5, 2.0, "rubber")
  ball.setPosition(0.3, -0.2, 0.5)
  for _ in range(20):
    world.integrate()
  return world, ground, ball


def test_contact_geometry_and_impulse_of_a_resting_ball(ball_world):
  world, ground, ball = ball_world
  contacts = ball.getContacts()
  assert len(contacts) == 1
  c = contacts[0]
  np.testing.assert_allclose(c.getNormal(), [0, 0, 1], atol=1e-12)  # points to A (the ball)
  assert c.isObjectA()
  np.testing.assert_allclose(c.getPosition()[:2], ball.getPosition()[:2], atol=1e-9)
  assert abs(c.getPosition()[2]) < 1e-3
  assert c.getDepth() == pytest.approx(0.5 - ball.getPosition()[2], abs=2e-6)
  frame = c.getContactFrame()
  np.testing.assert_allclose(frame @ frame.T, np.eye(3), atol=1e-12)
  np.testing.assert_allclose(frame[2], c.getNormal())
  assert np.linalg.det(frame) == pytest.approx(1.0)
  # The impulse holds the ball: m g dt along the normal, no friction.
  np.testing.assert_allclose(c.getImpulse(), [0, 0, 2.0 * G * 1e-3], atol=1e-9)
  np.testing.assert_allclose(frame.T @ c.getImpulse(), [0, 0, 2.0 * G * 1e-3], atol=1e-9)
  # Inverse apparent inertia J M^-1 J^T at r = (0, 0, -R): 1/m I - [r]x I^-1 [r]x.
  r = c.getPosition() - ball.getPosition()
  skew = np.array([[0, -r[2], r[1]], [r[2], 0, -r[0]], [-r[1], r[0], 0]])
  inverse_inertia = np.linalg.inv(ball.getInertiaMatrix_W())
  expected = frame @ (np.eye(3) / 2.0 - skew @ inverse_inertia @ skew) @ frame.T
  np.testing.assert_allclose(c.getInvInertia(), expected, atol=1e-12)
  assert c.getPairObjectIndex() == ground.getIndexInWorld()
  assert c.getPairObjectBodyType() == rj.BodyType.STATIC
  assert c.getlocalBodyIndex() == 0
  assert not c.skip() and not c.isSelfCollision()
  assert c.getIndexInObjectContactList() == 0
  assert c.getIndexContactProblem() == 0
  assert c.getCollisionBodyA()[0] == ball.getIndexInWorld()
  assert c.getCollisionBodyB()[0] == ground.getIndexInWorld()
  assert ground.getContacts() == []  # static objects store no contacts
  problem = world.getContactProblem()
  assert len(problem) == 1
  np.testing.assert_allclose(problem[0].getImpulse(), c.getImpulse())


def test_contact_point_velocity_is_the_body_point_velocity(ball_world):
  world, _, ball = ball_world
  ball.setVelocity([0.1, 0.0, 0.0], [0.0, 2.0, 0.0])
  world.integrate1()
  c = ball.getContacts()[0]
  r = c.getPosition() - ball.getPosition()
  expected = np.array([0.1, 0, 0]) + np.cross([0, 2.0, 0], r)
  np.testing.assert_allclose(ball.getContactPointVel(0), expected, atol=1e-12)
  with pytest.raises(ValueError, match="pointId"):
    ball.getContactPointVel(5)


def test_box_on_box_contacts_seen_from_both_objects():
  world = rj.World()
  world.setTimeStep(1e-3)
  world.addGround()
  bottom = world.addBox(1.0, 1.0, 0.2, 3.0)
  bottom.setPosition(0, 0, 0.1)
  top = world.addBox(0.4, 0.4, 0.2, 1.0)
  top.setPosition(0, 0, 0.3)
  for _ in range(30):
    world.integrate()
  top_contacts = top.getContacts()
  assert len(top_contacts) == 4
  # Top box contacts from the bottom box's list refer back to each other.
  bottom_contacts = bottom.getContacts()
  for c in top_contacts:
    assert c.getPairObjectIndex() == bottom.getIndexInWorld()
    pair = bottom_contacts[c.getPairContactIndexInPairObject()]
    np.testing.assert_allclose(pair.getPosition(), c.getPosition())
    assert pair.isObjectA() != c.isObjectA()
    assert pair.getPairObjectIndex() == top.getIndexInWorld()
  # The four corner impulses carry the top box's weight (on the top box: +z if it is A).
  sign = np.array([1.0 if c.isObjectA() else -1.0 for c in top_contacts])
  total = sum(s * (c.getContactFrame().T @ c.getImpulse()) for s, c in zip(sign, top_contacts))
  np.testing.assert_allclose(total, [0, 0, 1.0 * G * 1e-3], atol=1e-7)
  for c in top_contacts:
    assert abs(c.getPosition()[2] - 0.2) < 1e-3
    assert abs(abs(c.getPosition()[0]) - 0.2) < 1e-6 and abs(abs(c.getPosition()[1]) - 0.2) < 1e-6
  indices = sorted(c.getIndexContactProblem() for c in world.getContactProblem())
  assert indices == list(range(len(indices)))


def test_materials_table_getters_and_object_material():
  world = rj.World()
  assert world.getMaterialPairProperties("a", "b").c_f == 0.8
  assert world.getMaterialPairProperties("a", "b").c_r == 0.0
  world.setMaterialPairProp("steel", "glass", 0.7, 0.1, 0.15)
  props = world.getMaterialPairProperties("glass", "steel")
  assert (props.c_f, props.c_r, props.r_th) == (0.7, 0.1, 0.15)
  assert props.c_static_f == 0.7  # no static friction given: same as dynamic
  world.setMaterialPairProp("steel", "ice", 0.05, 0.0, 0.0, 0.2, 0.01)
  props = world.getMaterialPairProperties("ice", "steel")
  assert (props.c_static_f, props.v_static) == (0.2, 0.01)
  world.setDefaultMaterial(0.5, 0.2, 0.1)
  assert world.getMaterialPairProperties("x", "y").c_f == 0.5
  with pytest.raises(ValueError, match="friction"):
    world.setMaterialPairProp("a", "b", -1.0, 0, 0)
  with pytest.raises(ValueError, match="staticFrictionThresholdVelocity"):
    world.setMaterialPairProp("a", "b", 1.0, 0, 0, 1.0)
  # setObjectMaterial between steps changes the friction a sliding box feels.
  world = rj.World()
  world.setTimeStep(1e-3)
  world.addGround(0, "floor")
  box = world.addBox(0.2, 0.2, 0.2, 1.0, "wood")
  box.setPosition(0, 0, 0.1)
  world.setMaterialPairProp("floor", "wood", 0.5, 0, 0)
  world.setMaterialPairProp("floor", "ice", 0.0, 0, 0)
  world.integrate()
  box.setLinearVelocity([1.0, 0, 0])
  world.setObjectMaterial(box, "ice")
  for _ in range(100):
    world.integrate()
  assert box.getLinearVelocity()[0] == pytest.approx(1.0, abs=1e-6)


def test_contact_solver_settings():
  world = rj.World()
  world.setTimeStep(1e-3)
  world.addGround()
  box = world.addBox(0.2, 0.2, 0.2, 1.0)
  box.setPosition(0, 0, 0.1)
  world.setContactSolverParam(1.0, 1.0, 1.0, 3, 0.0)
  world.integrate()
  assert world.getContactSolverIterations() == 3
  model, _ = world.compile()
  assert int(model.solver.max_iterations) == 3
  world.setContactSolverIterationOrder(False)
  world.setERP(0.5)
  model, _ = world.compile()
  assert int(model.solver.reverse_order) == 1 and float(model.solver.erp) == 0.5
  world.setContactSolverParam(1.0, 1.0, 1.0, 150, 1e-8)
  world.integrate()
  assert 1 <= world.getContactSolverIterations() <= 150
  settings = world.getContactSettings()
  assert settings.maxContactsPerPair == 8 and settings.broadphase.type == 1
  assert settings.gjkMaxIterations == 32 and settings.epaTolerance == 1e-4
  settings.maxContactsPerPair = 1
  world.setContactSettings(settings)
  world.integrate1()
  assert len(box.getContacts()) == 1
  with pytest.raises(ValueError, match="maxIter"):
    world.setContactSolverParam(1, 1, 1, 0, 1e-8)
  for bad in (2.5, float("nan"), float("inf"), True, "10"):   # was truncated: 2.5 -> 2
    with pytest.raises(ValueError, match="'maxIter' must be an integer >= 1"):
      world.setContactSolverParam(1, 1, 1, bad, 1e-8)
  world.setContactSolverParam(1, 1, 1, 40.0, 1e-8)           # a whole float is a count
  assert int(world.compile()[0].solver.max_iterations) == 40

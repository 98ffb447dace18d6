"""Collision bodies of articulated systems (issue: articulated systems II, item 5):
getCollisionBodies / getCollisionBody ("LINK/INDEX"), shape parameters, position and
orientation offsets and per-collision-body materials (URDF <contact name> or setMaterial),
each checked against a closed form (rest heights, sliding distances), each applied without
recompiling the step; getContactPointVel of a system."""

import numpy as np
import pytest

import raisim_jax as rj
from tests import world_steps

G = 9.81

# A free-floating one-link robot: a sphere and a box collision body on link "body".
ROBOT = """<?xml version="1.0"?>
<robot name="puck">
  <link name="body">
    <inertial><mass value="2.0"/>
      <inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial>
    <collision><origin xyz="0 0 0"/><geometry><sphere radius="0.1"/></geometry>
      <material name="m"><contact name="{material}"/></material></collision>
    <collision><origin xyz="0 0 0.3"/><geometry><box size="0.4 0.1 0.1"/></geometry></collision>
  </link>
</robot>"""


def _world(material="ice"):
  world = rj.World()
  world.setTimeStep(1e-3)
  world.addGround()
  world.setMaterialPairProp("ice", "default", 0.05, 0.0, 0.0)
  world.setMaterialPairProp("rubber", "default", 0.8, 0.0, 0.0)
  robot = world.addArticulatedSystem(ROBOT.format(material=material))
  return world, robot


def _settle(world, robot, steps=400):
  for _ in range(steps):
    world.integrate()
  return robot.getGeneralizedCoordinate()


def test_collision_bodies_are_named_link_index_and_views_read_the_description():
  world, robot = _world()
  bodies = robot.getCollisionBodies()
  assert [b.getName() for b in bodies] == ["body/0", "body/1"]
  assert [b.localIdx for b in bodies] == [0, 0]
  sphere = robot.getCollisionBody("body/0")
  assert sphere.getIndex() == 0 and sphere.getShape() == "sphere"
  assert sphere.getMaterial() == "ice" and bodies[1].getMaterial() == "default"
  np.testing.assert_array_equal(bodies[1].posOffset, [0, 0, 0.3])
  np.testing.assert_array_equal(bodies[1].getShapeParameters(), [0.4, 0.1, 0.1])
  with pytest.raises(ValueError):
    bodies[1].posOffset[2] = 1.0                       # read-only: assign the property instead
  with pytest.raises(KeyError, match="no collision body 'body/2'.*body/0, body/1"):
    robot.getCollisionBody("body/2")


# A flat free-floating slab whose single box collision carries a URDF contact material.
SLAB = """<?xml version="1.0"?>
<robot name="slab">
  <link name="slab">
    <inertial><mass value="2.0"/>
      <inertia ixx="0.028" ixy="0" ixz="0" iyy="0.028" iyz="0" izz="0.053"/></inertial>
    <collision><geometry><box size="0.4 0.4 0.1"/></geometry>
      <material name="m"><contact name="ice"/></material></collision>
  </link>
</robot>"""


@pytest.mark.parametrize("material, mu", [("ice", 0.05), ("rubber", 0.8)])
def test_urdf_contact_material_and_setMaterial_set_the_sliding_friction(material, mu):
  """Sliding at 1 m/s, the slab stops after v^2 / (2 mu g): mu = 0.05 with the URDF's "ice",
  0.8 after setMaterial("rubber") on the same collision body (no recompile: "rubber" is
  known to the world through its pair)."""
  world = rj.World()
  world.setTimeStep(1e-3)
  world.addGround()
  world.setMaterialPairProp("ice", "default", 0.05, 0.0, 0.0)
  world.setMaterialPairProp("rubber", "default", 0.8, 0.0, 0.0)
  robot = world.addArticulatedSystem(SLAB)
  robot.setGeneralizedCoordinate([0, 0, 0.05, 1, 0, 0, 0])
  assert robot.getCollisionBody("slab/0").getMaterial() == "ice"
  _settle(world, robot, 50)
  compiled = world_steps.compiled()
  robot.getCollisionBody("slab/0").setMaterial(material)
  assert robot.getCollisionBody("slab/0").getMaterial() == material
  start = robot.getGeneralizedCoordinate()[0]
  robot.setGeneralizedVelocity([1.0, 0, 0, 0, 0, 0])
  _settle(world, robot, int(1.0 / (mu * G) / 1e-3) + 100)
  distance = robot.getGeneralizedCoordinate()[0] - start
  assert abs(robot.getGeneralizedVelocity()[0]) < 1e-9
  assert distance == pytest.approx(1.0 / (2 * mu * G), rel=0.01)
  assert world_steps.compiled() == compiled


def test_position_orientation_and_shape_parameters_move_the_rest_height_without_recompiling():
  world, robot = _world()
  robot.setGeneralizedCoordinate([0, 0, 0.12, 1, 0, 0, 0])
  assert _settle(world, robot)[2] == pytest.approx(0.1, abs=1e-3)      # sphere r = 0.1
  compiled = world_steps.compiled()
  robot.setCollisionBodyShapeParameters(0, [0.15, 0, 0, 0])
  assert _settle(world, robot)[2] == pytest.approx(0.15, abs=1e-3)     # pushed up to r
  robot.getCollisionBody("body/0").posOffset = [0.0, 0.0, -0.05]
  assert _settle(world, robot)[2] == pytest.approx(0.2, abs=1e-3)      # centre 5 cm lower
  # Turn the puck upside down: the box (z = 0.3, 0.1 thick) is now under the sphere and
  # carries it; stood on end by the orientation offset (long side vertical) it holds the
  # body 0.3 + 0.2 above the ground.
  robot.setGeneralizedCoordinate([0, 0, 0.6, 0, 1, 0, 0])
  robot.setGeneralizedVelocity(np.zeros(6))
  assert _settle(world, robot)[2] == pytest.approx(0.3 + 0.05, abs=1e-3)
  robot.setCollisionBodyOrientationOffset(1, [[0, 0, 1], [0, 1, 0], [-1, 0, 0]])
  robot.setGeneralizedCoordinate([0, 0, 0.6, 0, 1, 0, 0])
  robot.setGeneralizedVelocity(np.zeros(6))
  assert _settle(world, robot)[2] == pytest.approx(0.3 + 0.2, abs=1e-3)
  assert world_steps.compiled() == compiled
  with pytest.raises(ValueError, match="params"):
    robot.setCollisionBodyShapeParameters(0, [-0.1])
  with pytest.raises(ValueError, match="'id'"):
    robot.setCollisionBodyShapeParameters(2, [0.1])
  with pytest.raises(ValueError, match=r"'id' .* got 'base/0' \(a name: getCollisionBody"):
    robot.setCollisionBodyShapeParameters("base/0", [0.1])
  with pytest.raises(ValueError, match="oriOffset"):
    robot.setCollisionBodyOrientationOffset(1, np.diag([1.0, 1.0, -1.0]))


def test_contact_point_velocity_of_a_sliding_system():
  world, robot = _world()
  robot.setGeneralizedCoordinate([0, 0, 0.1, 1, 0, 0, 0])
  robot.setGeneralizedVelocity([0.5, 0, 0, 0, 0, 2.0])
  world.integrate()
  (contact,) = robot.getContacts()
  u = robot.getGeneralizedVelocity()
  r = contact.getPosition() - robot.getGeneralizedCoordinate()[:3]
  w = robot.getAngularVelocity(0)
  np.testing.assert_allclose(robot.getContactPointVel(0), u[:3] + np.cross(w, r), atol=1e-12)
  with pytest.raises(ValueError, match="pointId"):
    robot.getContactPointVel(1)


def test_single_body_material_edit_in_a_world_with_a_robot():
  """setObjectMaterial after the first step, in a world whose shape table also holds link
  shapes: the ball's new material (restitution 0.5) applies to its next impact."""
  world, robot = _world()
  world.setMaterialPairProp("bouncy", "default", 0.8, 0.5, 0.0)
  robot.setGeneralizedCoordinate([2, 0, 0.1, 1, 0, 0, 0])
  ball = world.addSphere(0.1, 1.0)
  ball.setPosition(0, 0, 0.5)
  world.integrate()
  world.setObjectMaterial(ball, "bouncy")
  speeds = []
  for _ in range(400):
    world.integrate()
    speeds.append(ball.getLinearVelocity()[2])
  speeds = np.asarray(speeds)
  impact = np.argmax(np.diff(speeds) > 1.0)
  assert speeds[impact + 1] == pytest.approx(-0.5 * speeds[impact], rel=0.02)


# A flap hinged at the edge of a fixed slab, lying flat on it (faces exactly coincident).
FLAP = """<?xml version="1.0"?>
<robot name="flap">
  <link name="world"/>
  <joint name="mount" type="fixed"><parent link="world"/><child link="slab"/>
    <origin xyz="0 0 0.5"/></joint>
  <link name="slab">
    <inertial><mass value="5"/><inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial>
    <collision><geometry><box size="0.4 0.4 0.1"/></geometry></collision>
  </link>
  <joint name="hinge" type="revolute"><parent link="slab"/><child link="flap"/>
    <origin xyz="0.2 0 0.06"/><axis xyz="0 1 0"/>
    <limit lower="-3" upper="3" effort="0" velocity="0"/></joint>
  <link name="flap">
    <inertial><origin xyz="-0.2 0 0"/><mass value="1"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.02"/></inertial>
    <collision><origin xyz="-0.2 0 0"/><geometry><box size="0.4 0.3 0.02"/></geometry></collision>
  </link>
</robot>"""


def _self_contacts(robot):
  return [c for c in robot.getContacts() if c.isSelfCollision() and not c.skip()]


def test_allowed_number_of_internal_contacts_between_two_bodies():
  """The flap rests face to face on its slab (a 4-point box-box manifold). RaiSim's default
  keeps 1 contact between two bodies of one system, and the flap still rests; with 4 allowed
  the whole manifold acts. The limit changes without recompiling."""
  world = rj.World()
  world.setTimeStep(1e-3)
  robot = world.addArticulatedSystem(FLAP, options=rj.ArticulatedSystemOption(
      doNotCollideWithParent=False))
  assert robot.getAllowedNumberOfInternalContactsBetweenTwoBodies() == 1
  robot.setState([0.0], [0.0])
  for _ in range(200):
    world.integrate()
  assert len(_self_contacts(robot)) == 1
  assert abs(robot.getGeneralizedCoordinate()[0]) < 1e-3
  compiled = world_steps.compiled()
  robot.setAllowedNumberOfInternalContactsBetweenTwoBodies(4)
  for _ in range(50):
    world.integrate()
  assert len(_self_contacts(robot)) == 4
  assert abs(robot.getGeneralizedCoordinate()[0]) < 1e-3
  assert world_steps.compiled() == compiled
  with pytest.raises(ValueError, match="'count' must be an integer >= 1"):
    robot.setAllowedNumberOfInternalContactsBetweenTwoBodies(0)


def test_setObjectMaterial_on_a_system_and_on_mesh_collision_bodies(tmp_path):
  """A collision mesh is simulated (its convex hull): its material and offsets can be set
  like a primitive's, but it has no shape parameters; a missing mesh file is refused at the
  add call, naming the URDF, the link, the line and the file."""
  import trimesh
  world = rj.World()
  world.setMaterialPairProp("rubber", "default", 0.8, 0.0, 0.0)
  robot = world.addArticulatedSystem(SLAB)
  world.integrate()
  assert world.setObjectMaterial(robot, "rubber", 0)
  assert robot.getCollisionBody("slab/0").getMaterial() == "rubber"
  with pytest.raises(ValueError, match="localIdx"):
    world.setObjectMaterial(robot, "rubber", 3)
  missing = SLAB.replace('<box size="0.4 0.4 0.1"/>', '<mesh filename="slab.stl"/>')
  with pytest.raises(ValueError, match=r"link 'slab', line 6: collision mesh file '.*slab.stl' "
                                       r"not found"):
    world.addArticulatedSystem(missing)
  trimesh.creation.box([0.4, 0.4, 0.1]).export(tmp_path / "slab.stl")
  meshy = world.addArticulatedSystem(missing.replace("slab.stl", str(tmp_path / "slab.stl")))
  world.integrate()
  meshy.getCollisionBody("slab/0").setMaterial("rubber")
  assert meshy.getCollisionBody("slab/0").getMaterial() == "rubber"
  meshy.setCollisionBodyPositionOffset(0, [0, 0, 0.1])
  np.testing.assert_array_equal(meshy.getCollisionBody("slab/0").posOffset, [0, 0, 0.1])
  with pytest.raises(ValueError, match="is a mesh: it has no shape parameters"):
    meshy.setCollisionBodyShapeParameters(0, [0.1, 0.1, 0.1])


def test_compile_leaves_the_island_block_move_out_where_it_cannot_run():
  """`World.compile()`'s Model traces the island block move only where a dynamic single body
  can have two contact rows with single bodies (`block_move_for`): a robot on the ground gets
  "off" (~25% less XLA compile) and rolls out bit for bit as with the move traced (the move
  never runs there); so does a lone ball beside it (one row, the ground's); a second ball
  (a sphere pair) or a box (four corners on the ground) bring it back, and removing the
  second ball or making the box STATIC drops it again."""
  import jax
  world, robot = _world("rubber")
  robot.setGeneralizedCoordinate([0.05, 0.0, 0.12, 1.0, 0.0, 0.0, 0.0])
  robot.setGeneralizedVelocity([0.5, 0.0, -0.3, 0.0, 2.0, 0.0])
  model, state = world.compile()
  assert model.solver.block_move == "off"
  compact = model.replace(solver=model.solver.replace(block_move="compact"))
  roll = jax.jit(lambda m, s: rj.rollout(m, s, 60))
  plain_final, plain = roll(model, state)
  move_final, move = roll(compact, state)
  assert int(np.asarray(plain.contacts.active).sum()) > 0           # the robot lands
  for a, b in zip(jax.tree.leaves((plain_final, plain)), jax.tree.leaves((move_final, move))):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))

  def move():
    return world.compile()[0].solver.block_move

  ball = world.addSphere(0.1, 1.0)
  ball.setPosition(1.0, 0.0, 0.1)
  assert move() == "off"
  second = world.addSphere(0.1, 1.0)
  second.setPosition(2.0, 0.0, 0.1)
  assert move() == "compact"
  world.removeObject(second)
  assert move() == "off"
  ball.setBodyType(rj.BodyType.STATIC)     # else ground + static box: two rows for the ball
  box = world.addBox(0.2, 0.2, 0.2, 1.0)
  box.setPosition(-1.0, 0.0, 0.1)
  assert move() == "compact"
  box.setBodyType(rj.BodyType.STATIC)
  assert move() == "off"


def test_unsupported_collision_geometry_warns_once_at_the_users_add_call():
  """pybullet_data's r2d2 has mesh collision bodies, which do not collide with its own
  bodies: one warning names them, attributed to
  the line that added the robot (not to the library's compile), and neither stepping nor a
  recompile after an edit repeats it."""
  import os
  import warnings
  import pybullet_data
  world = rj.World()
  world.addGround()
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    world.addArticulatedSystem(os.path.join(pybullet_data.getDataPath(), "r2d2.urdf"))
    added = len(caught)
    world.integrate()
    world.removeObject(world.addBox(0.1, 0.1, 0.1, 1.0))
    world.integrate()
  meshes = [w for w in caught if "collision meshes" in str(w.message)]
  assert added == 1 and len(meshes) == 1
  assert meshes[0].filename == __file__
  assert "but not with the system's own collision bodies" in str(meshes[0].message)
  assert str(meshes[0].message).endswith("left_gripper/0, left_tip/0, right_gripper/0, "
                                         "right_tip/0")

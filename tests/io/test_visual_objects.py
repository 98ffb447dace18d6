"""URDF visual objects (RaiSim's getVisOb / getVisColOb / getVisObPose): shapes, colors from
`<material><color>` (inline or robot-level by name) and world poses of a swinging link,
checked against the numbers in the file and the analytic pendulum pose."""

import numpy as np
import pytest

import raisim_jax as rj

URDF = """<robot name="pendulum">
  <material name="blue"><color rgba="0 0 1 1"/></material>
  <link name="world"/>
  <link name="arm">
    <inertial><mass value="1"/><origin xyz="0 0 -0.5"/>
      <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial>
    <visual><origin xyz="0 0 -0.5"/><geometry><box size="0.1 0.2 1"/></geometry>
      <material name="blue"/></visual>
    <visual><origin xyz="0 0 -1" rpy="0 1.5707963267948966 0"/>
      <geometry><cylinder radius="0.1" length="0.3"/></geometry>
      <material name="tip"><color rgba="1 0.5 0 0.25"/></material></visual>
    <visual><geometry><sphere radius="0.05"/></geometry></visual>
    <collision><origin xyz="0 0 -1"/><geometry><sphere radius="0.1"/></geometry></collision>
  </link>
  <joint name="hinge" type="revolute"><parent link="world"/><child link="arm"/>
    <origin xyz="0 0 2"/><axis xyz="1 0 0"/><limit effort="1" velocity="1" lower="-3" upper="3"/>
  </joint>
</robot>
"""


def test_visual_objects_read_shapes_and_colors_from_the_file():
  world = rj.World()
  robot = world.addArticulatedSystem(URDF)
  box, cylinder, sphere = robot.getVisOb()
  assert (box.shape, cylinder.shape, sphere.shape) == ("box", "cylinder", "sphere")
  np.testing.assert_array_equal(box.visShapeParam, [0.1, 0.2, 1, 0])
  np.testing.assert_array_equal(cylinder.visShapeParam, [0.1, 0.3, 0, 0])
  np.testing.assert_array_equal(box.color, [0, 0, 1, 1])              # robot-level material
  np.testing.assert_array_equal(cylinder.color, [1, 0.5, 0, 0.25])    # inline color
  np.testing.assert_array_equal(sphere.color, [0.7, 0.7, 0.7, 1])     # none given
  assert {v.localIdx for v in robot.getVisOb()} == {0}
  (collision,) = robot.getVisColOb()
  np.testing.assert_array_equal(collision.visShapeParam, [0.1, 0, 0, 0])


def test_visual_object_poses_follow_the_joint():
  world = rj.World()
  robot = world.addArticulatedSystem(URDF)
  angle = 0.7
  robot.setGeneralizedCoordinate([angle])
  c, s = np.cos(angle), np.sin(angle)
  rot_x = np.array([[1, 0, 0], [0, c, -s], [0, s, c]])
  pivot = np.array([0, 0, 2.0])
  rot, pos = robot.getVisObPose(0)
  np.testing.assert_allclose(pos, pivot + rot_x @ [0, 0, -0.5], atol=1e-12)
  np.testing.assert_allclose(rot, rot_x, atol=1e-12)
  rot, pos = robot.getVisObPose(1)
  np.testing.assert_allclose(pos, pivot + [0, s, -c], atol=1e-12)
  np.testing.assert_allclose(rot, rot_x @ np.array([[0, 0, 1], [0, 1, 0], [-1, 0, 0]]),
                             atol=1e-12)
  robot.setCollisionBodyPositionOffset(0, [0, 0, -0.8])   # the view reads the description
  rot, pos = robot.getVisColObPose(0)
  np.testing.assert_allclose(pos, pivot + 0.8 * np.array([0, s, -c]), atol=1e-12)
  for bad in (3, -1, 1.5, True):
    with pytest.raises(ValueError, match="argument 'visObjIdx' must be an index < 3"):
      robot.getVisObPose(bad)

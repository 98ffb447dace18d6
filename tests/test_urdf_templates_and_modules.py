"""Templated URDFs (@@variables, {expressions}) and URDF modules (fragments inserted before
</robot>), through World.addArticulatedSystem's overloads. Oracle: the same robot written out
by hand, loaded as a plain URDF."""

import math
import os

import numpy as np
import pytest

import raisim_jax as rj
from raisim_jax.io import template

TEMPLATE = """<?xml version="1.0"?>
<robot name="templated">
  <link name="world"/>
  <joint name="mount" type="fixed"><parent link="world"/><child link="base"/>
    <origin xyz="0 0 @@Height"/></joint>
  <link name="base"/>
  <joint name="hinge" type="revolute"><parent link="base"/><child link="rod"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="0" velocity="100"/></joint>
  <link name="rod">
    <inertial><origin xyz="0 0 {-@@Length/2}"/><mass value="{@@Mass*2}"/>
      <inertia ixx="{@@Mass*2*@@Length*@@Length/12}" ixy="0" ixz="0"
               iyy="{@@Mass*2*@@Length*@@Length/12}" iyz="0" izz="{exp(log(0.01))}"/></inertial>
  </link>
</robot>"""


def _written_out(height, length, mass):
  """The template with its values substituted by hand."""
  m = 2 * mass
  i = m * length * length / 12
  return (TEMPLATE.replace("@@Height", repr(height))
          .replace("{-@@Length/2}", repr(-length / 2)).replace("{@@Mass*2}", repr(m))
          .replace("{@@Mass*2*@@Length*@@Length/12}", repr(i))
          .replace("{exp(log(0.01))}", "0.01"))


@pytest.mark.parametrize("as_containers, height, length, mass", [
    (False, 1.5, 0.8, 1.25), (True, 0.7, 1.3, 4.0)])
def test_templated_urdf_equals_the_urdf_written_out(tmp_path, as_containers, height, length,
                                                    mass):
  """Two parameter sets build two different robots, each equal to its URDF written out."""
  path = tmp_path / "templated.urdf"
  path.write_text(TEMPLATE)
  values = {"Height": repr(height), "Length": length, "Mass": repr(mass)}
  params = ([rj.ParameterContainer(k, v) for k, v in values.items()] if as_containers
            else values)
  world = rj.World()
  robot = world.addArticulatedSystem(str(path), params)
  reference = rj.World().addArticulatedSystem(_written_out(height, length, mass))
  for r in (robot, reference):
    r.setGeneralizedCoordinate([0.4])
  np.testing.assert_allclose(robot.getMassMatrix(), reference.getMassMatrix(), rtol=1e-14)
  np.testing.assert_allclose(robot.getTotalMass(), 2 * mass, rtol=1e-15)
  # The pendulum's inertia about the hinge: m l^2 / 12 + m (l/2)^2 = m l^2 / 3 (+ izz unused).
  np.testing.assert_allclose(robot.getMassMatrix()[0, 0], 2 * mass * length**2 / 3, rtol=1e-12)
  np.testing.assert_allclose(robot.getFramePosition(robot.getFrameIdxByName("hinge")),
                             [0, 0, height], atol=1e-15)


def test_template_errors_name_the_variable_or_expression_and_line(tmp_path):
  path = tmp_path / "templated.urdf"
  path.write_text(TEMPLATE)
  world = rj.World()
  with pytest.raises(ValueError, match=r"templated.urdf, line 5: template variable @@Height "
                                       r"has no value"):
    world.addArticulatedSystem(str(path), {"Length": 1, "Mass": 1})
  with pytest.raises(ValueError, match=r"line 10: expression \{-1/2\}|line 10: unknown name"):
    world.addArticulatedSystem(str(path), {"Height": 1, "Length": "x", "Mass": 1})
  bad = TEMPLATE.replace("{@@Mass*2}", "{__import__('os').getcwd()}")
  with pytest.raises(ValueError, match=r"<string>, line 10: unsupported syntax"):
    world.addArticulatedSystem(bad, {"Height": 1, "Length": 1, "Mass": 1})
  assert template.evaluate("2*sin(0.5)+cos(0.5)/exp(1)-log(2)") == pytest.approx(
      2 * math.sin(0.5) + math.cos(0.5) / math.e - math.log(2), rel=1e-15)


BASE = """<robot name="base">
  <link name="world"/>
  <joint name="mount" type="fixed"><parent link="world"/><child link="body"/></joint>
  <link name="body"><inertial><mass value="1"/>
    <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
  <joint name="slide" type="prismatic"><parent link="body"/><child link="carriage"/>
    <axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="0" velocity="10"/></joint>
  <link name="carriage"><inertial><mass value="2"/>
    <inertia ixx="0.1" ixy="0" ixz="0" iyy="0.1" iyz="0" izz="0.1"/></inertial></link>
</robot>
"""

PAYLOAD = """<?xml version="1.0"?>
<joint name="payload_mount" type="fixed"><parent link="carriage"/><child link="payload"/>
  <origin xyz="0 0 0.1"/></joint>
<link name="payload"><inertial><mass value="0.5"/>
  <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial></link>
"""

CAMERA = """<robot name="camera_pack">
<joint name="camera_mount" type="fixed"><parent link="body"/><child link="camera"/></joint>
<link name="camera"><inertial><mass value="0.25"/>
  <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.001"/></inertial></link>
</robot>
"""


def test_modules_are_inserted_in_the_spec_search_order(tmp_path):
  robot_dir = tmp_path / "robot" / "urdf"
  robot_dir.mkdir(parents=True)
  (robot_dir / "base.urdf").write_text(BASE)
  (robot_dir / "modules").mkdir()
  (robot_dir / "modules" / "payload.xml").write_text(PAYLOAD)       # [baseDir]/modules
  (tmp_path / "robot" / "module").mkdir()
  (tmp_path / "robot" / "module" / "camera.xml").write_text(CAMERA)  # [baseDir]/../module
  world = rj.World()
  robot = world.addArticulatedSystem(str(robot_dir / "base.urdf"), ["payload.xml",
                                                                     "camera.xml"])
  generated = robot_dir / "generated_base_payload_camera.urdf"
  assert generated.is_file()
  assert robot.getDOF() == 1
  # The prismatic joint now carries 2 + 0.5 kg; the base's fixed payload adds to nothing that moves.
  np.testing.assert_allclose(robot.getMassMatrix(), [[2.5]], rtol=1e-15)
  np.testing.assert_allclose(robot.getTotalMass(), 3.75, rtol=1e-15)
  # An explicit resDir is the baseDir: the module is searched (and the file written) there.
  other = tmp_path / "elsewhere"
  other.mkdir()
  (other / "payload.xml").write_text(PAYLOAD)
  again = world.addArticulatedSystem(str(robot_dir / "base.urdf"), ["payload.xml"], str(other))
  assert (other / "generated_base_payload.urdf").is_file()
  np.testing.assert_allclose(again.getMassMatrix(), [[2.5]], rtol=1e-15)
  with pytest.raises(FileNotFoundError, match=r"'lidar.xml' not found; looked for: .*"
                                              + "modules" + r".*module"):
    world.addArticulatedSystem(str(robot_dir / "base.urdf"), ["lidar.xml"])


def test_overloads_reject_what_matches_none():
  world = rj.World()
  with pytest.raises(TypeError, match="second argument must be resPath"):
    world.addArticulatedSystem("rsc/urdf/pendulum.urdf", 3)
  with pytest.raises(TypeError, match="'resPath' given twice"):
    world.addArticulatedSystem("rsc/urdf/pendulum.urdf", "", resPath="")
  robot = world.addArticulatedSystem("rsc/urdf/pendulum.urdf", "", [], 1, -1)
  assert robot.getDOF() == 1 and os.path.isfile("rsc/urdf/pendulum.urdf")


SENSORS = """<?xml version="1.0"?>
<sensors update_rate="200">
  <sensor name="imu" type="imu" pos="0 0 0.05"/>
  <sensor name="camera" type="depth" pos="0.1 0 0" update_rate="30" width="640"/>
</sensors>
"""


def test_link_sensor_sets_are_read_and_stored(tmp_path):
  """`<link sensor="set.xml">` (a URDF module would typically add it): the set's sensors are
  stored with their link, types, rates and poses, and the engine says they are not simulated."""
  (tmp_path / "sensors.xml").write_text(SENSORS)
  urdf_path = tmp_path / "robot.urdf"
  urdf_path.write_text(BASE.replace('<link name="carriage">',
                                    '<link name="carriage" sensor="sensors.xml">'))
  world = rj.World()
  with pytest.warns(UserWarning, match=r"sensors of robot 'base' \(depth, imu\) are read and "
                                       r"stored .* not simulated"):
    robot = world.addArticulatedSystem(str(urdf_path))
  sensors = robot._entry.description.sensors
  assert [(s.link, s.type, s.name, s.update_rate) for s in sensors] == [
      ("carriage", "imu", "imu", 200.0), ("carriage", "depth", "camera", 30.0)]
  np.testing.assert_array_equal(sensors[0].pos, [0, 0, 0.05])
  assert sensors[1].attributes["width"] == "640"
  (tmp_path / "bad.xml").write_text('<sensors>\n<sensor type="sonar"/>\n</sensors>')
  urdf_path.write_text(BASE.replace('<link name="carriage">',
                                    '<link name="carriage" sensor="bad.xml">'))
  with pytest.raises(ValueError, match=r"bad.xml, line 2, <sensor>: unknown sensor type "
                                       r"'sonar'"):
    world.addArticulatedSystem(str(urdf_path))
  urdf_path.write_text(BASE.replace('<link name="carriage">',
                                    '<link name="carriage" sensor="none.xml">'))
  with pytest.raises(ValueError, match=r"robot.urdf.*line 8.*sensor set .*none.xml' of link "
                                       r"'carriage' not found"):
    world.addArticulatedSystem(str(urdf_path))

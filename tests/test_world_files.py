"""RaiSim world files (#10 item 1): World(configFile, params) builds the world the same calls
in code build (oracle: the compiled Model and State of that world, leaf for leaf)."""

import os
import textwrap
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import raisim_jax as rj

# The spec's material example (material_system.txt) with its tag structure repaired.
MATERIALS = "rsc/worlds/materials.xml"


def _assert_same_world(a, b):
  model_a, state_a = a.compile()
  model_b, state_b = b.compile()
  assert jax.tree.structure(model_a) == jax.tree.structure(model_b)
  for x, y in zip(jax.tree.leaves((model_a, state_a)), jax.tree.leaves((model_b, state_b))):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def _write(directory, name, text):
  path = os.path.join(directory, name)
  with open(path, "w") as f:
    f.write(textwrap.dedent(text))
  return path


def test_the_spec_material_example_loads_and_bounces_by_its_pairs():
  with pytest.warns(UserWarning, match=r"ignored .*<camera>"):
    world = rj.World(MATERIALS)
  assert world.getConfigFile() == os.path.abspath(MATERIALS)
  code = rj.World()
  code.setTimeStep(0.001)
  code.addGround(0.0, "steel").setName("ground")
  for x, material in ((-2, "steel"), (0, "rubber"), (2, "copper")):
    sphere = code.addSphere(0.5, 1.0, material)
    sphere.setPosition(x, 0, 5)
    sphere.setName(f"sphere_{material}")
  code.setDefaultMaterial(0.8, 0.0, 0.0)
  code.setMaterialPairProp("steel", "steel", 0.8, 0.95, 0.001)
  code.setMaterialPairProp("steel", "rubber", 0.8, 0.15, 0.001)
  code.setMaterialPairProp("steel", "copper", 0.8, 0.65, 0.001)
  _assert_same_world(world, code)
  assert world.getTimeStep() == 0.001
  assert world.getMaterialPairProperties("rubber", "steel").c_r == 0.15
  assert world.getObject("sphere_copper").getPosition()[0] == 2.0
  # The pairs act: after the first bounce the steel sphere rebounds fastest.
  speeds = {}
  for _ in range(1100):
    world.integrate()
    for name in ("sphere_steel", "sphere_rubber", "sphere_copper"):
      speeds[name] = max(speeds.get(name, 0.0), world.getObject(name).getLinearVelocity()[2])
  assert speeds["sphere_steel"] > speeds["sphere_copper"] > speeds["sphere_rubber"] > 0


TEMPLATED = """\
<raisim version="1.0">
  <params>
    <height value="1.0"/>
    <param name="count" value="3"/>
  </params>
  <time_step value="{0.002/2}"/>
  <gravity value="0, 0, -9.0"/>
  <objects>
    <include path="floor.xml"/>
    <array idx="@@i" start="0" end="@@count" increment="1">
      <sphere name="ball_@@i" mass="{1+@@i}" collisionGroup="collision[1]" collision_mask="collision[0|1]">
        <dim radius="{0.1+0.05*@@i}"/>
        <state pos="{@@i*0.5} 0 @@height" lin_vel="0 0 {-@@i}" angVel="0 0 1"/>
      </sphere>
    </array>
    <box name="crate" mass="2" exist="@@with_crate" body_type="static">
      <dim x="0.2" y="0.3" z="0.4"/>
      <inertia xx="0.1" xy="0" xz="0" yy="0.2" yz="0" zz="0.3"/>
      <state pos="0 1 0.2" quat="0 0 0 2"/>
    </box>
    <capsule name="pill" mass="1"><dim radius="0.05" height="0.2"/><state pos="1 1 1"/></capsule>
    <cylinder name="can" mass="1"><dim radius="0.05" height="0.2"/><state pos="2 1 1"/></cylinder>
    <cone name="cone" mass="1"><dim radius="0.05" height="0.2"/><state pos="3 1 1"/></cone>
    <compound name="dumbbell" mass="2" com="0 0 0">
      <inertia xx="0.01" xy="0" xz="0" yy="0.02" yz="0" zz="0.02"/>
      <children>
        <sphere material="rubber"><dim radius="0.05"/><state pos="0.2 0 0"/></sphere>
        <box><dim x="0.4" y="0.02" z="0.02"/></box>
      </children>
      <state pos="0 -1 1"/>
    </compound>
  </objects>
</raisim>
"""


def _templated_in_code(count, height, with_crate):
  world = rj.World()
  world.setTimeStep(0.001)
  world.setGravity([0, 0, -9.0])
  world.addGround(-0.5).setName("floor")
  for i in range(count):
    ball = world.addSphere(0.1 + 0.05 * i, 1.0 + i, "default", rj.COLLISION(1),
                           rj.COLLISION(0) | rj.COLLISION(1))
    ball.setPosition(i * 0.5, 0, height)
    ball.setVelocity(0, 0, -i, 0, 0, 1)
    ball.setName(f"ball_{i}")
  if with_crate:
    crate = world.addBox(0.2, 0.3, 0.4, 2.0)
    crate.setInertia(np.diag([0.1, 0.2, 0.3]))
    crate.setPosition(0, 1, 0.2)
    crate.setOrientation(0, 0, 0, 1)
    crate.setBodyType(rj.BodyType.STATIC)
    crate.setName("crate")
  for i, (add, name) in enumerate(((world.addCapsule, "pill"), (world.addCylinder, "can"),
                                   (world.addCone, "cone"))):
    body = add(0.05, 0.2, 1.0)
    body.setPosition(i + 1, 1, 1)
    body.setName(name)
  children = [rj.CompoundObjectChild(rj.ObjectType.SPHERE, [0.05, 0, 0, 0], "rubber",
                                     trans=rj.Transformation([0.2, 0, 0])),
              rj.CompoundObjectChild(rj.ObjectType.BOX, [0.4, 0.02, 0.02, 0])]
  dumbbell = world.addCompound(children, 2.0, [0, 0, 0], np.diag([0.01, 0.02, 0.02]))
  dumbbell.setPosition(0, -1, 1)
  dumbbell.setName("dumbbell")
  return world


@pytest.mark.parametrize("params, count, height, with_crate", [
    ({"with_crate": "true"}, 3, 1.0, True),
    ([rj.ParameterContainer("with_crate", "0"), rj.ParameterContainer("count", "2"),
      rj.ParameterContainer("height", 2.5)], 2, 2.5, False)])
def test_templates_arrays_includes_and_both_spellings(tmp_path, params, count, height,
                                                      with_crate):
  (tmp_path / "parts").mkdir()
  _write(tmp_path, "floor.xml", """\
      <raisim version="1.0"><objects>
        <ground name="floor" height="-0.5"/>
      </objects></raisim>""")
  path = _write(tmp_path / "parts", "world.xml", TEMPLATED.replace(
      'path="floor.xml"', 'path="[THIS_DIR]/../floor.xml"'))
  world = rj.World(path, params)
  _assert_same_world(world, _templated_in_code(count, height, with_crate))
  # A loaded world takes objects from code too, and steps.
  world.addSphere(0.1, 1.0).setPosition(5, 5, 1)
  for _ in range(5):
    world.integrate()
  assert np.all(np.isfinite(world.getObject("ball_0").getPosition()))


ROBOT = """\
<raisim version="1.0">
  <objects>
    <ground name="floor"/>
    <articulatedSystem name="pendulum" urdfPath="[THIS_DIR]/pendulum.urdf" collision_group="collision[2]">
      <state qpos="0.3" qvel="-0.5"/>
      <pd p_gain="20" d_gain="1" p_target="0.1" d_target="0"/>
    </articulatedSystem>
  </objects>
</raisim>
"""


def test_articulated_system_with_state_and_pd(tmp_path):
  with open("rsc/urdf/pendulum.urdf") as f:
    _write(tmp_path, "pendulum.urdf", f.read())
  path = _write(tmp_path, "robot.xml", ROBOT)
  world = rj.World(path)
  code = rj.World()
  code.addGround().setName("floor")
  robot = code.addArticulatedSystem(str(tmp_path / "pendulum.urdf"), "", (), rj.COLLISION(2))
  robot.setState([0.3], [-0.5])
  robot.setControlMode(rj.ControlMode.PD_PLUS_FEEDFORWARD_TORQUE)
  robot.setPdGains([20.0], [1.0])
  robot.setPdTarget([0.1], [0.0])
  robot.setName("pendulum")
  _assert_same_world(world, code)
  for w in (world, code):
    for _ in range(20):
      w.integrate()
  np.testing.assert_array_equal(world.getObject("pendulum").getGeneralizedCoordinate(),
                                code.getObject("pendulum").getGeneralizedCoordinate())


@pytest.mark.parametrize("body, message", [
    ('<sphere mass="1"><dim radius="abc"/><state pos="0 0 1"/></sphere>',
     r"line 3, <dim>: attribute 'radius': 'abc' is not a number"),
    ('<sphere mass="-1"><dim radius="0.1"/><state pos="0 0 1"/></sphere>',
     r"line 3, <sphere>: attribute 'mass' must be positive"),
    ('<box mass="1"><dim x="1" y="1" z="1"/><state pos="0 0"/></box>',
     r"line 3, <state>: attribute 'pos' needs 3 numbers, got 2"),
    ('<sphere mass="1"><dim radius="0.1"/><state pos="0 0 1" quat="0 0 0 0"/></sphere>',
     r"line 3, <state>: attribute 'quat' must not be zero"),
    ('<sphere mass="1"><dim radius="@@r"/><state pos="0 0 1"/></sphere>',
     r"line 3: template variable @@r has no value"),
    ('<sphere mass="{1+}"><dim radius="1"/><state pos="0 0 1"/></sphere>',
     r"line 3: malformed expression \{1\+\}"),
    ('<wire name="w" type="stiff"/>', r"line 3, <wire>: wires .* not simulated"),
    ('<heightmap name="h"/>', r"line 3, <heightmap>: height maps are not supported"),
    ('<teapot/>', r"line 3, <teapot>: unknown object"),
    ('<sphere mass="1" body_type="floating"><dim radius="1"/><state pos="0 0 1"/></sphere>',
     r"line 3, <sphere>: attribute 'body_type' must be dynamic, kinematic or static"),
])
def test_bad_files_name_file_line_and_element(tmp_path, body, message):
  path = _write(tmp_path, "bad.xml", f'<raisim version="1.0">\n<objects>\n{body}\n'
                                     f'</objects>\n</raisim>\n')
  with pytest.raises(ValueError, match=r"bad.xml, " + message):
    rj.World(path)


def test_world_level_errors(tmp_path):
  with pytest.raises(FileNotFoundError, match="missing.xml: world file not found"):
    rj.World(str(tmp_path / "missing.xml"))
  path = _write(tmp_path, "erp.xml", '<raisim>\n<erp erp="0.1" erp2="0.002"/>\n</raisim>')
  with pytest.raises(ValueError, match=r"erp.xml, line 2, <erp>: 'erp2'.*not supported"):
    rj.World(path)
  path = _write(tmp_path, "broken.xml", '<raisim>\n<objects>\n</raisim>')
  with pytest.raises(ValueError, match=r"broken.xml: malformed XML \(line 3\)"):
    rj.World(path)
  with pytest.raises(TypeError, match=r"World\(dtype=...\)"):
    rj.World(jnp.float32)
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    world = rj.World(dtype=jnp.float32)       # a world in code still takes its precision
  assert world.getConfigFile() == ""


def _every_object_type(tmp_path):
  """A world with every object type the format holds, edited after creation."""
  world = rj.World()
  world.setTimeStep(0.002)
  world.setGravity([0.1, 0, -9.7])
  world.setERP(0.3)
  world.setDefaultMaterial(0.7, 0.1, 0.01)
  world.setMaterialPairProp("rubber", "steel", 0.9, 0.5, 0.1, 1.1, 0.01)
  world.addGround(-0.1, "steel", rj.COLLISION(1) | rj.COLLISION(2)).setName("floor")
  ball = world.addSphere(0.1, 1.5, "rubber")
  ball.setPosition(0.1, 0.2, 0.5)
  ball.setVelocity(0.3, 0, -1, 0, 2, 0)
  box = world.addBox(0.2, 0.3, 0.4, 2.0, "steel", rj.COLLISION(2), rj.COLLISION(1))
  box.setPosition(1, 0, 0.3)
  box.setOrientation(np.cos(0.2), 0, np.sin(0.2), 0)
  box.setInertia(np.array([[0.1, 0.01, 0], [0.01, 0.2, 0], [0, 0, 0.3]]))
  box.setCom([0.01, 0, -0.02])
  box.setName("box")
  for k, add in enumerate((world.addCylinder, world.addCapsule, world.addCone)):
    body = add(0.05 + 0.01 * k, 0.2, 1.0 + k)
    body.setPosition(2 + k, 0, 0.5)
  shelf = world.addBox(1, 1, 0.05, 1.0)
  shelf.setPosition(0, 3, 1)
  shelf.setBodyType(rj.BodyType.STATIC)
  rot = np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1.0]])
  children = [rj.CompoundObjectChild(rj.ObjectType.SPHERE, [0.05, 0, 0, 0], "rubber",
                                     trans=rj.Transformation([0.2, 0, 0])),
              rj.CompoundObjectChild(rj.ObjectType.BOX, [0.4, 0.02, 0.02, 0],
                                     trans=rj.Transformation([0, 0, 0.01], rot))]
  compound = world.addCompound(children, 2.0, [0.01, 0, 0], np.diag([0.01, 0.02, 0.02]))
  compound.setPosition(0, -1, 1)
  compound.setName("dumbbell")
  robot = world.addArticulatedSystem("rsc/urdf/pendulum.urdf")
  robot.setName("pendulum")
  robot.setState([0.4], [1.0])
  robot.setControlMode(rj.ControlMode.PD_PLUS_FEEDFORWARD_TORQUE)
  robot.setPdGains([10.0], [0.5])
  robot.setPdTarget([0.2], [0.1])
  with open("rsc/urdf/pendulum.urdf") as f:
    text = f.read()
  second = world.addArticulatedSystem(text.replace('value="2.0"', 'value="3.0"'))
  second.setName("heavy")
  second.setGeneralizedCoordinate([-0.3])
  return world


def test_export_round_trip_gives_the_same_model_and_state(tmp_path):
  world = _every_object_type(tmp_path)
  for _ in range(7):
    world.integrate()
  world.exportToXml(str(tmp_path), "saved.xml")
  loaded = rj.World(str(tmp_path / "saved.xml"))
  model_a, state_a = world.compile()
  model_b, state_b = loaded.compile()
  assert jax.tree.structure((model_a, state_a)) == jax.tree.structure((model_b, state_b))
  for x, y in zip(jax.tree.leaves(model_a), jax.tree.leaves(model_b)):
    np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
  for part in ("position", "quaternion", "linear_velocity", "angular_velocity"):
    np.testing.assert_array_equal(getattr(state_a.bodies, part), getattr(state_b.bodies, part))
  for a, b in zip(state_a.articulated, state_b.articulated):
    for part in ("generalized_coordinate", "generalized_velocity", "p_target", "d_target"):
      np.testing.assert_array_equal(getattr(a, part), getattr(b, part))
  assert (tmp_path / "heavy.urdf").is_file()         # the URDF string, written out
  # exportToXml(path) writes the same file.
  world.exportToXml(str(tmp_path / "again.xml"))
  assert (tmp_path / "again.xml").read_text() == (tmp_path / "saved.xml").read_text()


def test_export_refuses_what_the_format_cannot_hold(tmp_path):
  world = rj.World()
  world.addSphere(0.1, 1.0).setLinearDamping(0.5)
  with pytest.raises(ValueError, match="damping .* cannot be written"):
    world.exportToXml(str(tmp_path / "x.xml"))


@pytest.mark.parametrize("edit,message", [
    (lambda r: r.setJointDamping([0.7]), r"setJointDamping on 'pend' \(link 'rod': damping"),
    (lambda r: r.setRotorInertia([0.05]), r"setRotorInertia on 'pend'"),
    (lambda r: r.setMass(1, 3.0), r"setMass on 'pend' \(link 'rod': mass"),
    (lambda r: r.setJointLimits([[-0.2, 0.2]]), r"setJointLimits on 'pend'"),
    (lambda r: r.setActuationLimits([1.0], [-1.0]), r"setActuationLimits on 'pend'"),
])
def test_export_refuses_an_articulated_system_edited_after_loading(tmp_path, edit, message):
  """The world file refers to the URDF: an edit of the loaded dynamics would be lost on
  reload (a pendulum with edited damping swung differently after the round trip), so the
  export names the edit instead of writing the URDF's values. Unedited, it exports."""
  world = rj.World()
  pendulum = world.addArticulatedSystem("rsc/urdf/pendulum.urdf")
  pendulum.setName("pend")
  world.exportToXml(str(tmp_path / "unedited.xml"))
  edit(pendulum)
  with pytest.raises(ValueError, match=message + ".* cannot be written"):
    world.exportToXml(str(tmp_path / "edited.xml"))


def test_file_rotations_are_exact_in_a_script_without_x64(tmp_path):
  """A user's script does not enable x64: the file is still read in the world's float64
  (a compound child's quaternion once became a float32-rounded rotation, error 2.8e-8)."""
  import subprocess
  import sys
  path = _write(tmp_path, "c.xml", """\
      <raisim><objects><compound name="c" mass="1" com="0 0 0">
      <inertia xx="1" xy="0" xz="0" yy="1" yz="0" zz="1"/><children>
      <box><dim x="1" y="1" z="1"/><state pos="0 0 0" quat="0.9 0.1 0.2 0.3"/></box>
      </children><state pos="0 0 1"/></compound></objects></raisim>""")
  script = textwrap.dedent(f"""
      import numpy as np
      import raisim_jax as rj
      world = rj.World({str(path)!r})
      child = world._compound_children[id(world.getObject("c")._description)][0]
      w, x, y, z = np.array([0.9, 0.1, 0.2, 0.3]) / np.linalg.norm([0.9, 0.1, 0.2, 0.3])
      exact = np.array([[1 - 2*(y*y + z*z), 2*(x*y - w*z), 2*(x*z + w*y)],
                        [2*(x*y + w*z), 1 - 2*(x*x + z*z), 2*(y*z - w*x)],
                        [2*(x*z - w*y), 2*(y*z + w*x), 1 - 2*(x*x + y*y)]])
      print(float(np.abs(np.asarray(child.trans.rot) - exact).max()))
  """)
  env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
  result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=600)
  assert result.returncode == 0, result.stderr[-2000:]
  assert float(result.stdout.split()[-1]) < 1e-15

"""MJCF mesh assets, ellipsoids, fromto boxes and material colors (#10 item 5), against MuJoCo.

Mesh inertia follows MuJoCo's `<mesh inertia=...>` modes (legacy, the default up to MuJoCo 4.0;
convex; exact): the mass matrix of a model whose bodies are meshes agrees with MuJoCo's at
random states to 1e-8 of the matrix's largest entry: MuJoCo stores the recentred vertices in
float32, which moves its entries by a few parts in 1e9."""

import os
import warnings

import mujoco
import numpy as np
import pytest
import trimesh

import raisim_jax as rj
from raisim_jax.io import mesh_inertia
from tests.test_mjcf import Mapping, _full_mass_matrix, _random_qpos

MODEL = """<mujoco>
  <compiler meshdir="assets" angle="radian"/>
  <asset>
    <mesh name="dent" file="dent.obj" scale="1 1.5 0.8"/>
    <mesh file="ring.stl" inertia="convex"/>
    <mesh name="ring_exact" file="ring.stl" inertia="exact"/>
    <mesh name="ring_legacy" file="ring.stl"/>
    <mesh name="cloud" vertex="0 0 0  0.3 0 0  0 0.2 0  0 0 0.4  0.3 0.2 0.4  0.1 0.1 0.1"/>
    <material name="red" rgba="1 0 0 1"/>
  </asset>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <body name="base" pos="0 0 1">
      <freejoint/>
      <geom type="mesh" mesh="dent" pos="0.1 0 0" euler="0.1 0.2 0.3" material="red"/>
      <geom type="box" size="0.05" fromto="0 0 0 0.2 0.3 0.1" rgba="0 1 0 1"/>
      <body name="arm" pos="0.3 0 0">
        <joint name="hinge" axis="0 1 0"/>
        <geom type="mesh" mesh="ring" pos="0 0 -0.2" quat="0.9 0.1 0.2 0.3"/>
        <geom type="ellipsoid" size="0.1 0.2 0.05" pos="0.1 0 0" mass="0.7"/>
        <body name="hand" pos="0 0 -0.5">
          <joint name="slide" type="slide" axis="1 0 0"/>
          <geom type="mesh" mesh="ring_exact" density="300"/>
          <geom type="mesh" mesh="ring_legacy" pos="0.2 0 0" contype="0" conaffinity="0"/>
          <geom type="mesh" mesh="cloud" pos="0 0.3 0"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def _write_meshes(directory):
  """A dented (non-convex, asymmetric) icosphere and an annulus (non-convex ring)."""
  sphere = trimesh.creation.icosphere(2, 0.2)
  vertices = sphere.vertices.copy()
  dented = vertices[:, 0] > 0.08
  vertices[dented] *= [0.5, 1.0, 0.7]
  trimesh.Trimesh(vertices + [0.05, -0.02, 0.03], sphere.faces).export(
      os.path.join(directory, "dent.obj"))
  ring = trimesh.creation.annulus(0.1, 0.2, 0.1)
  ring.apply_translation([0.02, 0.03, 0.01])
  ring.export(os.path.join(directory, "ring.stl"))


@pytest.fixture()
def mesh_model(tmp_path):
  os.makedirs(tmp_path / "assets")
  _write_meshes(tmp_path / "assets")
  path = tmp_path / "meshes.xml"
  path.write_text(MODEL)
  return str(path)


def _load(path):
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    world = rj.World(path)
  robot = [o for o in world.getObjList()
           if o.getObjectType() == rj.ObjectType.ARTICULATED_SYSTEM][0]
  return world, robot, [str(w.message) for w in caught]


def test_mesh_inertia_modes_match_mujoco_mass_matrix(mesh_model):
  _, robot, _ = _load(mesh_model)
  mj_model = mujoco.MjModel.from_xml_path(mesh_model)
  data = mujoco.MjData(mj_model)
  mapping = Mapping(mj_model, robot)
  np.testing.assert_allclose(robot.getMass(), mj_model.body_mass[1:], rtol=1e-6)
  rng = np.random.default_rng(3)
  for _ in range(10):
    qpos = _random_qpos(mj_model, True, rng)
    data.qpos[:] = qpos
    mujoco.mj_forward(mj_model, data)
    gc, t = mapping.ours_from_mujoco(qpos)
    robot.setGeneralizedCoordinate(gc)
    full = np.zeros((mj_model.nv, mj_model.nv))
    _full_mass_matrix(mj_model, data, full)
    np.testing.assert_allclose(t.T @ robot.getMassMatrix() @ t, full, rtol=1e-6,
                               atol=1e-8 * np.abs(full).max())
    for b in range(1, mj_model.nbody):
      body = mujoco.mj_id2name(mj_model, mujoco.mjtObj.mjOBJ_BODY, b)
      np.testing.assert_allclose(robot.getFramePosition(robot.getFrameIdxByLinkName(body)),
                                 data.xpos[b], atol=1e-9)


def test_mesh_mass_properties_of_a_box_are_analytic():
  """All three modes give a box's volume, centre and inertia exactly (a convex solid)."""
  box = trimesh.creation.box([0.2, 0.4, 0.6])
  box.apply_translation([1.0, -2.0, 0.5])
  for mode in mesh_inertia.MODES:
    volume, com, inertia = mesh_inertia.mass_properties(box.vertices, box.faces, mode)
    np.testing.assert_allclose(volume, 0.048, rtol=1e-12)
    np.testing.assert_allclose(com, [1.0, -2.0, 0.5], atol=1e-12)
    np.testing.assert_allclose(
        inertia, 0.048 / 12 * np.diag([0.16 + 0.36, 0.04 + 0.36, 0.04 + 0.16]), atol=1e-14)


def test_mesh_geoms_are_visuals_and_warn_what_does_not_collide(mesh_model):
  _, robot, messages = _load(mesh_model)
  ellipsoids = [m for m in messages if "ellipsoids are not supported" in m]
  meshes = [m for m in messages if "not with the system's own collision bodies" in m]
  assert len(ellipsoids) == 1 and len(meshes) == 1
  # Collision bodies are named "LINK/INDEX" among the link's collision bodies (RaiSim's
  # rule); the geom with contype = conaffinity = 0 is drawn only.
  assert ellipsoids[0].endswith("arm/1 (ellipsoid)")
  assert meshes[0].endswith("base/0, arm/0, hand/0, hand/1")
  visuals = {v.name: v for v in robot.getVisOb()}
  assert len(visuals) == 7 and len(robot.getVisColOb()) == 6
  assert visuals["base/0"].fileName.endswith(os.path.join("assets", "dent.obj"))
  np.testing.assert_array_equal(visuals["base/0"].scale, [1, 1.5, 0.8])
  np.testing.assert_array_equal(visuals["base/0"].color, [1, 0, 0, 1])   # material
  np.testing.assert_array_equal(visuals["base/1"].color, [0, 1, 0, 1])   # rgba
  np.testing.assert_array_equal(visuals["arm/0"].color, [0.5, 0.5, 0.5, 1])


def test_mesh_path_without_meshdir_is_relative_to_the_file(tmp_path):
  _write_meshes(tmp_path)
  path = tmp_path / "plain.xml"
  path.write_text('<mujoco><asset><mesh file="dent.obj"/></asset><worldbody><body>'
                  '<freejoint/><geom type="mesh" mesh="dent" contype="0" conaffinity="0"/>'
                  '</body></worldbody></mujoco>')
  _, robot, _ = _load(str(path))
  np.testing.assert_allclose(robot.getMass()[0],
                             mujoco.MjModel.from_xml_path(str(path)).body_mass[1], rtol=1e-6)


@pytest.mark.parametrize("asset, geom, message", [
    ('<mesh file="missing.stl"/>', 'mesh="missing"', "mesh file 'missing.stl' not found"),
    ('<mesh file="dent.obj"/>', 'mesh="other"', "unknown mesh asset 'other'"),
    ('<mesh file="dent.obj" inertia="shell"/>', 'mesh="dent"', "inertia='shell' is not"),
    ('<mesh file="dent.obj" refpos="0 0 1"/>', 'mesh="dent"', "'refpos' is not supported"),
    ('<mesh file="broken.stl"/>', 'mesh="broken"', "mesh has no faces"),
    ('<mesh name="flat" vertex="0 0 0 1 0 0 0 1 0" face="0 1 2"/>', 'mesh="flat"',
     "mesh encloses no volume"),
])
def test_bad_mesh_assets_name_file_line_and_element(tmp_path, asset, geom, message):
  _write_meshes(tmp_path)
  (tmp_path / "broken.stl").write_text("solid nothing here\nthis is not stl\n")
  path = tmp_path / "bad.xml"
  path.write_text(f'<mujoco>\n<asset>\n{asset}\n</asset>\n<worldbody>\n<body>\n<freejoint/>\n'
                  f'<geom type="mesh" {geom}/>\n</body>\n</worldbody>\n</mujoco>\n')
  with pytest.raises(ValueError, match=message) as error:
    rj.World(str(path))
  assert str(path) in str(error.value) and "line" in str(error.value)


def test_fitting_a_primitive_to_a_mesh_is_refused(tmp_path):
  _write_meshes(tmp_path)
  path = tmp_path / "fit.xml"
  path.write_text('<mujoco><asset><mesh file="dent.obj"/></asset><worldbody><body>'
                  '<freejoint/><geom type="box" mesh="dent"/></body></worldbody></mujoco>')
  with pytest.raises(ValueError, match="fitting a box to mesh 'dent' is not supported"):
    rj.World(str(path))

"""World.addMesh: mesh objects colliding through a convex hull or CoACD's convex parts.

Oracles: the geometry's own numbers (an L-shaped prism's step height, the box formula for the
estimated inertia, the original mesh's volume for the parts); the BOX primitive for a cube
mesh; the lowest vertex of the original mesh (third-party: pybullet_data's bunny) for where a
dropped mesh comes to rest.
"""

import os
import shutil
import time

import numpy as np
import pybullet_data
import pytest
import trimesh

import raisim_jax as rj
from raisim_jax.io import convex_decomposition

# Cheap CoACD settings for the tests (the defaults take seconds per mesh).
FAST = rj.CoacdOptions(threshold=0.1, mctsIteration=40, sampleResolution=1000)


def _l_prism(path, depth=1.0):
  """An L-shaped prism: x-z profile (0,0) (2,0) (2,1) (1,1) (1,2) (0,2), y in [0, depth]: a
  tall block over x in [0, 1] (top z = 2) and a low step over x in [1, 2] (top z = 1).
  Concave, so its convex hull has a slanted face from (1, 2) to (2, 1)."""
  profile = np.array([(0, 0), (2, 0), (2, 1), (1, 1), (1, 2), (0, 2)], float)
  n = len(profile)
  vertices = np.concatenate([np.c_[profile[:, 0], np.zeros(n), profile[:, 1]],
                             np.c_[profile[:, 0], np.full(n, depth), profile[:, 1]]])
  faces = []
  for a, b, c in [(0, 1, 2), (0, 2, 3), (0, 3, 4), (0, 4, 5)]:   # star-shaped from vertex 0
    faces += [(a, b, c), (n + a, n + c, n + b)]
  for i in range(n):
    j = (i + 1) % n
    faces += [(i, n + i, j), (j, n + i, n + j)]
  mesh = trimesh.Trimesh(vertices, faces)
  trimesh.repair.fix_normals(mesh)
  assert mesh.is_watertight and np.isclose(mesh.volume, 3.0 * depth)
  mesh.export(path)
  return str(path)


@pytest.fixture
def l_obj(tmp_path):
  return _l_prism(tmp_path / "l.obj")


def _settle(world, steps):
  for _ in range(steps):
    world.integrate()


def test_estimated_inertia_is_the_bounding_box_s_uniform_box(l_obj):
  world = rj.World()
  mesh = world.addMesh(l_obj, 3.0, 2.0, "", rj.MeshCollisionMode.CONVEX_HULL)
  # Scaled by 2: bounding box 4 x 2 x 4, centred at (2, 1, 2) in the mesh frame.
  x, y, z = 4.0, 2.0, 4.0
  np.testing.assert_allclose(mesh.getInertiaMatrix_B(),
                             np.diag([y * y + z * z, x * x + z * z, x * x + y * y]) * 3.0 / 12)
  np.testing.assert_allclose(mesh.getBodyToComPosition_rs(), [2.0, 1.0, 2.0])
  assert mesh.getMass() == 3.0 and mesh.getObjectType() == rj.ObjectType.MESH
  assert mesh.getCollisionBodyCount() == 1 and mesh.getCoacdConvexParts() == []
  assert mesh.getMeshScale() == 2.0 and mesh.getCollisionMode() == rj.MeshCollisionMode.CONVEX_HULL


def test_explicit_inertia_and_com_are_kept(l_obj):
  world = rj.World()
  inertia = np.diag([0.5, 0.6, 0.7])
  mesh = world.addMesh(l_obj, 2.0, inertia, [0.8, 0.5, 0.7], 1.0, "steel",
                       rj.MeshCollisionMode.CONVEX_HULL)
  np.testing.assert_allclose(mesh.getInertiaMatrix_B(), inertia)
  np.testing.assert_allclose(mesh.getBodyToComPosition_rs(), [0.8, 0.5, 0.7])


def test_convexify_parts_cover_the_l_and_fill_its_volume(l_obj):
  world = rj.World()
  mesh = world.addMesh(l_obj, 3.0, 1.0, "", FAST)
  parts = mesh.getCoacdConvexParts()
  assert mesh.getCollisionMode() == rj.MeshCollisionMode.CONVEXIFY
  assert len(parts) == mesh.getCollisionBodyCount() >= 2
  volume = sum(trimesh.Trimesh(v, f).convex_hull.volume for v, f in parts)
  assert volume == pytest.approx(3.0, rel=0.01)      # trimesh's volume of the L: 3
  for vertices, _ in parts:                          # every part inside the L's box
    assert np.all(vertices >= -1e-3) and np.all(vertices <= [2.001, 1.001, 2.001])


@pytest.mark.parametrize("mode, rests_on_the_step", [
    (rj.MeshCollisionMode.CONVEXIFY, True), (rj.MeshCollisionMode.CONVEX_HULL, False)])
def test_a_ball_rests_on_the_l_s_step_only_when_convexified(l_obj, mode, rests_on_the_step):
  """A ball dropped over the low step (x = 1.5) rests on it (centre z = 1 + r) when the L
  collides through its convex parts; on the convex hull it meets the slanted face x + z = 3
  higher up (z = 1.5 + r sqrt 2 on first touch) and rolls down it, away from x = 1.5."""
  world = rj.World()
  world.setTimeStep(0.002)
  world.addGround()
  mesh = world.addMesh(l_obj, 3.0, 1.0, "", mode, coacdOptions=FAST)
  mesh.setPosition(mesh.getBodyToComPosition_rs())   # mesh frame = world frame
  mesh.setBodyType(rj.BodyType.STATIC)
  radius = 0.1
  ball = world.addSphere(radius, 0.5)
  ball.setPosition(1.5, 0.5, 2.3)
  highest_touch = 0.0
  for _ in range(600):
    world.integrate()
    if ball.getContacts():
      highest_touch = max(highest_touch, ball.getPosition()[2])
  x, _, z = ball.getPosition()
  if rests_on_the_step:
    assert z == pytest.approx(1.0 + radius, abs=2e-3)
    assert x == pytest.approx(1.5, abs=1e-3)
    assert np.linalg.norm(ball.getLinearVelocity()) < 1e-2
  else:
    assert highest_touch == pytest.approx(1.5 + radius * np.sqrt(2), abs=0.02)
    assert x > 1.6


def test_a_cube_mesh_lands_as_the_box_primitive(tmp_path):
  """pybullet_data's cube.obj (a unit cube) dropped tilted as a CONVEX_HULL mesh follows
  addBox(1, 1, 1) dropped the same way, and rests with its centre 0.5 above the ground."""
  cube = shutil.copy(os.path.join(pybullet_data.getDataPath(), "cube.obj"), tmp_path)
  world = rj.World()
  world.setTimeStep(0.002)
  world.addGround()
  mesh = world.addMesh(cube, 2.0, 1.0, "", rj.MeshCollisionMode.CONVEX_HULL)
  box = world.addBox(1.0, 1.0, 1.0, 2.0)
  np.testing.assert_allclose(mesh.getInertiaMatrix_B(), box.getInertiaMatrix_B())
  tilt = [np.cos(0.2), np.sin(0.2) * 0.6, np.sin(0.2) * 0.8, 0.0]
  for body, x in ((mesh, 0.0), (box, 3.0)):
    body.setPosition(x, 0.0, 1.2)
    body.setOrientation(tilt)
  for step in range(800):
    world.integrate()
    if step in (100, 200, 799):
      np.testing.assert_allclose(mesh.getPosition() - [0, 0, 0], box.getPosition() - [3, 0, 0],
                                 atol=2e-3)
      np.testing.assert_allclose(np.abs(mesh.getRotationMatrix()),
                                 np.abs(box.getRotationMatrix()), atol=2e-3)
  assert mesh.getPosition()[2] == pytest.approx(0.5, abs=2e-3)


def _cube_mesh_beside_a_box(tmp_path, time_step, material_pair=None):
  """(world, [mesh cube, box]): pybullet_data's cube.obj as a CONVEX_HULL mesh at x = 0 and
  addBox(1, 1, 1) at x = 3, 50 kg each, resting on the ground; `material_pair` (name,
  friction, restitution) is set against the default material first."""
  cube = shutil.copy(os.path.join(pybullet_data.getDataPath(), "cube.obj"), tmp_path)
  world = rj.World()
  world.setTimeStep(time_step)
  world.addGround()
  if material_pair is not None:
    name, friction, restitution = material_pair
    world.setMaterialPairProp(name, "default", friction, restitution, 0.0)
  blocks = [world.addMesh(cube, 50.0, 1.0, "", rj.MeshCollisionMode.CONVEX_HULL),
            world.addBox(1.0, 1.0, 1.0, 50.0)]
  for block, x in zip(blocks, (0.0, 3.0)):
    block.setPosition(x, 0.0, 0.5)
  return world, blocks


def _heights_alike(world, bodies, steps):
  """Heights of bodies[0] over `steps` steps, checking at every step that bodies[1] (3 m
  further along x) is where bodies[0] is to 1e-6 m."""
  heights = []
  for _ in range(steps):
    world.integrate()
    on_mesh, on_box = (b.getPosition() for b in bodies)
    np.testing.assert_allclose(on_mesh - [0, 0, 0], on_box - [3, 0, 0], atol=1e-6)
    heights.append(on_mesh[2])
  return heights


@pytest.mark.parametrize("shape", ["sphere", "capsule"])
def test_a_ball_or_capsule_rolling_over_a_cube_mesh_moves_as_over_the_box_primitive(tmp_path,
                                                                                     shape):
  """A ball (r 0.2) or a capsule (r 0.1, length 0.4, lying across its path) dropped with a
  sideways velocity onto pybullet_data's cube.obj (a CONVEX_HULL mesh resting on the ground)
  moves as the same body onto addBox(1, 1, 1): the sphere-mesh and capsule-mesh pairs are
  the hull's exact closest points, as sphere-box and box-capsule are the box's. Over its
  landing, roll and fall off the edge the two bodies agree to 1e-6 m."""
  world, _ = _cube_mesh_beside_a_box(tmp_path, 0.002)
  bodies = []
  for x in (0.0, 3.0):
    if shape == "sphere":
      body = world.addSphere(0.2, 1.0)
    else:
      body = world.addCapsule(0.1, 0.4, 1.0)
      body.setOrientation([np.cos(np.pi / 4), np.sin(np.pi / 4), 0.0, 0.0])   # axis along y
    body.setPosition(x - 0.3, 0.1, 1.0)
    body.setVelocity([2.0, 0.4, 0.0], [0.0, 0.0, 0.0])
    bodies.append(body)
  resting_height = 1.2 if shape == "sphere" else 1.1
  heights = _heights_alike(world, bodies, 600)
  assert np.isclose(max(heights[50:250]), resting_height, atol=2e-3)   # on the top face
  assert heights[-1] < 0.5                                             # then off its edge


def test_a_ball_bounces_on_a_cube_mesh_as_on_the_box_primitive(tmp_path):
  """A rubber ball (restitution 0.7 against the default material) dropped on pybullet_data's
  cube.obj (CONVEX_HULL) and on addBox(1, 1, 1), its first step of contact starting inside
  the contact margin: the same bounces to 1e-6 m, and the first rebound climbs to
  0.7^2 of the drop height above the top face (to 2%: the step is 1 ms)."""
  world, _ = _cube_mesh_beside_a_box(tmp_path, 0.001, ("rubber", 0.8, 0.7))
  balls = []
  for x in (0.0, 3.0):
    ball = world.addSphere(0.1, 1.0, "rubber")
    ball.setPosition(x + 0.1, -0.2, 1.1 + 0.5)     # 0.5 m above touching the top face
    balls.append(ball)
  heights = _heights_alike(world, balls, 1200)
  first_contact = int(np.argmin(heights[:400]))
  rebound = max(heights[first_contact:]) - 1.1
  assert rebound == pytest.approx(0.5 * 0.7 ** 2, rel=0.02)


def test_a_third_party_mesh_convexified_rests_on_its_lowest_point(tmp_path):
  """pybullet_data's bunny (453 vertices), CoACD parts, dropped on the ground: it comes to
  rest (it rocks on its round belly for ~4 s first, then sleeps), and the lowest of the
  original mesh's vertices, at the final pose, lies on the ground within the parts'
  approximation."""
  bunny = shutil.copy(os.path.join(pybullet_data.getDataPath(), "bunny.obj"), tmp_path)
  world = rj.World()
  world.setTimeStep(0.002)
  world.addGround()
  mesh = world.addMesh(bunny, 1.0, 0.5, "", FAST)
  assert mesh.getCollisionBodyCount() >= 4
  mesh.setPosition(0.0, 0.0, 1.0)
  _settle(world, 2500)
  vertices = trimesh.load(bunny, force="mesh").vertices * 0.5
  world_vertices = (mesh.getPosition()
                    + (vertices - mesh.getBodyToComPosition_rs()) @ mesh.getRotationMatrix().T)
  assert world_vertices[:, 2].min() == pytest.approx(0.0, abs=5e-3)
  assert np.linalg.norm(mesh.getLinearVelocity()) < 1e-3
  assert np.all(np.isfinite(mesh.getPosition()))


def test_two_meshes_stack_and_clones_share_their_shapes(l_obj, tmp_path):
  """Mesh on mesh: a cube mesh on a cube mesh rests 1 m higher; a clone collides as its
  source (same parts, mass, inertia), takes its own material, not the source's pose."""
  cube = shutil.copy(os.path.join(pybullet_data.getDataPath(), "cube.obj"), tmp_path)
  world = rj.World()
  world.setTimeStep(0.002)
  world.addGround()
  lower = world.addMesh(cube, 1.0, 1.0, "", rj.MeshCollisionMode.CONVEX_HULL)
  lower.setPosition(0, 0, 0.5)
  upper = world.addMesh(lower, "rubber")
  assert upper.getMass() == 1.0 and upper.getCollisionBodyCount() == 1
  np.testing.assert_allclose(upper.getPosition(), 0.0)
  upper.setPosition(0, 0, 1.6)
  _settle(world, 500)
  assert upper.getPosition()[2] == pytest.approx(1.5, abs=3e-3)
  assert upper._description.shapes[0].material == "rubber"
  assert lower._description.shapes[0].material == "default"


def test_meshes_added_and_removed_after_stepping(l_obj, tmp_path):
  """A sequence of edits: step, add a mesh, step, remove it, step, add it again (a clone of
  a removed mesh too): every step finite, the survivor undisturbed, the re-added mesh lands."""
  cube = shutil.copy(os.path.join(pybullet_data.getDataPath(), "cube.obj"), tmp_path)
  world = rj.World()
  world.setTimeStep(0.002)
  world.addGround()
  ball = world.addSphere(0.1, 1.0)
  ball.setPosition(3, 0, 0.1)
  _settle(world, 5)
  first = world.addMesh(cube, 1.0, 0.5, "", rj.MeshCollisionMode.CONVEX_HULL)
  first.setPosition(0, 0, 0.5)
  _settle(world, 50)
  assert first.getPosition()[2] < 0.5
  world.removeObject(first)
  _settle(world, 5)
  second = world.addMesh(first)          # a clone of a removed mesh
  third = world.addMesh(l_obj, 1.0, 0.25, "", FAST)
  second.setPosition(0, 0, 0.3)
  third.setPosition(2, 0, 0.6)
  _settle(world, 400)
  assert second.getPosition()[2] == pytest.approx(0.25, abs=2e-3)
  assert third.getPosition()[2] == pytest.approx(0.25, abs=3e-3)   # AABB centre, scaled 1/4
  assert ball.getPosition()[2] == pytest.approx(0.1, abs=1e-3)
  assert world.getObjList()[-1] is third


def test_the_decomposition_is_cached_beside_the_mesh_and_reused_exactly(l_obj, monkeypatch):
  import coacd

  first = convex_decomposition.decompose(l_obj, 1.0, FAST)
  cache = convex_decomposition.cache_path(l_obj, 1.0, FAST)
  assert os.path.basename(cache).startswith("raisim_coacd_l_scale_1_threshold_0_1_maxhull_-1")
  assert os.path.basename(cache).endswith("_realmetric_0.obj")
  assert os.path.dirname(cache) == os.path.dirname(l_obj)

  def no_coacd(*args, **kwargs):
    raise AssertionError("CoACD ran although the cache is fresh")

  monkeypatch.setattr(coacd, "run_coacd", no_coacd)
  second = convex_decomposition.decompose(l_obj, 1.0, FAST)
  assert len(second) == len(first)
  for (v1, f1), (v2, f2) in zip(first, second):
    np.testing.assert_array_equal(v1, v2)
    np.testing.assert_array_equal(f1, f2)
  # Other settings or scale: another file. A source newer than its cache: recomputed.
  assert convex_decomposition.cache_path(l_obj, 2.0, FAST) != cache
  assert convex_decomposition.cache_path(l_obj, 1.0, rj.CoacdOptions()) != cache
  later = time.time() + 10
  os.utime(l_obj, (later, later))
  with pytest.raises(ValueError, match="CoACD ran although"):   # it was called
    convex_decomposition.decompose(l_obj, 1.0, FAST)


def test_bad_arguments_name_what_is_wrong(l_obj, tmp_path):
  world = rj.World()
  with pytest.raises(ValueError, match="ORIGINAL_MESH.*not supported"):
    world.addMesh(l_obj, 1.0, 1.0, "", rj.MeshCollisionMode.ORIGINAL_MESH)
  with pytest.raises(ValueError, match="mesh file '.*missing.obj' not found"):
    world.addMesh(str(tmp_path / "missing.obj"), 1.0)
  with pytest.raises(ValueError, match="'mass'"):
    world.addMesh(l_obj, -1.0)
  with pytest.raises(ValueError, match="'scale'"):
    world.addMesh(l_obj, 1.0, 0.0)
  with pytest.raises(ValueError, match="'inertia'"):
    world.addMesh(l_obj, 1.0, -np.eye(3), np.zeros(3))
  with pytest.raises(TypeError, match="'COM'"):
    world.addMesh(l_obj, 1.0, inertia=np.eye(3))
  with pytest.raises(TypeError, match="unknown argument"):
    world.addMesh(l_obj, 1.0, colisionMode=rj.MeshCollisionMode.CONVEX_HULL)
  with pytest.raises(ValueError, match="CoacdOptions.threshold"):
    world.addMesh(l_obj, 1.0, 1.0, "", rj.CoacdOptions(threshold=0.0))
  flat = tmp_path / "flat.obj"
  trimesh.Trimesh([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]], [[0, 1, 2], [1, 3, 2]]).export(flat)
  with pytest.raises(ValueError, match="flat.obj.*no volume|flat.obj.*coplanar"):
    world.addMesh(str(flat), 1.0, 1.0, "", rj.MeshCollisionMode.CONVEX_HULL)
  garbage = tmp_path / "garbage.stl"
  garbage.write_bytes(b"\x00\x01 not a mesh")
  with pytest.raises(ValueError, match="garbage.stl"):
    world.addMesh(str(garbage), 1.0)
  assert world.getObjList() == []     # nothing half-added


def test_a_mesh_world_cannot_be_exported_to_a_world_file(l_obj, tmp_path):
  world = rj.World()
  world.addMesh(l_obj, 1.0, 1.0, "", rj.MeshCollisionMode.CONVEX_HULL)
  with pytest.raises(ValueError, match="mesh object"):
    world.exportToXml(str(tmp_path / "w.xml"))


def test_a_mesh_world_steps_batched_in_the_pure_api_as_in_the_oo_world(l_obj):
  """world.compile() of a world with a convexified mesh: jit(vmap(step)) over 3 worlds
  dropped from different heights; the world dropped from the OO world's height follows the
  OO integrate() (same step, same float64), and each lands on the L's bottom (COM z = 0.25
  at scale 1/4)."""
  import jax
  import jax.numpy as jnp

  world = rj.World()
  world.setTimeStep(0.002)
  world.addGround()
  mesh = world.addMesh(l_obj, 1.0, 0.25, "", FAST)
  mesh.setPosition(0, 0, 0.4)
  model, state = world.compile()
  states = rj.batching.replicate(state, 3)
  heights = jnp.array([0.4, 0.6, 0.8], states.bodies.position.dtype)
  states = rj.tree_replace(states, {
      "bodies.position": states.bodies.position.at[:, 1, 2].set(heights)})
  step = jax.jit(jax.vmap(rj.step, in_axes=(None, 0)))
  for _ in range(300):
    states = step(model, states)
  _settle(world, 300)
  positions = np.asarray(states.bodies.position[:, 1])
  np.testing.assert_allclose(positions[0], mesh.getPosition(), atol=1e-6)
  np.testing.assert_allclose(positions[:, 2], 0.25, atol=3e-3)
  assert np.all(np.isfinite(np.asarray(states.bodies.quaternion)))


def test_export_mesh_assets_writes_each_mesh_scaled_in_object_order(l_obj, tmp_path):
  """exportMeshAssetsToObj: one OBJ per Mesh object in object order (other objects skipped);
  read back by trimesh, each holds the source file's triangles times the object's scale."""
  cube = shutil.copy(os.path.join(pybullet_data.getDataPath(), "cube.obj"), tmp_path)
  world = rj.World()
  world.addSphere(0.1, 1.0)
  world.addMesh(l_obj, 1.0, 0.5, "", rj.MeshCollisionMode.CONVEX_HULL)
  world.addBox(1, 1, 1, 1.0)
  world.addMesh(cube, 1.0, 2.0, "", rj.MeshCollisionMode.CONVEX_HULL)
  paths = world.exportMeshAssetsToObj(str(tmp_path / "assets"), "part")
  assert [os.path.basename(p) for p in paths] == ["part_0.obj", "part_1.obj"]
  for path, (source, scale) in zip(paths, ((l_obj, 0.5), (cube, 2.0))):
    original = trimesh.load(source, force="mesh", process=False)
    written = trimesh.load(path, force="mesh", process=False)
    np.testing.assert_allclose(written.vertices, original.vertices * scale, rtol=1e-12)
    np.testing.assert_array_equal(written.faces, original.faces)
  with pytest.raises(ValueError, match="'prefix'"):
    world.exportMeshAssetsToObj(str(tmp_path), "")

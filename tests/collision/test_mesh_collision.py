"""Collision meshes as convex hulls, on the ground and against every other shape.

Oracles: scipy's Delaunay containment for the hulls; the BOX primitive (whose ground pair is
tested against brute force in test_narrowphase.py) for a box-shaped mesh, contact by contact
and over whole drops with their gradients; brute force over a random hull's vertices for the
contact patch; MuJoCo C, which also collides a mesh geom as its convex hull, for where a
mesh comes to rest.
"""

import itertools
import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import trimesh
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial import ConvexHull as QHull, Delaunay

import raisim_jax as rj
from raisim_jax.collision import narrowphase
from raisim_jax.collision.narrowphase import geometry
from raisim_jax.collision.shapes import Hull, ShapeType
from raisim_jax.io import collision_mesh

MARGIN = 0.01


def _rotation(rng):
  q = rng.normal(size=4)
  w, x, y, z = q / np.linalg.norm(q)
  return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                   [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                   [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


# A 64-vertex hull beside the one under test pads its table rows, as a model with several
# meshes does (padding rows repeat a vertex with weight 0, planes that always hold).
_WIDE = collision_mesh.convex_hull(trimesh.creation.icosphere(subdivisions=3).vertices)


def _hull_rows(hull):
  """The shapes.Hull of one hull: its rows of hull tables padded to 64 vertices."""
  vertices, planes, triangles = collision_mesh.hull_tables([hull, _WIDE])
  return Hull(jnp.asarray(vertices[0]), jnp.asarray(planes[0]), jnp.asarray(triangles[0]))


# ---- the hull ---------------------------------------------------------------------------------

def test_hull_of_a_cube_cloud_is_its_corners_and_faces():
  rng = np.random.default_rng(0)
  corners = np.array(list(itertools.product((-0.1, 0.1), (-0.2, 0.2), (-0.3, 0.3))))
  hull = collision_mesh.convex_hull(np.concatenate([corners, rng.uniform(-0.09, 0.09, (50, 3))]))
  assert sorted(map(tuple, hull.vertices)) == sorted(map(tuple, corners))
  assert len(hull.planes) == 6    # coplanar triangles merged
  np.testing.assert_allclose(np.linalg.norm(hull.planes[:, :3], axis=1), 1.0)
  assert np.all(corners @ hull.planes[:, :3].T + hull.planes[:, 3] <= 1e-12)


def test_a_dense_hull_is_reduced_keeping_its_extents_and_containing_nothing_outside():
  """2,562 vertices of a sphere of radius 0.1 -> 64: the axis extremes are kept exactly; the
  reduced hull lies inside the full one (Delaunay containment) and within 1 cm of it."""
  sphere = trimesh.creation.icosphere(subdivisions=4, radius=0.1)
  points = np.asarray(sphere.vertices)
  hull = collision_mesh.convex_hull(points)
  assert len(hull.vertices) == collision_mesh.MAX_HULL_VERTICES
  np.testing.assert_allclose(hull.vertices.min(axis=0), points.min(axis=0))
  np.testing.assert_allclose(hull.vertices.max(axis=0), points.max(axis=0))
  assert np.all(Delaunay(points).find_simplex(hull.vertices * (1 - 1e-9)) >= 0)
  outside = points @ hull.planes[:, :3].T + hull.planes[:, 3]
  assert 0 < outside.max() < 0.01
  # Each plane is a face of the reduced hull: every vertex on or inside it, some on it.
  values = hull.vertices @ hull.planes[:, :3].T + hull.planes[:, 3]
  assert values.max() < 1e-12 and np.all(np.abs(values).min(axis=0) < 1e-12)


@pytest.mark.parametrize("points, message", [
    (np.zeros((3, 3)), "at least 4 finite vertices, got 3"),
    (np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0.0]]), "spans no volume"),
    (np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, np.nan]]), "non-finite"),
])
def test_degenerate_meshes_are_refused(points, message):
  with pytest.raises(ValueError, match=message):
    collision_mesh.convex_hull(points)


def test_hull_tables_pad_with_a_repeated_vertex_and_planes_that_always_hold():
  box = collision_mesh.convex_hull(np.array(list(itertools.product((-1, 1), repeat=3)), float))
  tetra = collision_mesh.convex_hull(np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]]))
  vertices, planes, triangles = collision_mesh.hull_tables([box, tetra])
  assert vertices.shape == (2, 8, 4) and planes.shape == (2, 6, 4)
  np.testing.assert_array_equal(vertices[1, :, 3], [1, 1, 1, 1, 0, 0, 0, 0])
  np.testing.assert_array_equal(vertices[1, 4:, :3], np.tile(tetra.vertices[0], (4, 1)))
  np.testing.assert_array_equal(planes[1, 4:], np.tile([0, 0, 0, -1.0], (2, 1)))
  # The box's 12 triangles, the tetrahedron's 4 and 8 point triangles at its vertex 0.
  assert triangles.shape == (2, 12, 3) and triangles.dtype == np.int32
  np.testing.assert_array_equal(triangles[1, 4:], 0)
  assert sorted(map(sorted, triangles[1, :4].tolist())) == [[0, 1, 2], [0, 1, 3], [0, 2, 3],
                                                           [1, 2, 3]]


# ---- the pair ---------------------------------------------------------------------------------

def _collide(hull_rows, R, p, height=0.0, margin=MARGIN):
  ground = jnp.array([height, 0.0, 0.0, 0.0])
  return jax.tree.map(np.asarray, narrowphase.collide(
      ShapeType.MESH, ShapeType.HALFSPACE, hull_rows, jnp.asarray(R), jnp.asarray(p), ground,
      jnp.eye(3), jnp.zeros(3), margin=margin))


def _as_set(cp):
  return sorted((tuple(np.round(x, 9)), round(float(d), 9))
                for x, d, v in zip(cp.position, cp.depth, cp.valid) if v)


def test_a_box_mesh_on_the_ground_gives_the_box_primitives_contacts():
  """At 300 random poses near the ground (the box's 4 deepest corners are its whole contact
  where at most 4 corners are within the margin), the mesh of a box reports the contacts of
  the BOX primitive: the same points, depths and normal (+z), either shape order."""
  size = np.array([0.3, 0.2, 0.1])
  corners = np.array(list(itertools.product(*[(-s / 2, s / 2) for s in size])))
  rows = _hull_rows(collision_mesh.convex_hull(corners))
  rng = np.random.default_rng(4)
  compared = 0
  for _ in range(300):
    R = _rotation(rng) if rng.uniform() < 0.7 else np.eye(3)
    p = np.array([*rng.normal(size=2), rng.uniform(-0.05, 0.2)])
    lowest = np.sort((corners @ R.T + p)[:, 2])
    if np.sum(lowest <= MARGIN) > 4:
      continue
    mesh = _collide(rows, R, p)
    box = jax.tree.map(np.asarray, narrowphase.collide(
        ShapeType.BOX, ShapeType.HALFSPACE, jnp.array([*size, 0.0]), jnp.asarray(R),
        jnp.asarray(p), jnp.zeros(4), jnp.eye(3), jnp.zeros(3), margin=MARGIN))
    assert _as_set(mesh) == _as_set(box)
    assert np.all(mesh.normal[mesh.valid] == [0, 0, 1])
    flipped = jax.tree.map(np.asarray, narrowphase.collide(
        ShapeType.HALFSPACE, ShapeType.MESH, jnp.zeros(4), jnp.eye(3), jnp.zeros(3), rows,
        jnp.asarray(R), jnp.asarray(p), margin=MARGIN))
    np.testing.assert_array_equal(flipped.normal[flipped.valid], -mesh.normal[mesh.valid])
    compared += 1
  assert compared > 250


def test_contacts_of_a_random_hull_span_its_patch():
  """Brute force over the vertices of random hulls (20 points) at random poses: every
  reported point is a distinct vertex within the margin, at its depth; the first is the
  deepest; a pose with any vertex within the margin reports at least one, with at most four
  all of them; and the reported footprint (the area of the convex hull of the points'
  ground projections) is, against the largest footprint of any 4 of the vertices within the
  margin, the same at the median and never under 45% (measured: 50%; the deepest vertex is
  always one of the four, which costs area where it lies inside the patch)."""
  rng = np.random.default_rng(5)
  ratios = []
  for _ in range(200):
    hull = collision_mesh.convex_hull(rng.normal(size=(20, 3)) * [0.2, 0.15, 0.1])
    rows = _hull_rows(hull)
    R = _rotation(rng)
    world = hull.vertices @ R.T
    # Lower it so that 1-8 vertices are within the margin.
    within = rng.integers(1, 9)
    z = np.sort(world[:, 2])
    height = -z[min(within, len(z)) - 1] + MARGIN * rng.uniform(0.0, 0.9) - 0.002
    p = np.array([0.3, -0.1, height])
    world = world + p
    depth = -world[:, 2]
    valid = depth >= -MARGIN
    cp = _collide(rows, R, p)
    assert cp.valid.any() == valid.any()
    reported = cp.position[cp.valid] - 0.5 * cp.depth[cp.valid, None] * [0, 0, 1]
    index = [int(np.argmin(np.linalg.norm(world - x, axis=1))) for x in reported]
    np.testing.assert_allclose(world[index], reported, atol=1e-12)
    assert len(set(index)) == len(index) and np.all(valid[index])
    assert len(index) == min(4, valid.sum())
    np.testing.assert_allclose(cp.depth[cp.valid], depth[index], atol=1e-12)
    assert cp.valid[0] and index[0] == int(np.argmax(depth))
    if valid.sum() >= 3:
      footprint = world[valid, :2]
      best = max(_area(footprint[list(c)]) for c in itertools.combinations(range(len(footprint)), 4)) \
          if len(footprint) > 4 else _area(footprint)
      if best > 1e-6:
        ratios.append(_area(world[index, :2]) / best)
  assert len(ratios) > 100
  assert np.median(ratios) > 0.99 and min(ratios) >= 0.45, (np.median(ratios), min(ratios))


def _area(points):
  """Area of the convex hull of 2-D points (0 for fewer than 3 or collinear ones)."""
  try:
    return QHull(points).volume if len(points) >= 3 else 0.0
  except Exception:  # noqa: BLE001 (Qhull refuses flat input)
    return 0.0


def test_a_flat_disc_foot_gets_four_points_around_its_rim():
  """A disc of 24 coplanar rim vertices resting on the ground: four points, 90 degrees
  apart, not the four lowest-index (or otherwise deepest) vertices bunched on one side."""
  angles = np.linspace(0, 2 * np.pi, 24, endpoint=False)
  rim = np.stack([0.05 * np.cos(angles), 0.05 * np.sin(angles), np.zeros(24)], axis=1)
  rows = _hull_rows(collision_mesh.convex_hull(np.concatenate([rim, [[0, 0, 0.04]]])))
  cp = _collide(rows, np.eye(3), np.array([0.0, 0.0, -0.001]))
  assert cp.valid.all()
  angle = np.sort(np.degrees(np.arctan2(cp.position[:, 1], cp.position[:, 0])) % 360)
  np.testing.assert_allclose(np.diff(angle), 90.0, atol=1e-9)
  np.testing.assert_allclose(cp.depth, 0.001, atol=1e-12)


def test_the_pair_is_finite_and_differentiable_at_an_exact_resting_face():
  """A box mesh resting exactly on a face (four tied deepest corners, depth 0: at the margin
  boundary's far side): finite contacts; d(depth)/d(height of the box) = -1 at every point."""
  corners = np.array(list(itertools.product((-0.1, 0.1), repeat=3)))
  rows = _hull_rows(collision_mesh.convex_hull(corners))

  def depths(z):
    return narrowphase.collide(ShapeType.MESH, ShapeType.HALFSPACE, rows, jnp.eye(3),
                               jnp.array([0.0, 0.0, z]), jnp.zeros(4), jnp.eye(3),
                               jnp.zeros(3), margin=MARGIN).depth
  np.testing.assert_array_equal(np.asarray(depths(0.1)), 0.0)
  np.testing.assert_array_equal(np.asarray(jax.jacobian(depths)(0.1)), -1.0)


# ---- whole simulations -----------------------------------------------------------------------

BLOCK = """<?xml version="1.0"?>
<robot name="block">
  <link name="block">
    <inertial><mass value="1.5"/>
      <inertia ixx="0.0063" ixy="0" ixz="0" iyy="0.0125" iyz="0" izz="0.0163"/></inertial>
    <collision><geometry>GEOMETRY</geometry></collision>
  </link>
</robot>"""


def _block_worlds(tmp_path):
  """Two worlds with the block as a box primitive and as a box mesh (an STL file)."""
  trimesh.creation.box([0.3, 0.2, 0.1]).export(tmp_path / "block.stl")
  worlds = []
  for geometry in ('<box size="0.3 0.2 0.1"/>', f'<mesh filename="{tmp_path / "block.stl"}"/>'):
    world = rj.World()
    world.setTimeStep(0.002)
    world.addGround()
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      robot = world.addArticulatedSystem(BLOCK.replace("GEOMETRY", geometry))
    robot.setGeneralizedCoordinate([0.0, 0.0, 0.25, 0.9, 0.3, 0.25, 0.1])
    robot.setGeneralizedVelocity([0.4, 0.0, 0.0, 1.0, -2.0, 3.0])
    worlds.append((world, robot))
  return worlds


def test_a_tumbling_box_mesh_moves_as_the_box_primitive(tmp_path):
  """Thrown, spinning, onto the ground for 1.2 s (corner, edge and face landings, sliding,
  coming to rest): the mesh block follows the box block to 1e-6, measured 5e-8. They are
  not equal to rounding: the two report a face's corners in another order, and the
  per-contact solver's sweeps stop at its threshold."""
  (box_world, box), (mesh_world, mesh) = _block_worlds(tmp_path)
  contacts, largest = 0, 0.0
  for _ in range(600):
    box_world.integrate()
    mesh_world.integrate()
    contacts += len(box.getContacts())
    difference = mesh.getGeneralizedCoordinate() - box.getGeneralizedCoordinate()
    largest = max(largest, np.abs(difference).max())
  print(f"largest difference {largest:.2g}")
  assert largest < 1e-6
  assert contacts > 1000
  assert mesh.getGeneralizedCoordinate()[2] == pytest.approx(0.05, abs=2e-3)
  assert len(mesh.getContacts()) == 4


def test_gradients_through_a_mesh_landing_are_the_box_primitives(tmp_path):
  """d(final pose)/d(initial velocity) over 80 steps of a landing (float64): equal for the
  mesh and the box primitive, and finite."""
  grads = []
  for world, _ in _block_worlds(tmp_path):
    model, state = world.compile()

    def final(u0, model=model, state=state):
      system = state.articulated[0].replace(generalized_velocity=u0)
      start = state.replace(articulated=(system,) + tuple(state.articulated[1:]))
      return rj.rollout(model, start, 80)[0].articulated[0].generalized_coordinate[:3]
    u0 = state.articulated[0].generalized_velocity
    grads.append(np.asarray(jax.jit(jax.jacobian(final))(u0)))
  assert np.all(np.isfinite(grads[1])) and np.abs(grads[1]).max() > 0.01
  np.testing.assert_allclose(grads[1], grads[0], atol=1e-7)


def test_batched_mesh_contacts_equal_one_world_each(tmp_path):
  (_, _), (mesh_world, _) = _block_worlds(tmp_path)
  model, state = mesh_world.compile()
  heights = jnp.array([0.3, 0.06, 0.049, 0.2])

  def final(z):
    system = state.articulated[0]
    q = system.generalized_coordinate.at[2].set(z)
    start = state.replace(articulated=(system.replace(generalized_coordinate=q),))
    return rj.rollout(model, start, 30)[0].articulated[0].generalized_coordinate
  batched = np.asarray(jax.jit(jax.vmap(final))(heights))
  single = np.stack([np.asarray(jax.jit(final)(z)) for z in heights])
  np.testing.assert_allclose(batched, single, atol=1e-12)


WEDGE_MJCF = """<mujoco>
  <option timestep="0.001"/>
  <asset><mesh name="wedge" vertex="VERTICES"/></asset>
  <worldbody>
    <geom type="plane" size="5 5 0.1"/>
    <body pos="0.1 -0.2 0.3" euler="0.05 -0.04 0.3">
      <freejoint/>
      <geom type="mesh" mesh="wedge" pos="0.02 0.01 -0.03" euler="0 0 0.2" density="800"/>
    </body>
  </worldbody>
</mujoco>"""


def test_a_mesh_comes_to_rest_where_mujoco_puts_it(tmp_path):
  """A convex wedge (a MuJoCo mesh geom, placed off the body frame; MuJoCo collides it as
  its hull too) dropped on the plane: after 1.5 s the body's position and up axis agree with
  MuJoCo C's to MuJoCo's soft-contact penetration (2 mm) and 0.01 rad."""
  import mujoco
  wedge = np.array([[-0.1, -0.06, 0], [0.1, -0.06, 0], [-0.1, 0.06, 0], [0.1, 0.06, 0],
                    [-0.1, -0.06, 0.05], [0.1, -0.06, 0.05], [-0.1, 0.0, 0.09],
                    [0.1, 0.0, 0.09]])
  text = WEDGE_MJCF.replace("VERTICES", " ".join(map(str, wedge.reshape(-1))))
  path = tmp_path / "wedge.xml"
  path.write_text(text)
  mj_model = mujoco.MjModel.from_xml_path(str(path))
  mj_data = mujoco.MjData(mj_model)
  mujoco.mj_step(mj_model, mj_data, 1500)
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    world = rj.World(str(path))
  robot = [o for o in world.getObjList()
           if o.getObjectType() == rj.ObjectType.ARTICULATED_SYSTEM][-1]
  for _ in range(1500):
    world.integrate()
  q = robot.getGeneralizedCoordinate()
  np.testing.assert_allclose(q[:3], mj_data.qpos[:3], atol=2e-3)

  def up(quaternion):
    w, x, y, z = quaternion / np.linalg.norm(quaternion)
    return np.array([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)])
  assert np.arccos(np.clip(up(q[3:7]) @ up(mj_data.qpos[3:7]), -1, 1)) < 0.01
  assert np.abs(robot.getGeneralizedVelocity()).max() < 1e-3


def test_a_ray_hits_the_top_of_a_mesh_collision_body(tmp_path):
  (_, _), (world, robot) = _block_worlds(tmp_path)
  robot.setGeneralizedCoordinate([0.2, 0.1, 0.5, 1.0, 0.0, 0.0, 0.0])
  hits = world.rayTest([0.25, 0.12, 2.0], [0, 0, -1], 5.0)
  assert hits[0].getObject() is robot
  np.testing.assert_allclose(hits[0].getPosition(), [0.25, 0.12, 0.55], atol=1e-12)
  np.testing.assert_allclose(hits[0].getNormal(), [0, 0, 1], atol=1e-12)


# ---- pairs with the other shapes -----------------------------------------------------------

def _hull_surface_value(hull, R, p, x):
  """max over the hull's planes of n . x + c at the world point x: 0 on its surface."""
  local = R.T @ (x - p)
  return np.max(hull.planes[:, :3] @ local + hull.planes[:, 3])


@pytest.mark.parametrize("other", [ShapeType.SPHERE, ShapeType.BOX, ShapeType.CYLINDER,
                                   ShapeType.CONE, ShapeType.CAPSULE, ShapeType.MESH],
                         ids=lambda t: t.name.lower())
def test_mesh_pairs_match_the_minimum_overlap_oracle(other):
  """A random hull (B, 16 random points) against each shape (A; a second random hull for
  mesh-mesh) at 30 random poses near touching, float64: the deepest depth is the brute-force
  minimum support overlap (tests/collision/oracle.py, the reference of the box/cylinder/cone
  pairs) to 1e-6, the support overlap along the reported normal equals it, every reported
  point has its two implied surface points on the two surfaces (1e-6; a capsule's secondary
  end points: on the capsule), and no point is deeper than the deepest. Separated poses report
  nothing."""
  from tests.collision import oracle as orc
  from scipy.spatial.transform import Rotation
  rng = np.random.default_rng(int(other) + 20)
  collide = jax.jit(lambda *args: narrowphase.collide(other, ShapeType.MESH, *args,
                                                      margin=0.0))
  penetrating = 0
  for _ in range(30):
    hull_b = collision_mesh.convex_hull(rng.normal(size=(16, 3)) * [0.5, 0.4, 0.3])
    if other == ShapeType.MESH:
      hull_a = collision_mesh.convex_hull(rng.normal(size=(16, 3)) * [0.3, 0.4, 0.5])
      size_a, oracle_a = _hull_rows(hull_a), hull_a.vertices
    else:
      size_a = orc.random_size(int(other), rng)
      oracle_a = size_a
    Ra, Rb = (Rotation.random(random_state=rng).as_matrix() for _ in range(2))
    pb = rng.uniform(-1, 1, 3)
    u = rng.normal(size=3)
    u /= np.linalg.norm(u)
    reach_a = orc.support_value(int(other), oracle_a, Ra, np.zeros(3), -u)[0]
    reach_b = orc.support_value(orc.MESH, hull_b.vertices, Rb, pb, u)[0] - pb @ u
    pa = pb + u * (reach_b + reach_a) * rng.uniform(0.6, 1.1)
    out = jax.tree.map(np.asarray, collide(jnp.asarray(size_a) if other != ShapeType.MESH
                                           else size_a, Ra, pa, _hull_rows(hull_b), Rb, pb))
    ref = orc.penetration(int(other), oracle_a, Ra, pa, orc.MESH, hull_b.vertices, Rb, pb)[0]
    assert np.all(np.isfinite(out.position)) and np.all(np.isfinite(out.depth))
    if ref < -1e-6:
      assert not out.valid.any()
      continue
    if ref < 1e-6:
      continue
    penetrating += 1
    k = np.argmax(np.where(out.valid, out.depth, -np.inf))
    depth, normal = out.depth[k], out.normal[k]
    assert abs(depth - ref) <= 1e-6, (depth, ref)
    f = (orc.support_value(orc.MESH, hull_b.vertices, Rb, pb, normal[None])[0]
         + orc.support_value(int(other), oracle_a, Ra, pa, -normal[None])[0])
    assert abs(f - depth) <= 1e-6
    for j in np.flatnonzero(out.valid):
      d, n = out.depth[j], out.normal[j]
      assert d <= depth + 1e-9 and d >= -1e-9
      x_a, x_b = out.position[j] - 0.5 * d * n, out.position[j] + 0.5 * d * n
      if other == ShapeType.CAPSULE and j != k:
        # A capsule's secondary end points are on the capsule; their depth is exact only
        # against a face larger than the end's offset (the capsule pairs' documented gap).
        assert abs(orc.sdf(int(other), size_a, Ra, pa, x_a)) <= 1e-6, j
        continue
      assert abs(_hull_surface_value(hull_b, Rb, pb, x_b)) <= 1e-6, j
      on_a = (_hull_surface_value(hull_a, Ra, pa, x_a) if other == ShapeType.MESH
              else orc.sdf(int(other), size_a, Ra, pa, x_a))
      assert abs(on_a) <= 1e-6, j
  assert penetrating >= 10


# ---- a sphere against a hull: exact closest points -----------------------------------------

_sphere_mesh = jax.jit(lambda radius, centre, rows, R, p, margin: narrowphase.collide(
    ShapeType.SPHERE, ShapeType.MESH, jnp.stack([radius, 0.0, 0.0, 0.0]), jnp.eye(3), centre,
    rows, R, p, margin=margin))


def _trimesh_surface(hull, R, p, points):
  """trimesh's own answer for the hull's vertices (its own convex hull and triangles, its
  point-triangle closest points, the nearest over every triangle; inside where the point is
  behind every face): (closest surface points, signed distances, positive outside)."""
  solid = trimesh.convex.convex_hull(hull.vertices @ R.T + p)
  triangles = solid.triangles                                  # (T, 3, 3)
  closest = np.stack([trimesh.triangles.closest_point(
      triangles, np.broadcast_to(x, (len(triangles), 3))) for x in points])   # (N, T, 3)
  distance = np.linalg.norm(closest - points[:, None], axis=-1)
  nearest = np.argmin(distance, axis=1)
  offsets = np.einsum("tj,ntj->nt", solid.face_normals, points[:, None] - triangles[:, 0])
  inside = np.all(offsets < 0, axis=1)
  distance = distance[np.arange(len(points)), nearest]
  return closest[np.arange(len(points)), nearest], np.where(inside, -distance, distance)


@pytest.mark.parametrize("cloud", ["random16", "ellipsoid64", "cube"])
def test_a_sphere_against_a_hull_is_trimesh_s_closest_point(cloud):
  """Sphere centres inside, near and outside a hull (random 16-point hull; a 64-vertex
  ellipsoid; a cube, whose faces are pairs of coplanar triangles), float64, at a random pose:
  the contact's surface point is trimesh's closest point on its own convex hull of the same
  vertices, the depth is the radius minus trimesh's signed distance, the normal points from
  the surface point to the centre (outside) or is the face's outward normal (inside), to
  1e-9; with margin 0.05, contacts exist exactly where the depth exceeds -0.05."""
  rng = np.random.default_rng(["random16", "ellipsoid64", "cube"].index(cloud))
  if cloud == "random16":
    points = rng.normal(size=(16, 3)) * [0.5, 0.4, 0.3]
  elif cloud == "ellipsoid64":
    points = rng.normal(size=(64, 3))
    points = points / np.linalg.norm(points, axis=1, keepdims=True) * [0.5, 0.3, 0.2]
  else:
    points = np.array(list(itertools.product((-0.3, 0.3), repeat=3)))
  hull = collision_mesh.convex_hull(points)
  rows = _hull_rows(hull)
  R, p = _rotation(rng), rng.uniform(-1, 1, 3)
  centres = p + rng.uniform(-0.8, 0.8, (200, 3))
  closest, signed = _trimesh_surface(hull, R, p, centres)
  radius, margin = 0.1, 0.05
  inside_count = 0
  for centre, q_ref, sd_ref in zip(centres, closest, signed):
    cp = jax.tree.map(np.asarray, _sphere_mesh(radius, centre, rows, R, p, margin))
    depth = radius - sd_ref
    assert bool(cp.valid[0]) == (depth >= -margin)
    if not cp.valid[0]:
      continue
    np.testing.assert_allclose(cp.depth[0], depth, atol=1e-9)
    q = cp.position[0] + 0.5 * cp.depth[0] * cp.normal[0]      # contact_points.from_surface
    np.testing.assert_allclose(q, q_ref, atol=1e-9)
    towards_centre = (centre - q_ref) / np.linalg.norm(centre - q_ref)
    np.testing.assert_allclose(cp.normal[0], towards_centre * np.sign(sd_ref), atol=1e-7)
    inside_count += sd_ref < 0
  assert inside_count >= 5


@pytest.mark.parametrize("where", ["vertex", "edge", "face", "diagonal", "inside_margin",
                                   "at_margin", "centre"])
def test_a_sphere_touching_a_hull_at_degenerate_points_is_finite_with_its_gradient(where):
  """A cube hull (coplanar triangle pairs) and a sphere whose centre lies exactly on
  a vertex, an edge, a face, above the diagonal shared by a face's two triangles (resting
  exactly on it), inside the margin, exactly at the margin, or at the cube's centre: the
  depth and point are the geometry's, and d depth / d centre = -normal, finite."""
  half, radius, margin = 0.25, 0.125, 2.0 ** -6    # dyadic: "exactly at" is exact
  rows = _hull_rows(collision_mesh.convex_hull(
      np.array(list(itertools.product((-half, half), repeat=3)))))
  centre, depth, normal = {
      "vertex": ([half, half, half], radius, None),
      "edge": ([half, 0.125, half], radius, None),
      "face": ([0.125, -0.0625, half], radius, [0, 0, 1.0]),
      "diagonal": ([0.125, 0.125, half + radius], 0.0, [0, 0, 1.0]),
      "inside_margin": ([0.0, 0.1875, half + radius + 2.0 ** -8], -2.0 ** -8, [0, 0, 1.0]),
      "at_margin": ([-0.1875, 0.0, half + radius + margin], -margin, [0, 0, 1.0]),
      "centre": ([0.0, 0.0, 2.0 ** -10], half - 2.0 ** -10 + radius, [0, 0, 1.0]),
  }[where]
  centre = jnp.asarray(centre)
  cp = jax.tree.map(np.asarray, _sphere_mesh(radius, centre, rows, jnp.eye(3), jnp.zeros(3),
                                             margin))
  assert cp.valid[0] and np.isclose(cp.depth[0], depth, atol=1e-12)
  if normal is not None:
    np.testing.assert_allclose(cp.normal[0], normal, atol=1e-12)
  assert abs(np.linalg.norm(cp.normal[0]) - 1) < 1e-12
  grad = jax.grad(lambda c: _sphere_mesh(radius, c, rows, jnp.eye(3), jnp.zeros(3),
                                         margin).depth[0])(centre)
  assert np.all(np.isfinite(grad))
  np.testing.assert_allclose(grad, -cp.normal[0], atol=1e-9)


_point_hull = jax.jit(lambda x, rows, R, p: (
    geometry.point_hull(x, rows, R, p),
    jax.grad(lambda y: geometry.point_hull(y, rows, R, p)[2])(x)))


@settings(max_examples=300, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2 ** 31 - 1),
       feature=st.sampled_from(["vertex", "edge", "face"]),
       offset=st.sampled_from([0.0, 1e-12, -1e-12, 1e-6, -1e-6, 0.05, -0.05, 1.0]))
def test_closest_points_of_hulls_hold_at_vertices_edges_and_faces(seed, feature, offset):
  """Property (hypothesis): for a random hull (12 points) at a random pose and a query point
  on one of its vertices, edges or triangles, moved along a random direction by `offset`
  (0 and 1e-12 included: exactly on, and a rounding away from, a vertex, an edge or a face),
  float64: the closest point, normal and signed distance are finite; the point is on the
  surface; |x - q| = |sd|; outside, no vertex is nearer than sd and q is in the hull;
  inside, sd is the nearest face plane's; and d sd / dx is the unit normal, finite (to
  the coordinates' rounding over |sd| next to the surface)."""
  rng = np.random.default_rng(seed)
  hull = collision_mesh.convex_hull(rng.normal(size=(12, 3)) * rng.uniform(0.1, 0.6, 3))
  rows = _hull_rows(hull)
  R, p = _rotation(rng), rng.uniform(-1, 1, 3)
  triangle = hull.vertices[hull.triangles[rng.integers(len(hull.triangles))]]
  weights = {"vertex": np.array([1.0, 0, 0]), "edge": np.r_[rng.uniform(size=1), 0.0],
             "face": rng.dirichlet(np.ones(3))}[feature]
  if feature == "edge":
    weights = np.array([weights[0], 1 - weights[0], 0.0])
  direction = rng.normal(size=3)
  local = weights @ triangle + offset * direction / np.linalg.norm(direction)
  x = R @ local + p
  (q, n, sd), grad = jax.tree.map(np.asarray, _point_hull(jnp.asarray(x), rows, R, p))
  assert np.all(np.isfinite(q)) and np.all(np.isfinite(n)) and np.isfinite(sd)
  assert np.all(np.isfinite(grad))
  assert abs(np.linalg.norm(n) - 1.0) < 1e-12
  assert abs(_hull_surface_value(hull, R, p, q)) <= 1e-9
  assert abs(np.linalg.norm(x - q) - abs(sd)) <= 1e-9
  planes = hull.planes[:, :3] @ local + hull.planes[:, 3]
  if sd > 0:
    vertex_distance = np.linalg.norm(hull.vertices @ R.T + p - x, axis=1)
    assert np.all(vertex_distance >= sd - 1e-9)
  else:
    assert abs(sd - planes.max()) <= 1e-12
  # Near a vertex or an edge (|sd| ~ 1e-12) the direction of x - q, so of the normal, is
  # known only to the rounding of x's coordinates (~1e-15 here) over |sd|: any direction of
  # the feature's normal cone fits. On the surface the face's normal is exact.
  np.testing.assert_allclose(grad, n, atol=1e-9 + (1e-14 / abs(sd) if sd else 0.0))


# ---- a capsule against a hull: exact end-sphere and axis-point contacts ----------------------

_capsule_mesh = jax.jit(lambda size, R_a, p_a, rows, R_b, p_b: narrowphase.collide(
    ShapeType.CAPSULE, ShapeType.MESH, size, R_a, p_a, rows, R_b, p_b, margin=MARGIN))
_box_capsule = jax.jit(lambda size_box, R_box, p_box, size, R, p: narrowphase.collide(
    ShapeType.BOX, ShapeType.CAPSULE, size_box, R_box, p_box, size, R, p, margin=MARGIN))


def test_a_capsule_against_a_cube_hull_gets_the_box_capsule_pair_s_contacts():
  """A capsule against a cube hull and against the BOX primitive of the same cube (the
  box-capsule pair, exact sphere contacts of its end spheres and of its deepest axis point,
  tested in test_narrowphase.py), 300 random poses from crossing to 5 cm apart, float64: the
  same valid slots, the end contacts' points, normals (reversed: the capsule is A here) and
  depths to 1e-9, and the axis point's depth to 1e-9 and normal to 1e-6 (its place along a flat
  stretch of the axis may differ)."""
  rng = np.random.default_rng(5)
  extent = np.array([0.6, 0.4, 0.3])
  rows = _hull_rows(collision_mesh.convex_hull(
      np.array(list(itertools.product(*[(-e / 2, e / 2) for e in extent])))))
  box = jnp.array([*extent, 0.0])
  checked = {0: 0, 1: 0, 2: 0}
  for _ in range(300):
    R_b, p_b = _rotation(rng), rng.uniform(-1, 1, 3)
    size = jnp.array([rng.uniform(0.03, 0.15), rng.uniform(0.1, 0.9), 0.0, 0.0])
    R_a = _rotation(rng)
    p_a = p_b + R_b @ (rng.uniform(-1, 1, 3) * (extent / 2 + size[0] + 0.3 * size[1]))
    ours = jax.tree.map(np.asarray, _capsule_mesh(size, R_a, p_a, rows, R_b, p_b))
    ref = jax.tree.map(np.asarray, _box_capsule(box, R_b, p_b, size, R_a, p_a))
    np.testing.assert_array_equal(ours.valid, ref.valid)
    for k in np.flatnonzero(ref.valid):
      checked[int(k)] += 1
      np.testing.assert_allclose(ours.depth[k], ref.depth[k], atol=1e-9)
      np.testing.assert_allclose(ours.normal[k], -ref.normal[k], atol=1e-9 if k < 2 else 1e-6)
      if k < 2:
        np.testing.assert_allclose(ours.position[k], ref.position[k], atol=1e-9)
  assert min(checked.values()) >= 10, checked


@pytest.mark.parametrize("angle", [1e-3, 2e-4])
def test_a_float32_capsule_nearly_along_a_hull_edge_touches_where_it_is_nearest(angle):
  """float32: a capsule (r 0.1, length 1.6) whose axis passes 1e-5 m outside a cube hull's
  edge at its middle, `angle` off parallel to the edge: the deepest contact is the axis
  point nearest the edge, depth 0.1 - 1e-5 (to float32 rounding). Its parameter along the
  edge came from a - e b^2 differences that cancel there (it was 1.7e-5 off at 1e-3 rad;
  at 2e-4 rad the pair was taken as parallel and the point dropped)."""
  hull = collision_mesh.convex_hull(np.array(list(itertools.product((-1.0, 1.0), repeat=3))))
  vertices, planes, triangles = collision_mesh.hull_tables([hull])
  rows = Hull(jnp.asarray(vertices[0], jnp.float32), jnp.asarray(planes[0], jnp.float32),
              jnp.asarray(triangles[0]))
  axis = np.array([1.0, angle, -angle]) / np.linalg.norm([1.0, angle, -angle])
  x = np.cross([0.0, 0.0, 1.0], axis)
  x /= np.linalg.norm(x)
  R_a = np.stack([x, np.cross(axis, x), axis], 1)            # the capsule's z along `axis`
  out = narrowphase.collide(ShapeType.CAPSULE, ShapeType.MESH,
                            jnp.array([0.1, 1.6, 0.0, 0.0], jnp.float32),
                            jnp.asarray(R_a, jnp.float32),
                            jnp.array([0.0, 1.0 + 1e-5, 1.0 + 1e-5], jnp.float32), rows,
                            jnp.eye(3, dtype=jnp.float32), jnp.zeros(3, jnp.float32),
                            margin=MARGIN)
  deepest = float(jnp.max(jnp.where(out.valid, out.depth, -1.0)))
  assert deepest == pytest.approx(0.1 - 1e-5, abs=3e-7)


def test_a_capsule_near_a_random_hull_finds_the_least_distance_of_its_axis():
  """A capsule's axis near a random hull (16 points), separated or crossing, 100 poses,
  float64: the deepest contact's depth is the radius minus the least signed distance of the
  axis to the hull, brute force over 4,001 axis points (the hull's distance from trimesh's
  point-triangle closest points on its own hull, `_trimesh_surface`), to 1e-6."""
  rng = np.random.default_rng(6)
  checked = 0
  for _ in range(100):
    hull = collision_mesh.convex_hull(rng.normal(size=(16, 3)) * [0.5, 0.4, 0.3])
    rows = _hull_rows(hull)
    R_b, p_b = _rotation(rng), rng.uniform(-1, 1, 3)
    radius, length = 0.05, rng.uniform(0.3, 1.2)
    R_a = _rotation(rng)
    p_a = p_b + rng.uniform(-0.7, 0.7, 3)
    axis_points = p_a + np.linspace(-length / 2, length / 2, 4001)[:, None] * R_a[:, 2]
    _, signed = _trimesh_surface(hull, R_b, p_b, axis_points)
    least = signed.min()
    if least > radius + 0.5 * MARGIN:
      continue
    out = jax.tree.map(np.asarray, _capsule_mesh(jnp.array([radius, length, 0.0, 0.0]),
                                                 R_a, p_a, rows, R_b, p_b))
    deepest = np.max(np.where(out.valid, out.depth, -np.inf))
    # The brute force's grid spacing (length / 4000) bounds its error to first order where
    # the axis crosses, to second order outside.
    np.testing.assert_allclose(deepest, radius - least, atol=1e-6 + length / 4000)
    checked += 1
  assert checked >= 30


def test_a_mesh_block_comes_to_rest_on_a_box_as_the_box_block_does(tmp_path):
  """The block (a box primitive, then a box mesh) dropped tilted onto a static box (a
  single-body object): both come to rest lying on the box's top face at the same pose, the
  mesh's contacts with the box through the mesh-box pair (face manifold)."""
  finals = []
  for world, robot in _block_worlds(tmp_path):
    step = world.addBox(1.0, 1.0, 0.2, 10.0)
    step.setBodyType(rj.BodyType.STATIC)
    step.setPosition(0.0, 0.0, 0.1)
    robot.setGeneralizedCoordinate([0.0, 0.0, 0.45, 0.98, 0.1, 0.15, 0.05])
    robot.setGeneralizedVelocity(np.zeros(6))
    for _ in range(1000):
      world.integrate()
    assert len(robot.getContacts()) >= 3
    finals.append(robot.getGeneralizedCoordinate())
  box, mesh = finals
  assert mesh[2] == pytest.approx(0.25, abs=1e-3)   # on the step's top (0.2) + half height
  np.testing.assert_allclose(mesh[:3], box[:3], atol=2e-3)
  np.testing.assert_allclose(np.abs(mesh[3:]), np.abs(box[3:]), atol=1e-2)


TWO_MESH_LINKS = """<?xml version="1.0"?>
<robot name="pair">
  <link name="a">
    <inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
    <collision><geometry><mesh filename="MESH"/></geometry></collision>
  </link>
  <link name="b">
    <inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
    <collision><geometry><mesh filename="MESH"/></geometry></collision>
  </link>
  <link name="c">
    <inertial><mass value="1"/><inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>
    <collision><geometry><mesh filename="MESH"/></geometry></collision>
  </link>
  <joint name="ab" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 1 0"/>
    <origin xyz="0 0 -0.1"/><limit lower="-3" upper="3" effort="1" velocity="100"/></joint>
  <joint name="bc" type="revolute"><parent link="b"/><child link="c"/><axis xyz="0 1 0"/>
    <origin xyz="0 0 -0.1"/><limit lower="-3" upper="3" effort="1" velocity="100"/></joint>
</robot>"""


def test_meshes_of_one_system_do_not_collide_with_each_other_and_the_load_says_so(tmp_path):
  """Three fixed-base links whose mesh boxes overlap (a and c are not parent and child):
  the system warns, naming its meshes, and steps with no self-contact; another system's
  mesh does collide with it."""
  trimesh.creation.box([0.15, 0.15, 0.15]).export(tmp_path / "cube.stl")
  text = TWO_MESH_LINKS.replace("MESH", str(tmp_path / "cube.stl"))
  fixed = text.replace('<link name="a">', '<link name="world"/><joint name="fix" type="fixed">'
                       '<parent link="world"/><child link="a"/><origin xyz="0 0 1"/></joint>'
                       '<link name="a">')
  world = rj.World()
  with pytest.warns(UserWarning, match=r"not with the system's own collision bodies.*a/0, b/0, "
                                       r"c/0"):
    chain = world.addArticulatedSystem(fixed)
  for _ in range(20):
    world.integrate()
  assert len(chain.getContacts()) == 0
  # A second, free system's cube dropped onto the chain's lowest link touches it.
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    other = world.addArticulatedSystem(text.split('<link name="b">')[0] + "</robot>")
  other.setGeneralizedCoordinate([0.0, 0.0, 0.95, 1.0, 0.0, 0.0, 0.0])
  for _ in range(5):
    world.integrate()
  assert len(other.getContacts()) >= 1


def test_mesh_pair_gradients_are_finite_with_padded_tables_and_move_with_the_normal():
  """A box against a box mesh whose table rows are padded (a wider hull beside it), at 20
  random penetrating poses, float64: d(deepest depth)/d(position of A) is -normal (moving A
  along the normal separates them), finite everywhere. (A -inf mask of the padding rows in the
  smoothed support made these derivatives NaN.)"""
  size = jnp.array([0.3, 0.2, 0.1, 0.0])
  rows = _hull_rows(collision_mesh.convex_hull(
      np.array(list(itertools.product((-0.15, 0.15), (-0.1, 0.1), (-0.05, 0.05))))))
  assert rows.vertices.shape[0] == collision_mesh.MAX_HULL_VERTICES

  def deepest(p_a, R_a, R_b):
    cp = narrowphase.collide(ShapeType.BOX, ShapeType.MESH, size, R_a, p_a, rows, R_b,
                             jnp.zeros(3), margin=0.0)
    return jnp.max(jnp.where(cp.valid, cp.depth, -1.0)), cp
  grad = jax.jit(jax.grad(lambda p, Ra, Rb: deepest(p, Ra, Rb)[0]))
  rng = np.random.default_rng(8)
  checked = 0
  for _ in range(40):
    R_a, R_b = jnp.asarray(_rotation(rng)), jnp.asarray(_rotation(rng))
    p_a = jnp.asarray(rng.normal(size=3) * 0.1)
    depth, cp = deepest(p_a, R_a, R_b)
    if depth <= 1e-6:
      continue
    g = np.asarray(grad(p_a, R_a, R_b))
    normal = np.asarray(cp.normal[int(jnp.argmax(jnp.where(cp.valid, cp.depth, -1.0)))])
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g, -normal, atol=1e-9)
    checked += 1
  assert checked >= 10


def test_a_float32_mesh_box_lying_on_a_mesh_box_gets_its_face_corners():
  """Float32: a small box mesh lying face down on a large one (random world poses) reports
  the small face's 4 corners and the main point (5), as float64 does: a corner carried onto
  the large face is on its plane only to float32 rounding, which the face test allows."""
  small = _hull_rows(collision_mesh.convex_hull(
      np.array(list(itertools.product((-0.1, 0.1), (-0.1, 0.1), (-0.05, 0.05))))))
  large = _hull_rows(collision_mesh.convex_hull(
      np.array(list(itertools.product((-0.5, 0.5), (-0.5, 0.5), (-0.1, 0.1))))))
  small, large = (jax.tree.map(lambda x: x.astype(jnp.float32), h) for h in (small, large))
  collide = jax.jit(lambda R, p_a, p_b: narrowphase.collide(
      ShapeType.MESH, ShapeType.MESH, small, R, p_a, large, R, p_b, margin=0.0))
  rng = np.random.default_rng(9)
  for _ in range(6):
    R = _rotation(rng).astype(np.float32)
    p_b = rng.normal(size=3).astype(np.float32)
    p_a = (p_b + R @ np.array([0.1, -0.05, 0.149])).astype(np.float32)   # 1 mm deep
    cp = collide(R, p_a, p_b)
    assert int(np.sum(cp.valid)) == 5
    np.testing.assert_allclose(np.asarray(cp.depth)[np.asarray(cp.valid)], 1e-3, atol=2e-5)


def test_a_collada_unit_is_applied():
  """pybullet_data's racecar cone.dae declares inches (<unit meter="0.0254">): its hull is
  0.15 m wide and 0.17 m tall, not 5.9 m and 6.7 m, as Assimp (RaiSim) and ROS read it."""
  import pybullet_data
  hull = collision_mesh.load_hull(os.path.join(pybullet_data.getDataPath(), "racecar", "meshes",
                                               "cone.dae"))
  extents = hull.vertices.max(axis=0) - hull.vertices.min(axis=0)
  np.testing.assert_allclose(extents, np.array([5.90551186, 5.90551186, 6.69291306]) * 0.0254,
                             rtol=1e-6)


def test_package_paths_resolve_to_the_named_package_above_the_urdf(tmp_path):
  """package://PKG/rel is looked up above the URDF's directory, the package-qualified path
  at every ancestor first: a file of the same name in the URDF's own package does not
  shadow the named package's."""
  from raisim_jax.io.urdf import _resolve_mesh
  for package in ("pkg_a", "pkg_b"):
    (tmp_path / "src" / package / "meshes").mkdir(parents=True)
    (tmp_path / "src" / package / "meshes" / "x.stl").write_text("")
  (tmp_path / "src" / "pkg_a" / "urdf").mkdir()
  urdf_dir = str(tmp_path / "src" / "pkg_a" / "urdf")
  for package in ("pkg_a", "pkg_b"):
    assert _resolve_mesh(f"package://{package}/meshes/x.stl", urdf_dir, "") == str(
        tmp_path / "src" / package / "meshes" / "x.stl")


def test_closed_form_hull_support_derivatives_equal_autodiff():
  """overlap._hull_support_derivatives (the Newton steps' closed form) against jax.grad and
  jax.hessian of the smoothed support value, for a padded hull, at three smoothing levels."""
  from raisim_jax.collision import overlap
  rng = np.random.default_rng(10)
  hull = _hull_rows(collision_mesh.convex_hull(rng.normal(size=(30, 3))))
  for eps in (1e-2, 1e-4, 1e-6):
    for _ in range(3):
      v = jnp.asarray(rng.normal(size=3))
      value = lambda w, eps=eps: overlap.smoothed_support_value(ShapeType.MESH, hull, w, eps)
      h, g, H = overlap._hull_support_derivatives(hull, v, eps)
      np.testing.assert_allclose(h, value(v), rtol=1e-12)
      np.testing.assert_allclose(g, jax.grad(value)(v), atol=1e-12)
      np.testing.assert_allclose(H, jax.hessian(value)(v), rtol=1e-7, atol=1e-7)

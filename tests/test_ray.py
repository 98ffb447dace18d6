"""Ray test (World::rayTest): every primitive against a brute-force numpy oracle (march the ray
on a point-in-solid test, then bisect), closest-hit selection, the collision mask, the ignored
object, the ground, jit+vmap batching and gradients."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import raisim_jax as rj
from raisim_jax.oo import world as world_module
from raisim_jax.collision.ray import ray_shape, ray_test
from raisim_jax.collision.shapes import Hull, ShapeType
from raisim_jax.io import collision_mesh

TOL = 1e-6


# ---- numpy oracle ---------------------------------------------------------------------------
def _constraints(shape_type, size, x):
  """(values (m, n), gradients (m, n, 3)) of convex constraints g_i(x) <= 0, in distance units
  (local frame, points x (n, 3)); the solid is max_i g_i <= 0. The capsule is one SDF."""
  x = np.atleast_2d(x)
  X, Y, Z = x[:, 0], x[:, 1], x[:, 2]
  rho = np.hypot(X, Y)
  radial = np.stack([X, Y, 0 * Z], -1) / np.maximum(rho, 1e-300)[:, None]
  ez = np.array([0.0, 0.0, 1.0])
  t = ShapeType(shape_type)
  if t == ShapeType.SPHERE:
    n = np.linalg.norm(x, axis=-1)
    return n[None] - size[0], (x / n[:, None])[None]
  if t == ShapeType.BOX:
    half = 0.5 * size[:3]
    g = np.abs(x).T - half[:, None]
    grads = np.stack([np.sign(x[:, i])[:, None] * np.eye(3)[i] for i in range(3)])
    return g, grads
  if t == ShapeType.CYLINDER:
    r, h = size[:2]
    g = np.stack([rho - r, np.abs(Z) - 0.5 * h])
    return g, np.stack([radial, np.sign(Z)[:, None] * ez])
  if t == ShapeType.CONE:
    r, h = size[:2]
    k = r / h
    s = np.sqrt(1 + k * k)
    g = np.stack([(rho - k * (0.75 * h - Z)) / s, -Z - 0.25 * h])
    return g, np.stack([(radial + k * ez) / s, np.broadcast_to(-ez, x.shape)])
  if t == ShapeType.CAPSULE:
    r, h = size[:2]
    axis_point = np.stack([0 * Z, 0 * Z, np.clip(Z, -0.5 * h, 0.5 * h)], -1)
    v = x - axis_point
    n = np.linalg.norm(v, axis=-1)
    return n[None] - r, (v / np.maximum(n, 1e-300)[:, None])[None]
  if t == ShapeType.HALFSPACE:
    return Z[None], np.broadcast_to(ez, x.shape)[None]  # frame placed on the plane
  if t == ShapeType.MESH:   # `size` is the hull's face planes (F, 4): n . x + c <= 0
    g = size[:, :3] @ x.T + size[:, 3:]
    return g, np.broadcast_to(size[:, None, :3], g.shape + (3,))
  raise ValueError(t)


def _oracle(shape_type, size, R, p, origin, direction, length, steps=20000):
  """(status, distance, point, normal): status 'hit', 'miss' or 'ambiguous' (grazing/edge)."""
  d = direction / np.linalg.norm(direction)
  ts = np.linspace(0.0, length, steps + 1)
  local = lambda t: ((origin + np.atleast_1d(t)[:, None] * d) - p) @ R
  g = _constraints(shape_type, size, local(ts))[0].max(axis=0)
  if abs(g.min()) < 5e-3 or abs(g[0]) < 1e-6:
    return "ambiguous", None, None, None  # grazing ray or start on the surface
  inside = np.nonzero(g <= 0)[0]
  if len(inside) == 0:
    return "miss", None, None, None
  if inside[0] == 0:
    return "hit", 0.0, origin, -d
  a, b = ts[inside[0] - 1], ts[inside[0]]
  for _ in range(80):
    m = 0.5 * (a + b)
    if _constraints(shape_type, size, local(m))[0].max() <= 0:
      b = m
    else:
      a = m
  values, grads = _constraints(shape_type, size, local(b))
  order = np.argsort(values[:, 0])
  if len(order) > 1 and values[order[-1], 0] - values[order[-2], 0] < 1e-5:
    return "ambiguous", None, None, None  # entering through an edge/rim: normal undefined
  normal = R @ grads[order[-1], 0]
  return "hit", b, origin + b * d, normal


def _random_rotation(rng):
  q = rng.normal(size=4)
  q /= np.linalg.norm(q)
  w, x, y, z = q
  return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                   [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                   [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def _random_size(shape_type, rng):
  """A random size row; for a MESH the face planes (24, 4) of the hull of 12 random points
  (io/collision_mesh.py), padded with rows that hold everywhere."""
  if shape_type == ShapeType.MESH:
    planes = collision_mesh.convex_hull(rng.normal(size=(12, 3)) * rng.uniform(0.3, 1.0)).planes
    return np.concatenate([planes, np.tile([0.0, 0.0, 0.0, -1.0], (24 - len(planes), 1))])
  if shape_type == ShapeType.SPHERE:
    return np.array([rng.uniform(0.2, 1.0), 0, 0, 0])
  if shape_type == ShapeType.BOX:
    return np.concatenate([rng.uniform(0.2, 1.5, 3), [0]])
  if shape_type == ShapeType.HALFSPACE:
    return np.array([rng.uniform(-1, 1), 0, 0, 0])
  return np.array([rng.uniform(0.2, 0.8), rng.uniform(0.3, 1.5), 0, 0])


def _geometry(shape_type, size):
  """What ray_shape takes: the size, or for a MESH a Hull of the planes `size` (its vertex
  and triangle rows are not read)."""
  if shape_type != ShapeType.MESH:
    return size
  size = jnp.asarray(size)
  return Hull(jnp.zeros(size.shape[:-2] + (1, 4), size.dtype), size,
              jnp.zeros(size.shape[:-2] + (1, 3), jnp.int32))


_ray_shape_batch = {
    int(t): jax.jit(jax.vmap(lambda s, R, p, o, d, L, t=int(t):
                             ray_shape(t, _geometry(t, s), R, p, o, d, L)))
    for t in ShapeType}


@pytest.mark.parametrize("shape_type", list(ShapeType), ids=lambda t: t.name)
def test_each_shape_matches_the_brute_force_oracle(shape_type):
  rng = np.random.default_rng(int(shape_type) + 7)
  n = 60
  sizes, Rs, ps, origins, directions, lengths = [], [], [], [], [], []
  for i in range(n):
    size = _random_size(shape_type, rng)
    R, p = _random_rotation(rng), rng.normal(size=3) * 0.5
    if shape_type == ShapeType.HALFSPACE:
      R, p = np.eye(3), np.array([0.0, 0.0, size[0]])
    if i % 10 == 0:  # start inside
      origin = p + rng.normal(size=3) * 0.02
      direction = rng.normal(size=3)
    else:
      target = p + rng.normal(size=3) * 0.6
      origin = p + rng.normal(size=3) * 1.0 + 3.0 * rng.normal(size=3) / np.sqrt(3)
      direction = target - origin
    sizes.append(size), Rs.append(R), ps.append(p), origins.append(origin)
    directions.append(direction * rng.uniform(0.3, 3.0))  # un-normalised on purpose
    lengths.append(rng.uniform(1.0, 8.0))
  arrays = [np.array(a) for a in (sizes, Rs, ps, origins, directions, lengths)]
  hit, dist, point, normal = map(np.asarray, _ray_shape_batch[int(shape_type)](*arrays))
  counts = {"hit": 0, "miss": 0, "inside": 0}
  for i in range(n):
    status, d_ref, p_ref, n_ref = _oracle(int(shape_type), *[a[i] for a in arrays])
    if status == "ambiguous":
      continue
    assert hit[i] == (status == "hit"), (i, status, dist[i])
    if status == "miss":
      counts["miss"] += 1
      assert np.all(np.isfinite(point[i])) and np.all(normal[i] == 0)
      continue
    counts["inside" if d_ref == 0 else "hit"] += 1
    np.testing.assert_allclose(dist[i], d_ref, atol=TOL)
    np.testing.assert_allclose(point[i], p_ref, atol=TOL)
    np.testing.assert_allclose(normal[i], n_ref, atol=TOL)
  # The sample exercised every case.
  assert counts["hit"] >= 10 and counts["inside"] >= 3, counts
  if shape_type != ShapeType.HALFSPACE:
    assert counts["miss"] >= 5, counts


@pytest.mark.parametrize("shape_type", [ShapeType.CYLINDER, ShapeType.CONE, ShapeType.CAPSULE,
                                        ShapeType.BOX], ids=lambda t: t.name)
def test_axis_aligned_rays_through_caps_and_faces(shape_type):
  """Rays parallel to the shape axis (zero quadratic coefficients / slab divisions)."""
  size = np.array([0.5, 1.0, 0.8, 0.0])
  R, p = np.eye(3), np.zeros(3)
  for x in (0.0, 0.2, 0.45, 0.6):
    if x == 0.0 and shape_type == ShapeType.CONE:
      continue  # the apex has no normal (covered in test_cone_apex_and_base_analytic)
    for sign in (1.0, -1.0):
      origin = np.array([x, 0.0, -3.0 * sign])
      direction = np.array([0.0, 0.0, sign])
      hit, dist, point, normal = ray_shape(int(shape_type), _geometry(shape_type, size), R, p,
                                           origin, direction, 6.0)
      status, d_ref, p_ref, n_ref = _oracle(int(shape_type), size, R, p, origin, direction, 6.0)
      if status == "ambiguous":
        continue
      assert bool(hit) == (status == "hit"), (x, sign)
      if status == "hit":
        np.testing.assert_allclose(dist, d_ref, atol=TOL)
        np.testing.assert_allclose(normal, n_ref, atol=TOL)


def test_cone_apex_and_base_analytic():
  r, h = 0.5, 1.2
  size = np.array([r, h, 0, 0])
  # Straight down onto the apex (3h/4 above the origin).
  hit, dist, point, _ = ray_shape(int(ShapeType.CONE), size, np.eye(3), np.zeros(3),
                                  np.array([0, 0, 2.0]), np.array([0, 0, -1.0]), 5.0)
  assert bool(hit)
  np.testing.assert_allclose(dist, 2.0 - 0.75 * h, atol=1e-12)
  # Straight up into the base disc.
  hit, dist, _, normal = ray_shape(int(ShapeType.CONE), size, np.eye(3), np.zeros(3),
                                   np.array([0.1, 0, -2.0]), np.array([0, 0, 1.0]), 5.0)
  np.testing.assert_allclose(dist, 2.0 - 0.25 * h, atol=1e-12)
  np.testing.assert_allclose(normal, [0, 0, -1], atol=1e-12)


def test_length_limits_the_hit():
  size = np.array([0.5, 0, 0, 0])
  args = (int(ShapeType.SPHERE), size, np.eye(3), np.zeros(3), np.array([-2.0, 0, 0]),
          np.array([1.0, 0, 0]))
  assert bool(ray_shape(*args, 1.5)[0])  # surface at exactly 1.5: inclusive
  assert not bool(ray_shape(*args, 1.49)[0])
  assert not bool(ray_shape(int(ShapeType.SPHERE), size, np.eye(3), np.zeros(3),
                            np.array([2.0, 0, 0]), np.array([1.0, 0, 0]), 10.0)[0])  # behind


# ---- world level ----------------------------------------------------------------------------
@pytest.fixture
def scene():
  world = rj.World()
  ground = world.addGround(-0.5)
  near = world.addSphere(0.5, 1.0, collisionGroup=rj.COLLISION(1) if hasattr(rj, "COLLISION")
                         else 2)
  near.setPosition(0, 0, 2.0)
  far = world.addBox(1.0, 1.0, 1.0, 1.0, collisionGroup=4)
  far.setPosition(0, 0, 0.5)
  return world, ground, near, far


def test_closest_of_several_objects(scene):
  world, ground, near, far = scene
  hits = world.rayTest([0, 0, 5], [0, 0, -1], 10)
  assert hits.size() == len(hits) == 1
  item = hits[0]
  assert item.getObject() is near and item.getLocalBodyIndex() == 0
  np.testing.assert_allclose(item.getPosition(), [0, 0, 2.5], atol=1e-12)
  np.testing.assert_allclose(item.getNormal(), [0, 0, 1], atol=1e-12)
  assert abs(item.getDistance() - 2.5) < 1e-12
  assert [i.getObject() for i in hits] == [near]
  # Off to the side only the ground is below.
  item = world.rayTest([3, 0, 5], [0, 0, -2], 10)[0]
  assert item.getObject() is ground
  np.testing.assert_allclose(item.getPosition(), [3, 0, -0.5], atol=1e-12)


def test_random_world_closest_hit_matches_the_oracle():
  """Every primitive at random poses in one world (body rotation, cone COM convention):
  the world ray test returns the oracle's closest hit and its object."""
  rng = np.random.default_rng(3)
  world = rj.World()
  ground = world.addGround(-1.5)
  placed = [(ground, ShapeType.HALFSPACE, np.array([-1.5, 0, 0, 0]), np.eye(3),
             np.array([0, 0, -1.5]))]
  adders = {ShapeType.SPHERE: lambda s: world.addSphere(s[0], 1.0),
            ShapeType.BOX: lambda s: world.addBox(s[0], s[1], s[2], 1.0),
            ShapeType.CYLINDER: lambda s: world.addCylinder(s[0], s[1], 1.0),
            ShapeType.CONE: lambda s: world.addCone(s[0], s[1], 1.0),
            ShapeType.CAPSULE: lambda s: world.addCapsule(s[0], s[1], 1.0)}
  for k, (t, add) in enumerate(adders.items()):
    size = _random_size(t, rng)
    R, p = _random_rotation(rng), np.array([np.cos(k * 1.25), np.sin(k * 1.25), 0.0]) * 1.3
    obj = add(size)
    obj.setPose(p, R)
    placed.append((obj, t, size, R, p))
  model, state = world.compile()
  batch = jax.jit(jax.vmap(ray_test, in_axes=(None, None, 0, 0, None)))
  starts = rng.normal(size=(60, 3)) * 0.5 + np.array([0, 0, 3.0])
  targets = rng.normal(size=(60, 3)) * 1.2
  result = jax.tree.map(np.asarray, batch(model, state, starts, targets - starts, 8.0))
  checked = 0
  for i in range(60):
    best = (np.inf, None)
    ambiguous = False
    for obj, t, size, R, p in placed:
      status, d_ref, _, n_ref = _oracle(int(t), size, R, p, starts[i], targets[i] - starts[i],
                                        8.0, steps=8000)
      ambiguous |= status == "ambiguous"
      if status == "hit" and d_ref < best[0]:
        best = (d_ref, obj, n_ref)
    if ambiguous:
      continue
    checked += 1
    assert bool(result.hit[i]) == (best[1] is not None)
    if best[1] is not None:
      assert int(result.object_index[i]) == best[1].getIndexInWorld()
      np.testing.assert_allclose(result.distance[i], best[0], atol=TOL)
      np.testing.assert_allclose(result.normal[i], best[2], atol=TOL)
  assert checked >= 40
  assert len(set(result.object_index[result.hit].tolist())) >= 4


def test_ray_from_above_hits_the_ground_at_its_height():
  world = rj.World()
  ground = world.addGround(0.25)
  hits = world.rayTest([0.3, -0.2, 4.0], [0, 0, -1], 10.0)
  assert len(hits) == 1 and hits[0].getObject() is ground
  np.testing.assert_allclose(hits[0].getPosition(), [0.3, -0.2, 0.25], atol=1e-12)
  np.testing.assert_allclose(hits[0].getNormal(), [0, 0, 1], atol=1e-12)
  assert len(world.rayTest([0, 0, 4.0], [0, 0, -1], 3.0)) == 0  # too short
  assert len(world.rayTest([0, 0, 4.0], [0, 0, 1], 10.0)) == 0  # pointing up
  # Inside-start rule: starting below the ground reports distance 0 at the start.
  item = world.rayTest([0, 0, -1.0], [1, 0, 0], 10.0)[0]
  assert item.getDistance() == 0.0
  np.testing.assert_allclose(item.getPosition(), [0, 0, -1.0])
  np.testing.assert_allclose(item.getNormal(), [-1, 0, 0])


def test_collision_mask_filters_groups(scene):
  world, ground, near, far = scene
  group_near = near.getCollisionGroup()
  assert world.rayTest([0, 0, 5], [0, 0, -1], 10, collisionMask=4)[0].getObject() is far
  assert world.rayTest([0, 0, 5], [0, 0, -1], 10,
                       collisionMask=group_near)[0].getObject() is near
  assert world.rayTest([0, 0, 5], [0, 0, -1], 10,
                       collisionMask=rj.COLLISION(63))[0].getObject() is ground
  assert len(world.rayTest([0, 0, 5], [0, 0, -1], 10, collisionMask=rj.COLLISION(40))) == 0
  assert len(world.rayTest([0, 0, 5], [0, 0, -1], 10, collisionMask=0)) == 0


def test_ignored_object_needs_object_and_local_id(scene):
  world, ground, near, far = scene
  idx = near.getIndexInWorld()
  assert world.rayTest([0, 0, 5], [0, 0, -1], 10, objectId=idx,
                       localId=0)[0].getObject() is far
  # objectId alone (localId left at its default) matches nothing, as in RaiSim.
  assert world.rayTest([0, 0, 5], [0, 0, -1], 10, objectId=idx)[0].getObject() is near
  # A sensor inside its own robot body: ignoring it sees the next object.
  item = world.rayTest([0, 0, 2.0], [0, 0, -1], 10, objectId=idx, localId=0)[0]
  assert item.getObject() is far
  np.testing.assert_allclose(item.getPosition(), [0, 0, 1.0], atol=1e-12)


def test_empty_list_and_argument_validation(scene):
  world = scene[0]
  empty = world.rayTest([5, 5, 5], [1, 0, 0], 10)
  assert empty.size() == 0 and len(empty) == 0 and list(empty) == []
  with pytest.raises(ValueError, match="'start'"):
    world.rayTest([0, 0], [0, 0, -1], 1)
  with pytest.raises(ValueError, match="'direction'"):
    world.rayTest([0, 0, 0], [0, 0, 0], 1)
  with pytest.raises(ValueError, match="'direction'"):
    world.rayTest([0, 0, 0], [0, 0, 1, 0], 1)
  with pytest.raises(ValueError, match="'length'"):
    world.rayTest([0, 0, 0], [0, 0, 1], 0.0)
  assert len(rj.World().rayTest([0, 0, 0], [0, 0, 1], 1.0)) == 0  # empty world


def test_repeated_calls_do_not_retrace(scene):
  world = scene[0]
  world.rayTest([0, 0, 5], [0, 0, -1], 10)
  size = world_module._RAY_TEST._cache_size()
  world.rayTest([1, 0, 5], [0, 1, -1], 3.0, objectId=1, localId=0, collisionMask=2)
  assert world_module._RAY_TEST._cache_size() == size


def test_jit_vmap_over_many_rays_equals_single_calls(scene):
  world = scene[0]
  model, state = world.compile()
  rng = np.random.default_rng(0)
  starts = rng.normal(size=(256, 3)) * 2 + np.array([0, 0, 3.0])
  directions = rng.normal(size=(256, 3))
  batched = jax.jit(jax.vmap(ray_test, in_axes=(None, None, 0, 0, None)))(
      model, state, starts, directions, 6.0)
  assert 30 < int(np.sum(batched.hit)) < 256
  for i in range(0, 256, 37):
    single = ray_test(model, state, starts[i], directions[i], 6.0)
    for name in ("hit", "distance", "position", "normal", "object_index", "shape_index"):
      np.testing.assert_allclose(np.asarray(getattr(batched, name))[i],
                                 np.asarray(getattr(single, name)), atol=1e-12, err_msg=name)


def test_distance_gradient_matches_finite_differences_and_is_finite_on_miss():
  world = rj.World()
  ball = world.addSphere(0.7, 1.0)
  ball.setPosition(0.1, -0.2, 0.3)
  model, state = world.compile()
  direction = jnp.array([-0.05, -0.1, -1.0])

  def distance(start):
    return ray_test(model, state, start, direction, 10.0).distance

  start = jnp.array([0.3, 0.0, 3.0])
  grad = np.asarray(jax.grad(distance)(start))
  eps = 1e-6
  fd = np.array([(distance(start + eps * e) - distance(start - eps * e)) / (2 * eps)
                 for e in np.eye(3)])
  np.testing.assert_allclose(grad, fd, atol=1e-6)
  # Analytic: d(distance)/d(start) = -n / (n . d) at the hit.
  hit = ray_test(model, state, start, direction, 10.0)
  assert bool(hit.hit) and np.all(np.abs(grad) > 1e-3)
  d = np.asarray(direction) / np.linalg.norm(direction)
  np.testing.assert_allclose(grad, -np.asarray(hit.normal) / np.dot(hit.normal, d), atol=1e-9)
  # Miss, inside start, and every shape type: finite gradients.
  for s in (jnp.array([5.0, 5.0, 3.0]), jnp.array([0.1, -0.2, 0.3])):
    assert np.all(np.isfinite(np.asarray(jax.grad(distance)(s))))
  for t in ShapeType:
    size = jnp.asarray(_random_size(t, np.random.default_rng(1)))
    for origin in (jnp.array([5.0, 5.0, 3.0]), jnp.array([0.05, 0.0, 0.0]),
                   jnp.array([0.0, 0.0, 3.0])):
      g = jax.grad(lambda o: ray_shape(int(t), _geometry(t, size), jnp.eye(3), jnp.zeros(3), o,
                                       jnp.array([0.0, 0.0, -1.0]), 10.0)[1])(origin)
      assert np.all(np.isfinite(np.asarray(g))), (t, origin)


def test_ray_test_maps_objects_when_an_articulated_system_comes_first():
  import os
  world = rj.World()
  world.addArticulatedSystem(os.path.join(os.path.dirname(__file__), "..", "rsc", "urdf",
                                          "pendulum.urdf"))
  ground = world.addGround()
  ball = world.addSphere(0.5, 1.0)
  ball.setPosition(0, 0, 2.0)
  hits = world.rayTest([0, 0, 5.0], [0, 0, -1.0], 10.0)
  assert hits[0].getObject() is ball
  hits = world.rayTest([0, 0, 5.0], [0, 0, -1.0], 10.0, ball.getIndexInWorld(), 0)
  assert hits[0].getObject() is ground

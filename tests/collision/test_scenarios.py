"""Resting configurations, argument order, padding, shapes' support/AABB, and gradients."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from raisim_jax.collision import narrowphase as nph
from raisim_jax.collision import shapes
from raisim_jax.collision.shapes import ShapeType as T
from tests.collision import oracle as orc
from tests.collision.test_narrowphase import OVERLAP_PAIRS, PAIRS, pair_id

I3 = jnp.eye(3)


def size(*v):
  return jnp.array(list(v) + [0.0] * (4 - len(v)))


def test_box_resting_flat_on_ground_gives_four_corner_points():
  cp = nph.collide(T.BOX, T.HALFSPACE, size(1.0, 2.0, 0.5), I3, jnp.array([3.0, 1.0, 0.249]),
                   size(0.0), I3, jnp.zeros(3))
  assert int(cp.valid.sum()) == 4
  np.testing.assert_allclose(cp.depth, 0.001, atol=1e-12)
  np.testing.assert_allclose(cp.normal, np.tile([0, 0, 1.0], (4, 1)))
  corners = {(round(float(x), 9), round(float(y), 9)) for x, y in np.asarray(cp.position[:, :2])}
  assert corners == {(2.5, 0.0), (2.5, 2.0), (3.5, 0.0), (3.5, 2.0)}
  np.testing.assert_allclose(cp.position[:, 2], -0.0005, atol=1e-12)  # midway


def test_box_on_box_gives_four_point_manifold():
  # small box (A) resting on a big box (B), rotated about z, offset inside the top face
  Ra = jnp.asarray(Rotation.from_euler("z", 0.3).as_matrix())
  cp = nph.collide(T.BOX, T.BOX, size(0.4, 0.6, 0.2), Ra, jnp.array([0.2, -0.1, 0.599]),
                   size(2.0, 2.0, 1.0), I3, jnp.zeros(3))
  assert cp.depth.shape == (8,)
  assert int(cp.valid.sum()) == 4
  np.testing.assert_allclose(cp.depth[cp.valid], 0.001, atol=1e-12)
  np.testing.assert_allclose(cp.normal[cp.valid], np.tile([0, 0, 1.0], (4, 1)), atol=1e-12)
  # the four points are the small box's bottom corners (x, y), midway in z
  xy = np.asarray(cp.position[cp.valid][:, :2])
  local = (xy - [0.2, -0.1]) @ np.asarray(Ra)[:2, :2]
  np.testing.assert_allclose(np.sort(np.abs(local), axis=0), [[0.2, 0.3]] * 4, atol=1e-9)


def test_box_overhanging_box_gives_clipped_manifold():
  # A overhangs B's top face edge: manifold = the overlap rectangle's 4 corners
  cp = nph.collide(T.BOX, T.BOX, size(1.0, 1.0, 1.0), I3, jnp.array([0.8, 0.0, 0.99]),
                   size(1.0, 1.0, 1.0), I3, jnp.zeros(3))
  pts = np.asarray(cp.position[cp.valid])
  assert len(pts) == 4
  np.testing.assert_allclose(sorted(set(np.round(pts[:, 0], 9))), [0.3, 0.5])


def _corner_points_by_quadrant(cp, center):
  """(4, 3) valid points of a 4-point manifold, ordered by their quadrant around `center`."""
  points = np.asarray(cp.position)[np.asarray(cp.valid)]
  assert len(points) == 4
  quadrant = (points[:, 0] > center[0]).astype(int) * 2 + (points[:, 1] > center[1])
  assert sorted(quadrant) == [0, 1, 2, 3]
  return points[np.argsort(quadrant)]


@pytest.mark.parametrize("shift", [[0.0, 0.0], [0.0, 0.3], [0.25, 0.0]],
                         ids=["aligned", "coincident-x-edges", "coincident-y-edges"])
def test_equal_boxes_manifold_derivative_is_the_central_difference(shift):
  """Degenerate face-face manifolds (equal boxes, coincident edges or corners): a corner of
  the overlap polygon has a kink there, and its derivative must be the two-sided one."""
  with jax.enable_x64(True):
    def collide(p_b):
      return nph.collide(T.BOX, T.BOX, size(1.0, 1.0, 1.0), I3,
                         jnp.array([0.0, 0.0, 0.999]), size(1.0, 1.0, 1.0), I3, p_b)

    p_b = jnp.array(shift + [0.0])
    center = 0.5 * np.asarray(p_b)
    slot_points = np.asarray(collide(p_b).position)
    valid = np.asarray(collide(p_b).valid)
    jac = np.asarray(jax.jacfwd(lambda p: collide(p).position)(p_b))   # (8, 3, 3)
    order = np.argsort((slot_points[valid, 0] > center[0]).astype(int) * 2
                       + (slot_points[valid, 1] > center[1]))
    autodiff = jac[valid][order]
    h = 1e-6
    for axis in range(2):
      step = np.eye(3)[axis] * h
      central = (_corner_points_by_quadrant(collide(p_b + step), center)
                 - _corner_points_by_quadrant(collide(p_b - step), center)) / (2 * h)
      np.testing.assert_allclose(autodiff[:, :, axis], central, atol=1e-6)


def test_cylinder_standing_on_ground_gives_base_rim_points():
  cp = nph.collide(T.CYLINDER, T.HALFSPACE, size(0.3, 1.0), I3, jnp.array([0.0, 0.0, 0.499]),
                   size(0.0), I3, jnp.zeros(3))
  assert int(cp.valid.sum()) == 4
  rim = np.asarray(cp.position[cp.valid])
  np.testing.assert_allclose(np.hypot(rim[:, 0], rim[:, 1]), 0.3, atol=1e-12)
  np.testing.assert_allclose(cp.depth[cp.valid], 0.001, atol=1e-12)


def test_cone_standing_on_base_gives_rim_points():
  cp = nph.collide(T.CONE, T.HALFSPACE, size(0.3, 1.0), I3, jnp.array([0.0, 0.0, 0.249]),
                   size(0.0), I3, jnp.zeros(3))
  assert int(cp.valid.sum()) == 4
  rim = np.asarray(cp.position[cp.valid])
  np.testing.assert_allclose(np.hypot(rim[:, 0], rim[:, 1]), 0.3, atol=1e-12)


def _flat_manifold(cp, depth, normal):
  """Valid points of a resting contact: all at `depth` along `normal`; returns their positions."""
  valid = np.asarray(cp.valid)
  np.testing.assert_allclose(np.asarray(cp.depth)[valid], depth, atol=1e-9)
  np.testing.assert_allclose(np.asarray(cp.normal)[valid], np.tile(normal, (valid.sum(), 1)),
                             atol=1e-9)
  return np.asarray(cp.position)[valid]


def test_cylinder_standing_on_box_gives_its_rim_points():
  cp = nph.collide(T.CYLINDER, T.BOX, size(0.3, 1.0), I3, jnp.array([0.1, 0.2, 0.999]),
                   size(2.0, 2.0, 1.0), I3, jnp.zeros(3))
  pts = _flat_manifold(cp, 0.001, [0, 0, 1.0])
  np.testing.assert_allclose(pts[:, 2], 0.4995, atol=1e-9)
  radius = np.hypot(pts[:, 0] - 0.1, pts[:, 1] - 0.2)
  assert np.sum(np.abs(radius - 0.3) < 1e-9) == 4 and np.all(radius <= 0.3 + 1e-9)


def test_box_on_cylinder_cap_gives_its_corners_and_cone_on_cap_its_rim():
  R = jnp.asarray(Rotation.from_euler("z", 0.4).as_matrix())
  cp = nph.collide(T.BOX, T.CYLINDER, size(0.4, 0.2, 0.2), R, jnp.array([0.1, 0.0, 0.5999]),
                   size(0.5, 1.0), I3, jnp.zeros(3))
  pts = _flat_manifold(cp, 1e-4, [0, 0, 1.0])
  local = (pts[:, :2] - [0.1, 0.0]) @ np.asarray(R)[:2, :2]
  corners = np.all(np.isclose(np.abs(local), [0.2, 0.1], atol=1e-9), axis=1)
  assert corners.sum() == 4
  cp = nph.collide(T.CONE, T.CYLINDER, size(0.2, 0.4), I3, jnp.array([0.0, 0.1, 0.5 + 0.1 - 1e-4]),
                   size(0.5, 1.0), I3, jnp.zeros(3))
  pts = _flat_manifold(cp, 1e-4, [0, 0, 1.0])
  assert np.sum(np.isclose(np.hypot(pts[:, 0], pts[:, 1] - 0.1), 0.2, atol=1e-9)) == 4


def test_cylinder_lying_on_box_and_on_a_parallel_cylinder_gives_its_line_ends():
  R = jnp.asarray(Rotation.from_euler("x", np.pi / 2).as_matrix())  # axis along -y
  cp = nph.collide(T.CYLINDER, T.BOX, size(0.1, 0.6), R, jnp.array([0.2, 0.0, 0.5 + 0.1 - 1e-3]),
                   size(2.0, 2.0, 1.0), I3, jnp.zeros(3))
  pts = _flat_manifold(cp, 1e-3, [0, 0, 1.0])
  np.testing.assert_allclose(pts[:, 0], 0.2, atol=1e-9)
  assert {-0.3, 0.3} <= set(np.round(pts[:, 1], 9))
  cp = nph.collide(T.CYLINDER, T.CYLINDER, size(0.1, 0.6), R, jnp.array([0.0, 0.2, 0.2 - 1e-3]),
                   size(0.1, 0.6), R, jnp.zeros(3))
  pts = _flat_manifold(cp, 1e-3, [0, 0, 1.0])
  assert {-0.1, 0.3} <= set(np.round(pts[:, 1], 9))  # the two ends of the overlap


def test_capsule_lying_on_ground_and_parallel_capsules_give_two_points():
  R = jnp.asarray(Rotation.from_euler("x", np.pi / 2).as_matrix())
  cp = nph.collide(T.CAPSULE, T.HALFSPACE, size(0.2, 1.0), R, jnp.array([0, 0, 0.199]),
                   size(0.0), I3, jnp.zeros(3))
  assert int(cp.valid.sum()) == 2
  cp = nph.collide(T.CAPSULE, T.CAPSULE, size(0.2, 1.0), R, jnp.array([0, 0.3, 0.399]),
                   size(0.2, 1.0), R, jnp.zeros(3))
  assert int(cp.valid.sum()) == 2
  np.testing.assert_allclose(sorted(np.asarray(cp.position[:, 1])), [-0.5 + 0.3, 0.5], atol=1e-9)
  np.testing.assert_allclose(cp.depth, 0.001, atol=1e-12)


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_swapped_arguments_flip_the_normal(pair):
  ta, tb = pair
  if tb == orc.HALFSPACE:
    pytest.skip("ground is always B in the canonical order; swapped order checked below")
  rng = np.random.default_rng(7)
  args = [jnp.asarray(x) for x in orc.random_pose_pair(ta, tb, rng, (0.8, 0.9))]
  ab = nph.collide(ta, tb, *args)
  ba = nph.collide(tb, ta, *args[3:], *args[:3])
  if pair in OVERLAP_PAIRS:
    # The manifold lists A's feature vertices before B's: compare the point sets.
    np.testing.assert_array_equal(ab.valid[0], ba.valid[0])
    np.testing.assert_allclose(ab.normal[0], -ba.normal[0], atol=1e-8)
    np.testing.assert_allclose(ab.depth[0], ba.depth[0], atol=1e-9)
    np.testing.assert_allclose(ab.position[0], ba.position[0], atol=1e-8)
    key = lambda cp: sorted(map(tuple, np.round(np.asarray(cp.position[cp.valid]), 7)))
    assert key(ab) == key(ba)
    return
  np.testing.assert_allclose(ab.normal, -ba.normal, atol=1e-12)
  np.testing.assert_allclose(ab.depth, ba.depth, atol=1e-12)
  np.testing.assert_allclose(ab.position, ba.position, atol=1e-12)


def test_ground_first_and_max_points_padding():
  cp = nph.collide(T.HALFSPACE, T.SPHERE, size(0.0), I3, jnp.zeros(3), size(0.5), I3,
                   jnp.array([0, 0, 0.4]), max_points=8)
  assert cp.depth.shape == (8,) and int(cp.valid.sum()) == 1
  np.testing.assert_allclose(cp.normal[0], [0, 0, -1.0])
  cp = nph.collide(T.BOX, T.BOX, size(1, 1, 1), I3, jnp.array([0, 0, 0.99]), size(1, 1, 1), I3,
                   jnp.zeros(3), max_points=3)
  assert cp.depth.shape == (3,) and bool(cp.valid.all())


def _rotation(w):
  return jax.scipy.linalg.expm(jnp.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]]))


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_gradient_of_depth_is_finite(pair):
  """Penetrating, separated and coincident-centre poses: finite values and gradients."""
  ta, tb = pair
  rng = np.random.default_rng(3)
  sa, Ra, pa, sb, Rb, pb = (jnp.asarray(x) for x in orc.random_pose_pair(ta, tb, rng, (0.8, 0.9)))

  def total_depth(pa_, w):
    cp = nph.collide(ta, tb, sa, Ra @ _rotation(w), pa_, sb, Rb, pb)
    return jnp.sum(jnp.where(cp.valid, cp.depth, 0.0)) + 1e-3 * jnp.sum(cp.position)

  grad = jax.jit(jax.grad(total_depth, argnums=(0, 1)))
  far = pb + jnp.array([0.0, 0.0, 10.0])
  for p in (pa, far, pb):
    g = grad(p, jnp.zeros(3))
    assert all(bool(jnp.all(jnp.isfinite(x))) for x in g), f"{pair_id(pair)} at {p}"
  cp = nph.collide(ta, tb, sa, Ra, far, sb, Rb, pb)
  assert not bool(cp.valid.any()) and bool(jnp.all(jnp.isfinite(cp.position)))
  cp = nph.collide(ta, tb, sa, Ra, pb, sb, Rb, pb)
  assert bool(jnp.all(jnp.isfinite(cp.depth))) and bool(jnp.all(jnp.isfinite(cp.normal)))


@pytest.mark.parametrize("t", [T.SPHERE, T.BOX, T.CYLINDER, T.CONE, T.CAPSULE])
def test_support_and_aabb_match_dense_sampling(t):
  rng = np.random.default_rng(int(t))
  s = orc.random_size(int(t), rng)
  R = Rotation.random(random_state=rng).as_matrix()
  p = rng.uniform(-1, 1, 3)
  dirs = orc.fibonacci(200)
  ours = np.array([shapes.support(t, jnp.asarray(s), jnp.asarray(R), jnp.asarray(p),
                                  jnp.asarray(d)) for d in dirs])
  np.testing.assert_allclose(np.sum(ours * dirs, 1), orc.support_value(int(t), s, R, p, dirs),
                             atol=1e-12)
  assert all(abs(orc.sdf(int(t), s, R, p, x)) < 1e-9 for x in ours)  # on the surface
  lo, hi = shapes.aabb(t, jnp.asarray(s), jnp.asarray(R), jnp.asarray(p))
  eye = np.eye(3)
  np.testing.assert_allclose(hi, orc.support_value(int(t), s, R, p, eye), atol=1e-9)
  np.testing.assert_allclose(lo, -orc.support_value(int(t), s, R, p, -eye), atol=1e-9)
  assert float(shapes.bounding_radius(t, jnp.asarray(s))) >= np.max(
      np.linalg.norm(ours - p, axis=1)) - 1e-12


# A float32 pose at the validity boundary: the optimized program's rounding.
@pytest.mark.xla_optimized
@pytest.mark.parametrize("pair", sorted(OVERLAP_PAIRS), ids=pair_id)
def test_float32_overlap_pairs_agree_with_float64(pair):
  """float32 (batched RL) stops the smoothing at eps = 1e-4: depths within 1e-4 of float64."""
  from tests.collision.test_narrowphase import batch_poses
  poses = batch_poses(pair, 20, seed=5)

  def run(dtype):
    fn = jax.jit(jax.vmap(lambda *a: nph.collide(*pair, *a)))
    return jax.tree_util.tree_map(np.asarray, fn(*[jnp.asarray(x, dtype) for x in poses]))

  exact, single = run(jnp.float64), run(jnp.float32)
  np.testing.assert_array_equal(exact.valid[:, 0], single.valid[:, 0])
  both = exact.valid[:, 0]
  assert both.sum() >= 5
  np.testing.assert_allclose(single.depth[both, 0], exact.depth[both, 0], atol=1e-4)


@pytest.mark.parametrize("pair", sorted(OVERLAP_PAIRS), ids=pair_id)
def test_overlap_depth_gradient_matches_finite_differences(pair):
  """The search runs under stop_gradient; the depth's derivative (envelope theorem) must still
  equal the derivative of the minimum itself, in translation and rotation of A."""
  ta, tb = pair
  rng = np.random.default_rng(11)
  for _ in range(20):  # a penetrating pose
    sa, Ra, pa, sb, Rb, pb = (jnp.asarray(x) for x in orc.random_pose_pair(ta, tb, rng, (0.7, 0.8)))
    if orc.penetration(ta, *map(np.asarray, (sa, Ra, pa)), tb, *map(np.asarray, (sb, Rb, pb)),
                       samples=500, starts=2)[0] > 2e-3:
      break

  def depth(x):
    cp = nph.collide(ta, tb, sa, Ra @ _rotation(x[3:]), pa + x[:3], sb, Rb, pb)
    return cp.depth[0]

  x0 = jnp.zeros(6)
  assert float(depth(x0)) > 1e-3
  grad = np.asarray(jax.jit(jax.grad(depth))(x0))
  fn = jax.jit(depth)
  h = 1e-6
  fd = np.array([(fn(x0.at[i].add(h)) - fn(x0.at[i].add(-h))) / (2 * h) for i in range(6)])
  np.testing.assert_allclose(grad, fd, atol=1e-5)

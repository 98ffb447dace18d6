"""Narrowphase pairs against brute-force numpy references (tests/collision/oracle.py).

Test ids name the pair (e.g. `test_pair_matches_oracle[box-cylinder]`).
Exact pairs (closed forms, SAT) must match the reference to 1e-6 in depth, normal (through the
support overlap f(n) = h_B(n) + h_A(-n) at the reported normal) and point (both implied
surface points x_A = position - depth/2 n, x_B = position + depth/2 n lie on the surfaces).
Box/cylinder/cone pairs (OVERLAP_PAIRS, collision/overlap.py) are held to the same 1e-6,
for every point of their feature manifold too.
"""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from raisim_jax.collision import narrowphase as nph
from tests.collision import oracle as orc

TYPES = [orc.SPHERE, orc.BOX, orc.CYLINDER, orc.CONE, orc.CAPSULE, orc.HALFSPACE]
PAIRS = [(a, b) for a, b in itertools.combinations_with_replacement(TYPES, 2)
         if not (a == orc.HALFSPACE and b == orc.HALFSPACE)]
OVERLAP_PAIRS = {(orc.BOX, orc.CYLINDER), (orc.BOX, orc.CONE), (orc.CYLINDER, orc.CYLINDER),
                 (orc.CYLINDER, orc.CONE), (orc.CONE, orc.CONE)}
EXACT_TOL = 1e-6


def pair_id(pair):
  return f"{orc.NAMES[pair[0]]}-{orc.NAMES[pair[1]]}"


def reference_depth(ta, tb, sa, Ra, pa, sb, Rb, pb):
  """Exact or brute-force reference for the deepest reported depth."""
  if tb == orc.HALFSPACE:
    return sb[0] + orc.support_value(ta, sa, Ra, pa, np.array([[0, 0, -1.0]]))[0]
  if ta == orc.SPHERE:
    return sa[0] - orc.sdf(tb, sb, Rb, pb, pa)
  if ta == orc.CAPSULE and tb == orc.CAPSULE:
    ea = [pa - 0.5 * sa[1] * Ra[:, 2], pa + 0.5 * sa[1] * Ra[:, 2]]
    eb = [pb - 0.5 * sb[1] * Rb[:, 2], pb + 0.5 * sb[1] * Rb[:, 2]]
    return sa[0] + sb[0] - orc.segment_distance(*ea, *eb)
  if tb == orc.CAPSULE:
    return orc.capsule_axis_depth(ta, sa, Ra, pa, sb, Rb, pb)
  return orc.penetration(ta, sa, Ra, pa, tb, sb, Rb, pb)[0]


def overlap(ta, sa, Ra, pa, tb, sb, Rb, pb, n):
  """f(n) = h_B(n) + h_A(-n): the penetration along the normal n (B -> A)."""
  if tb == orc.HALFSPACE:
    return sb[0] + orc.support_value(ta, sa, Ra, pa, -n[None])[0] if n[2] > 1 - 1e-12 else np.inf
  return (orc.support_value(tb, sb, Rb, pb, n[None])[0]
          + orc.support_value(ta, sa, Ra, pa, -n[None])[0])


def batch_poses(pair, count, seed, scale_range=(0.6, 1.1)):
  rng = np.random.default_rng(seed)
  poses = [orc.random_pose_pair(*pair, rng, scale_range) for _ in range(count)]
  return [np.stack(x) for x in zip(*poses)]


def batched_collide(pair):
  ta, tb = pair
  return jax.jit(jax.vmap(lambda *args: nph.collide(ta, tb, *args)))


def check_pair(pair, count, seed):
  ta, tb = pair
  poses = batch_poses(pair, count, seed)
  out = jax.tree_util.tree_map(np.asarray, batched_collide(pair)(*map(jnp.asarray, poses)))
  assert out.depth.shape[1] == nph.num_points(ta, tb)
  n_pen = 0
  for i in range(count):
    sa, Ra, pa, sb, Rb, pb = (x[i] for x in poses)
    ref = reference_depth(ta, tb, sa, Ra, pa, sb, Rb, pb)
    valid = out.valid[i]
    msg = f"{pair_id(pair)} pose {i}: ref depth {ref:.9f}, got {out.depth[i][valid]}"
    assert np.all(np.isfinite(out.position[i])) and np.all(np.isfinite(out.depth[i]))
    if ref < -EXACT_TOL:
      assert not valid.any(), msg
      continue
    if ref < EXACT_TOL:
      continue  # grazing: either answer is right
    n_pen += 1
    assert valid.any(), msg
    k = np.argmax(np.where(valid, out.depth[i], -np.inf))
    depth, normal = out.depth[i][k], out.normal[i][k]
    assert abs(depth - ref) <= EXACT_TOL, msg
    for j in np.flatnonzero(valid):
      n = out.normal[i][j]
      d = out.depth[i][j]
      assert abs(np.linalg.norm(n) - 1) < 1e-9, msg
      assert d <= depth + 1e-9 and d >= -1e-9, msg
      xa = out.position[i][j] - 0.5 * d * n
      xb = out.position[i][j] + 0.5 * d * n
      if tb == orc.CAPSULE and ta != orc.SPHERE and j != k:
        # secondary end points of capsule-vs-box/cylinder/cone: on the capsule's surface; their
        # depth is exact only against flat faces (documented gap), so x_A is not checked.
        assert abs(orc.sdf(tb, sb, Rb, pb, xb)) <= EXACT_TOL, f"{msg}: x_B off capsule"
        continue
      assert abs(orc.sdf(ta, sa, Ra, pa, xa)) <= EXACT_TOL, f"{msg}: x_A off A's surface (slot {j})"
      assert abs(orc.sdf(tb, sb, Rb, pb, xb)) <= EXACT_TOL, f"{msg}: x_B off B's surface (slot {j})"
    # The normal: the support overlap along it equals the reported depth (it is a minimiser).
    if not (tb == orc.CAPSULE and ta != orc.SPHERE):
      if not (ta == orc.CAPSULE and tb == orc.CAPSULE and depth >= sa[0] + sb[0] - 1e-9):
        assert abs(overlap(ta, sa, Ra, pa, tb, sb, Rb, pb, normal) - depth) <= EXACT_TOL, msg
  assert n_pen >= count // 4, f"{pair_id(pair)}: too few penetrating poses ({n_pen})"
  return poses, out


KNOWN_GAPS = {}  # pair -> reason (xfail), documented in docs/narrowphase.md


def _params(pairs):
  return [pytest.param(p, marks=pytest.mark.xfail(reason=KNOWN_GAPS[p], strict=False))
          if p in KNOWN_GAPS else p for p in pairs]


@pytest.mark.parametrize("pair", _params(PAIRS), ids=pair_id)
def test_pair_matches_oracle(pair):
  poses, out = check_pair(pair, 20, seed=hash(pair) % 1000)
  # jit(vmap) equals the unbatched, un-jitted call
  ta, tb = pair
  single_fn = jax.jit(lambda *args: nph.collide(ta, tb, *args))
  for i in range(2):
    single = single_fn(*(jnp.asarray(x[i]) for x in poses))
    for field in ("position", "normal", "depth", "valid"):
      np.testing.assert_allclose(np.asarray(getattr(single, field)), getattr(out, field)[i],
                                 atol=1e-9, err_msg=f"{pair_id(pair)} {field}")


@pytest.mark.slow
@pytest.mark.xla_optimized
@pytest.mark.parametrize("pair", _params(PAIRS), ids=pair_id)
def test_pair_matches_oracle_many_poses(pair):
  # 100 poses: the brute-force oracle runs in Python (cone-cone took 76 s of CI at 200).
  check_pair(pair, 100, seed=1000 + hash(pair) % 1000)

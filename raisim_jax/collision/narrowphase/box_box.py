"""Box-box: separating axis test (15 axes); on a face axis reference-face clipping gives the
manifold (up to 8 points), on an edge axis the edges' closest points give one."""

import jax
import jax.numpy as jnp

from raisim_jax.collision.narrowphase import geometry
from raisim_jax.types import ContactPoints
from raisim_jax.collision.narrowphase.registry import register
from raisim_jax.collision.shapes import ShapeType
from raisim_jax.math import dense, safe

# Tiny products as elementwise multiplies and adds (XLA:CPU's dot per product costs more).
_mv, _mm = dense.unrolled_matvec, dense.unrolled_matmul

B = ShapeType.BOX


def _derivative_of(value, source):
  """`value` (exactly) with the derivative of `source`, an array of about the same value."""
  return jax.lax.stop_gradient(value) + (source - jax.lax.stop_gradient(source))


def _face_manifold(hR, RR, pR, k, nr, hI, RI, pI, margin):
  """Points of the incident box's face inside the reference box's face k (normal nr, outward
  towards the incident box). Returns 24 candidates (incident surface point, depth, ok)."""
  dtype = pR.dtype
  k1, k2 = (k + 1) % 3, (k + 2) % 3
  u, v = RR[:, k1], RR[:, k2]
  hu, hv = hR[k1], hR[k2]
  cR = pR + hR[k] * nr
  dots = _mv(RI.T, nr)
  j = jnp.argmax(jnp.abs(dots))
  nI = -jnp.where(dots[j] >= 0.0, 1.0, -1.0) * RI[:, j]
  j1, j2 = (j + 1) % 3, (j + 2) % 3
  uI, vI = RI[:, j1], RI[:, j2]
  huI, hvI = hI[j1], hI[j2]
  cI = pI + hI[j] * nI
  sq = jnp.array([[1.0, 1.0], [-1.0, 1.0], [-1.0, -1.0], [1.0, -1.0]], dtype=dtype)
  verts = cI + sq[:, :1] * huI * uI + sq[:, 1:] * hvI * vI  # (4, 3) cyclic
  qu, qv = _mv(verts - cR, u), _mv(verts - cR, v)
  dep = _mv(cR - verts, nr)
  scale = jnp.maximum(jnp.max(hR), jnp.max(hI))
  tol = 1e-9 * scale
  # 1. incident vertices inside the reference face
  ok1 = (jnp.abs(qu) <= hu + tol) & (jnp.abs(qv) <= hv + tol)
  # 2. reference corners inside the incident face (projected along nr)
  corners = cR + sq[:, :1] * hu * u + sq[:, 1:] * hv * v
  t = _mv(cI - corners, nI) / jnp.dot(nr, nI)  # |nr . nI| >= 1/sqrt(3)
  y = corners + t[:, None] * nr
  ok2 = (jnp.abs(_mv(y - cI, uI)) <= huI + tol) & (jnp.abs(_mv(y - cI, vI)) <= hvI + tol)
  dep2 = -t
  # 3. incident edges crossing the reference face's edge lines
  nxt = jnp.array([1, 2, 3, 0])
  pts3, dep3, ok3 = [], [], []
  for coord, other, h_c, h_o in ((qu, qv, hu, hv), (qv, qu, hv, hu)):
    for target_sign in (1.0, -1.0):
      target = target_sign * h_c
      wa, wb = coord, coord[nxt]
      den = wb - wa
      s = safe.divide(target - wa, den, fallback=-1.0)
      o = other + s * (other[nxt] - other)
      ok = (den != 0.0) & (s >= 0.0) & (s <= 1.0) & (jnp.abs(o) <= h_o + tol)
      pts3.append(verts + s[:, None] * (verts[nxt] - verts))
      dep3.append(dep + s * (dep[nxt] - dep))
      ok3.append(ok)
  points = jnp.concatenate([verts, y] + pts3)
  depth = jnp.concatenate([dep, dep2] + dep3)
  ok = jnp.concatenate([ok1, ok2] + ok3) & (depth >= -margin)
  # Merge duplicates: a reference corner on an incident vertex (equal boxes stacked), an edge
  # crossing at one of its edge's end vertices or at a reference corner. Only these pairs can
  # coincide, so they are the only ones compared (an all-pairs test cost half the pair's time).
  # The kept point keeps its value and takes the derivative of the mean of the coinciding
  # candidates: the central (two-sided) derivative of the clipped polygon's corner where it
  # has a kink (coincident edges: on one side of a perturbation the incident vertex bounds the
  # polygon, on the other the reference corner). Keeping one candidate's derivative gave the
  # one-sided derivative of neither side. (Taking the mean's value too moved points by up to
  # 1e-7 of the size and doubled the sweeps of a settled 5-box stack, 41 -> 98.)
  close = lambda x, y: jnp.sum((x - y) ** 2, axis=-1) < (1e-7 * scale) ** 2
  ok_v, ok_y0, ok_c0 = ok[:4], ok[4:8], ok[8:].reshape(4, 4)
  y_on_v = close(y[:, None, :], verts[None, :, :]) & ok_v[None, :] & ok_y0[:, None]  # (y, v)
  ok_y = ok_y0 & ~jnp.any(y_on_v, axis=1)
  crossings = points[8:].reshape(4, 4, 3)  # (line, edge i -> i + 1, 3)
  ends = jnp.arange(4)[None, :, None]
  own_end = (ends == jnp.arange(4)[None, None, :]) | (nxt[ends] == jnp.arange(4)[None, None, :])
  c_on_v = (close(crossings[:, :, None, :], verts[None, None]) & ok_v[None, None] & own_end
            & ok_c0[:, :, None]).reshape(16, 4)
  c_on_y = (close(crossings[:, :, None, :], y[None, None]) & ok_y[None, None]
            & ok_c0[:, :, None]).reshape(16, 4) & ~jnp.any(c_on_v, axis=1, keepdims=True)
  dup_c = jnp.any(c_on_v, axis=1) | jnp.any(c_on_y, axis=1)
  y_on_v, c_on_v, c_on_y = (m.astype(dtype) for m in (y_on_v, c_on_v, c_on_y))
  c_points, c_depth = points[8:], depth[8:]
  v_count = 1.0 + jnp.sum(y_on_v, axis=0) + jnp.sum(c_on_v, axis=0)
  verts = _derivative_of(verts, (verts + y_on_v.T @ y + c_on_v.T @ c_points) / v_count[:, None])
  dep = _derivative_of(dep, (dep + y_on_v.T @ dep2 + c_on_v.T @ c_depth) / v_count)
  y_count = 1.0 + jnp.sum(c_on_y, axis=0)
  y = _derivative_of(y, (y + c_on_y.T @ c_points) / y_count[:, None])
  dep2 = _derivative_of(dep2, (dep2 + c_on_y.T @ c_depth) / y_count)
  points = jnp.concatenate([verts, y, c_points])
  depth = jnp.concatenate([dep, dep2, c_depth])
  return points, depth, jnp.concatenate([ok_v, ok_y, ok[8:] & ~dup_c])


@register(B, B, points=8)
def collide_box_box(size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0):
  """SAT over 15 axes. Face axis: reference-face clipping, up to 8 points. Edge axis: 1 point."""
  ha, hb = 0.5 * size_a[:3], 0.5 * size_b[:3]
  d = p_a - p_b
  cross = jnp.cross(R_a.T[:, None, :], R_b.T[None, :, :]).reshape(9, 3)
  cross_len = safe.norm(cross)
  edge_ok = cross_len > 1e-6
  axes = jnp.concatenate([R_a.T, R_b.T, safe.normalize(cross)])
  overlap = (_mv(jnp.abs(_mm(axes, R_a)), ha) + _mv(jnp.abs(_mm(axes, R_b)), hb)
             - jnp.abs(_mv(axes, d)))
  face_overlap = overlap[:6]
  edge_overlap = jnp.where(edge_ok, overlap[6:], jnp.inf)
  f = jnp.argmin(face_overlap)
  e = jnp.argmin(edge_overlap)
  fo, eo = face_overlap[f], edge_overlap[e]
  scale = jnp.maximum(jnp.max(ha), jnp.max(hb))
  use_edge = eo < fo - 1e-9 * scale
  depth_min = jnp.where(use_edge, eo, fo)
  separated = depth_min < -margin

  # Face case.
  axis_f = axes[f]
  n_f = axis_f * jnp.where(jnp.dot(d, axis_f) >= 0.0, 1.0, -1.0)  # towards A
  ref_is_a = f < 3
  k = f % 3
  pick = lambda x, y: jnp.where(ref_is_a, x, y)
  nr = pick(-n_f, n_f)
  points, depth, ok = _face_manifold(pick(ha, hb), pick(R_a, R_b), pick(p_a, p_b), k, nr,
                                     pick(hb, ha), pick(R_b, R_a), pick(p_b, p_a), margin)
  order = jax.lax.top_k(jnp.where(ok, 24.0, 0.0) - jnp.arange(24.0), 8)[1]  # first 8 valid
  points, depth, ok = points[order], depth[order], ok[order]
  position = points + 0.5 * depth[:, None] * nr  # incident surface point -> midway
  # Edge case.
  i, j = e // 3, e % 3
  axis_e = axes[6 + e]
  n_e = axis_e * jnp.where(jnp.dot(d, axis_e) >= 0.0, 1.0, -1.0)
  idx = jnp.arange(3)
  sa = jnp.where(_mv(R_a.T, -n_e) >= 0.0, 1.0, -1.0)
  sb = jnp.where(_mv(R_b.T, n_e) >= 0.0, 1.0, -1.0)
  ca = p_a + _mv(R_a, jnp.where(idx == i, 0.0, sa * ha))
  cb = p_b + _mv(R_b, jnp.where(idx == j, 0.0, sb * hb))
  da, db = R_a[:, i], R_b[:, j]
  xa, xb = geometry.segment_segment(ca - ha[i] * da, ca + ha[i] * da, cb - hb[j] * db, cb + hb[j] * db)
  edge_pos = 0.5 * (xa + xb)
  edge_slot = jnp.arange(8) == 0
  position = jnp.where(use_edge, jnp.where(edge_slot[:, None], edge_pos, position), position)
  depth = jnp.where(use_edge, jnp.where(edge_slot, eo, -1.0), depth)
  ok = jnp.where(use_edge, edge_slot & (eo >= -margin), ok)
  normal = jnp.where(use_edge, n_e, n_f)
  return ContactPoints(position, jnp.broadcast_to(normal, (8, 3)), depth, ok & ~separated)

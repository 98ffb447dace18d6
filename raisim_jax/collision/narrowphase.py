"""Narrowphase: contact points for every pair of convex primitives and the ground.

Conventions (see docs/narrowphase.md):
- `normal` is a unit world vector pointing TOWARDS OBJECT A (from B to A): moving A by
  +depth * normal separates the pair (RaiSim: "the contact normal vector pointing to ObjectA").
- `depth` is the penetration depth along the normal, positive when penetrating.
- `position` is MIDWAY between the two surfaces: with x_A the deepest point of A inside B and
  x_B the deepest point of B inside A (x_B - x_A = depth * normal), position = (x_A + x_B) / 2.
  It is symmetric, so swapping A and B only flips the normal.
- `valid` marks reported points; a point is reported only when depth >= -margin. Invalid slots
  hold finite values.
- K (points per pair) is static: see `num_points`.

Each `collide_<a>_<b>` takes (size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0), with <a>, <b> in
ShapeType code order; `collide` dispatches any order by swapping and flipping the normal.
"""

import jax
import jax.numpy as jnp

from raisim_jax.collision import feature_manifold as _features
from raisim_jax.collision import overlap as _overlap
from raisim_jax.collision.shapes import ShapeType, bounding_radius
from raisim_jax.math import safe
from raisim_jax.struct import dataclass

S, B, CY, CO, CA, H = (ShapeType.SPHERE, ShapeType.BOX, ShapeType.CYLINDER, ShapeType.CONE,
                       ShapeType.CAPSULE, ShapeType.HALFSPACE)


@dataclass
class ContactPoints:
  position: jnp.ndarray  # (K, 3) world, midway between the surfaces
  normal: jnp.ndarray    # (K, 3) world unit vector pointing to object A
  depth: jnp.ndarray     # (K,) penetration depth, > 0 when penetrating
  valid: jnp.ndarray     # (K,) bool

  def flip(self):
    """The same contacts with A and B exchanged (normals reversed)."""
    return self.replace(normal=-self.normal)


def _ez(dtype):
  return jnp.array([0.0, 0.0, 1.0], dtype=dtype)


def _one(position, normal, depth, valid):
  return ContactPoints(position[None], normal[None], depth[None], valid[None])


def _concat(*cps):
  return ContactPoints(*[jnp.concatenate([getattr(c, f) for c in cps], axis=0)
                         for f in ("position", "normal", "depth", "valid")])


def _from_surface(point_b, normal, depth, margin):
  """One contact from B's deepest surface point, the normal to A and the depth."""
  return _one(point_b - 0.5 * depth * normal, normal, depth, depth >= -margin)


# ---------------------------------------------------------------------------------------------
# Closest points of a point to a solid (for sphere pairs). Each returns, in world coordinates,
# (surface point q, outward unit normal at q towards the point, signed distance: < 0 inside).

def _point_box(c, size, R, p):
  h = 0.5 * size[:3]
  x = R.T @ (c - p)
  q = jnp.clip(x, -h, h)
  delta = x - q
  dist = safe.norm(delta)
  outside = dist > 0.0
  face_gap = h - jnp.abs(x)
  k = jnp.argmin(face_gap)
  sign_k = jnp.where(x[k] >= 0.0, 1.0, -1.0)
  inner_n = jnp.zeros(3, dtype=c.dtype).at[k].set(sign_k)
  inner_q = x.at[k].set(sign_k * h[k])
  n_local = jnp.where(outside, safe.normalize(delta), inner_n)
  q_local = jnp.where(outside, q, inner_q)
  sd = jnp.where(outside, dist, -face_gap[k])
  return p + R @ q_local, R @ n_local, sd


def _point_segment(c, a, b):
  """Closest point on segment [a, b] to c."""
  ab = b - a
  t = jnp.clip(safe.divide(jnp.dot(c - a, ab), jnp.dot(ab, ab)), 0.0, 1.0)
  return a + t * ab


def _closest_2d_segment(x, a, b):
  ab = b - a
  t = jnp.clip(safe.divide(jnp.dot(x - a, ab), jnp.dot(ab, ab)), 0.0, 1.0)
  q = a + t * ab
  return q, safe.norm(x - q)


def _point_cylinder(c, size, R, p):
  r, hh = size[0], 0.5 * size[1]
  x = R.T @ (c - p)
  radial = safe.normalize(x.at[2].set(0.0), fallback=jnp.array([1.0, 0.0, 0.0], x.dtype))
  rho = safe.norm(x[:2])
  z = x[2]
  rho_q = jnp.minimum(rho, r)
  z_q = jnp.clip(z, -hh, hh)
  d2 = jnp.stack([rho - rho_q, z - z_q])
  dist = safe.norm(d2)
  outside = dist > 0.0
  n2_out = safe.normalize(d2)
  side_gap = r - rho
  cap_gap = hh - jnp.abs(z)
  zs = jnp.where(z >= 0.0, 1.0, -1.0)
  use_side = side_gap < cap_gap
  n2_in = jnp.where(use_side, jnp.array([1.0, 0.0]), jnp.stack([0.0, zs]))
  q2_in = jnp.where(use_side, jnp.stack([r, z]), jnp.stack([rho, zs * hh]))
  n2 = jnp.where(outside, n2_out, n2_in)
  q2 = jnp.where(outside, jnp.stack([rho_q, z_q]), q2_in)
  sd = jnp.where(outside, dist, -jnp.minimum(side_gap, cap_gap))
  ez = _ez(c.dtype)
  q_local = q2[0] * radial + q2[1] * ez
  n_local = n2[0] * radial + n2[1] * ez
  return p + R @ q_local, R @ n_local, sd


def _point_cone(c, size, R, p):
  r, h = size[0], size[1]
  x = R.T @ (c - p)
  radial = safe.normalize(x.at[2].set(0.0), fallback=jnp.array([1.0, 0.0, 0.0], x.dtype))
  pt = jnp.stack([safe.norm(x[:2]), x[2]])
  base0 = jnp.stack([jnp.zeros_like(r), -0.25 * h])
  rim = jnp.stack([r, -0.25 * h])
  apex = jnp.stack([jnp.zeros_like(r), 0.75 * h])
  q_base, d_base = _closest_2d_segment(pt, base0, rim)
  q_slant, d_slant = _closest_2d_segment(pt, rim, apex)
  slant_n = safe.normalize(jnp.stack([h, r]))
  inside = (pt[1] >= -0.25 * h) & (jnp.dot(pt - rim, slant_n) <= 0.0)
  use_base = d_base < d_slant
  q2 = jnp.where(use_base, q_base, q_slant)
  dist = jnp.minimum(d_base, d_slant)
  n2_in = jnp.where(use_base, jnp.array([0.0, -1.0], dtype=x.dtype), slant_n)
  # Outside, the normal is along (point - closest); at zero distance use the face normal.
  n2 = jnp.where(inside, n2_in, safe.normalize(pt - q2, fallback=n2_in))
  sd = jnp.where(inside, -dist, dist)
  ez = _ez(c.dtype)
  return (p + R @ (q2[0] * radial + q2[1] * ez), R @ (n2[0] * radial + n2[1] * ez), sd)


def _capsule_ends(size, R, p):
  half = 0.5 * size[1] * R[:, 2]
  return p - half, p + half


def _capsule_surface_point(center, radius, axis_out, toward, depth):
  """Move an end-sphere contact onto the capsule's surface.

  A capsule end sphere (centre `center`) touching along `toward` (unit, from the capsule to the
  other shape) has its extreme point center + r * toward; where `toward` points back along the
  axis (toward . axis_out < 0) that point is inside the capsule's cylindrical part. The contact
  then uses the cylinder's surface point center + r * m, m = toward without its axial part, with
  the depth reduced by r (1 - m . toward) (exact for a flat counterpart). Returns (surface
  point of the capsule, depth).
  """
  inward = jnp.dot(toward, axis_out) < 0.0
  m = safe.normalize(toward - jnp.dot(toward, axis_out) * axis_out, fallback=toward)
  m = jnp.where(inward, m, toward)
  return center + radius * m, depth - radius * (1.0 - jnp.dot(m, toward))


# ---------------------------------------------------------------------------------------------
# Sphere pairs (sphere is A).

def _sphere_vs(c, r, closest, margin):
  q, n, sd = closest
  depth = r - sd
  return _from_surface(q, n, depth, margin)


def collide_sphere_sphere(size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0):
  n = safe.normalize(p_a - p_b, fallback=_ez(p_a.dtype))
  depth = size_a[0] + size_b[0] - safe.norm(p_a - p_b)
  return _from_surface(p_b + size_b[0] * n, n, depth, margin)


def collide_sphere_box(size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0):
  return _sphere_vs(p_a, size_a[0], _point_box(p_a, size_b, R_b, p_b), margin)


def collide_sphere_cylinder(size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0):
  return _sphere_vs(p_a, size_a[0], _point_cylinder(p_a, size_b, R_b, p_b), margin)


def collide_sphere_cone(size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0):
  return _sphere_vs(p_a, size_a[0], _point_cone(p_a, size_b, R_b, p_b), margin)


def _sphere_sphere_points(ca, ra, cb, rb, margin):
  return collide_sphere_sphere(jnp.stack([ra, 0, 0, 0]).astype(ca.dtype), None, ca,
                               jnp.stack([rb, 0, 0, 0]).astype(ca.dtype), None, cb, margin)


def collide_sphere_capsule(size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0):
  e0, e1 = _capsule_ends(size_b, R_b, p_b)
  q = _point_segment(p_a, e0, e1)
  return _sphere_sphere_points(p_a, size_a[0], q, size_b[0], margin)


def collide_sphere_halfspace(size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0):
  ez = _ez(p_a.dtype)
  lowest = p_a - size_a[0] * ez
  depth = size_b[0] - lowest[2]
  return _one(lowest + 0.5 * depth * ez, ez, depth, depth >= -margin)


# ---------------------------------------------------------------------------------------------
# Halfspace pairs (halfspace is B, normal +z).

def _box_vertices(size, R, p):
  signs = jnp.array([[sx, sy, sz] for sx in (-1.0, 1.0) for sy in (-1.0, 1.0)
                     for sz in (-1.0, 1.0)], dtype=p.dtype)
  return p + (signs * (0.5 * size[:3])) @ R.T


def _rim_points(center, axis, radius, toward):
  """Four points on a circle (centre, axis, radius), the first the most extreme in `toward`."""
  fallback = jnp.cross(axis, jnp.where(jnp.abs(axis[0]) < 0.9, jnp.array([1.0, 0, 0]),
                                       jnp.array([0, 1.0, 0])).astype(axis.dtype))
  e = safe.normalize(toward - jnp.dot(toward, axis) * axis, fallback=safe.normalize(fallback))
  f = jnp.cross(axis, e)
  return center + radius * jnp.stack([e, f, -e, -f])


def plane_candidates(shape_type, size, R, p, down):
  """Points of a shape that can be deepest below a plane whose inward direction is `down`."""
  t = ShapeType(shape_type)
  if t == S:
    return (p + size[0] * down)[None]
  if t == B:
    return _box_vertices(size, R, p)
  if t == CA:
    e0, e1 = _capsule_ends(size, R, p)
    return jnp.stack([e0, e1]) + size[0] * down
  if t == CY:
    axis = R[:, 2]
    hh = 0.5 * size[1]
    return jnp.concatenate([_rim_points(p - hh * axis, axis, size[0], down),
                            _rim_points(p + hh * axis, axis, size[0], down)])
  if t == CO:
    axis = R[:, 2]
    apex = p + 0.75 * size[1] * axis
    return jnp.concatenate([apex[None],
                            _rim_points(p - 0.25 * size[1] * axis, axis, size[0], down)])
  raise ValueError(t)


def _deepest(points, depth, normal, k, margin):
  """Top-k of candidate points (on A) by depth; position midway, normal shared."""
  if points.shape[0] > k:
    _, idx = jax.lax.top_k(depth, k)
    points, depth = points[idx], depth[idx]
  position = points + 0.5 * depth[:, None] * normal
  normals = jnp.broadcast_to(normal, points.shape)
  return ContactPoints(position, normals, depth, depth >= -margin)


def _shape_halfspace(shape_type, k):
  def fn(size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0):
    ez = _ez(p_a.dtype)
    pts = plane_candidates(shape_type, size_a, R_a, p_a, -ez)
    return _deepest(pts, size_b[0] - pts[:, 2], ez, k, margin)
  fn.__name__ = f"collide_{ShapeType(shape_type).name.lower()}_halfspace"
  fn.__doc__ = f"{ShapeType(shape_type).name} (A) on the ground (B): up to {k} points."
  return fn


collide_box_halfspace = _shape_halfspace(B, 4)
collide_cylinder_halfspace = _shape_halfspace(CY, 4)
collide_cone_halfspace = _shape_halfspace(CO, 4)


def collide_capsule_halfspace(size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0):
  """Capsule (A) on the ground (B): the deepest surface point at each end, 2 points."""
  ez = _ez(p_a.dtype)
  e0, e1 = _capsule_ends(size_a, R_a, p_a)
  axis = R_a[:, 2]
  points, depths = [], []
  for end, out in ((e0, -axis), (e1, axis)):
    x, d = _capsule_surface_point(end, size_a[0], out, -ez, size_b[0] - end[2] + size_a[0])
    points.append(x)
    depths.append(d)
  return _deepest(jnp.stack(points), jnp.stack(depths), ez, 2, margin)


# ---------------------------------------------------------------------------------------------
# Capsule-capsule: segment closest points, two points when (nearly) parallel.

def _segment_segment(p1, q1, p2, q2):
  """Closest points of segments [p1,q1], [p2,q2] (Ericson, RTCD 5.1.9), gradient-safe."""
  d1, d2, r = q1 - p1, q2 - p2, p1 - p2
  a, e, f = jnp.dot(d1, d1), jnp.dot(d2, d2), jnp.dot(d2, r)
  c, b = jnp.dot(d1, r), jnp.dot(d1, d2)
  denom = a * e - b * b
  parallel = denom <= 1e-12 * a * e
  s = jnp.where(parallel, 0.0, jnp.clip(safe.divide(b * f - c * e, jnp.where(parallel, 0.0, denom)),
                                         0.0, 1.0))
  t = safe.divide(b * s + f, e)
  s = jnp.where(t < 0.0, jnp.clip(safe.divide(-c, a), 0.0, 1.0),
                jnp.where(t > 1.0, jnp.clip(safe.divide(b - c, a), 0.0, 1.0), s))
  t = jnp.clip(t, 0.0, 1.0)
  return p1 + s * d1, p2 + t * d2


def collide_capsule_capsule(size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0):
  a0, a1 = _capsule_ends(size_a, R_a, p_a)
  b0, b1 = _capsule_ends(size_b, R_b, p_b)
  ra, rb = size_a[0], size_b[0]
  xa, xb = _segment_segment(a0, a1, b0, b1)
  general = _sphere_sphere_points(xa, ra, xb, rb, margin)
  # Parallel axes: the two ends of the overlap of B's projection on A's segment.
  axis = R_a[:, 2]
  sin2 = jnp.sum(jnp.cross(axis, R_b[:, 2]) ** 2)
  ha = 0.5 * size_a[1]
  t0, t1 = jnp.dot(b0 - p_a, axis), jnp.dot(b1 - p_a, axis)
  lo = jnp.maximum(jnp.minimum(t0, t1), -ha)
  hi = jnp.minimum(jnp.maximum(t0, t1), ha)
  parallel = (sin2 < 1e-6) & (hi - lo > 1e-9 * (1.0 + size_a[1]))
  xa_lo, xa_hi = p_a + lo * axis, p_a + hi * axis
  first = _sphere_sphere_points(xa_lo, ra, _point_segment(xa_lo, b0, b1), rb, margin)
  second = _sphere_sphere_points(xa_hi, ra, _point_segment(xa_hi, b0, b1), rb, margin)
  pick = jax.tree_util.tree_map(lambda u, v: jnp.where(parallel, u, v), first, general)
  second = second.replace(valid=second.valid & parallel)
  return _concat(pick, second)


# ---------------------------------------------------------------------------------------------
# Box-box: separating axis test (15 axes) and reference-face clipping for the manifold.

def _face_manifold(hR, RR, pR, k, nr, hI, RI, pI, margin):
  """Points of the incident box's face inside the reference box's face k (normal nr, outward
  towards the incident box). Returns 24 candidates (incident surface point, depth, ok)."""
  dtype = pR.dtype
  k1, k2 = (k + 1) % 3, (k + 2) % 3
  u, v = RR[:, k1], RR[:, k2]
  hu, hv = hR[k1], hR[k2]
  cR = pR + hR[k] * nr
  dots = RI.T @ nr
  j = jnp.argmax(jnp.abs(dots))
  nI = -jnp.where(dots[j] >= 0.0, 1.0, -1.0) * RI[:, j]
  j1, j2 = (j + 1) % 3, (j + 2) % 3
  uI, vI = RI[:, j1], RI[:, j2]
  huI, hvI = hI[j1], hI[j2]
  cI = pI + hI[j] * nI
  sq = jnp.array([[1.0, 1.0], [-1.0, 1.0], [-1.0, -1.0], [1.0, -1.0]], dtype=dtype)
  verts = cI + sq[:, :1] * huI * uI + sq[:, 1:] * hvI * vI  # (4, 3) cyclic
  qu, qv = (verts - cR) @ u, (verts - cR) @ v
  dep = (cR - verts) @ nr
  scale = jnp.maximum(jnp.max(hR), jnp.max(hI))
  tol = 1e-9 * scale
  # 1. incident vertices inside the reference face
  ok1 = (jnp.abs(qu) <= hu + tol) & (jnp.abs(qv) <= hv + tol)
  # 2. reference corners inside the incident face (projected along nr)
  corners = cR + sq[:, :1] * hu * u + sq[:, 1:] * hv * v
  t = ((cI - corners) @ nI) / jnp.dot(nr, nI)  # |nr . nI| >= 1/sqrt(3)
  y = corners + t[:, None] * nr
  ok2 = (jnp.abs((y - cI) @ uI) <= huI + tol) & (jnp.abs((y - cI) @ vI) <= hvI + tol)
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
  # Drop duplicates: a reference corner on an incident vertex (equal boxes stacked), an edge
  # crossing at one of its edge's end vertices or at a reference corner. Only these pairs can
  # coincide, so they are the only ones compared (an all-pairs test cost half the pair's time).
  close = lambda x, y: jnp.sum((x - y) ** 2, axis=-1) < (1e-7 * scale) ** 2
  ok_v, ok_y = ok[:4], ok[4:8]
  dup_y = jnp.any(close(y[:, None, :], verts[None, :, :]) & ok_v[None, :], axis=1)
  ok_y = ok_y & ~dup_y
  crossings = points[8:].reshape(4, 4, 3)  # (line, edge i -> i + 1, 3)
  dup_c = (close(crossings, verts[None]) & ok_v[None]) | (
      close(crossings, verts[nxt][None]) & ok_v[nxt][None])
  dup_c = dup_c | jnp.any(close(crossings[:, :, None, :], y[None, None]) & ok_y[None, None],
                          axis=-1)
  return points, depth, jnp.concatenate([ok_v, ok_y, ok[8:] & ~dup_c.reshape(16)])


def collide_box_box(size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0):
  """SAT over 15 axes. Face axis: reference-face clipping, up to 8 points. Edge axis: 1 point."""
  ha, hb = 0.5 * size_a[:3], 0.5 * size_b[:3]
  d = p_a - p_b
  cross = jnp.cross(R_a.T[:, None, :], R_b.T[None, :, :]).reshape(9, 3)
  cross_len = safe.norm(cross)
  edge_ok = cross_len > 1e-6
  axes = jnp.concatenate([R_a.T, R_b.T, safe.normalize(cross)])
  overlap = (jnp.abs(axes @ R_a) @ ha + jnp.abs(axes @ R_b) @ hb - jnp.abs(axes @ d))
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
  sa = jnp.where(R_a.T @ (-n_e) >= 0.0, 1.0, -1.0)
  sb = jnp.where(R_b.T @ n_e >= 0.0, 1.0, -1.0)
  ca = p_a + R_a @ jnp.where(idx == i, 0.0, sa * ha)
  cb = p_b + R_b @ jnp.where(idx == j, 0.0, sb * hb)
  da, db = R_a[:, i], R_b[:, j]
  xa, xb = _segment_segment(ca - ha[i] * da, ca + ha[i] * da, cb - hb[j] * db, cb + hb[j] * db)
  edge_pos = 0.5 * (xa + xb)
  edge_slot = jnp.arange(8) == 0
  position = jnp.where(use_edge, jnp.where(edge_slot[:, None], edge_pos, position), position)
  depth = jnp.where(use_edge, jnp.where(edge_slot, eo, -1.0), depth)
  ok = jnp.where(use_edge, edge_slot & (eo >= -margin), ok)
  normal = jnp.where(use_edge, n_e, n_f)
  return ContactPoints(position, jnp.broadcast_to(normal, (8, 3)), depth, ok & ~separated)


# ---------------------------------------------------------------------------------------------
# Box/cylinder/cone pairs: minimum support overlap (exact normal, depth and points) and a
# feature manifold (rim points, corners, side-line ends) around it.


def _convex(type_a, type_b):
  def fn(size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0):
    n, depth, x_a, x_b = _overlap.minimum_overlap(type_a, size_a, R_a, p_a,
                                                  type_b, size_b, R_b, p_b)
    position, normal, depths, valid = _features.manifold(
        type_a, size_a, R_a, p_a, type_b, size_b, R_b, p_b, n, depth, x_a, x_b, margin)
    return ContactPoints(position, normal, depths, valid)
  fn.__name__ = f"collide_{ShapeType(type_a).name.lower()}_{ShapeType(type_b).name.lower()}"
  fn.__doc__ = ("Exact minimum-overlap contact (collision/overlap.py) plus the support-feature "
                "manifold (collision/feature_manifold.py): up to 9 points.")
  return fn


collide_box_cylinder = _convex(B, CY)
collide_box_cone = _convex(B, CO)
collide_cylinder_cylinder = _convex(CY, CY)
collide_cylinder_cone = _convex(CY, CO)
collide_cone_cone = _convex(CO, CO)

_POINT_CLOSEST = {B: _point_box, CY: _point_cylinder, CO: _point_cone}


GOLDEN_ITERATIONS = 48


def _deepest_on_segment(closest, e0, e1):
  """Parameter t in [0, 1] minimising the signed distance of e0 + t (e1 - e0) to a convex solid.

  The signed distance of a convex solid is a convex function, so a golden-section search with a
  static iteration count finds its minimum on the segment.
  """
  ratio = 0.5 * (jnp.sqrt(5.0) - 1.0)

  def f(t):
    return closest(e0 + t * (e1 - e0))[2]

  def body(_, bounds):
    lo, hi = bounds
    t1 = hi - ratio * (hi - lo)
    t2 = lo + ratio * (hi - lo)
    left = f(t1) <= f(t2)
    return jnp.where(left, lo, t1), jnp.where(left, t2, hi)

  zero = jnp.zeros((), e0.dtype)
  lo, hi = jax.lax.fori_loop(0, GOLDEN_ITERATIONS, body, (zero, zero + 1.0))
  return 0.5 * (lo + hi)


def _axis_point_contact(closest, c, t, e0, e1, radius, margin):
  """Contact of the capsule's axis point c = e0 + t (e1 - e0) (the SDF minimiser), shape = A.

  Depth r - sd(c) is exact. Where the SDF is smooth at an interior minimiser its normal is
  perpendicular to the axis and the sphere point c - r n lies on the capsule. Inside the shape
  the minimum can sit on a kink of the SDF (two faces equally close) with a normal n that has
  an axial part (alpha = n . axis); c - r n is then inside the capsule. The contact keeps the
  exact depth and A's exact surface point q and takes the capsule's cylinder point
  x_B = c + s axis - r m (m: radial part of n) at distance r - sd from q (one quadratic in s),
  i.e. the normal is tilted from n by the smallest angle that puts both points on the surfaces.
  Of the normals on both sides of a kink the one with the least axial part is used. Dropped where that point leaves the cylindrical part or n is along the axis.
  """
  q, n_out, sd = closest(c)
  depth = radius - sd
  seg = e1 - e0
  length = safe.norm(seg)
  axis = safe.normalize(seg, fallback=_ez(c.dtype))
  alpha = jnp.dot(n_out, axis)
  # On a kink the face normal on either side of c is a valid one with the same depth: take the
  # one with the least axial part (its surface point q = c - sd n, exact for the flat faces and
  # to O(1e-12) for the curved ones at this probe distance).
  for probe in (-1e-6, 1e-6):
    n_side = closest(c + probe * seg)[1]
    alpha_side = jnp.dot(n_side, axis)
    better = (sd < 0.0) & (jnp.abs(alpha_side) < jnp.abs(alpha) - 1e-3)
    q = jnp.where(better, c - sd * n_side, q)
    n_out = jnp.where(better, n_side, n_out)
    alpha = jnp.where(better, alpha_side, alpha)
  m = safe.normalize(n_out - alpha * axis, fallback=n_out)
  beta = jnp.dot(n_out, m)
  g = jnp.maximum(-sd, 0.0)
  # |q - x_B|^2 = (s - g alpha)^2 + (g beta + r)^2 = (r + g)^2
  disc = jnp.maximum(g * g * alpha * alpha + 2.0 * radius * g * (1.0 - beta), 0.0)
  root = jnp.where(disc > 0.0, jnp.sqrt(jnp.where(disc > 0.0, disc, 1.0)), 0.0)
  s = g * alpha - jnp.sign(alpha) * root
  inside = sd < 0.0
  x_b = jnp.where(inside, c + s * axis - radius * m, c - radius * n_out)
  n = jnp.where(inside, safe.normalize(x_b - q, fallback=-n_out), -n_out)
  u = t * length + s
  on_cylinder = ~inside | ((u >= 0.0) & (u <= length) & (beta > 1e-6))
  return _one(0.5 * (q + x_b), n, depth, (depth >= -margin) & on_cylinder)


def _shape_capsule(type_a):
  closest_to = _POINT_CLOSEST[type_a]

  def fn(size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0):
    closest = lambda x: closest_to(x, size_a, R_a, p_a)
    e0, e1 = _capsule_ends(size_b, R_b, p_b)
    t = _deepest_on_segment(closest, e0, e1)
    spheres = [e0, e1, e0 + t * (e1 - e0)]
    # sphere (point of the capsule axis) vs the shape, flipped so that the shape is A
    ends = [_sphere_vs(c, size_b[0], closest(c), margin).flip() for c in spheres]
    axis = R_b[:, 2]
    for i, out in ((0, -axis), (1, axis)):  # keep end points on the capsule's surface
      n = ends[i].normal[0]
      x, d = _capsule_surface_point(spheres[i], size_b[0], out, n, ends[i].depth[0])
      ends[i] = _one(x - 0.5 * d * n, n, d, d >= -margin)
    end_depth = jnp.max(jnp.where(jnp.concatenate([c.valid for c in ends[:2]]),
                                  jnp.concatenate([c.depth for c in ends[:2]]), -jnp.inf))
    middle = _axis_point_contact(closest, spheres[2], t, e0, e1, size_b[0], margin)
    scale = bounding_radius(type_a, size_a) + bounding_radius(CA, size_b)
    # The interior point is kept only where it is deeper than both end spheres (a threshold far
    # below the 1e-6 accuracy, so that a minimum just inside an end is not lost).
    middle = middle.replace(valid=middle.valid & (middle.depth > end_depth + 1e-10 * scale))
    return _concat(ends[0], ends[1], middle)
  fn.__name__ = f"collide_{ShapeType(type_a).name.lower()}_capsule"
  fn.__doc__ = ("Exact sphere contacts of the capsule's two end spheres and of the deepest "
                "point of its axis (golden-section search on the convex signed distance); the "
                "interior point is reported when deeper than both ends. Up to 3 points.")
  return fn


collide_box_capsule = _shape_capsule(B)
collide_cylinder_capsule = _shape_capsule(CY)
collide_cone_capsule = _shape_capsule(CO)


# ---------------------------------------------------------------------------------------------
# Dispatch.

PAIRS = {
    (S, S): collide_sphere_sphere, (S, B): collide_sphere_box,
    (S, CY): collide_sphere_cylinder, (S, CO): collide_sphere_cone,
    (S, CA): collide_sphere_capsule, (S, H): collide_sphere_halfspace,
    (B, B): collide_box_box, (B, CY): collide_box_cylinder, (B, CO): collide_box_cone,
    (B, CA): collide_box_capsule, (B, H): collide_box_halfspace,
    (CY, CY): collide_cylinder_cylinder, (CY, CO): collide_cylinder_cone,
    (CY, CA): collide_cylinder_capsule, (CY, H): collide_cylinder_halfspace,
    (CO, CO): collide_cone_cone, (CO, CA): collide_cone_capsule, (CO, H): collide_cone_halfspace,
    (CA, CA): collide_capsule_capsule, (CA, H): collide_capsule_halfspace,
}

NUM_POINTS = {
    (S, S): 1, (S, B): 1, (S, CY): 1, (S, CO): 1, (S, CA): 1, (S, H): 1,
    (B, B): 8, (B, CY): 9, (B, CO): 9, (B, CA): 3, (B, H): 4,
    (CY, CY): 9, (CY, CO): 9, (CY, CA): 3, (CY, H): 4,
    (CO, CO): 9, (CO, CA): 3, (CO, H): 4,
    (CA, CA): 2, (CA, H): 2,
}


def _key(type_a, type_b):
  ta, tb = ShapeType(int(type_a)), ShapeType(int(type_b))
  if (ta, tb) in PAIRS:
    return (ta, tb), False
  if (tb, ta) in PAIRS:
    return (tb, ta), True
  raise ValueError(f"no narrowphase for {ta.name}-{tb.name}")


def num_points(type_a, type_b):
  """Static number K of contact slots `collide` returns for the pair (any order)."""
  return NUM_POINTS[_key(type_a, type_b)[0]]


def _resize(cp, k):
  n = cp.depth.shape[0]
  if n == k:
    return cp
  if n > k:  # keep the k deepest valid points
    _, idx = jax.lax.top_k(jnp.where(cp.valid, cp.depth, -jnp.inf), k)
    return jax.tree_util.tree_map(lambda x: x[idx], cp)
  pad = k - n
  return ContactPoints(
      jnp.concatenate([cp.position, jnp.zeros((pad, 3), cp.position.dtype)]),
      jnp.concatenate([cp.normal, jnp.broadcast_to(cp.normal[:1], (pad, 3))]),
      jnp.concatenate([cp.depth, jnp.zeros((pad,), cp.depth.dtype)]),
      jnp.concatenate([cp.valid, jnp.zeros((pad,), bool)]))


def collide(type_a, type_b, size_a, R_a, p_a, size_b, R_b, p_b, max_points=None, margin=0.0):
  """Contacts between shape A and shape B (types static ints, any order).

  Normals point to A. With `max_points`, the result has exactly that many slots (the deepest
  valid points kept, or invalid padding); otherwise `num_points(type_a, type_b)` slots.
  """
  key, swapped = _key(type_a, type_b)
  fn = PAIRS[key]
  if swapped:
    cp = fn(size_b, R_b, p_b, size_a, R_a, p_a, margin).flip()
  else:
    cp = fn(size_a, R_a, p_a, size_b, R_b, p_b, margin)
  if max_points is not None:
    cp = _resize(cp, int(max_points))
  return cp

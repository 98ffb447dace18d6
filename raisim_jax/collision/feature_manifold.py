"""Multi-point contact manifolds from support features (box, cylinder, cone, and convex mesh
pairs, and a sphere or capsule against a mesh).

Given the exact contact normal n (from B to A) of two convex shapes, each shape's support
feature facing the other is taken: for a box the face most aligned with the direction (4
corners), for a cylinder its cap (4 rim points, a disc) or its side line (2 end points), for a
cone its base (4 rim points, a disc) or the side line from the rim to the apex (2 points), for
a capsule its side line (2 points) or an end's support point, for a sphere its support point,
for a convex mesh (a hull) its face most aligned with the direction (up to 4 of the face's
vertices that span it; a point lies on the face where it is inside every plane of the hull). When
both features face each other (their normals within FACE_ALIGNMENT of n), every vertex of one
feature is carried along n onto the other feature's plane: if it lands inside that feature
(rectangle, disc or segment) it is a contact point with the honest depth along n. So a cylinder
standing on a box gets its rim points, a box lying on a cylinder cap its corners, a cylinder
lying on a box or on a parallel cylinder its two side-line ends. Every reported point has a point
of A and a point of B exactly on the surfaces, with x_B - x_A = depth n (depth <= the deepest).
"""

import jax.numpy as jnp

from raisim_jax.collision import contact_patch, overlap, shapes
from raisim_jax.collision.narrowphase import geometry
from raisim_jax.collision.shapes import ShapeType
from raisim_jax.math import safe

FACE_ALIGNMENT = 0.9   # |feature normal . n| needed for the extra points
RECT, DISC, SEGMENT, POLYGON = 0, 1, 2, 3


def _point_feature(point, normal):
  """A feature that is one point (a sphere's, a capsule end's): it carries no vertex and
  contains only itself."""
  t1, t2 = overlap.tangent_basis(normal)
  return dict(verts=jnp.broadcast_to(point, (4, 3)), vert_valid=jnp.zeros(4, bool),
              center=point, normal=normal, kind=jnp.asarray(RECT), axes=jnp.stack([t1, t2]),
              half=jnp.zeros(2, point.dtype))


def _hull_face(hull, R, p, v):
  """A hull's face most aligned with the shape-frame direction v: up to 4 of its vertices
  spanning it (collision/contact_patch.py), its centroid, its outward normal; POLYGON, with
  the hull's planes for the containment test."""
  normals, offsets = hull.planes[:, :3], hull.planes[:, 3]
  k = jnp.argmax(normals @ v)
  normal = normals[k]
  points, real = hull.vertices[:, :3], hull.vertices[:, 3] > 0
  scale = overlap.shape_scale(ShapeType.MESH, hull)
  on_face = real & (jnp.abs(points @ normal + offsets[k]) <= 1e-6 * scale)
  t1, t2 = overlap.tangent_basis(normal)
  flat = jnp.stack([points @ t1, points @ t2], axis=-1)
  index, valid = contact_patch.patch_corners(flat, jnp.zeros(points.shape[0], points.dtype),
                                             on_face, on_face)
  weights = on_face.astype(points.dtype)
  centroid = jnp.sum(weights[:, None] * points, axis=0) / jnp.maximum(jnp.sum(weights), 1.0)
  return dict(verts=p + points[index] @ R.T, vert_valid=valid, center=p + R @ centroid,
              normal=R @ normal, kind=jnp.asarray(POLYGON),
              axes=jnp.stack([R @ t1, R @ t2]), half=jnp.zeros(2, points.dtype),
              planes=hull.planes, R=R, p=p,
              # A point carried onto the face is on its plane only to rounding (float32:
              # ~1e-8 m, above the manifold's 1e-9 of the size).
              tol=jnp.maximum(1e-9, 100 * jnp.finfo(points.dtype).eps) * scale)


def support_feature(shape_type, size, R, p, direction):
  """The shape's feature facing the world direction `direction` (3,).

  Returns a dict: verts (4, 3) world, vert_valid (4,), center (3,), normal (3,) (the
  feature's outward normal), kind (RECT / DISC / SEGMENT, traced int), axes (2, 3) in-plane
  directions (RECT: face axes; SEGMENT: axes[0] along the line), half (2,) half extents
  (RECT: both; DISC: radius in half[0]; SEGMENT: half length in half[0]).
  """
  t = ShapeType(shape_type)
  v = R.T @ direction
  dtype = v.dtype
  if t == ShapeType.SPHERE:
    unit = safe.normalize(direction, fallback=R[:, 2])
    return _point_feature(p + size[0] * unit, unit)
  if t == ShapeType.MESH:
    return _hull_face(size, R, p, v)
  if t == ShapeType.BOX:
    i = jnp.argmax(jnp.abs(v))
    j, k = (i + 1) % 3, (i + 2) % 3
    half_sizes = 0.5 * size[:3]
    sign = jnp.where(v[i] >= 0, 1.0, -1.0).astype(dtype)
    normal = sign * R[:, i]
    center = p + normal * half_sizes[i]
    u1, u2 = R[:, j], R[:, k]
    e1, e2 = half_sizes[j], half_sizes[k]
    verts = jnp.stack([center + s1 * e1 * u1 + s2 * e2 * u2
                       for s1, s2 in ((1, 1), (-1, 1), (-1, -1), (1, -1))])
    return dict(verts=verts, vert_valid=jnp.ones(4, bool), center=center, normal=normal,
                kind=jnp.asarray(RECT), axes=jnp.stack([u1, u2]), half=jnp.stack([e1, e2]))
  r, h = size[0], size[1]
  ex, ey, ez = R[:, 0], R[:, 1], R[:, 2]
  radial_len = jnp.sqrt(v[0] * v[0] + v[1] * v[1])
  rho = jnp.where(radial_len > 0, jnp.stack([v[0], v[1]]) / jnp.where(radial_len > 0, radial_len, 1.0),
                  jnp.array([1.0, 0.0], dtype))
  radial = rho[0] * ex + rho[1] * ey
  rim_dirs = jnp.stack([ex, ey, -ex, -ey])
  if t == ShapeType.CYLINDER:
    cap_sign = jnp.where(v[2] >= 0, 1.0, -1.0).astype(dtype)
    use_cap = jnp.abs(v[2]) >= radial_len
    cap_normal = cap_sign * ez
    cap_center = p + cap_normal * 0.5 * h
    side_center = p + r * radial
    seg_dir = ez
    seg_half = 0.5 * h
    side_normal = radial
  elif t == ShapeType.CAPSULE:
    # Its side line (2 points) where the direction is more radial than axial, else the
    # support point of an end's hemisphere.
    unit = safe.normalize(direction, fallback=ez)
    end = p + jnp.where(v[2] >= 0, 0.5, -0.5).astype(dtype) * h * ez
    tip = _point_feature(end + r * unit, unit)
    use_side = radial_len > jnp.abs(v[2])
    seg_dir, seg_half, side_normal = ez, 0.5 * h, radial
    side_center = p + r * radial
    seg_verts = jnp.stack([side_center + seg_half * seg_dir, side_center - seg_half * seg_dir,
                           side_center, side_center])
    other = jnp.cross(side_normal, seg_dir)
    side = dict(verts=seg_verts, vert_valid=jnp.array([True, True, False, False]),
                center=side_center, normal=side_normal, kind=jnp.asarray(SEGMENT),
                axes=jnp.stack([seg_dir, other]), half=jnp.stack([seg_half, seg_half]))
    return {key: jnp.where(use_side, side[key], tip[key]) for key in side}
  elif t == ShapeType.CONE:
    cap_normal = -ez
    cap_center = p - 0.25 * h * ez
    slant = jnp.sqrt(r * r + h * h)
    side_normal = (h * radial + r * ez) / slant
    use_cap = jnp.dot(-ez, R @ v) >= jnp.dot(side_normal, R @ v)
    rim = cap_center + r * radial
    apex = p + 0.75 * h * ez
    side_center = 0.5 * (rim + apex)
    seg_dir = (apex - rim) / slant
    seg_half = 0.5 * slant
  else:
    raise ValueError(f"no support feature for {t!r}")
  cap_verts = cap_center + r * rim_dirs
  seg_verts = jnp.stack([side_center + seg_half * seg_dir, side_center - seg_half * seg_dir,
                         side_center, side_center])
  verts = jnp.where(use_cap, cap_verts, seg_verts)
  vert_valid = jnp.where(use_cap, jnp.ones(4, bool), jnp.array([True, True, False, False]))
  other = jnp.cross(side_normal, seg_dir)
  return dict(verts=verts, vert_valid=vert_valid,
              center=jnp.where(use_cap, cap_center, side_center),
              normal=jnp.where(use_cap, cap_normal, side_normal),
              kind=jnp.where(use_cap, DISC, SEGMENT),
              axes=jnp.where(use_cap, jnp.stack([ex, ey]), jnp.stack([seg_dir, other])),
              half=jnp.where(use_cap, jnp.stack([r, r]), jnp.stack([seg_half, seg_half])))


def _contains(feature, q, tol):
  """Whether the point q (3,), on the feature's plane, lies on the feature (within tol)."""
  d = q - feature["center"]
  a0, a1 = feature["axes"][0], feature["axes"][1]
  c0, c1 = jnp.dot(d, a0), jnp.dot(d, a1)
  in_rect = (jnp.abs(c0) <= feature["half"][0] + tol) & (jnp.abs(c1) <= feature["half"][1] + tol)
  off_normal = d - jnp.dot(d, feature["normal"]) * feature["normal"]
  in_disc = jnp.sum(off_normal * off_normal) <= (feature["half"][0] + tol) ** 2
  on_segment = (jnp.abs(c0) <= feature["half"][0] + tol) & (jnp.abs(c1) <= tol)
  kind = feature["kind"]
  inside = jnp.where(kind == RECT, in_rect, jnp.where(kind == DISC, in_disc, on_segment))
  if "planes" in feature:   # a hull's face: on the face plane, inside every other plane
    residual = _hull_residual(feature["planes"], feature["R"], feature["p"], q)
    inside = jnp.where(kind == POLYGON, residual <= jnp.maximum(tol, feature["tol"]), inside)
  return inside


def _carry(vertices, feature, n, direction):
  """Distance t along direction*n from each vertex to the feature's plane, and the landing point."""
  m = feature["normal"]
  denom = jnp.dot(n, m) * direction
  t = jnp.einsum("kj,j->k", feature["center"] - vertices, m) / jnp.where(
      jnp.abs(denom) > 1e-12, denom, 1e-12)
  return t, vertices + direction * t[:, None] * n


def _hull_residual(planes, R, p, x):
  """max over a hull's `planes` (F, 4) of n . x + c at the world point x (the hull placed by
  R, p): 0 on its surface, negative inside."""
  local = R.T @ (x - p)
  return jnp.max(planes[:, :3] @ local + planes[:, 3])


def _hull_witnesses(type_a, size_a, R_a, p_a, hull_b, R_b, p_b, normal, depth, x_a, x_b, scale):
  """The main contact's surface points (x_a, x_b) with x_b - x_a = depth n, for a pair whose
  B is a hull. The smoothed support points lie on their surfaces, but where a support set is
  a hull face the smoothing's weights cannot resolve which point of the face faces the other
  shape (a tau of 1e-8 R), so x_b - x_a leans off n. A's point carried along n onto B is used
  where it lands on B's surface (a vertex, edge or rim of A against B's face), else B's point
  carried back onto A where that lands on A (checked for a hull A; a primitive A's face), else
  (two hulls: an edge-edge contact) the closest points of their support edges, else the
  smoothed pair. `scale`: the pair's length for the tolerances."""
  dtype = normal.dtype
  tol = jnp.maximum(1e-9, 100 * jnp.finfo(dtype).eps) * scale
  carried_b = x_a + depth * normal
  carried_a = x_b - depth * normal
  a_onto_b = jnp.abs(_hull_residual(hull_b.planes, R_b, p_b, carried_b)) <= tol
  if ShapeType(type_a) == ShapeType.MESH:
    b_onto_a = jnp.abs(_hull_residual(size_a.planes, R_a, p_a, carried_a)) <= tol
    # Two hulls whose support sets are edges (or an edge and a vertex): the closest points of
    # the two support edges (their projections along n cross at the minimum overlap).
    # The smoothed normal of an edge-edge contact is off the edges' cross product by ~10x
    # the final smoothing, which tilts each support edge by as much.
    edge_tol = jnp.maximum(1e-5, 10 * overlap.final_eps(dtype)) * scale
    edge_a = _support_edge(size_a, R_a, p_a, -normal, edge_tol)
    edge_b = _support_edge(hull_b, R_b, p_b, normal, edge_tol)
    fallback_a, fallback_b = geometry.segment_segment(*edge_a, *edge_b)
  else:
    b_onto_a = jnp.ones((), bool)
    fallback_a, fallback_b = x_a, x_b
  new_a = jnp.where(a_onto_b, x_a, jnp.where(b_onto_a, carried_a, fallback_a))
  new_b = jnp.where(a_onto_b, carried_b, jnp.where(b_onto_a, x_b, fallback_b))
  return new_a, new_b


def _support_edge(hull, R, p, direction, tol):
  """The hull's two vertices farthest along the world `direction` as a segment (world), the
  second replaced by the first unless it is within `tol` of the support plane too."""
  world = shapes.hull_world_vertices(hull, R, p)
  height = jnp.where(hull.vertices[:, 3] > 0, world @ direction, -jnp.inf)
  order = jnp.argsort(-height)
  first, second = world[order[0]], world[order[1]]
  same_plane = height[order[0]] - height[order[1]] <= tol
  return first, jnp.where(same_plane, second, first)


def manifold(type_a, size_a, R_a, p_a, type_b, size_b, R_b, p_b, normal, depth, x_a, x_b,
             margin=0.0):
  """Contacts (position (9, 3), normal (9, 3), depth (9,), valid (9,)) around the main one.

  Slot 0 is the main contact (x_a, x_b: its exact points, depth its exact depth); slots 1-4
  are A's feature vertices carried onto B's feature, 5-8 B's vertices carried onto A's. Extra
  points are kept only where both features face each other, they land inside the other
  feature, penetrate (depth >= -margin) and are not within 1e-6 * size of an earlier point.
  """
  dtype = normal.dtype
  scale = overlap.shape_scale(type_a, size_a) + overlap.shape_scale(type_b, size_b)
  tol = 1e-9 * scale
  if ShapeType.MESH in (ShapeType(type_a), ShapeType(type_b)):
    x_a, x_b = _hull_witnesses(type_a, size_a, R_a, p_a, size_b, R_b, p_b, normal, depth,
                               x_a, x_b, scale)
  fa = support_feature(type_a, size_a, R_a, p_a, -normal)
  fb = support_feature(type_b, size_b, R_b, p_b, normal)
  facing = ((jnp.dot(fa["normal"], -normal) >= FACE_ALIGNMENT)
            & (jnp.dot(fb["normal"], normal) >= FACE_ALIGNMENT))
  # A's vertices x travel along +n onto B's feature: x_B = x + t n, depth t.
  t_a, land_b = _carry(fa["verts"], fb, normal, 1.0)
  ok_a = fa["vert_valid"] & jnp.stack([_contains(fb, q, tol) for q in land_b])
  pos_a = fa["verts"] + 0.5 * t_a[:, None] * normal
  # B's vertices y travel along -n onto A's feature: x_A = y - t n, depth t.
  t_b, land_a = _carry(fb["verts"], fa, normal, -1.0)
  ok_b = fb["vert_valid"] & jnp.stack([_contains(fa, q, tol) for q in land_a])
  pos_b = fb["verts"] - 0.5 * t_b[:, None] * normal
  # A line feature (a cylinder or cone lying on its side): the main contact's point on it goes
  # onto the line, which the smoothed support point only approaches to round-off (in float32
  # enough to bias a lying cylinder into rolling).
  def onto_line(x, f):
    across = f["axes"][1]
    return x - jnp.dot(x - f["center"], across) * across

  line_a = facing & (fa["kind"] == SEGMENT)
  line_b = facing & (fb["kind"] == SEGMENT)
  xa_line, xb_line = onto_line(x_a, fa), onto_line(x_b, fb)
  half = 0.5 * depth * normal
  main = jnp.where(line_a & line_b, 0.5 * (xa_line + xb_line),
                   jnp.where(line_a, xa_line + half,
                             jnp.where(line_b, xb_line - half, 0.5 * (x_a + x_b))))
  position = jnp.concatenate([main[None], pos_a, pos_b])
  depths = jnp.concatenate([depth[None], t_a, t_b])
  extra = jnp.concatenate([ok_a, ok_b]) & facing & (jnp.concatenate([t_a, t_b]) >= -margin)
  valid = jnp.concatenate([(depth >= -margin)[None], extra & (depth >= -margin)])
  # Drop an extra point that repeats an earlier one (the main point or a shared vertex).
  gap = jnp.sum((position[:, None, :] - position[None, :, :]) ** 2, axis=-1)
  earlier = jnp.tril(jnp.ones((9, 9), bool), k=-1)
  repeated = jnp.any(earlier & valid[None, :] & (gap <= (1e-6 * scale) ** 2), axis=1)
  valid = valid & ~repeated
  depths = jnp.where(valid, depths, jnp.minimum(depths, depth))
  return position, jnp.broadcast_to(normal, (9, 3)).astype(dtype), depths, valid

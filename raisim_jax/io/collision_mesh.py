"""Collision meshes as convex hulls (RaiSim's `convexifyCollisionMeshes`, MuJoCo's mesh geoms).

A collision mesh collides as the convex hull of its vertices, reduced to at most
`MAX_HULL_VERTICES` vertices so that the step's hull tables have a small static width. The
reduction keeps the vertices of the full hull that are farthest apart (farthest-point
sampling, started from the six axis extremes), so the reduced hull is an inner approximation
that keeps the mesh's extents along x, y and z exactly; its planes are those of the hull of
the kept vertices.

Host-side NumPy and trimesh (any format trimesh reads: STL, OBJ, DAE with pycollada, ...);
results in the mesh frame, in metres (a declared unit applied), scaled.
"""

import dataclasses
import functools
import os

import numpy as np

MAX_HULL_VERTICES = 64


@dataclasses.dataclass(frozen=True)
class ConvexHull:
  """A convex polytope in its shape frame.

  Attributes:
    vertices: (V, 3) its vertices, V <= MAX_HULL_VERTICES.
    planes: (F, 4) its face planes (n, c), outward unit n: the solid is n . x + c <= 0 for
      every row.
    triangles: (T, 3) int its boundary as triangles (rows of `vertices`; Qhull's
      triangulated facets, coplanar ones kept apart), T <= 2 V - 4: what exact closest
      points on the surface are computed from (`narrowphase.geometry.point_hull`).
  """
  vertices: np.ndarray
  planes: np.ndarray
  triangles: np.ndarray


def convex_hull(points, max_vertices=MAX_HULL_VERTICES) -> ConvexHull:
  """The convex hull of `points` (N, 3), reduced to at most `max_vertices` vertices.

  Raises:
    ValueError: fewer than 4 points, non-finite points, or points that span no volume (a
      flat or degenerate mesh).
  """
  from scipy.spatial import ConvexHull as QHull, QhullError

  points = np.asarray(points, np.float64).reshape(-1, 3)
  if points.shape[0] < 4 or not np.all(np.isfinite(points)):
    raise ValueError(f"a collision mesh needs at least 4 finite vertices, got "
                     f"{points.shape[0]}{'' if np.all(np.isfinite(points)) else ' (non-finite)'}")
  try:
    hull = QHull(points)
    vertices = points[hull.vertices]
    if vertices.shape[0] > max_vertices:
      vertices = vertices[_farthest_points(vertices, max_vertices)]
      hull = QHull(vertices)
      vertices = vertices[hull.vertices]
    hull = QHull(vertices)   # its simplices then index `vertices`
  except QhullError:
    raise ValueError("a collision mesh spans no volume (its vertices are coplanar or "
                     "collinear): it has no convex hull") from None
  planes = _unique_planes(hull.equations)
  return ConvexHull(vertices=vertices, planes=planes,
                    triangles=np.asarray(hull.simplices, np.int32))


def _farthest_points(points, count):
  """Indices of `count` points of `points` (N, 3): the six axis extremes, then repeatedly
  the point farthest from those chosen."""
  chosen = []
  for axis in range(3):
    for pick in (np.argmin, np.argmax):
      index = int(pick(points[:, axis]))
      if index not in chosen:
        chosen.append(index)
  distance = np.min(np.linalg.norm(points[:, None] - points[chosen][None], axis=-1), axis=1)
  while len(chosen) < count:
    index = int(np.argmax(distance))
    chosen.append(index)
    distance = np.minimum(distance, np.linalg.norm(points - points[index], axis=1))
  return np.asarray(chosen[:count])


def _unique_planes(equations):
  """Qhull's facet planes (one per triangle) with coplanar duplicates merged."""
  rounded = np.round(equations, 9)
  _, first = np.unique(rounded, axis=0, return_index=True)
  return equations[np.sort(first)]


def read_mesh(path):
  """(vertices (V, 3), faces (F, 3)) of a mesh file in metres: any format trimesh reads, as
  one mesh (several geometries concatenated); a unit the file declares (COLLADA's <unit>,
  e.g. inches) is applied, as Assimp and ROS apply it.

  Raises:
    ValueError naming the file: unreadable, or a unit that cannot be converted."""
  import trimesh

  try:
    mesh = trimesh.load(path, force="mesh", process=False)
  except Exception as error:  # noqa: BLE001 (trimesh raises many types for bad files)
    raise ValueError(f"cannot read mesh file '{path}': {error}") from None
  vertices = np.asarray(getattr(mesh, "vertices", np.zeros((0, 3))), np.float64)
  faces = np.asarray(getattr(mesh, "faces", np.zeros((0, 3))), np.int64)
  units = getattr(mesh, "units", None)
  if units:
    try:
      vertices = vertices * trimesh.units.unit_conversion(units, "meters")
    except ValueError as error:
      raise ValueError(f"mesh file '{path}' declares the unit {units!r}: {error}") from None
  return vertices, faces


def write_obj_parts(path, parts, group_prefix=None, comment=""):
  """Writes `parts` [(vertices (V, 3), faces (F, 3) indexing the part's own vertices)] as one
  OBJ file: with `group_prefix`, one group `<group_prefix><k>` per part; numbers in full
  precision (repr: a float64 read back is the same float64); `comment` as a first `#` line.
  Written to a temporary file and renamed, so a reader never sees a half-written file."""
  lines, base = ([f"# {comment}"] if comment else []), 1
  for k, (vertices, faces) in enumerate(parts):
    if group_prefix is not None:
      lines.append(f"g {group_prefix}{k}")
    lines += [f"v {x!r} {y!r} {z!r}" for x, y, z in np.asarray(vertices, np.float64).tolist()]
    lines += [f"f {a + base} {b + base} {c + base}"
              for a, b, c in np.asarray(faces, np.int64).tolist()]
    base += len(vertices)
  temporary = f"{path}.{os.getpid()}.tmp"
  with open(temporary, "w", encoding="utf-8") as f:
    f.write("\n".join(lines) + "\n")
  os.replace(temporary, path)


def read_obj_parts(path):
  """The parts of an OBJ file written by `write_obj_parts` with groups: [(vertices (V, 3),
  faces (F, 3))], one per group, faces indexing each part's own vertices. Raises ValueError
  naming the file and line of a malformed line."""
  parts, vertices, faces, base = [], [], [], 1
  group_base = 1
  with open(path, encoding="utf-8") as f:
    for number, line in enumerate(f, 1):
      fields = line.split()
      if not fields:
        continue
      try:
        if fields[0] == "g":
          if vertices:
            parts.append((vertices, faces))
          vertices, faces, group_base = [], [], base
        elif fields[0] == "v":
          vertices.append([float(v) for v in fields[1:4]])
          base += 1
        elif fields[0] == "f":
          faces.append([int(v.split("/")[0]) - group_base for v in fields[1:4]])
      except ValueError:
        raise ValueError(f"{path}, line {number}: malformed OBJ line {line.strip()!r}") from None
  if vertices:
    parts.append((vertices, faces))
  return [(np.asarray(v, np.float64).reshape(-1, 3), np.asarray(t, np.int64).reshape(-1, 3))
          for v, t in parts]


@functools.lru_cache(maxsize=256)
def _file_hull(path, scale, version):
  """The hull of a file (`version`: its modification time and size, so an edited file is
  read again)."""
  del version
  vertices, _ = read_mesh(path)
  if vertices.size == 0:
    raise ValueError(f"collision mesh file '{path}' holds no vertices")
  try:
    return convex_hull(vertices * np.asarray(scale))
  except ValueError as error:
    raise ValueError(f"collision mesh file '{path}': {error}") from None


def load_hull(path, scale=(1.0, 1.0, 1.0)) -> ConvexHull:
  """The convex hull of a mesh file, scaled per axis (cached per file, its modification
  time and size, and the scale).

  Raises:
    ValueError naming the file: missing, unreadable, empty, or flat."""
  if not os.path.isfile(path):
    raise ValueError(f"collision mesh file '{path}' not found")
  scale = tuple(float(s) for s in np.broadcast_to(np.asarray(scale, float), (3,)))
  path = os.path.abspath(path)
  status = os.stat(path)
  return _file_hull(path, scale, (status.st_mtime_ns, status.st_size))


def hull_tables(hulls, dtype=np.float64):
  """Padded tables of several hulls for the step.

  Returns:
    vertices (H, V, 4): xyz and 1 for a vertex; padding rows repeat vertex 0 with 0 (so
      maxima over the rows are unchanged);
    planes (H, F, 4): (n, c); padding rows (0, 0, 0, -1) hold for every point.
    triangles (H, T, 3) int32: rows of `vertices`; padding rows (0, 0, 0), vertex 0 as a
      point triangle (a surface point, so minima over the triangles are unchanged).
    With no hulls: (0, 1, 4), (0, 1, 4) and (0, 1, 3).
  """
  width = max([len(h.vertices) for h in hulls], default=1)
  faces = max([len(h.planes) for h in hulls], default=1)
  count = max([len(h.triangles) for h in hulls], default=1)
  vertices = np.zeros((len(hulls), width, 4), dtype)
  planes = np.zeros((len(hulls), faces, 4), dtype)
  planes[:, :, 3] = -1.0
  triangles = np.zeros((len(hulls), count, 3), np.int32)
  for k, hull in enumerate(hulls):
    n = len(hull.vertices)
    vertices[k, :, :3] = hull.vertices[0]
    vertices[k, :n, :3] = hull.vertices
    vertices[k, :n, 3] = 1.0
    planes[k, :len(hull.planes)] = hull.planes
    triangles[k, :len(hull.triangles)] = hull.triangles
  return vertices, planes, triangles

"""Convex decomposition of a mesh by CoACD (RaiSim's `MeshCollisionMode::CONVEXIFY`).

`decompose(path, scale, options)` returns the convex parts of a (uniformly scaled) mesh file,
each as (vertices (V, 3), faces (F, 3)) in the mesh frame, in metres. As RaiSim does, a
successful decomposition is cached in an OBJ file beside the source mesh, named
`raisim_coacd_<stem>_scale_<s>_threshold_<t>_maxhull_<m>_..._realmetric_<r>.obj` (every
option in the name, so other settings never reuse it), one OBJ group
`raisim_coacd_part_<k>` per part, numbers written in full precision so that a cached part
equals the generated one exactly. A cache older than its source mesh is recomputed. Where the
source's directory is not writable the decomposition is still returned, uncached.

Host-side NumPy; CoACD is the `coacd` package (the library RaiSim bundles).
"""

import dataclasses
import os
import re

import numpy as np

from raisim_jax.io import collision_mesh

CACHE_PREFIX = "raisim_coacd_"
PART_GROUP = "raisim_coacd_part_"


@dataclasses.dataclass(frozen=True)
class CoacdOptions:
  """RaiSim's CoacdOptions: CoACD's parameters (defaults are CoACD's own).

  Attributes:
    threshold: concavity threshold of a part (smaller: more, tighter parts), in (0, 1].
    maxConvexHull: at most this many parts after merging; -1: no limit.
    preprocessMode: "auto", "on" or "off" (manifold preprocessing of the input).
    preprocessResolution: voxel resolution of that preprocessing.
    sampleResolution: surface samples per part for the concavity metric.
    mctsNodes, mctsIteration, mctsMaxDepth: the Monte-Carlo tree search of the cutting planes.
    pca: align each part by PCA before cutting.
    merge: merge parts while the concavity stays under `threshold`.
    decimate, maxConvexHullVertex: reduce every part to at most this many vertices.
    extrude, extrudeMargin: extrude neighbouring parts by this margin (m).
    approximateMode: "ch" (convex hulls) or "box".
    seed: random seed (the decomposition is deterministic for a seed).
    realMetric: use the real (not the normalized) concavity metric.
  """
  threshold: float = 0.05
  maxConvexHull: int = -1
  preprocessMode: str = "auto"
  preprocessResolution: int = 50
  sampleResolution: int = 2000
  mctsNodes: int = 20
  mctsIteration: int = 150
  mctsMaxDepth: int = 3
  pca: bool = False
  merge: bool = True
  decimate: bool = False
  maxConvexHullVertex: int = 256
  extrude: bool = False
  extrudeMargin: float = 0.01
  approximateMode: str = "ch"
  seed: int = 0
  realMetric: bool = False

  def validated(self) -> "CoacdOptions":
    """Itself; raises ValueError naming the first field out of range."""
    if not 0 < float(self.threshold) <= 1:
      raise ValueError(f"CoacdOptions.threshold must be in (0, 1], got {self.threshold}")
    if int(self.maxConvexHull) == 0 or int(self.maxConvexHull) < -1:
      raise ValueError(f"CoacdOptions.maxConvexHull must be -1 (no limit) or >= 1, got "
                       f"{self.maxConvexHull}")
    for name in ("preprocessResolution", "sampleResolution", "mctsNodes", "mctsIteration",
                 "mctsMaxDepth", "maxConvexHullVertex"):
      if int(getattr(self, name)) < 1:
        raise ValueError(f"CoacdOptions.{name} must be >= 1, got {getattr(self, name)}")
    if self.preprocessMode not in ("auto", "on", "off"):
      raise ValueError(f"CoacdOptions.preprocessMode must be 'auto', 'on' or 'off', got "
                       f"{self.preprocessMode!r}")
    if self.approximateMode not in ("ch", "box"):
      raise ValueError(f"CoacdOptions.approximateMode must be 'ch' or 'box', got "
                       f"{self.approximateMode!r}")
    if not (np.isfinite(self.extrudeMargin) and self.extrudeMargin >= 0):
      raise ValueError(f"CoacdOptions.extrudeMargin must be finite and >= 0, got "
                       f"{self.extrudeMargin}")
    return self

  def coacd_arguments(self) -> dict:
    """The keyword arguments of `coacd.run_coacd`."""
    return dict(threshold=float(self.threshold), max_convex_hull=int(self.maxConvexHull),
                preprocess_mode=self.preprocessMode,
                preprocess_resolution=int(self.preprocessResolution),
                resolution=int(self.sampleResolution), mcts_nodes=int(self.mctsNodes),
                mcts_iterations=int(self.mctsIteration),
                mcts_max_depth=int(self.mctsMaxDepth), pca=bool(self.pca),
                merge=bool(self.merge), decimate=bool(self.decimate),
                max_ch_vertex=int(self.maxConvexHullVertex), extrude=bool(self.extrude),
                extrude_margin=float(self.extrudeMargin), apx_mode=self.approximateMode,
                seed=int(self.seed), real_metric=bool(self.realMetric))


_NAME_KEYS = (("scale", None), ("threshold", "threshold"), ("maxhull", "maxConvexHull"),
              ("prep", "preprocessMode"), ("prepres", "preprocessResolution"),
              ("res", "sampleResolution"), ("nodes", "mctsNodes"), ("iter", "mctsIteration"),
              ("depth", "mctsMaxDepth"), ("pca", "pca"), ("merge", "merge"),
              ("decimate", "decimate"), ("maxchv", "maxConvexHullVertex"),
              ("extrude", "extrude"), ("margin", "extrudeMargin"), ("apx", "approximateMode"),
              ("seed", "seed"), ("realmetric", "realMetric"))


def _name_value(value):
  if isinstance(value, bool):
    return str(int(value))
  if isinstance(value, float):
    return re.sub(r"[^0-9a-zA-Z-]", "_", repr(value).rstrip("0").rstrip(".") or "0")
  return re.sub(r"[^0-9a-zA-Z-]", "_", str(value))


def cache_path(path, scale: float, options: CoacdOptions) -> str:
  """The cache file of `path`'s decomposition at `scale` with `options`, beside `path`."""
  stem = os.path.splitext(os.path.basename(path))[0]
  fields = "_".join(
      f"{key}_{_name_value(float(scale) if name is None else getattr(options, name))}"
      for key, name in _NAME_KEYS)
  return os.path.join(os.path.dirname(os.path.abspath(path)),
                      f"{CACHE_PREFIX}{stem}_{fields}.obj")


def decompose(path, scale: float, options: CoacdOptions, mesh=None):
  """The convex parts [(vertices (V, 3), faces (F, 3))] of the mesh file `path` scaled by
  `scale`, mesh frame, metres: read from the cache file when it is newer than `path`, else
  computed by CoACD and cached. `mesh`: the file's (vertices, faces) where the caller has
  read it already (collision_mesh.read_mesh), so a cache miss does not read it again.

  Raises:
    ValueError naming the file: missing, unreadable, empty, or CoACD produced no part.
  """
  if not os.path.isfile(path):
    raise ValueError(f"mesh file '{path}' not found")
  options = options.validated()
  cache = cache_path(path, scale, options)
  if os.path.isfile(cache) and os.path.getmtime(cache) >= os.path.getmtime(path):
    parts = collision_mesh.read_obj_parts(cache)
    if parts:
      return parts
  vertices, faces = collision_mesh.read_mesh(path) if mesh is None else mesh
  if vertices.size == 0 or faces.size == 0:
    raise ValueError(f"mesh file '{path}' holds no triangles")
  import coacd

  coacd.set_log_level("error")
  try:
    result = coacd.run_coacd(coacd.Mesh(vertices * float(scale), faces),
                             **options.coacd_arguments())
  except Exception as error:  # noqa: BLE001 (CoACD raises RuntimeError and others)
    raise ValueError(f"CoACD could not decompose mesh file '{path}': {error}") from None
  parts = [(np.asarray(v, np.float64).reshape(-1, 3), np.asarray(f, np.int64).reshape(-1, 3))
           for v, f in result if len(v) >= 4]
  if not parts:
    raise ValueError(f"CoACD could not decompose mesh file '{path}': it produced no convex "
                     f"part")
  try:
    collision_mesh.write_obj_parts(cache, parts, group_prefix=PART_GROUP)
  except OSError:
    pass   # a read-only directory: the parts are still right, only not cached
  return parts

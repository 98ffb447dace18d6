"""Volume, centre of mass and rotational inertia of a closed triangle mesh (unit density).

The mesh's solid is split into tetrahedra, one per triangle, with a common apex; summing their
signed volumes and second moments integrates over the solid exactly when the surface is closed
and consistently oriented (the divergence theorem). Three of MuJoCo's `<mesh inertia=...>`
modes are reproduced, each a choice of mesh and of sign:

- "exact": the mesh itself, signed tetrahedra (exact for any closed, oriented surface);
- "convex": the convex hull of the vertices, signed tetrahedra;
- "legacy" (MuJoCo's default up to 4.0): the mesh itself with the absolute value of each
  tetrahedron's volume and the apex at the area-weighted centre of the surface. Equal to the
  exact value for convex meshes; counts some volume twice for non-convex ones, as MuJoCo does.

Shapes: vertices (V, 3) and faces (F, 3) integer indices; all results in the mesh frame.
"""

import numpy as np

MODES = ("legacy", "convex", "exact")


def mass_properties(vertices, faces, mode="legacy"):
  """(volume, com (3,), inertia (3, 3) about the com) of the solid bounded by the mesh, for
  density 1, in the mesh's frame.

  Raises:
    ValueError: an unknown mode, or a mesh that encloses no volume.
  """
  vertices = np.asarray(vertices, np.float64)
  faces = np.asarray(faces, np.int64)
  if mode not in MODES:
    raise ValueError(f"mesh inertia mode '{mode}' is not supported (one of {MODES})")
  if mode == "convex":
    import trimesh
    hull = trimesh.Trimesh(vertices, faces, process=False).convex_hull
    vertices, faces = np.asarray(hull.vertices), np.asarray(hull.faces)
  triangles = vertices[faces]                                           # (F, 3, 3)
  if mode == "legacy":
    edges = np.cross(triangles[:, 1] - triangles[:, 0], triangles[:, 2] - triangles[:, 0])
    area = np.linalg.norm(edges, axis=1) / 2
    if area.sum() <= 0:
      raise ValueError("mesh has no surface area")
    apex = (area[:, None] * triangles.mean(axis=1)).sum(axis=0) / area.sum()
  else:
    apex = triangles.reshape(-1, 3).mean(axis=0)   # any point works; a central one is exact
  corners = triangles - apex                                            # (F, 3, 3)
  volumes = np.einsum("ij,ij->i", corners[:, 0],
                      np.cross(corners[:, 1], corners[:, 2])) / 6
  if mode == "legacy":
    volumes = np.abs(volumes)
  volume = volumes.sum()
  if not volume > 0:
    raise ValueError(f"mesh encloses no volume (signed volume {volume:.3g}); is it closed and "
                     f"are its faces oriented outwards?")
  # Tetrahedron (apex at 0, corners a, b, c): centroid (a+b+c)/4 and second moment
  # ∫ x xᵀ dV = V/20 (a aᵀ + b bᵀ + c cᵀ + s sᵀ) with s = a + b + c.
  sums = corners.sum(axis=1)
  com_rel = (volumes[:, None] * sums).sum(axis=0) / 4 / volume
  second = (np.einsum("f,fki,fkj->ij", volumes, corners, corners)
            + np.einsum("f,fi,fj->ij", volumes, sums, sums)) / 20
  second_at_com = second - volume * np.outer(com_rel, com_rel)
  inertia = np.trace(second_at_com) * np.eye(3) - second_at_com
  return float(volume), apex + com_rel, inertia

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

Layout: one module per pair family, each declaring its functions in the one registry
(`registry.PAIRS`: (type_a, type_b) -> function and point count, via `registry.register`):
  sphere.py         sphere vs sphere/box/cylinder/cone/capsule/mesh (closed forms, closest
                    points; a mesh's from its hull's triangles and planes)
  halfspace.py      every shape on the ground (a convex mesh: its hull's vertices)
  box_box.py        box-box (separating axes, face clipping)
  overlap_pairs.py  box/cylinder/cone among themselves, and a convex mesh with anything but
                    the ground, a sphere and a capsule (minimum support overlap + manifold)
  capsule.py        capsule-capsule, box/cylinder/cone vs capsule, capsule vs mesh
  geometry.py       closest-point helpers they share; contact_points.py the output type.
"""

# The family modules register their pairs on import; all are imported here so that the
# registry is complete whichever part of the package is imported first.
from raisim_jax.collision.narrowphase import box_box, capsule, halfspace, overlap_pairs, sphere
from raisim_jax.collision.narrowphase.box_box import collide_box_box
from raisim_jax.collision.narrowphase.capsule import (collide_box_capsule,
                                                      collide_capsule_mesh,
                                                      collide_capsule_capsule,
                                                      collide_cone_capsule,
                                                      collide_cylinder_capsule)
from raisim_jax.types import ContactPoints
from raisim_jax.collision.narrowphase.halfspace import (collide_box_halfspace,
                                                        collide_capsule_halfspace,
                                                        collide_cone_halfspace,
                                                        collide_cylinder_halfspace,
                                                        collide_mesh_halfspace,
                                                        collide_sphere_halfspace,
                                                        plane_candidates)
from raisim_jax.collision.narrowphase.overlap_pairs import (collide_box_cone,
                                                            collide_box_cylinder,
                                                            collide_box_mesh,
                                                            collide_cone_cone,
                                                            collide_cone_mesh,
                                                            collide_cylinder_cone,
                                                            collide_cylinder_cylinder,
                                                            collide_cylinder_mesh,
                                                            collide_mesh_mesh)
from raisim_jax.collision.narrowphase.registry import PAIRS, PairEntry, collide, num_points, register
from raisim_jax.collision.narrowphase.sphere import (collide_sphere_box, collide_sphere_capsule,
                                                     collide_sphere_cone, collide_sphere_cylinder,
                                                     collide_sphere_mesh, collide_sphere_sphere)

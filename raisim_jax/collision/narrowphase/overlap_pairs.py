"""Box/cylinder/cone pairs, and every pair with a convex mesh but the ground, a sphere and a
capsule (`sphere.collide_sphere_mesh`, `capsule.collide_capsule_mesh`: closest points):
minimum support overlap (exact normal, depth and points, collision/overlap.py; a hull's edge-edge normal to
the smoothing's bound) and a support-feature manifold around it (rim points, corners,
side-line ends, a hull face's spanning vertices, collision/feature_manifold.py): 9 slots
(main + 4 + 4)."""

from raisim_jax.collision import feature_manifold as _features
from raisim_jax.collision import overlap as _overlap
from raisim_jax.types import ContactPoints
from raisim_jax.collision.narrowphase.registry import register
from raisim_jax.collision.shapes import ShapeType

B, CY, CO, ME = ShapeType.BOX, ShapeType.CYLINDER, ShapeType.CONE, ShapeType.MESH

#: Slots of `feature_manifold.manifold`: the main contact + 4 + 4 carried feature vertices.
POINTS = 9


def _convex(type_a, type_b):
  """Registers and returns the minimum-overlap pair function of (type_a, type_b)."""
  def fn(size_a, R_a, p_a, size_b, R_b, p_b, margin=0.0):
    n, depth, x_a, x_b = _overlap.minimum_overlap(type_a, size_a, R_a, p_a,
                                                  type_b, size_b, R_b, p_b)
    position, normal, depths, valid = _features.manifold(
        type_a, size_a, R_a, p_a, type_b, size_b, R_b, p_b, n, depth, x_a, x_b, margin)
    return ContactPoints(position, normal, depths, valid)
  fn.__name__ = fn.__qualname__ = (
      f"collide_{ShapeType(type_a).name.lower()}_{ShapeType(type_b).name.lower()}")
  fn.__doc__ = ("Exact minimum-overlap contact (collision/overlap.py) plus the support-feature "
                f"manifold (collision/feature_manifold.py): up to {POINTS} points.")
  return register(type_a, type_b, points=POINTS)(fn)


collide_box_cylinder = _convex(B, CY)
collide_box_cone = _convex(B, CO)
collide_cylinder_cylinder = _convex(CY, CY)
collide_cylinder_cone = _convex(CY, CO)
collide_cone_cone = _convex(CO, CO)
collide_box_mesh = _convex(B, ME)
collide_cylinder_mesh = _convex(CY, ME)
collide_cone_mesh = _convex(CO, ME)
collide_mesh_mesh = _convex(ME, ME)

"""Checks of the physical numbers in raw articulated-system records (URDF files and `Child`
trees), run before anything is merged or compiled.

The same rules as the API setters (`raisim_jax.validation`): masses, damping, friction, rotor
inertia, stiffness and the velocity / effort limits are finite and >= 0 (limits may be inf),
inertias are finite, symmetric and positive semi-definite, joint limits are not NaN and
lower <= upper, collision sizes are positive. A movable joint whose whole subtree carries no
mass, no inertia and no rotor inertia is rejected: its row of the joint-space mass matrix is
zero, so the step would divide by zero (RaiSim needs the link to have an `<inertial>`, or the
joint to be fixed so the link merges into its parent).

Each error names the source, the element, its line (URDF) and the offending value.
"""

import numpy as np

from raisim_jax import validation
from raisim_jax.types import (JOINT_FIXED, JOINT_FLOATING, JOINT_PRISMATIC, JOINT_REVOLUTE)


def _checked(ctx, what, line, check, value, name):
  """check(value, name) with a ValueError re-raised as ctx.error(what, line, ...)."""
  try:
    return check(value, name)
  except ValueError as error:
    raise ctx.error(what, line, str(error).replace("argument ", "")) from None


def check_link(ctx, link):
  """Mass, inertia and collision geometry of one LinkSpec."""
  what, line = f"link '{link.name}'", link.sourceline
  inertial = link.inertial
  _checked(ctx, what, line, validation.non_negative, inertial.mass, "<mass value>")
  inertia = _checked(ctx, what, line, validation.matrix3, inertial.inertia, "<inertia>")
  if np.abs(inertia - inertia.T).max() > 1e-9 * max(1.0, np.abs(inertia).max()):
    raise ctx.error(what, line, f"<inertia> is not symmetric: {inertia.tolist()}")
  eigenvalues = np.linalg.eigvalsh(inertia)
  # Real files (laikago) carry a zero inertia with positive mass: positive *semi*-definite
  # is accepted, a negative eigenvalue is not.
  if eigenvalues.min() < -1e-12 * max(1.0, np.abs(eigenvalues).max()):
    raise ctx.error(what, line, f"<inertia> is not positive semi-definite (eigenvalues "
                                f"{eigenvalues})")
  for geometry in link.collisions:
    check_collision_geometry(ctx, f"{what} <collision>", geometry.sourceline or line, geometry)


def check_collision_geometry(ctx, what, line, g):
  """Positive sizes of a collision primitive (meshes: a finite, non-zero scale)."""
  sizes = {"sphere": (("radius", g.radius),),
           "box": (("size", g.size),),
           "cylinder": (("radius", g.radius), ("length", g.length)),
           "capsule": (("radius", g.radius),),
           "mesh": (("scale", np.abs(np.asarray(g.scale, float))),)}.get(g.shape, ())
  for name, value in sizes:
    for v in np.atleast_1d(np.asarray(value, float)):
      _checked(ctx, f"{what} <{g.shape}>", line, validation.positive, float(v), name)
  if g.shape == "capsule":
    _checked(ctx, f"{what} <capsule>", line, validation.non_negative, g.length, "height")


def check_joint(ctx, joint):
  """Dynamics and limit numbers of one JointSpec."""
  what, line = f"joint '{joint.name}'", joint.sourceline
  for name in ("damping", "friction", "rotor_inertia", "stiffness"):
    _checked(ctx, what, line, validation.non_negative, getattr(joint, name),
             f"<dynamics {name}>")
  for name, attribute in (("velocity", "velocity_limit"), ("effort", "effort_limit")):
    value = float(getattr(joint, attribute))
    if np.isnan(value) or value < 0:
      raise ctx.error(what, line, f"<limit {name}> must be >= 0 (inf: none), got {value}")
  lower, upper = float(joint.lower), float(joint.upper)
  if np.isnan(lower) or np.isnan(upper):
    raise ctx.error(what, line, f"<limit> lower/upper must not be NaN, got {lower}, {upper}")
  if joint.type in (JOINT_REVOLUTE, JOINT_PRISMATIC) and lower > upper:
    raise ctx.error(what, line, f"<limit> lower {lower} is above upper {upper}")
  if joint.spring_mount is not None:
    _checked(ctx, what, line, lambda v, n: validation.vector(v, np.size(v), n),
             joint.spring_mount, "<dynamics spring_mount>")


def check_moving_bodies_have_inertia(ctx, bodies, joint_lines):
  """Every movable body's subtree must carry mass, inertia or rotor inertia.

  Args:
    bodies: merged BodyDescriptions (parents before children).
    joint_lines: {joint or link name: source line or None}.
  """
  carried = [b.mass + float(np.trace(b.inertia)) for b in bodies]
  for index in range(len(bodies) - 1, -1, -1):
    parent = bodies[index].parent
    if parent >= 0:
      carried[parent] += carried[index]
  for body, subtree in zip(bodies, carried):
    if body.joint_type == JOINT_FIXED or subtree > 0 or body.rotor_inertia > 0:
      continue
    if body.parent < 0 and body.joint_type == JOINT_FLOATING:
      raise ctx.error(
          f"link '{body.name}'", joint_lines.get(body.name),
          "the floating base and everything it carries have no mass and no inertia, so it "
          "cannot move: give the link an <inertial>, or attach it to a root link named "
          "'world' for a fixed base")
    raise ctx.error(
        f"joint '{body.joint_name}'", joint_lines.get(body.joint_name),
        f"moves link '{body.name}', but that link and everything it carries have no mass, no "
        f"inertia and no rotor inertia (the joint-space mass matrix would be singular): give "
        f"the link an <inertial> or make the joint fixed")


def check_joints_have_inertia_along_their_motion(ctx, bodies, joint_lines):
  """Every revolute joint must move some inertia about its axis, every prismatic joint some
  mass along it (its subtree at the zero configuration, or its rotor inertia): otherwise the
  joint-space mass matrix has a zero on its diagonal, and the first step divides by it. (A
  thin rod spinning about its own axis: mass on the axis, izz = 0.) Run after
  `check_moving_bodies_have_inertia`, which names a joint that moves nothing at all.

  Args:
    bodies: merged BodyDescriptions (parents before children).
    joint_lines: {joint or link name: source line or None}.
  """
  rotations, origins = [], []
  for body in bodies:
    parent_rotation = rotations[body.parent] if body.parent >= 0 else np.eye(3)
    parent_origin = origins[body.parent] if body.parent >= 0 else np.zeros(3)
    rotations.append(parent_rotation @ np.asarray(body.joint_rot, float))
    origins.append(parent_origin + parent_rotation @ np.asarray(body.joint_pos, float))
  subtrees = [[index] for index in range(len(bodies))]
  for index in range(len(bodies) - 1, -1, -1):
    if bodies[index].parent >= 0:
      subtrees[bodies[index].parent] += subtrees[index]
  for index, body in enumerate(bodies):
    if body.joint_type not in (JOINT_REVOLUTE, JOINT_PRISMATIC) or body.rotor_inertia > 0:
      continue
    axis = rotations[index] @ np.asarray(body.axis, float)
    moved, scale = 0.0, 0.0
    for j in subtrees[index]:
      mass, rotation = float(bodies[j].mass), rotations[j]
      inertia = rotation @ np.asarray(bodies[j].inertia, float) @ rotation.T
      arm = origins[j] + rotation @ np.asarray(bodies[j].com, float) - origins[index]
      scale += mass * (1.0 + arm @ arm) + float(np.trace(inertia))
      if body.joint_type == JOINT_PRISMATIC:
        moved += mass
      else:
        moved += axis @ inertia @ axis + mass * float(np.sum(np.cross(axis, arm) ** 2))
    if scale > 0 and moved <= 1e-12 * scale:
      kind = ("inertia about its axis" if body.joint_type == JOINT_REVOLUTE
              else "mass along its axis")
      raise ctx.error(
          f"joint '{body.joint_name}'", joint_lines.get(body.joint_name),
          f"moves link '{body.name}', but that link and everything it carries have no "
          f"{kind} (the joint-space mass matrix would be singular): give the link "
          f"inertia about the joint axis (an <inertia> diagonal), a <dynamics "
          f"rotor_inertia>, or make the joint fixed")

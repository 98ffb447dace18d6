"""Checks of the physical numbers in raw articulated-system records (URDF files and `Child`
trees), run before anything is merged or compiled.

The same rules as the API setters (`raisim_jax.validation`): masses, damping, friction, rotor
inertia, stiffness and the velocity / effort limits are finite and >= 0 (limits may be inf),
inertias are finite, symmetric and positive semi-definite, joint limits are not NaN and
lower <= upper, collision sizes are positive. A movable joint whose whole subtree carries no
mass, no inertia and no rotor inertia is rejected: its row of the joint-space mass matrix is
zero, so the step would divide by zero (RaiSim needs the link to have an `<inertial>`, or the
joint to be fixed so the link merges into its parent). So is any model whose joint-space mass
matrix is singular on its undamped dofs at the zero configuration and at a random one (a joint
moving no inertia about its axis, or a floating base of mass 0 sliding along with a prismatic
child), naming the joints involved; singular at zero only, it warns.

Each error names the source, the element, its line (URDF) and the offending value.
"""

import warnings

import numpy as np

from raisim_jax import validation
from raisim_jax.io.articulated_description import axis_angle_matrix
from raisim_jax.types import (JOINT_FIXED, JOINT_FLOATING, JOINT_PRISMATIC, JOINT_REVOLUTE,
                               JOINT_SPHERICAL)


def _checked(ctx, what, line, check, value, name):
  """check(value, name) with a ValueError re-raised as ctx.error(what, line, ...)."""
  try:
    return check(value, name)
  except ValueError as error:
    raise ctx.error(what, line, str(error).replace("argument ", "")) from None


def _semi_definite(inertia) -> bool:
  """Whether a symmetric 3x3 inertia is positive semi-definite up to rounding. Real files
  (laikago) carry a zero inertia with positive mass: semi-definite is accepted."""
  eigenvalues = np.linalg.eigvalsh(inertia)
  return eigenvalues.min() >= -1e-12 * max(1.0, np.abs(eigenvalues).max())


def check_link(ctx, link):
  """Mass, inertia and collision geometry of one LinkSpec. Returns the error of an inertia
  that is not positive semi-definite instead of raising it (None where it is): such a link
  may be a placeholder that merges into a body whose inertia is (`check_merged_inertias`)."""
  what, line = f"link '{link.name}'", link.sourceline
  inertial = link.inertial
  _checked(ctx, what, line, validation.non_negative, inertial.mass, "<mass value>")
  inertia = _checked(ctx, what, line, validation.matrix3, inertial.inertia, "<inertia>")
  if np.abs(inertia - inertia.T).max() > 1e-9 * max(1.0, np.abs(inertia).max()):
    raise ctx.error(what, line, f"<inertia> is not symmetric: {inertia.tolist()}")
  for geometry in link.collisions:
    check_collision_geometry(ctx, f"{what} <collision>", geometry.sourceline or line, geometry)
  if not _semi_definite(inertia):
    return ctx.error(what, line, f"<inertia> is not positive semi-definite (eigenvalues "
                                 f"{np.linalg.eigvalsh(inertia)})")
  return None


def check_merged_inertias(ctx, bodies, link_errors):
  """Raises the error of a link whose inertia is not positive semi-definite
  (`check_link`'s `link_errors`, {link name: ValueError}) where the body it belongs to after
  merging through fixed joints is not either; where that body is (a 1 mg placeholder link
  with rounded inertia numbers fixed to a robot's base: TIAGo's antennas in
  example-robot-data), warns instead and uses the file's numbers."""
  for body in bodies:
    for link in body.links:
      if link not in link_errors:
        continue
      if not _semi_definite(np.asarray(body.inertia, float)):
        raise link_errors[link]
      warnings.warn(f"{link_errors[link]}; it is fixed to body '{body.name}', whose merged "
                    f"inertia is, so the file's numbers are used as given", stacklevel=4)


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


def _body_frames(bodies, displacement=None):
  """(rotations, origins, joint frames) in the root frame: each body frame, and each body's
  joint frame before the joint's motion, with each revolute / prismatic joint at
  `displacement[k]` and each spherical one turned by it about a fixed oblique axis (None:
  the zero configuration; a floating base stays at the origin)."""
  rotations, origins, joint_frames = [], [], []
  for k, body in enumerate(bodies):
    parent_rotation = rotations[body.parent] if body.parent >= 0 else np.eye(3)
    parent_origin = origins[body.parent] if body.parent >= 0 else np.zeros(3)
    joint_rot = np.asarray(body.joint_rot, float)
    joint_pos = np.asarray(body.joint_pos, float)
    joint_frames.append(parent_rotation @ joint_rot)
    q = 0.0 if displacement is None else float(displacement[k])
    if body.joint_type == JOINT_REVOLUTE:
      joint_rot = joint_rot @ axis_angle_matrix(body.axis, q)
    elif body.joint_type == JOINT_SPHERICAL:
      joint_rot = joint_rot @ axis_angle_matrix((1.0, 2.0, 3.0), q)
    elif body.joint_type == JOINT_PRISMATIC:
      joint_pos = joint_pos + joint_rot @ np.asarray(body.axis, float) * q
    rotations.append(parent_rotation @ joint_rot)
    origins.append(parent_origin + parent_rotation @ joint_pos)
  return rotations, origins, joint_frames


def _motion_columns(body, rotation, joint_frame):
  """(k, 3) angular and (k, 3) linear directions (of the body frame's origin) of the k
  generalized velocities of `body`'s joint, in the root frame, as the engine defines them
  (a spherical joint's angular velocity in the parent-side joint frame `joint_frame`);
  `rotation` is the body frame's."""
  if body.joint_type == JOINT_FIXED:    # a fixed base (the only fixed joint left after merging)
    return np.zeros((0, 3)), np.zeros((0, 3))
  if body.joint_type == JOINT_FLOATING:
    return np.vstack([np.zeros((3, 3)), np.eye(3)]), np.vstack([np.eye(3), np.zeros((3, 3))])
  if body.joint_type == JOINT_SPHERICAL:
    return joint_frame.T, np.zeros((3, 3))
  axis = (rotation @ np.asarray(body.axis, float))[None]
  if body.joint_type == JOINT_PRISMATIC:
    return np.zeros((1, 3)), axis
  return axis, np.zeros((1, 3))


def joint_space_mass_matrix(bodies, displacement=None):
  """(nv, nv) joint-space mass matrix of merged BodyDescriptions at the zero configuration,
  or with the revolute / prismatic joints at `displacement` (one value per body), rotor
  inertia on the diagonal; and (nv,) the body of each generalized velocity. Host float64, for
  the checks below: sum over bodies of m J_v^T J_v + J_w^T I J_w, with J the body's COM
  velocity and angular velocity Jacobians."""
  rotations, origins, joint_frames = _body_frames(bodies, displacement)
  columns = [_motion_columns(b, r, f) for b, r, f in zip(bodies, rotations, joint_frames)]
  owner = np.concatenate([np.full(len(c[0]), k, int) for k, c in enumerate(columns)])
  first = np.concatenate([[0], np.cumsum([len(c[0]) for c in columns])])
  mass_matrix = np.diag([float(bodies[k].rotor_inertia) for k in owner])
  for j, body in enumerate(bodies):
    com = origins[j] + rotations[j] @ np.asarray(body.com, float)
    inertia = rotations[j] @ np.asarray(body.inertia, float) @ rotations[j].T
    jac_v, jac_w = np.zeros((3, len(owner))), np.zeros((3, len(owner)))
    k = j
    while k >= 0:
      angular, linear = columns[k]
      span = slice(first[k], first[k + 1])
      jac_w[:, span] = angular.T
      jac_v[:, span] = linear.T + np.cross(angular, com - origins[k]).T
      k = bodies[k].parent
    if not (jac_v.any() or jac_w.any()):
      continue   # rigidly fixed to the world (its mass may be infinite: a static MJCF body)
    mass_matrix += float(body.mass) * jac_v.T @ jac_v + jac_w.T @ inertia @ jac_w
  return mass_matrix, owner


# Singular: the smallest eigenvalue of M scaled to a unit diagonal (D^-1/2 M D^-1/2, so a
# tiny link on its own joint is not small, only joints whose motions cancel are) at most
# this. Every real robot file seen (pybullet_data, Gymnasium, example-robot-data, rsc) is
# above 1e-4 at its zero configuration except iCub, whose neck roll and yaw line up there
# (4e-15; 1.6e-5 - 1.5e-4 at random neck angles), and whose damped neck joints keep M_eff
# regular anyway.
SINGULAR = 1e-8


def _singular_direction(mass_matrix):
  """A unit direction of generalized velocity that moves (almost) no mass or inertia, or
  None where M is positive definite: a dof with no diagonal entry, else the eigenvector of
  the smallest eigenvalue of M scaled to a unit diagonal where that is at most SINGULAR."""
  diagonal = np.diag(mass_matrix)
  scale = max(float(np.abs(diagonal).max()), 1e-300)
  empty = diagonal <= 1e-12 * scale
  if empty.any():
    return np.eye(len(diagonal))[int(np.argmax(empty))]
  inverse_root = 1.0 / np.sqrt(diagonal)
  eigenvalues, vectors = np.linalg.eigh(mass_matrix * np.outer(inverse_root, inverse_root))
  if eigenvalues[0] > SINGULAR:
    return None
  direction = inverse_root * vectors[:, 0]
  return direction / np.linalg.norm(direction)


def _singular_motion_error(bodies, owner, direction, joint_lines):
  """((element, line), message) naming the joints of a singular `direction` of M."""
  share = np.bincount(owner, weights=direction ** 2, minlength=len(bodies))
  involved = [k for k in np.argsort(-share) if share[k] > 1e-3]
  if len(involved) == 1 or share[involved[0]] > 0.999:
    body = bodies[involved[0]]
    if body.joint_type == JOINT_FLOATING:
      kind = "no mass" if body.mass <= 0 else "no inertia about some axis"
      return ((f"link '{body.name}'", joint_lines.get(body.name)),
              f"the floating base has {kind} (the joint-space mass matrix would be singular): "
              f"give it an <inertial> with mass and inertia, or attach it to a root link named "
              f"'world' for a fixed base")
    kind = {JOINT_REVOLUTE: "inertia about its axis", JOINT_PRISMATIC: "mass along its axis",
            JOINT_SPHERICAL: "inertia about some axis"}[body.joint_type]
    return ((f"joint '{body.joint_name}'", joint_lines.get(body.joint_name)),
            f"moves link '{body.name}', but that link and everything it carries have no "
            f"{kind} (the joint-space mass matrix would be singular): give the link inertia "
            f"about the joint axis (an <inertia> diagonal), a <dynamics rotor_inertia>, or "
            f"make the joint fixed")
  label = lambda b: ("the floating base" if b.joint_type == JOINT_FLOATING
                     else f"joint '{b.joint_name}'")
  names = " and ".join(label(bodies[k]) for k in sorted(involved))
  first = bodies[min(involved)]
  hint = ""
  if first.joint_type == JOINT_FLOATING and first.mass <= 0:
    hint = (f": the floating base link '{first.name}' has no mass; give it an <inertial> "
            f"mass, or attach it to a root link named 'world' for a fixed base (Bullet fixes a "
            f"base of mass 0; RaiSim does not)")
  where = ((f"link '{first.name}'", joint_lines.get(first.name))
           if first.joint_type == JOINT_FLOATING
           else (f"joint '{first.joint_name}'", joint_lines.get(first.joint_name)))
  return where, (f"{names} together can move without moving any mass or inertia (the "
                 f"joint-space mass matrix would be singular){hint}")


def check_mass_matrix_is_regular(ctx, bodies, joint_lines):
  """The joint-space mass matrix must be positive definite: otherwise some motion of the
  joints moves no mass and no inertia, and a step divides by zero (NaN). Checked at the zero
  configuration, where a robot starts; names the joint(s) of that motion: a revolute joint
  with no inertia about its axis (a thin rod spinning about itself), a prismatic one with no
  mass along it, or several joints together (a floating base of mass 0 carried along a
  prismatic joint: the base and the slider move the same mass). Refused where M is singular
  (SINGULAR) at a random configuration of the revolute and prismatic joints too (the model,
  not the pose); where it is regular there, a warning says so, as a step from the zero
  configuration diverges. Only the undamped dofs are checked: joint damping keeps the step's
  M_eff regular on its dofs. Run after
  `check_moving_bodies_have_inertia`, which names a joint that moves nothing at all.

  Args:
    bodies: merged BodyDescriptions (parents before children).
    joint_lines: {joint or link name: source line or None}.
  """
  if not bodies:
    return
  mass_matrix, owner = joint_space_mass_matrix(bodies)
  # Joint damping d enters the step's M_eff = M + dt diag(d) (articulated_integrate), which
  # is regular for every dt > 0 exactly where M on the undamped dofs is (M is semi-definite):
  # only those are checked (iCub's damped neck passes).
  undamped = np.asarray([not float(bodies[k].damping) > 0 for k in owner], bool)
  if not undamped.any():
    return
  owner = owner[undamped]
  on_undamped = lambda m: m[np.ix_(undamped, undamped)]
  direction = _singular_direction(on_undamped(mass_matrix))
  if direction is None:
    return
  (what, line), message = _singular_motion_error(bodies, owner, direction, joint_lines)
  displacement = np.random.default_rng(0).uniform(-1.0, 1.0, len(bodies))
  if _singular_direction(on_undamped(joint_space_mass_matrix(bodies, displacement)[0])) \
      is not None:
    raise ctx.error(what, line, message)
  warnings.warn(f"{ctx.error(what, line, message)} at the zero configuration, and regular "
                f"elsewhere: set a configuration away from it before the first step (a step "
                f"from it diverges)", stacklevel=4)

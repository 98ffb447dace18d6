"""Dense Jacobians (world frame) of points, bodies and frames, and their time derivatives.

For a point r (world) on body i: v_r = J u with J[:, a] = S_a,lin + S_a,ang x r for every dof a
supporting body i (zero elsewhere); the rotational Jacobian is S_a,ang. d/dt J follows from
Sdot (kinematics) and r_dot. Shapes: (3, nv). `body` / `frame` may be ints or traced ints.
"""

import jax.numpy as jnp

from raisim_jax.dynamics import kinematics as kin_lib
from raisim_jax.dynamics import tree as tree_lib


def _support_row(model, body):
  support = jnp.asarray(tree_lib.dof_support(model.parent, model.dof_body), model.dtype)
  return support[body]                                              # (nv,)


def point_jacobian(model, kin, body, point_world):
  """Positional Jacobian (3, nv) of a world point rigidly attached to `body` (getDenseJacobian)."""
  s = kin.motion_subspace
  cols = s[:, :3] + jnp.cross(s[:, 3:], point_world[None, :])
  return (cols * _support_row(model, body)[:, None]).T


def rotational_jacobian(model, kin, body):
  """Rotational Jacobian (3, nv): angular velocity of `body` = J u (world frame)."""
  return (kin.motion_subspace[:, 3:] * _support_row(model, body)[:, None]).T


def point_jacobian_dot(model, kin, body, point_world):
  """d/dt of `point_jacobian` (3, nv) for a point moving with `body`:
  a_point = Jdot u + J du/dt (getTimeDerivativeOfSparseJacobian)."""
  s, sd = kin.motion_subspace, kin.motion_subspace_dot
  r_dot = kin.body_velocity[body, :3] + jnp.cross(kin.body_velocity[body, 3:], point_world)
  cols = sd[:, :3] + jnp.cross(sd[:, 3:], point_world[None, :]) + jnp.cross(s[:, 3:], r_dot[None])
  return (cols * _support_row(model, body)[:, None]).T


def rotational_jacobian_dot(model, kin, body):
  """d/dt of `rotational_jacobian` (3, nv)."""
  return (kin.motion_subspace_dot[:, 3:] * _support_row(model, body)[:, None]).T


def frame_jacobian(model, kin, frame):
  """Positional Jacobian (3, nv) of frame `frame`'s origin (getDenseFrameJacobian)."""
  body = jnp.asarray(model.frame_body)[frame]
  pos, _ = kin_lib.frame_poses(model, kin)
  return point_jacobian(model, kin, body, pos[frame])


def frame_rotational_jacobian(model, kin, frame):
  """Rotational Jacobian (3, nv) of frame `frame` (getDenseFrameRotationalJacobian)."""
  return rotational_jacobian(model, kin, jnp.asarray(model.frame_body)[frame])


def frame_jacobian_dot(model, kin, frame):
  """d/dt of `frame_jacobian` (3, nv)."""
  body = jnp.asarray(model.frame_body)[frame]
  pos, _ = kin_lib.frame_poses(model, kin)
  return point_jacobian_dot(model, kin, body, pos[frame])

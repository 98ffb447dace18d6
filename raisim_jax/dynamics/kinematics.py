"""Forward kinematics of an `ArticulatedModel` (pure, jit/vmap/grad compatible).

Frames: every output is in the WORLD frame. A body's frame is its parent joint frame after the
joint transformation (RaiSim's body pose). Spatial vectors are [linear; angular] about the
world origin (see `raisim_jax.math.spatial`).

Poses are propagated level by level (all bodies of one tree depth at once); everything else
(motion subspaces, velocities, subtree sums) is one vectorised expression over bodies/dofs
using static ancestor masks.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from raisim_jax.dynamics import tree as tree_lib
from raisim_jax.types import (JOINT_FIXED, JOINT_FLOATING, JOINT_PRISMATIC,
                                      JOINT_REVOLUTE, JOINT_SPHERICAL, ArticulatedModel)
from raisim_jax.math import dense, quaternion, safe, spatial
from raisim_jax.math.rotation import rotate_inertia, skew
from raisim_jax.struct import dataclass


@dataclass
class Kinematics:
  """Forward-kinematics results (B bodies, nv dofs), all in the world frame.

  body_pos (B, 3), body_rot (B, 3, 3): body frame pose (body -> world).
  joint_frame_rot (B, 3, 3): joint frame orientation before the joint motion.
  motion_subspace (nv, 6): column a of the spatial Jacobian, [lin; ang] about the world
    origin: body i's spatial velocity is sum over supporting dofs of S_a u_a.
  motion_subspace_dot (nv, 6): time derivative of motion_subspace.
  body_velocity (B, 6): spatial velocity [v_O; w] about the world origin.
  body_lin_vel (B, 3): velocity of the body frame origin; body_ang_vel (B, 3).
  com_pos (B, 3): body COM in the world frame.
  spatial_inertia (B, 6, 6): about the world origin.
  """
  body_pos: jnp.ndarray
  body_rot: jnp.ndarray
  joint_frame_rot: jnp.ndarray
  motion_subspace: jnp.ndarray
  motion_subspace_dot: jnp.ndarray
  body_velocity: jnp.ndarray
  body_lin_vel: jnp.ndarray
  body_ang_vel: jnp.ndarray
  com_pos: jnp.ndarray
  spatial_inertia: jnp.ndarray


def _axis_angle_matrix(axis, angle):
  """Rodrigues rotation (n, 3, 3) about unit axes (n, 3) by angles (n,)."""
  k = skew(axis)
  s, c = jnp.sin(angle)[:, None, None], jnp.cos(angle)[:, None, None]
  return jnp.eye(3, dtype=axis.dtype) + s * k + (1 - c) * (k @ k)


def joint_transforms(model: ArticulatedModel, gc, bodies):
  """Joint motion (R_q (n, 3, 3), t_q (n, 3)) in the joint frame for static body indices."""
  dtype = model.dtype
  n = len(bodies)
  rot = jnp.broadcast_to(jnp.eye(3, dtype=dtype), (n, 3, 3))
  trans = jnp.zeros((n, 3), dtype)
  for jt in set(model.joint_type[i] for i in bodies):
    rows = np.asarray([r for r, i in enumerate(bodies) if model.joint_type[i] == jt])
    idx = np.asarray([bodies[r] for r in rows])
    offs = np.asarray([model.gc_offset[i] for i in idx])
    if jt == JOINT_REVOLUTE:
      r = _axis_angle_matrix(model.joint_axis[idx], gc[offs])
      rot = rot.at[rows].set(r)
    elif jt == JOINT_PRISMATIC:
      trans = trans.at[rows].set(model.joint_axis[idx] * gc[offs][:, None])
    elif jt == JOINT_SPHERICAL:
      q = gc[offs[:, None] + np.arange(4)]
      rot = rot.at[rows].set(quaternion.to_matrix(safe.normalize(q)))
    elif jt == JOINT_FLOATING:
      q = gc[offs[:, None] + np.arange(3, 7)]
      rot = rot.at[rows].set(quaternion.to_matrix(safe.normalize(q)))
      trans = trans.at[rows].set(gc[offs[:, None] + np.arange(3)])
  return rot, trans


def body_poses(model: ArticulatedModel, gc):
  """World poses, level by level: (body_pos (B, 3), body_rot (B, 3, 3), joint_frame_rot)."""
  dtype = model.dtype
  nb = model.num_bodies
  pos = jnp.zeros((nb, 3), dtype)
  rot = jnp.zeros((nb, 3, 3), dtype)
  jrot_w = jnp.zeros((nb, 3, 3), dtype)
  for level in model.levels:
    idx = np.asarray(level)
    par = np.asarray([model.parent[i] for i in level])
    r_q, t_q = joint_transforms(model, gc, level)
    if par[0] < 0:  # root level (a single root)
      p_rot = jnp.broadcast_to(jnp.eye(3, dtype=dtype), (len(level), 3, 3))
      p_pos = jnp.zeros((len(level), 3), dtype)
    else:
      p_rot, p_pos = rot[par], pos[par]
    # Unrolled 3 x 3 products: XLA:CPU's dots of batches of them were ~4% of the standing
    # quadruped's batched step (dense.unrolled_matmul).
    jf_rot = dense.unrolled_matmul(p_rot, model.joint_rot[idx])
    jf_pos = p_pos + dense.unrolled_matvec(p_rot, model.joint_pos[idx])
    rot = rot.at[idx].set(dense.unrolled_matmul(jf_rot, r_q))
    pos = pos.at[idx].set(jf_pos + dense.unrolled_matvec(jf_rot, t_q))
    jrot_w = jrot_w.at[idx].set(jf_rot)
  return pos, rot, jrot_w


def motion_subspace(model: ArticulatedModel, body_pos, joint_frame_rot):
  """S (nv, 6): spatial velocity [lin; ang] about the world origin per unit dof velocity.

  revolute: [p x a; a]; prismatic: [a; 0]; spherical: columns of the joint (parent) frame
  rotated about the joint origin; floating: [I; 0] (linear, world) and [p x e_k; e_k]
  (angular, world) with p the base position.
  """
  dtype = model.dtype
  nv = model.num_gv
  s = jnp.zeros((nv, 6), dtype)
  eye = jnp.eye(3, dtype=dtype)
  for jt in set(model.joint_type):
    idx = np.asarray([i for i in range(model.num_bodies) if model.joint_type[i] == jt])
    if jt == JOINT_FIXED:
      continue
    offs = np.asarray([model.gv_offset[i] for i in idx])
    p = body_pos[idx]
    if jt in (JOINT_REVOLUTE, JOINT_PRISMATIC):
      a = jnp.einsum("nij,nj->ni", joint_frame_rot[idx], model.joint_axis[idx])
      if jt == JOINT_REVOLUTE:
        cols = jnp.concatenate([jnp.cross(p, a), a], axis=-1)
      else:
        cols = jnp.concatenate([a, jnp.zeros_like(a)], axis=-1)
      s = s.at[offs].set(cols)
    elif jt == JOINT_SPHERICAL:
      axes = jnp.swapaxes(joint_frame_rot[idx], -1, -2)  # (n, k, 3): column k of R
      cols = jnp.concatenate([jnp.cross(p[:, None, :], axes), axes], axis=-1)
      s = s.at[offs[:, None] + np.arange(3)].set(cols)
    elif jt == JOINT_FLOATING:
      n = len(idx)
      lin = jnp.concatenate([jnp.broadcast_to(eye, (n, 3, 3)), jnp.zeros((n, 3, 3), dtype)], -1)
      e = jnp.broadcast_to(eye, (n, 3, 3))
      ang = jnp.concatenate([jnp.cross(p[:, None, :], e), e], axis=-1)
      s = s.at[offs[:, None] + np.arange(3)].set(lin)
      s = s.at[offs[:, None] + np.arange(3, 6)].set(ang)
  return s


def forward_kinematics(model: ArticulatedModel, gc, gv=None) -> Kinematics:
  """Poses, velocities, motion subspaces and spatial inertias of all bodies (world frame).

  gc: (nq,) generalized coordinates; gv: (nv,) generalized velocities (zeros if None).
  """
  dtype = model.dtype
  gc = jnp.asarray(gc, dtype)
  gv = jnp.zeros(model.num_gv, dtype) if gv is None else jnp.asarray(gv, dtype)
  pos, rot, jrot = body_poses(model, gc)
  s = motion_subspace(model, pos, jrot)
  support = jnp.asarray(tree_lib.dof_support(model.parent, model.dof_body), dtype)  # (B, nv)
  vel = support @ (s * gv[:, None])                                                    # (B, 6)
  # Velocity of the frame in which each joint's S is fixed (parent body; [u_lin; 0] for the
  # floating root whose angular columns ride on the moving base position).
  dof_body = np.asarray(model.dof_body, dtype=int)
  parent_vel = jnp.zeros((model.num_bodies, 6), dtype)
  nonroot = np.asarray([i for i in range(model.num_bodies) if model.parent[i] >= 0])
  if nonroot.size:
    parent_vel = parent_vel.at[nonroot].set(vel[np.asarray(model.parent)[nonroot]])
  if model.joint_type[0] == JOINT_FLOATING:
    o = model.gv_offset[0]
    parent_vel = parent_vel.at[0, :3].set(gv[o:o + 3])
  s_dot = spatial.motion_cross(parent_vel[dof_body], s) if model.num_gv else s
  com = pos + dense.unrolled_matvec(rot, model.com)
  inertia_w = rotate_inertia(rot, model.inertia)
  return Kinematics(
      body_pos=pos, body_rot=rot, joint_frame_rot=jrot, motion_subspace=s,
      motion_subspace_dot=s_dot, body_velocity=vel,
      body_lin_vel=spatial.point_velocity(vel, pos), body_ang_vel=vel[:, 3:],
      com_pos=com, spatial_inertia=spatial.inertia_matrix(model.mass, com, inertia_w))


def frame_poses(model: ArticulatedModel, kin: Kinematics):
  """Frame positions (F, 3) and orientations (F, 3, 3), world frame."""
  fb = np.asarray(model.frame_body, dtype=int)
  rot = kin.body_rot[fb]
  return (kin.body_pos[fb] + jnp.einsum("fij,fj->fi", rot, model.frame_pos),
          rot @ model.frame_rot)


def frame_velocities(model: ArticulatedModel, kin: Kinematics):
  """Frame linear velocities (F, 3) and angular velocities (F, 3), world frame."""
  fb = np.asarray(model.frame_body, dtype=int)
  pos, _ = frame_poses(model, kin)
  v = kin.body_velocity[fb]
  return spatial.point_velocity(v, pos), v[:, 3:]


def point_position(kin: Kinematics, body, point_body):
  """World position (3,) of a point given in the body frame (RaiSim getPosition)."""
  return kin.body_pos[body] + kin.body_rot[body] @ point_body


def composite_mass_com(model: ArticulatedModel, kin: Kinematics):
  """Composite mass (B,) and COM (B, 3, world) of each body's subtree (getCompositeMass/COM)."""
  a = jnp.asarray(tree_lib.subtree_matrix(model.parent), model.dtype)
  mass = a @ model.mass
  mc = a @ (model.mass[:, None] * kin.com_pos)
  return mass, mc / jnp.where(mass > 0, mass, 1.0)[:, None]


def center_of_mass(model: ArticulatedModel, kin: Kinematics):
  """COM (3,) of the whole system in the world frame (getCOM)."""
  return (model.mass @ kin.com_pos) / jnp.sum(model.mass)


def composite_inertia(model: ArticulatedModel, kin: Kinematics):
  """Composite spatial inertia (B, 6, 6) of each body's subtree about the world origin."""
  a = jnp.asarray(tree_lib.subtree_matrix(model.parent), model.dtype)
  return jnp.einsum("ij,jkl->ikl", a, kin.spatial_inertia)

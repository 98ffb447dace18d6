"""Forward dynamics by the articulated-body algorithm, vectorised by tree depth level.

All spatial quantities are world-frame, about the world origin ([lin; ang]), so articulated
inertias and bias forces are added to the parent without transforms. Each level (all bodies of
one depth) is processed at once; a level's joints are padded to its largest dof count (padded
columns have S = 0 and a unit pivot), so mixed joint types share one batched solve.

The per-level pivots D = S^T IA S (+ armature) are at most 6x6 (a floating base; spherical
joints give 3x3, revolute/prismatic 1x1) and are inverted in closed form (`pivot_inverse`:
a division, a 3x3 cofactor inverse, or two of them by blocks), not by a batched LAPACK call.

Returns du/dt in RaiSim's convention (base linear acceleration = classical acceleration of the
base origin, world frame; base angular acceleration world frame).
"""

import jax
import jax.numpy as jnp
import numpy as np

from raisim_jax.dynamics import kinematics as kin_lib
from raisim_jax.dynamics import tree as tree_lib
from raisim_jax.dynamics import rnea
from raisim_jax.math import rotation, spatial


def _pad_with_unit_pivots(d, size):
  """(n, size, size): d (n, k, k) in the top-left corner, the identity elsewhere."""
  n, k = d.shape[0], d.shape[-1]
  eye = jnp.broadcast_to(jnp.eye(size, dtype=d.dtype), (n, size, size))
  return eye.at[:, :k, :k].set(d)


def pivot_inverse(d):
  """Inverse of the (n, k, k) ABA pivots, k <= 6, in closed form.

  k = 1: 1/d; k <= 3: cofactors of d padded to 3x3 with unit pivots; k <= 6: padded to 6x6
  and inverted by 3x3 blocks [[A, B], [C, E]] with the Schur complement X = E - C A^-1 B:
      [[A^-1 + A^-1 B X^-1 C A^-1, -A^-1 B X^-1], [-X^-1 C A^-1, X^-1]].
  D is symmetric positive definite for any body with mass and inertia, so A and X are too.
  An exactly singular pivot gives inf/NaN, as a LAPACK inverse would (not a finite value).
  """
  k = d.shape[-1]
  if k == 0:
    return d
  if k == 1:
    return 1.0 / d
  if k <= 3:
    return rotation.inverse3(_pad_with_unit_pivots(d, 3), singular_fallback=False)[:, :k, :k]
  if k > 6:
    raise ValueError(f"ABA pivots are at most 6x6 (a floating joint), got {k}x{k}")
  m = _pad_with_unit_pivots(d, 6)
  a, b, c, e = m[:, :3, :3], m[:, :3, 3:], m[:, 3:, :3], m[:, 3:, 3:]
  a_inv = rotation.inverse3(a, singular_fallback=False)
  a_inv_b = a_inv @ b
  c_a_inv = c @ a_inv
  x_inv = rotation.inverse3(e - c @ a_inv_b, singular_fallback=False)
  top_right = -a_inv_b @ x_inv
  top = jnp.concatenate([a_inv - top_right @ c_a_inv, top_right], axis=-1)
  bottom = jnp.concatenate([-x_inv @ c_a_inv, x_inv], axis=-1)
  return jnp.concatenate([top, bottom], axis=-2)[:, :k, :k]


def aba_from_kinematics(model, kin, gv, tau, gravity, external_wrench=None, armature=None):
  """du/dt (nv,) = (M + diag(armature))^-1 (tau - h + J^T f_ext).

  armature (nv,) defaults to model.rotor_inertia (RaiSim adds it to diag(M)).
  """
  dtype = model.dtype
  nv, nb = model.num_gv, model.num_bodies
  arm = model.rotor_inertia if armature is None else armature
  dof_body = np.asarray(model.dof_body, dtype=int)
  s_pad = jnp.concatenate([kin.motion_subspace, jnp.zeros((1, 6), dtype)], axis=0)
  tau_pad = jnp.concatenate([tau, jnp.zeros(1, dtype)])
  arm_pad = jnp.concatenate([arm, jnp.zeros(1, dtype)])
  # velocity-product acceleration of each body's joint: c_i = sum_own dofs Sdot_a u_a
  own = np.zeros((nb, nv))
  own[dof_body, np.arange(nv)] = 1.0
  c = jnp.asarray(own, dtype) @ (kin.motion_subspace_dot * gv[:, None])
  inertia = kin.spatial_inertia
  v = kin.body_velocity
  ia = inertia
  pa = spatial.force_cross(v, jnp.einsum("bij,bj->bi", inertia, v))
  if external_wrench is not None:
    pa = pa - rnea.external_wrench_at_origin(kin, jnp.asarray(external_wrench, dtype))
  tables = tree_lib.level_tables(model)
  saved = [None] * len(tables)
  for li in range(len(tables) - 1, -1, -1):
    idx, par, table, pad = tables[li]
    s_l = s_pad[table]                                     # (n, nd, 6)
    ia_l, pa_l = ia[idx], pa[idx]
    u_mat = jnp.einsum("nij,nkj->nik", ia_l, s_l)          # (n, 6, nd) U = IA S
    d = jnp.einsum("nki,nil->nkl", s_l, u_mat)             # (n, nd, nd)
    nd = table.shape[1]
    d = d + jax.vmap(jnp.diag)(arm_pad[table] + jnp.asarray(pad, dtype)) if nd else d
    u_vec = tau_pad[table] - jnp.einsum("nki,ni->nk", s_l, pa_l)
    d_inv = pivot_inverse(d)
    saved[li] = (s_l, u_mat, d_inv, u_vec)
    if par[0] >= 0:
      ud = jnp.einsum("nik,nkl->nil", u_mat, d_inv)
      ia_new = ia_l - jnp.einsum("nik,njk->nij", ud, u_mat)
      pa_new = pa_l + jnp.einsum("nij,nj->ni", ia_new, c[idx]) + jnp.einsum("nik,nk->ni", ud, u_vec)
      ia = ia.at[par].add(ia_new)
      pa = pa.at[par].add(pa_new)
  a0 = jnp.concatenate([-jnp.asarray(gravity, dtype), jnp.zeros(3, dtype)])
  acc = jnp.zeros((nb, 6), dtype)
  qdd = jnp.zeros(nv + 1, dtype)
  for li, (idx, par, table, pad) in enumerate(tables):
    s_l, u_mat, d_inv, u_vec = saved[li]
    a_par = jnp.broadcast_to(a0, (len(idx), 6)) if par[0] < 0 else acc[par]
    a_p = a_par + c[idx]
    if table.shape[1]:
      qdd_l = jnp.einsum("nkl,nl->nk", d_inv, u_vec - jnp.einsum("nik,ni->nk", u_mat, a_p))
      qdd = qdd.at[table].set(qdd_l)
      a_p = a_p + jnp.einsum("nki,nk->ni", s_l, qdd_l)
    acc = acc.at[idx].set(a_p)
  return qdd[:nv]


def forward_dynamics(model, gc, gv, tau, gravity, external_wrench=None, armature=None):
  """du/dt (nv,) = M^-1 (tau - h(q, u, gravity)) by ABA (RaiSim convention).

  gc (nq,), gv (nv,), tau (nv,) generalized force, gravity (3,), external_wrench (B, 6)
  [force; torque about body origin] world frame, armature (nv,) replaces rotor_inertia.
  """
  dtype = model.dtype
  gv = jnp.asarray(gv, dtype)
  kin = kin_lib.forward_kinematics(model, gc, gv)
  return aba_from_kinematics(model, kin, gv, jnp.asarray(tau, dtype), gravity, external_wrench,
                             armature)


def inverse_mass_matrix(model, gc, armature=None):
  """M^-1 (nv, nv) by nv ABA solves at zero velocity and gravity (getInverseMassMatrix without
  RaiSim's implicit damping; pass armature = rotor_inertia + dt*damping to include it)."""
  dtype = model.dtype
  kin = kin_lib.forward_kinematics(model, gc)
  zero_v = jnp.zeros(model.num_gv, dtype)
  solve = lambda t: aba_from_kinematics(model, kin, zero_v, t, jnp.zeros(3, dtype),
                                        armature=armature)
  return jax.vmap(solve)(jnp.eye(model.num_gv, dtype=dtype)).T

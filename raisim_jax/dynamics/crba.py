"""Mass matrix by the composite-rigid-body algorithm, RaiSim convention.

M (nv, nv): base velocities in the WORLD frame (u = [v_base, w_base, joints]), rotor inertia
added to the diagonal. With world-frame spatial quantities about the world origin:
M[a, b] = S_a^T Ic_k S_b where k is the deeper of the two dofs' bodies (zero unless one
body supports the other) and Ic_k the composite inertia of k's subtree. Composite inertias are
one subtree-mask product; no per-body loop.
"""

import jax.numpy as jnp

from raisim_jax.dynamics import kinematics as kin_lib
from raisim_jax.dynamics import tree as tree_lib


def mass_matrix_from_kinematics(model, kin):
  """M (nv, nv) from precomputed `Kinematics` (rotor inertia included)."""
  import numpy as np
  dof_body = np.asarray(model.dof_body, dtype=int)
  ic = kin_lib.composite_inertia(model, kin)                       # (B, 6, 6)
  s = kin.motion_subspace
  f = jnp.einsum("aij,aj->ai", ic[dof_body], s)                    # F_b = Ic_body(b) S_b
  m_full = s @ f.T                                                  # [a, b] = S_a . Ic_b S_b
  sub = tree_lib.subtree_matrix(model.parent)
  upper = sub[dof_body][:, dof_body]            # body(b) in subtree of body(a): use Ic_body(b)
  same = (dof_body[:, None] == dof_body[None, :])
  strict = upper * (1 - same)
  m = jnp.where(upper > 0, m_full, 0.0) + jnp.where(strict.T > 0, m_full.T, 0.0)
  return m + jnp.diag(model.rotor_inertia)


def mass_matrix(model, gc):
  """Mass matrix M(q) (nv, nv) in RaiSim's convention (getMassMatrix)."""
  return mass_matrix_from_kinematics(model, kin_lib.forward_kinematics(model, gc))

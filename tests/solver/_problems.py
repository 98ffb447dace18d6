"""Random physically-shaped contact problems: G = J M^-1 J^T from random bodies and contact points."""

import numpy as np


def random_block(rng, dofs=6):
  J = rng.normal(size=(3, dofs))
  inv_mass = rng.uniform(0.2, 3.0, dofs)
  return (J * inv_mass) @ J.T


def random_problem(rng, n, dofs=None, mu_range=(0.1, 1.2)):
  """n contacts on a system with `dofs` generalized velocities (default 6 + 2n)."""
  dofs = dofs or 6 + 2 * n
  J = rng.normal(size=(3 * n, dofs))
  inv_mass = rng.uniform(0.2, 3.0, dofs)
  G = (J * inv_mass) @ J.T
  delassus = G.reshape(n, 3, n, 3).transpose(0, 2, 1, 3)
  c = rng.normal(size=(n, 3))
  c[:, 2] -= 0.5                      # mostly approaching
  mu = rng.uniform(*mu_range, n)
  return delassus, c, mu


def ncp_residuals(delassus, c, mu, target, impulse):
  """Max violation of the per-contact NCP conditions (Signorini, cone, max dissipation)."""
  v = np.einsum('ijab,jb->ia', delassus, impulse) + c
  out = []
  for i in range(len(c)):
    lam, vi = impulse[i], v[i]
    gap = vi[2] - target[i]
    lt = np.linalg.norm(lam[:2])
    res = [max(-lam[2], 0), max(-gap, 0), abs(lam[2] * gap), max(lt - mu[i] * lam[2], 0)]
    if lam[2] > 1e-12 and lt < mu[i] * lam[2] * (1 - 1e-6):         # stick
      res.append(np.abs(vi[:2]).max())
    elif lam[2] > 1e-12:                                             # slide
      res.append(abs(vi[0] * lam[1] - vi[1] * lam[0]))               # anti-parallel ...
      res.append(max(vi[:2] @ lam[:2], 0))                           # ... not parallel
    out.append(max(res))
  return np.array(out)

"""Small dense linear algebra in plain XLA operations: no LAPACK custom calls.

Why not `jnp.linalg` / `jax.scipy.linalg`: on CPU they lower to jaxlib's LAPACK custom calls,
whose kernels (jaxlib 0.10.2: Cholesky, triangular solve, eigh, LU, QR, SVD) split a batch
over XLA's intra-op thread pool and block the calling pool thread until the parts finish.
When XLA runs two such calls at once (two robots' mass matrices, the rows of two contact
chunks) with a batch large enough to split (1,024 worlds), every pool thread blocks waiting
for work queued behind it and the program hangs: every thread in a futex wait, 0% CPU (two
independent batched Cholesky solves in one jit reproduce it on a 2-core machine; batch 64
runs). The matrices of a step are small (a robot's nv, 3x3 contact blocks), so loops over
the static dimension, each a whole-row vector operation, cost about what the library calls
cost and batch under `vmap` like any other operation.

All functions take leading batch axes and are differentiable (plain jnp operations).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from raisim_jax.math.matmul_precision import full_precision

# Sweeps of the cyclic Jacobi eigen-solver of 3x3 blocks: convergence is quadratic, and six
# sweeps (18 rotations) reach float64 round-off from any symmetric input.
JACOBI_SWEEPS = 6


def spd_inverse(a, levels=None):
  """(..., n, n) a^-1 of symmetric positive definite a, by Gauss-Jordan elimination in place
  on the diagonal pivots (symmetrized at both ends: the gradient w.r.t. `a` is symmetric, as
  through jnp.linalg's Cholesky, and the result is exactly symmetric).

  Step k turns column k into a unit column and updates the rest: with pivot p = x_kk, column
  c = x[:, k] and row r = x[k, :], x <- x - (c - e_k)(r + e_k)^T / p, one rank-1 update of the
  whole matrix (x_kk becomes 1/p, row k r / p, column k -c / p, the rest the Schur
  complement). After n steps x = a^-1. The pivots are those of an LDL^T factorization, all
  positive exactly when `a` is positive definite; a non-positive one gives NaN (as a Cholesky
  factorization, LAPACK's `potrf`, fails there).

  `levels` (static tuple of tuples of indices covering 0..n-1 once; default one index per
  level, in order) eliminates each level's pivots in one rank-m update: exact where x is zero
  between any two pivots of a level when the level starts (then eliminating one leaves the
  other's row, column and pivot unchanged, so the updates add up). A mass matrix's tree
  order gives such levels (`dynamics.tree.elimination_levels`): a quadruped's 18 dofs in 9
  updates instead of 18, each update one fused pass over the matrix.

  Why not Cholesky and two triangular solves, as before: their 2n column steps on shrinking
  slices, padding and stacking cost 3x as long at batch 1,024 (nv 14: 8.5 -> 2.7 ms; 23:
  23 -> 8-12 ms), 14% of Gymnasium's ant's batched step. The forward error is the same
  (humanoid mass matrices, float32: max relative error 1.5e-5 before, 1.7e-5 now); the
  residual |a x - I| is larger (3.4e-5 -> 4.2e-4, Gauss-Jordan is not backward stable), and
  what the step uses is x itself (velocities x f)."""
  n = a.shape[-1]
  if n == 0:      # a robot without moving joints
    return a
  if levels is None:
    levels = tuple((k,) for k in range(n))
  assert sorted(k for level in levels for k in level) == list(range(n)), levels
  x = 0.5 * (a + jnp.swapaxes(a, -1, -2))
  unit = np.eye(n, dtype=bool)
  for level in levels:
    update = 0.0
    for k in level:
      pivot = x[..., k, k]
      pivot = jnp.where(pivot > 0, pivot, jnp.nan)
      column = jnp.where(unit[k], x[..., :, k] - 1.0, x[..., :, k])
      row = jnp.where(unit[k], x[..., k, :] + 1.0, x[..., k, :]) / pivot[..., None]
      update = update + column[..., :, None] * row[..., None, :]
    x = x - update
  return 0.5 * (x + jnp.swapaxes(x, -1, -2))


def unrolled_matmul(a, b):
  """(..., m, n) a @ b for (..., m, k) `a` and (..., k, n) `b` with a small static k, written
  as the sum of k outer products of a's columns and b's rows.

  For the tiny products of the step (3 x 3 rotations, a contact row's 3 x 3 by 3 x nv and
  3 x nv by nv x 3) that XLA:CPU otherwise hands to its library dot kernel one small matrix
  at a time, under vmap over thousands: as elementwise multiplies and adds they fuse with
  what produces their operands. (A `jnp.sum` of the broadcast product is turned back into a
  dot by XLA.) The standing quadruped's articulated contact rows, batch 1,024, one core: 2.4 ->
  1.1-1.6 ms per step call, with `articulated_integrate.solve_mass_rows`."""
  return sum(a[..., :, j, None] * b[..., None, j, :] for j in range(a.shape[-1]))


def unrolled_matvec(a, v):
  """(..., m) a @ v for (..., m, k) `a` and (..., k) `v` with a small static k, as the sum of
  k scaled columns of `a` (see `unrolled_matmul`)."""
  return sum(a[..., :, j] * v[..., None, j] for j in range(a.shape[-1]))


def _jacobi_rotation(a, v, p, q):
  """One Jacobi rotation of symmetric (..., 3, 3) `a` zeroing a_pq (p < q); `v` collects
  the rotations (a = v diag v^T at convergence).

  t = tan(angle) = sgn(d) 2 a_pq / (|d| + hypot(d, 2 a_pq)), d = a_qq - a_pp: the smaller root
  of t^2 + 2 t d / (2 a_pq) - 1 = 0 written without dividing by a_pq, so its derivative is
  right at a_pq = 0 (1 / d, not 0) and stays finite in float32 where a_pq is tiny."""
  d = a[..., q, q] - a[..., p, p]
  twice_off = 2.0 * a[..., p, q]
  both_zero = (d == 0.0) & (twice_off == 0.0)
  safe_d = jnp.where(both_zero, 1.0, d)                 # double where: no NaN from hypot(0, 0)
  safe_off = jnp.where(both_zero, 0.0, twice_off)
  sign = jnp.where(safe_d < 0.0, -1.0, 1.0)
  t = sign * safe_off / (jnp.abs(safe_d) + jnp.hypot(safe_d, safe_off))
  t = jnp.where(both_zero, 0.0, t)
  c = 1.0 / jnp.sqrt(t * t + 1.0)
  s = t * c
  rotation = jnp.broadcast_to(jnp.eye(3, dtype=a.dtype), a.shape)
  rotation = rotation.at[..., p, p].set(c).at[..., q, q].set(c)
  rotation = rotation.at[..., p, q].set(s).at[..., q, p].set(-s)
  a = jnp.swapaxes(rotation, -1, -2) @ a @ rotation
  return a, v @ rotation


def symmetric_eigen3(a):
  """Eigen-decomposition of symmetric (..., 3, 3) blocks by cyclic Jacobi rotations.

  Returns (values (..., 3) ascending, vectors (..., 3, 3) with vectors[..., :, i] the unit
  eigenvector of values[..., i]), like jnp.linalg.eigh."""
  v = jnp.broadcast_to(jnp.eye(3, dtype=a.dtype), a.shape)
  a = 0.5 * (a + jnp.swapaxes(a, -1, -2))
  for _ in range(JACOBI_SWEEPS):
    for p, q in ((0, 1), (0, 2), (1, 2)):
      a, v = _jacobi_rotation(a, v, p, q)
  values = jnp.diagonal(a, axis1=-2, axis2=-1)
  order = jnp.argsort(values, axis=-1)
  values = jnp.take_along_axis(values, order, axis=-1)
  vectors = jnp.take_along_axis(v, order[..., None, :], axis=-1)
  return values, vectors


@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
def psd_pseudo_inverse3(blocks, relative_cutoff):
  """(..., 3, 3) Moore-Penrose inverses of symmetric positive semi-definite blocks:
  eigenvalues below `relative_cutoff` times the largest count as zero.

  Differentiated by the formula for a pseudo-inverse of constant rank (Golub & Pereyra),
  for symmetric A with A+ its pseudo-inverse and P = I - A A+:
      dA+ = -A+ dA A+ + A+ A+ dA P + P dA A+ A+,
  not through the eigen-solver, whose eigenvectors have no derivative at repeated
  eigenvalues (an identity block)."""
  inverse, _ = _pseudo_inverse_and_range(blocks, relative_cutoff)
  return inverse


def _pseudo_inverse_and_range(blocks, relative_cutoff):
  values, vectors = symmetric_eigen3(blocks)
  kept = values > relative_cutoff * values[..., -1:]
  reciprocal = jnp.where(kept, 1.0 / jnp.where(kept, values, 1.0), 0.0)
  inverse = jnp.einsum("...ij,...j,...kj->...ik", vectors, reciprocal, vectors)
  projector = jnp.einsum("...ij,...j,...kj->...ik", vectors, kept.astype(blocks.dtype), vectors)
  return inverse, projector


@psd_pseudo_inverse3.defjvp
@full_precision   # traced when differentiated, after the step's own trace has returned
def _psd_pseudo_inverse3_jvp(relative_cutoff, primals, tangents):
  (blocks,), (d_blocks,) = primals, tangents
  inverse, projector = _pseudo_inverse_and_range(blocks, relative_cutoff)
  null = jnp.eye(3, dtype=blocks.dtype) - projector
  d_blocks = 0.5 * (d_blocks + jnp.swapaxes(d_blocks, -1, -2))
  squared = inverse @ inverse
  tangent = -inverse @ d_blocks @ inverse + squared @ d_blocks @ null + null @ d_blocks @ squared
  return inverse, tangent

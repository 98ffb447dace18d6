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

from raisim_jax.math.matmul_precision import full_precision

# Sweeps of the cyclic Jacobi eigen-solver of 3x3 blocks: convergence is quadratic, and six
# sweeps (18 rotations) reach float64 round-off from any symmetric input.
JACOBI_SWEEPS = 6


def cholesky(a):
  """(..., n, n) lower-triangular L with L L^T = a, for symmetric positive definite a.

  Right-looking, column by column: column j is the trailing matrix's first column over the
  square root of its pivot, then the trailing matrix loses that rank-1 part. The input is
  symmetrized first, as jnp.linalg.cholesky does, so the gradient w.r.t. `a` is symmetric
  (the same as jnp.linalg's); a non-positive pivot gives NaN (as LAPACK's `potrf` does)."""
  n = a.shape[-1]
  if n == 0:      # a robot without moving joints
    return a
  trailing = 0.5 * (a + jnp.swapaxes(a, -1, -2))
  columns = []
  for j in range(n):
    pivot = jnp.sqrt(trailing[..., 0, 0])
    column = trailing[..., :, 0] / pivot[..., None]                       # (..., n - j)
    columns.append(jnp.pad(column, [(0, 0)] * (column.ndim - 1) + [(j, 0)]))
    below = column[..., 1:]
    trailing = trailing[..., 1:, 1:] - below[..., :, None] * below[..., None, :]
  return jnp.stack(columns, axis=-1)


def solve_lower(factor, rhs):
  """(..., n, k) x with L x = rhs, L = `factor` (..., n, n) lower triangular, rhs (..., n, k).

  Forward substitution by columns of L: x_j = rest_j / L_jj, then the rows below lose
  L_ij x_j."""
  n = factor.shape[-1]
  if n == 0:
    return rhs
  rest = rhs
  rows = []
  for j in range(n):
    x_j = rest[..., 0, :] / factor[..., j, j, None]
    rows.append(x_j)
    rest = rest[..., 1:, :] - factor[..., j + 1:, j, None] * x_j[..., None, :]
  return jnp.stack(rows, axis=-2)


def spd_inverse(a):
  """(..., n, n) a^-1 of symmetric positive definite a: L^-T L^-1 from its Cholesky factor
  (symmetric by construction)."""
  n = a.shape[-1]
  identity = jnp.broadcast_to(jnp.eye(n, dtype=a.dtype), a.shape)
  if n == 0:
    return a
  lower_inverse = solve_lower(cholesky(a), identity)
  inverse = jnp.swapaxes(lower_inverse, -1, -2) @ lower_inverse
  return 0.5 * (inverse + jnp.swapaxes(inverse, -1, -2))   # exactly symmetric


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

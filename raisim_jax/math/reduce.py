"""Reductions written for XLA's CPU backend.

`argmax` is jnp.argmax (the first maximum's index) as a max and a min reduction: XLA lowers
jnp.argmax to a variadic (value, index) reduce that its CPU backend does not vectorize, about
3x slower (a 64-wide row under vmap, batch 1,024, one core: 0.29 vs 0.10 us), and the mesh
contacts take a dozen of them per pair. (Small products have the same problem:
math/dense.py's unrolled forms.)
"""

import jax.numpy as jnp


def argmax(x, axis=-1):
  """Index of the first maximum of `x` along `axis` (as jnp.argmax, int32). A row holding a
  NaN gives the row's length (out of range: callers mask NaN-free scores, as -inf)."""
  x = jnp.asarray(x)
  top = jnp.max(x, axis=axis, keepdims=True)
  n = x.shape[axis]
  ids = jnp.arange(n, dtype=jnp.int32).reshape((n,) + (1,) * (x.ndim - 1 - (axis % x.ndim)))
  return jnp.min(jnp.where(x == top, ids, jnp.int32(n)), axis=axis)


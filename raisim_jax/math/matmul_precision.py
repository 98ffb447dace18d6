"""Float32 matrix products at full float32 precision on GPU and TPU backends.

JAX's default precision for a float32 `dot_general` is the backend's fastest: exact float32 on
CPUs, but TF32 (a 10-bit mantissa, ~1e-3 relative) on NVIDIA GPUs since Ampere. The step's
matrix products are small (a robot's nv x nv M_eff^-1, contact Jacobians) and their errors are
not: measured on an H100 (2026-11-26, float32), `dense.spd_inverse` of Gymnasium's humanoid
mass matrix (nv 23, condition 3e3) gave max|M M^-1 - I| = 2.3e-2 at the default precision and
3.2e-5 at "highest" (the CPU: 2.5e-5); the ant's 300-step rollout drifted 2e-3 from the
full-precision one. The step's entry points trace under `full_precision`, so its products
are exact float32 (float64 products are unaffected) whatever the process-wide
`jax_default_matmul_precision` says. A custom derivative rule
(`custom_jvp`) is traced when JAX differentiates, which for reverse mode happens after the
entry point's trace has returned: such rules carry the decorator themselves.

On a CPU backend the decorator does nothing: CPUs compute float32 products exactly anyway,
and the precision attributes made XLA's CPU compile of reverse-mode gradients ~3x slower (the
quadruped's batched PD-target gradient test: 70 -> 214 s). The backend is JAX's default one
at trace time: a program traced there and placed on another backend keeps that choice.
"""

import functools

import jax


def full_precision(fn):
  """`fn` traced with every matrix product at "highest" precision (jaxpr `dot_general`s carry
  `precision=HIGHEST`; their derivatives inherit it) on GPU and TPU backends; `fn` as is on
  a CPU backend."""
  @functools.wraps(fn)
  def traced_at_full_precision(*args, **kwargs):
    if jax.default_backend() == "cpu":
      return fn(*args, **kwargs)
    with jax.default_matmul_precision("highest"):
      return fn(*args, **kwargs)
  return traced_at_full_precision

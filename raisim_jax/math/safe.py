"""Gradient-safe elementary functions: finite values and finite gradients everywhere.

The double-`where` trick: the unsafe branch is fed a harmless input where it would be
singular, so that neither the forward value nor the backward pass produces NaN.
"""

import jax.numpy as jnp


def norm(x, axis=-1, keepdims=False, eps=0.0):
  """Euclidean norm along `axis` with a zero (not NaN) gradient at x == 0."""
  squared = jnp.sum(x * x, axis=axis, keepdims=keepdims)
  is_zero = squared <= eps * eps
  safe_squared = jnp.where(is_zero, 1.0, squared)
  return jnp.where(is_zero, 0.0, jnp.sqrt(safe_squared))


def divide(numerator, denominator, fallback=0.0):
  """numerator / denominator, `fallback` where denominator == 0 (gradient-safe)."""
  is_zero = denominator == 0
  safe_denominator = jnp.where(is_zero, 1.0, denominator)
  return jnp.where(is_zero, fallback, numerator / safe_denominator)


def normalize(x, axis=-1, fallback=None):
  """x / |x| along `axis`; returns `fallback` (default zeros) where |x| == 0."""
  n = norm(x, axis=axis, keepdims=True)
  is_zero = n == 0
  out = x / jnp.where(is_zero, 1.0, n)
  if fallback is None:
    fallback = jnp.zeros_like(x)
  return jnp.where(is_zero, fallback, out)

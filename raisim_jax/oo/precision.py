"""The OO layer's float64 without a process-wide side effect.

A float64 World runs each of its methods (and its views' methods) inside
`jax.enable_x64(True)`, a thread-local context: the user's own JAX code in the same process
keeps the precision it chose (float32 unless the user enabled x64). Arrays a float64 World
hands out (`World.compile()`) are float64; pure-core code that consumes them in float64 must
enable x64 itself (`jax.config.update("jax_enable_x64", True)` or `with jax.enable_x64(True):`).
"""

import contextlib
import functools
import inspect

import jax
import jax.numpy as jnp


def context(dtype):
  """A context manager that makes `dtype` available: x64 on for float64, nothing for float32."""
  if jnp.dtype(dtype) == jnp.float64:
    return jax.enable_x64(True)
  return contextlib.nullcontext()


def _world_of(obj):
  while not hasattr(obj, "_dtype"):
    obj = obj._world if hasattr(obj, "_world") else obj._system
  return obj


def in_world_precision(cls):
  """Class decorator: each public method defined in `cls` runs in its world's precision
  (`self._dtype` on a World, `self._world._dtype` on a view)."""
  for name, function in list(vars(cls).items()):
    if name.startswith("_") or not inspect.isfunction(function):
      continue
    setattr(cls, name, _wrapped(function))
  return cls


def _wrapped(function):
  @functools.wraps(function)
  def method(self, *args, **kwargs):
    with context(_world_of(self)._dtype):
      return function(self, *args, **kwargs)
  return method

"""Host -> device arrays without XLA work, for the host-side builders (compile, loaders, OO).

`jnp.asarray(x, float32)` on a float64 numpy array, or `jnp.zeros(shape)`, runs an eager XLA
computation that is compiled once per shape and dtype: about 10 ms each, which made compiling
a 10-object world take 1.3 s. Casting with numpy and transferring costs microseconds.
"""

import jax
import numpy as np


def device_array(value, dtype=None):
  """`value` cast on the host to `dtype` (default: its own), then put on the device."""
  return jax.device_put(np.asarray(value, dtype=None if dtype is None else np.dtype(dtype)))


def device_zeros(shape, dtype):
  return jax.device_put(np.zeros(shape, np.dtype(dtype)))


def device_ones(shape, dtype):
  return jax.device_put(np.ones(shape, np.dtype(dtype)))

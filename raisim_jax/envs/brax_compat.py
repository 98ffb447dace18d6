"""brax 0.14 on JAX 0.10: brax.training's PPO calls `jax.device_put_replicated`, which JAX 0.10
removed. On one device it is a `device_put` with a leading axis of 1 (what pmap takes).

Call `install_device_put_replicated()` before `ppo.train`; it adds the stand-in to the `jax`
module only where JAX lacks the function (nothing changes on a JAX that still has it), and
only when called: importing raisim_jax never touches the jax module."""

import jax
import jax.numpy as jnp


def _device_put_replicated(value, devices):
  if len(devices) != 1:
    raise NotImplementedError(
        f"device_put_replicated stand-in: one device only, got {len(devices)} (brax on several "
        "devices needs a JAX that still has jax.device_put_replicated)")
  return jax.tree.map(lambda a: jax.device_put(jnp.asarray(a)[None], devices[0]), value)


def install_device_put_replicated():
  """Adds `jax.device_put_replicated` (one-device stand-in) where JAX 0.10 removed it."""
  if "device_put_replicated" not in vars(jax):
    jax.device_put_replicated = _device_put_replicated

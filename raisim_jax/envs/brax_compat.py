"""brax 0.14 on JAX 0.10: brax.training's PPO calls `jax.device_put_replicated`, which JAX 0.10
removed. The stand-in stacks one copy per device along a new leading axis, that axis split
over the devices (a NamedSharding on a 1-D mesh of them: what JAX 0.10's pmap takes), so PPO
runs on one device or on several (e.g. one XLA host device per CPU core, README).

Call `install_device_put_replicated()` before `ppo.train`; it adds the stand-in to the `jax`
module only where JAX lacks the function (nothing changes on a JAX that still has it), and
only when called: importing raisim_jax never touches the jax module."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec


def _device_put_replicated(value, devices):
  """`value` (a pytree) with a leading axis of len(`devices`), copy k on devices[k]."""
  devices = list(devices)
  if not devices:
    raise ValueError("device_put_replicated: argument 'devices' is empty")
  sharding = NamedSharding(Mesh(np.array(devices), ("devices",)), PartitionSpec("devices"))

  def put(leaf):
    leaf = jnp.asarray(leaf)
    return jax.device_put(jnp.broadcast_to(leaf, (len(devices),) + leaf.shape), sharding)
  return jax.tree.map(put, value)


def install_device_put_replicated():
  """Adds `jax.device_put_replicated` (the stand-in above) where JAX 0.10 removed it."""
  if "device_put_replicated" not in vars(jax):
    jax.device_put_replicated = _device_put_replicated

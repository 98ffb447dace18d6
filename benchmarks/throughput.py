"""World-steps per second of the pure step under vmap, at batch sizes 1 to 4096 (CPU).

Run: `python benchmarks/throughput.py` (scene and dtype options: --scene {bodies,contacts}
--dtype {float32,float64}). Batches above 1 are split over one XLA host device per core
(`host_devices.py`; `--devices N` to change).
Not a test: numbers depend on the machine; compare ratios taken in one run.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from benchmarks import host_devices  # noqa: E402
host_devices.configure()   # one host device per core, before JAX starts

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import raisim_jax as rj  # noqa: E402
from benchmarks import timing  # noqa: E402


def build_scene(name, dtype):
  world = rj.World(dtype=dtype)
  world.setTimeStep(1e-3)
  world.addGround()
  if name == "bodies":
    for k in range(4):
      world.addBox(0.4, 0.3, 0.2, 1.0).setPosition(k, 0, 2.0)
      world.addSphere(0.1, 1.0).setPosition(k, 1, 2.0)
  elif name == "contacts":
    for k in range(4):
      world.addBox(0.4, 0.3, 0.2, 1.0).setPosition(k, 0, 0.099)
      world.addSphere(0.1, 1.0).setPosition(k, 1, 0.099)
  world.setContactSolverDifferentiable(False)  # while_loop early exit (batched rollouts)
  return world.compile()


def measure(model, state, batch, steps=100):
  """World-steps/s of `steps` steps of `batch` copies of `state` (best of 3 after the first)."""
  run, inputs = timing.batched(lambda s: rj.rollout(model, s, steps)[0], state, batch)
  return batch * steps / timing.timed(run, inputs, 3)[1]


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--scene", default="bodies", choices=["bodies", "contacts"])
  parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
  parser.add_argument("--batches", default="1,16,256,1024,4096")
  host_devices.add_argument(parser)
  args = parser.parse_args()
  model, state = build_scene(args.scene, jnp.dtype(args.dtype))
  print(f"scene={args.scene} dtype={args.dtype} bodies={model.num_bodies} "
        f"backend={jax.default_backend()} devices={len(jax.local_devices())}")
  for batch in [int(b) for b in args.batches.split(",")]:
    print(f"  batch {batch:5d}: {measure(model, state, batch):14,.0f} world-steps/s")


if __name__ == "__main__":
  main()

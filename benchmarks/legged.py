"""The standing quadruped under PD control: env-steps per second and compile time of the pure
step under vmap (solver in its batched mode). (The side-by-side MuJoCo C figure on the same
URDF is not here yet.)

Run: `python benchmarks/legged.py [--robot quadruped|a1] [--batches 1,256,1024]`.
Not a test: numbers depend on the machine; compare ratios taken in one run.
"""

import argparse
import os
import sys
import time

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import raisim_jax as rj  # noqa: E402
from tests.legged import scenarios  # noqa: E402


def measure(model, state, batch, steps=100):
  """(env-steps/s, compile seconds) of `steps` steps of `batch` standing robots."""
  states = jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), state)
  run = jax.jit(jax.vmap(lambda s: rj.rollout(model, s, steps)[0]))
  start = time.perf_counter()
  run(states).time.block_until_ready()
  compile_seconds = time.perf_counter() - start
  best = float("inf")
  for _ in range(3):
    start = time.perf_counter()
    run(states).time.block_until_ready()
    best = min(best, time.perf_counter() - start)
  return batch * steps / best, compile_seconds


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--robot", default="quadruped", choices=sorted(scenarios.ROBOTS))
  parser.add_argument("--batches", default="1,256,1024")
  args = parser.parse_args()
  world, robot, nominal, feet = scenarios.standing_world(args.robot, jnp.float32)
  # Settle first: the benchmark steps a robot standing on its four feet.
  *_, settled = scenarios.simulate(world, feet, 1000)
  world.setState(settled)
  world.setContactSolverDifferentiable(False)
  model, state = world.compile()
  print(f"robot={args.robot} float32 backend={jax.default_backend()} "
        f"contacts={int(np.sum(np.asarray(state.contacts.active)))}")
  for batch in [int(b) for b in args.batches.split(",")]:
    ours, compile_seconds = measure(model, state, batch)
    print(f"  batch {batch:5d}: {ours:12,.0f} env-steps/s (compile {compile_seconds:.0f} s)")


if __name__ == "__main__":
  main()

"""Gymnasium's MJCF models in raisim_jax and in MuJoCo MJX, side by side in one run (#12 item 5).

For each model (hopper, ant, humanoid from Gymnasium's assets) and batch size: world-steps
per second of `jit(vmap(rollout))` (float32, the solver's batched mode) and of MJX's
`jit(vmap(mjx.step))` (float32) on the same MJCF file with its own time step, and the compile
time of each. MJX runs twice: with the model's own solver settings and with the settings
MJX's authors ship for RL (`iterations=1, ls_iterations=4`); a model asking for PGS (the
humanoid), which MJX lacks, runs MJX's Newton solver; the ratio column is ours over
MJX at the RL settings. The worlds start at the file's initial pose with zero controls and
fall and tumble under gravity (the same motion in both engines: contacts from the first
steps on). Both engines run on one device for the ratio. The column "all cores" splits our
batch over one XLA host device per core (`host_devices.py`; `--devices N` to change), as
`legged.py` and `scenes.py` do against MuJoCo C's threads. MJX is not split: its ant program
at batch 1,024 deadlocked when split over 2 host devices (under `shard_map` and under a
sharded `jit` alike; batch 64 ran), in the JAX 0.10.2 CPU client, and its humanoid at batch
1,024 deadlocked on one device: MJX's Cholesky and triangular solves are jaxlib LAPACK
kernels, which deadlock a thread pool of 2+ threads (`host_devices.py`). `--one-core` runs
both engines pinned to one core, where they cannot.

Run: `python benchmarks/mjcf_models.py [--models hopper,ant,humanoid]
[--batches 1,64,256,1024] [--steps 50] [--devices N | --one-core] [--no-mjx-own]
[--json F]`; `--no-mjx-own` skips MJX at the model's own settings (the slowest column);
`--quick` (batch 2, 5 steps) is what the test suite runs on the hopper so the script cannot
rot. MJX comes with Brax (the `rl` extra) or `pip install mujoco-mjx`. Not a test: numbers
depend on the machine; compare ratios taken in one run.
"""

import argparse
import json
import os
import sys
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from benchmarks import host_devices  # noqa: E402
host_devices.configure()   # one host device per core, before JAX starts

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import raisim_jax as rj  # noqa: E402
from benchmarks import timing  # noqa: E402

MODELS = {"hopper": "hopper.xml", "ant": "ant.xml", "humanoid": "humanoid.xml"}


def model_path(name):
  """Path of Gymnasium's MJCF file for `name`."""
  import gymnasium
  return os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets",
                      MODELS[name])


def ours(name, batch, steps, split=False):
  """(world-steps/s, compile s, time step) of raisim_jax on Gymnasium's `name`, the batch
  split over this process's devices when `split`."""
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")   # MJCF features the reader maps approximately
    world = rj.World(model_path(name), dtype=jnp.float32)
  world.setContactSolverDifferentiable(False)
  model, state = world.compile()
  run, inputs = timing.batched(lambda s: rj.rollout(model, s, steps)[0], state, batch, split)
  first, best = timing.timed(run, inputs, repeats=2)
  return batch * steps / best, first - best, float(world.getTimeStep())


def mjx_rate(name, batch, steps, rl_settings):
  """(world-steps/s, compile s, time step) of MuJoCo MJX on the same file, on one device."""
  import mujoco
  from mujoco import mjx
  mj_model = mujoco.MjModel.from_xml_path(model_path(name))
  if mj_model.opt.solver == mujoco.mjtSolver.mjSOL_PGS:
    # Gymnasium's humanoid asks for PGS, which MJX does not implement: MuJoCo's default solver.
    mj_model.opt.solver = mujoco.mjtSolver.mjSOL_NEWTON
  if rl_settings:
    mj_model.opt.iterations, mj_model.opt.ls_iterations = 1, 4
  device_model = mjx.put_model(mj_model)
  data = mjx.make_data(device_model)
  run, inputs = timing.batched(
      lambda d: jax.lax.scan(lambda c, _: (mjx.step(device_model, c), None), d, None,
                             length=steps)[0], data, batch, split=False)
  first, best = timing.timed(run, inputs, repeats=2)
  return batch * steps / best, first - best, float(mj_model.opt.timestep)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--models", default="hopper,ant,humanoid")
  parser.add_argument("--batches", default="1,64,256,1024")
  parser.add_argument("--steps", type=int, default=50)
  parser.add_argument("--quick", action="store_true", help="batch 2, 5 steps")
  parser.add_argument("--no-mjx-own", action="store_true",
                      help="skip MJX at the model's own solver settings")
  parser.add_argument("--json")
  host_devices.add_argument(parser)
  args = parser.parse_args(argv)
  batches = [2] if args.quick else [int(b) for b in args.batches.split(",")]
  steps = 5 if args.quick else args.steps
  rows = []
  cores = timing.cores()
  print(f"| Model | Batch | raisim_jax steps/s | compile s | MJX (RL settings) steps/s | "
        f"compile s | MJX (model's settings) steps/s | ours / MJX (RL) | raisim_jax, all "
        f"{cores} cores |")
  print("|---|---|---|---|---|---|---|---|---|")
  for name in args.models.split(","):
    for batch in batches:
      rate, compile_s, dt = ours(name, batch, steps)
      all_cores = ours(name, batch, steps, split=True)[0] if timing.splits(batch) else None
      rl_rate, rl_compile, mj_dt = mjx_rate(name, batch, steps, rl_settings=True)
      default_rate = (None if args.no_mjx_own
                      else mjx_rate(name, batch, steps, rl_settings=False)[0])
      if abs(dt - mj_dt) > 1e-12:
        raise RuntimeError(f"{name}: time step {dt} differs from MuJoCo's {mj_dt}")
      row = dict(model=name, batch=batch, steps=steps, time_step=dt, ours=rate,
                 ours_compile_s=compile_s, mjx_rl=rl_rate, mjx_rl_compile_s=rl_compile,
                 mjx_default=default_rate, ratio_vs_mjx_rl=rate / rl_rate,
                 ours_all_cores=all_cores)
      rows.append(row)
      print(f"| {name} | {batch} | {rate:,.0f} | {compile_s:.1f} | {rl_rate:,.0f} | "
            f"{rl_compile:.1f} | {'' if default_rate is None else f'{default_rate:,.0f}'} | "
            f"{rate / rl_rate:.2f} | "
            f"{'' if all_cores is None else f'{all_cores:,.0f}'} |", flush=True)
  if args.json:
    with open(args.json, "w") as f:
      json.dump(dict(device=str(jax.devices()[0]), devices=cores,
                     rows=rows), f, indent=1)
  return rows


if __name__ == "__main__":
  main()

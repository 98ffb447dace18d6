"""Wall-clock timing shared by the benchmark scripts."""

import time

import jax
import numpy as np

import raisim_jax as rj


def timed(run, inputs, repeats):
  """(seconds of the first call `run(inputs)`: trace, compile and one run; best seconds of
  `repeats` later calls), each waited for with `block_until_ready`."""
  start = time.perf_counter()
  jax.block_until_ready(run(inputs))
  first = time.perf_counter() - start
  best = float("inf")
  for _ in range(repeats):
    start = time.perf_counter()
    jax.block_until_ready(run(inputs))
    best = min(best, time.perf_counter() - start)
  return first, best


def batched(fn, state, batch):
  """(jitted fn, its input): fn on one state for batch 1 (no vmap: under vmap every cond is a
  select), vmapped over `batch` copies otherwise."""
  if batch == 1:
    return jax.jit(fn), state
  return jax.jit(jax.vmap(fn)), rj.batching.replicate(state, batch)


def mujoco_rollout_rate(model, state, control, batch, steps, threads=2):
  """World-steps/s of `mujoco.rollout` over `batch` copies of the full-physics `state` with
  the constant `control` (nu,), on `threads` MjData; the best of 3 runs after a warm-up."""
  import mujoco
  from mujoco import rollout
  datas = [mujoco.MjData(model) for _ in range(threads)]
  initial = np.tile(state, (batch, 1))
  controls = np.tile(control, (batch, steps, 1))
  rollout.rollout(model, datas, initial, controls)
  best = float("inf")
  for _ in range(3):
    start = time.perf_counter()
    rollout.rollout(model, datas, initial, controls)
    best = min(best, time.perf_counter() - start)
  return batch * steps / best

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


def compiled(run, *inputs):
  """(the executable of the jitted `run` for `inputs`, seconds to trace, lower and compile
  it); its `memory_analysis()` gives XLA's buffer sizes."""
  start = time.perf_counter()
  executable = run.lower(*inputs).compile()
  return executable, time.perf_counter() - start


def cores() -> int:
  """CPU host devices of this process: the cores a batched run uses (host_devices.py), and
  the threads MuJoCo C's `rollout` gets."""
  return jax.local_device_count("cpu")


def splits(batch) -> bool:
  """Whether `batched(..., split=True)` splits `batch` worlds over this process's devices:
  more than one world, several devices, and they divide the batch."""
  devices = jax.local_device_count()
  return batch > 1 and devices > 1 and batch % devices == 0


def batched(fn, state, batch, split=True):
  """(jitted fn, its input): fn on one state for batch 1 (no vmap: under vmap every cond is a
  select); for a larger batch, fn vmapped over `batch` copies of `state`, split over this
  process's devices (`batching.sharded_vmap`: each device runs its share as one program) when
  `split` and `splits(batch)`; on the first device otherwise.
  `state` may be any pytree (an MJX Data too)."""
  if batch == 1:
    return jax.jit(fn), state
  if split and splits(batch):
    mesh = rj.batching.batch_mesh(jax.local_devices())
    return (rj.batching.sharded_vmap(fn, (0,), mesh),
            rj.batching.shard(rj.batching.replicate(state, batch), mesh))
  return jax.jit(jax.vmap(fn)), rj.batching.replicate(state, batch)


def mujoco_rollout_rate(model, state, control, batch, steps, threads=None):
  """World-steps/s of `mujoco.rollout` over `batch` copies of the full-physics `state` with
  the constant `control` (nu,), on `threads` MjData (default: `cores()`, as many as our
  batched runs use); the best of 3 runs after a warm-up."""
  import mujoco
  from mujoco import rollout
  threads = cores() if threads is None else threads
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

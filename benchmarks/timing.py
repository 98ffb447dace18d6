"""Wall-clock timing shared by the benchmark scripts."""

import time

import jax


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

"""The OO World's compiled one-world step programs, counted for recompile tests: the plain
step (no island block move) and the step with the move, which a World switches to when a
solve needs it (`raisim_jax.oo.world.PLAIN_SWEEP_LIMIT`)."""

import jax

from benchmarks.suite_compile_time import BACKEND
from raisim_jax.oo import world as world_module

STEPS = (world_module._STEP_PLAIN, world_module._STEP)


def compiled():
  """Programs compiled (or loaded) for `World.integrate()` in this process."""
  return sum(step._cache_size() for step in STEPS)


def clear():
  for step in STEPS:
    step.clear_cache()


class XlaCompiles:
  """Context manager counting XLA compilations of any program (the World's steps and every
  eager op alike) while it is open, through JAX's backend-compile monitoring event (the one
  benchmarks/suite_compile_time.py sums)."""

  def __enter__(self):
    self.count = 0
    jax.monitoring.register_event_duration_secs_listener(self._listen)
    return self

  def _listen(self, event, duration, **kwargs):
    del duration, kwargs
    if event == BACKEND:
      self.count += 1

  def __exit__(self, *exc):
    jax.monitoring.unregister_event_duration_listener(self._listen)

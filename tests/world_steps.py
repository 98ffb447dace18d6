"""The OO World's compiled one-world step programs, counted for recompile tests: the plain
step (no island block move) and the step with the move, which a World switches to when a
solve needs it (`raisim_jax.oo.world.PLAIN_SWEEP_LIMIT`)."""

from raisim_jax.oo import world as world_module

STEPS = (world_module._STEP_PLAIN, world_module._STEP)


def compiled():
  """Programs compiled (or loaded) for `World.integrate()` in this process."""
  return sum(step._cache_size() for step in STEPS)


def clear():
  for step in STEPS:
    step.clear_cache()

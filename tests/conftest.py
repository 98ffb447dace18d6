"""Test configuration: float64 everywhere (RaiSim's precision; float32 paths opt in), and the
`slow` marker: long simulations and oracle sweeps run only with `-m slow` or
RAISIM_JAX_SLOW=1, so the default run (CI's) stays short while covering every capability."""

import os

import jax
import pytest

jax.config.update("jax_enable_x64", True)


def pytest_collection_modifyitems(config, items):
  if "slow" in (config.getoption("-m") or "") or os.environ.get("RAISIM_JAX_SLOW") == "1":
    return
  skip = pytest.mark.skip(reason="slow: run with -m slow or RAISIM_JAX_SLOW=1")
  for item in items:
    if "slow" in item.keywords:
      item.add_marker(skip)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_functions():
  """Drop JAX's compiled functions after each test module: a whole-suite session otherwise
  keeps every executable alive (memory grows), and once segfaulted inside XLA's compiler late
  in the run (the test passed on its own and in its module)."""
  yield
  jax.clear_caches()

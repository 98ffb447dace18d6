import jax

jax.config.update("jax_enable_x64", True)

import os

import pytest


def pytest_collection_modifyitems(config, items):
  """`slow` tests run only with -m slow (or RAISIM_JAX_SLOW=1); the default run stays short."""
  if "slow" in (config.getoption("-m") or "") or os.environ.get("RAISIM_JAX_SLOW") == "1":
    return
  skip = pytest.mark.skip(reason="slow: run with -m slow or RAISIM_JAX_SLOW=1")
  for item in items:
    if "slow" in item.keywords:
      item.add_marker(skip)

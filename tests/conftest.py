"""Test configuration: float64 everywhere (RaiSim's precision); float32 paths opt in."""

import jax

jax.config.update("jax_enable_x64", True)

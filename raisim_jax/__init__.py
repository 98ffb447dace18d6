"""raisim_jax: RaiSim on JAX."""

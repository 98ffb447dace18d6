"""Runnable examples of the pure API (python -m raisim_jax.examples.<name>)."""

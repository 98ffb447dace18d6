"""JAX's persistent compilation cache for OO-layer users, on by default.

The first World of a process points JAX's compilation cache at the user's cache directory
(`$XDG_CACHE_HOME/raisim_jax/jax_compilation_cache`, else `~/.cache/...`), so a second run of
the same script loads the compiled step instead of compiling it again. It is the only
process-wide JAX setting the library touches, and only while it is unset:

- a cache directory the user configured (`jax_compilation_cache_dir` or the environment
  variable `JAX_COMPILATION_CACHE_DIR`) is kept as it is;
- `RAISIM_JAX_COMPILATION_CACHE=0` (or off/false/no) leaves it off; any other value is taken
  as the directory to use.
"""

import os

import jax

ENVIRONMENT_VARIABLE = "RAISIM_JAX_COMPILATION_CACHE"
_OFF = ("0", "off", "false", "no")


def default_directory() -> str:
  base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
  return os.path.join(base, "raisim_jax", "jax_compilation_cache")


def enable_default():
  """Points JAX's persistent compilation cache at the default directory unless the user
  configured one or turned it off (see the module docstring). Returns the directory in use,
  or None."""
  configured = jax.config.jax_compilation_cache_dir
  if configured:
    return configured
  setting = os.environ.get(ENVIRONMENT_VARIABLE, "").strip()
  if setting.lower() in _OFF:
    return None
  directory = setting or default_directory()
  jax.config.update("jax_compilation_cache_dir", directory)
  return directory

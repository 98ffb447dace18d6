"""The OO World's step functions, traced once per structure and kept on disk.

JAX's persistent compilation cache (compilation_cache.py) skips XLA compilation on a second
run, but every run still traces and lowers the step in Python (about 2 s for a small world on
2 cores). `ExportedStep` stores the lowered step (`jax.export`, StableHLO) next to the
compilation cache, keyed by the step's name, the pytree structure (static fields included),
shapes and dtypes of its arguments, the x64 mode, the JAX version and a hash of raisim_jax's
own source files, so a changed engine never loads a stale step. A later run deserializes it
(milliseconds) and XLA compilation hits the persistent cache.

On CPU the OO steps compile with XLA's classic loop emitters (`xla_cpu_use_fusion_emitters`
off, `compiler_options`): the World's one-world step compiles 20-30% faster at the same step
time, while batched programs run faster with XLA's default emitters, which they keep
(docs/architecture.md, "Performance notes"). The option is passed per program, never through
process-wide flags.

Arguments and results are passed as flat leaf lists; the result has the structure of the last
argument (the State), which holds for integrate1, integrate2, step and
step_no_contact_detection. Anything that fails while exporting or loading falls back to the
plain jitted function (with one warning), so this never changes results, only start-up time.
"""

import functools
import hashlib
import os
import pathlib
import warnings

import jax
import numpy as np

import raisim_jax

# Counts for tests and benchmarks: how each structure was obtained in this process.
stats = {"exported": 0, "loaded": 0, "fallback": 0}
_directory = None   # where exports live (use_directory); None: plain jit


def use_directory(cache_directory):
  """Stores exports under `cache_directory`/raisim_jax_exported_steps (None turns them off)."""
  global _directory
  _directory = (None if cache_directory is None
                else pathlib.Path(cache_directory) / "raisim_jax_exported_steps")


@functools.lru_cache(maxsize=1)
def _source_hash() -> str:
  """sha256 of every raisim_jax source file (path and content) and the JAX version."""
  digest = hashlib.sha256(jax.__version__.encode())
  root = pathlib.Path(raisim_jax.__file__).parent
  for path in sorted(root.rglob("*.py")):
    digest.update(str(path.relative_to(root)).encode())
    digest.update(path.read_bytes())
  return digest.hexdigest()[:24]


def compiler_options() -> dict:
  """XLA options for the OO layer's one-world step programs on the default backend (see the
  module docstring)."""
  return {"xla_cpu_use_fusion_emitters": False} if jax.default_backend() == "cpu" else {}


class ExportedStep:
  """A drop-in for `jax.jit(function)` with a state-shaped result, backed by exports stored
  in the directory set by `use_directory` (none set: plain jit)."""

  def __init__(self, name, function):
    self._name = name
    self._jitted_step = None    # built on first use: the backend is known only then
    self._function = function
    self._calls = {}   # (treedef, avals, x64, directory) -> callable
    self._warned = False

  @property
  def _jitted(self):
    if self._jitted_step is None:
      self._jitted_step = jax.jit(self._function, compiler_options=compiler_options())
    return self._jitted_step

  def __call__(self, *args):
    if _directory is None:
      return self._jitted(*args)
    leaves, treedef = jax.tree.flatten(args)
    avals = tuple((np.shape(leaf), leaf.dtype if hasattr(leaf, "dtype") else np.asarray(leaf).dtype)
                  for leaf in leaves)
    key = (treedef, avals, bool(jax.config.jax_enable_x64), _directory)
    call = self._calls.get(key)
    if call is None:
      call = self._calls[key] = self._obtain(treedef, leaves, key)
    if call is self._jitted:
      return call(*args)
    state_treedef = jax.tree.structure(args[-1])
    return jax.tree.unflatten(state_treedef, call(*leaves))

  def clear_cache(self):
    self._calls.clear()
    self._jitted.clear_cache()

  def _cache_size(self):
    """Executables compiled so far: those of the plain jit and of every loaded export."""
    exports = {id(call): call for call in self._calls.values() if call is not self._jitted}
    return self._jitted._cache_size() + sum(call._cache_size() for call in exports.values())

  def _obtain(self, treedef, leaves, key):
    path = _directory / f"{self._name}-{self._key_digest(key)}.stablehlo"
    try:
      if path.exists():
        exported = jax.export.deserialize(bytearray(path.read_bytes()))
        stats["loaded"] += 1
      else:
        def flat(*flat_leaves):
          return jax.tree.leaves(self._function(*jax.tree.unflatten(treedef, flat_leaves)))

        specs = [jax.ShapeDtypeStruct(shape, dtype) for shape, dtype in key[1]]
        exported = jax.export.export(jax.jit(flat))(*specs)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_bytes(exported.serialize())
        os.replace(temporary, path)       # atomic: concurrent runs never read half a file
        stats["exported"] += 1
      return jax.jit(exported.call, compiler_options=compiler_options())
    except Exception as error:  # noqa: BLE001 - an optimisation must never break a step
      stats["fallback"] += 1
      if not self._warned:
        self._warned = True
        warnings.warn(f"raisim_jax could not store or load the traced {self._name} in "
                      f"{_directory} ({type(error).__name__}: {error}); using plain "
                      f"jit (each run traces the step again)", stacklevel=5)
      return self._jitted

  def _key_digest(self, key):
    treedef, avals, x64, _ = key
    digest = hashlib.sha256(_source_hash().encode())
    digest.update(repr((str(treedef), [(shape, str(dtype)) for shape, dtype in avals],
                        x64)).encode())
    return digest.hexdigest()[:32]

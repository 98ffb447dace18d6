"""The OO World's step programs, compiled once per structure and kept on disk.

JAX's persistent compilation cache (compilation_cache.py) skips XLA compilation on a second
run, but every run still traces and lowers the step in Python (about 2 s for a small world on
2 cores) before it can look the compiled program up. `StoredStep` keeps the compiled
executable itself (`jax.experimental.serialize_executable`) next to the compilation cache,
keyed by the step's name, the pytree structure (static fields included), shapes, dtypes and
device of its arguments, the x64 mode, the JAX and jaxlib versions, the backend and its
version, `XLA_FLAGS`, the compile options and a hash of raisim_jax's own source files, so a
changed engine or toolchain never loads a stale program. A later run loads it and steps: no
tracing, lowering, cache-key hashing or compile (a stored `jax.export` of the traced step,
used before, still lowered it on every run, and lowering an exported call on CPU imports
scipy for jaxlib's LAPACK registration: ~0.3 s of a ~3 s second run).

On a miss the step is traced, lowered and compiled afresh, and the executable is stored. The
program is named after its stored key (`step_<digest>`), so JAX's compilation cache, whose
key starts with the program's name, never hands back an executable compiled for an older
key: one it had handed back (after a change to raisim_jax's source that left the step's HLO
alone) serialized without all its kernels on XLA:CPU (JAX 0.10.2), loaded, and failed its
first run with "NOT_FOUND: Function iota.9_kernel not found". (Turning the cache off around
the compile does not work: JAX decides once per process whether it uses the cache.)

On CPU the OO steps compile with XLA's classic loop emitters (`xla_cpu_use_fusion_emitters`
off, `compiler_options`): the World's one-world step compiles 20-30% faster at the same step
time, while batched programs run faster with XLA's default emitters, which they keep
(docs/architecture.md, "Performance notes"). The option is passed per program, never through
process-wide flags.

Arguments and results are passed as flat leaf lists; the result has the structure of the last
argument (the State), which holds for integrate1, integrate2, step and
step_no_contact_detection. A call whose leading arguments are the previous call's and whose
last argument is the State that call returned (a World stepping in a loop) reuses that call's
leaves and program: no flattening, shape key or lookup (~0.1 ms of a 10-object world's
0.8 ms `integrate()`). Anything that fails while storing or loading falls back to the plain
jitted function (with one warning), so this never changes results, only start-up time.
A stored program's first run in a process is checked: a runtime error there deletes the file,
warns once and steps with the plain jitted function. Like JAX's own cache, a stored program
is trusted otherwise: the directory must be the user's.
"""

import contextlib
import functools
import hashlib
import math
import os
import pathlib
import pickle
import warnings
import zlib
from typing import Any, NamedTuple

import jax
import jaxlib
from jax.experimental import serialize_executable

import raisim_jax

# Counts for tests and benchmarks: how each structure was obtained in this process.
stats = {"stored": 0, "loaded": 0, "fallback": 0}
_directory = None   # where stored steps live (use_directory); None: plain jit
SUBDIRECTORY = "raisim_jax_stored_steps"


def use_directory(cache_directory):
  """Stores compiled steps under `cache_directory`/SUBDIRECTORY (None turns them off)."""
  global _directory
  _directory = None if cache_directory is None else pathlib.Path(cache_directory) / SUBDIRECTORY


@functools.lru_cache(maxsize=1)
def _source_hash() -> str:
  """sha256 of every raisim_jax source file (path and content)."""
  digest = hashlib.sha256()
  root = pathlib.Path(raisim_jax.__file__).parent
  for path in sorted(root.rglob("*.py")):
    digest.update(str(path.relative_to(root)).encode())
    digest.update(path.read_bytes())
  return digest.hexdigest()[:24]


def compiler_options() -> dict:
  """XLA options for the OO layer's one-world step programs on the default backend (see the
  module docstring)."""
  return {"xla_cpu_use_fusion_emitters": False} if jax.default_backend() == "cpu" else {}


class _Chain(NamedTuple):
  """What a stored program's call leaves for the next call to continue from it."""
  leading: tuple          # the call's arguments but the last (the Model)
  leading_leaves: list    # their leaves
  result: Any             # the State it returned
  out: list               # that State's leaves
  call: Any               # the program
  result_treedef: Any
  x64: bool
  directory: Any


class StoredStep:
  """A drop-in for `jax.jit(function)` with a state-shaped result, backed by compiled
  programs stored in the directory set by `use_directory` (none set: plain jit)."""

  def __init__(self, name, function):
    self._name = name
    self._jitted_step = None    # built on first use: the backend is known only then
    self._function = function
    self._calls = {}   # (treedef, avals, x64, directory, device) -> callable
    self._unverified = {}   # key -> path of a loaded program not yet run in this process
    self._chain = None   # the last stored program's call, for the next one (`_chained_leaves`)
    self._warned = False

  @property
  def _jitted(self):
    if self._jitted_step is None:
      self._jitted_step = jax.jit(self._function, compiler_options=compiler_options())
    return self._jitted_step

  def __call__(self, *args):
    if _directory is None:
      return self._jitted(*args)
    x64 = bool(jax.config.jax_enable_x64)
    chained = self._chained_leaves(args, x64)
    if chained is not None:
      leaves, call, result_treedef = chained
      return self._chain_result(args, leaves, call(*leaves), call, result_treedef, x64)
    leaves, treedef = jax.tree.flatten(args)
    avals = tuple((tuple(leaf.shape), leaf.dtype) for leaf in leaves)
    device = _device_of(leaves)
    key = (treedef, avals, x64, _directory, device)
    call = self._calls.get(key)
    if call is None:
      call = self._calls[key] = self._obtain(treedef, leaves, key)
    if call is self._jitted:
      return call(*args)
    if key in self._unverified:
      path = self._unverified.pop(key)
      try:
        out = jax.block_until_ready(call(*leaves))   # a run's errors surface at its results
      except jax.errors.JaxRuntimeError as error:
        stats["fallback"] += 1
        self._warn(error, stacklevel=5)
        path.unlink(missing_ok=True)
        self._calls[key] = self._jitted
        return self._jitted(*args)
    else:
      out = call(*leaves)
    return self._chain_result(args, leaves, out, call, jax.tree.structure(args[-1]), x64)

  def _chain_result(self, args, leaves, out, call, result_treedef, x64):
    """The State of the flat results `out`, remembered with what the next call needs to
    continue from it."""
    result = jax.tree.unflatten(result_treedef, out)
    self._chain = _Chain(args[:-1], list(leaves[:len(leaves) - len(out)]), result, list(out),
                         call, result_treedef, x64, _directory)
    return result

  def _chained_leaves(self, args, x64):
    """(leaves, program, result treedef) of a call that continues the previous one: the
    same leading argument objects, the last argument the very State it returned, the same
    x64 mode and directory (so the same shapes, dtypes and device); else None."""
    chain = self._chain
    if (chain is None or args[-1] is not chain.result or chain.x64 != x64
        or chain.directory != _directory or len(args) - 1 != len(chain.leading)
        or any(a is not b for a, b in zip(args[:-1], chain.leading))):
      return None
    return chain.leading_leaves + chain.out, chain.call, chain.result_treedef

  def clear_cache(self):
    self._calls.clear()
    self._unverified.clear()
    self._chain = None
    self._jitted.clear_cache()

  def _cache_size(self):
    """Executables compiled or loaded so far: those of the plain jit and the stored ones."""
    stored = sum(call is not self._jitted for call in self._calls.values())
    return self._jitted._cache_size() + stored

  def _obtain(self, treedef, leaves, key):
    device = key[-1]
    try:
      digest = self._key_digest(key)
      path = _directory / f"{self._name}-{digest}.xla"
      if path.exists():
        payload, num_in, num_out = pickle.loads(zlib.decompress(path.read_bytes()))
        compiled = serialize_executable.deserialize_and_load(
            payload, jax.tree.structure((tuple(range(num_in)), {})),
            jax.tree.structure(list(range(num_out))), execution_devices=[device])
        stats["loaded"] += 1
        self._unverified[key] = path
        return compiled

      def flat(*flat_leaves):
        return jax.tree.leaves(self._function(*jax.tree.unflatten(treedef, flat_leaves)))
      flat.__name__ = f"{self._name}_{digest}"    # a fresh compile (module docstring)

      sharding = jax.sharding.SingleDeviceSharding(device)
      specs = [jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=sharding)
               for leaf in leaves]
      lowered = jax.jit(flat, compiler_options=compiler_options()).lower(*specs)
      with _no_compilation_cache_entry():
        compiled = lowered.compile()
      payload, in_tree, out_tree = serialize_executable.serialize(compiled)
      path.parent.mkdir(parents=True, exist_ok=True)
      temporary = path.with_suffix(f".{os.getpid()}.tmp")
      temporary.write_bytes(zlib.compress(pickle.dumps(
          (payload, in_tree.num_leaves, out_tree.num_leaves)), level=1))
      os.replace(temporary, path)       # atomic: concurrent runs never read half a file
      stats["stored"] += 1
      return compiled
    except Exception as error:  # noqa: BLE001 - an optimisation must never break a step
      stats["fallback"] += 1
      self._warn(error, stacklevel=6)
      return self._jitted

  def _warn(self, error, stacklevel):
    """Warns, once per step program, that a stored program failed and plain jit steps
    (`stacklevel` points at the user's World method call)."""
    if not self._warned:
      self._warned = True
      warnings.warn(f"raisim_jax could not store, load or run the compiled {self._name} in "
                    f"{_directory} ({type(error).__name__}: {error}); using plain "
                    f"jit (each run compiles the step again, or loads it from JAX's "
                    f"compilation cache)", stacklevel=stacklevel)

  def _key_digest(self, key):
    treedef, avals, x64, _, device = key
    digest = hashlib.sha256(_source_hash().encode())
    digest.update(repr((
        jax.__version__, jaxlib.__version__, device.client.platform,
        device.client.platform_version, device.device_kind, device.id,
        os.environ.get("XLA_FLAGS", ""), sorted(compiler_options().items()),
        # Settings that change the compiled program: an executable compiled unoptimized (the
        # test suite compiles so) and loaded by a later run stepped 2x slower.
        jax.config.read("jax_disable_most_optimizations"),
        str(jax.config.jax_default_matmul_precision),
        str(treedef), [(shape, str(dtype)) for shape, dtype in avals], x64)).encode())
    return digest.hexdigest()[:32]


def _no_compilation_cache_entry():
  """A context in which JAX's persistent compilation cache writes no entry (on this thread):
  a stored program's own entry there is never read (its name is unique to its stored key,
  module docstring), and writing it serialized and compressed the executable a second time,
  ~0.5 s of a 10-object world's cold first `integrate()`. JAX offers no public switch per
  compile, so this raises the thread-local minimum compile time for an entry; a JAX without
  that setting writes the entry as before."""
  try:
    from jax._src import config as jax_config    # noqa: PLC0415 - private, optional
    return jax_config.persistent_cache_min_compile_time_secs(math.inf)
  except (ImportError, AttributeError, TypeError):
    return contextlib.nullcontext()


def _device_of(leaves):
  """The device of the first leaf that is on one (the World commits all of them to its
  device), else JAX's default device."""
  for leaf in leaves:
    devices = getattr(leaf, "devices", None)
    if devices is not None:
      return next(iter(devices()))
  return jax.devices()[0]

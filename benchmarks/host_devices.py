"""Every CPU core for batched benchmark runs: one XLA host device per core.

XLA runs one CPU device's program on about one core (`--xla_cpu_multi_thread_eigen=false`
keeps the small batched products off Eigen's thread pool, which costs ~4x; see DESIGN.md).
So that a batched run uses the cores that MuJoCo C's multi-threaded `rollout` uses, the
scripts split our batch over one host device per core (`jax.shard_map`, see
`timing.batched`; `mjcf_models.py` keeps MJX on one device, see there). Batch 1 runs on one
device.

`configure()` must run before JAX is imported: it reads `--devices N` from the command line
(default: `os.cpu_count()`) and adds `--xla_force_host_platform_device_count=N` and
`--xla_cpu_multi_thread_eigen=false` to `XLA_FLAGS` unless they are set there already.
Imported after JAX (the test suite loads the scripts in its own process) it changes nothing
and the runs use the devices that process has.

`--one-core` pins the process to one core before JAX starts (XLA then sizes its thread
pools to one thread) and uses one device: both engines of a script run on one core. MJX needs
it at large batches: its Cholesky and triangular solves are jaxlib's LAPACK kernels, which
split a batch over XLA's pool and block the pool thread that waits for the parts; two running
at once on a pool of 2 threads deadlock (a native stack of the hung humanoid at batch 1,024
shows both pool threads in `jax::ParallelBatchMap`, under `lapack_spotrf_ffi` and
`lapack_strsm_ffi`; raisim_jax's step calls no LAPACK kernel, see raisim_jax/math/dense.py).
With one pool thread the kernels run their batch inline.

Pure standard library: importing JAX here would be too early.
"""

import os
import sys


def one_core(argv=None) -> bool:
  """Whether `argv` (default `sys.argv[1:]`) asks for `--one-core`."""
  return "--one-core" in (sys.argv[1:] if argv is None else argv)


def requested(argv=None) -> int:
  """1 with `--one-core`, else the `--devices N` (or `--devices=N`) of `argv` (default
  `sys.argv[1:]`), else the number of CPU cores."""
  argv = sys.argv[1:] if argv is None else argv
  if one_core(argv):
    return 1
  for k, argument in enumerate(argv):
    if argument == "--devices" and k + 1 < len(argv):
      return int(argv[k + 1])
    if argument.startswith("--devices="):
      return int(argument.split("=", 1)[1])
  return os.cpu_count() or 1


def configure(argv=None) -> None:
  """Adds the host device count and the Eigen setting to XLA_FLAGS and, with `--one-core`,
  pins the process to its first allowed core (before JAX starts)."""
  if "jax" in sys.modules:
    return
  if one_core(argv):
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
  flags = os.environ.get("XLA_FLAGS", "")
  if "xla_cpu_multi_thread_eigen" not in flags:
    flags += " --xla_cpu_multi_thread_eigen=false"
  if "xla_force_host_platform_device_count" not in flags:
    flags += f" --xla_force_host_platform_device_count={requested(argv)}"
  os.environ["XLA_FLAGS"] = flags.strip()


def add_argument(parser) -> None:
  """The `--devices` option (already applied by `configure`), so argparse accepts it."""
  parser.add_argument("--devices", type=int, default=None,
                      help="CPU host devices (cores) to split the batch over and MuJoCo C "
                           "threads; default: every core. Read before JAX starts.")
  parser.add_argument("--one-core", action="store_true",
                      help="pin the process to one core and use one device (MJX's LAPACK "
                           "kernels deadlock a pool of 2+ threads at large batches)")

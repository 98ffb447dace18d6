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

Pure standard library: importing JAX here would be too early.
"""

import os
import sys


def requested(argv=None) -> int:
  """The `--devices N` (or `--devices=N`) of `argv` (default `sys.argv[1:]`), else the
  number of CPU cores."""
  argv = sys.argv[1:] if argv is None else argv
  for k, argument in enumerate(argv):
    if argument == "--devices" and k + 1 < len(argv):
      return int(argv[k + 1])
    if argument.startswith("--devices="):
      return int(argument.split("=", 1)[1])
  return os.cpu_count() or 1


def configure(argv=None) -> None:
  """Adds the host device count and the Eigen setting to XLA_FLAGS (before JAX starts)."""
  if "jax" in sys.modules:
    return
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

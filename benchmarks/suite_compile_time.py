"""Where the test suite's time goes: per test, JAX's tracing, lowering and backend compile time
and the persistent compilation cache's hits, misses and time saved (from `jax.monitoring`
events), summed per test file.

As a pytest plugin it appends one JSON line per test to `<dir>/<xdist worker>.jsonl`, the
directory named by RAISIM_JAX_COMPILE_LOG (nothing is logged without it); run from the
repository root:

    RAISIM_JAX_COMPILE_LOG=/tmp/compile_log .venv/bin/python -m pytest -q -n auto \
        --dist loadfile -p benchmarks.suite_compile_time
    .venv/bin/python benchmarks/suite_compile_time.py /tmp/compile_log [--json out.json]

Tests that run in a subprocess (notebooks, the README's examples, the two-process run) show
their wall time only. Backend compile time includes reads from the persistent cache.
"""

import argparse
import collections
import glob
import json
import os
import time

import pytest

TRACE = "/jax/core/compile/jaxpr_trace_duration"
LOWER = "/jax/core/compile/jaxpr_to_mlir_module_duration"
BACKEND = "/jax/core/compile/backend_compile_duration"
SAVED = "/jax/compilation_cache/compile_time_saved_sec"
HITS = "/jax/compilation_cache/cache_hits"
MISSES = "/jax/compilation_cache/cache_misses"
EVENTS = {TRACE: "trace", LOWER: "lower", BACKEND: "backend", HITS: "hits", MISSES: "misses",
          SAVED: "saved"}
COLUMNS = ("wall",) + tuple(EVENTS.values())
VARIABLE = "RAISIM_JAX_COMPILE_LOG"

_totals = collections.defaultdict(float)
_log = None


def _record_duration(event, duration, **_):
  _totals[event] += duration


def _record_event(event, **_):
  _totals[event] += 1


def pytest_configure(config):
  if os.environ.get(VARIABLE):
    from jax import monitoring
    monitoring.register_event_duration_secs_listener(_record_duration)
    monitoring.register_event_listener(_record_event)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
  """Setup, call and teardown of one test: the events' increase and the wall time."""
  global _log
  directory = os.environ.get(VARIABLE)
  if not directory:
    yield
    return
  if _log is None:
    os.makedirs(directory, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    _log = open(os.path.join(directory, worker + ".jsonl"), "a")
  before, start = dict(_totals), time.perf_counter()
  yield
  record = {column: _totals[event] - before.get(event, 0.0) for event, column in EVENTS.items()}
  record.update(nodeid=item.nodeid, wall=time.perf_counter() - start)
  _log.write(json.dumps(record) + "\n")
  _log.flush()


def summarize(directory):
  """Rows per test file (sums of the logged columns), longest wall time first, and a total."""
  per_file = collections.defaultdict(lambda: dict.fromkeys(COLUMNS, 0.0))
  for path in glob.glob(os.path.join(directory, "*.jsonl")):
    with open(path) as lines:
      for line in lines:
        record = json.loads(line)
        row = per_file[record["nodeid"].split("::", 1)[0]]
        for column in COLUMNS:
          row[column] += record[column]
  rows = [dict(file=name, **row) for name, row in per_file.items()]
  rows.sort(key=lambda row: -row["wall"])
  total = dict(file="TOTAL", **{c: sum(r[c] for r in rows) for c in COLUMNS})
  return rows + [total]


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("directory")
  parser.add_argument("--json")
  args = parser.parse_args(argv)
  rows = summarize(args.directory)
  print(f"{'file':56s}" + "".join(f"{c:>9s}" for c in COLUMNS))
  for row in rows:
    print(f"{row['file']:56s}" + "".join(f"{row[c]:9.1f}" for c in COLUMNS))
  if args.json:
    with open(args.json, "w") as out:
      json.dump({"rows": rows}, out, indent=1)
  return rows


if __name__ == "__main__":
  main()

"""Where a batched step's time goes, by raisim_jax source line (#12 item 6: profile, then
remove what costs).

Runs `jit(vmap(rollout))` of one model once under `jax.profiler` with XLA:CPU's per-thunk
trace events on (`xla_cpu_enable_xprof_traceme`, a compile option of this program only),
takes each thunk's exclusive time (its own span minus the thunks nested in it: a loop's or a
conditional's body), and attributes it to the innermost Python frame of the HLO instruction
it runs (the stack-frame tables in the compiled module's text). Prints the shares by file,
function and line, and the most expensive thunks with their HLO shapes.

    python benchmarks/step_profile.py [--model ant|hopper|humanoid|quadruped|pile] [--batch 1024]
        [--steps 10] [--top 25] [--json F]

`--quick` (hopper, batch 2, 2 steps) is what the test suite runs so the script cannot rot.
Float32, the solver's batched (forward-only) mode, one device. Shares are what to read:
absolute times include the profiler's overhead and depend on the machine's load.
"""

import argparse
import collections
import glob
import gzip
import json
import os
import re
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import raisim_jax as rj  # noqa: E402

GYMNASIUM = {"hopper": "hopper.xml", "ant": "ant.xml", "humanoid": "humanoid.xml"}


def world_of(name):
  """(model, state) of `name` in float32 with the solver in its batched mode: Gymnasium's
  MJCF file at its initial pose, the standing quadruped of tests/legged settled for 1 s, or
  `scenes.py`'s 216-sphere pile settled for 1 s."""
  if name == "pile":   # benchmarks/scenes.py's 216 spheres after 1 s of settling
    from benchmarks import scenes
    return scenes.settled("pile", 1000)
  if name == "quadruped":
    from tests.legged import scenarios
    world, _, _, feet = scenarios.standing_world("quadruped", jnp.float32)
    *_, settled = scenarios.simulate(world, feet, 1000)
    world.setState(settled)
  else:
    import gymnasium
    path = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets",
                        GYMNASIUM[name])
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")   # MJCF features the reader maps approximately
      world = rj.World(path, dtype=jnp.float32)
  world.setContactSolverDifferentiable(False)
  return world.compile()


def exclusive_times(trace_events, instructions):
  """{thunk name: exclusive microseconds} of the complete ("X") events of a trace named after
  one of `instructions` (the program's HLO instructions: JAX's Python spans, the runtime's
  and the executor's own are left out), per thread: an event's duration minus that of the
  thunk events nested in it (a loop's or a conditional's body)."""
  by_thread = collections.defaultdict(list)
  for event in trace_events:
    if event.get("ph") == "X" and event["name"] in instructions:
      by_thread[event["tid"]].append(event)
  exclusive = collections.Counter()
  for events in by_thread.values():
    events.sort(key=lambda e: (e["ts"], -e["dur"]))
    open_events = []
    for event in events:
      while open_events and open_events[-1]["ts"] + open_events[-1]["dur"] <= event["ts"]:
        open_events.pop()
      if open_events:
        exclusive[open_events[-1]["name"]] -= event["dur"]
      exclusive[event["name"]] += event["dur"]
      open_events.append(event)
  return exclusive


def source_lines(hlo_text):
  """{HLO instruction name: "file:function:line"} of the innermost Python frame each
  instruction was traced at (raisim_jax's files relative to the package)."""
  tables = {"FileNames": {}, "FunctionNames": {}, "FileLocations": {}, "StackFrames": {}}
  section = None
  for line in hlo_text.split("\n"):
    stripped = line.strip()
    if stripped in tables:
      section = tables[stripped]
      continue
    if stripped.startswith(("%", "ENTRY")):
      break
    match = re.match(r"^(\d+) (.*)$", stripped)
    if section is not None and match:
      section[int(match.group(1))] = match.group(2)
  files = {k: v.strip('"').split("raisim_jax/")[-1] for k, v in tables["FileNames"].items()}
  functions = {k: v.strip('"') for k, v in tables["FunctionNames"].items()}
  locations = {}
  for k, v in tables["FileLocations"].items():
    fields = dict(re.findall(r"(\w+)=(\d+)", v))
    locations[k] = (f"{files[int(fields['file_name_id'])]}:"
                    f"{functions[int(fields['function_name_id'])]}:{fields['line']}")
  frames = {k: locations[int(dict(re.findall(r"(\w+)=(\d+)", v))["file_location_id"])]
            for k, v in tables["StackFrames"].items()}
  where = {}
  for match in re.finditer(r"^\s*(?:ROOT )?%([\w.\-]+) = .*?stack_frame_id=(\d+)", hlo_text,
                           re.M):
    where.setdefault(match.group(1), frames.get(int(match.group(2)), "?:?:?"))
  return where


def profile(name, batch, steps):
  """(exclusive microseconds per thunk, thunk -> source line, thunk -> HLO shape, seconds of
  one profiled run)."""
  model, state = world_of(name)
  states = rj.batching.replicate(state, batch)
  run = jax.jit(jax.vmap(lambda s: rj.rollout(model, s, steps)[0]),
                compiler_options={"xla_cpu_enable_xprof_traceme": True})
  executable = run.lower(states).compile()
  jax.block_until_ready(executable(states))
  with tempfile.TemporaryDirectory() as directory:
    start = time.perf_counter()
    with jax.profiler.trace(directory, create_perfetto_trace=True):
      jax.block_until_ready(executable(states))
    seconds = time.perf_counter() - start
    (path,) = glob.glob(os.path.join(directory, "**", "perfetto_trace.json.gz"),
                        recursive=True)
    with gzip.open(path) as f:
      trace = json.load(f)
  events = trace["traceEvents"] if isinstance(trace, dict) else trace
  text = executable.as_text()
  shapes = dict(re.findall(r"^\s*(?:ROOT )?%([\w.\-]+) = (\S+)", text, re.M))
  return exclusive_times(events, shapes), source_lines(text), shapes, seconds


def shares(exclusive, where, key):
  """[(label, share of the total)] by `key(file:function:line)`, largest first."""
  total = sum(exclusive.values())
  grouped = collections.Counter()
  for thunk, micros in exclusive.items():
    grouped[key(where.get(thunk, "?:?:?"))] += micros
  return [(label, micros / total) for label, micros in grouped.most_common()]


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--model", default="ant", choices=sorted(GYMNASIUM) + ["quadruped", "pile"])
  parser.add_argument("--batch", type=int, default=1024)
  parser.add_argument("--steps", type=int, default=10)
  parser.add_argument("--top", type=int, default=25)
  parser.add_argument("--quick", action="store_true", help="hopper, batch 2, 2 steps")
  parser.add_argument("--json", help="write the shares to this file")
  args = parser.parse_args(argv)
  if args.quick:
    args.model, args.batch, args.steps = "hopper", 2, 2
  exclusive, where, shapes, seconds = profile(args.model, args.batch, args.steps)
  total = sum(exclusive.values())
  print(f"{args.model}, batch {args.batch}, {args.steps} steps: {seconds:.3f} s profiled, "
        f"{total / 1e3:.1f} ms in thunks")
  result = {"model": args.model, "batch": args.batch, "steps": args.steps,
            "profiled_seconds": seconds, "thunk_ms": total / 1e3}
  for title, key in (("file", lambda w: w.split(":")[0]),
                     ("function", lambda w: ":".join(w.split(":")[:2])),
                     ("line", lambda w: w)):
    rows = shares(exclusive, where, key)
    result["by_" + title] = rows
    print(f"\nby {title}:")
    for label, share in rows[:args.top]:
      print(f"  {100 * share:5.1f}%  {label}")
  print("\nthunks:")
  for thunk, micros in exclusive.most_common(args.top):
    print(f"  {100 * micros / total:5.1f}%  {thunk:28s} {shapes.get(thunk, ''):34s} "
          f"{where.get(thunk, '?')}")
  if args.json:
    with open(args.json, "w") as f:
      json.dump(result, f, indent=1)
  return result


if __name__ == "__main__":
  main()

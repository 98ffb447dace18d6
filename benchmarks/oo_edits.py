"""OO World start-up and edit costs (issue #11): a script that builds a 10-object world and
integrates 1,000 times, cold (empty caches) and on a second run (persistent compilation cache
and stored compiled step), and the cost of adding an 11th sphere to the stepped world and
stepping again.

    .venv/bin/python benchmarks/oo_edits.py [--json out.json]

Each script runs in a fresh interpreter; wall time includes `import raisim_jax`.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time

SCRIPT = textwrap.dedent("""
    import time
    start = time.perf_counter()
    import raisim_jax as rj
    world = rj.World()
    world.addGround()
    for k in range(10):
      body = world.addSphere(0.1, 1.0) if k % 2 else world.addBox(0.2, 0.2, 0.2, 1.0)
      body.setPosition(0.5 * k, 0, 0.3)
    first = time.perf_counter()
    world.integrate()
    first = time.perf_counter() - first
    for _ in range(999):
      world.integrate()
    loop = time.perf_counter() - start
    edit = time.perf_counter()
    world.addSphere(0.1, 1.0).setPosition(0, 2, 0.3)
    world.integrate()
    edit = time.perf_counter() - edit
    print(first, loop, edit)
""")


def run(cache):
  env = dict(os.environ, RAISIM_JAX_COMPILATION_CACHE=cache)
  env.pop("JAX_COMPILATION_CACHE_DIR", None)
  start = time.perf_counter()
  out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                       env=env, check=True)
  wall = time.perf_counter() - start
  first, script, edit = map(float, out.stdout.split()[-3:])
  return dict(process_wall_s=wall, script_s=script, first_integrate_s=first,
              add_11th_sphere_and_step_s=edit)


def main():
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--json", help="write the figures to this file")
  args = parser.parse_args()
  with tempfile.TemporaryDirectory() as cache:
    rows = {"no cache (RAISIM_JAX_COMPILATION_CACHE=0)": run("0"),
            "cold (empty cache)": run(cache),
            "second run": run(cache)}
  print(f"{'run':42s} {'process s':>10s} {'script s':>9s} {'1st step s':>10s} "
        f"{'add+step s':>10s}")
  for name, row in rows.items():
    print(f"{name:42s} {row['process_wall_s']:10.2f} {row['script_s']:9.2f} "
          f"{row['first_integrate_s']:10.2f} {row['add_11th_sphere_and_step_s']:10.3f}")
  if args.json:
    with open(args.json, "w") as f:
      json.dump(rows, f, indent=2)


if __name__ == "__main__":
  main()

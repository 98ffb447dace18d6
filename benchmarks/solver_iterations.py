"""Contact-solver sweeps per step against mass ratio (issue #9, item 5).

A stack of five 0.5 x 0.5 x 0.2 m boxes on the ground, float64, dt = 1 ms, default solver
settings (threshold 1e-8 on the largest impulse change of a sweep, 150 sweeps at most); 2 s
simulated. Reports the mean sweeps per step over the second second, the fraction of steps at
the 150-sweep cap and the largest drift of a box, for both sweep orders.

    .venv/bin/python benchmarks/solver_iterations.py [--json out.json]
"""

import argparse
import json

import jax
import numpy as np

import raisim_jax as rj

MASSES = {
    "1:1:1:1:1": [1, 1, 1, 1, 1],
    "10:7:4:2:1 (heavy at the bottom)": [10, 7, 4, 2, 1],
    "1:2:4:7:10 (heavy on top)": [1, 2, 4, 7, 10],
    "1:10:1:10:1": [1, 10, 1, 10, 1],
    "1:1:1:1:100": [1, 1, 1, 1, 100],
}


def run(masses, forward_order):
  world = rj.World()
  world.setTimeStep(1e-3)
  world.addGround()
  for k, mass in enumerate(masses):
    world.addBox(0.5, 0.5, 0.2, float(mass)).setPosition(0, 0, 0.1 + 0.2 * k)
  world.setContactSolverIterationOrder(forward_order)
  world.setSleepingEnabled(False)   # a resting stack sleeps (no sweeps) from its third step
  model, state = world.compile()
  _, trajectory = jax.jit(rj.rollout, static_argnums=2)(model, state, 2000)
  sweeps = np.asarray(trajectory.solver_iterations)[1000:]
  position = np.asarray(trajectory.bodies.position[:, 1:1 + len(masses)])
  return {"mean_sweeps": float(sweeps.mean()), "at_cap": float((sweeps >= 150).mean()),
          "drift_m": float(np.abs(position - position[0]).max())}


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--json")
  args = parser.parse_args()
  with jax.enable_x64(True):
    results = {}
    print("| Masses (bottom to top) | Order | Mean sweeps | Steps at cap | Drift (m) |")
    print("|---|---|---|---|---|")
    for name, masses in MASSES.items():
      for forward in (True, False):
        r = run(masses, forward)
        results[f"{name}, {'forward' if forward else 'reverse'}"] = r
        print(f"| {name} | {'forward' if forward else 'reverse'} | {r['mean_sweeps']:.1f} | "
              f"{100 * r['at_cap']:.0f}% | {r['drift_m']:.1e} |", flush=True)
  if args.json:
    with open(args.json, "w") as f:
      json.dump(results, f, indent=1)


if __name__ == "__main__":
  main()

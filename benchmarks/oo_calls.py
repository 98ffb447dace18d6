"""Per-call latency of the OO World's common calls, as a single-world script makes them
(float64, RaiSim's precision): `integrate()`, single-body setters and getters on the resting
9-body scene (`scenes.py`), and an articulated system's setters and getters and one control
loop iteration (set PD targets, integrate, read the state) on the standing quadruped
(a getter that needs the kinematics or the contact list builds it once per state: the
getter rows are the cached reads, the `integrate() + ...` rows a step and a first read).
Microseconds per call after a first (compiling) call; MuJoCo's `mj_step` on the same 9-body
scene for scale where MuJoCo is installed.

    .venv/bin/python benchmarks/oo_calls.py [--calls 300] [--json out.json] [--quick]

Not a test: numbers depend on the machine.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks import scenes  # noqa: E402
from tests.legged import scenarios  # noqa: E402


def per_call_us(call, calls):
  """Microseconds per `call()` over `calls` calls, after one call outside the clock."""
  call()
  start = time.perf_counter()
  for _ in range(calls):
    call()
  return 1e6 * (time.perf_counter() - start) / calls


def body_calls(calls, settle):
  """{call: us} on the resting 9-body scene (one of its spheres for the body calls)."""
  world = scenes.world_of("resting")
  for _ in range(settle):
    world.integrate()
  body = world.getObjList()[-1]
  position, velocity = body.getPosition(), body.getLinearVelocity()
  return {
      "integrate()": per_call_us(world.integrate, calls),
      "getPosition()": per_call_us(body.getPosition, calls),
      "getLinearVelocity()": per_call_us(body.getLinearVelocity, calls),
      "getRotationMatrix()": per_call_us(body.getRotationMatrix, calls),
      "getKineticEnergy()": per_call_us(body.getKineticEnergy, calls),
      "setPosition(x, y, z)": per_call_us(lambda: body.setPosition(*position), calls),
      "setVelocity(v, w)": per_call_us(lambda: body.setVelocity(*velocity, 0, 0, 0), calls),
      "setExternalForce(0, f)": per_call_us(lambda: body.setExternalForce(0, [0, 0, 0.0]),
                                            calls),
  }


def robot_calls(calls, settle):
  """{call: us} on the standing quadruped under PD towards its nominal stance."""
  world, robot, nominal, feet = scenarios.standing_world("quadruped", jnp.float64)
  for _ in range(settle):
    world.integrate()
  zero = np.zeros(robot.getDOF())

  def control_loop():
    robot.setPdTarget(nominal, zero)
    world.integrate()
    robot.getGeneralizedCoordinate()
    robot.getGeneralizedVelocity()

  return {
      "integrate()": per_call_us(world.integrate, calls),
      "getGeneralizedCoordinate()": per_call_us(robot.getGeneralizedCoordinate, calls),
      "getFramePosition(foot)": per_call_us(lambda: robot.getFramePosition(feet[0]), calls),
      "getDenseFrameJacobian(foot)": per_call_us(lambda: robot.getDenseFrameJacobian(feet[0]),
                                                 calls),
      "setGeneralizedForce(tau)": per_call_us(lambda: robot.setGeneralizedForce(zero), calls),
      "setPdTarget(q, u)": per_call_us(lambda: robot.setPdTarget(nominal, zero), calls),
      "control loop (setPdTarget, integrate, 2 getters)": per_call_us(control_loop, calls),
      # Reads that build per-state caches (contact list, kinematics), right after a step:
      "integrate() + getContacts()": per_call_us(
          lambda: (world.integrate(), robot.getContacts()), calls),
      "integrate() + getFramePosition(foot)": per_call_us(
          lambda: (world.integrate(), robot.getFramePosition(feet[0])), calls),
      "integrate() + getEnergy()": per_call_us(
          lambda: (world.integrate(), robot.getEnergy()), calls),
  }


def mj_step_us(calls, settle):
  """`mj_step` on the resting 9-body scene (None without MuJoCo)."""
  try:
    import mujoco
  except ImportError:
    return None
  model, data, _ = scenes.mujoco_model("resting", settle_steps=settle)
  return per_call_us(lambda: mujoco.mj_step(model, data), calls)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--calls", type=int, default=300, help="calls timed per figure")
  parser.add_argument("--json", help="write the figures to this file")
  parser.add_argument("--quick", action="store_true", help="few calls (CI's smoke run)")
  args = parser.parse_args(argv)
  calls, settle = (5, 2) if args.quick else (args.calls, 300)
  rows = ([dict(scene="9 bodies resting", call=call, us=us)
           for call, us in body_calls(calls, settle).items()]
          + [dict(scene="quadruped standing", call=call, us=us)
             for call, us in robot_calls(calls, settle).items()])
  step = mj_step_us(calls, settle)
  print(f"backend={jax.default_backend()} float64 calls={calls}")
  print("| scene | call | us per call |\n|---|---|---|")
  for row in rows:
    print(f"| {row['scene']} | {row['call']} | {row['us']:,.1f} |")
  if step is not None:
    print(f"mj_step on the 9-body scene: {step:,.1f} us")
  if args.json:
    with open(args.json, "w") as f:
      json.dump(dict(rows=rows, mj_step_us=step), f, indent=2)
  return rows, step


if __name__ == "__main__":
  main()

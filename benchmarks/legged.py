"""The standing quadruped under PD control: env-steps per second and compile time of the pure
step under vmap (float32, solver in its batched mode), and MuJoCo C on the same URDF in the
same run (`mujoco.rollout`, one thread per core), with the ratio. Batches above 1 are split
over one XLA host device per core (`host_devices.py`; `--devices N` to change).

Run: `python benchmarks/legged.py [--robot quadruped|a1|solo12] [--batches 1,256,1024] [--devices N]
[--json F]`
(MuJoCo needs the `bench` extra: `pip install -e ".[bench]"`; without it that column is
skipped). Not a test: numbers depend on the machine; compare ratios taken in one run.

The MuJoCo model is the same URDF (RaiSim's capsule `height` renamed to URDF's `length`), a
free joint on the root, a ground plane, position actuators with the same kp / kd, dt = 1e-3,
settled for 1 s like ours; MuJoCo's own defaults otherwise (float64, Newton solver, pyramidal
friction cones).
"""

import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from benchmarks import host_devices  # noqa: E402
host_devices.configure()   # one host device per core, before JAX starts

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import raisim_jax as rj  # noqa: E402
from raisim_jax.collision import detection  # noqa: E402
from benchmarks import timing  # noqa: E402
from tests.legged import scenarios  # noqa: E402

STEPS = 100


def measure(model, state, batch, steps=STEPS):
  """(env-steps/s, compile seconds) of `steps` steps of `batch` standing robots."""
  run, inputs = timing.batched(lambda s: rj.rollout(model, s, steps)[0], state, batch)
  compile_seconds, best = timing.timed(run, inputs, 3)
  return batch * steps / best, compile_seconds


def detection_ms(model, state, batch, steps=STEPS):
  """Milliseconds of collision detection per step call (all `batch` worlds), inside one
  compiled scan over the states of a real trajectory (so nothing can be hoisted), vmapped
  for a batch > 1; compare with the step's time per call from `measure`. Timing separate
  jitted calls instead adds the dispatch of a whole State to each figure (that overstated
  detection's share of one world about fivefold)."""
  _, trajectory = rj.rollout(model, state, steps)

  def detect_along(states):
    return jax.lax.scan(lambda c, s: (c + jnp.sum(detection.detect_contacts(model, s).depth),
                                      None), jnp.zeros((), model.dtype), states)[0]

  if batch == 1:
    run_detect, states = jax.jit(detect_along), trajectory
  else:
    run_detect = jax.jit(jax.vmap(detect_along, in_axes=1))
    states = jax.tree.map(lambda x: jnp.broadcast_to(x[:, None], (x.shape[0], batch) + x.shape[1:]),
                          trajectory)
  return 1e3 * timing.timed(run_detect, states, 3)[1] / steps


def mujoco_setup(robot_name):
  """(MjModel, settled full-physics state, control (12,)) or None without mujoco."""
  try:
    import mujoco
  except ImportError:
    return None
  path, _, leg, height, kp, kd = scenarios.ROBOTS[robot_name]
  text = open(path).read()
  text = re.sub(r"(<capsule[^>]*?)\bheight=", r"\1length=", text)
  # package://<package>/... mesh paths as absolute paths beside the package's root, where
  # MuJoCo keeps them (it would look for the bare file name in meshdir).
  share = os.path.dirname(path.split("/robots/")[0]) if "/robots/" in path else ""
  text = re.sub(r'filename="package://([^"]+)"',
                lambda m: f'filename="{os.path.join(share, m.group(1))}"', text)
  spec = mujoco.MjSpec.from_string(text)
  spec.meshdir = os.path.dirname(path)
  spec.option.timestep = 1e-3
  spec.worldbody.first_body().add_freejoint()
  # As in raisim_jax, a robot's meshes do not collide with its own bodies (their hulls
  # overlap at the joints: solo12's base and upper legs by 4 mm, which pushed its hips apart).
  for geom in spec.geoms:
    if geom.type == mujoco.mjtGeom.mjGEOM_MESH:
      geom.conaffinity = 0
  spec.worldbody.add_geom(type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 1])
  hinges = [j.name for b in spec.bodies for j in b.joints
            if j.type == mujoco.mjtJoint.mjJNT_HINGE]
  for name in hinges:
    spec.add_actuator(target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT,
                      gainprm=[kp] + [0] * 9, biastype=mujoco.mjtBias.mjBIAS_AFFINE,
                      biasprm=[0, -kp, -kd] + [0] * 7)
  model = spec.compile()
  data = mujoco.MjData(model)
  nominal = scenarios.leg_angles(leg)
  data.qpos[:] = np.r_[0, 0, height, 1, 0, 0, 0, nominal]
  data.ctrl[:] = nominal
  for _ in range(1000):
    mujoco.mj_step(model, data)
  kind = mujoco.mjtState.mjSTATE_FULLPHYSICS
  state = np.empty(mujoco.mj_stateSize(model, kind))
  mujoco.mj_getState(model, data, state, kind)
  return model, state, nominal, float(data.qpos[2])


def measure_mujoco(setup, batch, steps=STEPS):
  """env-steps/s of mujoco.rollout over `batch` copies, one thread per core."""
  model, state, control, _ = setup
  return timing.mujoco_rollout_rate(model, state, control, batch, steps)


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--robot", default="quadruped", choices=sorted(scenarios.ROBOTS))
  parser.add_argument("--batches", default="1,256,1024")
  parser.add_argument("--json", default="", help="write the figures to this file")
  host_devices.add_argument(parser)
  args = parser.parse_args()
  world, robot, nominal, feet = scenarios.standing_world(args.robot, jnp.float32)
  # Settle first: the benchmark steps a robot standing on its four feet.
  base, *_, settled = scenarios.simulate(world, feet, 1000)
  world.setState(settled)
  world.setContactSolverDifferentiable(False)
  model, state = world.compile()
  setup = mujoco_setup(args.robot)
  print(f"robot={args.robot} float32 backend={jax.default_backend()} "
        f"devices={jax.device_count()} (batches are split over them) "
        f"contacts={int(np.sum(np.asarray(state.contacts.active)))} "
        f"settled z={float(base[-1, 2]):.4f}"
        + (f" | mujoco {__import__('mujoco').__version__} settled z={setup[3]:.4f}"
           if setup else " | mujoco not installed"))
  rows = []
  for batch in [int(b) for b in args.batches.split(",")]:
    ours, compile_seconds = measure(model, state, batch)
    row = dict(batch=batch, raisim_jax=ours, compile_s=compile_seconds)
    line = f"  batch {batch:5d}: {ours:12,.0f} env-steps/s (compile {compile_seconds:.0f} s)"
    if setup:
      theirs = measure_mujoco(setup, batch)
      row.update(mujoco_c=theirs, ratio=ours / theirs)
      line += (f" | MuJoCo C {timing.cores()} threads {theirs:12,.0f} | "
               f"ratio {ours / theirs:.3f}")
    if batch in (1, 256):
      detect_ms, step_ms = detection_ms(model, state, batch), 1e3 * batch / ours
      row.update(detection_ms=detect_ms, step_ms=step_ms)
      line += f" | detection {detect_ms:.2f} of {step_ms:.2f} ms per step call"
    print(line, flush=True)
    rows.append(row)
  if args.json:
    with open(args.json, "w") as f:
      json.dump(dict(robot=args.robot, backend=jax.default_backend(), devices=timing.cores(),
                     rows=rows), f, indent=1)


if __name__ == "__main__":
  main()

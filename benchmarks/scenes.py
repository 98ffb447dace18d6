"""Single-body scenes in raisim_jax and MuJoCo C side by side (issue #12 item 5): the 9-body
scene (4 boxes and 4 spheres over the ground, falling from 2 m or resting) and a pile of 216
spheres (r 0.1 m, a 6 x 6 x 6 grid dropped onto the ground and measured after it settled for
`--pile-settle` seconds in each engine), same bodies, masses, friction and time step (1 ms) in
both engines.

For each scene and batch: raisim_jax's pure step (float32, `setContactSolverDifferentiable(False)`:
the batched while-loop solver) in world-steps/s, its compile seconds and its peak memory per
world (XLA's memory analysis of the compiled rollout: arguments + outputs + temporaries,
divided by the worlds of one device); MuJoCo C's `mujoco.rollout` on one thread per core.
Batches above 1 are split over one XLA host device per core (`host_devices.py`; `--devices N`
to change). For one world: the latency of the OO `World.integrate()` (float64, RaiSim's
precision, as a script calls it) against MuJoCo's `mj_step` (float64) on the same scene.
Active contacts at the end of each run.

    .venv/bin/python benchmarks/scenes.py [--scenes falling,resting,pile] [--batches 1,64,1024]
        [--steps 100] [--sleep] [--devices N] [--json out.json] [--quick]

Sleeping islands are off in both engines unless `--sleep` turns them on in both (RaiSim's
default is on, MuJoCo's off): a resting scene that sleeps costs little more than its
collision detection.

MuJoCo: the `bench` (or `dev`) extra; its own defaults otherwise (Newton solver, pyramidal
cones, soft contacts). Not a test: numbers depend on the machine; compare ratios taken in
one run.
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from benchmarks import host_devices  # noqa: E402
host_devices.configure()   # one host device per core, before JAX starts

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import raisim_jax as rj  # noqa: E402
from benchmarks import timing  # noqa: E402

FRICTION = 0.8   # RaiSim's default material friction; MuJoCo's geoms get the same


def bodies(scene):
  """[(kind, size, mass, position)]: kind 'box' (full extents x, y, z) or 'sphere' (radius)."""
  if scene in ("falling", "resting"):
    height = 2.0 if scene == "falling" else 0.099
    return ([("box", (0.4, 0.3, 0.2), 1.0, (k, 0.0, height)) for k in range(4)]
            + [("sphere", (0.1,), 1.0, (k, 1.0, height)) for k in range(4)])
  if scene == "pile":      # layers shifted a little so that the grid tumbles into a pile
    return [("sphere", (0.1,), 1.0, (0.22 * i + 0.03 * k, 0.22 * j + 0.02 * k, 0.15 + 0.22 * k))
            for i in range(6) for j in range(6) for k in range(6)]
  raise ValueError(f"unknown scene '{scene}' (falling, resting, pile)")


def world_of(scene, dtype=jnp.float64, sleep=False):
  world = rj.World(dtype=dtype)
  world.setTimeStep(1e-3)
  world.setSleepingEnabled(sleep)
  world.addGround()
  for kind, size, mass, position in bodies(scene):
    body = world.addBox(*size, mass) if kind == "box" else world.addSphere(*size, mass)
    body.setPosition(*position)
  return world


def mujoco_model(scene, settle_steps=0, sleep=False):
  """(MjModel, MjData, full-physics state) of `scene` after `settle_steps` steps; `sleep`
  sets MuJoCo's own island sleeping (mjENBL_SLEEP, off by default)."""
  import mujoco
  geoms = []
  for kind, size, mass, position in bodies(scene):
    shape = (f'type="box" size="{size[0] / 2} {size[1] / 2} {size[2] / 2}"' if kind == "box"
             else f'type="sphere" size="{size[0]}"')
    geoms.append(f'<body pos="{position[0]} {position[1]} {position[2]}"><freejoint/>'
                 f'<geom {shape} mass="{mass}" friction="{FRICTION} 0.005 0.0001"/></body>')
  xml = (f'<mujoco><option timestep="0.001"/><worldbody><geom type="plane" size="0 0 1" '
         f'friction="{FRICTION} 0.005 0.0001"/>{"".join(geoms)}</worldbody></mujoco>')
  model = mujoco.MjModel.from_xml_string(xml)
  if sleep:
    model.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_SLEEP
  data = mujoco.MjData(model)
  for _ in range(settle_steps):
    mujoco.mj_step(model, data)
  kind = mujoco.mjtState.mjSTATE_FULLPHYSICS
  state = np.empty(mujoco.mj_stateSize(model, kind))
  mujoco.mj_getState(model, data, state, kind)
  return model, data, state


def settled(scene, settle_steps, sleep=False):
  """(Model, State) of `scene` in float32 (forward-only solver) after `settle_steps` steps."""
  world = world_of(scene, jnp.float32, sleep)
  world.setContactSolverDifferentiable(False)
  model, state = world.compile()
  if settle_steps:
    state = jax.jit(rj.rollout, static_argnums=2)(model, state, settle_steps)[0]
  return model, state


def ours_batched(model, state, batch, steps):
  """(world-steps/s, compile s, bytes per world, active contacts at the end of world 0)."""
  run, inputs = timing.batched(lambda s: rj.rollout(model, s, steps)[0], state, batch)
  compiled, compile_seconds = timing.compiled(run, inputs)
  memory = compiled.memory_analysis()    # of one device's program
  worlds_per_device = batch // len(jax.tree.leaves(inputs)[0].sharding.device_set)
  per_world = (memory.argument_size_in_bytes + memory.output_size_in_bytes
               + memory.temp_size_in_bytes - memory.alias_size_in_bytes) / worlds_per_device
  _, best = timing.timed(compiled, inputs, 3)
  active = np.asarray(compiled(inputs).contacts.active).reshape(batch, -1)
  return batch * steps / best, compile_seconds, per_world, int(active[0].sum())


def ours_integrate_us(scene, state, calls, sleep=False):
  """(microseconds per OO `World.integrate()` call (float64) from the bodies' poses and
  velocities in `state` after the first (compiling) call, contacts after the calls)."""
  world = world_of(scene, sleep=sleep)
  for k, body in enumerate(world.getObjList()[1:], start=1):
    body.setPosition(*np.asarray(state.bodies.position[k], np.float64))
    body.setOrientation(*np.asarray(state.bodies.quaternion[k], np.float64))
    body.setVelocity(*np.asarray(state.bodies.linear_velocity[k], np.float64),
                     *np.asarray(state.bodies.angular_velocity[k], np.float64))
  world.integrate()
  start = time.perf_counter()
  for _ in range(calls):
    world.integrate()
  return 1e6 * (time.perf_counter() - start) / calls, len(world.getContactProblem())


def mujoco_step_us(model, data, calls):
  """(microseconds per `mj_step` after a first one, contacts after the calls)."""
  import mujoco
  mujoco.mj_step(model, data)
  start = time.perf_counter()
  for _ in range(calls):
    mujoco.mj_step(model, data)
  return 1e6 * (time.perf_counter() - start) / calls, int(data.ncon)


def main(argv=None):
  parser = argparse.ArgumentParser()
  parser.add_argument("--scenes", default="falling,resting,pile")
  parser.add_argument("--batches", default="1,64,1024")
  parser.add_argument("--pile-batches", default="1")
  parser.add_argument("--pile-settle", type=float, default=1.0,
                      help="seconds the pile falls and settles before it is measured")
  parser.add_argument("--steps", type=int, default=100)
  parser.add_argument("--calls", type=int, default=1000, help="OO integrate / mj_step calls")
  parser.add_argument("--sleep", action="store_true",
                      help="sleeping islands on in both engines (RaiSim's default; MuJoCo's "
                           "mjENBL_SLEEP); off by default, as in MuJoCo")
  parser.add_argument("--json", default="")
  host_devices.add_argument(parser)
  parser.add_argument("--quick", action="store_true",
                      help="smallest sizes (CI): batch 2, 5 steps, 20 calls")
  args = parser.parse_args(argv)
  if args.quick:
    args.batches, args.pile_batches, args.steps, args.calls = "2", "2", 5, 20
    args.pile_settle = 0.0
  try:
    import mujoco
  except ImportError:
    mujoco = None
  print(f"backend={jax.default_backend()} devices={jax.device_count()} "
        f"mujoco={mujoco.__version__ if mujoco else 'not installed'} steps={args.steps} "
        f"sleeping={'on' if args.sleep else 'off'}")
  print(f"| scene | batch | raisim_jax world-steps/s (compile s) | MuJoCo C {timing.cores()} "
        "threads | ratio | "
        "memory per world | contacts |")
  print("|---|---|---|---|---|---|---|")
  rows = []
  for scene in args.scenes.split(","):
    settle = round(args.pile_settle / 1e-3) if scene == "pile" else 0
    setup = mujoco_model(scene, settle, args.sleep) if mujoco else None
    model, state = settled(scene, settle, args.sleep)
    batches = args.pile_batches if scene == "pile" else args.batches
    for batch in [int(b) for b in batches.split(",")]:
      ours, compile_seconds, per_world, contacts = ours_batched(model, state, batch, args.steps)
      row = dict(scene=scene, batch=batch, ours=ours, ours_compile_s=compile_seconds,
                 bytes_per_world=per_world, contacts=contacts)
      theirs = ratio = float("nan")
      if setup:
        theirs = timing.mujoco_rollout_rate(setup[0], setup[2], np.zeros(0), batch, args.steps)
        ratio = ours / theirs
        row.update(mujoco_c=theirs, ratio=ratio)
      rows.append(row)
      print(f"| {scene} | {batch:,} | {ours:,.0f} ({compile_seconds:.1f}) | {theirs:,.0f} | "
            f"{ratio:.3f} | {per_world / 1024:,.0f} KiB | {contacts} |", flush=True)
    calls = max(1, args.calls // 20) if scene == "pile" else args.calls
    integrate, ours_contacts = ours_integrate_us(scene, state, calls, args.sleep)
    row = dict(scene=scene, batch=1, oo_integrate_us=integrate, oo_contacts=ours_contacts)
    line = (f"  {scene}, {calls + 1} steps: OO integrate() {integrate:,.0f} us per call "
            f"(float64, {ours_contacts} contacts)")
    if setup:
      step, ncon = mujoco_step_us(setup[0], setup[1], calls)
      row.update(mj_step_us=step, mj_step_ratio=integrate / step, mujoco_contacts=ncon)
      line += f" | mj_step {step:,.1f} us ({ncon} contacts) | ratio {integrate / step:,.1f}"
    rows.append(row)
    print(line, flush=True)
  if args.json:
    with open(args.json, "w") as f:
      json.dump(dict(backend=jax.default_backend(), steps=args.steps, sleeping=args.sleep,
                     rows=rows), f, indent=1)
  return rows


if __name__ == "__main__":
  main()

"""Gradients through a batched rollout with contacts: time and compile time against the
forward rollout, in both solver modes (#12's gradient targets).

The scene is the one issue #12 states its targets on: 2 boxes and 2 spheres resting on the
ground, sliding (initial speeds 0.5-1 m/s along x, friction 0.8: every contact slides, then
sticks), float32, 50 steps of 2 ms, `batch` worlds on one device. Rows:
- the forward-only solve (`setContactSolverDifferentiable(False)`, a `while_loop`): the
  batched mode, the throughput reference;
- the differentiable solve (the default), differentiated as `--gradient` says ("implicit",
  this script's default, "unrolled", the engine's default, or both): the forward rollout,
  and `jax.grad` of a loss of the final state (squared final positions and velocities of
  the 4 bodies, summed over the worlds) with respect to the initial linear velocities,
  reverse mode through all 50 steps.
The ratios are the targets' quantities: differentiable forward over the batched mode (target:
within 3x), gradient over differentiable forward (target: under 5x; MJX 6.7x), and the
gradient's compile time (target: under 60 s). Also XLA's temporaries per world of each
program (reverse mode keeps what it needs of every step), and whether the gradient is finite
everywhere. Compile seconds include tracing and lowering.

Run: `python benchmarks/gradients.py [--batch 64] [--steps 50] [--gradient G] [--json F]`
(`--gradient both`: a row for each mode, the forward-only program measured once);
`--quick` (batch 2, 3 steps) is what the test suite runs. Not a test: numbers depend on the machine.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import raisim_jax as rj  # noqa: E402
from benchmarks import timing  # noqa: E402


def sliding_world(differentiable):
  """The 2 boxes + 2 spheres on the ground, each sliding along x (float32)."""
  world = rj.World(dtype=jnp.float32)
  world.setTimeStep(2e-3)
  world.setDefaultMaterial(0.8, 0.0, 0.0)
  world.addGround()
  for k in range(2):
    box = world.addBox(0.2, 0.2, 0.2, 1.0 + k)
    box.setPosition(0.0, 0.5 * k, 0.1)
    box.setVelocity([0.5 + 0.5 * k, 0, 0], [0, 0, 0])
    sphere = world.addSphere(0.1, 0.5 + k)
    sphere.setPosition(1.0, 0.5 * k, 0.1)
    sphere.setVelocity([1.0 - 0.25 * k, 0, 0], [0, 0, 0])
  world.setContactSolverDifferentiable(differentiable)
  return world.compile()


def _loss(model, steps):
  """Loss of one world's initial linear velocities (n, 3): squared final positions and
  velocities of its bodies."""
  def loss(state, velocity):
    start = rj.tree_replace(state, {"bodies.linear_velocity": velocity})
    final = rj.rollout(model, start, steps)[0]
    return jnp.sum(final.bodies.position ** 2) + jnp.sum(final.bodies.linear_velocity ** 2)
  return loss


def _compiled(function, *arguments):
  """(executable of jit(`function`), seconds to trace, lower and compile it, bytes of XLA
  temporaries)."""
  executable, seconds = timing.compiled(jax.jit(function), *arguments)
  return executable, seconds, executable.memory_analysis().temp_size_in_bytes


def measure(batch, steps, repeats=2, gradients=("implicit",)):
  """Rows of figures, one per gradient mode in `gradients`: world-steps/s, compile seconds
  and XLA temporaries per world of each program, the gradient's time, the ratios, and
  whether the gradient is finite. The forward-only program is measured once and shared."""
  model, state = sliding_world(False)
  states = rj.batching.replicate(state, batch)
  shared = dict(batch=batch, steps=steps)
  _measure_rollout(shared, "forward_only", model, states, steps, repeats)
  differentiable_model, _ = sliding_world(True)    # the same initial state as `states`
  velocities = states.bodies.linear_velocity
  rows = []
  for gradient in gradients:
    row = dict(shared, gradient=gradient)
    model = differentiable_model.replace(
        solver=differentiable_model.solver.replace(gradient=gradient))
    _measure_rollout(row, "differentiable", model, states, steps, repeats)
    loss = _loss(model, steps)
    compiled, row["gradient_compile_s"], temp = _compiled(
        jax.grad(lambda v, s, loss=loss: jnp.sum(jax.vmap(loss)(s, v))), velocities, states)
    _, seconds = timing.timed(lambda v, compiled=compiled: compiled(v, states), velocities,
                              repeats)
    grads = compiled(velocities, states)
    row.update(gradient_seconds=seconds, gradient_temp_bytes_per_world=temp / batch,
               gradient_finite=bool(np.all(np.isfinite(np.asarray(grads)))),
               differentiable_over_forward_only=row["forward_only"] / row["differentiable"],
               gradient_over_forward=seconds / row["differentiable_seconds"])
    rows.append(row)
  return rows


def _measure_rollout(row, mode, model, states, steps, repeats):
  """Adds `mode`'s world-steps/s, seconds, compile seconds and XLA temporaries per world
  of `jit(vmap(rollout))` over `states` to `row`."""
  batch = states.time.shape[0]
  compiled, row[mode + "_compile_s"], temp = _compiled(
      jax.vmap(lambda s: rj.rollout(model, s, steps)[0]), states)
  _, seconds = timing.timed(compiled, states, repeats)
  row.update({mode: batch * steps / seconds, mode + "_seconds": seconds,
              mode + "_temp_bytes_per_world": temp / batch})


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--batch", type=int, default=64)
  parser.add_argument("--steps", type=int, default=50)
  parser.add_argument("--quick", action="store_true", help="batch 2, 3 steps")
  parser.add_argument("--gradient", default="implicit",
                      choices=("implicit", "unrolled", "both"),
                      help="SolverModel.gradient of the differentiable solve; both: a row each")
  parser.add_argument("--json")
  args = parser.parse_args(argv)
  batch, steps = (2, 3) if args.quick else (args.batch, args.steps)
  gradients = ("unrolled", "implicit") if args.gradient == "both" else (args.gradient,)
  rows = measure(batch, steps, gradients=gradients)
  print("| gradient | batch x steps | forward-only world-steps/s (compile s) | differentiable "
        "(compile s) | ratio | gradient s (compile s) | gradient / forward | gradient "
        "temporaries per world | finite |")
  print("|---|---|---|---|---|---|---|---|---|")
  for row in rows:
    print(f"| {row['gradient']} | {batch} x {steps} | {row['forward_only']:,.0f} "
          f"({row['forward_only_compile_s']:.1f}) "
          f"| {row['differentiable']:,.0f} ({row['differentiable_compile_s']:.1f}) | "
          f"{row['differentiable_over_forward_only']:.2f} | {row['gradient_seconds']:.3f} "
          f"({row['gradient_compile_s']:.1f}) | {row['gradient_over_forward']:.2f} | "
          f"{row['gradient_temp_bytes_per_world'] / 2**20:.1f} MiB | {row['gradient_finite']} |",
          flush=True)
  if args.json:
    with open(args.json, "w") as f:
      json.dump(dict(device=str(jax.devices()[0]), rows=rows), f, indent=1)
  return rows


if __name__ == "__main__":
  main()

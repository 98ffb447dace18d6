"""Cost of the step's contact solve, `contact_dynamics.solve_contacts`, on box stacks.

Scene: a column of `boxes` boxes (0.3 m cubes, 1 kg) on the ground, 4 corner contacts per
box, so about 4 * boxes contacts. The stack is first settled for 200 steps (1 ms) so the
solve starts, as in a running simulation, from integrate1's warm start (last step's normal
impulses). Then one solve of the next step is timed, vmapped over `--batch` worlds:
  * settled: every world the settled stack (the warm start is nearly the answer);
  * kicked:  every box's free velocity kicked by a random horizontal +-0.05 m/s per world
             (the warm start is off; stacks then rarely reach the threshold in 150 sweeps);
in both loop modes:
  * while: setContactSolverDifferentiable(False), early exit at the threshold (1e-8);
  * scan:  the differentiable mode, a fixed 150-sweep scan (converged sweeps skipped by a
           cond, which is a select under vmap: every sweep is paid, so its time does not
           depend on the scenario; timed kicked only).
Prints ms per batched solve, us per world, the mean sweep count, and us per world per paid
sweep: under vmap the while loop runs until its slowest world converges (paid = the batch's
largest sweep count) and the scan pays all 150.

Usage: PYTHONPATH=. python benchmarks/contact_solver_cost.py [--batch 256] [--boxes 1,2,4,8]
       [--dtypes float32,float64]
A benchmark, not a test: numbers depend on the machine; compare ratios taken in one run.
"""

import argparse
import os
import sys
import time

os.environ.setdefault('XLA_FLAGS', '--xla_cpu_multi_thread_eigen=false')

import jax  # noqa: E402

jax.config.update('jax_enable_x64', True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
import raisim_jax as rj  # noqa: E402
from raisim_jax.dynamics import contact_dynamics, single_body  # noqa: E402


def settled_stack(boxes, dtype, settle_steps=200):
  """(model, state after integrate1, free velocity) of a settled column of boxes."""
  world = rj.World(dtype=dtype)
  world.setTimeStep(1e-3)
  world.setDefaultMaterial(0.8, 0.0, 0.0)
  world.addGround()
  stack = [world.addBox(0.3, 0.3, 0.3, 1.0) for _ in range(boxes)]
  for k, box in enumerate(stack):
    box.setPosition(0.01 * k, 0.0, 0.15 + 0.3 * k)
  model, state = world.compile()
  state, _ = jax.jit(lambda s: rj.rollout(model, s, settle_steps))(state)
  state = jax.jit(rj.integrate1)(model, state)
  bodies = state.bodies
  velocity = single_body.free_velocity(model, state, bodies.external_force,
                                       bodies.external_torque)
  return model, state, velocity


def batched_solver(model, state, differentiable):
  """The jitted solve of this step, vmapped over the free velocity."""
  model = model.replace(solver=model.solver.replace(differentiable=differentiable))
  return jax.jit(jax.vmap(
      lambda v: contact_dynamics.solve_contacts(model, state, v, state.contacts, ())))


def bench(solve, velocity, batch, kick_speed, paid_sweeps=None, repeats=3):
  """(best seconds per batched solve, mean sweeps, paid sweeps) over `batch` worlds whose
  box velocities are kicked by up to `kick_speed` horizontally; paid_sweeps None: the
  batch's largest sweep count (while loop)."""
  rng = np.random.default_rng(0)
  kick = np.zeros((batch,) + velocity.linear.shape)
  kick[:, 1:, :2] = rng.uniform(-kick_speed, kick_speed,
                                size=(batch, velocity.linear.shape[0] - 1, 2))
  velocities = jax.vmap(lambda k: velocity.replace(linear=velocity.linear + k))(
      jnp.asarray(kick, velocity.linear.dtype))
  result = jax.block_until_ready(solve(velocities))
  best = np.inf
  for _ in range(repeats):
    start = time.perf_counter()
    jax.block_until_ready(solve(velocities))
    best = min(best, time.perf_counter() - start)
  iterations = np.asarray(result.iterations)
  paid = int(iterations.max()) if paid_sweeps is None else paid_sweeps
  return best, float(iterations.mean()), paid


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument('--batch', type=int, default=256)
  parser.add_argument('--boxes', default='1,2,4,8')
  parser.add_argument('--dtypes', default='float32,float64')
  a = parser.parse_args()
  print(f'device={jax.devices()[0]}, batch={a.batch}')
  for dtype_name in a.dtypes.split(','):
    dtype = jnp.dtype(dtype_name)
    for boxes in [int(b) for b in a.boxes.split(',')]:
      model, state, velocity = settled_stack(boxes, dtype)
      contacts = int(np.sum(np.asarray(state.contacts.active)))
      solvers = {'while': batched_solver(model, state, False),
                 'scan': batched_solver(model, state, True)}
      for mode, scenario, kick in (('while', 'settled', 0.0), ('while', 'kicked', 0.05),
                                   ('scan', 'kicked', 0.05)):
        paid_sweeps = int(model.solver.max_iterations) if mode == 'scan' else None
        seconds, sweeps, paid = bench(solvers[mode], velocity, a.batch, kick, paid_sweeps)
        per_world = seconds / a.batch * 1e6
        print(f'{dtype_name} boxes={boxes} contacts={contacts:2d} {mode:5s} {scenario:7s}: '
              f'{seconds * 1e3:8.2f} ms per batch, {per_world:8.2f} us/world, '
              f'sweeps mean {sweeps:5.1f} paid {paid:3d}, '
              f'{per_world / max(paid, 1):6.3f} us/world/paid sweep', flush=True)


if __name__ == '__main__':
  main()

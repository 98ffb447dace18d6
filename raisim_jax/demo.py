"""`python -m raisim_jax.demo`: RaiSim's materials example through the OO API (three balls of
steel, rubber and copper bounce on a steel ground), a URDF pendulum, then one world stepped
for 1,024 copies at once with vmap. Needs no arguments."""

import os
import time

import jax
import jax.numpy as jnp
import numpy as np

import raisim_jax as rj

RSC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "rsc")


def materials_example():
  world = rj.World()
  world.setTimeStep(1e-3)
  world.addGround(0, "steel")
  restitution = {"steel": 0.95, "rubber": 0.15, "copper": 0.65}
  balls = {}
  for k, material in enumerate(restitution):
    ball = world.addSphere(0.5, 1.0, material)
    ball.setName(f"sphere_{material}")
    ball.setPosition(-2 + 2 * k, 0, 5)
    balls[material] = ball
    world.setMaterialPairProp("steel", material, 0.8, restitution[material], 0.001)
  print("materials example: balls dropped from 5 m (COM) onto a steel ground")
  model, state = world.compile()
  _, trajectory = jax.jit(rj.rollout, static_argnums=2)(model, state, 3000)
  heights = np.asarray(trajectory.bodies.position[:, 1:, 2])
  for k, (material, e) in enumerate(restitution.items()):
    z = heights[:, k]
    first_bounce = int(np.argmin(z[:1500]))
    apex = z[first_bounce:].max()
    print(f"  {material:6s} e={e:.2f}: first apex {apex:.3f} m "
          f"(restitution law 0.5 + e^2 * 4.5 = {0.5 + e * e * 4.5:.3f} m)")
  world.setState(jax.tree.map(lambda x: x[-1], trajectory))
  contacts = balls["steel"].getContacts()
  if contacts:
    c = contacts[0]
    print(f"  steel ball contact: normal {np.round(c.getNormal(), 3)}, "
          f"impulse {np.round(c.getImpulse(), 5)} N s")
  return world


def pendulum_example():
  world = rj.World()
  world.setTimeStep(1e-3)
  pendulum = world.addArticulatedSystem(os.path.join(RSC, "urdf", "pendulum.urdf"))
  pendulum.setGeneralizedCoordinate([0.3])
  energy0 = pendulum.getEnergy(world.getGravity())
  for _ in range(2000):
    world.integrate()
  drift = abs(pendulum.getEnergy(world.getGravity()) - energy0)
  print(f"URDF pendulum: angle after 2 s {pendulum.getGeneralizedCoordinate()[0]:+.4f} rad, "
        f"energy drift {drift:.1e} J, mass matrix {pendulum.getMassMatrix()[0, 0]:.4f} kg m^2")


def batched_worlds(batch=1024, steps=200):
  world = rj.World()
  world.setTimeStep(1e-3)
  world.addGround()
  world.addSphere(0.1, 1.0)
  world.setContactSolverDifferentiable(False)  # while_loop early exit: fast under vmap
  model, state = world.compile()
  rng = np.random.default_rng(0)
  heights = jnp.asarray(rng.uniform(0.2, 1.0, batch))
  states = jax.tree.map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), state)
  states = states.replace(bodies=states.bodies.replace(
      position=states.bodies.position.at[:, 1, 2].set(heights)))
  run = jax.jit(jax.vmap(lambda s: rj.rollout(model, s, steps)[0]))
  run(states).time.block_until_ready()
  start = time.perf_counter()
  final = run(states)
  final.time.block_until_ready()
  elapsed = time.perf_counter() - start
  print(f"batched: {batch} worlds x {steps} steps in {elapsed * 1e3:.1f} ms "
        f"({batch * steps / elapsed:,.0f} world-steps/s, with contacts)")
  resting = float(jnp.mean(jnp.abs(final.bodies.position[:, 1, 2] - 0.1) < 2e-3))
  print(f"  {resting:.0%} of the balls have landed and rest on the ground")


def main():
  # The demo's own pure-API code (rollouts of world.compile()'s float64 pytrees) in float64,
  # without changing the process-wide setting.
  with jax.enable_x64(True):
    materials_example()
    pendulum_example()
    batched_worlds()


if __name__ == "__main__":
  main()

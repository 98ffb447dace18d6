"""`python -m raisim_jax.demo`: a small world stepped through the OO API, then the same model
stepped for 1,024 worlds at once with vmap. Needs no arguments."""

import time

import jax
import jax.numpy as jnp
import numpy as np

import raisim_jax as rj


def single_world():
  world = rj.World()
  world.setTimeStep(1e-3)
  world.addGround()
  ball = world.addSphere(0.1, 1.0)
  ball.setName("ball")
  ball.setPosition(0, 0, 5)
  box = world.addBox(1.0, 0.4, 0.1, 1.0)
  box.setName("tumbling box")
  box.setPosition(3, 0, 5)
  box.setAngularVelocity([0.01, 5.0, 0.01])
  gravity = world.getGravity()
  energy0 = box.getKineticEnergy()
  print("single world: a ball falls, a box tumbles about its intermediate axis")
  for k in range(1000):
    world.integrate()
    if (k + 1) % 250 == 0:
      print(f"  t={world.getWorldTime():.3f} s  ball z={ball.getPosition()[2]:.4f} m  "
            f"box spin-axis y.z={box.getRotationMatrix()[2, 1]:+.3f}  "
            f"ball energy={ball.getEnergy(gravity):.4f} J")
  print(f"  box rotational energy drift after 1 s: "
        f"{abs(box.getKineticEnergy() - energy0 - 0.5 * 9.81**2) / energy0:.2e} (relative)")
  return world


def batched_worlds(world, batch=1024, steps=200):
  model, state = world.compile()
  rng = np.random.default_rng(0)
  heights = jnp.asarray(rng.uniform(1, 10, batch))
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
        f"({batch * steps / elapsed:,.0f} world-steps/s)")
  drop = heights - final.bodies.position[:, 1, 2]
  print(f"  every ball fell the same {float(drop.mean()):.4f} m "
        f"(spread {float(drop.std()):.1e} m)")


def main():
  world = single_world()
  batched_worlds(world)


if __name__ == "__main__":
  main()

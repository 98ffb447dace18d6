"""Trajectory optimization through contact: push a box along the ground to a target.

A 0.2 m, 1 kg box rests on the ground (friction 0.8, float64, dt = 10 ms). A horizontal force
sequence (one value per step, N steps) pushes it; the loss is the squared distance of the
box's final position to the target plus its final speed squared (it must arrive and stop).
Gradients come from `jax.grad` through `rj.rollout` with the default (differentiable) contact
solver: the box slides on its four corner contacts the whole time, so the contact mode does
not change and the plain gradient is the true derivative. optax's Adam takes the steps.

    python -m raisim_jax.examples.trajectory_optimization     # prints the loss as it falls

Needs optax (in the dev extra; brax, the rl extra, brings it too).
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax

import raisim_jax as rj

BOX_ROW = 1          # the box is the world's second object (the ground is the first)


def build_world(dt=0.01):
  """(model, state) of the box resting on the ground, float64."""
  world = rj.World()
  world.setTimeStep(dt)
  world.setDefaultMaterial(0.8, 0.0, 0.0)
  world.addGround()
  world.addBox(0.2, 0.2, 0.2, 1.0).setPosition(0.0, 0.0, 0.1)
  return world.compile()


def final_state(model, state, forces):
  """State after len(forces) steps with horizontal force forces[k] (N) on the box at step k."""
  zeros = rj.Control.zeros(model)
  body_force = jnp.zeros((forces.shape[0],) + zeros.body_force.shape, forces.dtype)
  controls = zeros.replace(
      body_force=body_force.at[:, BOX_ROW, 0].set(forces),
      body_torque=jnp.zeros_like(body_force))
  return rj.rollout(model, state, forces.shape[0], controls)[0]


def loss(model, state, forces, target):
  """(x_final - target)^2 + v_final^2 of the box (m^2, (m/s)^2 with 1 s)."""
  final = final_state(model, state, forces)
  x = final.bodies.position[BOX_ROW, 0]
  v = final.bodies.linear_velocity[BOX_ROW, 0]
  return (x - target) ** 2 + v ** 2


def optimize(steps=50, iterations=150, target=0.3, learning_rate=0.5, initial_force=12.0,
             verbose=False):
  """Adam on the force sequence. Returns (losses (iterations + 1,), forces (steps,))."""
  with jax.enable_x64(True):
    model, state = build_world()
    forces = jnp.full((steps,), initial_force, jnp.float64)
    value_and_grad = jax.jit(jax.value_and_grad(
        lambda f: loss(model, state, f, target)))
    optimizer = optax.adam(learning_rate)
    opt_state = optimizer.init(forces)
    losses = []
    for k in range(iterations):
      value, grad = value_and_grad(forces)
      if not np.all(np.isfinite(np.asarray(grad))):
        raise FloatingPointError(f"non-finite gradient at iteration {k}")
      losses.append(float(value))
      if verbose and k % 10 == 0:
        print(f"iteration {k:4d}  loss {float(value):.3e}", flush=True)
      updates, opt_state = optimizer.update(grad, opt_state)
      forces = optax.apply_updates(forces, updates)
    losses.append(float(value_and_grad(forces)[0]))
    return np.array(losses), np.asarray(forces)


def main():
  losses, forces = optimize(verbose=True)
  print(f"loss {losses[0]:.3e} -> {losses[-1]:.3e} ({losses[0] / losses[-1]:.0f}x)")
  print("forces (N):", np.round(forces, 2))


if __name__ == "__main__":
  main()

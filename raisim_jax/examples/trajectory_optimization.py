"""Trajectory optimization through contact: push a box across the ground to a target.

A 0.2 m, 1 kg box rests on the ground (friction 0.8, float64, dt = 10 ms). A horizontal force
sequence (one (fx, fy) per step, N steps, world frame) pushes it; the loss is the squared
distance of the box's final (x, y) to a target. Gradients come from `jax.grad` through
`rj.rollout` with the default (differentiable) contact solver; optax's Adam (cosine-decayed
step size) takes the steps.

The target (0.8, 0.4) m lies beyond where the initial push (12 N along x for 0.5 s) brings the
box, so the optimum keeps it sliding on its four corner contacts the whole time: the contact
mode does not change and the plain gradient is the true derivative (friction opposes the
velocity, whose direction the forces turn, so the problem is nonlinear but smooth). A target
the box reaches with force to spare would let Adam drive forces below static friction
(mu m g = 7.85 N): a sticking box has zero gradient, and the loss stalls.

    python -m raisim_jax.examples.trajectory_optimization     # loss falls ~250x in 30 steps

Needs optax (in the dev extra; brax, the rl extra, brings it too).
"""

import jax
import jax.numpy as jnp
import numpy as np
import optax

import raisim_jax as rj

BOX_ROW = 1          # the box is the world's second object (the ground is the first)
TARGET = (0.8, 0.4)  # m, world frame


def build_world(dt=0.01):
  """(model, state) of the box resting on the ground, float64 (call inside enable_x64)."""
  world = rj.World()
  world.setTimeStep(dt)
  world.setDefaultMaterial(0.8, 0.0, 0.0)
  world.addGround()
  world.addBox(0.2, 0.2, 0.2, 1.0).setPosition(0.0, 0.0, 0.1)
  return world.compile()


def push_controls(model, forces):
  """Control sequence (leading axis N) with force (forces[k, 0], forces[k, 1], 0) N on the
  box's centre of mass at step k and nothing else. forces: (N, 2)."""
  zeros = rj.Control.zeros(model)
  body_force = jnp.zeros((forces.shape[0],) + zeros.body_force.shape, forces.dtype)
  return zeros.replace(body_force=body_force.at[:, BOX_ROW, :2].set(forces),
                       body_torque=jnp.zeros_like(body_force))


def final_state(model, state, forces):
  """State after len(forces) steps of `push_controls(model, forces)`. forces: (N, 2)."""
  return rj.rollout(model, state, forces.shape[0], push_controls(model, forces))[0]


def loss(model, state, forces, target):
  """|xy_final - target|^2 of the box (m^2). forces: (N, 2); target: (2,)."""
  final = final_state(model, state, forces)
  return jnp.sum((final.bodies.position[BOX_ROW, :2] - target) ** 2)


# Module level, so every caller with the same shapes reuses one compilation.
loss_and_gradient = jax.jit(jax.value_and_grad(loss, argnums=2))


def optimize(steps=50, iterations=30, target=TARGET, learning_rate=0.5,
             initial_force=(12.0, 0.0), verbose=False):
  """Adam on the force sequence. Returns (losses (iterations + 1,), forces (steps, 2))."""
  with jax.enable_x64(True):
    model, state = build_world()
    target = jnp.asarray(target, jnp.float64)
    forces = jnp.tile(jnp.asarray(initial_force, jnp.float64), (steps, 1))
    optimizer = optax.adam(optax.cosine_decay_schedule(learning_rate, iterations))
    opt_state = optimizer.init(forces)
    losses = []
    for k in range(iterations):
      value, grad = loss_and_gradient(model, state, forces, target)
      if not np.all(np.isfinite(np.asarray(grad))):
        raise FloatingPointError(f"non-finite gradient at iteration {k}")
      losses.append(float(value))
      if verbose and k % 5 == 0:
        print(f"iteration {k:4d}  loss {float(value):.3e}", flush=True)
      updates, opt_state = optimizer.update(grad, opt_state)
      forces = optax.apply_updates(forces, updates)
    losses.append(float(loss_and_gradient(model, state, forces, target)[0]))
    return np.array(losses), np.asarray(forces)


def main():
  losses, forces = optimize(verbose=True)
  print(f"loss {losses[0]:.3e} -> {losses[-1]:.3e} ({losses[0] / losses[-1]:.0f}x)")
  print("forces (N):", np.round(forces, 2))


if __name__ == "__main__":
  main()

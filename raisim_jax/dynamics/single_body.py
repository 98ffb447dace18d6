"""Newton-Euler dynamics of free single bodies (world frame, COM as the reference point).

The step is split like RaiSim's: `free_velocity` gives the velocity each body would have over
the step without contacts (gravity, external loads, damping, gyroscopic term); the contact
solver adds impulses to it; `integrate_pose` then moves the bodies with that velocity.

Rotation uses the implicit midpoint rule on the body-frame angular momentum Pi,
    Pi+ = cay(-dt Omega) Pi,   Omega = I^-1 (Pi + Pi+) / 2,
paired with the Cayley rotation R+ = R cay(dt Omega). The pair conserves the world angular
momentum R Pi exactly and the kinetic energy Pi.I^-1 Pi / 2 to the fixed-point tolerance,
for any inertia (no principal-axis decomposition, so gradients stay finite for spheres).
The step velocity handed to the contact solver is the midpoint velocity R Omega; the
end-of-step velocity differs from it by a gyroscopic correction that `integrate_pose` adds back.
"""

import jax
import jax.numpy as jnp

from raisim_jax.math import quaternion as quat
from raisim_jax.math import rotation
from raisim_jax.math import safe
from raisim_jax.types import BodyType, Model, State, StepVelocity


def inverse_mass(model: Model):
  """(n,) 1/m for DYNAMIC bodies, 0 for STATIC and KINEMATIC ones (infinite mass)."""
  b = model.bodies
  dynamic = b.body_type == BodyType.DYNAMIC
  return jnp.where(dynamic, safe.divide(1.0, b.mass), 0.0)


def inverse_inertia_world(model: Model, state: State):
  """(n, 3, 3) world-frame inverse inertia R I_B^-1 R^T, zero for non-dynamic bodies."""
  b = model.bodies
  dynamic = b.body_type == BodyType.DYNAMIC
  eye = jnp.eye(3, dtype=model.dtype)
  safe_inertia = jnp.where(dynamic[:, None, None], b.inertia_body, eye)
  inv_body = jnp.where(dynamic[:, None, None], rotation.inverse3(safe_inertia), 0.0)
  rot = quat.to_matrix(state.bodies.quaternion)
  return rotation.rotate_inertia(rot, inv_body)


def free_velocity(model: Model, state: State, force, torque) -> StepVelocity:
  """Velocity over the step without contacts, from gravity, loads and damping.

  Args:
    model: Model.
    state: State at the start of the step.
    force: (n, 3) total external force at each COM, world frame (N).
    torque: (n, 3) total external torque, world frame (N m).

  Returns:
    StepVelocity. STATIC bodies get zero velocity; KINEMATIC bodies keep theirs.
  """
  b, s = model.bodies, state.bodies
  dt = model.time_step
  kind = b.body_type[:, None]
  dynamic = kind == BodyType.DYNAMIC
  static = kind == BodyType.STATIC
  inv_m = inverse_mass(model)[:, None]

  # Linear: semi-implicit Euler; drag -c v taken implicitly so any c is stable.
  linear = (s.linear_velocity + dt * (model.gravity + force * inv_m))
  linear = linear / (1.0 + dt * b.linear_damping[:, None] * inv_m)

  # Angular: implicit midpoint on the body-frame momentum after the torque impulse.
  eye = jnp.eye(3, dtype=model.dtype)
  inertia = jnp.where(dynamic[..., None], b.inertia_body, eye)
  inverse_inertia = rotation.inverse3(inertia)
  q = s.quaternion
  omega_body = quat.rotate_inverse(q, s.angular_velocity)
  torque_body = quat.rotate_inverse(q, torque) - b.angular_damping * omega_body
  momentum = jnp.einsum("nij,nj->ni", inertia, omega_body) + dt * torque_body

  def midpoint_omega(momentum_end):
    return jnp.einsum("nij,nj->ni", inverse_inertia, 0.5 * (momentum + momentum_end))

  def fixed_point(_, carry):
    momentum_end, _ = carry
    omega = midpoint_omega(momentum_end)
    return quat.rotate(quat.cayley(-dt * omega), momentum), omega

  # The rotation applied to the pose must be the one that produced momentum_end, so that the
  # world angular momentum R Pi is conserved exactly whatever the fixed-point residual.
  momentum_end, omega_mid = jax.lax.fori_loop(
      0, model.gyroscopic_iterations, fixed_point, (momentum, omega_body))
  omega_end = jnp.einsum("nij,nj->ni", inverse_inertia, momentum_end)
  angular = quat.rotate(q, omega_mid)
  correction = quat.rotate(q, omega_end - omega_mid)

  angular = jnp.where(dynamic, angular, s.angular_velocity)
  correction = jnp.where(dynamic, correction, 0.0)
  linear = jnp.where(dynamic, linear, s.linear_velocity)
  linear = jnp.where(static, 0.0, linear)
  angular = jnp.where(static, 0.0, angular)
  return StepVelocity(linear=linear, angular=angular, gyroscopic_correction=correction)


def integrate_pose(model: Model, state: State, velocity: StepVelocity) -> State:
  """Moves the bodies with the step velocity and stores the end-of-step velocity.

  position += dt v; q <- cay(dt omega) (x) q (world-frame increment, renormalised);
  the end angular velocity is the step one plus the gyroscopic correction, carried along by
  the step's rotation. STATIC bodies are left untouched.
  """
  s = state.bodies
  dt = model.time_step
  static = (model.bodies.body_type == BodyType.STATIC)[:, None]
  increment = quat.cayley(dt * velocity.angular)
  position = s.position + dt * velocity.linear
  quaternion = safe.normalize(quat.multiply(increment, s.quaternion))
  angular_end = quat.rotate(increment, velocity.angular + velocity.gyroscopic_correction)
  bodies = s.replace(
      position=jnp.where(static, s.position, position),
      quaternion=jnp.where(static, s.quaternion, quaternion),
      linear_velocity=jnp.where(static, s.linear_velocity, velocity.linear),
      angular_velocity=jnp.where(static, s.angular_velocity, angular_end),
  )
  return state.replace(bodies=bodies)


def kinetic_energy(model: Model, state: State):
  """(n,) translational + rotational kinetic energy of each body (J); 0 for STATIC bodies."""
  b, s = model.bodies, state.bodies
  omega_body = quat.rotate_inverse(s.quaternion, s.angular_velocity)
  rot = 0.5 * jnp.einsum("ni,nij,nj->n", omega_body, b.inertia_body, omega_body)
  lin = 0.5 * b.mass * jnp.sum(s.linear_velocity**2, axis=-1)
  return jnp.where(b.body_type == BodyType.STATIC, 0.0, lin + rot)


def potential_energy(model: Model, state: State, gravity):
  """(n,) gravitational potential -m g.p w.r.t. the origin (J), as RaiSim defines it."""
  return -model.bodies.mass * (state.bodies.position @ gravity)


def linear_momentum(model: Model, state: State):
  """(n, 3) m v, world frame."""
  return model.bodies.mass[:, None] * state.bodies.linear_velocity


def angular_momentum(model: Model, state: State):
  """(n, 3) angular momentum about each COM, world frame: R I_B R^T omega."""
  rot = quat.to_matrix(state.bodies.quaternion)
  inertia_world = rotation.rotate_inertia(rot, model.bodies.inertia_body)
  return jnp.einsum("nij,nj->ni", inertia_world, state.bodies.angular_velocity)

"""Description -> (Model, State): validation, dtype cast and static tables, on the host."""

import jax
import jax.numpy as jnp
import numpy as np

from raisim_jax.description import WorldDescription
from raisim_jax.types import BodyType, Model, SingleBodyModel, SingleBodyState, State


def resolve_dtype(dtype):
  """The JAX float dtype to compile with; enables x64 when float64 is asked for."""
  dtype = jnp.dtype(dtype)
  if dtype not in (jnp.float32, jnp.float64):
    raise ValueError(f"argument 'dtype' must be float32 or float64, got {dtype}")
  if dtype == jnp.float64 and not jax.config.jax_enable_x64:
    # RaiSim computes in double precision; scripts that ask for it get it.
    jax.config.update("jax_enable_x64", True)
  return dtype


def _check_body(body, index):
  where = f"object {index} ('{body.name}')"
  if body.body_type == BodyType.DYNAMIC and not body.mass > 0:
    raise ValueError(f"{where}: argument 'mass' must be positive for a DYNAMIC body, "
                     f"got {body.mass}")
  if body.body_type == BodyType.DYNAMIC and np.linalg.eigvalsh(body.inertia).min() <= 0:
    raise ValueError(f"{where}: argument 'inertia' must be positive definite")


def compile_world(description: WorldDescription, dtype=jnp.float64):
  """Compiles a world description into the pure core's pytrees.

  Returns:
    (model, state): Model and State with float leaves of `dtype`.
  """
  dtype = resolve_dtype(dtype)
  bodies = description.bodies
  for index, body in enumerate(bodies):
    _check_body(body, index)

  def stack(values, shape):
    if not values:
      return jnp.zeros((0,) + shape, dtype)
    return jnp.asarray(np.stack([np.asarray(v, np.float64).reshape(shape) for v in values]),
                       dtype)

  body_model = SingleBodyModel(
      mass=stack([b.mass for b in bodies], ()),
      inertia_body=stack([b.inertia for b in bodies], (3, 3)),
      com_body=stack([b.com for b in bodies], (3,)),
      linear_damping=stack([b.linear_damping for b in bodies], ()),
      angular_damping=stack([b.angular_damping for b in bodies], (3,)),
      body_type=jnp.asarray([int(b.body_type) for b in bodies], jnp.int32).reshape(len(bodies)),
  )
  model = Model(
      bodies=body_model,
      gravity=jnp.asarray(description.gravity, dtype),
      time_step=jnp.asarray(description.time_step, dtype),
      num_bodies=len(bodies),
  )
  zeros = stack([np.zeros(3) for _ in bodies], (3,))
  body_state = SingleBodyState(
      position=stack([b.position for b in bodies], (3,)),
      quaternion=stack([b.quaternion for b in bodies], (4,)),
      linear_velocity=stack([b.linear_velocity for b in bodies], (3,)),
      angular_velocity=stack([b.angular_velocity for b in bodies], (3,)),
      external_force=zeros,
      external_torque=zeros,
  )
  state = State(bodies=body_state, time=jnp.asarray(description.time, dtype))
  return model, state

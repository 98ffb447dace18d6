"""The simulation step as pure functions of (Model, State).

    integrate1: replaces last step's contacts by the current configuration's (collision
                detection); impulses of persisting contacts are kept as the warm start
    integrate2: external loads -> free velocity -> contact solver -> pose integration ->
                penetration correction (erp), world time += dt, external loads cleared;
                articulated systems: ABA + semi-implicit Euler (no contacts with them yet)
    step      = integrate1 then integrate2; jit-, vmap- and grad-compatible
    rollout   = lax.scan of step
"""

import jax
import jax.numpy as jnp

from raisim_jax.collision import detection
from raisim_jax.dynamics import contact_dynamics, single_body
from raisim_jax.dynamics.articulated_integrate import integrate_articulated
from raisim_jax.types import ArticulatedState, Control, Model, State


def integrate1(model: Model, state: State) -> State:
  """Collision detection (RaiSim's integrate1): contacts land in `state.contacts`."""
  contacts = detection.detect_contacts(model, state)
  contacts = contacts.replace(
      impulse=contact_dynamics.warm_start_impulse(state.contacts, contacts))
  return state.replace(contacts=contacts)


def clear_contacts(model: Model, state: State) -> State:
  """Empties the contact buffer (integrateNoContactDetection's first half)."""
  return state.replace(contacts=detection.empty_contacts(
      model.collision.contact_capacity, model.dtype))


def integrate2(model: Model, state: State, control: Control | None = None) -> State:
  """Velocity update, contact solve and pose update (RaiSim's integrate2)."""
  bodies = state.bodies
  force, torque = bodies.external_force, bodies.external_torque
  if control is not None:
    force = force + control.body_force
    torque = torque + control.body_torque
  velocity = single_body.free_velocity(model, state, force, torque)
  velocity, contacts, iterations = contact_dynamics.solve_contacts(
      model, state, velocity, state.contacts)
  state = single_body.integrate_pose(model, state, velocity)
  position = state.bodies.position + contact_dynamics.position_correction(model, contacts)
  zeros = jnp.zeros_like(bodies.external_force)
  return state.replace(
      bodies=state.bodies.replace(position=position, external_force=zeros,
                                  external_torque=zeros),
      contacts=contacts,
      time=state.time + model.time_step,
      solver_iterations=iterations,
      articulated=tuple(integrate_articulated_system(model, system_model, system_state)
                        for system_model, system_state in zip(model.articulated,
                                                              state.articulated)),
  )


def integrate_articulated_system(model: Model, system_model, system: ArticulatedState):
  """Free motion of one articulated system over a step (no contacts with it yet):
  semi-implicit Euler with ABA, feed-forward force and external wrenches."""
  gc, gv = integrate_articulated(
      system_model, system.generalized_coordinate, system.generalized_velocity,
      system.feedforward_force, model.gravity, model.time_step, system.external_wrench)
  return system.replace(
      generalized_coordinate=gc, generalized_velocity=gv,
      generalized_acceleration=(gv - system.generalized_velocity) / model.time_step,
      external_wrench=jnp.zeros_like(system.external_wrench))


def step(model: Model, state: State, control: Control | None = None) -> State:
  """One world step: integrate1 then integrate2. Pure; jit, vmap and grad apply."""
  return integrate2(model, integrate1(model, state), control)


def step_no_contact_detection(model: Model, state: State,
                              control: Control | None = None) -> State:
  """One step without collision detection (RaiSim's integrateNoContactDetection)."""
  return integrate2(model, clear_contacts(model, state), control)


def rollout(model: Model, state: State, n_steps: int, controls: Control | None = None):
  """Runs `n_steps` steps with lax.scan.

  Args:
    model: Model.
    state: initial State.
    n_steps: static number of steps.
    controls: None, or a Control whose leaves have a leading axis of length n_steps.

  Returns:
    (final_state, trajectory) where trajectory is a State whose leaves have a leading axis of
    length n_steps holding the state after each step.
  """
  def body(carry, control):
    new = step(model, carry, control)
    return new, new

  return jax.lax.scan(body, state, controls, length=n_steps)

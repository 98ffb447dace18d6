"""The simulation step as pure functions of (Model, State).

    integrate1: replaces last step's contacts by the current configuration's (collision
                detection over single bodies and articulated links); impulses of persisting
                contacts are kept as the warm start
    integrate2: single bodies: external loads -> free velocity; articulated systems: implicit
                PD + springs + damping -> M_eff and free velocity (articulated_integrate);
                -> one contact solve over contacts and joint limits (contact_dynamics)
                -> poses (single bodies semi-implicit, systems by their IntegrationScheme)
                + penetration correction (erp), world time += dt, external loads cleared
    step      = integrate1 then integrate2; jit-, vmap- and grad-compatible
Per-system work (kinematics, M_eff, end of step) runs once per structure group of systems
under vmap (dynamics/system_groups.py), not once per system. On GPU and TPU backends both
trace with float32 matrix products at full precision (math/matmul_precision.py: TF32 on GPUs
cost M_eff^-1 its digits).
    rollout   = lax.scan of step
"""

import functools

import jax
import jax.numpy as jnp

from raisim_jax import compile as compile_lib
from raisim_jax.collision import detection
from raisim_jax.dynamics import (articulated_integrate, contact_dynamics, gauss_seidel,
                                 island_block, single_body, sleeping, system_groups)
from raisim_jax.math.matmul_precision import full_precision
from raisim_jax.types import Control, Model, State


@full_precision
def integrate1(model: Model, state: State) -> State:
  """Collision detection (RaiSim's integrate1): contacts land in `state.contacts`."""
  compile_lib.resolve_dtype(model.dtype)   # float64 outside 64-bit mode: a clear error
  contacts = detection.detect_contacts(model, state)
  contacts = contacts.replace(
      impulse=contact_dynamics.warm_start_impulse(model, state.contacts, contacts))
  return state.replace(contacts=contacts)


def clear_contacts(model: Model, state: State) -> State:
  """Empties the contact buffer (integrateNoContactDetection's first half)."""
  return state.replace(contacts=detection.empty_contacts(
      model.collision.contact_capacity, model.dtype))


def _apply_articulated_control(state: State, control: Control | None) -> State:
  """Writes a Control's articulated actions into the state (they persist, like setPdTarget)."""
  if control is None or not control.articulated:
    return state
  if len(control.articulated) != len(state.articulated):
    raise ValueError(f"Control.articulated has {len(control.articulated)} entries, the world "
                     f"has {len(state.articulated)} articulated systems")
  systems = tuple(
      system.replace(p_target=action.p_target, d_target=action.d_target,
                     feedforward_force=action.feedforward_force)
      for system, action in zip(state.articulated, control.articulated))
  return state.replace(articulated=systems)


@full_precision
def integrate2(model: Model, state: State, control: Control | None = None) -> State:
  """Velocity update, contact solve and pose update (RaiSim's integrate2)."""
  compile_lib.resolve_dtype(model.dtype)   # float64 outside 64-bit mode: a clear error
  state = _apply_articulated_control(state, control)
  dt = model.time_step
  bodies = state.bodies
  force, torque = bodies.external_force, bodies.external_torque
  if control is not None:
    for name in ("body_force", "body_torque"):
      shape = jnp.shape(getattr(control, name))
      if len(shape) < 2 or shape[-2] != model.num_bodies:
        raise ValueError(
            f"Control.{name} must have shape ({model.num_bodies}, 3): one row per single-body "
            f"row of the model (model.num_bodies; a World's compiled model includes inert "
            f"padding rows after its objects), got shape {shape}")
    force = force + control.body_force
    torque = torque + control.body_torque
  asleep = sleeping.asleep_bodies(model, state, state.contacts, force, torque)
  # Sleeping bodies are STATIC for the free motion and the pose update; their contacts
  # leave the solve.
  frozen_model = sleeping.frozen(model, asleep)
  velocity = single_body.free_velocity(frozen_model, state, force, torque)
  terms = system_groups.map_systems(
      lambda system_model, system: articulated_integrate.step_terms(
          system_model, system.generalized_coordinate, system.generalized_velocity,
          system.feedforward_force, system.p_target, system.d_target, model.gravity, dt,
          system.external_wrench),
      model.articulated, state.articulated)
  solution = contact_dynamics.solve_contacts(
      model, state, velocity, state.contacts, terms,
      frozen_rows=sleeping.frozen_rows(state.contacts, asleep, model.num_bodies))
  state = single_body.integrate_pose(frozen_model, state, solution.velocity)
  position = state.bodies.position + solution.body_displacement
  zeros = jnp.zeros_like(bodies.external_force)

  def end_of_step(system_model, system, term, gv_solved, displacement):
    gc_next, gv_next = articulated_integrate.end_of_step(
        system_model, system.generalized_coordinate, system.generalized_velocity, gv_solved,
        dt, term.mass_inverse, displacement)
    return system.replace(
        generalized_coordinate=gc_next, generalized_velocity=gv_next,
        generalized_acceleration=(gv_next - system.generalized_velocity) / dt,
        generalized_force=articulated_integrate.generalized_force(
            term, system.feedforward_force, system.d_target, gv_next, dt),
        external_wrench=jnp.zeros_like(system.external_wrench))

  systems = system_groups.map_systems(
      end_of_step, model.articulated, state.articulated, terms, solution.generalized_velocity,
      solution.generalized_displacement)
  bodies = state.bodies
  linear = jnp.where(asleep[:, None], 0.0, bodies.linear_velocity)
  angular = jnp.where(asleep[:, None], 0.0, bodies.angular_velocity)
  finite = all_finite([position, bodies.quaternion, linear, angular]
                      + [x for s in systems for x in (s.generalized_coordinate,
                                                      s.generalized_velocity)])
  return state.replace(
      finite=state.finite & finite,
      bodies=bodies.replace(
          position=position, linear_velocity=linear, angular_velocity=angular,
          external_force=zeros, external_torque=zeros, sleeping=asleep,
          # The position correction moves a penetrating body too: it counts as motion.
          quiet_steps=sleeping.count_quiet_steps(
              model, bodies.quiet_steps, linear + solution.body_displacement / dt,
              angular)),
      contacts=solution.contacts,
      time=state.time + dt,
      solver_iterations=solution.iterations,
      articulated=systems,
      joint_limits=(solution.joint_limits if solution.joint_limits is not None
                    else state.joint_limits),
      pins=solution.pins if solution.pins is not None else state.pins,
  )


def all_finite(arrays) -> jax.Array:
  """() bool: every entry of every array is finite."""
  return jnp.all(jnp.asarray([jnp.all(jnp.isfinite(x)) for x in arrays] or [True]))


def step(model: Model, state: State, control: Control | None = None) -> State:
  """One world step: integrate1 then integrate2. Pure; jit, vmap and grad apply."""
  return integrate2(model, integrate1(model, state), control)


def step_no_contact_detection(model: Model, state: State,
                              control: Control | None = None) -> State:
  """One step without collision detection (RaiSim's integrateNoContactDetection)."""
  return integrate2(model, clear_contacts(model, state), control)


# What reverse mode through `rollout` keeps of each step besides its input State: the island
# block move's Newton roots and, with the implicit gradient, the contact solve's converged
# impulses (recomputing a step then skips its sweeps).
ROLLOUT_SAVED = jax.checkpoint_policies.save_only_these_names(
    island_block.NEWTON_ROOT, gauss_seidel.IMPLICIT_SOLUTION)


def rollout(model: Model, state: State, n_steps: int, controls: Control | None = None):
  """Runs `n_steps` steps with lax.scan.

  Reverse mode keeps only each step's input State and recomputes the step's intermediates
  while it goes back through it (`jax.checkpoint` around the step; the forward computes the
  same): without it the gradient of a rollout of 4 sliding bodies held ~5 MB per world-step
  (4 worlds x 5 steps: XLA temporaries 100 MB, with it 21 MB, in the same time). It also keeps
  the root of each island block move's Newton solve (`island_block.NEWTON_ROOT`, a few floats
  per body and sweep), so the recomputed step does not run those Newton steps again, and
  with the implicit gradient (`SolverModel.gradient`) the contact solve's converged impulses
  (`gauss_seidel.IMPLICIT_SOLUTION`, (R, 3) per step), so it does not rerun the sweeps
  either (their derivative needs only the result). A scan of your own over `step` can do the
  same with `jax.checkpoint(..., policy=rj.ROLLOUT_SAVED)`.

  Args:
    model: Model.
    state: initial State.
    n_steps: static number of steps.
    controls: None, or a Control whose leaves have a leading axis of length n_steps.

  Returns:
    (final_state, trajectory) where trajectory is a State whose leaves have a leading axis of
    length n_steps holding the state after each step.
  """
  @functools.partial(jax.checkpoint, prevent_cse=False,   # inside a scan: CSE is harmless
                     policy=ROLLOUT_SAVED)
  def body(carry, control):
    new = step(model, carry, control)
    return new, new

  return jax.lax.scan(body, state, controls, length=n_steps)

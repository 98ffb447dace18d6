"""Closed-loop pin constraints: bilateral 3-D rows of the world's contact problem.

RaiSim (spec, "Closed-loop system"): a URDF `<constraints nominal_config><pin body1 body2
anchor/></constraints>` block turns a spanning tree into a closed loop. `anchor` is a point in
link body1's frame; at `nominal_config` the matching point of body2 is computed once; from
then on both points share one world position, enforced every step by the contact solver with
a small ERP on the residual error.

Row i (world axes, no friction): v_i = (J_1(p_1) - J_2(p_2)) u, solved for v_i = 0 by the exact
3x3 solve lambda = -G_ii^-1 c' (rank-deficient blocks, e.g. a planar loop's out-of-plane axis,
are regularized by the solver); the position error e = p_1 - p_2 is removed by erp * e per step
at the position level, like penetration.
"""

import jax.numpy as jnp
import numpy as np

from raisim_jax.dynamics import jacobian
from raisim_jax.dynamics import kinematics as kin_lib
from raisim_jax.types import PinModel, PinState
from raisim_jax.host_arrays import device_array, device_zeros


def pin_model(descriptions, articulated, dtype) -> PinModel:
  """The pins of every system as static body indices and body-frame anchors.

  Args:
    descriptions: ArticulatedDescription per system (with `pins`, `nominal_config`).
    articulated: compiled ArticulatedModel per system (same order).
    dtype: float dtype of the anchors.
  """
  system, body1, body2, anchor1, anchor2 = [], [], [], [], []
  for s, (desc, model) in enumerate(zip(descriptions, articulated)):
    if not desc.pins:
      continue
    pos, rot, _ = kin_lib.body_poses(model, jnp.asarray(desc.nominal_config, model.dtype))
    pos, rot = np.asarray(pos, np.float64), np.asarray(rot, np.float64)
    for pin in desc.pins:
      b1, link_pos1, link_rot1 = desc.link_placement(pin.body1)
      b2, _, _ = desc.link_placement(pin.body2)
      a1 = link_pos1 + link_rot1 @ np.asarray(pin.anchor, float)
      world = pos[b1] + rot[b1] @ a1
      system.append(s)
      body1.append(b1)
      body2.append(b2)
      anchor1.append(a1)
      anchor2.append(rot[b2].T @ (world - pos[b2]))
  as_array = lambda rows: device_array(np.reshape(np.asarray(rows, float), (len(rows), 3)), dtype)
  return PinModel(anchor1=as_array(anchor1), anchor2=as_array(anchor2), system=tuple(system),
                  body1=tuple(body1), body2=tuple(body2))


def empty_pin_state(pins: PinModel, dtype) -> PinState:
  zeros = device_zeros((pins.count, 3), dtype)
  return PinState(impulse=zeros, error=zeros)


def pin_rows(model, kinematics, offsets, total_dofs):
  """The pin rows of this step.

  Args:
    model: Model; kinematics: tuple of start-of-step Kinematics, one per system.
    offsets: static start of each system's velocities in the stacked vector; total_dofs: NV.

  Returns:
    (jac (P, 3, NV) world-axis rows J_1 - J_2, error (P, 3) = p_1 - p_2 in m, touches (P, S)).
  """
  pins = model.pins
  rows, errors = [], []
  for i, (s, b1, b2) in enumerate(zip(pins.system, pins.body1, pins.body2)):
    system_model, kin = model.articulated[s], kinematics[s]
    p1 = kin_lib.point_position(kin, b1, pins.anchor1[i])
    p2 = kin_lib.point_position(kin, b2, pins.anchor2[i])
    jac = (jacobian.point_jacobian(system_model, kin, b1, p1)
           - jacobian.point_jacobian(system_model, kin, b2, p2))
    nv = system_model.num_gv
    rows.append(jnp.pad(jac, ((0, 0), (offsets[s], total_dofs - offsets[s] - nv))))
    errors.append(p1 - p2)
  touches = np.zeros((pins.count, len(model.articulated)), bool)
  touches[np.arange(pins.count), np.asarray(pins.system, int)] = True
  return jnp.stack(rows), jnp.stack(errors), jnp.asarray(touches)

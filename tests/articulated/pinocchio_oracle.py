"""Pinocchio as an oracle for raisim_jax's articulated core, in RaiSim's conventions.

RaiSim conventions mapped to Pinocchio's (quaternion order, velocity frames). Two ways to get the Pinocchio model:
`from_urdf_text` (Pinocchio's own URDF parser: also checks our loader and fixed-link merging)
and `from_description` (built joint by joint from our merged description: needed for RaiSim-only
joint types such as `spherical`).
"""

import numpy as np
import pinocchio as pin

from raisim_jax.types import (JOINT_FIXED, JOINT_FLOATING, JOINT_PRISMATIC,
                              JOINT_REVOLUTE, JOINT_SPHERICAL)


def quat_wxyz_to_matrix(q):
  w, x, y, z = q / np.linalg.norm(q)
  return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                   [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                   [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


class PinocchioOracle:
  """Wraps a pinocchio.Model whose joints carry our movable joint names."""

  def __init__(self, description, model: pin.Model, body_frame_names=None):
    self.desc = description
    self.model = model
    self.data = model.createData()
    self.bodies = description.bodies
    # per RaiSim body: (pin joint id or None for a fixed root)
    self.pin_joint = []
    for b in self.bodies:
      if b.joint_type == JOINT_FIXED:
        self.pin_joint.append(None)
      elif b.joint_type == JOINT_FLOATING and b.parent < 0 and not model.existJointName(b.joint_name):
        self.pin_joint.append(1)            # free-flyer added by buildModel (named root_joint)
      else:
        self.pin_joint.append(model.getJointId(b.joint_name))
    self.nv = description.dof
    self.nq = description.gc_dim
    offs_q, offs_v = [], []
    oq = ov = 0
    from raisim_jax.types import JOINT_DIMS
    for b in self.bodies:
      offs_q.append(oq)
      offs_v.append(ov)
      oq += JOINT_DIMS[b.joint_type][0]
      ov += JOINT_DIMS[b.joint_type][1]
    self.offs_q, self.offs_v = offs_q, offs_v

  # --- conversions ------------------------------------------------------------------------
  def q_to_pin(self, q):
    out = pin.neutral(self.model)
    for i, b in enumerate(self.bodies):
      j = self.pin_joint[i]
      if j is None:
        continue
      jm = self.model.joints[j]
      o = self.offs_q[i]
      if b.joint_type == JOINT_FLOATING:
        out[jm.idx_q:jm.idx_q + 3] = q[o:o + 3]
        w, x, y, z = q[o + 3:o + 7] / np.linalg.norm(q[o + 3:o + 7])
        out[jm.idx_q + 3:jm.idx_q + 7] = [x, y, z, w]
      elif b.joint_type == JOINT_SPHERICAL:
        w, x, y, z = q[o:o + 4] / np.linalg.norm(q[o:o + 4])
        out[jm.idx_q:jm.idx_q + 4] = [x, y, z, w]
      elif jm.nq == 2:   # continuous (unbounded) revolute
        out[jm.idx_q:jm.idx_q + 2] = [np.cos(q[o]), np.sin(q[o])]
      else:
        out[jm.idx_q] = q[o]
    return out

  def transform(self, q):
    """T (nv, nv) with v_pin = T u (orthogonal)."""
    t = np.zeros((self.nv, self.nv))
    for i, b in enumerate(self.bodies):
      j = self.pin_joint[i]
      if j is None:
        continue
      jm = self.model.joints[j]
      o = self.offs_q[i]
      ov = self.offs_v[i]
      if b.joint_type == JOINT_FLOATING:
        r = quat_wxyz_to_matrix(q[o + 3:o + 7])
        t[jm.idx_v:jm.idx_v + 3, ov:ov + 3] = r.T
        t[jm.idx_v + 3:jm.idx_v + 6, ov + 3:ov + 6] = r.T
      elif b.joint_type == JOINT_SPHERICAL:
        r = quat_wxyz_to_matrix(q[o:o + 4])
        t[jm.idx_v:jm.idx_v + 3, ov:ov + 3] = r.T
      else:
        t[jm.idx_v, ov] = 1.0
    return t

  def _c(self, q, u):
    """Pinocchio spatial-vs-classical base acceleration correction c (pin ordering)."""
    c = np.zeros(self.nv)
    if self.bodies[0].joint_type == JOINT_FLOATING:
      v = self.transform(q) @ u
      jm = self.model.joints[self.pin_joint[0]]
      vb, wb = v[jm.idx_v:jm.idx_v + 3], v[jm.idx_v + 3:jm.idx_v + 6]
      c[jm.idx_v:jm.idx_v + 3] = -np.cross(wb, vb)
    return c

  def set_armature(self, rotor_inertia):
    """rotor inertia (RaiSim order) -> model.armature."""
    arm = np.zeros(self.nv)
    for i, b in enumerate(self.bodies):
      j = self.pin_joint[i]
      if j is None:
        continue
      jm = self.model.joints[j]
      arm[jm.idx_v:jm.idx_v + jm.nv] = rotor_inertia[self.offs_v[i]:self.offs_v[i] + jm.nv]
    self.model.armature = arm
    self.data = self.model.createData()

  # --- quantities in RaiSim's convention ---------------------------------------------------
  def mass_matrix(self, q):
    qp = self.q_to_pin(q)
    m = pin.crba(self.model, self.data, qp)
    m = np.triu(m) + np.triu(m, 1).T
    t = self.transform(q)
    return t.T @ m @ t

  def nonlinearities(self, q, u, gravity):
    self.model.gravity.linear = np.asarray(gravity, float)
    qp = self.q_to_pin(q)
    t = self.transform(q)
    v = t @ u
    nle = pin.nonLinearEffects(self.model, self.data, qp, v)
    m = pin.crba(self.model, self.data, qp)
    m = np.triu(m) + np.triu(m, 1).T
    return t.T @ (nle + m @ self._c(q, u))

  def forward_dynamics(self, q, u, tau, gravity):
    self.model.gravity.linear = np.asarray(gravity, float)
    qp = self.q_to_pin(q)
    t = self.transform(q)
    a = pin.aba(self.model, self.data, qp, t @ u, t @ tau)
    return t.T @ (a - self._c(q, u))

  def inverse_dynamics(self, q, u, du, gravity):
    self.model.gravity.linear = np.asarray(gravity, float)
    qp = self.q_to_pin(q)
    t = self.transform(q)
    a = t @ du + self._c(q, u)
    return t.T @ pin.rnea(self.model, self.data, qp, t @ u, a)

  def body_poses(self, q):
    """(pos (B, 3), rot (B, 3, 3)) of the body frames, RaiSim order."""
    qp = self.q_to_pin(q)
    pin.forwardKinematics(self.model, self.data, qp)
    pin.updateFramePlacements(self.model, self.data)
    pos, rot = [], []
    for i, b in enumerate(self.bodies):
      fid = self.frame_id(b.name, (pin.FrameType.BODY,))
      m = self.data.oMf[fid]
      pos.append(m.translation.copy())
      rot.append(m.rotation.copy())
    return np.array(pos), np.array(rot)

  def frame_id(self, name, preferred):
    """Pinocchio's frame `name`, of the first of the `preferred` FrameTypes that has one (a
    link and a joint may share a name: ANYmal's LF_HAA), else of any type."""
    for kind in preferred:
      if self.model.existFrame(name, kind):
        return self.model.getFrameId(name, kind)
    return self.model.getFrameId(name)

  def frame_jacobian(self, q, frame_name):
    """(pos (3,), J (6, nv) [lin; ang] in RaiSim's u) of a Pinocchio frame (LWA)."""
    qp = self.q_to_pin(q)
    pin.computeJointJacobians(self.model, self.data, qp)
    pin.updateFramePlacements(self.model, self.data)
    fid = self.frame_id(frame_name, (pin.FrameType.JOINT, pin.FrameType.FIXED_JOINT))
    j = pin.getFrameJacobian(self.model, self.data, fid, pin.LOCAL_WORLD_ALIGNED)
    return self.data.oMf[fid].translation.copy(), j @ self.transform(q)

  def com(self, q):
    return pin.centerOfMass(self.model, self.data, self.q_to_pin(q)).copy()

  def kinetic_energy(self, q, u):
    return pin.computeKineticEnergy(self.model, self.data, self.q_to_pin(q), self.transform(q) @ u)

  def potential_energy(self, q, gravity):
    self.model.gravity.linear = np.asarray(gravity, float)
    return pin.computePotentialEnergy(self.model, self.data, self.q_to_pin(q))


def from_urdf_text(description, text, floating):
  """Pinocchio's URDF parser on `text` (extra <?xml?> declarations must be stripped)."""
  if floating:
    model = pin.buildModelFromXML(text, pin.JointModelFreeFlyer())
  else:
    model = pin.buildModelFromXML(text)
  oracle = PinocchioOracle(description, model)
  oracle.set_armature(np.array([b.rotor_inertia for b in description.bodies
                                for _ in range({0: 0, 1: 6, 2: 1, 3: 1, 4: 3}[b.joint_type])]))
  return oracle


def from_description(description):
  """Pinocchio model built joint by joint from our merged description (same joint order)."""
  model = pin.Model()
  pin_parent = []      # per body: (pin joint id, placement of the body frame in that joint)
  arm = []
  for i, b in enumerate(description.bodies):
    if b.parent < 0:
      parent_id, parent_offset = 0, pin.SE3.Identity()
    else:
      parent_id, parent_offset = pin_parent[b.parent]
    placement = parent_offset * pin.SE3(np.asarray(b.joint_rot), np.asarray(b.joint_pos))
    jt = b.joint_type
    if jt == JOINT_FIXED:
      jid, offset = parent_id, placement
    else:
      if jt == JOINT_FLOATING:
        jm = pin.JointModelFreeFlyer()
        arm += [b.rotor_inertia] * 6
      elif jt == JOINT_REVOLUTE:
        jm = pin.JointModelRevoluteUnaligned(np.asarray(b.axis, float))
        arm += [b.rotor_inertia]
      elif jt == JOINT_PRISMATIC:
        jm = pin.JointModelPrismaticUnaligned(np.asarray(b.axis, float))
        arm += [b.rotor_inertia]
      elif jt == JOINT_SPHERICAL:
        jm = pin.JointModelSpherical()
        arm += [b.rotor_inertia] * 3
      jid = model.addJoint(parent_id, jm, placement, b.joint_name)
      offset = pin.SE3.Identity()
    model.appendBodyToJoint(jid, pin.Inertia(b.mass, offset.act(np.asarray(b.com, float)),
                                             offset.rotation @ b.inertia @ offset.rotation.T),
                            pin.SE3.Identity())
    model.addBodyFrame(b.name, jid, offset, 0)
    pin_parent.append((jid, offset))
  for f in description.frames:
    if not model.existFrame(f.name):
      jid, offset = pin_parent[f.body]
      model.addFrame(pin.Frame(f.name, jid, 0, offset * pin.SE3(np.asarray(f.rot),
                                                                np.asarray(f.pos)),
                               pin.FrameType.OP_FRAME))
  model.armature = np.asarray(arm, float)
  return PinocchioOracle(description, model)

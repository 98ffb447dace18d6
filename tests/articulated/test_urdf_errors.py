"""Bad URDFs raise ValueError naming the source, the element and the line; loader features."""

import os
import warnings

import numpy as np
import pytest

import raisim_jax as rj
from raisim_jax.dynamics.tree import compile_articulated
from raisim_jax.io.urdf import Child, ChildBody, ChildJoint, description_from_child, load_urdf

LINK = '<link name="{}"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>'


def urdf(*body):
  return '<?xml version="1.0"?>\n<robot name="r">\n' + "\n".join(body) + "\n</robot>"


def joint(name, parent, child, jtype="revolute"):
  return (f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/>'
          f'<child link="{child}"/><axis xyz="0 0 1"/></joint>')


BAD = [
    (urdf(LINK.format("a"), joint("j1", "a", "missing")), r"<string>: joint 'j1' \(line 4\).*child link 'missing'"),
    (urdf(LINK.format("a"), LINK.format("b"), joint("j1", "nope", "b")), r"joint 'j1' \(line 5\).*parent link 'nope'"),
    (urdf(LINK.format("a"), LINK.format("b"), joint("j1", "a", "b", "weird")), r"joint 'j1' \(line 5\).*unknown joint type 'weird'"),
    (urdf('<link name="a"><inertial><mass value="-1"/></inertial></link>'), r"link 'a' \(line \d\).*'<mass value>' must be non-negative, got -1"),
    (urdf('<link name="a"><inertial><mass value="1"/><inertia ixx="1" iyy="-1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>'), r"link 'a' \(line 3\).*not positive semi-definite"),
    (urdf('<link name="a"><inertial><mass value="1x"/></inertial></link>'), r"link 'a' \(line 3\).*malformed number"),
    (urdf(LINK.format("a"), LINK.format("b")), r"link 'b' \(line 4\).*two root links"),
    (urdf(LINK.format("a"), LINK.format("b"), LINK.format("c"), joint("j1", "a", "b"), joint("j2", "c", "b")), r"joint 'j2' \(line 7\).*already has parent"),
    (urdf(LINK.format("r"), LINK.format("a"), LINK.format("b"), joint("j0", "r", "a"), joint("j1", "a", "b"), joint("j2", "b", "a")), r"joint 'j2'.*already has parent|cycle|loop"),
    (urdf(LINK.format("a"), LINK.format("b"), joint("j1", "a", "b"), joint("j2", "b", "a")), r"loop"),
]


@pytest.mark.parametrize("text,pattern", BAD)
def test_bad_urdf(text, pattern):
  with pytest.raises(ValueError, match=pattern):
    load_urdf(text)


def test_missing_file():
  with pytest.raises(ValueError, match="nowhere.urdf.*not found"):
    load_urdf("/tmp/nowhere.urdf")


def test_bad_file_names_path(tmp_path):
  p = tmp_path / "bad.urdf"
  p.write_text(urdf(LINK.format("a"), joint("LF_HAA", "a", "x")))
  with pytest.raises(ValueError, match=r"bad.urdf: joint 'LF_HAA' \(line 4\)"):
    load_urdf(str(p))


def test_joint_order_override_and_error():
  text = urdf(LINK.format("a"), LINK.format("b"), LINK.format("c"), joint("j1", "a", "b"),
              joint("j2", "a", "c"))
  d = load_urdf(text, joint_order=["j2", "j1"])
  assert d.movable_joint_names == ["ROOT", "j2", "j1"]
  text = urdf(LINK.format("a"), LINK.format("b"), LINK.format("c"), joint("j1", "a", "b"),
              joint("j2", "b", "c"))
  with pytest.raises(ValueError, match="before its parent"):
    load_urdf(text, joint_order=["j2", "j1"])


def test_fixed_merge_and_features():
  rsc = os.path.join(os.path.dirname(__file__), "..", "..", "rsc", "urdf")
  d = load_urdf(os.path.join(rsc, "all_joints.urdf"))
  assert not d.fixed_base
  assert d.movable_joint_names == ["ROOT", "base_to_arm", "arm_to_forearm", "base_to_slider",
                                   "slider_to_ball", "ball_to_tip"]
  assert d.gc_dim == 7 + 1 + 1 + 1 + 4 + 1 and d.dof == 6 + 1 + 1 + 1 + 3 + 1
  forearm = d.bodies[2]
  assert forearm.links == ["forearm", "hand"]
  np.testing.assert_allclose(forearm.mass, 1.0)
  assert [g.name for g in forearm.collisions] == ["hand/0"]
  # the hand sphere is re-expressed in the forearm body frame
  assert np.linalg.norm(forearm.collisions[0].pos - np.array([0, 0.02, -0.2])) < 0.05
  assert d.bodies[0].collisions[0].material == "steel"
  assert d.bodies[1].collisions[0].shape == "capsule"
  assert d.bodies[1].rotor_inertia == 0.01
  assert "forearm_to_hand" in d.frame_names
  f = load_urdf(os.path.join(rsc, "fixed_arm.urdf"))
  assert f.fixed_base and f.bodies[0].joint_type == 0 and f.dof == 3


def test_child_builds_same_description():
  rsc = os.path.join(os.path.dirname(__file__), "..", "..", "rsc", "urdf")
  ref = load_urdf(os.path.join(rsc, "pendulum.urdf"))
  rod = Child(name="rod", joint=ChildJoint(name="hinge", type="revolute", axis=(0, 1, 0)),
              body=ChildBody(mass=2.0, com=(0, 0, -0.5),
                             inertia=np.diag([0.1, 0.1, 0.01])))
  base = Child(name="base", joint=ChildJoint(name="world_to_base", pos=(0, 0, 1)), child=[rod])
  d = description_from_child(base, fixed_base=True)
  assert d.movable_joint_names == ref.movable_joint_names
  for a, b in zip(d.bodies, ref.bodies):
    np.testing.assert_allclose(a.joint_pos, b.joint_pos)
    np.testing.assert_allclose(a.inertia, b.inertia)
    np.testing.assert_allclose(a.mass, b.mass)
  compile_articulated(d)


_LOOP = """<robot name="loop">
  <link name="a"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
  <joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 1 0"/></joint>
  <link name="b"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
  <joint name="f" type="fixed"><parent link="b"/><child link="c"/></joint>
  <link name="c"/>
  CONSTRAINTS
</robot>"""


@pytest.mark.parametrize("block,message", [
    ('<constraints nominal_config="0 0 0 1 0 0 0 0"><pin body1="a" body2="x" anchor="0 0 0"/>'
     '</constraints>', r"line 7\).*link 'x' does not exist"),
    ('<constraints nominal_config="0 0 0 1 0 0 0"><pin body1="a" body2="b" anchor="0 0 0"/>'
     '</constraints>', r"line 7\).*nominal_config has 7 numbers.* has 8"),
    ('<constraints><pin body1="a" body2="b" anchor="0 0 0"/></constraints>',
     "missing attribute 'nominal_config'"),
    ('<constraints nominal_config="0 0 0 1 0 0 0 0"><pin body1="b" body2="c" anchor="0 0 0"/>'
     '</constraints>', "rigidly joined"),
    ('<constraints nominal_config="0 0 0 1 0 0 0 0"><pin body1="a" body2="b" anchor="0 nan 0"/>'
     '</constraints>', "non-finite"),
    ('<constraints nominal_config="0 0 0 1 0 0 0 0"><weld body1="a" body2="b"/></constraints>',
     "unsupported constraint"),
])
def test_constraints_block_errors_name_the_element_and_line(block, message):
  with pytest.raises(ValueError, match=message):
    load_urdf(_LOOP.replace("CONSTRAINTS", block))


def test_spherical_joint_cone_angle_must_be_positive():
  urdf = """<robot name="r"><link name="a"><inertial><mass value="1"/>
    <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
    <joint name="ball" type="spherical"><parent link="a"/><child link="b"/>
      <limit upper="-0.2"/></joint>
    <link name="b"><inertial><mass value="1"/>
    <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link></robot>"""
  with pytest.raises(ValueError, match=r"joint 'ball'.*line 4.*cone angle must be in \(0, pi\)"):
    load_urdf(urdf)
  with pytest.raises(ValueError, match=r"joint 'ball'.*line 4.*cone angle must be in \(0, pi\)"):
    load_urdf(urdf.replace('upper="-0.2"', 'upper="3.5"'))


def test_child_spherical_cone_angle_is_checked_at_compile():
  ball = Child(name="ball_link", joint=ChildJoint(name="ball", type="spherical", upper=0.0),
               body=ChildBody(mass=1.0, inertia=np.eye(3)))
  base = Child(name="base", joint=ChildJoint(name="fix"), child=[ball])
  with pytest.raises(ValueError, match=r"joint 'ball'.*cone angle must be in \(0, pi\)"):
    compile_articulated(description_from_child(base, fixed_base=True))


# ---- numbers read from a file go through the setters' checks (issue #9, item 6) ------------

INERTIA = '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/>'


def arm(link_b='<link name="b"><inertial><mass value="1"/>' + INERTIA + '</inertial>'
               '<collision><geometry><sphere radius="0.1"/></geometry></collision></link>',
        joint_extra="", link_a_mass="1", inertia=INERTIA):
  """A fixed-base one-joint arm; pieces replaced to plant one bad number."""
  return urdf('<link name="world"/>',
              '<joint name="fix" type="fixed"><parent link="world"/><child link="a"/></joint>',
              f'<link name="a"><inertial><mass value="{link_a_mass}"/>{inertia}</inertial></link>',
              '<joint name="hinge" type="revolute"><parent link="a"/><child link="b"/>'
              f'<axis xyz="0 1 0"/>{joint_extra}</joint>',
              link_b)


def two_hinges(second_axis):
  """A fixed-base chain of two hinges at one point with a massless link between them."""
  return urdf('<link name="world"/>',
              '<joint name="fix" type="fixed"><parent link="world"/><child link="a"/></joint>',
              '<link name="a"/>',
              '<joint name="j1" type="revolute"><parent link="a"/><child link="b"/>'
              '<axis xyz="0 1 0"/></joint>',
              '<link name="b"/>',
              '<joint name="j2" type="revolute"><parent link="b"/><child link="c"/>'
              f'<axis xyz="{second_axis}"/></joint>',
              '<link name="c"><inertial><mass value="1"/>' + INERTIA + '</inertial></link>')


BAD_NUMBERS = [
    (arm(link_a_mass="nan"), r"link 'a' \(line 5\).*non-finite number value=\"nan\""),
    (arm(link_a_mass="inf"), r"link 'a' \(line 5\).*non-finite number value=\"inf\""),
    (arm(inertia=INERTIA.replace('ixx="1"', 'ixx="nan"')), r"link 'a' \(line 5\).*non-finite number ixx"),
    (arm(joint_extra='<dynamics damping="nan"/>'), r"joint 'hinge' \(line 6\).*non-finite number damping"),
    (arm(joint_extra='<dynamics damping="-0.5"/>'), r"joint 'hinge' \(line 6\).*'<dynamics damping>' must be non-negative, got -0.5"),
    (arm(joint_extra='<dynamics rotor_inertia="-0.1"/>'), r"joint 'hinge' \(line 6\).*'<dynamics rotor_inertia>' must be non-negative"),
    (arm(joint_extra='<dynamics stiffness="-3"/>'), r"joint 'hinge' \(line 6\).*'<dynamics stiffness>' must be non-negative"),
    (arm(joint_extra='<limit lower="nan" upper="1" effort="1" velocity="1"/>'), r"joint 'hinge' \(line 6\).*non-finite number lower"),
    (arm(joint_extra='<limit lower="-1" upper="1" effort="-2" velocity="1"/>'), r"joint 'hinge' \(line 6\).*<limit effort> must be >= 0"),
    (arm(link_b='<link name="b"><inertial><mass value="1"/>' + INERTIA + '</inertial><collision>'
                '<geometry><sphere radius="-0.1"/></geometry></collision></link>'),
     r"link 'b' <collision> <sphere> \(line 7\).*'radius' must be positive, got -0.1"),
    (arm(link_b='<link name="b"><inertial><mass value="1"/>' + INERTIA + '</inertial><collision>'
                '<geometry><sphere radius="nan"/></geometry></collision></link>'),
     r"link 'b' <collision> \(line 7\).*non-finite number radius"),
    (arm(link_b='<link name="b"><inertial><mass value="1"/>' + INERTIA + '</inertial><collision>'
                '<geometry><box size="0.1 0 0.1"/></geometry></collision></link>'),
     r"<box> \(line 7\).*'size' must be positive, got 0"),
    (arm(link_b='<link name="b"><collision><geometry><sphere radius="0.1"/></geometry>'
                '</collision></link>'),
     r"joint 'hinge' \(line 6\): moves link 'b', but that link and everything it carries have "
     r"no mass.*give the link an <inertial> or make the joint fixed"),
    (urdf('<link name="base"/>'), r"link 'base' \(line 3\): the floating base .* no mass"),
    # A rod on the hinge's axis with no inertia about it: M has a zero diagonal entry.
    (arm(link_b='<link name="b"><inertial><origin xyz="0 0.3 0"/><mass value="0.5"/>'
                '<inertia ixx="0.01" iyy="0" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial>'
                '</link>'),
     r"joint 'hinge' \(line 6\): moves link 'b', but .* no inertia about its axis"),
    (arm(link_b='<link name="b"><inertial><mass value="0"/>' + INERTIA + '</inertial></link>',
         joint_extra='<limit lower="-1" upper="1" effort="1" velocity="1"/>').replace(
             'type="revolute"', 'type="prismatic"'),
     r"joint 'hinge' \(line 6\): moves link 'b', but .* no mass along its axis"),
]


# Singular together, regular one by one (each joint's diagonal entry of M is positive).
SINGULAR_PAIRS = [
    # Coaxial hinges with a massless link between: turning them opposite ways moves nothing.
    (two_hinges("0 1 0"), r"joint 'j1' \(line 6\): joint 'j1' and joint 'j2' together can move "
                          r"without moving any mass or inertia"),
    # A floating base of mass 0 with a slider (pybullet_data's cartpole): base and cart slide
    # against each other moving nothing. Bullet fixes a base of mass 0; RaiSim does not.
    (urdf('<link name="bar"><inertial><mass value="0"/>' + INERTIA + '</inertial></link>',
          '<joint name="slider" type="prismatic"><parent link="bar"/><child link="cart"/>'
          '<axis xyz="1 0 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>',
          '<link name="cart"><inertial><mass value="1"/>' + INERTIA + '</inertial></link>'),
     r"link 'bar' \(line 3\): the floating base and joint 'slider' together can move without "
     r"moving any mass.*the floating base link 'bar' has no mass.*root link named 'world'"),
    # A floating base of mass 0 with inertia (pybullet_data's table): translations move nothing.
    (urdf('<link name="top"><inertial><mass value="0"/>' + INERTIA + '</inertial></link>'),
     r"link 'top' \(line 3\): the floating base has no mass \(the joint-space mass matrix "
     r"would be singular\).*root link named 'world'"),
]


def test_a_mass_matrix_singular_only_at_the_zero_configuration_warns():
  """Hinges j1 and j2 about z, both through the origin at zero, with massless links between
  them and a tilting hinge jm (about x) in the middle: at jm = 0 they are coaxial and turning
  them opposite ways moves nothing (M singular); anywhere else M is regular. The model is
  fine, the pose is not: a warning, not a refusal."""
  massless = '<link name="{}"/>'
  text = urdf('<link name="world"/>',
              '<joint name="fix" type="fixed"><parent link="world"/><child link="a"/></joint>',
              '<link name="a"/>',
              '<joint name="j1" type="revolute"><parent link="a"/><child link="b"/>'
              '<axis xyz="0 0 1"/></joint>', massless.format("b"),
              '<joint name="jm" type="revolute"><parent link="b"/><child link="m"/>'
              '<axis xyz="1 0 0"/></joint>', massless.format("m"),
              '<joint name="j2" type="revolute"><parent link="m"/><child link="c"/>'
              '<axis xyz="0 0 1"/></joint>',
              '<link name="c"><inertial><origin xyz="0 0 0.3"/><mass value="1"/>' + INERTIA
              + '</inertial></link>')
  with pytest.warns(UserWarning, match=r"joint 'j1' \(line 6\): joint 'j1' and joint 'j2' "
                                       r"together can move without moving any mass or inertia "
                                       r".* at the zero configuration, and regular elsewhere"):
    assert load_urdf(text).dof == 3
  # Damping on one of them keeps the step's M_eff = M + dt diag(d) regular: nothing to say.
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    load_urdf(text.replace('<axis xyz="0 0 1"/></joint>',
                           '<axis xyz="0 0 1"/><dynamics damping="0.5"/></joint>', 1))


def test_damping_passes_only_the_joints_it_is_on():
  """Two hinges each turning a point mass on its own axis (a zero diagonal each): damping on
  j1 keeps M_eff regular along j1, not along j2, which is still refused by name (the check
  once passed any singular direction that touched a damped dof; found in review)."""
  point = ('<inertial><mass value="1"/><inertia ixx="0" iyy="0" izz="0" ixy="0" ixz="0" '
           'iyz="0"/></inertial>')
  text = urdf('<link name="world"/>',
              '<joint name="fix" type="fixed"><parent link="world"/><child link="a"/></joint>',
              '<link name="a"><inertial><mass value="1"/>' + INERTIA + '</inertial></link>',
              '<joint name="j1" type="revolute"><parent link="a"/><child link="b"/>'
              '<axis xyz="0 0 1"/><dynamics damping="0.5"/></joint>',
              f'<link name="b">{point}</link>',
              '<joint name="j2" type="revolute"><parent link="a"/><child link="c"/>'
              '<origin xyz="0.5 0 0"/><axis xyz="0 0 1"/></joint>',
              f'<link name="c">{point}</link>')
  with pytest.raises(ValueError, match=r"joint 'j2' \(line 8\): moves link 'c', but .* no "
                                       r"inertia about its axis"):
    load_urdf(text)
  assert load_urdf(text.replace('<origin xyz="0.5 0 0"/><axis xyz="0 0 1"/></joint>',
                                '<origin xyz="0.5 0 0"/><axis xyz="0 0 1"/>'
                                '<dynamics damping="0.5"/></joint>')).dof == 2


@pytest.mark.parametrize("text,pattern", SINGULAR_PAIRS)
def test_a_singular_joint_space_mass_matrix_names_the_joints(text, pattern):
  with pytest.raises(ValueError, match=pattern):
    load_urdf(text)


@pytest.mark.parametrize("name", ["cartpole.urdf", "table/table.urdf", "sphere2red_nocol.urdf"])
def test_third_party_files_with_a_massless_floating_base_are_refused(name):
  """pybullet_data files whose base has mass 0 (Bullet makes such a base static) stepped to
  NaN in the first step; now the load says why, and the Bullet-vs-RaiSim difference."""
  import pybullet_data
  world = rj.World()
  with pytest.raises(ValueError, match=r"floating base.*no mass.*root link named 'world'"):
    world.addArticulatedSystem(os.path.join(pybullet_data.getDataPath(), name))


@pytest.mark.parametrize("text,pattern", BAD_NUMBERS)
def test_bad_numbers_in_a_urdf_name_the_element_and_line(text, pattern, tmp_path):
  with pytest.raises(ValueError, match=pattern):
    load_urdf(text)
  path = tmp_path / "robot.urdf"
  path.write_text(text)
  with pytest.raises(ValueError, match=str(path)):
    load_urdf(str(path))


def test_massless_link_that_carries_mass_or_rotor_inertia_loads():
  # An intermediate link with no <inertial> whose child has mass: the joint moves mass.
  assert load_urdf(two_hinges("1 0 0")).dof == 2
  # A massless leaf driven through a rotor (rotor_inertia > 0) has a regular mass matrix.
  rotor = arm(link_b='<link name="b"/>', joint_extra='<dynamics rotor_inertia="0.01"/>')
  assert load_urdf(rotor).dof == 1
  # Mass off the axis moves inertia about it even where the link's own inertia is zero.
  off_axis = arm(link_b='<link name="b"><inertial><origin xyz="0.2 0 0"/><mass value="1"/>'
                        '<inertia ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/>'
                        '</inertial></link>')
  assert load_urdf(off_axis).dof == 1


def test_limit_lower_above_upper_is_bullets_no_limit_with_a_warning():
  with pytest.warns(UserWarning, match=r"joint 'hinge' \(line 6\).*taken as unlimited"):
    d = load_urdf(arm(joint_extra='<limit lower="1" upper="-1" effort="1" velocity="1"/>'))
  assert d.bodies[1].lower == -np.inf and d.bodies[1].upper == np.inf


def test_joint_settings_that_are_not_simulated_warn_naming_the_joint_and_line():
  """URDF <mimic> and a nonzero <dynamics friction> are read but not simulated: each says so
  (they were accepted without a word); damping alone, or friction 0, is silent."""
  with pytest.warns(UserWarning, match=r"joint 'hinge' \(line 6\): <dynamics friction> 0.3 "
                                       r"is not simulated"):
    load_urdf(arm(joint_extra='<dynamics damping="0.1" friction="0.3"/>'))
  with pytest.warns(UserWarning, match=r"joint 'hinge' \(line 6\): <mimic joint='other'> is "
                                       r"not simulated"):
    load_urdf(arm(joint_extra='<mimic joint="other" multiplier="1"/>'))
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    load_urdf(arm(joint_extra='<dynamics damping="0.1" friction="0"/>'))


def test_child_numbers_get_the_same_checks():
  def build(**joint):
    leaf = Child(name="leaf", joint=ChildJoint(name="hinge", type="revolute", axis=(0, 1, 0),
                                               **joint),
                 body=ChildBody(mass=1.0, inertia=np.eye(3)))
    return description_from_child(Child(name="base", joint=ChildJoint(name="fix"), child=[leaf]),
                                  fixed_base=True)
  with pytest.raises(ValueError, match=r"<Child>: joint 'hinge'.*damping>' must be non-negative"):
    build(damping=-1.0)
  with pytest.raises(ValueError, match=r"<Child>: joint 'hinge'.*rotor_inertia>' must be non-negative"):
    build(rotor_inertia=float("nan"))
  with pytest.raises(ValueError, match=r"<Child>: joint 'hinge'.*lower 1.0 is above upper -1.0"):
    build(lower=1.0, upper=-1.0)
  bad_mass = Child(name="base", body=ChildBody(mass=float("nan"), inertia=np.eye(3)))
  with pytest.raises(ValueError, match=r"<Child>: link 'base'.*<mass value>' must be non-negative"):
    description_from_child(bad_mass)


def test_a_placeholder_link_with_a_rounded_inertia_fixed_to_a_body_warns_and_loads():
  """example-robot-data's TIAGo fixes 1 mg antenna links with inertias of ~1e-8 kg m^2 whose
  rounding made them indefinite (eigenvalues -3.5e-8, 3.5e-8, 9.1e-8) to its base: the body
  they merge into is positive definite, so the file loads with a warning naming the link;
  the same inertia on a link that moves by itself is still refused."""
  antenna = ('<inertial><mass value="0.000001"/><inertia ixx="0.00000002371" '
             'ixy="0.00000006119" ixz="0.00000001179" iyy="0.00000002833" '
             'iyz="0.00000000774" izz="0.00000003849"/></inertial>')
  text = urdf('<link name="base"><inertial><mass value="10"/>' + INERTIA + '</inertial></link>',
              '<joint name="mount" type="fixed"><parent link="base"/><child link="antenna"/>'
              '<origin xyz="0.2 0.1 0.2"/></joint>',
              f'<link name="antenna">{antenna}</link>')
  with pytest.warns(UserWarning, match=r"link 'antenna' \(line 5\): <inertia> is not positive "
                                       r"semi-definite.*fixed to body 'base'.*used as given"):
    description = load_urdf(text)
  assert np.linalg.eigvalsh(description.bodies[0].inertia).min() > 0
  with pytest.raises(ValueError, match=r"link 'antenna' \(line 5\): <inertia> is not positive"):
    load_urdf(text.replace('type="fixed"', 'type="revolute"').replace(
        '<origin xyz="0.2 0.1 0.2"/>', '<origin xyz="0.2 0.1 0.2"/><axis xyz="1 0 0"/>'))


@pytest.mark.parametrize("name", ["a1", "all_joints"])
def test_the_load_checks_mass_matrix_is_pinocchios(name):
  """`number_checks.joint_space_mass_matrix` (host numpy, what the load-time rank check
  reads) against Pinocchio's at the zero configuration and at the check's displaced one
  (hinges and sliders moved, spherical joints turned about a fixed oblique axis). Its
  spherical columns were once transposed (0.13 off; found in review)."""
  from raisim_jax.io import number_checks
  from raisim_jax.types import JOINT_FLOATING, JOINT_PRISMATIC, JOINT_REVOLUTE, JOINT_SPHERICAL
  from tests.articulated.robots import robot
  description, _, oracle = robot(name)
  displacement = np.random.default_rng(0).uniform(-1.0, 1.0, len(description.bodies))
  axis = np.asarray([1.0, 2.0, 3.0]) / np.sqrt(14.0)
  for moved in (None, displacement):
    q = []
    for k, body in enumerate(description.bodies):
      angle = 0.0 if moved is None else moved[k]
      if body.joint_type == JOINT_FLOATING:
        q += [0, 0, 0, 1, 0, 0, 0]
      elif body.joint_type == JOINT_SPHERICAL:
        q += [np.cos(angle / 2), *(np.sin(angle / 2) * axis)]
      elif body.joint_type in (JOINT_REVOLUTE, JOINT_PRISMATIC):
        q.append(angle)
    mass_matrix, _ = number_checks.joint_space_mass_matrix(description.bodies, moved)
    np.testing.assert_allclose(mass_matrix, oracle.mass_matrix(np.asarray(q, float)),
                               atol=1e-12)

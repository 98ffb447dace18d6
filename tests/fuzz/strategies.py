"""Shared pieces of the loaders' property-based tests: attribute values that are mostly
sensible and, at a per-case rate, nasty (NaN, inf, negative, huge, malformed); file damage
(truncation, one garbled character); stepping a loaded world and tallying the outcomes."""

import warnings

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import raisim_jax as rj

EXAMPLES = 40  # generated cases per CI run, per loader
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

NASTY = ["nan", "inf", "-inf", "-1", "0", "1e300", "-1e-300", "abc", "", "1 2"]


class Numbers:
  """Draws attribute values for one case: a sensible value, or with probability `rate` (per
  case: clean cases have 0) a nasty one."""

  def __init__(self, draw):
    self.draw = draw
    self.rate = draw(st.sampled_from([0.0, 0.0, 0.02, 0.1]))

  def nasty(self):
    return self.draw(st.floats(0.0, 1.0)) < self.rate

  def positive(self):
    if self.nasty():
      return self.draw(st.sampled_from(NASTY))
    return f"{self.draw(st.floats(0.02, 2.0)):.4g}"

  def signed(self):
    if self.nasty():
      return self.draw(st.sampled_from(NASTY))
    return f"{self.draw(st.floats(-0.5, 0.5)):.4g}"

  def pick(self, good, bad):
    return self.draw(st.sampled_from(bad if self.nasty() else good))


def damaged(draw, text):
  """`text` as it is (3 cases in 4), cut short, or with one character replaced by markup."""
  damage = draw(st.sampled_from(["none"] * 6 + ["truncate", "garble"]))
  if damage == "truncate":
    text = text[:draw(st.integers(1, len(text) - 1))]
  elif damage == "garble":
    at = draw(st.integers(0, len(text) - 1))
    text = text[:at] + draw(st.sampled_from(['"', "<", ">", "/", "\x00", "="])) + text[at + 1:]
  return text


def stepped_or_diverged(world, outcomes, steps=100):
  """Steps `world` (warnings silenced); True when all `steps` ran, False (outcome
  'diverged' counted) when it raised DivergenceError, which must name an object."""
  try:
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      for _ in range(steps):
        world.integrate()
  except rj.DivergenceError as error:
    assert "object '" in str(error), str(error)
    outcomes["diverged"] += 1
    return False
  return True


def assert_every_outcome(outcomes, label):
  """After a property test of the same file: its cases must not all be rejected."""
  if sum(outcomes.values()) == 0:
    pytest.skip("run together with the property test")
  print(f"{label} fuzz outcomes:", outcomes)
  assert outcomes["stepped"] > 0 and outcomes["rejected"] > 0

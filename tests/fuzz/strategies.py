"""Shared pieces of the loaders' property-based tests: attribute values that are mostly
sensible and, at a per-case rate, nasty (NaN, inf, negative, huge, malformed); and file damage
(truncation, one garbled character)."""

from hypothesis import strategies as st

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

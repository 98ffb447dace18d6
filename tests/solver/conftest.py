import jax
import pytest

from raisim_jax.dynamics import gauss_seidel

jax.config.update("jax_enable_x64", True)


@pytest.fixture
def traced_layouts(monkeypatch):
  """The gauss_seidel.Layout of every solve traced while the test runs, in trace order
  (a spy on `gauss_seidel.solve`, which every contact solve calls once per traced loop)."""
  layouts = []
  original = gauss_seidel.solve

  def spy(layout, *args):
    layouts.append(layout)
    return original(layout, *args)

  monkeypatch.setattr(gauss_seidel, "solve", spy)
  return layouts

"""The README's examples run as written, and the demo runs without arguments."""

import os
import pathlib
import re
import subprocess
import sys
import textwrap


ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_readme_python_examples_run():
  """In a fresh interpreter (the test session enables x64; a reader's script does not)."""
  text = (ROOT / "README.md").read_text()
  blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
  assert len(blocks) >= 2
  script = "\n".join(blocks) + textwrap.dedent("""
      import numpy as np
      assert np.all(np.isfinite(np.asarray(final.bodies.position)))
      assert np.isfinite(float(grads.bodies.position[1, 2]))
      print("README ok")
  """)
  env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
  result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True,
                          text=True, env=env, timeout=1200)
  assert result.returncode == 0, result.stderr[-4000:]
  assert "README ok" in result.stdout


def test_demo_runs(capsys):
  from raisim_jax import demo
  demo.main()
  out = capsys.readouterr().out
  assert "materials example" in out and "batched" in out and "pendulum" in out

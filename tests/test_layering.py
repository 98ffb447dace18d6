"""The pure core never imports the OO shell (DESIGN.md): every module of raisim_jax outside
raisim_jax/oo/, raisim_jax/envs/ and raisim_jax/examples/ (except the package's __init__ and
the demo, which are users of both; the RL environments and the examples build their worlds
with the OO World) is core, and no core
module imports anything from raisim_jax.oo."""

import ast
import pathlib
import subprocess
import sys

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "raisim_jax"
NOT_CORE = {"__init__.py", "demo.py"}


def _imports(path):
  tree = ast.parse(path.read_text())
  for node in ast.walk(tree):
    if isinstance(node, ast.ImportFrom) and node.module:
      yield node.module
      for alias in node.names:
        yield f"{node.module}.{alias.name}"
    elif isinstance(node, ast.Import):
      for alias in node.names:
        yield alias.name


def _core_modules():
  for path in sorted(PACKAGE.rglob("*.py")):
    relative = path.relative_to(PACKAGE)
    if relative.parts[0] in ("oo", "envs", "examples") or str(relative) in NOT_CORE:
      continue
    yield path


def test_core_does_not_import_the_oo_shell():
  core = list(_core_modules())
  assert len(core) > 30   # the walk found the core (math, dynamics, collision, io, ...)
  offenders = [f"{path.relative_to(PACKAGE)} imports {module}" for path in core
               for module in _imports(path)
               if module == "raisim_jax.oo" or module.startswith("raisim_jax.oo.")]
  assert not offenders, offenders


def test_the_shell_package_holds_the_world_and_its_views():
  shell = {path.stem for path in (PACKAGE / "oo").glob("*.py")}
  assert {"world", "objects", "articulated_system", "articulated_collision", "contact",
          "ray_collision"} <= shell


def test_importing_raisim_jax_pulls_in_no_heavy_optional_package():
  """`import raisim_jax` (every script, every test process) loads neither flax (its package
  import pulls flax.linen: half of ours, 0.25 s), nor scipy, mujoco, brax or Pinocchio;
  struct.dataclass registers the pytrees with jax itself."""
  script = ("import sys, raisim_jax as rj\n"
            "heavy = ('flax', 'scipy', 'mujoco', 'brax', 'pinocchio', 'optax')\n"
            "print(sorted(m for m in heavy if m in sys.modules))\n")
  out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=300, check=True)
  assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout

"""The pure core never imports the OO layer (DESIGN.md)."""

import ast
import pathlib

CORE = ["types.py", "step.py", "compile.py", "description.py", "validation.py", "struct.py",
        "joint_springs.py", "math", "dynamics", "collision", "io"]
OO_MODULES = {"raisim_jax.world", "raisim_jax.objects", "raisim_jax.articulated_system",
              "raisim_jax.articulated_collision", "raisim_jax.contact",
              "raisim_jax.ray_collision"}


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


def test_core_does_not_import_the_oo_layer():
  package = pathlib.Path(__file__).resolve().parents[1] / "raisim_jax"
  offenders = []
  for entry in CORE:
    paths = [package / entry] if entry.endswith(".py") else (package / entry).rglob("*.py")
    for path in paths:
      for module in _imports(path):
        if module in OO_MODULES or module.startswith(tuple(m + "." for m in OO_MODULES)):
          offenders.append(f"{path.relative_to(package)} imports {module}")
  assert not offenders, offenders

"""URDF modules: optional fragments (payloads, sensor packs) inserted into a base URDF.

Spec (articulated_systems.txt, "URDF modules"): each module's text goes before the base
URDF's closing `</robot>`; a module is found at the first of
    the path itself if absolute, [baseDir]/<module>, [baseDir]/modules/<module>,
    [baseDir]/../modules/<module>, [baseDir]/module/<module>, [baseDir]/../module/<module>
with baseDir the URDF's directory unless resDir is given; the composed URDF is written to
[baseDir]/generated_<urdf stem>_<module stem>[_<module stem>...].urdf and loaded from there.
"""

import os
import re

_XML_DECLARATION = re.compile(r"<\?xml[^>]*\?>")
_ROBOT_WRAPPER = re.compile(r"^\s*<robot\b[^>]*>(.*)</robot>\s*$", re.DOTALL)


def module_path(module, base_dir):
  """The module file, by the spec's search order; FileNotFoundError listing the places tried."""
  if os.path.isabs(module):
    candidates = [module]
  else:
    candidates = [os.path.join(base_dir, *parts, module) for parts in
                  ((), ("modules",), ("..", "modules"), ("module",), ("..", "module"))]
  for candidate in candidates:
    if os.path.isfile(candidate):
      return candidate
  raise FileNotFoundError(f"URDF module '{module}' not found; looked for: "
                          + ", ".join(os.path.normpath(c) for c in candidates))


def fragment(path):
  """A module's text without an XML declaration and without a `<robot>` wrapper."""
  with open(path, "r", encoding="utf-8") as f:
    text = _XML_DECLARATION.sub("", f.read())
  wrapped = _ROBOT_WRAPPER.match(text)
  return wrapped.group(1) if wrapped else text


def compose(urdf, modules, res_dir=""):
  """Writes the base URDF (a path or URDF text) with `modules` inserted and returns the
  generated file's path.

  Raises:
    ValueError: the base URDF has no closing `</robot>`.
    FileNotFoundError: the URDF or a module cannot be found.
  """
  if urdf.lstrip().startswith("<") or "<robot" in urdf:
    text, stem, source = urdf, "string", "<string>"
    base_dir = res_dir or os.getcwd()
  else:
    if not os.path.isfile(urdf):
      raise FileNotFoundError(f"{urdf}: URDF file not found")
    with open(urdf, "r", encoding="utf-8") as f:
      text = f.read()
    stem, source = os.path.splitext(os.path.basename(urdf))[0], urdf
    base_dir = res_dir or os.path.dirname(os.path.abspath(urdf))
  end = text.rfind("</robot>")
  if end < 0:
    raise ValueError(f"{source}: no closing </robot> to insert the modules before")
  paths = [module_path(str(m), base_dir) for m in modules]
  inserted = "".join("\n" + fragment(p) + "\n" for p in paths)
  stems = [os.path.splitext(os.path.basename(p))[0] for p in paths]
  generated = os.path.join(base_dir, "_".join(["generated", stem] + stems) + ".urdf")
  with open(generated, "w", encoding="utf-8") as f:
    f.write(text[:end] + inserted + text[end:])
  return generated

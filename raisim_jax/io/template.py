"""RaiSim's template preprocessor for world XML and URDF files.

Two features (spec: articulated_systems.txt, "Templated URDF"; world.txt, the world
configuration template):
  * `@@Name` is replaced by the value of parameter `Name` (a string, as RaiSim's
    `unordered_map<string, string>`, or a number);
  * `{expression}` is replaced by the value of the arithmetic expression inside, after its
    variables are substituted: numbers, + - * /, parentheses, unary signs and the functions
    sin, cos, log, exp (and tan, sqrt, abs). Expressions are parsed with `ast` and evaluated
    node by node over that whitelist; nothing is handed to `eval`.

Errors name the source, the line, and the missing variable or the bad expression.
"""

import ast
import math
import operator
import re

_VARIABLE = re.compile(r"@@([A-Za-z_][A-Za-z0-9_]*)")
_EXPRESSION = re.compile(r"\{([^{}]*)\}")
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_FUNCTIONS = {"sin": math.sin, "cos": math.cos, "tan": math.tan, "log": math.log,
              "exp": math.exp, "sqrt": math.sqrt, "abs": abs}


class TemplateError(ValueError):
  """A template variable without a value or an expression that cannot be evaluated."""


def parameter_map(params):
  """{name: str value} from a mapping, or from a sequence of `ParameterContainer`-like
  objects (attributes `name` and `value`) or (name, value) pairs; None gives {}."""
  if params is None:
    return {}
  if hasattr(params, "items"):
    items = params.items()
  else:
    items = []
    for entry in params:
      if hasattr(entry, "name") and hasattr(entry, "value"):
        items.append((entry.name, entry.value))
      else:
        try:
          name, value = entry
        except (TypeError, ValueError):
          raise TypeError(f"template parameters: expected a mapping, (name, value) pairs or "
                          f"ParameterContainer objects, got {entry!r}") from None
        items.append((name, value))
  result = {}
  for name, value in items:
    name = str(name)
    if name.startswith("@@"):
      name = name[2:]
    result[name] = value if isinstance(value, str) else repr(value)
  return result


def evaluate(expression, where=""):
  """float value of an arithmetic expression (see the module docstring for what it may use)."""
  try:
    tree = ast.parse(expression.strip(), mode="eval")
  except SyntaxError:
    raise TemplateError(f"{where}malformed expression {{{expression}}}") from None

  def value(node):
    if isinstance(node, ast.Expression):
      return value(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
        and not isinstance(node.value, bool):
      return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
      return _BINARY[type(node.op)](value(node.left), value(node.right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
      return _UNARY[type(node.op)](value(node.operand))
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        and node.func.id in _FUNCTIONS and len(node.args) == 1 and not node.keywords):
      return float(_FUNCTIONS[node.func.id](value(node.args[0])))
    if isinstance(node, ast.Name):
      raise TemplateError(f"{where}unknown name '{node.id}' in expression {{{expression}}} "
                          f"(functions: {', '.join(sorted(_FUNCTIONS))}; variables are "
                          f"written @@name)")
    raise TemplateError(f"{where}unsupported syntax '{ast.unparse(node)}' in expression "
                        f"{{{expression}}} (numbers, + - * /, parentheses and "
                        f"{', '.join(sorted(_FUNCTIONS))} only)")

  try:
    result = value(tree)
  except (ZeroDivisionError, ValueError, OverflowError) as error:
    if isinstance(error, TemplateError):
      raise
    raise TemplateError(f"{where}expression {{{expression}}} cannot be evaluated: "
                        f"{error}") from None
  if not math.isfinite(result):
    raise TemplateError(f"{where}expression {{{expression}}} is not finite ({result})")
  return result


def _format(number):
  return repr(float(number))


def substitute(text, values, where=""):
  """One string with `@@Name` variables from `values` ({name: str}) substituted and its
  `{expression}`s evaluated; `where` prefixes error messages."""
  if "@@" not in text and "{" not in text:
    return text

  def variable(match):
    name = match.group(1)
    if name not in values:
      known = ", ".join(sorted(values)) or "none given"
      raise TemplateError(f"{where}template variable @@{name} has no value (parameters: "
                          f"{known})")
    return values[name]

  text = _EXPRESSION.sub(
      lambda match: _format(evaluate(_VARIABLE.sub(variable, match.group(1)), where)), text)
  return _VARIABLE.sub(variable, text)


def preprocess(text, params, source="<string>"):
  """`text` with `@@Name` variables substituted and `{expression}`s evaluated, line by line
  (URDF templates).

  Args:
    text: the template.
    params: parameter values (see `parameter_map`).
    source: the file name used in error messages.

  Raises:
    TemplateError: a variable has no value, or an expression is malformed, uses anything
      beyond the whitelist, or is not finite; the message names `source` and the line.
  """
  values = parameter_map(params)
  lines = text.split("\n")
  for number, line in enumerate(lines, start=1):
    lines[number - 1] = substitute(line, values, f"{source}, line {number}: ")
  return "\n".join(lines)

"""Translate restricted Python lambdas into expressions.

``events.filter(lambda r: (r.price > 10) & (r.kind == "bid"))`` becomes the expression tree
``(col("price") > 10) & (col("kind") == "bid")``. The lambda's source is parsed with ``ast``;
what is accepted:

- ``r.name`` and ``r["name"]`` (the lambda's single parameter is the row)
- constants, and names of the enclosing scope that hold int/float/bool/str/None or expressions
- ``+ - * / %``, unary ``- ~ not``, comparisons (chained ones too), ``& |``, ``and or not``
- ``a if c else b``, ``x in (...)`` / ``x not in (...)`` with literal sequences
- ``abs(x)``, and the expression methods ``isin between cast abs is_null is_not_null``

Anything else is rejected at definition time with ``LambdaTranslationError`` naming the construct.

A lambda is never called: its expression is found in the source of the file that defined it
(parsed whole with ``ast``, from ``linecache``), at the position its code object records
(``co_firstlineno`` and ``co_positions()``), so a lambda on a continuation line, as a dict value or
beside others on one line is found exactly. A lambda whose source is not available (built with
``exec``/``eval``, typed at a plain interactive prompt) or no longer matches its code (the file
was edited since) is rejected: write it with ``col(...)``. Restricted lambdas are a convenience,
not a sandbox: the file that defines them is Python and runs as such.
"""

from __future__ import annotations

import ast
import functools
import inspect
import linecache

from .expressions import Expr, Literal, UnaryOp, as_expr, col, if_else, lit


class LambdaTranslationError(TypeError):
    """A lambda uses a construct that cannot be compiled."""


_BINOPS = {ast.Add: "__add__", ast.Sub: "__sub__", ast.Mult: "__mul__", ast.Div: "__truediv__",
           ast.Mod: "__mod__", ast.BitAnd: "__and__", ast.BitOr: "__or__"}
_CMPOPS = {ast.Eq: "__eq__", ast.NotEq: "__ne__", ast.Lt: "__lt__", ast.LtE: "__le__",
           ast.Gt: "__gt__", ast.GtE: "__ge__"}
_METHODS = {"isin", "between", "cast", "abs", "is_null", "is_not_null"}


def translate(fn, *, what: str = "lambda") -> Expr:
    """Translate ``fn`` (a one-argument lambda or function) into an expression."""
    if isinstance(fn, Expr):
        return fn
    if not callable(fn):
        raise TypeError(f"{what}: expected an expression or a lambda, got {fn!r}")
    node = _find_lambda_ast(fn, what)
    params = node.args.args
    if len(params) != 1 or node.args.vararg or node.args.kwarg or node.args.kwonlyargs:
        raise LambdaTranslationError(f"{what}: a lambda takes exactly one argument (the row)")
    scope = dict(fn.__globals__)
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                scope[name] = cell.cell_contents
            except ValueError:
                pass
    return as_expr(_Translator(params[0].arg, scope, what).visit(node.body))


def _find_lambda_ast(fn, what: str) -> ast.Lambda:
    """The syntax tree of ``fn``, found in its file's source at its code's position (a function of
    a single ``return`` gives a Lambda of its expression); a ``LambdaTranslationError`` if there is
    none to find."""
    code = getattr(fn, "__code__", None)
    if code is None:
        raise LambdaTranslationError(f"{what}: expected an expression or a lambda, got {fn!r}")
    where = f"{code.co_filename}, line {code.co_firstlineno}"
    tree = _module_tree("".join(linecache.getlines(code.co_filename, fn.__globals__)))
    if tree is None:
        kind = "the lambda" if fn.__name__ == "<lambda>" else f"function {fn.__name__!r}"
        raise LambdaTranslationError(
            f"{what}: the source of {kind} ({where}) is not available (built with exec or eval, or "
            f"typed at an interactive prompt?): lambdas are translated from their source, never called; "
            f"write the expression with col(...) instead, e.g. col('price') > 10")
    if fn.__name__ != "<lambda>":
        return _function_as_lambda(tree, fn, where, what)
    node = _lambda_at(tree, code)
    if node is None or not _compiles_alike(node, code):
        raise LambdaTranslationError(
            f"{what}: the lambda's source ({where}) does not match its code (was the file edited since "
            f"it was loaded?); write the expression with col(...) instead")
    return node


@functools.lru_cache(maxsize=16)
def _module_tree(source: str) -> ast.Module | None:
    """A file's source parsed (None: no source, or it does not parse)."""
    if not source:
        return None
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def _span(node: ast.AST) -> tuple[tuple[int, int], tuple[int, int]]:
    return (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)


def _lambda_at(tree: ast.Module, code) -> ast.Lambda | None:
    """The lambda of ``code``: of the lambdas that start on its first line, the innermost whose
    body spans every source position its instructions record (their column offsets tell apart
    lambdas that share a line; an instruction with an empty span, such as RESUME, has none)."""
    positions = [((line, col), (end_line, end_col)) for line, end_line, col, end_col in code.co_positions()
                 if None not in (line, end_line, col, end_col) and (line, col) != (end_line, end_col)]
    found = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda) and node.lineno == code.co_firstlineno:
            first, last = _span(node.body)
            if all(first <= a and b <= last for a, b in positions):
                if found is None or _span(node.body)[0] > _span(found.body)[0]:
                    found = node
    return found


def _compiles_alike(node: ast.Lambda, code) -> bool:
    """Whether ``node`` compiles to the same parameters, names and constants as ``code`` (a name of
    an enclosing function is a free variable in ``code``, a global when ``node`` compiles alone)."""
    try:
        compiled = compile(ast.Expression(body=node), "<lambda>", "eval")
    except (SyntaxError, ValueError):
        return False
    inner = next((c for c in compiled.co_consts if inspect.iscode(c)), None)

    def signature(c):
        return (c.co_varnames[:c.co_argcount], set(c.co_names) | set(c.co_freevars),
                [k for k in c.co_consts if not inspect.iscode(k)])
    return inner is not None and signature(inner) == signature(code)


def _function_as_lambda(tree: ast.Module, fn, where: str, what: str) -> ast.Lambda:
    """A named function defined at ``fn``'s first line, as a Lambda of its single return."""
    for n in ast.walk(tree):
        if isinstance(n, ast.FunctionDef) and n.name == fn.__name__ \
                and min([n.lineno] + [d.lineno for d in n.decorator_list]) == fn.__code__.co_firstlineno:
            body = [s for s in n.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
                return ast.Lambda(args=n.args, body=body[0].value)
            raise LambdaTranslationError(f"function {fn.__name__!r} must consist of a single return statement")
    raise LambdaTranslationError(f"{what}: the source of function {fn.__name__!r} ({where}) is not where its "
                                 f"code says (was the file edited since it was loaded?)")


class _Translator(ast.NodeVisitor):
    def __init__(self, row: str, scope: dict, what: str):
        self.row, self.scope, self.what = row, scope, what

    def fail(self, node, construct: str):
        raise LambdaTranslationError(
            f"{self.what}: {construct} cannot be translated to a grizzly-py expression "
            f"(at `{ast.unparse(node)}`)")

    def generic_visit(self, node):
        self.fail(node, f"{type(node).__name__} ({_NAMES.get(type(node), 'unsupported syntax')})")

    def visit_Constant(self, node):
        if node.value is None or isinstance(node.value, (bool, int, float, str)):
            return lit(node.value)
        self.fail(node, f"constant of type {type(node.value).__name__}")

    def visit_Name(self, node):
        if node.id == self.row:
            self.fail(node, "the row itself (use r.column)")
        if node.id not in self.scope:
            self.fail(node, f"unknown name {node.id!r}")
        value = self.scope[node.id]
        if isinstance(value, Expr):
            return value
        if value is None or isinstance(value, (bool, int, float, str)):
            return lit(value)
        self.fail(node, f"name {node.id!r} bound to a {type(value).__name__}")

    def visit_Attribute(self, node):
        if isinstance(node.value, ast.Name) and node.value.id == self.row:
            return col(node.attr)
        self.fail(node, "attribute access on something other than the row")

    def visit_Subscript(self, node):
        if isinstance(node.value, ast.Name) and node.value.id == self.row \
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            return col(node.slice.value)
        self.fail(node, "subscript other than r['column']")

    def visit_BinOp(self, node):
        op = _BINOPS.get(type(node.op))
        if op is None:
            self.fail(node, f"operator {type(node.op).__name__}")
        left, right = as_expr(self.visit(node.left)), as_expr(self.visit(node.right))
        return getattr(left, op)(right)

    def visit_UnaryOp(self, node):
        operand = as_expr(self.visit(node.operand))
        if isinstance(node.op, (ast.Invert, ast.Not)):
            return ~operand
        if isinstance(node.op, ast.USub):
            return UnaryOp("neg", operand)
        if isinstance(node.op, ast.UAdd):
            return operand
        self.fail(node, f"unary operator {type(node.op).__name__}")

    def visit_BoolOp(self, node):
        values = [as_expr(self.visit(v)) for v in node.values]
        out = values[0]
        for v in values[1:]:
            out = (out & v) if isinstance(node.op, ast.And) else (out | v)
        return out

    def visit_Compare(self, node):
        parts = []
        left = node.left
        for op, right in zip(node.ops, node.comparators):
            l_expr = as_expr(self.visit(left))
            if isinstance(op, (ast.In, ast.NotIn)):
                if not isinstance(right, (ast.List, ast.Tuple, ast.Set)):
                    self.fail(node, "'in' with something other than a literal list/tuple/set")
                values = [self._literal_value(elt) for elt in right.elts]
                e = l_expr.isin(values)
                parts.append(~e if isinstance(op, ast.NotIn) else e)
            else:
                name = _CMPOPS.get(type(op))
                if name is None:
                    self.fail(node, f"comparison {type(op).__name__} ('is' compares identity; use is_null())")
                parts.append(getattr(l_expr, name)(as_expr(self.visit(right))))
            left = right
        out = parts[0]
        for p in parts[1:]:
            out = out & p
        return out

    def _literal_value(self, node):
        v = self.visit(node)
        if not isinstance(v, Literal):
            self.fail(node, "a non-literal value in an 'in' / isin list")
        return v.value

    def visit_IfExp(self, node):
        return if_else(self.visit(node.test), self.visit(node.body), self.visit(node.orelse))

    def visit_Call(self, node):
        if node.keywords:
            self.fail(node, "keyword arguments in a call")
        if isinstance(node.func, ast.Name) and node.func.id == "abs" and len(node.args) == 1:
            return as_expr(self.visit(node.args[0])).abs()
        if isinstance(node.func, ast.Attribute) and node.func.attr in _METHODS:
            target = as_expr(self.visit(node.func.value))
            if node.func.attr == "isin":
                if len(node.args) != 1 or not isinstance(node.args[0], (ast.List, ast.Tuple, ast.Set)):
                    self.fail(node, "isin() without a literal list")
                return target.isin([self._literal_value(e) for e in node.args[0].elts])
            if node.func.attr == "cast":
                if len(node.args) != 1 or not isinstance(node.args[0], ast.Constant):
                    self.fail(node, "cast() without a literal type name")
                return target.cast(node.args[0].value)
            args = [self.visit(a) for a in node.args]
            return getattr(target, node.func.attr)(*args)
        if isinstance(node.func, ast.Name) and node.func.id in self.scope:
            fn = self.scope[node.func.id]
            if fn is if_else and len(node.args) == 3:
                return if_else(*[self.visit(a) for a in node.args])
        func = ast.unparse(node.func)
        self.fail(node, f"function call {func}()")


_NAMES = {
    ast.Lambda: "nested lambda", ast.ListComp: "list comprehension", ast.GeneratorExp: "generator",
    ast.DictComp: "dict comprehension", ast.SetComp: "set comprehension", ast.Dict: "dict literal",
    ast.List: "list literal", ast.Tuple: "tuple literal", ast.NamedExpr: "walrus operator",
    ast.JoinedStr: "f-string", ast.Await: "await", ast.Starred: "starred expression", ast.Slice: "slice",
}

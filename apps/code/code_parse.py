"""What the Code app takes from a plain request, offline: the code to run or show, or a
clear calculation turned into a small ``print(...)`` program.

Pure functions, no I/O, no model::

    parse_instruction("can you execute print(3**4) for me")  -> ("run", "print(3**4)")
    parse_instruction("run 1+2")                              -> ("run", "print(1+2)")
    parse_instruction("用 Python 算一下 123 乘以 456")         -> ("run", "print(123 * 456)")
    parse_instruction("use python to compute the sum of 1 to 100")
                                                -> ("run", "print(sum(range(1, 101)))")
"""

from __future__ import annotations

import ast
import re

from aios_sdk import find_quoted, strip_filler
from aios_sdk.slots import cn_number

_APP_WORDS = re.compile(
    r"^\s*(?:请|帮我)?\s*(?:(?:打开|启动|open|launch|start|go\s+to|switch\s+to|in|using|在)\s*)?"
    r"(?:(?:the|my|your)\s+)?"
    r"(?:代码|python\s*runner|code)(?:\s*(?:app|应用|运行器|editor|编辑器|window|窗口|里面|里|中))*"
    r"(?![a-z0-9_(.])[\s,，:：]*",
    re.IGNORECASE,
)
_RUN_VERB = (
    r"运行|执行|跑一下|跑一跑|跑|计算一下|计算|算一下|算出|算|"
    r"\b(?:run|exec(?:ute)?|eval(?:uate)?|compute|calculate|python3?)\b"
)
_WRITE_VERB = r"编写|写一个|写一段|写个|写|生成|\b(?:write|generate|create|make|draft|code\s+up)\b"
_CODE_NOUN = (
    r"(?:\s*(?:this|the|following|that|my|some|below|here|it|for\s+me|snippet|script|program|"
    r"code|python3?|py|这段|这个|下面的?|以下的?|一段|一个|一下|一遍|一次|段|个|代码|程序|脚本|"
    r"片段|python3?)"
    r"(?![a-z0-9_(.]))*"
)
_VERB_AT = re.compile(
    rf"(?P<verb>{_RUN_VERB}|{_WRITE_VERB})(?P<nouns>{_CODE_NOUN})\s*[:：]?\s*", re.IGNORECASE
)
_RUN_WORD = re.compile(_RUN_VERB, re.IGNORECASE)
_SAYS_RUN = re.compile(r"运行|执行|跑|\b(?:run|exec(?:ute)?)\b", re.IGNORECASE)
"""After "write", only these mean run too ("写一个程序计算…" describes the program)."""
_FENCE = re.compile(r"^```(?:python|py)?\s*\n?([\s\S]*?)\n?```$", re.IGNORECASE)
_FENCE_IN = re.compile(r"```(?:python3?|py)?\s*\n?([\s\S]*?)\n?```", re.IGNORECASE)
_CODE_START = re.compile(r"[:：]\s*|\n")
_PRINTED_CALLS = frozenset(
    "abs all any bin bool chr divmod float hex int len list max min oct ord pow range repr "
    "reversed round set sorted str sum tuple type dict".split()
)
"""Calls whose value a REPL would show: ``run sum(range(10))`` prints 45."""
_PRINTED_MODULES = frozenset({"math", "statistics", "cmath", "fractions", "decimal"})


def strip_fence(code: str) -> str:
    m = _FENCE.match(code.strip())
    return m.group(1) if m else code


def looks_like_python(code: str) -> bool:
    """Parses as Python and is more than bare words (Chinese words are identifiers too)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    if not tree.body:
        return False
    only = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(only, ast.Expr):
        return True
    # names joined by operators are words: "weather in Paris", "you and me"
    return not all(
        isinstance(n, ast.Name | ast.expr_context | ast.operator | ast.cmpop | ast.boolop)
        or isinstance(n, ast.Compare | ast.BoolOp | ast.BinOp | ast.UnaryOp | ast.unaryop)
        for n in ast.walk(only.value)
    )


def _unquote(code: str) -> str:
    """The code inside a quoted string given as the whole snippet (``run "print(1)"``)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return code
    only = tree.body[0] if len(tree.body) == 1 else None
    if (
        isinstance(only, ast.Expr)
        and isinstance(only.value, ast.Constant)
        and isinstance(only.value.value, str)
        and looks_like_python(only.value.value)
    ):
        return only.value.value
    return code


def _code_in(text: str) -> str | None:
    """The Python in ``text``: all of it, a fenced block, what follows a ':' or a line break,
    or what is in quotes."""
    fenced = _FENCE_IN.search(text)
    if fenced and looks_like_python(fenced.group(1)):
        return fenced.group(1)
    for candidate in (strip_fence(text.strip()), strip_filler(text)):
        if candidate and looks_like_python(candidate):
            return _unquote(candidate)
    for m in _CODE_START.finditer(text):
        tail = text[m.end() :].strip()
        if tail and looks_like_python(tail):
            return _unquote(tail)
    quoted = find_quoted(text)
    if quoted and looks_like_python(quoted):
        return quoted
    return None


def _shows_value(node: ast.expr) -> bool:
    """A REPL would print this expression's value (not a call like ``print`` or ``f()``)."""
    if not isinstance(node, ast.Call):
        return not isinstance(node, ast.Await | ast.Yield | ast.YieldFrom)
    func = node.func
    if isinstance(func, ast.Name):
        return func.id in _PRINTED_CALLS
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id in _PRINTED_MODULES
    )


def print_last_expression(code: str) -> str:
    """``code`` with its last statement wrapped in ``print(...)`` when it is a bare
    expression, as a REPL shows it: "1+2" → "print(1+2)"; "print(1)" stays."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return code
    last = tree.body[-1] if tree.body else None
    if not isinstance(last, ast.Expr) or not _shows_value(last.value):
        return code
    if last.end_lineno is None or last.end_col_offset is None:
        return code
    lines = code.splitlines(keepends=True)

    def offset(line: int, col: int) -> int:  # ast columns count UTF-8 bytes
        return sum(len(x.encode()) for x in lines[: line - 1]) + col

    raw = code.encode()
    start = offset(last.lineno, last.col_offset)
    end = offset(last.end_lineno, last.end_col_offset)
    return (raw[:start] + b"print(" + raw[start:end] + b")" + raw[end:]).decode()


# ------------------------------------------------------------ calculations in words

_CALC_NOISE = re.compile(
    r"(?:\b(?:with|in|using|use|via|by)\s+(?:python3?|code|the\s+code\s+app)(?:\s+to)?\b"
    r"|(?:用|使用|拿|通过)\s*(?:python3?|代码|程序|code)(?:来|去)?"
    r"|\b(?:what(?:'s|\s+is|\s+are)|how\s+much\s+is|tell\s+me|give\s+me|show\s+me|find|get|"
    r"work\s+out|figure\s+out|the\s+(?:value|result|answer)\s+of|the\s+value|the\s+result|"
    r"equals?|is|me)\b"
    r"|等于多少|等于几|是多少|是几|得多少|等于|的结果|的值|结果|多少|帮我|给我|请|一下|下)",
    re.IGNORECASE,
)
_CALC_VERB = re.compile(
    rf"^(?:{_RUN_VERB}|\b(?:work\s+out|figure\s+out|evaluate)\b)\s*",
    re.IGNORECASE,
)
_CALC_VERB_END = re.compile(r"\s*(?:算一下|计算一下|计算|算|运行|跑一下)$")
_SUM_RANGE = re.compile(
    r"(?:\b(?:the\s+)?sum\s+(?:of\s+)?(?:(?:all\s+)?(?:the\s+)?(?:numbers|integers)\s+)?"
    r"(?:from\s+)?(?P<a1>-?\d+)\s*(?:to|through|till|until|-|\.\.)\s*(?P<b1>-?\d+)"
    r"|\badd\s+(?:up\s+)?(?:(?:all\s+)?(?:the\s+)?(?:numbers|integers)\s+)?(?:from\s+)?"
    r"(?P<a2>-?\d+)\s*(?:to|through)\s*(?P<b2>-?\d+)"
    r"|(?:从\s*)?(?P<a3>-?\d+)\s*(?:一直)?加到\s*(?P<b3>-?\d+)(?:\s*(?:的和|之和|的总和|和))?"
    r"|(?:从\s*)?(?P<a4>-?\d+)\s*(?:到|至)\s*(?P<b4>-?\d+)\s*(?:的|之)?(?:总和|和|累加)"
    r"|(?P<a5>-?\d+)\s*\+\s*(?:\d+\s*\+\s*)?(?:\.\.\.|…|⋯)+\s*\+\s*(?P<b5>-?\d+))",
    re.IGNORECASE,
)
_FACTORIAL = re.compile(
    r"\b(?:the\s+)?factorial\s+of\s+(?P<n1>\d+)|(?P<n2>\d+)\s*的阶乘|(?P<n3>\d+)\s*!(?!=)",
    re.IGNORECASE,
)
_CN_RUN = re.compile(r"[零〇一二两三四五六七八九十百千万]+")
_CN_IDIOM = re.compile(r"一(?:下|些|起|点|直|样|般|定|切|共|旦|边|会)|万一|十分")
_OPERATORS: list[tuple[str, str]] = [
    (r"的\s*(-?\d+(?:\.\d+)?)\s*次(?:方|幂)", r" ** \1"),
    (r"的\s*平方", " ** 2"),
    (r"的\s*立方", " ** 3"),
    (r"\bto\s+the\s+power\s+of\b|\braised\s+to(?:\s+the\s+power\s+of)?\b|\^", " ** "),
    (r"\bsquared\b", " ** 2"),
    (r"\bcubed\b", " ** 3"),
    (r"乘以|乘上|乘|×|\btimes\b|\bmultiplied\s+by\b|(?<=\d)\s*x\s*(?=\d)", " * "),
    (r"除以|÷|\bdivided\s+by\b|\bover\b", " / "),
    (r"加上|加|\bplus\b|\band\b", " + "),
    (r"减去|减|\bminus\b", " - "),
    (r"取余|取模|模|\bmod(?:ulo)?\b", " % "),
    (r"（", "("),
    (r"）", ")"),
]
_ARITH = re.compile(r"[\d\s.+\-*/%()]+")
_ARITH_NODES = (
    ast.Expression,
    ast.BinOp,
    ast.UnaryOp,
    ast.Constant,
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.FloorDiv,
    ast.Mod,
    ast.Pow,
    ast.USub,
    ast.UAdd,
)


def _digits(text: str) -> str:
    """Chinese numerals as digits ("二的十次方" → "2的10次方"), idioms like 一下 kept."""
    masked = _CN_IDIOM.sub(lambda m: "\0" * len(m.group(0)), text)
    out, last = [], 0
    for m in _CN_RUN.finditer(masked):
        value = cn_number(m.group(0))
        if value is not None:
            out += [text[last : m.start()], str(value)]
            last = m.end()
    return "".join(out) + text[last:]


def _is_arithmetic(expr: str) -> bool:
    try:
        tree = ast.parse(expr, mode="eval")
    except (SyntaxError, ValueError):
        return False
    nodes = list(ast.walk(tree))
    return (
        all(isinstance(n, _ARITH_NODES) for n in nodes)
        and all(isinstance(n.value, int | float) for n in nodes if isinstance(n, ast.Constant))
        and any(isinstance(n, ast.BinOp) for n in nodes)
    )


def _bare(text: str) -> str:
    """The request without filler, verbs and the words around a calculation."""
    rest = strip_filler(text)
    rest = _CALC_VERB.sub("", rest, count=1)
    rest = _CALC_NOISE.sub(" ", rest)
    rest = _CALC_VERB.sub("", strip_filler(rest), count=1)
    rest = _CALC_VERB_END.sub("", rest.strip())
    return strip_filler(re.sub(r"\s+", " ", rest)).rstrip("=＝ ").strip()


def calculation_program(text: str | None) -> str | None:
    """A small ``print(...)`` program for a clear calculation in words, else ``None``:
    "calculate 12 * 12 with python" → ``print(12 * 12)``, "1 加到 10 的和" →
    ``print(sum(range(1, 11)))``, "2 的 10 次方" → ``print(2 ** 10)``. Anything left over
    that is not part of the calculation ("my taxes") means it is not clear: ``None``."""
    rest = _bare(_digits(text or ""))
    if not rest:
        return None
    m = _SUM_RANGE.fullmatch(rest)
    if m:
        a, b = (int(g) for g in m.groups() if g is not None)
        return f"print(sum(range({a}, {b + 1})))"
    m = _FACTORIAL.fullmatch(rest)
    if m:
        n = next(g for g in m.groups() if g is not None)
        return f"import math\nprint(math.factorial({n}))"
    expr = rest
    for pattern, repl in _OPERATORS:
        expr = re.sub(pattern, repl, expr, flags=re.IGNORECASE)
    expr = re.sub(r"\s+", " ", expr).strip()
    if not _ARITH.fullmatch(expr) or not _is_arithmetic(expr):
        return None
    return f"print({expr})"


# ------------------------------------------------------------ the request


def parse_instruction(text: str | None) -> tuple[str, str]:
    """``(intent, code)``: ``home``; ``run`` or ``show`` with Python code; ``words`` (run
    what a model writes for them) or ``write`` (show it) with a request in words.

    "run" / "运行" / "执行" means run, "write" / "写" without it means show: "运行 Python
    代码 print(1+2)" runs ``print(1+2)``; "写一段代码 print(1)" opens it in the editor. A bare
    expression given to run prints its value ("run 1+2"), and a clear calculation in words
    becomes a ``print(...)`` program ("算一下 2 的 10 次方")."""
    rest = _APP_WORDS.sub("", (text or "").strip(), count=1).strip()
    if not strip_filler(rest):
        return "home", ""
    verb = next((m for m in _VERB_AT.finditer(rest) if not strip_filler(rest[: m.start()])), None)
    if verb is None:
        code = _code_in(rest)
        if code is not None:
            return "run", print_last_expression(code)
        calc = calculation_program(rest)
        if calc is not None:
            return "run", calc
        words = strip_filler(rest)
        return ("words" if _RUN_WORD.search(words) else "write", words) if words else ("home", "")
    runs = bool(_RUN_WORD.fullmatch(verb.group("verb")))
    after = rest[verb.end() :]
    right_after = rest[verb.end("verb") :]
    code = _code_in(after) or _code_in(right_after)
    if code is not None:
        return ("run", print_last_expression(code)) if runs else ("show", code)
    words = strip_filler(after)
    if not words:
        return "home", ""
    runs = runs or bool(_SAYS_RUN.search(words))
    calc = calculation_program(rest)
    if calc is not None:
        return ("run" if runs else "show"), calc
    return ("words" if runs else "write"), strip_filler(rest)

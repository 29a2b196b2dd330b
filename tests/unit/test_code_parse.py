"""What the Code app takes from a plain request, offline (issue 22): more ways to say run,
quoted code, a bare expression printed as a REPL shows it, and a clear calculation in
words turned into a small ``print(...)`` program. The integration tests run them."""

from __future__ import annotations

import pytest

from tests.unit.test_bundled_apps_parse import load

code_parse = load("code", "code_parse.py")


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("execute print(3**4)", ("run", "print(3**4)")),
        ("can you execute print(3**4) for me", ("run", "print(3**4)")),
        ("in the code app run print('done')", ("run", "print('done')")),
        ("帮我运行一下 print('你好世界')", ("run", "print('你好世界')")),
        ("跑一下 print(7)", ("run", "print(7)")),
        ("在代码应用里执行 print(8)", ("run", "print(8)")),
        ("please run the code \"print(len('abcd'))\"", ("run", "print(len('abcd'))")),
        ("run “print(1)” please", ("run", "print(1)")),
        ("运行「print(9)」", ("run", "print(9)")),
        ('run print("1+2")', ("run", 'print("1+2")')),  # the quotes are the code's own
    ],
)
def test_ways_to_say_run(text: str, parsed: tuple[str, str]) -> None:
    assert code_parse.parse_instruction(text) == parsed


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("run 1+2", ("run", "print(1+2)")),
        ("运行 2**8", ("run", "print(2**8)")),
        ("run sum(range(10))", ("run", "print(sum(range(10)))")),
        ("run x = 3\nx * 2", ("run", "x = 3\nprint(x * 2)")),
        ("run a = 1; a + 1", ("run", "a = 1; print(a + 1)")),
        ("run '你好' * 2", ("run", "print('你好' * 2)")),
        ("run print(1)", ("run", "print(1)")),  # already prints
        ("run foo()", ("run", "foo()")),  # a call that may return None: as written
    ],
)
def test_a_bare_expression_prints_its_value(text: str, parsed: tuple[str, str]) -> None:
    assert code_parse.parse_instruction(text) == parsed


@pytest.mark.parametrize(
    ("text", "program"),
    [
        ("calculate 12 * 12 with python", "print(12 * 12)"),
        ("use python to compute the sum of 1 to 100", "print(sum(range(1, 101)))"),
        ("what is 7 times 6", "print(7 * 6)"),
        ("compute 2 to the power of 16 in python", "print(2 ** 16)"),
        ("calculate 100 mod 7", "print(100 % 7)"),
        ("add up the numbers from 1 to 10", "print(sum(range(1, 11)))"),
        ("factorial of 10 in python", "import math\nprint(math.factorial(10))"),
        ("用 Python 算一下 123 乘以 456", "print(123 * 456)"),
        ("用代码算 1 加到 10 的和", "print(sum(range(1, 11)))"),
        ("算一下 2 的 10 次方", "print(2 ** 10)"),
        ("算一下二的十次方", "print(2 ** 10)"),
        ("运行 算一下1到100的和", "print(sum(range(1, 101)))"),
        ("计算 17 除以 4 等于多少", "print(17 / 4)"),
        ("请帮我算一下 (3+4)*5", "print((3+4)*5)"),
        ("1+2+...+100 用python算", "print(sum(range(1, 101)))"),
        ("10的阶乘", "import math\nprint(math.factorial(10))"),
    ],
)
def test_a_clear_calculation_becomes_a_print_program(text: str, program: str) -> None:
    assert code_parse.parse_instruction(text) == ("run", program)


@pytest.mark.parametrize(
    "text",
    [
        "calculate my taxes",
        "运行 帮我分析一下股票",
        "compute the weather in Paris",
        "算一下明天几点日落",
        "run the numbers 3 and",
    ],
)
def test_words_that_are_not_a_clear_calculation_are_left_to_a_model(text: str) -> None:
    assert code_parse.calculation_program(text) is None
    assert code_parse.parse_instruction(text)[0] == "words"


@pytest.mark.parametrize(
    "text", ["open the code editor", "打开代码编辑器", "打开代码", "code app", "open code please"]
)
def test_opening_the_editor(text: str) -> None:
    assert code_parse.parse_instruction(text) == ("home", "")


def test_write_without_run_still_only_shows() -> None:
    assert code_parse.parse_instruction("写一段代码 1+1") == ("show", "1+1")
    assert code_parse.parse_instruction("写一个程序计算1到100的和")[0] == "write"


def test_print_last_expression_keeps_what_is_not_a_bare_expression() -> None:
    wrap = code_parse.print_last_expression
    assert wrap("for i in range(3):\n    i") == "for i in range(3):\n    i"
    assert wrap("import math\nmath.sqrt(16)") == "import math\nprint(math.sqrt(16))"
    assert wrap("'é' + 'ü'") == "print('é' + 'ü')"  # columns count bytes, not characters
    assert wrap("print(") == "print("  # not Python: the run shows the SyntaxError

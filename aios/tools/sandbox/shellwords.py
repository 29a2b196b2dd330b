"""Splitting a command line into words as a POSIX shell would, with no expansion."""

from __future__ import annotations

EXPANSIONS = ("`", "$(", "${")
"""Refused anywhere, even quoted: they only mean something to a shell."""
OPERATOR_CHARS = frozenset(";&|<>()\n\r")
"""Unquoted, these make shell syntax (lists, redirections, subshells)."""


def split_words(cmd: str) -> list[tuple[str, bool]]:
    """Split like a POSIX shell splits words, without any expansion.

    Returns ``(text, is_operator)`` pairs; an operator is a run of unquoted
    :data:`OPERATOR_CHARS`. Quoted text is always a plain word, so
    ``python3 -c "print(1 > 0); print(2)"`` is one program and two
    arguments: with no shell, a quoted ``;`` or ``>`` is just a character.
    """
    out: list[tuple[str, bool]] = []
    word: list[str] = []
    has_word = False
    i, n = 0, len(cmd)

    def flush() -> None:
        nonlocal has_word
        if has_word:
            out.append(("".join(word), False))
            word.clear()
            has_word = False

    while i < n:
        c = cmd[i]
        if c in OPERATOR_CHARS:
            flush()
            j = i
            while j < n and cmd[j] in OPERATOR_CHARS:
                j += 1
            out.append((cmd[i:j], True))
            i = j
        elif c in " \t":
            flush()
            i += 1
        elif c == "'":
            end = cmd.find("'", i + 1)
            if end < 0:
                raise ValueError("no closing single quote")
            word.append(cmd[i + 1 : end])
            has_word = True
            i = end + 1
        elif c == '"':
            i += 1
            while i < n and cmd[i] != '"':
                if cmd[i] == "\\" and i + 1 < n and cmd[i + 1] in '"\\$`\n':
                    i += 1
                word.append(cmd[i])
                i += 1
            if i >= n:
                raise ValueError("no closing double quote")
            has_word = True
            i += 1
        elif c == "\\":
            if i + 1 >= n:
                raise ValueError("backslash at the end")
            word.append(cmd[i + 1])
            has_word = True
            i += 2
        else:
            word.append(c)
            has_word = True
            i += 1
    flush()
    return out

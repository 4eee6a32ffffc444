"""Terminal escaping of golden/model text: ANSI/OSC, bidi and zero-width shown, not obeyed."""

from __future__ import annotations

from rag_eval.util.escape import terminal


def test_ansi_and_osc_sequences_are_shown_not_obeyed() -> None:
    assert terminal("red \x1b[31mtext\x1b[0m") == "red \\x1b[31mtext\\x1b[0m"
    assert terminal("\x1b]0;owned\x07title") == "\\x1b]0;owned\\x07title"
    assert terminal("line\rfake") == "line\\x0dfake"


def test_bidi_and_zero_width_are_escaped_chinese_and_newlines_kept() -> None:
    assert terminal("abc\u202edef") == "abc\\u202edef"
    assert terminal("a\u200bb") == "a\\u200bb"
    assert terminal("二次函数\n顶点式") == "二次函数\n顶点式"
    assert terminal("a\nb", keep_newlines=False) == "a\\x0ab"

"""``python -m rag_app chat``: a real process fed through stdin, one student message per line."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

from rag_app.dialogue.repl import run_chat
from rag_app.types import DialogueTurn, Source
from tests.rag_app.test_dialogue_policy import DEMO_CORPUS

REPO = Path(__file__).resolve().parents[2]
FAKE = ["--set", "embedder=fake", "--set", "sufficiency_similarity_weight=0", "--set", "sufficiency_min_score_zh=0.5"]


def _chat(tmp_path: Path, stdin: str, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [
        sys.executable,
        "-m",
        "rag_app",
        *FAKE,
        "--set",
        f"cache_dir={tmp_path / 'cache'}",
        "--set",
        f"corpus_path={DEMO_CORPUS}",
        "chat",
        *args,
    ]
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, cwd=REPO, timeout=300, check=False)


def test_chat_holds_a_conversation_over_stdin(tmp_path: Path) -> None:
    done = _chat(tmp_path, "例13 我不会，给点提示\n选择性必修第二册，数列那一章的\n/quit\n这行不会被读到\n", "--json")
    assert done.returncode == 0, done.stderr
    first, second = (json.loads(line) for line in done.stdout.splitlines())
    assert first["action"] == "clarify" and first["asking"] == ["book"]
    assert second["action"] == "answer" and second["hint_level"] == "reminder" and second["sources"]


def test_chat_prints_the_turn_with_its_sources(tmp_path: Path) -> None:
    done = _chat(
        tmp_path,
        "这道利润的题我不会，先给点提示\n",
        "--book",
        "必修第一册",
        "--problem",
        "例23 某商品进价 40 元，售价定为多少时日利润最大？",
    )
    assert done.returncode == 0, done.stderr
    assert (
        "tutor [answer/reminder]: 【知识提醒】" in done.stdout
        and "  [1] 必修第一册 - 3.5 二次函数的最值" in done.stdout
    )


def test_end_of_input_ends_the_conversation() -> None:
    class Echo:
        def dialogue(self, turns: object, context: object = None) -> DialogueTurn:
            assert isinstance(turns, list) and turns[-1]["role"] == "user"
            return DialogueTurn(
                "clarify", f"【需要确认】第{len(turns)}条", "concept", sources=(Source(1, "c", "d", "书", "节", 3, 4),)
            )

    out = io.StringIO()
    assert run_chat(Echo(), {}, stdin=io.StringIO("一\n二"), stdout=out) == 0
    assert out.getvalue().splitlines() == [
        "tutor [clarify]: 【需要确认】第1条",
        "  [1] 书 - 节, p3-4",
        "tutor [clarify]: 【需要确认】第3条",
        "  [1] 书 - 节, p3-4",
    ]

"""User files as UTF-8 (issue 26.12, 26.15): a byte-order mark is accepted, a byte that
is not UTF-8 is named by file, line and column, in every reader of a file the user
writes (golden and dialogue sets and thresholds.toml have their own tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_eval.adapters.errors import AdapterConfigError
from rag_eval.adapters.spec import load_spec
from rag_eval.core.errors import ConfigError
from rag_eval.judge.config import load_prices
from rag_eval.util.utf8 import BOM, NotUtf8Error, decode, read_text


def test_a_leading_byte_order_mark_is_dropped() -> None:
    assert decode(BOM + "集合 = 1\n".encode(), "f.toml") == "集合 = 1\n"


def test_a_bad_byte_is_named_by_line_and_character_column() -> None:
    data = 'a = 1\n名 = "'.encode() + b'\xff"\n'
    with pytest.raises(NotUtf8Error) as info:
        decode(data, "f.toml")
    assert str(info.value) == "f.toml:2: byte 0xff at column 6 is not UTF-8; save the file as UTF-8"


def test_lines_count_from_first_line_and_a_bom_can_be_refused() -> None:
    with pytest.raises(NotUtf8Error, match=r"^g\.jsonl:7: byte 0xc3 at column 2 "):
        decode(b"x\xc3(", "g.jsonl", first_line=7)
    assert decode(BOM + b"{}", "g.jsonl", bom=False) == "\ufeff{}"  # a BOM inside a file is content


def test_read_text_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "t.toml"
    path.write_bytes(BOM + b"k = 1\n")
    assert read_text(path) == "k = 1\n"


def test_the_pipeline_config_accepts_a_bom_and_names_a_bad_byte(tmp_path: Path) -> None:
    config = tmp_path / "pipeline.toml"
    config.write_bytes(BOM + b'pipeline = "rag_app"\n')
    assert load_spec(None, config, {}).kind == "rag_app"
    config.write_bytes(b'pipeline = "rag_app"\n# caf\xe9\n')
    with pytest.raises(AdapterConfigError) as info:
        load_spec(None, config, {})
    assert (
        str(info.value)
        == f"--rag-pipeline-config {config}:2: byte 0xe9 at column 6 is not UTF-8; save the file as UTF-8"
    )


def test_the_price_file_names_a_bad_byte(tmp_path: Path) -> None:
    prices = tmp_path / "prices.toml"
    prices.write_bytes(b'[prices."m"]\nprompt = 1.0 # \xff\ncompletion = 2.0\n')
    with pytest.raises(ConfigError, match=r"prices\.toml:2: byte 0xff at column 16 is not UTF-8"):
        load_prices(prices)

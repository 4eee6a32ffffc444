"""Stable partitions of a golden set for sharded runs (``--rag-shard i/n``).

An item's shard depends on its id alone (a hash), never on file order, so adding,
removing or reordering other items does not move it, and every CI runner computes the
same partition without talking to the others.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based, as typed: --rag-shard 1/3 .. 3/3
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"2/3"`` → Shard(2, 3); anything else raises ValueError naming the fix."""
        left, sep, right = text.partition("/")
        try:
            index, count = int(left), int(right)
        except ValueError:
            index = count = 0
        if not sep or count < 1 or not 1 <= index <= count:
            raise ValueError(f"--rag-shard expects I/N with 1 <= I <= N (e.g. --rag-shard 1/3), got {text!r}")
        return cls(index, count)

    def owns(self, item_id: str) -> bool:
        return shard_of(item_id, self.count) == self.index

    def to_dict(self) -> dict[str, int]:
        return {"index": self.index, "count": self.count}

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def shard_of(item_id: str, count: int) -> int:
    """The 1-based shard that owns ``item_id`` among ``count`` shards."""
    digest = hashlib.sha256(item_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1

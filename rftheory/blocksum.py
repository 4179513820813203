"""Σ_b T_b over the blocks of V in an association fixed by the block index alone.

Every reduction over p (Gram matrices, Φθ, vector–Jacobian products) in the package adds
per-block terms through :class:`BlockSum`, so its result is bit-identical whatever chunk size
streams V (:mod:`rftheory.features`).

Memory: one group of :data:`SUM_GROUP` pending terms plus the total.
"""

from __future__ import annotations

from typing import Any

from .backend import namespace_of

__all__ = ["SUM_GROUP", "BlockSum"]

#: Blocks whose terms are summed together before joining a reduction over p (see BlockSum).
SUM_GROUP = 16


class BlockSum:
    """Σ_b T_b over the blocks of V, in an association fixed by the block index alone.

    The terms of :data:`SUM_GROUP` consecutive blocks (blocks 16j, …, 16j + 15) are summed by one
    reduction over a contiguous stack, and the group sums are added to the total in order. Neither
    step depends on how the stream is chunked, so every reduction over p is bit-identical for any
    chunk size — while it costs two array operations (kernel launches, on a GPU) per group of
    blocks rather than one per block.

    Parameters
    ----------
    total : array
        The initial value (zeros, or at least no -0.0 entries, see ``_flush``); the terms must
        broadcast to its shape.
    """

    def __init__(self, total: Any):
        self.total = total
        self._pending: list[Any] = []

    def add(self, first_block: int, parts: Any) -> None:
        """Add ``parts[i]``, the term of block ``first_block + i``; blocks must come in order."""
        i, nb = 0, parts.shape[0]
        if nb == 1 and (first_block + 1) % SUM_GROUP:
            # One block that does not end its group (every term when p ≤ BLOCK_ROWS): pending,
            # as the loop below would keep it (parts[0:1] is parts).
            self._pending.append(parts)
            return
        while i < nb:
            room = SUM_GROUP - (first_block + i) % SUM_GROUP  # blocks left in this group
            take = min(room, nb - i)
            self._pending.append(parts[i:i + take, ...])
            if take == room:
                self._flush()
            i += take

    def result(self) -> Any:
        """The sum (the last group may be incomplete)."""
        if self._pending:
            self._flush()
        return self.total

    def _flush(self) -> None:
        pending = self._pending
        self._pending = []
        if len(pending) == 1 and pending[0].shape[0] == 1:  # one block: no namespace needed
            self.total = self.total + pending[0][0, ...]
            return
        xp = namespace_of(pending[0])
        stack = pending[0] if len(pending) == 1 else xp.concat(pending, axis=0)
        # A group of one block (every reduction when p ≤ BLOCK_ROWS) adds that block's term
        # itself: the sum over one term is that term, up to the sign of a zero (-0.0 sums to
        # +0.0), which adding it to the total erases (the total starts at +0.0 and a sum in
        # round-to-nearest is -0.0 only when both terms are) — so bit-identical, one call less.
        self.total = self.total + (stack[0, ...] if stack.shape[0] == 1 else xp.sum(stack, axis=0))

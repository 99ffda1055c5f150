"""Diff two agent runs: what really changed, not which ids and timestamps did.

A small package: pure parts over one shell that reads the inputs.

- `items`: an `Item` is one comparable thing, an `ItemStream` the items of one channel unit on one
  side. At the `events` level they come from the one fold of universal events into items
  (`wirecap.analysis.fold`: a message with its streamed deltas joined, a tool call with its
  arguments and its result, reasoning, errors, usage, session start/end), normalized (volatile
  fields hidden: `wirecap.events.VOLATILE_PATHS`, the dialect's, `--ignore`), with a coarse *signature* (kind,
  role, tool name, ...) and a *body* (the normalized content as canonical JSON).
- `wire`: the `wire` level, every message of a channel normalized with its dialect's volatile paths.
- `pairing`: streams are paired by kind/dialect/order (identical ones first, so reordered
  independent channels are not a difference).
- `alignment`: inside each pair the bodies are aligned (Myers/patience, `wirecap.analysis.align`),
  and what is left unmatched is aligned again on signatures, so that an item whose content changed
  is reported as *changed*, with field-level differences by path (`wirecap.analysis.valuediff`).
- `result`: the edit scripts, counts, summary and `--json` of a diff.
- `stats_level`: the numbers of `wirecap stats` side by side, and timing regressions.
- `render`: the unified view, the summary table, the stats table (text).
- `shell`: `diff_captures` and the loading (files, a forked child for side B, the body store's
  temporary file, the paused garbage collector): the only module that touches the outside world.

What other modules import is re-exported here (`__all__`). `SHOWN_MAX` is read from `result` where
it is used, so a test that lowers it patches `wirecap.analysis.diff.result.SHOWN_MAX`.
"""

from wirecap.analysis.diff.alignment import diff_items, item_field_diffs
from wirecap.analysis.diff.items import (
    Item,
    ItemBuilder,
    ItemStream,
    describe_content,
    pack_streams,
    unit_key,
    unpack_streams,
)
from wirecap.analysis.diff.pairing import pair_streams
from wirecap.analysis.diff.result import SHOWN_MAX, Change, DiffResult, PairDiff, TimingFlag
from wirecap.analysis.diff.shell import (
    LEVELS,
    NothingToCompare,
    diff_captures,
    input_kind,
    parse_threshold,
    paused_gc,
    read_event_file,
)
from wirecap.analysis.diff.stats_level import STAT_METRICS, stats_rows, stats_totals
from wirecap.analysis.diff.wire import WireBuilder

__all__ = [
    "LEVELS",
    "NothingToCompare",
    "SHOWN_MAX",
    "STAT_METRICS",
    "Change",
    "DiffResult",
    "Item",
    "ItemBuilder",
    "ItemStream",
    "PairDiff",
    "TimingFlag",
    "WireBuilder",
    "describe_content",
    "diff_captures",
    "diff_items",
    "input_kind",
    "item_field_diffs",
    "pack_streams",
    "pair_streams",
    "parse_threshold",
    "paused_gc",
    "read_event_file",
    "stats_rows",
    "stats_totals",
    "unit_key",
    "unpack_streams",
]

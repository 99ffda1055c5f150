"""The old home of the diff's text rendering, kept for its importers: it is `wirecap.analysis.diff.render`."""

from wirecap.analysis.diff.render import (
    describe_change,
    render_stats,
    render_summary,
    render_unified,
    value_repr,
)

__all__ = ["describe_change", "render_stats", "render_summary", "render_unified", "value_repr"]

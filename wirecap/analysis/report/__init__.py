"""Reports on captures: a model built from records, events, findings and notes (`model`, `build`),
and renderers that only lay it out (`term`, `markdown`, `html`, `json`)."""

from wirecap.analysis.report.build import build_capture_report, build_report
from wirecap.analysis.report.model import CaptureReport, ChannelActivity, ConvEntry, Report

__all__ = ["CaptureReport", "ChannelActivity", "ConvEntry", "Report", "build_capture_report", "build_report"]

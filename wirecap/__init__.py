"""wirecap: record, replay, decode, diff, annotate and report on coding-agent traffic."""

__version__ = "0.1.0"

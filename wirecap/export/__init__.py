"""Exports of captures to other tools' formats (HAR, ...); sans-I/O converters over records."""

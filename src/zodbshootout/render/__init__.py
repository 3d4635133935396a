"""Renderers: pure functions from a RunResult to text lines."""

from zodbshootout.render.labels import phase_label

__all__ = ["phase_label"]

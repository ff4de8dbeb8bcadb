"""The one error of the generator: a recipe it cannot build or check."""

from __future__ import annotations

__all__ = ["RecipeError"]


class RecipeError(Exception):
    """A recipe is malformed or asks for something the generator cannot build."""

"""PyTorch adapter for h5ml files (``pip install "h5ml[torch]"``).

The only package of the project that imports torch.
"""

from __future__ import annotations

__all__: list[str] = []

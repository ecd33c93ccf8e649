"""The experiments' own tests (`python -m pytest research/tests` from the repository root),
apart from the product's suite: they import `research`, which nothing in `tests/` may."""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

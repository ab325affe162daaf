"""The figure scripts are plain modules in figures/: make them importable from figures/tests/."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

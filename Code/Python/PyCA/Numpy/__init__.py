"""NumPy references (legacy ``PyCA.Numpy``)."""
from .FiniteDiff import *  # noqa: F401,F403

"""Plotting of PyCA images and deformations with matplotlib (legacy
``PyCA.Display``).

Importing it does not switch matplotlib to interactive mode (the legacy
called ``plt.ion()``); without a display (no ``DISPLAY``/``WAYLAND_DISPLAY``
on Linux) and with no backend chosen it selects the non-interactive Agg
backend, so it works in batch jobs. Every function returns its figure and
axes; call ``plt.show()`` (or ``fig.savefig``) yourself.
"""
from .PyCADisplay import *  # noqa: F401,F403
from .PyCADisplay import __all__  # noqa: F401

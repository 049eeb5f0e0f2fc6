"""NumPy arrays and PyCA images as vtkImageData (legacy ``PyCA.VTK``).

Importing works without VTK; the functions import it when called and raise
ImportError ("pip install vtk") when it is missing.
"""
from .PyCAVTK import *  # noqa: F401,F403
from .PyCAVTK import __all__  # noqa: F401

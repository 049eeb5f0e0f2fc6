"""PyCA: Python for Computational Anatomy.

``import PyCA.Core as ca`` gives the C++ library (images, fields, memory
managers, operators); ``PyCA.Common`` holds the pure-Python helpers.
"""
__all__ = ['Core', 'Common']
__version__ = '0.1.0'

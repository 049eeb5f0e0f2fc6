"""Small helpers shared by the modules of PyCA.Common and by PyCA.Display:
axis names, frame file names, scratch fields and random sources.

A private module: its names are public so that PyCACommon, PyCATestData and
PyCADisplay can share them, but they are not part of PyCA.Common's API (not
star-exported). Like ``_arrays`` it sits below PyCAIO and PyCACommon: it
imports only NumPy, PyCA.Core and ``_arrays``.
"""
import numbers
import os

import numpy as np

import PyCA.Core as core

from ._arrays import IsField3D

#: Axis names and numbers: 0, 1, 2 and 'x', 'y', 'z' (also upper case).
DIMMAP = {0: 0, 1: 1, 2: 2, 'x': 0, 'y': 1, 'z': 2, 'X': 0, 'Y': 1, 'Z': 2}


def axis_index(dim):
    """The axis number of an axis name or number.

    Args:
        dim (int or str): 0, 1, 2, 'x', 'y' or 'z' (also upper case).

    Returns:
        int: 0, 1 or 2.

    Raises:
        ValueError: anything else.
    """
    try:
        return DIMMAP[dim]
    except (KeyError, TypeError):
        pass
    if isinstance(dim, numbers.Integral) and int(dim) in (0, 1, 2):
        return int(dim)
    raise ValueError("dim must be 0, 1, 2, 'x', 'y' or 'z', got %r" % (dim,))


def frame_name(pattern, i):
    """The file name of frame ``i`` of a frame pattern.

    Args:
        pattern (str): a ``str.format`` pattern (``'f{:03d}.png'``), a
            ``%`` pattern (``'f%03d.png'``), or a plain name to which a
            four-digit number is added before the extension (``.png`` when
            it has none).
        i (int): the frame number.

    Returns:
        str: the file name.
    """
    if '{' in pattern:
        return pattern.format(i)
    if '%' in pattern:
        return pattern % i
    root, ext = os.path.splitext(pattern)
    return "%s%04d%s" % (root, i, ext or ".png")


def check_scratch(s, g, m, name):
    """A scratch Field3D of grid ``g`` and memory type ``m``: ``s`` itself
    when it fits, a new field when ``s`` is None.

    Args:
        s (Field3D or None): the caller's scratch field.
        g (GridInfo): the grid it must have.
        m (MemoryType): the memory type it must have.
        name (str): the argument's name, for the messages.

    Returns:
        Field3D: ``s`` or a new field.

    Raises:
        TypeError: ``s`` is not a Field3D.
        ValueError: ``s`` has another grid or memory type.
    """
    if s is None:
        return core.Field3D(g, m)
    if not IsField3D(s):
        raise TypeError("%s must be a Field3D or None, got %s" % (name, type(s).__name__))
    if s.grid() != g or s.memType() != m:
        raise ValueError("%s must have the grid and memory type of the velocity fields" % name)
    return s


def random_source(seed):
    """The random source of a ``seed`` argument.

    Args:
        seed (None, int or numpy.random.Generator): None: NumPy's global
            random state (legacy behaviour, ``np.random.seed`` applies); an
            int or Generator: a reproducible generator.

    Returns:
        numpy.random.Generator or the ``numpy.random`` module.
    """
    if seed is None:
        return np.random
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


def normal_noise(rng, sigma, shape):
    """Gaussian samples of mean 0 from a :func:`random_source`.

    Args:
        rng (numpy.random.Generator or module): the source.
        sigma (float): the standard deviation.
        shape (tuple of int): the shape of the result.

    Returns:
        numpy.ndarray: float64 samples.
    """
    if rng is np.random:
        return np.random.normal(0.0, sigma, shape)
    return rng.normal(0.0, sigma, shape)

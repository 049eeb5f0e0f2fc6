"""Version information (legacy PyCAVersion).

The values come from ``_build_info.py``, written at build time from the
project version and ``git describe`` / ``rev-parse`` when the build had git
and a checkout (cmake/PyCAVersionInfo.cmake); otherwise from the package
version alone. Importing never fails and never runs git or touches the
network.
"""
import re

__all__ = ['PyCAVersion', 'PyCAVersionMajor', 'PyCAVersionMinor', 'PyCACommit', 'PyCABranch']

try:
    from . import _build_info as _info
except Exception:  # not built by CMake (a source checkout on PYTHONPATH, ...)
    _info = None


def _get(name, default=''):
    v = getattr(_info, name, default) if _info is not None else default
    return v if isinstance(v, str) else default


def _package_version():
    v = _get('VERSION')
    if v:
        return v
    try:
        import PyCA
        return str(getattr(PyCA, '__version__', '0.0.0'))
    except Exception:
        return '0.0.0'


def PyCAVersion():
    """The version string: 'v<major>.<minor>.<patch>' followed by the git
    description of the build (tag distance, '-g<hash>', '-dirty') when it
    was known, e.g. 'v0.1.0-g90ca886'."""
    v = 'v' + _package_version()
    d = _get('DESCRIBE')
    if not d:
        return v
    if re.match(r'^v?\d+\.\d+', d):  # a release tag: git describe says it all
        return d if d.startswith('v') else 'v' + d
    return v + '-g' + d if re.match(r'^[0-9a-f]{4,40}(-dirty)?$', d) else v + '-' + d


def _parts():
    m = re.match(r'^v?(\d+)\.(\d+)', PyCAVersion())
    if m is None:
        m = re.match(r'^(\d+)\.(\d+)', _package_version())
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def PyCAVersionMajor():
    """The major version number (int)."""
    return _parts()[0]


def PyCAVersionMinor():
    """The minor version number (int)."""
    return _parts()[1]


def PyCACommit():
    """The git commit the module was built from, or 'unknown'."""
    return _get('COMMIT') or 'unknown'


def PyCABranch():
    """The git branch the module was built from, or 'unknown'."""
    return _get('BRANCH') or 'unknown'

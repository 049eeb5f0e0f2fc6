"""pyca-apply refuses every file that PyCA.Common.LoadImage refuses (issue 28):
both read through the one shared check of PyCA.Common.atomic
(check_readable before the header is trusted, check_complete before the
voxels are read).

Each bad file (truncated, mislabelled or corrupt NIfTI and MetaImage files)
goes through LoadImage, which must raise, and through ``pyca-apply``
(``PyCA.Apps.apply.main`` and, for a few, ``python -m PyCA.Apps.apply``),
which must exit with status 2 and one ``pyca-apply: error: ...`` line
carrying the reason LoadImage gives. The result folder is a small identity
registration written with the public transform writer.
"""
import gzip
import os
import re
import struct
import subprocess
import sys

import numpy as np
import pytest

import PyCA.Core as ca

sitk = pytest.importorskip("SimpleITK")

import PyCA.Common as common  # noqa: E402
import PyCA.Common.atomic as atomic  # noqa: E402
import PyCA.Apps.apply as app  # noqa: E402

GRID = ca.GridInfo(ca.Vec3Di(8, 7, 6), ca.Vec3Df(1.5, 1.0, 2.0), ca.Vec3Df(-3.0, 2.0, 1.0))
#: the part of a LoadImage message after "cannot read '<file>': " (or the
#: whole message after the function name)
_REASON = re.compile(r"^\w+: (?:cannot read '[^']*': )?(.*)$", re.S)


def _image():
    im = ca.Image3D(GRID, ca.MEM_HOST)
    im.asnp()[...] = np.arange(8 * 7 * 6, dtype=np.float32).reshape(8, 7, 6) / 100.0
    return im


def _rb(path):
    with open(path, 'rb') as f:
        return f.read()


def _wb(path, data):
    with open(path, 'wb') as f:
        f.write(data)


@pytest.fixture(scope='module')
def result(tmp_path_factory):
    """A registration result folder (identity H-field, transform.json)."""
    d = tmp_path_factory.mktemp('file_checks_result')
    h = ca.Field3D(GRID, ca.MEM_HOST)
    ca.SetToIdentity(h)
    common.SaveITKField(h, str(d / 'hfield.nii.gz'))
    app.write_transform_files(lambda n: str(d / n), h, _image())
    return str(d)


# --------------------------------------------------------------------------- the bad files

def _saved(d, name):
    path = str(d / name)
    common.SaveImage(_image(), path)
    return path


def _truncated_nii(d):
    f = _saved(d, 'trunc.nii')
    _wb(f, _rb(f)[:len(_rb(f)) // 2])
    return f


def _nii_cut_in_header(d):
    f = _saved(d, 'hdrcut.nii')
    _wb(f, _rb(f)[:200])
    return f


def _truncated_nii_gz(d):
    f = _saved(d, 'trunc.nii.gz')
    _wb(f, _rb(f)[:-10])
    return f


def _nii_gz_not_gzip(d):
    f = _saved(d, 'plain.nii')
    out = str(d / 'notgz.nii.gz')
    _wb(out, _rb(f))
    return out


def _metaimage_named_nii(d):
    f = _saved(d, 'm.mha')
    out = str(d / 'mha_as.nii')
    _wb(out, _rb(f))
    return out


def _png_named_nii(d):
    im = ca.Image3D(ca.GridInfo(ca.Vec3Di(8, 7, 1)), ca.MEM_HOST)
    im.asnp()[...] = 1.0
    im.asnp()[0, 0, 0] = 0.0
    common.SavePNGImage(im, str(d / 'a.png'))
    out = str(d / 'png_as.nii')
    _wb(out, _rb(str(d / 'a.png')))
    return out


def _mha_edit(name, old, new):
    def make(d):
        f = _saved(d, name)
        b = _rb(f)
        assert old in b
        _wb(f, b.replace(old, new, 1))
        return f
    return make


def _mhd_pair_of_two_saves(d):
    f = _saved(d, 'pair.mhd')
    raw = str(d / 'pair.raw')
    _wb(raw, _rb(raw)[:-8])      # the data file of another (smaller) save
    return f


def _mhd_without_data(d):
    f = _saved(d, 'nodata.mhd')
    os.unlink(str(d / 'nodata.raw'))
    return f


def _nii_header_edit(name, offset, fmt, value, gz=False):
    def make(d):
        f = _saved(d, 'tmp_' + name.replace('.gz', ''))
        b = bytearray(_rb(f))
        b[offset:offset + struct.calcsize(fmt)] = struct.pack(fmt, value)
        if fmt == '<f' and offset == 300:
            b[254:256] = struct.pack('<h', 1)        # sform_code 1: the sform counts
        out = str(d / name)
        with (gzip.open(out, 'wb') if gz else open(out, 'wb')) as fh:
            fh.write(bytes(b))
        return out
    return make


def _garbage_nii(d):
    out = str(d / 'garbage.nii')
    _wb(out, np.random.default_rng(1).bytes(2000))
    return out


def _empty_nii(d):
    out = str(d / 'empty.nii')
    _wb(out, b'')
    return out


def _truncated_nrrd(d):
    f = _saved(d, 't.nrrd')
    _wb(f, _rb(f)[:-100])
    return f


CASES = {
    # truncated
    'truncated .nii': (_truncated_nii, 'truncated NIfTI file'),
    '.nii cut inside its header': (_nii_cut_in_header, None),
    'truncated .nii.gz': (_truncated_nii_gz, 'truncated gzip stream'),
    'truncated .nrrd': (_truncated_nrrd, None),
    '.nii dims beyond the data': (_nii_header_edit('big.nii', 42, '<h', 3000), 'truncated NIfTI file'),
    '.mha DimSize beyond the data': (_mha_edit('ds.mha', b'DimSize = 8 7 6', b'DimSize = 8 7 60'), None),
    # mislabelled
    '.nii.gz that is not gzip': (_nii_gz_not_gzip, 'corrupt compressed NIfTI header'),
    'MetaImage named .nii': (_metaimage_named_nii, None),
    'PNG named .nii': (_png_named_nii, 'not what the extension says'),
    '.mhd with the data of another save': (_mhd_pair_of_two_saves, 'header and data of different saves'),
    '.mhd without its data file': (_mhd_without_data, None),
    # corrupt
    '.mha with a wrong ElementType': (_mha_edit('et.mha', b'MET_FLOAT', b'MET_FOOBAR'), None),
    '.mha with NDims 40': (_mha_edit('nd.mha', b'NDims = 3', b'NDims = 40'), 'NDims = 40'),
    '.mha spacing beyond float32': (_mha_edit('sp.mha', b'ElementSpacing = 1.5 1 2',
                                              b'ElementSpacing = 1.5 1e300 2'), 'not a finite float32'),
    '.nii infinite sform': (_nii_header_edit('inf.nii', 300, '<f', float('inf')), 'holds inf in its sform'),
    '.nii.gz NaN voxel size': (_nii_header_edit('nan.nii.gz', 80, '<f', float('nan'), gz=True),
                               'holds nan in its pixdim'),
    '.nii negative dim': (_nii_header_edit('negdim.nii', 42, '<h', -5), None),
    '.nii complex voxels': (_nii_header_edit('complex.nii', 70, '<h', 1792), 'complex'),
    'garbage named .nii': (_garbage_nii, 'not an image file of a known format'),
    'empty .nii': (_empty_nii, 'is empty (0 bytes)'),
}


def _load_reason(path):
    """LoadImage's exception for path (it must raise) and the reason it names."""
    with pytest.raises((OSError, ValueError)) as info:
        common.LoadImage(path)
    msg = ' '.join(str(info.value).split())
    m = _REASON.match(msg)
    return info.value, (m.group(1) if m else msg)


def _apply(result, path, out, capfd):
    rc = app.main(['--result', result, '--moving', path, '--out', out])
    err = capfd.readouterr().err
    return rc, [ln for ln in err.splitlines() if ln.startswith('pyca-apply')]


@pytest.mark.parametrize('case', sorted(CASES))
def test_load_image_and_apply_refuse_alike(case, result, tmp_path, capfd):
    make, expected = CASES[case]
    path = make(tmp_path)
    exc, reason = _load_reason(path)
    if expected is not None:
        assert expected in str(exc), str(exc)
    out = str(tmp_path / 'out.nii.gz')
    rc, lines = _apply(result, path, out, capfd)
    assert rc == 2, (case, lines)
    assert len(lines) == 1 and lines[0].startswith('pyca-apply: error: '), lines
    assert 'Traceback' not in lines[0]
    assert not os.path.exists(out)
    if expected == 'complex':       # each names it in its own words (apply keeps voxel types)
        assert 'complex' in lines[0]
    else:                           # the same check, so the same reason
        assert reason in lines[0], (reason, lines[0])
    assert os.path.basename(path) in lines[0]


@pytest.mark.parametrize('case', ['truncated .nii.gz', 'PNG named .nii',
                                  '.mhd with the data of another save'])
def test_apply_command_line_refuses(case, result, tmp_path):
    """``python -m PyCA.Apps.apply``: exit status 2, the last stderr line the error."""
    path = CASES[case][0](tmp_path)
    _, reason = _load_reason(path)
    env = dict(os.environ, OMP_NUM_THREADS='1')
    r = subprocess.run([sys.executable, '-m', 'PyCA.Apps.apply', '--result', result, '--moving', path,
                        '--out', str(tmp_path / 'o.nii.gz')], capture_output=True, text=True,
                       timeout=180, env=env)
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2, r.stderr
    assert len(lines) == 1 and lines[0].startswith('pyca-apply: error: '), r.stderr
    assert reason in lines[0]


def test_good_file_goes_through_both(result, tmp_path, capfd):
    """The fixture is sound: a good file loads and warps (identity)."""
    for name in ('ok.nii', 'ok.nii.gz', 'ok.mha', 'ok.mhd', 'ok.nrrd'):
        path = _saved(tmp_path, name)
        im = common.LoadImage(path)
        out = str(tmp_path / ('out_' + name.replace('.', '_') + '.nii.gz'))
        rc, lines = _apply(result, path, out, capfd)
        assert rc == 0, lines
        back = sitk.GetArrayFromImage(sitk.ReadImage(out)).T
        assert np.allclose(back, im.asnp(), atol=1e-5)


def test_check_readable_is_what_load_image_uses(tmp_path):
    """The shared check raises LoadImage's error with the caller's name."""
    path = _mhd_pair_of_two_saves(tmp_path)
    with pytest.raises(OSError) as a:
        common.LoadImage(path)
    with pytest.raises(OSError) as b:
        atomic.check_readable(path, 'LoadITKImage')
    assert str(a.value) == str(b.value)
    good = _saved(tmp_path, 'good.nii.gz')
    reader, hdr = atomic.check_readable(good, 'me')
    assert tuple(reader.GetSize()) == (8, 7, 6) and hdr is not None
    atomic.check_complete(good, 'me', hdr)
    with pytest.raises(OSError, match=r"^me: cannot read '.*trunc\.nii\.gz': truncated gzip stream"):
        p = _truncated_nii_gz(tmp_path)
        atomic.check_complete(p, 'me', atomic.check_readable(p, 'me')[1])


def test_verify_written_and_atomic_json(tmp_path):
    path = str(tmp_path / 'r.json')
    atomic.atomic_json(path, {'a': 1}, 'me', indent=2)
    assert _rb(path) == b'{\n  "a": 1\n}\n'
    atomic.verify_written(path, 'me')
    _wb(path, b'{"a": ')
    with pytest.raises(OSError, match=r"^me: cannot write '.*r\.json': .*the save was incomplete: "
                                      r"the written file is not readable back"):
        atomic.verify_written(path, 'me')
    with pytest.raises(ValueError):          # before any file is made
        atomic.atomic_json(str(tmp_path / 'n.json'), {'x': float('nan')}, 'me', allow_nan=False)
    assert sorted(os.listdir(str(tmp_path))) == ['r.json']

"""PyCA.Display (spec 5.3), headless: every function draws, saves a
non-blank PNG of the expected size, and returns its figure and axes;
importing never switches matplotlib to interactive mode."""
import os

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")

import PyCA.Core as ca  # noqa: E402
import PyCA.Common as common  # noqa: E402
import PyCA.Display as display  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import image as mimage  # noqa: E402
from conftest import field_from, grid, has_gpu, image_from, run_python, to_np  # noqa: E402

RNG = np.random.default_rng(3)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close('all')


def check_png(fname, fig=None, shape=None):
    """The PNG exists, has the figure's (or the given) pixel size and is not blank."""
    assert os.path.getsize(fname) > 0
    p = mimage.imread(fname)
    if fig is not None:
        w, h = fig.get_size_inches() * fig.dpi
        assert p.shape[:2] == (int(round(h)), int(round(w)))
    if shape is not None:
        assert p.shape[:2] == shape
    rgb = p[..., :3]
    assert rgb.std() > 0.01, "blank image"
    return p


def sample_image(shape=(32, 24, 8)):
    a = np.zeros(shape, np.float32)
    a[...] = common.DrawCircle(shape[:2])[:, :, None] + 0.5 * common.DrawChecker(shape[:2], 4)[:, :, None]
    return a


def folding_field(shape=(24, 20, 1)):
    """A V-field whose x displacement jumps by -3 voxels over one voxel (a fold)."""
    vx = np.zeros(shape, np.float32)
    vx[12:, :, :] = -3.0
    return field_from([vx, np.zeros(shape), np.zeros(shape)])


def test_import_is_headless_and_not_interactive():
    code = ("import os, sys\n"
            "import PyCA.Display as d\n"
            "import matplotlib, matplotlib.pyplot as plt\n"
            "print(plt.isinteractive(), matplotlib.get_backend().lower())\n")
    env_code = ("import os, subprocess, sys\n"
                "env = {k: v for k, v in os.environ.items() if k not in ('DISPLAY', 'WAYLAND_DISPLAY', 'MPLBACKEND')}\n"
                "r = subprocess.run([sys.executable, '-c', %r], env=env, capture_output=True, text=True)\n"
                "sys.stdout.write(r.stdout); sys.stderr.write(r.stderr); sys.exit(r.returncode)\n" % code)
    r = run_python(env_code)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "agg"]


def test_exports():
    for n in ("DispImage", "GridPlot", "Quiver", "JacDetPlot", "JacDetCMap", "EnergyPlot",
              "SaveSlice", "SaveThreePaneArr", "DefSeriesIter", "ExtractSliceFunc", "GenDefFrames",
              "SampleCMap"):
        assert callable(getattr(display, n)), n


def test_dispimage(tmp_path):
    a = sample_image()
    im = image_from(a)
    fname = str(tmp_path / "disp.png")
    fig, ax = display.DispImage(im, title="circle", fname=fname)
    assert isinstance(fig, matplotlib.figure.Figure) and ax in fig.axes
    check_png(fname, fig)
    shown = ax.images[0].get_array()
    assert np.array_equal(shown, a[:, :, 4])  # middle z slice, rows = x
    fig, ax = display.DispImage(im, sliceIdx=1, dim='x', t=True, rng=(0, 2), colorbar=True)
    assert np.array_equal(ax.images[0].get_array(), a[1].T)
    assert ax.images[0].get_clim() == (0.0, 2.0)
    fig, ax = display.DispImage(a[:, :, 0] + 0.1, log=True, newFig=False)
    assert isinstance(ax.images[-1].norm, matplotlib.colors.LogNorm)
    fig2, ax2 = plt.subplots()
    f3, a3 = display.DispImage(im, ax=ax2)
    assert f3 is fig2 and a3 is ax2



def test_dispimage_2d_image_ignores_slice_idx():
    """The legacy slices only along an axis of size above 1: a 2-D image
    (X, Y, 1) shows its one plane whatever sliceIdx."""
    a = np.arange(30, dtype=np.float32).reshape(6, 5, 1)
    im = image_from(a)
    for k in (0, 3, 17):
        fig, ax = display.DispImage(im, sliceIdx=k)
        assert np.array_equal(ax.images[-1].get_array(), a[:, :, 0])
        plt.close(fig)
    fig, ax = display.DispImage(a, sliceIdx=9, dim='z', t=True)  # a NumPy (X, Y, 1) array too
    assert np.array_equal(ax.images[-1].get_array(), a[:, :, 0].T)
    plt.close(fig)
    # a real 3-D image still slices (and checks the index)
    b = np.zeros((4, 4, 3), dtype=np.float32)
    b[:, :, 2] = 1
    fig, ax = display.DispImage(image_from(b), sliceIdx=2)
    assert np.array_equal(ax.images[-1].get_array(), b[:, :, 2])
    plt.close(fig)


def test_dispimage_errors():
    with pytest.raises(TypeError):
        display.DispImage(ca.Field3D(grid(4, 4, 1), ca.MEM_HOST))
    with pytest.raises(ValueError):
        display.DispImage(np.zeros(5))
    with pytest.raises(ValueError):
        display.DispImage(np.zeros((4, 4)) - 1.0, log=True)
    with pytest.raises(ValueError):
        display.DispImage(np.zeros((4, 4)), rng=(0, 1, 2))
    with pytest.raises(TypeError):
        display.DispImage("image")


def test_gridplot_and_quiver(tmp_path):
    v = common.WavyDef((24, 20), nWaves=2, waveAmp=1.5, deformation=False)
    fig, ax = display.DispImage(sample_image((24, 20, 1)))
    fname = str(tmp_path / "grid.png")
    fig, ax = display.GridPlot(v, every=4, ax=ax, fname=fname)
    check_png(fname, fig)
    # 24/4 + 20/4 deformed lines plus as many base lines
    assert len(ax.lines) == 2 * (6 + 5)
    line = ax.lines[-(6 + 5)]  # the first deformed row line: x = 0 over all y
    y = np.arange(20)
    assert np.allclose(line.get_xdata(), y)
    assert np.allclose(line.get_ydata(), 1.5 * np.sin(2 * np.pi * 2 * y / 20), atol=1e-5)
    assert ax.yaxis_inverted()
    assert ax.get_xlim() == (-0.5, 19.5)  # the image's limits are kept
    h = common.WavyDef((24, 20), nWaves=2, waveAmp=1.5)
    _, ax2 = display.GridPlot(h, every=4, isVF=False, plotBase=False, newFig=True)
    assert len(ax2.lines) == 11 and np.allclose(ax2.lines[0].get_ydata(), line.get_ydata(), atol=1e-5)
    fname = str(tmp_path / "quiver.png")
    fig, ax = display.Quiver(v, every=2, newFig=True, fname=fname)
    check_png(fname, fig)
    q = ax.collections[0]
    assert q.N == 12 * 10
    assert np.allclose(q.V, 1.5 * np.sin(2 * np.pi * 2 * np.arange(0, 20, 2) / 20)[None, :].repeat(12, 0).ravel(),
                       atol=1e-5)  # vertical (row) component = x displacement
    with pytest.raises(ValueError):
        display.GridPlot(v, every=0)
    with pytest.raises(TypeError):
        display.Quiver(ca.Image3D(grid(4, 4, 1), ca.MEM_HOST))


def test_jacdet_plot_flags_folds(tmp_path):
    f = folding_field()
    fname = str(tmp_path / "jd.png")
    fig, ax = display.JacDetPlot(f, newFig=True, fname=fname)
    p = check_png(fname, fig)
    data = ax.images[0].get_array()
    h = f.copy()
    ca.VtoH_I(h)
    jd = ca.Image3D(f.grid(), ca.MEM_HOST)
    ca.JacDetH(jd, h)
    ref = to_np(jd)[:, :, 0]
    assert np.array_equal(np.ma.getmaskarray(data), ref <= 0) and (ref <= 0).any()
    red = (p[..., 0] > 0.9) & (p[..., 1] < 0.1) & (p[..., 2] < 0.1)
    assert red.sum() > 10  # folds drawn in the non-positive colour
    cm, norm = display.JacDetCMap(10.0)
    assert norm(1.0) == pytest.approx(0.5) and norm(10.0) == pytest.approx(1.0)
    assert tuple(cm.get_bad()) == (1.0, 0.0, 0.0, 1.0)
    with pytest.raises(ValueError):
        display.JacDetCMap(0.5)
    with pytest.raises(TypeError):
        display.JacDetPlot(np.zeros((4, 4)))


def test_energy_plot(tmp_path):
    e = [100.0, 10.0, 5.0, 4.0, 3.5, 3.2, 3.1, 3.0, 2.95, 2.9, 2.88, 2.87, 2.86, 2.85, 2.84, 2.83,
         2.82, 2.81, 2.80, 2.79]
    fname = str(tmp_path / "energy.png")
    fig, ax = display.EnergyPlot(e, fname=fname)
    check_png(fname, fig)
    lo, hi = ax.get_ylim()
    assert hi < 100.0 and hi >= 10.0 and lo < 2.79  # the first 5% (one value) is trimmed
    fig, ax = display.EnergyPlot([e, [x / 2 for x in e]], legend=["total", "half"], trim=0.2)
    assert len(ax.lines) == 2 and ax.get_legend() is not None and ax.get_ylim()[1] < 5.0
    with pytest.raises(ValueError):
        display.EnergyPlot([e], legend=["a", "b"])
    with pytest.raises(ValueError):
        display.EnergyPlot(e, trim=1.5)
    with pytest.raises(ValueError):
        display.EnergyPlot([])


def test_save_slice_and_three_pane(tmp_path):
    a = sample_image((20, 16, 12))
    fname = str(tmp_path / "slice.png")
    s = display.SaveSlice(fname, image_from(a), sliceIdx=3)
    assert np.array_equal(s, a[:, :, 3])
    check_png(fname, shape=(20, 16))
    display.SaveSlice(fname, a, dim='y', t=True)
    check_png(fname, shape=(12, 20))
    fname = str(tmp_path / "three.png")
    fig, axes = display.SaveThreePaneArr(a, fname)
    assert len(axes) == 3
    check_png(fname, fig)
    assert np.array_equal(axes[0].images[0].get_array(), a[10])
    assert np.array_equal(axes[2].images[0].get_array(), a[:, :, 6])
    with pytest.raises(ValueError):
        display.SaveThreePaneArr(a[:, :, 0], fname)


def test_sample_cmap_and_slice_func():
    c = display.SampleCMap('viridis', 5)
    cm = matplotlib.colormaps['viridis']
    assert c.shape == (5, 4) and np.allclose(c[0], cm(0.0)) and np.allclose(c[-1], cm(1.0))
    with pytest.raises(ValueError):
        display.SampleCMap('viridis', 0)
    ex = display.ExtractSliceFunc(2, 'y')
    a = RNG.random((4, 5, 6)).astype(np.float32)
    assert np.array_equal(ex(image_from(a)), a[:, 2, :])
    assert np.array_equal(ex(a), a[:, 2, :])
    f = field_from([a, 2 * a, 3 * a])
    assert np.allclose(ex(f)[..., 2], 3 * a[:, 2, :])


def test_def_series_and_frames(tmp_path):
    shape = (20, 16, 1)
    V = [common.WavyDef(shape, nWaves=1, waveAmp=0.5, deformation=False) for _ in range(3)]
    series = list(display.DefSeriesIter(V))
    assert [k for k, _ in series] == [0, 1, 2, 3]
    for k, h in series:
        assert np.allclose(to_np(h), to_np(common.ComposeDef(V, k / 3.0)), atol=1e-5)
    inv = list(display.DefSeriesIter(V, inverse=True, asVField=True))
    assert np.allclose(to_np(inv[2][1]), to_np(common.ComposeDef(V, 2 / 3.0, inverse=True, asVField=True)),
                       atol=1e-5)
    I0 = image_from(sample_image(shape))
    pattern = str(tmp_path / "frame%02d.png")
    frames = display.GenDefFrames(I0, V, pattern, gridEvery=4)
    assert len(frames) == 4 and np.array_equal(frames[0], to_np(I0)[:, :, 0])
    ref = ca.Image3D(I0.grid(), ca.MEM_HOST)
    ca.ApplyH(ref, I0, common.ComposeDef(V, 1.0, inverse=True))
    assert np.allclose(frames[3], to_np(ref)[:, :, 0], atol=1e-5)
    for k in range(4):
        check_png(pattern % k)
    with pytest.raises(ValueError):
        display.GenDefFrames(I0, [common.WavyDef((5, 5), deformation=False)])
    with pytest.raises(ValueError):
        list(display.DefSeriesIter([]))


@pytest.mark.skipif(not has_gpu, reason="needs a CUDA device")
def test_device_data_is_copied(tmp_path):
    a = sample_image((16, 12, 4))
    im = image_from(a, mem=ca.MEM_DEVICE)
    fig, ax = display.DispImage(im)
    assert np.array_equal(ax.images[0].get_array(), a[:, :, 2])
    f = folding_field()
    f.toType(ca.MEM_DEVICE)
    display.JacDetPlot(f, newFig=True)
    display.GridPlot(f, newFig=True)
    assert f.memType() == ca.MEM_DEVICE and im.memType() == ca.MEM_DEVICE


# ---------------------------------------------------------------------------
# pyplot state as the legacy left it (issue 17, item 3): the legacy drew with
# plt.imshow / plt.plot / plt.quiver, so after each call the drawn figure and
# axes are current and the drawn image is plt.gci(); nothing beyond what the
# legacy drew is added by default.

def _state(fig, ax, mappable=None):
    assert plt.gcf() is fig
    assert plt.gca() is ax
    if mappable is not None:
        assert plt.gci() is mappable


def test_pyplot_state_new_figure():
    a = sample_image((24, 20, 1))
    v = folding_field()
    h = common.WavyDef((24, 20), nWaves=2, waveAmp=1.5)
    before = plt.figure()
    fig, ax = display.DispImage(a)  # newFig=True (legacy default)
    assert fig is not before
    _state(fig, ax, ax.images[-1])
    fig, ax = display.JacDetPlot(v, newFig=True)
    _state(fig, ax, ax.images[-1])
    assert len(fig.axes) == 1, "JacDetPlot adds no colorbar by default (legacy)"
    fig, ax = display.GridPlot(h, every=4, isVF=False, newFig=True)
    _state(fig, ax)
    fig, ax = display.Quiver(v, every=4, newFig=True)
    _state(fig, ax, ax.collections[-1])  # as plt.quiver
    fig, ax = display.EnergyPlot([3.0, 2.0, 1.5, 1.2])
    _state(fig, ax)


def test_pyplot_state_current_axes_and_colorbar():
    """The legacy Example pattern: subplot, draw with newFig=False, then
    plt.colorbar() / plt.title() act on what was drawn."""
    a = sample_image((24, 20, 1))
    v = folding_field()
    fig0 = plt.figure()
    ax1 = plt.subplot(1, 3, 1)
    fig, ax = display.DispImage(a, newFig=False)
    assert (fig, ax) == (fig0, ax1)
    _state(fig0, ax1, ax1.images[-1])
    cb = plt.colorbar()
    assert cb.mappable is ax1.images[-1]
    plt.title("image")
    assert ax1.get_title() == "image"
    ax2 = plt.subplot(1, 3, 2)
    fig, ax = display.JacDetPlot(v, title="jd")
    assert (fig, ax) == (fig0, ax2) and len(fig0.axes) == 3  # 2 plots + 1 colorbar
    _state(fig0, ax2, ax2.images[-1])
    cb = plt.colorbar()
    assert cb.mappable is ax2.images[-1] and isinstance(cb.norm, matplotlib.colors.LogNorm)
    ax3 = plt.subplot(1, 3, 3)
    fig, ax = display.GridPlot(v, every=4, newFig=False)
    _state(fig0, ax3)
    plt.title("grid")
    assert ax3.get_title() == "grid" and ax2.get_title() == "jd"
    plt.draw()


def test_pyplot_state_given_axes():
    a = sample_image((16, 12, 1))
    f1, (a1, a2) = plt.subplots(1, 2)
    f2 = plt.figure()  # current figure is now f2
    fig, ax = display.DispImage(a, ax=a1)
    assert (fig, ax) == (f1, a1)
    _state(f1, a1, a1.images[-1])
    fig, ax = display.JacDetPlot(folding_field(), ax=a2, colorbar=True)
    _state(f1, a2, a2.images[-1])
    assert len(f1.axes) == 3  # the colorbar asked for; gca stays the plot axes
    # a standalone Figure (not pyplot's) is drawn into but not adopted
    from matplotlib.figure import Figure
    nums = plt.get_fignums()
    sf = Figure()
    sax = sf.add_subplot()
    fig, ax = display.DispImage(a, ax=sax)
    assert (fig, ax) == (sf, sax) and plt.get_fignums() == nums and plt.gcf() is f1
    assert sf.gca() is sax and sax._gci() is sax.images[-1]
    plt.close(f2)


def test_save_three_pane_state(tmp_path):
    fig, axes = display.SaveThreePaneArr(sample_image((12, 10, 8)), str(tmp_path / "t.png"))
    _state(fig, axes[-1], axes[-1].images[-1])


def test_jacdet_plot_colorbar_option():
    fig, ax = display.JacDetPlot(folding_field(), newFig=True)
    assert len(fig.axes) == 1 and ax.images[0].colorbar is None
    fig, ax = display.JacDetPlot(folding_field(), newFig=True, colorbar=True)
    assert len(fig.axes) == 2 and ax.images[0].colorbar is not None


_LEGACY_SCRIPTS = {
    # the legacy Examples' figure: subplots drawn with newFig=False, then
    # pyplot calls on what was drawn
    "panels": r'''
import json, sys
import numpy as np
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt
import PyCA.Core as ca
import PyCA.Common as common
import PyCA.Display as display

imSz = [64, 48]
I0 = common.ImFromNPArr(common.DrawEllipse(imSz, [32, 24], 20, 12) + 0.3 * common.DrawChecker(imSz, 8))
h = common.WavyDef(imSz, nWaves=2, waveAmp=3.0)
v = common.WavyDef(imSz, nWaves=2, waveAmp=3.0, deformation=False)
I1 = ca.Image3D(I0.grid(), I0.memType())
ca.ApplyH(I1, I0, h)

plt.figure('legacy')
plt.subplot(2, 2, 1)
display.DispImage(I0, 'I0', newFig=False)
plt.colorbar()
plt.subplot(2, 2, 2)
display.DispImage(I1, newFig=False)
plt.title('I0 o h')
plt.colorbar()
plt.subplot(2, 2, 3)
display.DispImage(I1, newFig=False)
display.GridPlot(h, every=4, isVF=False, newFig=False)
plt.title('grid')
plt.subplot(2, 2, 4)
display.JacDetPlot(v, 'Jac. Det.', newFig=False)
plt.colorbar()
plt.draw()
plt.savefig(sys.argv[1])
fig = plt.gcf()
plots = [ax for ax in fig.axes if ax.get_label() != '<colorbar>']
print(json.dumps({'axes': len(fig.axes), 'titles': [ax.get_title() for ax in plots],
                  'colorbars': [bool(ax.images) and ax.images[0].colorbar is not None for ax in plots],
                  'lines': [len(ax.lines) for ax in plots]}))
''',
    # a 3-D volume shown in its own figure (newFig=True), then an energy plot
    "volume": r'''
import json, sys
import numpy as np
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt
import PyCA.Core as ca
import PyCA.Common as common
import PyCA.Display as display

arr = np.zeros((40, 32, 9), np.float32)
arr[...] = common.DrawCircle([40, 32])[:, :, None] * np.arange(1, 10)[None, None, :]
im = common.ImFromNPArr(arr)
display.DispImage(im, sliceIdx=6, dim='z')
plt.colorbar()
plt.title('slice 6')
plt.savefig(sys.argv[1])
shown = plt.gci().get_array()
display.EnergyPlot([10.0, 5.0, 3.0, 2.5, 2.2, 2.1])
plt.xlabel('it')
plt.savefig(sys.argv[2])
xlabel = plt.gca().get_xlabel()
print(json.dumps({'max': float(shown.max()), 'title': plt.figure(1).axes[0].get_title(),
                  'fignums': plt.get_fignums(), 'xlabel': xlabel}))
''',
}


def test_legacy_example_panels(tmp_path):
    import json
    out = str(tmp_path / "panels.png")
    r = run_python(_LEGACY_SCRIPTS["panels"], out)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout.strip().splitlines()[-1])
    check_png(out)
    assert info["titles"] == ["I0", "I0 o h", "grid", "Jac. Det."]
    assert info["colorbars"] == [True, True, False, True]  # plt.colorbar() hit each image drawn
    assert info["axes"] == 4 + 3  # no extra colorbar from JacDetPlot
    # 64/4 + 48/4 deformed lines and as many base lines, in the grid panel only
    assert info["lines"] == [0, 0, 2 * (16 + 12), 0]


def test_legacy_example_volume(tmp_path):
    import json
    out1, out2 = str(tmp_path / "vol.png"), str(tmp_path / "energy.png")
    r = run_python(_LEGACY_SCRIPTS["volume"], out1, out2)
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout.strip().splitlines()[-1])
    check_png(out1)
    check_png(out2)
    assert info["max"] == 7.0  # slice 6 (values 1..9 along z) inside the circle
    assert info["title"] == "slice 6" and info["fignums"] == [1, 2] and info["xlabel"] == "it"

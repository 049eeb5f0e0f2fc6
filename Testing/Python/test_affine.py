"""Mat3Df/Mat3Dd and Aff3Df/Aff3Dd (spec 2.3), checked against NumPy.

Differences from the legacy kept here on purpose: invert() gives the true
inverse (the legacy Aff3D::invert computed cofactors from partly overwritten
entries), returns False on a singular matrix and leaves the object unchanged;
Aff3Df.copy() exists; bad input raises TypeError/ValueError/IndexError/
RuntimeError.
"""
import gc
import weakref

import numpy as np
import pytest

import PyCA.Core as ca

MATS = [ca.Mat3Df, ca.Mat3Dd]
AFFS = [ca.Aff3Df, ca.Aff3Dd]
VEC = {ca.Mat3Df: ca.Vec3Df, ca.Mat3Dd: ca.Vec3Dd, ca.Aff3Df: ca.Vec3Df, ca.Aff3Dd: ca.Vec3Dd}
MAT_OF = {ca.Aff3Df: ca.Mat3Df, ca.Aff3Dd: ca.Mat3Dd}
DTYPE = {ca.Mat3Df: np.float32, ca.Mat3Dd: np.float64, ca.Aff3Df: np.float32, ca.Aff3Dd: np.float64}
#: relative tolerance of a float32 / float64 result
RTOL = {np.float32: 2e-5, np.float64: 1e-12}


def rng(seed=0):
    return np.random.default_rng(seed)


def well_conditioned(r, dtype):
    """A random 3x3 matrix with condition number below ~10, rounded to dtype."""
    q, _ = np.linalg.qr(r.standard_normal((3, 3)))
    q2, _ = np.linalg.qr(r.standard_normal((3, 3)))
    return (q @ np.diag(r.uniform(0.5, 3.0, 3)) @ q2).astype(dtype)


def mat_from(T, a):
    return T().fromlist(np.asarray(a).tolist())


def aff_from(T, m, v):
    a = T()
    a.matrix = mat_from(MAT_OF[T], m)
    a.vector = VEC[T](*[float(x) for x in v])
    return a


def homog(m, v):
    h = np.eye(4)
    h[:3, :3] = m
    h[:3, 3] = v
    return h


def close(T, got, want, scale=1.0):
    dt = DTYPE[T]
    return np.allclose(np.asarray(got, dtype=np.float64), want, rtol=RTOL[dt], atol=RTOL[dt] * scale)


# ---------------------------------------------------------------------------
# Mat3D


@pytest.mark.parametrize("T", MATS)
def test_mat_default_is_identity_and_accessors(T):
    m = T()
    assert m.tolist() == np.eye(3).tolist()
    m.set(0, 2, 5.5)
    m.set(2, 1, -1.25)
    assert m.get(0, 2) == 5.5 and m(0, 2) == 5.5 and m(2) == 5.5
    assert m.get(2, 1) == -1.25 and m(2, 1) == -1.25 and m(7) == -1.25
    # __call__(idx) is the row-major index
    assert [m(i) for i in range(9)] == [v for row in m.tolist() for v in row]
    m.eye()
    assert m == T()


@pytest.mark.parametrize("T", MATS)
def test_mat_nine_value_constructor_is_row_major(T):
    m = T(1, 2, 3, 4, 5, 6, 7, 8, 9)
    assert m.tolist() == [[1, 2, 3], [4, 5, 6], [7, 8, 9]]


@pytest.mark.parametrize("T", MATS)
def test_mat_out_of_range_indices(T):
    m = T()
    for bad in [(3, 0), (0, 3), (-1, 0), (0, -1)]:
        with pytest.raises(IndexError):
            m.get(*bad)
        with pytest.raises(IndexError):
            m.set(*bad, 1.0)
        with pytest.raises(IndexError):
            m(*bad)
    for bad in (9, -1, 100):
        with pytest.raises(IndexError):
            m(bad)
    with pytest.raises(TypeError):
        m.get("a", 0)
    with pytest.raises(TypeError):
        m.set(0, 0, "x")
    with pytest.raises(TypeError):
        m(0.5)


@pytest.mark.parametrize("T", MATS)
def test_mat_transpose_det_product_vs_numpy(T):
    r = rng(1)
    dt = DTYPE[T]
    for _ in range(10):
        a = r.uniform(-2, 2, (3, 3)).astype(dt)
        b = r.uniform(-2, 2, (3, 3)).astype(dt)
        v = r.uniform(-2, 2, 3).astype(dt)
        ma, mb = mat_from(T, a), mat_from(T, b)
        t = ma.Transpose()
        assert t.tolist() == a.T.astype(np.float64).tolist()
        assert ma.tolist() == a.astype(np.float64).tolist()  # Transpose returns a new matrix
        assert close(T, ma.det(), np.linalg.det(a.astype(np.float64)), scale=8)
        assert close(T, (ma * mb).tolist(), a.astype(np.float64) @ b, scale=8)
        mv = ma * VEC[T](*v.tolist())
        assert isinstance(mv, VEC[T])
        assert close(T, mv.tolist(), a.astype(np.float64) @ v, scale=8)
        c = ma.copy()
        c *= mb
        assert close(T, c.tolist(), a.astype(np.float64) @ b, scale=8)


def test_mat_det_hand_computed():
    assert ca.Mat3Dd(2, 0, 0, 0, 3, 0, 0, 0, 4).det() == 24.0
    assert ca.Mat3Df(1, 2, 3, 4, 5, 6, 7, 8, 10).det() == pytest.approx(-3.0)
    assert ca.Mat3Dd(0, 1, 0, 1, 0, 0, 0, 0, 1).det() == -1.0


@pytest.mark.parametrize("T", MATS)
def test_mat_invert_vs_numpy(T):
    r = rng(2)
    dt = DTYPE[T]
    for _ in range(20):
        a = well_conditioned(r, dt)
        m = mat_from(T, a)
        assert m.invert() is True
        want = np.linalg.inv(a.astype(np.float64))
        assert close(T, m.tolist(), want, scale=4), (m.tolist(), want)


def test_mat_invert_hand_computed():
    m = ca.Mat3Dd(1, 2, 3, 0, 1, 4, 5, 6, 0)
    assert m.invert()
    assert m.tolist() == [[-24, 18, 5], [20, -15, -4], [-5, 4, 1]]


@pytest.mark.parametrize("T", MATS)
@pytest.mark.parametrize("rows", [
    [[1, 2, 3], [4, 5, 6], [7, 8, 9]],        # rank 2
    [[1, 2, 3], [2, 4, 6], [0, 0, 1]],        # two parallel rows
    [[0, 0, 0], [0, 1, 0], [0, 0, 1]],        # a zero row
    [[0, 0, 0], [0, 0, 0], [0, 0, 0]],
    [[float("nan"), 0, 0], [0, 1, 0], [0, 0, 1]],
])
def test_mat_invert_singular_returns_false_and_keeps_matrix(T, rows):
    m = T().fromlist(rows)
    before = m.tolist()
    assert m.invert() is False
    after = m.tolist()
    assert np.array_equal(np.array(after), np.array(before), equal_nan=True)


@pytest.mark.parametrize("T", MATS)
def test_mat_copy_clone_independent(T):
    m = T(1, 2, 3, 4, 5, 6, 7, 8, 10)
    c = m.copy()
    assert c == m and c is not m and isinstance(c, T)
    c.set(0, 0, 100)
    assert m.get(0, 0) == 1
    d = T()
    d.clone(m)
    assert d == m
    d.set(1, 1, -7)
    assert m.get(1, 1) == 5
    e = T(m)  # copy constructor
    e.set(2, 2, 0)
    assert m.get(2, 2) == 10


@pytest.mark.parametrize("T", MATS)
def test_mat_tolist_fromlist_round_trip(T):
    r = rng(3)
    a = r.uniform(-5, 5, (3, 3)).astype(DTYPE[T]).astype(np.float64)
    m = T()
    assert m.fromlist(a.tolist()) is m
    assert m.tolist() == a.tolist()
    assert T().fromlist(m.tolist()) == m
    assert T().fromlist(a) == m  # NumPy arrays work as nested sequences
    assert T().fromlist(tuple(tuple(row) for row in a.tolist())) == m


@pytest.mark.parametrize("T", MATS)
@pytest.mark.parametrize("bad,exc", [
    (None, TypeError), (3.0, TypeError), ("abc", TypeError),
    ([[1, 2, 3], [4, 5, 6]], ValueError), ([[1, 2, 3]] * 4, ValueError),
    ([[1, 2], [3, 4], [5, 6]], ValueError), ([1, 2, 3], TypeError),
    ([[1, 2, "x"], [4, 5, 6], [7, 8, 9]], TypeError), ([[1, 2, None]] * 3, TypeError),
])
def test_mat_fromlist_bad_input(T, bad, exc):
    m = T(1, 2, 3, 4, 5, 6, 7, 8, 9)
    with pytest.raises(exc):
        m.fromlist(bad)
    assert m.tolist() == [[1, 2, 3], [4, 5, 6], [7, 8, 9]]


@pytest.mark.parametrize("T", MATS)
def test_mat_str_eq_and_wrong_operands(T):
    assert str(T(1, 2, 3, 4, 5, 6, 7, 8, 9)) == "Mat3D((1,2,3),(4,5,6),(7,8,9))"
    assert str(T(0.5, 0, 0, 0, 1, 0, 0, 0, -2)) == "Mat3D((0.5,0,0),(0,1,0),(0,0,-2))"
    assert T() == T() and not (T() != T())
    assert T() != T(1, 0, 0, 0, 1, 0, 0, 0, 2)
    assert not (T() == None)  # noqa: E711
    assert T() != "identity"
    with pytest.raises(TypeError):
        T() * 2
    with pytest.raises(TypeError):
        T() * None
    with pytest.raises(TypeError):
        T() * [1, 2, 3]
    m = T()
    with pytest.raises(TypeError):
        m *= 2
    with pytest.raises(TypeError):
        hash(m)


def test_mat_types_do_not_mix():
    with pytest.raises(TypeError):
        ca.Mat3Df() * ca.Mat3Dd()
    with pytest.raises(TypeError):
        ca.Mat3Df() * ca.Vec3Dd(1, 2, 3)
    with pytest.raises(TypeError):
        ca.Mat3Df().clone(ca.Mat3Dd())


# ---------------------------------------------------------------------------
# Aff3D


@pytest.mark.parametrize("T", AFFS)
def test_aff_constructors(T):
    M, V = MAT_OF[T], VEC[T]
    a = T()
    assert a.tolist() == np.eye(4).tolist()
    assert a.matrix == M() and a.vector == V(0, 0, 0)
    m = M(1, 2, 3, 4, 5, 6, 7, 8, 10)
    v = V(1, -2, 3)
    b = T(m, v)
    assert b.matrix == m and b.vector == v
    c = T(m)
    assert c.matrix == m and c.vector == V(0, 0, 0)
    d = T(v)
    assert d.matrix == M() and d.vector == v
    e = T(b)
    assert e == b
    b.eye()
    assert b == T() and e != b
    for bad in [(None,), ("x",), (m, None), (v, m), (1, 2)]:
        with pytest.raises(TypeError):
            T(*bad)


@pytest.mark.parametrize("T", AFFS)
def test_aff_members_are_live_and_keep_owner(T):
    a = T()
    a.matrix.set(0, 0, 2.0)
    a.vector.x = 5.0
    assert a.tolist()[0] == [2.0, 0.0, 0.0, 5.0]
    a.matrix = MAT_OF[T](1, 2, 3, 4, 5, 6, 7, 8, 9)
    a.vector = VEC[T](7, 8, 9)
    assert a.tolist()[:3] == [[1, 2, 3, 7], [4, 5, 6, 8], [7, 8, 9, 9]]
    with pytest.raises(TypeError):
        a.matrix = None
    with pytest.raises(TypeError):
        a.vector = [1, 2, 3]
    # a live member keeps its transform alive
    b = T(VEC[T](1, 2, 3))
    w = weakref.ref(b)
    vec = b.vector
    mat = b.matrix
    del b
    gc.collect()
    assert w() is not None
    _ = [T(VEC[T](9, 9, 9)) for _ in range(20)]
    assert vec.tolist() == [1, 2, 3] and mat == MAT_OF[T]()
    vec.y = -4
    assert w().vector.y == -4
    del vec, mat
    gc.collect()
    assert w() is None


@pytest.mark.parametrize("T", AFFS)
def test_aff_invert_vs_numpy(T):
    r = rng(4)
    dt = DTYPE[T]
    for _ in range(20):
        m = well_conditioned(r, dt)
        v = r.uniform(-10, 10, 3).astype(dt)
        a = aff_from(T, m, v)
        orig = a.copy()
        assert a.invert() is True
        want = np.linalg.inv(homog(m.astype(np.float64), v.astype(np.float64)))
        assert close(T, a.tolist(), want, scale=40), (a.tolist(), want)
        # composing with the original gives the identity
        assert close(T, (a * orig).tolist(), np.eye(4), scale=40)
        assert close(T, (orig * a).tolist(), np.eye(4), scale=40)


@pytest.mark.parametrize("T", AFFS)
def test_aff_invert_singular_returns_false_and_keeps_transform(T):
    a = aff_from(T, [[1, 2, 3], [4, 5, 6], [7, 8, 9]], [1, 2, 3])
    before = a.tolist()
    assert a.invert() is False
    assert a.tolist() == before
    z = T(MAT_OF[T]().fromlist([[0, 0, 0]] * 3), VEC[T](1, 1, 1))
    assert z.invert() is False


@pytest.mark.parametrize("T", AFFS)
def test_aff_composition_order_and_transform_vector(T):
    r = rng(5)
    dt = DTYPE[T]
    for _ in range(10):
        m1, m2 = r.uniform(-2, 2, (3, 3)).astype(dt), r.uniform(-2, 2, (3, 3)).astype(dt)
        v1, v2 = r.uniform(-3, 3, 3).astype(dt), r.uniform(-3, 3, 3).astype(dt)
        p = r.uniform(-5, 5, 3).astype(dt)
        a, b = aff_from(T, m1, v1), aff_from(T, m2, v2)
        h1, h2 = homog(m1.astype(np.float64), v1), homog(m2.astype(np.float64), v2)
        ab = a * b
        assert isinstance(ab, T)
        assert close(T, ab.tolist(), h1 @ h2, scale=20)   # (a * b)(x) = a(b(x))
        c = a.copy()
        c *= b
        assert c == ab
        want = m1.astype(np.float64) @ p + v1
        pv = VEC[T](*p.tolist())
        got = a * pv
        assert isinstance(got, VEC[T]) and close(T, got.tolist(), want, scale=20)
        out = VEC[T]()
        assert a.transformVector(pv, out) is None
        assert close(T, out.tolist(), want, scale=20)
        assert pv.tolist() == p.astype(np.float64).tolist()  # input untouched
        a.transformVector(pv)                                 # in place
        assert close(T, pv.tolist(), want, scale=20)
        # a(b(p)) == (a * b)(p)
        q = VEC[T](*p.tolist())
        b.transformVector(q)
        a.transformVector(q)
        assert close(T, q.tolist(), (ab * VEC[T](*p.tolist())).tolist(), scale=40)


@pytest.mark.parametrize("T", AFFS)
def test_aff_determinant(T):
    r = rng(6)
    m = r.uniform(-2, 2, (3, 3)).astype(DTYPE[T])
    a = aff_from(T, m, [4, 5, 6])
    assert close(T, a.determinant(), np.linalg.det(m.astype(np.float64)), scale=8)
    assert T().determinant() == 1.0


@pytest.mark.parametrize("T", AFFS)
def test_aff_copy_and_clone_are_independent(T):
    a = aff_from(T, [[1, 2, 0], [0, 1, 0], [0, 0, 3]], [1, 2, 3])
    c = a.copy()
    assert isinstance(c, T) and c == a and c is not a
    c.matrix.set(0, 0, 9)
    c.vector.z = -1
    assert a.matrix.get(0, 0) == 1 and a.vector.z == 3
    d = T()
    d.clone(a)
    assert d == a
    d.vector.x = 100
    assert a.vector.x == 1


@pytest.mark.parametrize("T", AFFS)
def test_aff_tolist_fromlist_round_trip(T):
    r = rng(7)
    m = r.uniform(-3, 3, (3, 3)).astype(DTYPE[T]).astype(np.float64)
    v = r.uniform(-3, 3, 3).astype(DTYPE[T]).astype(np.float64)
    h = homog(m, v)
    a = T()
    assert a.fromlist(h.tolist()) is a
    assert a.tolist() == h.tolist()
    assert a.matrix.tolist() == m.tolist() and a.vector.tolist() == v.tolist()
    assert T().fromlist(a.tolist()) == a
    assert T().fromlist(h) == a


@pytest.mark.parametrize("T", AFFS)
@pytest.mark.parametrize("bad,exc", [
    (None, TypeError), (1, TypeError), ("abcd", TypeError),
    (np.eye(3).tolist(), ValueError), (np.eye(4)[:3].tolist(), ValueError),
    ([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [1, 0, 0, 1]], ValueError),   # not affine
    ([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 2]], ValueError),
    ([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 0, 0]], ValueError),
    ([[1, 0, 0, "t"], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]], TypeError),
])
def test_aff_fromlist_bad_input(T, bad, exc):
    a = aff_from(T, [[2, 0, 0], [0, 2, 0], [0, 0, 2]], [1, 1, 1])
    before = a.tolist()
    with pytest.raises(exc):
        a.fromlist(bad)
    assert a.tolist() == before


@pytest.mark.parametrize("T", AFFS)
def test_aff_str_eq_and_wrong_operands(T):
    a = T(VEC[T](1, 2, 3))
    assert str(a) == "Aff3D(Mat3D((1,0,0),(0,1,0),(0,0,1)),Vec3D(1,2,3))"
    assert a == a.copy() and a != T()
    assert not (a == None)  # noqa: E711
    with pytest.raises(TypeError):
        a * 2
    with pytest.raises(TypeError):
        a * MAT_OF[T]()
    with pytest.raises(TypeError):
        a *= VEC[T](1, 1, 1)
    with pytest.raises(TypeError):
        a.transformVector(None)
    with pytest.raises(TypeError):
        a.transformVector([1, 2, 3])
    with pytest.raises(TypeError):
        hash(a)


# ---------------------------------------------------------------------------
# PLUNC files


@pytest.mark.parametrize("T", AFFS)
def test_plunc_round_trip(T, tmp_path):
    r = rng(8)
    m = r.uniform(-3, 3, (3, 3)).astype(DTYPE[T])
    v = r.uniform(-30, 30, 3).astype(DTYPE[T])
    a = aff_from(T, m, v)
    f = tmp_path / "xform.txt"
    a.writePLUNCStyle(str(f))
    b = T()
    b.readPLUNCStyle(str(f))
    assert b == a                                 # bit-exact round trip
    c = T()
    c.readPLUNCStyle(f)                           # os.PathLike works too
    assert c == a
    # the file is the transpose of the homogeneous matrix (row-vector convention)
    # (max_digits10 digits: the text rounds back to the same value of the type)
    vals = np.array(f.read_text().split(), dtype=np.float64).reshape(4, 4).astype(DTYPE[T])
    assert np.array_equal(vals, homog(m.astype(np.float64), v.astype(np.float64)).T.astype(DTYPE[T]))


def test_plunc_hand_written_layout(tmp_path):
    f = tmp_path / "plunc.txt"
    f.write_text("1 4 7 0\n2 5 8 0\n3 6 9.5 0\n10 20 30 1\n")
    a = ca.Aff3Dd()
    a.readPLUNCStyle(str(f))
    assert a.matrix.tolist() == [[1, 2, 3], [4, 5, 6], [7, 8, 9.5]]
    assert a.vector.tolist() == [10, 20, 30]
    # whitespace does not matter
    f.write_text("  1 4 7 0 2 5 8 0\n\n3 6 9.5 0 10 20 30 1  \n")
    b = ca.Aff3Dd()
    b.readPLUNCStyle(str(f))
    assert b == a


@pytest.mark.parametrize("content", [
    "", "1 2 3", "1 0 0 0\n0 1 0 0\n0 0 1 0\n",             # too few values
    "1 0 0 0\n0 1 0 0\n0 0 1 0\n0 0 0 1\n5",                # too many
    "1 0 0 0\n0 1 0 0\n0 0 1 0\n0 0 0 x\n",                 # not a number
    "1 0 0 0\n0 1 0 0\n0 0 1 0\n0 0 0 1abc\n",
    "1 0 0 0\n0 1 0 0\n0 0 1 0\n0 0 0 nan\n",
    "1 0 0 0\n0 1 0 0\n0 0 1 0\n0 0 0 1e999\n",
    "1 0 0 5\n0 1 0 0\n0 0 1 0\n0 0 0 1\n",                 # last column not (0, 0, 0, 1)
    "1 0 0 0\n0 1 0 0\n0 0 1 0\n0 0 0 2\n",
])
def test_plunc_malformed_files_raise_and_keep_transform(tmp_path, content):
    f = tmp_path / "bad.txt"
    f.write_text(content)
    a = ca.Aff3Df(ca.Vec3Df(1, 2, 3))
    with pytest.raises(RuntimeError) as e:
        a.readPLUNCStyle(str(f))
    assert "PyCAException" in str(e.value) and "readPLUNCStyle" in str(e.value)
    assert a == ca.Aff3Df(ca.Vec3Df(1, 2, 3))


def test_plunc_unreadable_and_unwritable_paths(tmp_path):
    a = ca.Aff3Df()
    with pytest.raises(RuntimeError, match="cannot open"):
        a.readPLUNCStyle(str(tmp_path / "missing.txt"))
    with pytest.raises(RuntimeError):
        a.readPLUNCStyle(str(tmp_path))              # a directory
    with pytest.raises(RuntimeError, match="cannot open"):
        a.writePLUNCStyle(str(tmp_path / "no" / "such" / "dir.txt"))
    with pytest.raises(RuntimeError):
        a.writePLUNCStyle(str(tmp_path))             # a directory
    for bad in (None, 3, ["x"]):
        with pytest.raises(TypeError):
            a.writePLUNCStyle(bad)
        with pytest.raises(TypeError):
            a.readPLUNCStyle(bad)

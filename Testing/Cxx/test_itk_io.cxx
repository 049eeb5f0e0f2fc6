// test_itk_io.cxx -- ITKFileIO (built and registered only with USE_ITK=ON):
// round trips of images and fields in every format with exact size, spacing
// and origin, 2-D grids, ReadHeader, component files, refused input (missing,
// empty, directory, garbage, truncated NIfTI, wrong kind) leaving the target
// unchanged, and atomic saves (no temporaries; the earlier file kept when a
// save fails).
#define BOOST_TEST_MODULE PyCA ITKFileIO
#include <boost/test/unit_test.hpp>

#include "pyca_test_utils.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <unistd.h>

#include "Field3D.h"
#include "ITKFileIO.h"
#include "Image3D.h"
#include "PyCAException.h"

using namespace PyCA;
namespace fs = std::filesystem;

namespace {

// A fresh folder per test case, removed afterwards.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("pyca_itk_io_" + std::to_string(::getpid()) + "_" +
            boost::unit_test::framework::current_test_case().p_name.get());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
  std::vector<std::string> temporaries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path))
      if (contains(e.path().filename().string(), ".tmp-")) out.push_back(e.path().string());
    return out;
  }
};

const GridInfo kGrid(Vec3Di(7, 5, 4), Vec3Df(1.25f, 0.7f, 2.3456789f), Vec3Df(-101.5f, -0.3f, 37.123456f));
const GridInfo kGrid2D(Vec3Di(9, 6, 1), Vec3Df(0.5f, 2.75f, 3.5f), Vec3Df(-4.f, 8.25f, -12.5f));

void fill(Image3D& im, uint32_t seed) {
  Rng r(seed);
  for (size_t i = 0; i < im.nVox(); ++i) im(i) = r.next(-100.f, 100.f);
}

void fill(Field3D& f, uint32_t seed) {
  Rng r(seed);
  for (size_t i = 0; i < f.nVox(); ++i) f.set(i, Vec3Df(r.next(), r.next(), r.next()));
}

void checkSameGrid(const GridInfo& a, const GridInfo& b) {  // exact, not within GRIDINFO_EPS
  BOOST_TEST(a.size() == b.size());
  BOOST_TEST(a.spacing().x == b.spacing().x);
  BOOST_TEST(a.spacing().y == b.spacing().y);
  BOOST_TEST(a.spacing().z == b.spacing().z);
  BOOST_TEST(a.origin().x == b.origin().x);
  BOOST_TEST(a.origin().y == b.origin().y);
  BOOST_TEST(a.origin().z == b.origin().z);
}

bool sameVoxels(const Image3D& a, const Image3D& b) {
  if (a.nVox() != b.nVox()) return false;
  for (size_t i = 0; i < a.nVox(); ++i)
    if (a(i) != b(i)) return false;
  return true;
}

std::string readAll(const std::string& name) {
  std::ifstream in(name, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeAll(const std::string& name, const std::string& data) {
  std::ofstream(name, std::ios::binary | std::ios::trunc) << data;
}

const char* kExts[] = {".nii", ".nii.gz", ".mha", ".mhd", ".nrrd"};

}  // namespace

BOOST_AUTO_TEST_CASE(image_round_trips) {
  TempDir dir;
  for (const GridInfo& g : {kGrid, kGrid2D}) {
    Image3D im(g);
    fill(im, 3);
    for (const char* ext : kExts) {
      BOOST_TEST_CONTEXT(ext << " " << g.toString()) {
        const std::string fn = dir / (std::string("im") + ext);
        ITKFileIO::SaveImage(im, fn.c_str());
        Image3D back;
        ITKFileIO::LoadImage(back, fn.c_str());
        checkSameGrid(back.grid(), g);
        BOOST_TEST(sameVoxels(back, im));
        GridInfo hg;
        ITKFileIO::ComponentType type = ITKFileIO::UNKNOWNCOMPONENTTYPE;
        ITKFileIO::ReadHeader(hg, type, fn.c_str());
        checkSameGrid(hg, g);
        BOOST_TEST(type == ITKFileIO::FLOAT);
      }
    }
  }
  BOOST_TEST(dir.temporaries().empty());
}

BOOST_AUTO_TEST_CASE(compressed_and_resized_target) {
  TempDir dir;
  Image3D im(GridInfo(Vec3Di(40, 30, 20)));
  for (size_t i = 0; i < im.nVox(); ++i) im(i) = float(i % 7);
  const std::string fn = dir / "c.nii.gz";
  ITKFileIO::SaveImage(im, fn.c_str(), true);
  BOOST_TEST(fs::file_size(fn) < im.nVox() * sizeof(float) / 4);
  Image3D back(GridInfo(Vec3Di(3, 3, 3)));  // a load resizes its target
  ITKFileIO::LoadImage(back, fn.c_str());
  BOOST_TEST(sameVoxels(back, im));
}

BOOST_AUTO_TEST_CASE(field_round_trips) {
  TempDir dir;
  for (const GridInfo& g : {kGrid, kGrid2D}) {
    Field3D f(g);
    fill(f, 5);
    for (const char* ext : {".nii.gz", ".mha", ".nrrd"}) {
      BOOST_TEST_CONTEXT(ext << " " << g.toString()) {
        const std::string fn = dir / (std::string("f") + ext);
        ITKFileIO::SaveField(f, fn.c_str());
        Field3D back;
        ITKFileIO::LoadField(back, fn.c_str());
        BOOST_TEST(back.size() == g.size());
        checkSameGrid(back.grid(), g);
        bool same = true;
        for (size_t i = 0; i < f.nVox(); ++i) same = same && back.get(i) == f.get(i);
        BOOST_TEST(same);
      }
    }
    ITKFileIO::SaveFieldComponents(f, (dir / "comp").c_str());
    BOOST_TEST(fs::exists(dir / "comp_x.mha"));
    BOOST_TEST(fs::exists(dir / "comp_y.mha"));
    BOOST_TEST(fs::exists(dir / "comp_z.mha"));
    Field3D back;
    ITKFileIO::LoadFieldComponents(back, (dir / "comp").c_str());
    checkSameGrid(back.grid(), g);
    bool same = true;
    for (size_t i = 0; i < f.nVox(); ++i) same = same && back.get(i) == f.get(i);
    BOOST_TEST(same);
  }
  BOOST_TEST(dir.temporaries().empty());
}

BOOST_AUTO_TEST_CASE(refused_input_leaves_target) {
  TempDir dir;
  Image3D good(kGrid);
  fill(good, 7);
  const std::string nii = dir / "good.nii";
  ITKFileIO::SaveImage(good, nii.c_str());
  const std::string data = readAll(nii);

  writeAll(dir / "trunc.nii", data.substr(0, data.size() - 8));
  writeAll(dir / "empty.nii", "");
  writeAll(dir / "garbage.nii", std::string(1000, '\x17'));
  fs::create_directories(dir / "folder.nii");
  ITKFileIO::SaveImage(good, (dir / "gz.nii.gz").c_str());
  const std::string gz = readAll(dir / "gz.nii.gz");
  writeAll(dir / "trunc.nii.gz", gz.substr(0, gz.size() - 10));
  Field3D f(kGrid);
  fill(f, 1);
  ITKFileIO::SaveField(f, (dir / "vec.mha").c_str());
  Image3D flat(kGrid2D);
  fill(flat, 2);
  ITKFileIO::SaveImage(flat, (dir / "flat.nrrd").c_str());
  fs::rename(dir / "flat.nrrd", dir / "mislabelled.nii");
  // an infinite sform entry (ITK's NIfTI reader spins on it): sform_code 1, srow_y[1] = -inf
  std::string infSform = data;
  infSform[254] = 1;
  infSform[255] = 0;
  const unsigned char negInf[4] = {0x00, 0x00, 0x80, 0xff};
  for (int i = 0; i < 4; ++i) infSform[300 + i] = char(negInf[i]);
  writeAll(dir / "inf_sform.nii", infSform);

  Image3D target(GridInfo(Vec3Di(2, 2, 2)));
  for (size_t i = 0; i < target.nVox(); ++i) target(i) = 42.f;
  const struct { std::string name, msg; } cases[] = {
      {dir / "missing.nii", "no such file"},
      {dir / "empty.nii", "empty"},
      {dir / "folder.nii", "directory"},
      {dir / "garbage.nii", "ITK File Reader Exception"},
      {dir / "trunc.nii", "truncated NIfTI file"},
      {dir / "trunc.nii.gz", "truncated gzip stream"},
      {dir / "vec.mha", "3 components per pixel"},
      {dir / "mislabelled.nii", "mislabelled.nii"},  // ITK 5.2 finds no reader; 5.4 reads NRRD content
      {dir / "inf_sform.nii", "non-finite value in its sform"},
  };
  for (const auto& c : cases) {
    BOOST_TEST_CONTEXT(c.name) {
      CHECK_PYCA_THROW(ITKFileIO::LoadImage(target, c.name.c_str()), PyCAException, c.msg);
      BOOST_TEST(target.size() == Vec3Di(2, 2, 2));
      BOOST_TEST(target(0) == 42.f);
      BOOST_TEST(target(7) == 42.f);
    }
  }
  Field3D ftarget(GridInfo(Vec3Di(2, 2, 2)));
  CHECK_PYCA_THROW(ITKFileIO::LoadField(ftarget, nii.c_str()), PyCAException, "1 component");
  BOOST_TEST(ftarget.size() == Vec3Di(2, 2, 2));
  GridInfo g;
  ITKFileIO::ComponentType t;
  CHECK_PYCA_THROW(ITKFileIO::ReadHeader(g, t, (dir / "missing.nii").c_str()), PyCAException, "missing.nii");
  CHECK_PYCA_THROW(ITKFileIO::ReadHeader(g, t, (dir / "inf_sform.nii").c_str()), PyCAException, "sform");
}

// A save killed between the two renames of a .mhd pair leaves new data
// beside the old header: the load refuses such a pair (ITK would read it).
BOOST_AUTO_TEST_CASE(mixed_mhd_pair_refused) {
  TempDir dir;
  Image3D a(kGrid), b(GridInfo(Vec3Di(9, 5, 4)));
  fill(a, 3);
  fill(b, 4);
  const std::string mhd = dir / "mix.mhd", other = dir / "other.mhd";
  ITKFileIO::SaveImage(a, mhd.c_str());
  ITKFileIO::SaveImage(b, other.c_str());
  fs::copy_file(dir / "other.raw", dir / "mix.raw", fs::copy_options::overwrite_existing);
  Image3D back;
  CHECK_PYCA_THROW(ITKFileIO::LoadImage(back, mhd.c_str()), PyCAException, "different saves");
  // compressed pairs: the size is the header's CompressedDataSize
  ITKFileIO::SaveImage(a, mhd.c_str(), true);
  ITKFileIO::SaveImage(b, other.c_str(), true);
  fs::copy_file(dir / "other.zraw", dir / "mix.zraw", fs::copy_options::overwrite_existing);
  CHECK_PYCA_THROW(ITKFileIO::LoadImage(back, mhd.c_str()), PyCAException, "different saves");
  // a consistent pair loads
  ITKFileIO::SaveImage(a, mhd.c_str(), true);
  ITKFileIO::LoadImage(back, mhd.c_str());
  BOOST_TEST(sameVoxels(back, a));
}

BOOST_AUTO_TEST_CASE(atomic_saves) {
  TempDir dir;
  Image3D im(kGrid);
  fill(im, 9);
  // .mhd: header and data both renamed; the header names the final data file
  const std::string mhd = dir / "pair.mhd";
  ITKFileIO::SaveImage(im, mhd.c_str());
  BOOST_TEST(contains(readAll(mhd), "ElementDataFile = pair.raw"));
  BOOST_TEST(!contains(readAll(mhd), ".tmp-"));
  ITKFileIO::SaveImage(im, mhd.c_str(), true);
  BOOST_TEST(contains(readAll(mhd), "ElementDataFile = pair.zraw"));
  Image3D back;
  ITKFileIO::LoadImage(back, mhd.c_str());
  BOOST_TEST(sameVoxels(back, im));

  // a failing save (no writer for the extension) keeps the earlier file
  const std::string keep = dir / "keep.unknownext";
  writeAll(keep, "earlier content");
  CHECK_PYCA_THROW(ITKFileIO::SaveImage(im, keep.c_str()), PyCAException, "ITK File Writer Exception");
  BOOST_TEST(readAll(keep) == "earlier content");
  CHECK_PYCA_THROW(ITKFileIO::SaveImage(im, (dir / "no/such/folder.nii").c_str()), PyCAException,
                   "folder does not exist");
  CHECK_PYCA_THROW(ITKFileIO::SaveImage(Image3D(), (dir / "empty.nii").c_str()), PyCAException,
                   "no voxels");
  BOOST_TEST(!fs::exists(dir / "empty.nii"));
  BOOST_TEST(dir.temporaries().empty());
}

// The staged writer (AtomicFile.h's writeStaged, shared with Aff3D and the
// FFTW wisdom file): a symbolic link's target is replaced (the link kept),
// an earlier file's permissions are kept, a folder is never replaced, an
// earlier .mhd pair is replaced as a pair, and nothing is left behind.
BOOST_AUTO_TEST_CASE(staged_writer_links_modes_and_folders) {
  TempDir dir;
  Image3D a(kGrid), b(kGrid), back;
  fill(a, 21);
  fill(b, 22);
  const std::string real = dir / "real.nii.gz", link = dir / "link.nii.gz";
  ITKFileIO::SaveImage(a, real.c_str());
  fs::create_symlink(real, link);
  ITKFileIO::SaveImage(b, link.c_str());
  BOOST_TEST(fs::is_symlink(link));
  ITKFileIO::LoadImage(back, real.c_str());
  BOOST_TEST(sameVoxels(back, b));

  const std::string kept = dir / "mode.mha";
  ITKFileIO::SaveImage(a, kept.c_str());
  fs::permissions(kept, fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  ITKFileIO::SaveImage(b, kept.c_str());
  BOOST_TEST(((fs::status(kept).permissions() & fs::perms::all) ==
              (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read)));

  const std::string folder = dir / "folder.nii";
  fs::create_directories(folder);
  CHECK_PYCA_THROW(ITKFileIO::SaveImage(a, folder.c_str()), PyCAException, "it is a directory");
  BOOST_TEST(fs::is_directory(folder));

  const std::string mhd = dir / "again.mhd";
  ITKFileIO::SaveImage(a, mhd.c_str());
  ITKFileIO::SaveImage(b, mhd.c_str());
  ITKFileIO::LoadImage(back, mhd.c_str());
  BOOST_TEST(sameVoxels(back, b));
  BOOST_TEST(dir.temporaries().empty());
}

// ITKFileIO.cxx -- ITKFileIO on ITK 5 (compiled with USE_ITK=ON only).
#include "ITKFileIO.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <itkImage.h>
#include <itkImageFileReader.h>
#include <itkImageFileWriter.h>
#include <itkImageIOBase.h>
#include <itkMetaImageIOFactory.h>
#include <itkNiftiImageIOFactory.h>
#include <itkNrrdImageIOFactory.h>
#include <itkPNGImageIOFactory.h>
#include <itkVTKImageIOFactory.h>
#include <itkVectorImage.h>

#include "AtomicFile.h"
#include "Field3D.h"
#include "Image3D.h"
#include "MemAlloc.h"
#include "PyCAException.h"

namespace PyCA {

#define PYCA_ITK_SAME(name) \
  static_assert(int(ITKFileIO::name) == int(itk::IOComponentEnum::name), "ComponentType " #name);
PYCA_ITK_SAME(UNKNOWNCOMPONENTTYPE)
PYCA_ITK_SAME(UCHAR)
PYCA_ITK_SAME(CHAR)
PYCA_ITK_SAME(USHORT)
PYCA_ITK_SAME(SHORT)
PYCA_ITK_SAME(UINT)
PYCA_ITK_SAME(INT)
PYCA_ITK_SAME(ULONG)
PYCA_ITK_SAME(LONG)
PYCA_ITK_SAME(LONGLONG)
PYCA_ITK_SAME(ULONGLONG)
PYCA_ITK_SAME(FLOAT)
PYCA_ITK_SAME(DOUBLE)
PYCA_ITK_SAME(LDOUBLE)
#undef PYCA_ITK_SAME

namespace {

using ScalarImage = itk::Image<float, 3>;
using VectorImage = itk::VectorImage<float, 3>;

// The formats PyCA registers explicitly (ITK's automatic registration needs
// UseITK.cmake's generated headers, which PyCA does not use).
void registerFactories() {
  static std::once_flag once;
  std::call_once(once, [] {
    itk::NiftiImageIOFactory::RegisterOneFactory();
    itk::MetaImageIOFactory::RegisterOneFactory();
    itk::NrrdImageIOFactory::RegisterOneFactory();
    itk::VTKImageIOFactory::RegisterOneFactory();
    itk::PNGImageIOFactory::RegisterOneFactory();
  });
}

[[noreturn]] void fail(const char* who, const std::string& name, const std::string& what) {
  throw PyCAException(__FILE__, __LINE__,
                      std::string(who) + ": cannot read '" + name + "': " + what);
}

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool endsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// A missing, directory, unreadable or empty file: our own message.
void checkInput(const char* who, const std::string& name) {
  struct stat st;
  if (::stat(name.c_str(), &st) != 0)
    fail(who, name, std::string("no such file (") + std::strerror(errno) + ")");
  if (S_ISDIR(st.st_mode)) fail(who, name, "is a directory, not an image file");
  std::ifstream in(name, std::ios::binary);
  if (!in) fail(who, name, std::string("cannot open (") + std::strerror(errno) + ")");
  if (st.st_size == 0) fail(who, name, "the file is empty (0 bytes)");
}

// ---- .mhd pairs: the data file must be of the header's save ----
// A save of a pair renames the data file, then the header (atomicWrite:
// AtomicFile.h's writeStaged), so a process killed between the two leaves
// new data beside the old header; ITK reads such a mix without a word. The
// data file's size must be the header's CompressedDataSize (compressed) or
// DimSize x channels x element size (raw, HeaderSize 0). The same check as
// PyCA.Common.atomic's (check_readable).
void checkMetaImagePair(const char* who, const std::string& name) {
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos) return;
  std::string ext = name.substr(dot);
  for (char& c : ext) c = char(std::tolower((unsigned char)c));
  if (ext != ".mhd") return;
  std::ifstream in(name, std::ios::binary);
  std::string line, dataFile, type, dims;
  std::string compressed = "false", compressedSize, headerSize = "0", channels = "1";
  size_t read = 0;
  while (read < 65536 && std::getline(in, line)) {
    read += line.size() + 1;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    auto trim = [](std::string v) {
      const size_t a = v.find_first_not_of(" \t\r"), b = v.find_last_not_of(" \t\r");
      return a == std::string::npos ? std::string() : v.substr(a, b - a + 1);
    };
    std::string key = trim(line.substr(0, eq));
    for (char& c : key) c = char(std::tolower((unsigned char)c));
    const std::string val = trim(line.substr(eq + 1));
    if (key == "elementdatafile") { dataFile = val; break; }
    if (key == "elementtype") type = val;
    else if (key == "dimsize") dims = val;
    else if (key == "compresseddata") compressed = val;
    else if (key == "compresseddatasize") compressedSize = val;
    else if (key == "headersize") headerSize = val;
    else if (key == "elementnumberofchannels") channels = val;
  }
  if (dataFile.empty() || dataFile == "LOCAL" || dataFile == "LIST" ||
      dataFile.find_first_of(" %") != std::string::npos)
    return;
  const size_t slash = name.rfind('/');
  const std::string path = dataFile[0] == '/' || slash == std::string::npos ? dataFile
                                                                            : name.substr(0, slash + 1) + dataFile;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return;  // the reader reports a missing data file
  static const std::pair<const char*, int> kBytes[] = {
      {"MET_UCHAR", 1}, {"MET_CHAR", 1},  {"MET_USHORT", 2}, {"MET_SHORT", 2},         {"MET_UINT", 4},
      {"MET_INT", 4},   {"MET_FLOAT", 4}, {"MET_DOUBLE", 8}, {"MET_ULONG_LONG", 8}, {"MET_LONG_LONG", 8}};
  try {
    unsigned long long want = 0;
    std::string lc = compressed;
    for (char& c : lc) c = char(std::tolower((unsigned char)c));
    if (lc == "true") {
      if (compressedSize.empty()) return;
      want = std::stoull(compressedSize);
    } else {
      if (std::stod(headerSize) != 0) return;
      int bytes = 0;
      for (const auto& kb : kBytes)
        if (type == kb.first) bytes = kb.second;
      if (!bytes) return;
      long double n = (long double)bytes * std::stod(channels);
      std::istringstream ds(dims);
      double d;
      while (ds >> d) n *= d;
      if (n < 0 || n > 1.8e19L) return;  // absurd: the header checks report it
      want = (unsigned long long)n;
    }
    if (want != (unsigned long long)st.st_size)
      fail(who, name, "the data file '" + dataFile + "' has " + std::to_string((long long)st.st_size) +
                          " bytes, the header expects " + std::to_string(want) +
                          " (header and data of different saves: an interrupted save?)");
  } catch (const std::invalid_argument&) {
  } catch (const std::out_of_range&) {
  }
}

// ---- NIfTI completeness: ITK reads a truncated .nii / .nii.gz silently ----

struct HeaderReader {
  const unsigned char* p;
  bool swap;
  template <class T>
  T get(size_t off) const {
    T v;
    unsigned char b[sizeof(T)];
    std::memcpy(b, p + off, sizeof(T));
    if (swap)
      for (size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
    std::memcpy(&v, b, sizeof(T));
    return v;
  }
};

// Expected size (vox_offset + data) of a single-file NIfTI-1/2 header; 0 when
// the header is not one (ITK then judges by itself).
uint64_t niftiExpectedBytes(const unsigned char* hdr, int n) {
  for (int s = 0; s < 2; ++s) {
    HeaderReader r{hdr, s == 1};
    if (n < 348) return 0;
    int32_t sz = r.get<int32_t>(0);
    int64_t dims[8];
    int bitpix;
    uint64_t offset;
    if (sz == 348) {
      if (std::memcmp(hdr + 344, "n+1\0", 4) != 0) return 0;
      for (int i = 0; i < 8; ++i) dims[i] = r.get<int16_t>(40 + 2 * i);
      bitpix = r.get<int16_t>(72);
      float vo = r.get<float>(108);
      offset = vo > 0 ? uint64_t(vo) : 0;
    } else if (sz == 540 && n >= 540) {
      if (std::memcmp(hdr + 4, "n+2\0", 4) != 0) return 0;
      bitpix = r.get<int16_t>(14);
      for (int i = 0; i < 8; ++i) dims[i] = r.get<int64_t>(16 + 8 * i);
      int64_t vo = r.get<int64_t>(168);
      offset = vo > 0 ? uint64_t(vo) : 0;
    } else {
      continue;
    }
    if (dims[0] < 1 || dims[0] > 7 || bitpix <= 0) return 0;
    uint64_t nvox = 1;
    for (int i = 1; i <= dims[0]; ++i) {
      if (dims[i] < 0) return 0;
      nvox *= uint64_t(dims[i] > 0 ? dims[i] : 1);
    }
    return offset + nvox * uint64_t(bitpix) / 8;
  }
  return 0;
}

uint64_t countBytes(const std::string& path, uint64_t offset, int inflateMode, bool* complete);

// Decompressed length of a gzip file (all members); -1 when the stream is cut
// short. A file without the gzip magic is read as it is (as zlib's gzread does).
int64_t gzipLength(const std::string& name) {
  unsigned char magic[2] = {0, 0};
  std::ifstream in(name, std::ios::binary);
  in.read(reinterpret_cast<char*>(magic), 2);
  const bool gz = in.gcount() == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  bool complete = false;
  const uint64_t n = countBytes(name, 0, gz ? 2 : 0, &complete);
  return complete ? int64_t(n) : -1;
}

// The first bytes of a .nii / .nii.gz file (n = 0 for other names).
struct NiftiHeader {
  unsigned char bytes[540];
  int n = 0;
};

NiftiHeader readNiftiHeader(const char* who, const std::string& name) {
  NiftiHeader h;
  const std::string low = lower(name);
  if (!endsWith(low, ".nii.gz") && !endsWith(low, ".nii")) return h;
  gzFile f = gzopen(name.c_str(), "rb");  // reads plain files too
  if (!f) return h;
  h.n = gzread(f, h.bytes, sizeof(h.bytes));
  gzclose(f);
  if (h.n < 0) fail(who, name, "corrupt compressed NIfTI header");
  return h;
}

// A NIfTI header whose voxel sizes or spatial transform (qform when
// qform_code > 0, sform when sform_code > 0) hold NaN or infinity is refused
// before ITK reads it: ITK's NIfTI reader spins without end on one (found by
// the fuzzer). The same check as PyCA.Common.atomic's.
void checkNiftiTransform(const char* who, const std::string& name, const NiftiHeader& h) {
  if (h.n < 348) return;
  for (int s = 0; s < 2; ++s) {
    HeaderReader r{h.bytes, s == 1};
    const int32_t sz = r.get<int32_t>(0);
    std::vector<std::pair<const char*, double>> vals;
    if (sz == 348) {
      const int nd = std::min(std::max(int(r.get<int16_t>(40)), 0), 7);
      for (int i = 0; i <= nd; ++i) vals.emplace_back("pixdim", r.get<float>(76 + 4 * i));
      if (r.get<int16_t>(252) > 0)
        for (int i = 0; i < 6; ++i) vals.emplace_back("qform", r.get<float>(256 + 4 * i));
      if (r.get<int16_t>(254) > 0)
        for (int i = 0; i < 12; ++i) vals.emplace_back("sform", r.get<float>(280 + 4 * i));
    } else if (sz == 540 && h.n >= 540) {
      const int nd = int(std::min<int64_t>(std::max<int64_t>(r.get<int64_t>(16), 0), 7));
      for (int i = 0; i <= nd; ++i) vals.emplace_back("pixdim", r.get<double>(104 + 8 * i));
      if (r.get<int32_t>(344) > 0)
        for (int i = 0; i < 6; ++i) vals.emplace_back("qform", r.get<double>(352 + 8 * i));
      if (r.get<int32_t>(348) > 0)
        for (int i = 0; i < 12; ++i) vals.emplace_back("sform", r.get<double>(400 + 8 * i));
    } else {
      continue;
    }
    for (const auto& v : vals)
      if (!std::isfinite(v.second))
        fail(who, name, std::string("the NIfTI header holds a non-finite value in its ") + v.first +
                            " (voxel sizes and the spatial transform must be finite)");
    return;
  }
}

// ITK reads a vector NIfTI with one z plane as 2-D (spacing.z 1, origin.z 0):
// restores z from the header (pixdim[3]; sform, else qform, z offset).
void niftiRestoreZ(const NiftiHeader& h, GridInfo& g) {
  for (int s = 0; s < 2; ++s) {
    HeaderReader r{h.bytes, s == 1};
    if (h.n < 348) return;
    int32_t sz = r.get<int32_t>(0);
    int64_t nd;
    double dz, qz, szz;
    int qcode, scode;
    if (sz == 348) {
      nd = r.get<int16_t>(40);
      dz = r.get<float>(88);
      qcode = r.get<int16_t>(252);
      scode = r.get<int16_t>(254);
      qz = r.get<float>(276);
      szz = r.get<float>(324);
    } else if (sz == 540 && h.n >= 540) {
      nd = r.get<int64_t>(16);
      dz = r.get<double>(128);
      qcode = r.get<int32_t>(344);
      scode = r.get<int32_t>(348);
      qz = r.get<double>(392);
      szz = r.get<double>(488);
    } else {
      continue;
    }
    if (nd < 3) return;
    g.spacing().z = dz != 0 ? float(dz < 0 ? -dz : dz) : 1.f;
    g.origin().z = float(scode > 0 ? szz : (qcode > 0 ? qz : 0.0));
    return;
  }
}

void checkNiftiComplete(const char* who, const std::string& name, const NiftiHeader& h) {
  if (h.n <= 0) return;
  const bool gz = endsWith(lower(name), ".gz");
  const unsigned char* hdr = h.bytes;
  const int n = h.n;
  const uint64_t want = niftiExpectedBytes(hdr, n);
  if (want == 0) return;
  uint64_t have;
  if (!gz) {
    struct stat st;
    if (::stat(name.c_str(), &st) != 0) return;
    have = uint64_t(st.st_size);
  } else {
    // The gzip trailer's ISIZE (length mod 2^32): a cheap check; count
    // exactly only when it disagrees (cut files, multi-member streams).
    uint32_t isize = 0;
    std::ifstream in(name, std::ios::binary | std::ios::ate);
    if (in && in.tellg() >= 4) {
      in.seekg(-4, std::ios::end);
      unsigned char b[4];
      in.read(reinterpret_cast<char*>(b), 4);
      isize = uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 24;
    }
    if (isize == uint32_t(want)) return;
    int64_t len = gzipLength(name);
    if (len < 0)
      fail(who, name, "truncated gzip stream (the file ends inside the compressed data; " +
                          std::to_string(want) + " bytes expected)");
    have = uint64_t(len);
  }
  if (have < want)
    fail(who, name, "truncated NIfTI file: " + std::to_string(want) + " bytes of data expected, " +
                        std::to_string(have) + " present");
}

// ---- atomic saves ----

struct PathParts {
  std::string dir, stem, ext;
};

PathParts splitPath(const std::string& path) {
  PathParts p;
  size_t slash = path.rfind('/');
  p.dir = slash == std::string::npos ? std::string(".") : (slash == 0 ? "/" : path.substr(0, slash));
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  size_t dot = base.rfind('.');
  if (dot == std::string::npos || dot == 0) {
    p.stem = base;
    return p;
  }
  std::string ext = base.substr(dot);
  std::string stem = base.substr(0, dot);
  const std::string le = lower(ext);
  if (le == ".gz" || le == ".bz2" || le == ".xz" || le == ".zst" || le == ".z") {
    size_t dot2 = stem.rfind('.');
    if (dot2 != std::string::npos && dot2 != 0) {
      ext = stem.substr(dot2) + ext;
      stem = stem.substr(0, dot2);
    }
  }
  p.stem = stem;
  p.ext = ext;
  return p;
}

// A MetaImage / NRRD header written under the temporary name points at the
// temporary data file: point it at the final one.
void fixHeaderRefs(const std::string& header, const std::string& tmpStem, const std::string& stem) {
  std::ifstream in(header, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  in.close();
  std::string text = ss.str(), out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    std::string key = lower(line.substr(0, line.find_first_of("=:")));
    while (!key.empty() && std::isspace(static_cast<unsigned char>(key.back()))) key.pop_back();
    if (key == "elementdatafile" || key == "data file" || key == "datafile") {
      size_t at = line.find(tmpStem + ".");
      if (at != std::string::npos) line.replace(at, tmpStem.size(), stem);
    }
    out += line;
    if (nl == std::string::npos) break;
    out += '\n';
    pos = nl + 1;
  }
  std::ofstream o(header, std::ios::binary | std::ios::trunc);
  o << out;
  if (!o) throw PyCAException(__FILE__, __LINE__, "cannot rewrite header '" + header + "'");
}

// ---- verifying a written file before it replaces the target ----
// ITK's NIfTI writer reports a short write (a full disk, a file size limit)
// only on stderr and returns normally; a compressed stream cut short reads as
// a smaller image. Every save therefore checks its temporary file before the
// rename: the size its header implies (NIfTI, MetaImage, NRRD), compressed
// streams inflated to their end with the implied length. The same checks as
// PyCA.Common.atomic.verify_written.

// Bytes of path from offset, raw or inflated (zlib or gzip framing) to the
// stream's end; *complete false when the stream ends early or is corrupt.
uint64_t countBytes(const std::string& path, uint64_t offset, int inflateMode, bool* complete) {
  *complete = false;
  std::ifstream in(path, std::ios::binary);
  if (!in) return 0;
  in.seekg(0, std::ios::end);
  const uint64_t size = uint64_t(in.tellg());
  if (inflateMode == 0) {
    *complete = true;
    return size > offset ? size - offset : 0;
  }
  in.seekg(std::streamoff(offset));
  z_stream zs;
  std::memset(&zs, 0, sizeof(zs));
  if (inflateInit2(&zs, inflateMode == 2 ? 15 + 16 : 15) != Z_OK) return 0;
  std::vector<unsigned char> src(1 << 20), dst(1 << 20);
  uint64_t total = 0;
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    in.read(reinterpret_cast<char*>(src.data()), std::streamsize(src.size()));
    const std::streamsize got = in.gcount();
    if (got <= 0) break;
    zs.next_in = src.data();
    zs.avail_in = uInt(got);
    while (zs.avail_in > 0) {
      zs.next_out = dst.data();
      zs.avail_out = uInt(dst.size());
      rc = inflate(&zs, Z_NO_FLUSH);
      total += dst.size() - zs.avail_out;
      if (rc == Z_STREAM_END) {
        if (inflateMode == 2 && zs.avail_in > 0) {  // another gzip member
          inflateReset(&zs);
          rc = Z_OK;
          continue;
        }
        break;
      }
      if (rc != Z_OK && rc != Z_BUF_ERROR) {
        inflateEnd(&zs);
        return total;
      }
      if (rc == Z_BUF_ERROR && zs.avail_out != 0) break;
    }
  }
  inflateEnd(&zs);
  *complete = rc == Z_STREAM_END;
  return total;
}

// key -> value of a MetaImage ('=', up to ElementDataFile) or NRRD (':', up
// to the first empty line) header; *dataOffset the byte after it (0: cut).
std::vector<std::pair<std::string, std::string>> headerFields(const std::string& path, char sep,
                                                              uint64_t* dataOffset) {
  std::vector<std::pair<std::string, std::string>> out;
  *dataOffset = 0;
  std::ifstream in(path, std::ios::binary);
  std::string line;
  uint64_t pos = 0;
  auto trim = [](const std::string& v) {
    const size_t a = v.find_first_not_of(" \t\r"), b = v.find_last_not_of(" \t\r");
    return a == std::string::npos ? std::string() : v.substr(a, b - a + 1);
  };
  while (pos < 65536 && std::getline(in, line)) {
    if (in.eof()) return out;  // no newline: the header is cut short
    pos += line.size() + 1;
    if (sep == ':' && trim(line).empty()) {
      *dataOffset = pos;
      return out;
    }
    size_t at = line.find(sep == ':' ? ":=" : "=");
    size_t len = 2;
    if (sep == '=' || at == std::string::npos) {
      at = line.find(sep);
      len = 1;
    }
    if (at == std::string::npos) continue;
    const std::string key = lower(trim(line.substr(0, at)));
    out.emplace_back(key, trim(line.substr(at + len)));
    if (sep == '=' && key == "elementdatafile") {
      *dataOffset = pos;
      return out;
    }
  }
  return out;
}

std::string field(const std::vector<std::pair<std::string, std::string>>& f, const std::string& key,
                  const std::string& dflt = "") {
  for (const auto& kv : f)
    if (kv.first == key) return kv.second;
  return dflt;
}

uint64_t product(const std::string& text) {
  std::istringstream ss(text);
  double d, n = 1;
  bool any = false;
  while (ss >> d) n *= d, any = true;
  return any && n > 0 && n < 1.8e19 ? uint64_t(n) : 0;
}

// Why a file may have come out short: the file size limit, a full file
// system, else a short write of unknown cause.
std::string writeCause(const std::string& dir, uint64_t want, uint64_t have) {
  struct rlimit rl;
  if (::getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      (want > uint64_t(rl.rlim_cur) || have >= uint64_t(rl.rlim_cur)))
    return "File too large (the file size limit, RLIMIT_FSIZE, is " + std::to_string(uint64_t(rl.rlim_cur)) +
           " bytes)";
  struct statvfs vs;
  if (::statvfs(dir.c_str(), &vs) == 0) {
    const uint64_t free = uint64_t(vs.f_bavail) * vs.f_frsize;
    const uint64_t missing = want > have ? want - have : 0;
    if (free <= std::max<uint64_t>({missing, 4 * uint64_t(vs.f_frsize), 65536}))
      return "No space left on device (" + std::to_string(free) + " bytes free)";
  }
  return "short write";
}

// Empty when the file just written at path (extension ext, in dir) is
// complete, else what is wrong; *want and *have the sizes when known.
std::string incomplete(const std::string& path, const std::string& ext, const std::string& dir,
                       uint64_t* want, uint64_t* have) {
  *want = *have = 0;
  const std::string le = lower(ext);
  bool ok = true;
  if (le == ".nii" || le == ".nii.gz") {
    unsigned char hdr[540];
    gzFile f = gzopen(path.c_str(), "rb");  // reads plain files too
    int n = f ? gzread(f, hdr, sizeof(hdr)) : -1;
    if (f) gzclose(f);
    *want = n > 0 ? niftiExpectedBytes(hdr, n) : 0;
    if (*want == 0) return "no complete NIfTI header";
    *have = countBytes(path, 0, le == ".nii.gz" ? 2 : 0, &ok);
    if (!ok) return "the gzip stream ends before its end";
    if (*have < *want) return std::to_string(*have) + " of " + std::to_string(*want) + " bytes written";
  } else if (le == ".mha" || le == ".mhd") {
    uint64_t off;
    const auto f = headerFields(path, '=', &off);
    if (off == 0) return "the MetaImage header is cut short";
    static const std::pair<const char*, int> kBytes[] = {
        {"MET_UCHAR", 1}, {"MET_CHAR", 1},  {"MET_USHORT", 2}, {"MET_SHORT", 2},         {"MET_UINT", 4},
        {"MET_INT", 4},   {"MET_FLOAT", 4}, {"MET_DOUBLE", 8}, {"MET_ULONG_LONG", 8}, {"MET_LONG_LONG", 8}};
    uint64_t bytes = 0;
    for (const auto& kb : kBytes)
      if (field(f, "elementtype") == kb.first) bytes = uint64_t(kb.second);
    const uint64_t raw = bytes * product(field(f, "dimsize")) * product(field(f, "elementnumberofchannels", "1"));
    const std::string data = field(f, "elementdatafile");
    std::string dpath = path;
    if (lower(data) != "local") {
      dpath = dir + "/" + data;
      off = 0;
    }
    *have = countBytes(dpath, off, 0, &ok);
    if (lower(field(f, "compresseddata", "false")) == "true") {
      const uint64_t csize = product(field(f, "compresseddatasize", std::to_string(*have)));
      if (*have < csize) {
        *want = csize;
        return std::to_string(*have) + " of " + std::to_string(csize) + " compressed bytes written";
      }
      *have = countBytes(dpath, off, 1, &ok);
      *want = raw;
      if (!ok || (raw && *have != raw)) return "the compressed data end early";
    } else if (raw && *have < raw) {
      *want = raw;
      return std::to_string(*have) + " of " + std::to_string(raw) + " bytes of data written";
    }
  } else if (le == ".nrrd" || le == ".nhdr") {
    uint64_t off;
    const auto f = headerFields(path, ':', &off);
    if (off == 0 && le == ".nrrd") return "the NRRD header is cut short";
    static const std::pair<const char*, int> kBytes[] = {
        {"float", 4}, {"double", 8}, {"uchar", 1}, {"unsigned char", 1}, {"char", 1}, {"signed char", 1},
        {"short", 2}, {"ushort", 2}, {"unsigned short", 2}, {"int", 4}, {"uint", 4}, {"unsigned int", 4},
        {"int8", 1}, {"uint8", 1}, {"int16", 2}, {"uint16", 2}, {"int32", 4}, {"uint32", 4},
        {"int64", 8}, {"uint64", 8}, {"longlong", 8}, {"ulonglong", 8}};
    uint64_t bytes = 0;
    for (const auto& kb : kBytes)
      if (lower(field(f, "type")) == kb.first) bytes = uint64_t(kb.second);
    *want = bytes * product(field(f, "sizes"));
    std::string data = field(f, "data file", field(f, "datafile"));
    std::string dpath = path;
    if (!data.empty()) {
      dpath = dir + "/" + data;
      off = 0;
    }
    const std::string enc = lower(field(f, "encoding", "raw"));
    const bool gz = enc == "gzip" || enc == "gz";
    if (!gz && enc != "raw") *want = 0;
    *have = countBytes(dpath, off, gz ? 2 : 0, &ok);
    if (!ok) return "the gzip stream ends before its end";
    if (*want && *have < *want)
      return std::to_string(*have) + " of " + std::to_string(*want) + " bytes of data written";
  } else {
    *have = countBytes(path, 0, 0, &ok);
    if (*have == 0) return "the file is empty";
  }
  return std::string();
}

// Runs write(tmp) and moves the result over name (see ITKFileIO.h): the
// library's one atomic writer (AtomicFile.h, writeStaged) with ITK's
// messages, the check of what ITK wrote (incomplete) and, for a header with
// a separate data file, the header pointed at the data file's final name.
void atomicWrite(const std::string& name, const std::function<void(const std::string&)>& write) {
  const std::string ext = splitPath(detail::stagedTarget(name)).ext;
  auto cannotSave = [&](const std::string& why) {
    return PyCAException(__FILE__, __LINE__, "ITK File Writer Exception: cannot save '" + name + "': " + why);
  };
  try {
    detail::writeStaged(
        name, ext,
        [&](const std::string& tmp) {
          try {
            write(tmp);
          } catch (const PyCAException& e) {
            // ITK's own write errors (MetaImage, NRRD): say why when the disk
            // is full or the file size limit was reached
            struct stat ts;
            const uint64_t have = ::stat(tmp.c_str(), &ts) == 0 ? uint64_t(ts.st_size) : 0;
            const std::string cause = writeCause(splitPath(tmp).dir, 0, have);
            if (cause == "short write") throw;
            throw PyCAException(__FILE__, __LINE__,
                                "ITK File Writer Exception: cannot save '" + name + "': " + cause, &e);
          }
        },
        [&](const detail::StagedFiles& f) {
          uint64_t want = 0, have = 0;
          const std::string bad = incomplete(f.tmp, f.ext, f.dir, &want, &have);
          if (!bad.empty())
            throw cannotSave(writeCause(f.dir, want, have) + ": the save was incomplete (" + bad + ")");
          const std::string le = lower(f.ext);
          if (!f.companions.empty() && (le == ".mhd" || le == ".nhdr")) fixHeaderRefs(f.tmp, f.tmpStem, f.stem);
        });
  } catch (const detail::StagedWriteError& e) {
    switch (e.kind) {
      case detail::StagedWriteError::NoFolder:
        throw cannotSave("the folder does not exist");
      case detail::StagedWriteError::IsDirectory:
        throw cannotSave("it is a directory");
      case detail::StagedWriteError::NoFile:
        throw cannotSave("the writer produced no file");
      case detail::StagedWriteError::Open:
        throw PyCAException(__FILE__, __LINE__,
                            "cannot open '" + e.path + "' to flush it: " + std::strerror(e.err));
      case detail::StagedWriteError::Sync:
        throw PyCAException(__FILE__, __LINE__, "cannot flush '" + e.path + "': " + std::strerror(e.err));
      case detail::StagedWriteError::Rename:
        throw PyCAException(__FILE__, __LINE__, "cannot rename to '" + e.path + "': " + std::strerror(e.err));
    }
    throw;
  }
}

// A file whose content another reader recognises than the one its extension
// names (a PNG called .nii) is refused rather than read as something else.
void checkIoMatchesExtension(const char* who, const std::string& name, const itk::ImageIOBase* io) {
  static const struct { const char* ext; const char* io; } kExpected[] = {
      {".nii", "NiftiImageIO"}, {".nii.gz", "NiftiImageIO"}, {".hdr", "NiftiImageIO"},
      {".img", "NiftiImageIO"}, {".mha", "MetaImageIO"},     {".mhd", "MetaImageIO"},
      {".nrrd", "NrrdImageIO"}, {".nhdr", "NrrdImageIO"},    {".vtk", "VTKImageIO"},
      {".png", "PNGImageIO"}};
  const std::string ext = lower(splitPath(name).ext);
  for (const auto& e : kExpected) {
    if (ext == e.ext && io && std::string(io->GetNameOfClass()) != e.io)
      fail(who, name, std::string("its content is not what the extension says (read by ") +
                          io->GetNameOfClass() + ", expected " + e.io + ")");
  }
}

// ---- conversions ----

GridInfo gridOf(const itk::ImageBase<3>* img) {
  const auto size = img->GetLargestPossibleRegion().GetSize();
  const auto sp = img->GetSpacing();
  const auto org = img->GetOrigin();
  return GridInfo(Vec3Di(int(size[0]), int(size[1]), int(size[2])),
                  Vec3Df(float(sp[0]), float(sp[1]), float(sp[2])),
                  Vec3Df(float(org[0]), float(org[1]), float(org[2])));
}

template <class TImage>
void setGeometry(TImage* img, const GridInfo& g) {
  typename TImage::SizeType size;
  typename TImage::SpacingType sp;
  typename TImage::PointType org;
  for (int d = 0; d < 3; ++d) {
    size[d] = itk::SizeValueType(d == 0 ? g.size().x : (d == 1 ? g.size().y : g.size().z));
    sp[d] = d == 0 ? g.spacing().x : (d == 1 ? g.spacing().y : g.spacing().z);
    org[d] = d == 0 ? g.origin().x : (d == 1 ? g.origin().y : g.origin().z);
  }
  img->SetRegions(typename TImage::RegionType(size));
  img->SetSpacing(sp);
  img->SetOrigin(org);
}

void checkSavable(const GridInfo& g, const char* name) {
  if (g.nVox() == 0)
    throw PyCAException(__FILE__, __LINE__,
                        std::string("ITK File Writer Exception: cannot save '") + name +
                            "': the grid has no voxels");
}

// Reads the header (number of components checked), the NIfTI completeness,
// then the voxels; every ITK failure becomes "ITK File Reader Exception".
template <class TImage>
typename TImage::Pointer readFile(const char* who, const std::string& name, bool vector,
                                  GridInfo& grid, unsigned* nComp = nullptr) {
  registerFactories();
  checkInput(who, name);
  checkMetaImagePair(who, name);
  const NiftiHeader hdr = readNiftiHeader(who, name);
  checkNiftiTransform(who, name, hdr);
  auto reader = itk::ImageFileReader<TImage>::New();
  reader->SetFileName(name);
  try {
    reader->UpdateOutputInformation();
  } catch (const itk::ExceptionObject& e) {
    throw PyCAException(__FILE__, __LINE__, "ITK File Reader Exception", &e);
  }
  checkIoMatchesExtension(who, name, reader->GetImageIO());
  const unsigned n = reader->GetImageIO()->GetNumberOfComponents();
  if (vector && n != 2 && n != 3)
    fail(who, name, std::to_string(n) + " component(s) per pixel; a field file holds 2- or 3-vectors");
  if (!vector && n != 1)
    fail(who, name, std::to_string(n) + " components per pixel; an image file holds scalars (use LoadField)");
  if (nComp) *nComp = n;
  checkNiftiComplete(who, name, hdr);
  try {
    reader->Update();
  } catch (const itk::ExceptionObject& e) {
    throw PyCAException(__FILE__, __LINE__, "ITK File Reader Exception", &e);
  }
  typename TImage::Pointer img = reader->GetOutput();
  img->DisconnectPipeline();
  grid = gridOf(img);
  if (reader->GetImageIO()->GetNumberOfDimensions() == 2) niftiRestoreZ(hdr, grid);
  return img;
}

// Host copies of device data; host data are used in place.
struct HostFloats {
  std::vector<float> copy;
  const float* ptr = nullptr;
  HostFloats(const float* p, MemoryType t, size_t n) {
    if (t == MEM_DEVICE) {
      copy.resize(n);
      if (n) CopyMemory(copy.data(), MEM_HOST, p, t, n * sizeof(float));
      ptr = copy.data();
    } else {
      ptr = p;
    }
  }
};

void writeScalar(const float* host, const GridInfo& g, const char* name, bool useCompression) {
  registerFactories();
  checkSavable(g, name);
  auto img = ScalarImage::New();
  setGeometry(img.GetPointer(), g);
  img->GetPixelContainer()->SetImportPointer(const_cast<float*>(host), g.nVox(), false);
  atomicWrite(name, [&](const std::string& tmp) {
    auto writer = itk::ImageFileWriter<ScalarImage>::New();
    writer->SetFileName(tmp);
    writer->SetInput(img);
    writer->SetUseCompression(useCompression);
    try {
      writer->Update();
    } catch (const itk::ExceptionObject& e) {
      throw PyCAException(__FILE__, __LINE__, "ITK File Writer Exception", &e);
    }
  });
}

}  // namespace

void ITKFileIO::ReadHeader(GridInfo& grid, ComponentType& type, const char* name) {
  registerFactories();
  checkInput("ITKFileIO::ReadHeader", name);
  checkNiftiTransform("ITKFileIO::ReadHeader", name, readNiftiHeader("ITKFileIO::ReadHeader", name));
  auto reader = itk::ImageFileReader<ScalarImage>::New();
  reader->SetFileName(name);
  try {
    reader->UpdateOutputInformation();
  } catch (const itk::ExceptionObject& e) {
    throw PyCAException(__FILE__, __LINE__, "ITK File Reader Exception", &e);
  }
  checkIoMatchesExtension("ITKFileIO::ReadHeader", name, reader->GetImageIO());
  grid = gridOf(reader->GetOutput());
  if (reader->GetImageIO()->GetNumberOfDimensions() == 2)
    niftiRestoreZ(readNiftiHeader("ITKFileIO::ReadHeader", name), grid);
  type = ComponentType(int(reader->GetImageIO()->GetComponentType()));
}

void ITKFileIO::LoadImage(Image3D& image, const char* name) {
  GridInfo g;
  ScalarImage::Pointer img = readFile<ScalarImage>("ITKFileIO::LoadImage", name, false, g);
  image.resize(g);
  if (g.nVox())
    CopyMemory(image.get(), image.memType(), img->GetBufferPointer(), MEM_HOST, g.nVox() * sizeof(float));
}

void ITKFileIO::LoadField(Field3D& field, const char* name) {
  unsigned n = 0;
  GridInfo g;
  VectorImage::Pointer img = readFile<VectorImage>("ITKFileIO::LoadField", name, true, g, &n);
  const size_t nv = g.nVox();
  std::vector<float> comp[3];
  const float* buf = img->GetBufferPointer();
  for (int d = 0; d < 3; ++d) {
    comp[d].assign(nv, 0.f);
    if (unsigned(d) < n)
      for (size_t i = 0; i < nv; ++i) comp[d][i] = buf[i * n + d];
  }
  img = nullptr;
  field.resize(g);
  for (int d = 0; d < 3; ++d)
    if (nv) CopyMemory(field.getComponent(d), field.memType(), comp[d].data(), MEM_HOST, nv * sizeof(float));
}

void ITKFileIO::LoadFieldComponents(Field3D& field, const char* prefix) {
  static const char* suffix[3] = {"_x.mha", "_y.mha", "_z.mha"};
  ScalarImage::Pointer img[3];
  GridInfo g, gd;
  for (int d = 0; d < 3; ++d) {
    const std::string name = std::string(prefix) + suffix[d];
    img[d] = readFile<ScalarImage>("ITKFileIO::LoadFieldComponents", name, false, d == 0 ? g : gd);
    if (d > 0 && gd != g)
      fail("ITKFileIO::LoadFieldComponents", name,
           "its grid (" + gd.toString() + ") differs from " + prefix + "_x.mha's (" + g.toString() + ")");
  }
  field.resize(g);
  for (int d = 0; d < 3; ++d)
    if (g.nVox())
      CopyMemory(field.getComponent(d), field.memType(), img[d]->GetBufferPointer(), MEM_HOST,
                 g.nVox() * sizeof(float));
}

void ITKFileIO::SaveImage(const Image3D& image, const char* name, bool useCompression) {
  HostFloats host(image.get(), image.memType(), image.nVox());
  writeScalar(host.ptr, image.grid(), name, useCompression);
}

void ITKFileIO::SaveField(const Field3D& field, const char* name, bool useCompression) {
  registerFactories();
  const GridInfo& g = field.grid();
  checkSavable(g, name);
  const size_t nv = g.nVox();
  std::vector<float> inter(3 * nv);
  for (int d = 0; d < 3; ++d) {
    HostFloats c(field.getComponent(d), field.memType(), nv);
    for (size_t i = 0; i < nv; ++i) inter[3 * i + d] = c.ptr[i];
  }
  auto img = VectorImage::New();
  setGeometry(img.GetPointer(), g);
  img->SetVectorLength(3);
  img->GetPixelContainer()->SetImportPointer(inter.data(), inter.size(), false);
  atomicWrite(name, [&](const std::string& tmp) {
    auto writer = itk::ImageFileWriter<VectorImage>::New();
    writer->SetFileName(tmp);
    writer->SetInput(img);
    writer->SetUseCompression(useCompression);
    try {
      writer->Update();
    } catch (const itk::ExceptionObject& e) {
      throw PyCAException(__FILE__, __LINE__, "ITK File Writer Exception", &e);
    }
  });
}

void ITKFileIO::SaveFieldComponents(const Field3D& field, const char* prefix, bool useCompression) {
  static const char* suffix[3] = {"_x.mha", "_y.mha", "_z.mha"};
  for (int d = 0; d < 3; ++d) {
    HostFloats c(field.getComponent(d), field.memType(), field.nVox());
    writeScalar(c.ptr, field.grid(), (std::string(prefix) + suffix[d]).c_str(), useCompression);
  }
}

}  // namespace PyCA

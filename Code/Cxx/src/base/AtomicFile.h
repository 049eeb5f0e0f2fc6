// AtomicFile.h -- the library's one atomic writer: whole-file writes that
// survive a kill at any moment. The content goes to a temporary file beside
// the target (<stem>.tmp-<pid>-<n><ext>: unique per process and call, the
// extension kept so that a writer that picks the format by it still does),
// is checked, flushed to disk (fsync), renamed over the target and the
// folder is synced. A reader (or a process killed mid-write) sees the
// earlier file or the complete new one, never a part. writeStaged is the
// general form (any writer, a check of what it wrote, formats with a
// separate data file); writeFileAtomically writes a string with it. Used by
// every save of the library: Aff3D::writePLUNCStyle, the FFTW wisdom file
// (writeFileAtomically) and the image writers of ITKFileIO.cxx (writeStaged
// around ITK's writers). PyCA.Common.atomic is the same scheme in Python.
#ifndef __PYCA_ATOMIC_FILE_H__
#define __PYCA_ATOMIC_FILE_H__

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace PyCA {
namespace detail {

/// Why writeStaged failed outside the caller's writer and check (their own
/// exceptions propagate as they are); each caller words its message.
struct StagedWriteError : std::runtime_error {
  enum Kind {
    NoFolder,     ///< the target's folder does not exist (path: the temporary that
                  ///< cannot be made there; err ENOENT or ENOTDIR)
    IsDirectory,  ///< the target is a folder (path: the target)
    NoFile,       ///< the writer made no file at the temporary name (path: it)
    Open,         ///< a written file cannot be opened to flush it (path: it; err)
    Sync,         ///< a written file cannot be flushed to disk (path: it; err)
    Rename        ///< a rename to a final name failed (path: that name; err)
  };
  StagedWriteError(Kind k, const std::string& p, int e);
  Kind kind;
  std::string path;
  int err;  ///< the errno (0 when none applies)
};

/// The files of a staged write, as the check sees them.
struct StagedFiles {
  std::string target;   ///< the file replaced (a symbolic link's target)
  std::string dir;      ///< its folder
  std::string stem;     ///< its name without ext
  std::string ext;      ///< the extension kept at the end of the temporary names
  std::string tmpStem;  ///< stem + ".tmp-<pid>-<n>"
  std::string tmp;      ///< dir + "/" + tmpStem + ext: the file the writer makes
  std::vector<std::string> companions;  ///< other files the writer made: names in dir
                                        ///< that start with tmpStem + "."
};

/// The file a write of path replaces: path, or the target of a symbolic link.
std::string stagedTarget(const std::string& path);

/// Writes path atomically: write(tmp) makes the file tmp (see StagedFiles;
/// ext, a suffix of the target's name or "", stays at the end of the
/// temporary names) and, for formats with a separate data file, may make
/// companions beside it (tmpStem + ".raw", ...). Then check(files), when
/// given, refuses what came out wrong by throwing (and may still edit the
/// files: a header pointed at its data file's final name). Every file is
/// then flushed (fsync; an earlier target's permissions kept), the
/// companions are renamed to their final names (stem + their suffix) first
/// and tmp over the target last, and the folder is synced. On any failure
/// every temporary is removed and the target is untouched (a kill leaves at
/// most a *.tmp-<pid>-<n>* file); StagedWriteError or the exception of
/// write / check propagates.
void writeStaged(const std::string& path, const std::string& ext,
                 const std::function<void(const std::string& tmp)>& write,
                 const std::function<void(const StagedFiles& files)>& check = nullptr);

/// Writes content to path atomically (writeStaged). Returns false (target
/// untouched, the temporary removed) when the folder cannot be written or a
/// write fails or comes out short (the temporary is checked before the
/// rename); sets *why to the reason and *err to the errno when given (EIO:
/// short write). Never throws.
bool writeFileAtomically(const std::string& path, const std::string& content, std::string* why = nullptr,
                         int* err = nullptr);

}  // namespace detail
}  // namespace PyCA

#endif

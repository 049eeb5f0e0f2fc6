// AtomicFile.h -- whole-file writes that survive a kill at any moment: the
// content goes to a temporary file beside the target (unique per process and
// call), is flushed to disk (fsync), renamed over the target and the folder
// is synced. A reader (or a process killed mid-write) sees the earlier file
// or the complete new one, never a part. Used by every text/whole-buffer
// save of the library (Aff3D::writePLUNCStyle, the FFTW wisdom file); the
// image writers (ITKFileIO.cxx) apply the same steps around ITK's writers.
#ifndef __PYCA_ATOMIC_FILE_H__
#define __PYCA_ATOMIC_FILE_H__

#include <string>

namespace PyCA {
namespace detail {

/// Writes content to path atomically. Returns false (target untouched, the
/// temporary removed) when the folder cannot be written or a write fails
/// or comes out short (the temporary is checked before the rename); sets
/// *why to the reason and *err to the errno when given (EIO: short write).
bool writeFileAtomically(const std::string& path, const std::string& content, std::string* why = nullptr,
                         int* err = nullptr);

}  // namespace detail
}  // namespace PyCA

#endif

// ITKFileIO.h -- image and field files through ITK (builds with USE_ITK=ON).
//
// The class is declared in every build; its definitions exist only where
// PyCA was built with ITK (compile definition ENABLE_ITK, package variable
// ENABLE_ITK TRUE). This header needs no ITK headers: a program using it
// links PyCA::PyCA only.
#ifndef __PYCA_ITK_FILE_IO_H__
#define __PYCA_ITK_FILE_IO_H__

#include "GridInfo.h"
#include "Aff3D.h"

namespace PyCA {

class Image3D;
class Field3D;

/// Static loaders and savers for any format ITK reads or writes (chosen by
/// the file name: .nii, .nii.gz, .mha, .mhd, .nrrd, .vtk, ...).
///
/// * Loads resize the target and set its size, spacing and origin; voxels
///   of any real component type are converted to float (a C cast); direction
///   cosines are ignored (as in the legacy). A failed load throws and leaves
///   the target unchanged (the file is read completely before the target is
///   touched).
/// * Saves write float32 3-D files (a 2-D image keeps its z spacing and
///   origin), identity direction. They are atomic: the data go to a
///   temporary file beside the target ("name.tmp-<pid>-<n>.<ext>"), which is
///   flushed (fsync) and renamed over the target, so a failed or interrupted
///   save never leaves a half-written file where a good one stood; on failure
///   the temporaries are removed. A .mhd/.nhdr header and its data file are
///   both written as temporaries and renamed data first, then header.
/// * Errors throw PyCAException naming the file: "ITK File Reader Exception"
///   / "ITK File Writer Exception" with ITK's message as the cause, or a
///   message of our own for a missing, empty, directory, truncated NIfTI or
///   wrong-kind (scalar vs vector) file.
class ITKFileIO {
 public:
  /// ITK's pixel component type codes: the values of itk::IOComponentEnum
  /// (ITK 5; checked at compile time), as ReadHeader reports them.
  enum ComponentType {
    UNKNOWNCOMPONENTTYPE = 0, UCHAR, CHAR, USHORT, SHORT, UINT, INT, ULONG, LONG,
    LONGLONG, ULONGLONG, FLOAT, DOUBLE, LDOUBLE
  };

  /// Fills grid (size, spacing, origin; 2-D files: z size 1, spacing 1,
  /// origin 0) and the file's component type without reading the voxels.
  static void ReadHeader(GridInfo& grid, ComponentType& type, const char* name);
  /// Loads a scalar image (a file with several components per pixel throws).
  static void LoadImage(Image3D& image, const char* name);
  /// Loads a 3-vector image (2-vectors: z component 0) into a field.
  static void LoadField(Field3D& field, const char* name);
  /// Loads prefix_x.mha, prefix_y.mha, prefix_z.mha (same grid) into a field.
  static void LoadFieldComponents(Field3D& field, const char* prefix);
  /// Saves an image (any memory type) as float32.
  static void SaveImage(const Image3D& image, const char* name, bool useCompression = false);
  /// Saves a field as a 3-vector float32 image.
  static void SaveField(const Field3D& field, const char* name, bool useCompression = false);
  /// Saves prefix_x.mha, prefix_y.mha, prefix_z.mha (each atomic).
  static void SaveFieldComponents(const Field3D& field, const char* prefix,
                                  bool useCompression = false);
};

}  // namespace PyCA

#endif

// io.i -- _ITKFileIO (builds with ITK only).

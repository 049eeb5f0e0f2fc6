// base.i -- memory managers, managed containers, CUDA utilities.

%shared_ptr(PyCA::MemoryManager)
// None for a MemoryManager& is a TypeError, as for the other reference
// arguments (see Core.i); the shared_ptr typemap would say ValueError.
%typemap(in) PyCA::MemoryManager & (void *argp = 0, int res = 0) {
  res = SWIG_ConvertPtr($input, &argp, $descriptor(std::shared_ptr< PyCA::MemoryManager > *), %convertptr_flags);
  if (!SWIG_IsOK(res)) {
    %argument_fail(res, "$type", $symname, $argnum);
  }
  if (!argp || !reinterpret_cast< std::shared_ptr< PyCA::MemoryManager > * >(argp)->get()) {
    SWIG_exception_fail(SWIG_TypeError, %argnullref_fmt("$type", $symname, $argnum));
  }
  $1 = reinterpret_cast< std::shared_ptr< PyCA::MemoryManager > * >(argp)->get();
}

%ignore PyCA::MemoryManager::getPool;
%ignore PyCA::ThreadMemoryManager::instance;
%ignore PyCA::ThreadMemoryManager::instancePtr;
%rename(instance) PyCA::ThreadMemoryManager::instanceShared;
%ignore PyCA::MemPool;
%ignore PyCA::MEMPOOL_ALIGN_ELEMS;

PYCA_KEEPALIVE(PyCA::MemoryManager::grid)

%include "MemoryManager.h"
%include "ManagedImage3D.h"
%include "ManagedField3D.h"

%extend PyCA::MemoryManager {
  std::string __str__() const {
    std::ostringstream os;
    PyCA::MemoryManagerStats s = $self->stats();
    os << "MemoryManager: " << PyCA::MemTypeName($self->memType()) << ", "
       << $self->grid().toString() << ", " << s.numPools << " pools (" << s.poolsInUse
       << " in use, peak " << s.peakInUse << "), " << s.bytesHeld << " bytes held";
    return os.str();
  }
  %pythoncode %{
    __repr__ = __str__
  %}
}

%include "CudaUtils.h"

// The CPU back end's team size (an extension). The parser and the forcing
// hook are for the C++ tests.
%ignore PyCA::detail::CPUTimes;
%ignore PyCA::detail::parseProcStat;
%ignore PyCA::detail::freeCPUThreads;
%ignore PyCA::detail::forceCPUThreads;
%include "CPUThreads.h"

#include "kindle/shared_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kindle/error.h"

namespace kindle {
namespace {

// ctx holds the descriptor; the mapping and the descriptor go together.
void shm_free(void* ctx, void* data, size_t nbytes) {
  if (data && nbytes) munmap(data, nbytes);
  close(static_cast<int>(reinterpret_cast<intptr_t>(ctx)));
}

DataPtr map_fd(int fd, size_t nbytes) {
  // mmap of 0 bytes is invalid; an empty storage still carries its descriptor.
  void* p = nullptr;
  if (nbytes) {
    p = mmap(nullptr, nbytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    KINDLE_CHECK(p != MAP_FAILED, "shared memory: mmap of ", nbytes, " bytes failed: ", std::strerror(errno));
  }
  return DataPtr{p, shm_free, reinterpret_cast<void*>(intptr_t(fd))};
}

}  // namespace

bool is_shared(const Tensor& t) { return t.impl()->storage()->data_ptr().free_fn == shm_free; }

const Tensor& share_memory_(const Tensor& t) {
  if (is_shared(t)) return t;
  StorageImpl& st = *t.impl()->storage();
  size_t n = st.nbytes();
  int fd = memfd_create("kindle_shm", MFD_CLOEXEC);
  KINDLE_CHECK(fd >= 0, "share_memory_: memfd_create failed: ", std::strerror(errno));
  if (ftruncate(fd, off_t(n)) != 0) {
    int e = errno;
    close(fd);
    KINDLE_CHECK(false, "share_memory_: cannot size shared memory to ", n, " bytes: ", std::strerror(e));
  }
  DataPtr p;
  try {
    p = map_fd(fd, n);
  } catch (...) {
    close(fd);
    throw;
  }
  if (n) std::memcpy(p.data, st.data(), n);
  st.reset_data(p);
  return t;
}

int shared_memory_fd(const Tensor& t) {
  share_memory_(t);
  return static_cast<int>(reinterpret_cast<intptr_t>(t.impl()->storage()->data_ptr().ctx));
}

Tensor tensor_from_shared_fd(int fd, size_t nbytes, DType dtype, IntArrayRef sizes, IntArrayRef strides,
                             int64_t storage_offset) {
  KINDLE_CHECK(sizes.size() == strides.size(), "tensor_from_shared_fd: ", sizes.size(), " sizes but ",
               strides.size(), " strides");
  KINDLE_CHECK(storage_offset >= 0, "tensor_from_shared_fd: negative storage offset ", storage_offset);
  int64_t last = storage_offset;  // the furthest element the geometry touches
  bool empty = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    KINDLE_CHECK(sizes[i] >= 0 && strides[i] >= 0, "tensor_from_shared_fd: bad size/stride at dim ", i);
    if (sizes[i] == 0) empty = true;
    else last += (sizes[i] - 1) * strides[i];
  }
  KINDLE_CHECK(empty || size_t(last + 1) * itemsize(dtype) <= nbytes, "tensor_from_shared_fd: geometry needs ",
               (last + 1) * int64_t(itemsize(dtype)), " bytes but the shared memory holds ", nbytes);
  int own = dup(fd);
  KINDLE_CHECK(own >= 0, "tensor_from_shared_fd: dup failed: ", std::strerror(errno));
  DataPtr p;
  try {
    p = map_fd(own, nbytes);
  } catch (...) {
    close(own);
    throw;
  }
  Storage st(new StorageImpl(p, nbytes, kCPU));
  return Tensor(intrusive_ptr<TensorImpl>::make(st, dtype, sizes, strides, storage_offset));
}

}  // namespace kindle

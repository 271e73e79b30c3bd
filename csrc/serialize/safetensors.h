// The safetensors file format, once for both front ends (kindle::save in C++, kindle.save in
// Python): an 8-byte little-endian header length, a JSON header {name: {dtype, shape,
// data_offsets}, "__metadata__": {str: str}} padded with spaces to 8 bytes, then the tensors'
// bytes. What each language stores in the metadata (the "kindle" tree of nested containers) is
// its own; the container, its validation and its errors are here.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kindle/tensor.h"

namespace kindle::safetensors {

using Named = std::vector<std::pair<std::string, Tensor>>;
using Metadata = std::vector<std::pair<std::string, std::string>>;
// Receives the file's bytes in order; writes all of them or throws.
using Sink = std::function<void(const void* data, size_t n)>;

constexpr uint64_t kMaxHeader = 100ull * 1024 * 1024;  // safetensors' own limit on the JSON header
constexpr size_t kMaxDims = 64;

// The file's safetensors name for a dtype, or nullptr where the format has none (complex128).
const char* format_name(DType d);

// What a save writes, computed before any file is opened (so an object that cannot be saved leaves
// the disk untouched): the header, and the tensors in file order (widest dtypes first, so that with
// the header padded to 8 bytes every tensor starts at a multiple of its element size).
class Plan {
 public:
  // `tensors` in header order; names must be unique and not "__metadata__". ValueError /
  // TypeError (a dtype safetensors cannot store) naming `who` otherwise.
  Plan(Named tensors, const Metadata& metadata, const char* who = "kindle.save");
  const std::string& header() const { return header_; }
  const Named& tensors() const { return tensors_; }  // file order
  // Streams the file: the length, the header, then each tensor's bytes (non-contiguous ones
  // copied one at a time, never the whole file).
  void write(const Sink& sink) const;

 private:
  std::string header_;
  Named tensors_;
};

// Random access to a file's bytes: read_at returns false if the source ends first.
struct Source {
  std::function<bool(uint64_t offset, void* dst, size_t n)> read_at;
  uint64_t size = 0;
  std::string name;  // for messages
};
Source fd_source(int fd, uint64_t base, uint64_t size, std::string name);  // pread at base + offset
Source bytes_source(const std::string& bytes, std::string name);             // (keeps a reference)

// A tensor's bytes (a contiguous copy where it is not contiguous) to a sink; the bytes of a
// contiguous tensor from a source at `offset` (false if the source ends first).
void write_bytes(const Tensor& t, const Sink& sink);
bool read_bytes(const Source& src, uint64_t offset, const Tensor& t);

struct Contents {
  Named tensors;                     // header order
  std::optional<Metadata> metadata;  // the "__metadata__" object, if the file has one
};

// Reads a whole file, validating the header before allocating anything: its length, the JSON, the
// dtypes, shapes and offsets, which must tile the data exactly (no gaps, overlaps or trailing
// bytes). A hostile or truncated file raises ValueError naming the file.
Contents read(const Source& src, uint64_t max_header = kMaxHeader);

}  // namespace kindle::safetensors

// The zip container of torch.save checkpoints and TorchScript archives, once for both front ends.
// Only what those files use: entries stored uncompressed (other entries may exist and are listed,
// but only stored ones can be read), zip64 for big files, and, when writing, entry data aligned to
// 64 bytes by padding the local header's extra field (as PyTorch's writer does, so tensors can be
// mapped in place).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "safetensors.h"  // Source, Sink

namespace kindle::zip {

struct Entry {
  std::string name;
  uint64_t header_offset = 0;  // of the local header
  uint64_t size = 0;           // uncompressed
  uint64_t compressed_size = 0;
  uint16_t method = 0;  // 0: stored
  uint16_t flags = 0;
};

// The central directory of an archive, validated against the file: every entry's local header
// must lie inside the file; an entry's data span is checked when it is read. A damaged or hostile
// archive raises ValueError naming the file.
class Reader {
 public:
  explicit Reader(safetensors::Source src);
  const std::vector<Entry>& entries() const { return entries_; }
  const Entry* find(std::string_view name) const;  // the last entry of that name, as zipfile
  // Where a stored entry's bytes start in the source, after checking its local header (signature,
  // name) and that the bytes lie inside the file. ValueError for compressed or encrypted entries.
  uint64_t data_offset(const Entry& e) const;
  std::string read(const Entry& e) const;                  // a whole (small) entry
  void read_into(const Entry& e, void* dst) const;         // e.size bytes
  const safetensors::Source& source() const { return src_; }

 private:
  [[noreturn]] void fail(const std::string& what) const;
  safetensors::Source src_;
  std::vector<Entry> entries_;
  std::unordered_map<std::string, size_t> index_;
};

// Writes an archive as a stream: entries in the order added, each stored with its CRC-32, data
// starting at a multiple of 64 bytes; zip64 records only where a size or offset needs them.
class Writer {
 public:
  explicit Writer(safetensors::Sink sink) : sink_(std::move(sink)) {}
  void add(const std::string& name, const void* data, uint64_t size);
  void add(const std::string& name, std::string_view text) { add(name, text.data(), text.size()); }
  void finish();  // the central directory; nothing may be added after

 private:
  struct Written {
    std::string name;
    uint64_t offset, size;
    uint32_t crc;
  };
  void put(const void* p, size_t n);
  safetensors::Sink sink_;
  uint64_t pos_ = 0;
  std::vector<Written> written_;
  bool finished_ = false;
};

uint32_t crc32(const void* data, size_t n, uint32_t crc = 0);

}  // namespace kindle::zip

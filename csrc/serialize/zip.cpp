// The zip container (see zip.h). Record layouts: PKWARE's APPNOTE.TXT, sections 4.3.7 (local
// header), 4.3.12 (central directory), 4.3.14-16 (zip64 end records) and 4.5.3 (zip64 extra).
#include "zip.h"

#include <algorithm>
#include <array>
#include <cstring>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kindle/error.h"

namespace kindle::zip {

namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50;
constexpr uint32_t kEnd64Sig = 0x06064b50, kLocator64Sig = 0x07064b50;
constexpr uint64_t kMax32 = 0xffffffffu;
constexpr uint64_t kAlign = 64;
constexpr size_t kLocalSize = 30, kCentralSize = 46, kEndSize = 22, kLocator64Size = 20, kEnd64Size = 56;

uint64_t le(const unsigned char* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void put_le(std::string& out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
}

// CRC-32 (IEEE 802.3, reflected 0xEDB88320) by slicing eight bytes at a time.
struct CrcTables {
  std::array<std::array<uint32_t, 256>, 8> t{};
  CrcTables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  }
};

}  // namespace

namespace {

// The raw CRC state (not inverted) over n bytes, eight at a time through the tables.
uint32_t crc_tables(uint32_t c, const unsigned char* p, size_t n) {
  static const CrcTables tables;
  const auto& t = tables.t;
  for (; n >= 8; n -= 8, p += 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^ t[3][hi & 0xff] ^
        t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
  }
  while (n--) c = t[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__)
// Carry-less multiplication folding (Intel, "Fast CRC Computation for Generic Polynomials Using
// PCLMULQDQ", 2009), in the reflected domain: four 16-byte lanes are folded 64 bytes forward per
// step, then into one lane, then reduced to 32 bits by Barrett reduction. The constants are
// x^k mod P for the fold distances (shifted left one bit, as reflected products come out), and
// floor(x^64 / P) and P for the reduction. Five to ten times the tables' speed: a checkpoint's
// CRC costs less than writing it. n >= 64 and a multiple of 16.
#define KINDLE_PCLMUL __attribute__((target("pclmul,sse4.1")))
KINDLE_PCLMUL inline __m128i fold(__m128i x, __m128i k) {  // x.lo * k.lo ^ x.hi * k.hi
  return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

KINDLE_PCLMUL uint32_t crc_pclmul(uint32_t c, const unsigned char* p, size_t n) {
  const __m128i k1k2 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);  // 512-bit fold
  const __m128i k3k4 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);  // 128-bit fold
  const __m128i k5 = _mm_set_epi64x(0, 0x163cd6124);
  const __m128i poly = _mm_set_epi64x(0x1f7011641, 0x1db710641);  // (mu, P')
  const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
  auto load = [](const unsigned char* q) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q)); };
  __m128i x0 = _mm_xor_si128(load(p), _mm_cvtsi32_si128(int(c)));
  __m128i x1 = load(p + 16), x2 = load(p + 32), x3 = load(p + 48);
  p += 64;
  n -= 64;
  for (; n >= 64; n -= 64, p += 64) {
    x0 = _mm_xor_si128(fold(x0, k1k2), load(p));
    x1 = _mm_xor_si128(fold(x1, k1k2), load(p + 16));
    x2 = _mm_xor_si128(fold(x2, k1k2), load(p + 32));
    x3 = _mm_xor_si128(fold(x3, k1k2), load(p + 48));
  }
  __m128i x = _mm_xor_si128(fold(x0, k3k4), x1);
  x = _mm_xor_si128(fold(x, k3k4), x2);
  x = _mm_xor_si128(fold(x, k3k4), x3);
  for (; n >= 16; n -= 16, p += 16) x = _mm_xor_si128(fold(x, k3k4), load(p));
  // 128 -> 64 bits (appending the 32 zero bits a CRC implies), then 64 -> 32.
  x = _mm_xor_si128(_mm_clmulepi64_si128(k3k4, x, 0x01), _mm_srli_si128(x, 8));
  x = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x, mask32), k5, 0x00), _mm_srli_si128(x, 4));
  // Barrett reduction.
  __m128i t = _mm_clmulepi64_si128(_mm_and_si128(x, mask32), poly, 0x10);
  t = _mm_clmulepi64_si128(_mm_and_si128(t, mask32), poly, 0x00);
  return uint32_t(_mm_extract_epi32(_mm_xor_si128(x, t), 1));
}
#undef KINDLE_PCLMUL
#endif

}  // namespace

uint32_t crc32(const void* data, size_t n, uint32_t crc) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
#if defined(__x86_64__)
  static const bool pclmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
  if (pclmul && n >= 64) {
    const size_t body = n & ~size_t(15);
    c = crc_pclmul(c, p, body);
    p += body;
    n -= body;
  }
#endif
  return ~crc_tables(c, p, n);
}

// ---------------------------------------------------------------------------------------------
// reading
// ---------------------------------------------------------------------------------------------

void Reader::fail(const std::string& what) const {
  throw ValueError("kindle.load: " + src_.name + ": not a readable zip archive: " + what);
}

Reader::Reader(safetensors::Source src) : src_(std::move(src)) {
  const uint64_t size = src_.size;
  if (size < kEndSize) fail("the file is too short (" + std::to_string(size) + " bytes)");
  // The end record sits in the last 22 + 65535 bytes (its comment is at most 65535 bytes).
  const uint64_t tail_len = std::min<uint64_t>(size, kEndSize + 0xffff);
  std::string tail(tail_len, '\0');
  if (!src_.read_at(size - tail_len, tail.data(), tail_len)) fail("cannot read its end");
  const auto* t = reinterpret_cast<const unsigned char*>(tail.data());
  int64_t end = -1;
  for (int64_t i = int64_t(tail_len - kEndSize); i >= 0; --i)
    if (le(t + i, 4) == kEndSig && uint64_t(i) + kEndSize + le(t + i + 20, 2) <= tail_len) {
      end = i;
      break;
    }
  if (end < 0) fail("no end-of-central-directory record");
  const unsigned char* e = t + end;
  uint64_t count = le(e + 10, 2), cd_size = le(e + 12, 4), cd_offset = le(e + 16, 4);
  const uint64_t end_pos = size - tail_len + uint64_t(end);
  if (count == 0xffff || cd_size == kMax32 || cd_offset == kMax32) {  // zip64: the locator precedes
    unsigned char loc[kLocator64Size], rec[kEnd64Size];
    if (end_pos < kLocator64Size || !src_.read_at(end_pos - kLocator64Size, loc, kLocator64Size) ||
        le(loc, 4) != kLocator64Sig)
      fail("a zip64 archive without its zip64 end locator");
    const uint64_t rec_pos = le(loc + 8, 8);
    if (rec_pos > end_pos || end_pos - rec_pos < kEnd64Size || !src_.read_at(rec_pos, rec, kEnd64Size) ||
        le(rec, 4) != kEnd64Sig)
      fail("the zip64 end record is missing or misplaced");
    count = le(rec + 32, 8);
    cd_size = le(rec + 40, 8);
    cd_offset = le(rec + 48, 8);
  }
  if (cd_offset > end_pos || cd_size > end_pos - cd_offset)
    fail("the central directory (" + std::to_string(cd_size) + " bytes at " + std::to_string(cd_offset) +
         ") lies outside the file");
  if (count > cd_size / kCentralSize) fail(std::to_string(count) + " entries cannot fit the central directory");
  std::string cd(cd_size, '\0');
  if (cd_size && !src_.read_at(cd_offset, cd.data(), cd_size)) fail("cannot read the central directory");
  const auto* c = reinterpret_cast<const unsigned char*>(cd.data());
  uint64_t pos = 0;
  entries_.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    if (cd_size - pos < kCentralSize || le(c + pos, 4) != kCentralSig)
      fail("central directory entry " + std::to_string(i) + " is damaged");
    const unsigned char* h = c + pos;
    const uint64_t name_len = le(h + 28, 2), extra_len = le(h + 30, 2), comment_len = le(h + 32, 2);
    if (cd_size - pos - kCentralSize < name_len + extra_len + comment_len)
      fail("central directory entry " + std::to_string(i) + " runs past the directory");
    Entry en;
    en.flags = uint16_t(le(h + 8, 2));
    en.method = uint16_t(le(h + 10, 2));
    en.compressed_size = le(h + 20, 4);
    en.size = le(h + 24, 4);
    en.header_offset = le(h + 42, 4);
    en.name.assign(reinterpret_cast<const char*>(h + kCentralSize), name_len);
    // zip64 extra: the 8-byte values of exactly the fields saturated above, in this order.
    const unsigned char* x = h + kCentralSize + name_len;
    for (uint64_t k = 0; k + 4 <= extra_len;) {
      const uint64_t id = le(x + k, 2), len = le(x + k + 2, 2);
      if (k + 4 + len > extra_len) fail("entry '" + en.name + "' has a damaged extra field");
      if (id == 1) {
        uint64_t q = k + 4;
        for (uint64_t* f : {&en.size, &en.compressed_size, &en.header_offset})
          if (*f == kMax32) {
            if (q + 8 > k + 4 + len) fail("entry '" + en.name + "' has a short zip64 extra field");
            *f = le(x + q, 8);
            q += 8;
          }
      }
      k += 4 + len;
    }
    if (en.header_offset > cd_offset || cd_offset - en.header_offset < kLocalSize)
      fail("entry '" + en.name + "' starts outside the file's entries");
    pos += kCentralSize + name_len + extra_len + comment_len;
    index_[en.name] = entries_.size();
    entries_.push_back(std::move(en));
  }
}

const Entry* Reader::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &entries_[it->second];
}

uint64_t Reader::data_offset(const Entry& e) const {
  if (e.method != 0 || (e.flags & 1))
    fail("entry '" + e.name + "' is compressed or encrypted; checkpoints store their entries as is");
  if (e.compressed_size != e.size) fail("entry '" + e.name + "' has inconsistent sizes");
  unsigned char h[kLocalSize];
  if (!src_.read_at(e.header_offset, h, kLocalSize) || le(h, 4) != kLocalSig)
    fail("entry '" + e.name + "' has no valid local header");
  const uint64_t name_len = le(h + 26, 2), extra_len = le(h + 28, 2);
  std::string local(name_len, '\0');
  if (!src_.read_at(e.header_offset + kLocalSize, local.data(), name_len) || local != e.name)
    fail("entry '" + e.name + "' disagrees with its local header's name");
  const uint64_t start = e.header_offset + kLocalSize + name_len + extra_len;
  if (start > src_.size || e.size > src_.size - start)
    fail("entry '" + e.name + "' (" + std::to_string(e.size) + " bytes) runs past the end of the file");
  return start;
}

std::string Reader::read(const Entry& e) const {
  const uint64_t start = data_offset(e);
  std::string out(e.size, '\0');
  if (e.size && !src_.read_at(start, out.data(), e.size)) fail("entry '" + e.name + "' is truncated");
  return out;
}

void Reader::read_into(const Entry& e, void* dst) const {
  const uint64_t start = data_offset(e);
  if (e.size && !src_.read_at(start, dst, e.size)) fail("entry '" + e.name + "' is truncated");
}

// ---------------------------------------------------------------------------------------------
// writing
// ---------------------------------------------------------------------------------------------

void Writer::put(const void* p, size_t n) {
  sink_(p, n);
  pos_ += n;
}

void Writer::add(const std::string& name, const void* data, uint64_t size) {
  KINDLE_CHECK(!finished_, "zip::Writer: add after finish");
  KINDLE_CHECK_VALUE(!name.empty() && name.size() < 0xffff, "zip::Writer: invalid entry name of ", name.size(),
                     " bytes");
  const uint32_t crc = crc32(data, size);
  const bool zip64 = size >= kMax32;
  std::string h;
  put_le(h, kLocalSig, 4);
  put_le(h, zip64 ? 45 : 20, 2);  // version needed
  put_le(h, 0, 2);                // flags
  put_le(h, 0, 2);                // stored
  put_le(h, 0, 2);                // time 00:00
  put_le(h, 0x21, 2);             // date 1980-01-01
  put_le(h, crc, 4);
  put_le(h, zip64 ? kMax32 : size, 4);
  put_le(h, zip64 ? kMax32 : size, 4);
  const uint64_t fixed = kLocalSize + name.size() + (zip64 ? 20 : 0) + 4;  // + the padding field's own header
  const uint64_t pad = (kAlign - (pos_ + fixed) % kAlign) % kAlign;
  put_le(h, name.size(), 2);
  put_le(h, (zip64 ? 20 : 0) + 4 + pad, 2);
  h += name;
  if (zip64) {
    put_le(h, 1, 2);
    put_le(h, 16, 2);
    put_le(h, size, 8);
    put_le(h, size, 8);
  }
  h += "FB";  // PyTorch's name for the padding field
  put_le(h, pad, 2);
  h.append(pad, 'Z');
  written_.push_back({name, pos_, size, crc});
  put(h.data(), h.size());
  const char* p = static_cast<const char*>(data);
  for (uint64_t left = size; left;) {  // in pieces: a sink may take at most a size_t at once
    const size_t n = size_t(std::min<uint64_t>(left, uint64_t(1) << 30));
    put(p, n);
    p += n;
    left -= n;
  }
}

void Writer::finish() {
  KINDLE_CHECK(!finished_, "zip::Writer: finish called twice");
  finished_ = true;
  const uint64_t cd_offset = pos_;
  for (const Written& w : written_) {
    const bool big_size = w.size >= kMax32, big_offset = w.offset >= kMax32;
    std::string extra;
    if (big_size || big_offset) {
      put_le(extra, 1, 2);
      put_le(extra, (big_size ? 16 : 0) + (big_offset ? 8 : 0), 2);
      if (big_size) {
        put_le(extra, w.size, 8);
        put_le(extra, w.size, 8);
      }
      if (big_offset) put_le(extra, w.offset, 8);
    }
    std::string h;
    put_le(h, kCentralSig, 4);
    put_le(h, 45, 2);  // made by: MS-DOS attributes, spec 4.5
    put_le(h, extra.empty() ? 20 : 45, 2);
    put_le(h, 0, 2);
    put_le(h, 0, 2);
    put_le(h, 0, 2);
    put_le(h, 0x21, 2);
    put_le(h, w.crc, 4);
    put_le(h, big_size ? kMax32 : w.size, 4);
    put_le(h, big_size ? kMax32 : w.size, 4);
    put_le(h, w.name.size(), 2);
    put_le(h, extra.size(), 2);
    put_le(h, 0, 2);  // comment
    put_le(h, 0, 2);  // disk
    put_le(h, 0, 2);  // internal attributes
    put_le(h, 0, 4);  // external attributes
    put_le(h, big_offset ? kMax32 : w.offset, 4);
    h += w.name;
    h += extra;
    put(h.data(), h.size());
  }
  const uint64_t cd_size = pos_ - cd_offset, count = written_.size();
  std::string tail;
  const bool zip64 = count >= 0xffff || cd_size >= kMax32 || cd_offset >= kMax32;
  if (zip64) {
    const uint64_t rec_pos = pos_;
    put_le(tail, kEnd64Sig, 4);
    put_le(tail, kEnd64Size - 12, 8);
    put_le(tail, 45, 2);
    put_le(tail, 45, 2);
    put_le(tail, 0, 4);
    put_le(tail, 0, 4);
    put_le(tail, count, 8);
    put_le(tail, count, 8);
    put_le(tail, cd_size, 8);
    put_le(tail, cd_offset, 8);
    put_le(tail, kLocator64Sig, 4);
    put_le(tail, 0, 4);
    put_le(tail, rec_pos, 8);
    put_le(tail, 1, 4);
  }
  put_le(tail, kEndSig, 4);
  put_le(tail, 0, 2);
  put_le(tail, 0, 2);
  put_le(tail, std::min<uint64_t>(count, 0xffff), 2);
  put_le(tail, std::min<uint64_t>(count, 0xffff), 2);
  put_le(tail, std::min<uint64_t>(cd_size, kMax32), 4);
  put_le(tail, std::min<uint64_t>(cd_offset, kMax32), 4);
  put_le(tail, 0, 2);
  put(tail.data(), tail.size());
}

}  // namespace kindle::zip

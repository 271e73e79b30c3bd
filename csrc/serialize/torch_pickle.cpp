// PyTorch's checkpoint archive (see torch_pickle.h): the zip layout around the pickle, and the
// storage types both pickle directions name.
#include "torch_pickle.h"

#include <cstring>
#include <unordered_map>

#include "kindle/factories.h"
#include "zip.h"

namespace kindle::torch_pickle {

namespace {

constexpr std::pair<const char*, DType> kStorages[] = {
    {"DoubleStorage", kFloat64}, {"FloatStorage", kFloat32}, {"HalfStorage", kFloat16},
    {"BFloat16Storage", kBFloat16}, {"LongStorage", kInt64}, {"IntStorage", kInt32},
    {"ShortStorage", kInt16}, {"CharStorage", kInt8}, {"ByteStorage", kUInt8},
    {"BoolStorage", kBool}, {"ComplexFloatStorage", kComplex64}, {"ComplexDoubleStorage", kComplex128}};

}  // namespace

const char* storage_name(DType d) {
  for (auto& [n, dt] : kStorages)
    if (dt == d) return n;
  return nullptr;
}

std::optional<DType> storage_dtype(std::string_view name) {
  for (auto& [n, dt] : kStorages)
    if (name == n) return dt;
  return std::nullopt;
}

std::string latin1_to_utf8(std::string_view bytes) {
  std::string text;
  text.reserve(bytes.size());
  for (unsigned char c : bytes) {
    if (c < 0x80) {
      text += char(c);
    } else {
      text += char(0xc0 | (c >> 6));
      text += char(0x80 | (c & 0x3f));
    }
  }
  return text;
}

bool is_zip(const safetensors::Source& src) {
  unsigned char head[4] = {0, 0, 0, 0};
  return src.size >= 4 && src.read_at(0, head, 4) && head[0] == 'P' && head[1] == 'K' && head[2] == 3 && head[3] == 4;
}

Archive::Archive(const safetensors::Source& src) : name_(src.name), size_(src.size), budget_(src.size) {
  auto zip = std::make_shared<zip::Reader>(src);
  zip_ = zip;
  auto fail = [&](const std::string& what) { throw ValueError("kindle.load: " + name_ + ": " + what); };
  const zip::Entry* pkl = nullptr;
  int found = 0;
  for (const zip::Entry& e : zip->entries()) {
    const size_t slash = e.name.find('/');
    const bool top = slash == std::string::npos ? e.name == "data.pkl"
                                                : e.name.find('/', slash + 1) == std::string::npos &&
                                                      e.name.compare(slash + 1, std::string::npos, "data.pkl") == 0;
    if (top && (!pkl || pkl->name != e.name)) {
      pkl = &e;
      ++found;
    }
  }
  if (found != 1)
    fail("expected one data.pkl in the zip archive, found " + std::to_string(found) + "; is this a torch.save checkpoint?");
  prefix_ = pkl->name.substr(0, pkl->name.size() - std::strlen("data.pkl"));
  if (const zip::Entry* order = zip->find(prefix_ + "byteorder")) {
    const std::string o = zip->read(*order);
    if (o != "little")
      fail("invalid torch checkpoint: byte order '" + o.substr(0, 20) + "' is not supported (only little-endian)");
  }
  for (const zip::Entry& e : zip->entries())
    if (e.name == prefix_ + "constants.pkl" || e.name.rfind(prefix_ + "code/", 0) == 0) script_ = true;
  pickle_ = zip->read(*pkl);
}

Tensor Archive::storage(const std::string& key, DType dtype, int64_t numel) {
  auto fail = [&](const std::string& what) {
    throw ValueError("kindle.load: " + name_ + ": invalid torch checkpoint: " + what);
  };
  if (auto it = storages_.find(key); it != storages_.end()) {
    if (it->second.dtype() != dtype || it->second.numel() != numel)
      fail("storage '" + key + "' is used as both " + dtype_name(it->second.dtype()) + " x " +
           std::to_string(it->second.numel()) + " and " + dtype_name(dtype) + " x " + std::to_string(numel));
    return it->second;
  }
  const auto& zip = *static_cast<const zip::Reader*>(zip_.get());
  const zip::Entry* e = zip.find(prefix_ + "data/" + key);
  if (!e) fail("the archive has no entry '" + prefix_ + "data/" + key + "'");
  const unsigned __int128 need = (unsigned __int128)uint64_t(numel) * itemsize(dtype);
  if (need != e->size)
    fail("storage '" + key + "': " + std::to_string(numel) + " elements of " + dtype_name(dtype) + " need " +
         std::to_string(uint64_t(std::min<unsigned __int128>(need, UINT64_MAX))) + " bytes, the entry holds " +
         std::to_string(e->size));
  if (e->size > budget_) fail("storage '" + key + "': storages add up to more bytes than the file holds");
  budget_ -= e->size;
  const uint64_t at = zip.data_offset(*e);
  Tensor t = empty({numel}, dtype);
  if (!safetensors::read_bytes(zip.source(), at, t)) fail("storage '" + key + "' is truncated");
  storages_.emplace(key, t);
  return t;
}

Loaded read_archive(const safetensors::Source& src) {
  Archive archive(src);
  Loaded out;
  out.script = archive.script();
  out.value = unpickle(archive.pickle(), archive.name(), archive.size(),
                       [&](const std::string& key, DType dtype, int64_t numel, const std::string&) {
                         return archive.storage(key, dtype, numel);
                       });
  return out;
}

void write_archive(const Value& obj, const safetensors::Sink& sink) {
  std::vector<Tensor> storages;
  const std::string data = pickle(obj, storages);  // first: an object that cannot be written leaves the sink untouched
  write_archive(data, storages, sink);
}

void write_archive(const std::string& data, const std::vector<Tensor>& storages, const safetensors::Sink& sink) {
  zip::Writer w(sink);
  w.add("archive/data.pkl", data);
  w.add("archive/.format_version", "1");
  w.add("archive/.storage_alignment", "64");
  w.add("archive/byteorder", "little");
  for (size_t k = 0; k < storages.size(); ++k) {
    const Tensor& t = storages[k];  // contiguous: write_bytes hands over its bytes at once
    KINDLE_CHECK_VALUE(t.is_contiguous(), "kindle.save: storage ", k, " is not contiguous");
    const std::string name = "archive/data/" + std::to_string(k);
    bool added = false;
    safetensors::write_bytes(t, [&](const void* data, size_t n) {
      KINDLE_CHECK(!added, "kindle.save: a storage arrived in pieces");
      w.add(name, data, n);
      added = true;
    });
    if (!added) w.add(name, "", 0);
  }
  w.add("archive/version", "3\n");
  w.finish();
}

}  // namespace kindle::torch_pickle

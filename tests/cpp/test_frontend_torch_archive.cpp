// PyTorch's zip checkpoint in C++ (csrc/serialize/torch_pickle.h, zip.h): round trips of every
// dtype and nested value, the archive's layout (torch's entry names, 64-byte aligned storages,
// CRCs), hostile archives and pickles, and — with KINDLE_TORCH_ARCHIVE_DIR set by
// tests/python/test_torch_archive_cpp.py — files written by PyTorch itself (torch.save, and
// TorchScript module archives as libtorch's torch::save writes them).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <kindle/frontend.h>

#include "serialize/zip.h"

using namespace kindle;
using namespace std::string_literals;  // "\x00"s keeps its NUL bytes

namespace {

struct TmpDir {
  std::string path = ::testing::TempDir() + "kindle_torch_archive_" + std::to_string(::getpid());
  TmpDir() { std::filesystem::create_directories(path); }
  ~TmpDir() { std::filesystem::remove_all(path); }
};
std::string tmp(const std::string& name) {
  static TmpDir dir;
  return dir.path + "/" + name;
}

std::string le(uint64_t v, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s.push_back(char((v >> (8 * i)) & 0xff));
  return s;
}

// An archive with the given data.pkl and storage entries, as torch.save lays it out.
std::string archive(const std::string& pkl, const std::vector<std::pair<std::string, std::string>>& data = {}) {
  std::string out;
  zip::Writer w([&](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); });
  w.add("archive/data.pkl", pkl);
  w.add("archive/byteorder", "little");
  for (auto& [k, bytes] : data) w.add("archive/data/" + k, bytes);
  w.finish();
  return out;
}

std::string str(const std::string& s) { return "X" + le(s.size(), 4) + s; }

// A pickle of _rebuild_tensor_v2 on storage '0' (float32 x numel) with the given geometry.
std::string tensor_pickle(int numel, const std::string& size, const std::string& stride, int offset = 0) {
  return "\x80\x02" "ctorch._utils\n_rebuild_tensor_v2\n((" + str("storage") + "ctorch\nFloatStorage\n" + str("0") +
         str("cpu") + "K" + char(numel) + "tQK" + char(offset) + "(" + size + "t(" + stride + "t\x89}t" "R.";
}

std::string load_error(const std::string& bytes) {
  try {
    load_from_bytes(bytes, "f");
  } catch (const ValueError& e) {
    return e.what();
  }
  return "";
}

void expect_same(const Value& a, const Value& b) {
  ASSERT_EQ(a.kind(), b.kind()) << a.repr() << " vs " << b.repr();
  switch (a.kind()) {
    case Value::Kind::Tensor: {
      const Tensor& x = a.to_tensor();
      const Tensor& y = b.to_tensor();
      ASSERT_EQ(x.dtype(), y.dtype());
      ASSERT_EQ(x.sizes(), y.sizes());
      EXPECT_TRUE(equal(x, y));
      EXPECT_EQ(x.requires_grad(), y.requires_grad());
      break;
    }
    case Value::Kind::Dict:
      ASSERT_EQ(a.entries().size(), b.entries().size());
      for (size_t i = 0; i < a.entries().size(); ++i) {
        EXPECT_TRUE(a.entries()[i].first == b.entries()[i].first);
        expect_same(a.entries()[i].second, b.entries()[i].second);
      }
      break;
    case Value::Kind::List:
    case Value::Kind::Tuple:
    case Value::Kind::Set:
      ASSERT_EQ(a.items().size(), b.items().size());
      for (size_t i = 0; i < a.items().size(); ++i) expect_same(a.items()[i], b.items()[i]);
      break;
    default: EXPECT_TRUE(a == b) << a.repr() << " vs " << b.repr();
  }
}

}  // namespace

TEST(FrontendTorchArchive, EveryDtypeAndNestedValueRoundTrips) {
  manual_seed(0);
  Value::Entries tensors;
  for (DType d : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool,
                  kComplex64, kComplex128}) {
    Tensor t = (randn({3, 4}) * 10).to(d);
    tensors.emplace_back(Value(dtype_name(d)), Value(t));
  }
  Tensor strided = arange(24, kFloat32).reshape({4, 6}).transpose(0, 1);  // its storage, and its strides
  Tensor leaf = randn({2}).requires_grad_(true);
  Value obj = Value::dict({{Value("tensors"), Value::dict(tensors)},
                           {Value("strided"), Value(strided)},
                           {Value("leaf"), Value(leaf)},
                           {Value("empty"), Value(empty({0, 3}))},
                           {Value("scalar"), Value(tensor(2.5))},
                           {Value(int64_t(7)), Value::list({Value(1), Value(int64_t(-300)), Value(int64_t(1) << 40),
                                                             Value(-(int64_t(1) << 62)), Value(0.125), Value(true),
                                                             Value(nullptr), Value("text")})},
                           {Value("tuple"), Value::tuple({Value(1), Value::tuple()})},
                           {Value("set"), Value::set({Value(1), Value("a")})},
                           {Value("dtype"), Value(kBFloat16)}});
  const std::string path = tmp("all.pt");
  save(obj, path, CheckpointFormat::torch);
  Value back = load_value(path);
  expect_same(obj, back);
  EXPECT_EQ(back.at(Value("strided")).to_tensor().strides(), strided.strides());  // as torch.save keeps them
  // Views of one storage are written once and load as views of one storage again.
  Tensor base = arange(8, kFloat32);
  Value views = Value::list({Value(base), Value(base.narrow(0, 2, 3))});
  Value vb = load_from_bytes(save_to_bytes(views, CheckpointFormat::torch));
  vb.items()[0].to_tensor().fill_(-1);
  EXPECT_TRUE(equal(vb.items()[1].to_tensor(), full({3}, -1.0)));
  // The same object twice is written once and comes back as one tensor.
  Value twice = Value::list({Value(leaf), Value(leaf)});
  Value b2 = load_from_bytes(save_to_bytes(twice, CheckpointFormat::torch));
  EXPECT_TRUE(b2.items()[0].to_tensor().is_same(b2.items()[1].to_tensor()));
  // A state dict written as torch's archive loads as one (kindle::load and modules).
  StateDict sd;
  sd.insert("w", randn({3, 3}));
  save(Value::from_state_dict(sd), tmp("sd.pt"), CheckpointFormat::torch);
  EXPECT_TRUE(equal(load(tmp("sd.pt")).find("w")[0], sd.find("w")[0]));
}

TEST(FrontendTorchArchive, LayoutIsTorchs) {
  Value obj = Value::dict({{Value("a"), Value(ones({5}))}, {Value("b"), Value(arange(3, kInt64))}});
  const std::string bytes = save_to_bytes(obj, CheckpointFormat::torch);
  zip::Reader r(safetensors::bytes_source(bytes, "mem"));
  std::vector<std::string> names;
  for (auto& e : r.entries()) names.push_back(e.name);
  EXPECT_EQ(names, (std::vector<std::string>{"archive/data.pkl", "archive/.format_version", "archive/.storage_alignment",
                                             "archive/byteorder", "archive/data/0", "archive/data/1",
                                             "archive/version"}));
  for (auto& e : r.entries()) {
    const uint64_t at = r.data_offset(e);
    if (e.name.rfind("archive/data/", 0) == 0) EXPECT_EQ(at % 64, 0u) << e.name;
  }
  EXPECT_EQ(r.read(*r.find("archive/data/1")).size(), 24u);
  EXPECT_EQ(zip::crc32("123456789", 9), 0xCBF43926u);  // the check value of CRC-32/ISO-HDLC
}

// The folding (PCLMULQDQ) and table paths against CRC-32's bitwise definition: every length up
// to 300 (head, 64-byte body, tail) at every alignment mod 16, longer runs, and chained calls.
TEST(FrontendTorchArchive, Crc32MatchesTheBitwiseDefinition) {
  auto bitwise = [](const unsigned char* p, size_t n, uint32_t crc) {
    uint32_t c = ~crc;
    for (size_t i = 0; i < n; ++i) {
      c ^= p[i];
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    }
    return ~c;
  };
  std::vector<unsigned char> buf(5000);
  uint32_t state = 12345;
  for (auto& b : buf) b = static_cast<unsigned char>((state = state * 1103515245u + 12345u) >> 24);
  for (size_t n = 0; n <= 300; ++n)
    for (size_t off = 0; off < 16; off += (n < 100 ? 1 : 5))
      ASSERT_EQ(zip::crc32(buf.data() + off, n, 7), bitwise(buf.data() + off, n, 7)) << n << " at " << off;
  for (size_t n : {1000u, 4093u, 4960u}) {
    const uint32_t whole = zip::crc32(buf.data() + 3, n);
    EXPECT_EQ(whole, bitwise(buf.data() + 3, n, 0));
    EXPECT_EQ(zip::crc32(buf.data() + 3 + n / 3, n - n / 3, zip::crc32(buf.data() + 3, n / 3)), whole);
  }
}

TEST(FrontendTorchArchive, BytesAndOrderedDicts) {
  Value od = Value::ordered_dict({{Value("w"), Value(ones({2}))}});
  od.set_dict_metadata(Value::dict({{Value(""), Value::dict({{Value("version"), Value(1)}})}}));
  const std::string raw("\0\xff" "ab", 4);
  Value obj = Value::dict({{Value("raw"), Value::bytes(raw)}, {Value("empty"), Value::bytes("")}, {Value("sd"), od}});
  EXPECT_EQ(obj.at(Value("raw")).repr(), "b'\\x00\\xffab'");
  Value back = load_from_bytes(save_to_bytes(obj, CheckpointFormat::torch), "mem");
  EXPECT_EQ(back.at(Value("raw")).to_bytes(), raw);
  EXPECT_EQ(back.at(Value("empty")).to_bytes(), "");
  // C++ reads an OrderedDict as a dict (its _metadata, per-module versions, is Python's business).
  EXPECT_FALSE(back.at(Value("sd")).is_ordered_dict());
  EXPECT_EQ(back.at(Value("sd")).to_state_dict().size(), 1u);
  EXPECT_THROW(save_to_bytes(obj), ValueError);  // safetensors has no bytes
  EXPECT_THROW(od.at(Value("w")).to_bytes(), TypeError);
}

TEST(FrontendTorchArchive, HostileArchivesAreRejected) {
  const std::string floats(16, '\0');  // four float32 zeros
  // A well-formed baseline first.
  Value ok = load_from_bytes(archive(tensor_pickle(4, "K\x02", "K\x01"), {{"0", floats}}), "f");
  EXPECT_EQ(ok.to_tensor().sizes(), (std::vector<int64_t>{2}));
  struct Case {
    std::string bytes, expect;
  };
  const std::vector<Case> cases = {
      {archive("\x80\x02" "cos\nsystem\n" + str("ls") + "\x85R."), "unsupported global: GLOBAL os.system"},
      {archive("\x80\x02" "cbuiltins\neval\n."), "GLOBAL builtins.eval"},
      {archive(tensor_pickle(4, "K\x05", "K\x01"), {{"0", floats}}), "reach element"},
      {archive(tensor_pickle(4, "K\x02", "K\x01", 3), {{"0", floats}}), "reach element"},
      {archive(tensor_pickle(5, "K\x02", "K\x01"), {{"0", floats}}), "need 20 bytes, the entry holds 16"},
      {archive(tensor_pickle(4, "K\x02", "K\x01")), "no entry 'archive/data/0'"},
      {archive(tensor_pickle(4, "K\x02K\x02", "K\x01"), {{"0", floats}}), "different lengths"},
      {archive("\x80\x02]q\x00h\x00" "a."s), "contains itself"},                  // l = []; l.append(l)
      {archive("\x80\x02]q\x00]h\x00" "aq\x01h\x00h\x01" "a."s), "changed after it was placed"},  // a cycle through two
      {archive("\x80\x02" + std::string(200, ']') + std::string(199, 'a') + "."), "deeper than 100"},
      {archive("\x80\x02}(K\x01u."), "odd number"},
      {archive("\x80\x02}]K\x01s."), "dict keys must be str or int"},
      {archive("\x80\x02h\x05."), "memo entry 5 is read before"},
      {archive("\x80\x02X\xff\xff\xff\x7f"), "BINUNICODE declares 2147483647 bytes but the pickle holds 0"},
      {archive("\x80\x02N"), "ends inside an opcode"},
      {archive("\x80\x02" "c__main__\nEvil\n)\x81."), "GLOBAL __main__.Evil"},
      {archive("\x80\x02" "c__torch__\nM\n)\x81K\x01" "b."), "custom state"},
      {archive("\x80\x02i."), "a text opcode's line is missing"},
      {archive("\x80\x02" "cbuiltins\nset\n)\x81."), "NEWOBJ of builtins.set"},
      {archive("\x80\x02K\x01(."), "needs a value the stack does not hold"},
      {archive("\x80\x02\x8a\x09" + std::string(9, '\1') + "."), "wider than 64 bits"},
      {std::string("PK\x03\x04") + std::string(40, '\0'), "no end-of-central-directory"},
  };
  for (const Case& c : cases) EXPECT_NE(load_error(c.bytes).find(c.expect), std::string::npos)
      << "expected '" << c.expect << "', got '" << load_error(c.bytes) << "'";
  // A memo bomb: a 1 kB string fetched again and again would copy 64 MB.
  std::string bomb = "\x80\x02](" + str(std::string(1000, 'x')) + "q\x00"s;
  for (int i = 0; i < 70000; ++i) bomb += "h\x00"s;
  EXPECT_NE(load_error(archive(bomb + "e.")).find("more objects than a file of its size"), std::string::npos);
  // Shared lists expanding to 2**60 values (each list holds the previous one twice).
  std::string dag = "\x80\x02]q\x00"s;
  for (int i = 0; i < 60; ++i) dag += "](h\x00h\x00" "eq\x00"s;
  EXPECT_NE(load_error(archive(dag + ".")).find("expand to more values"), std::string::npos);
  // Truncations anywhere fail cleanly.
  const std::string good = save_to_bytes(Value::dict({{Value("w"), Value(ones({64}))}}), CheckpointFormat::torch);
  for (size_t n = 0; n < good.size(); n += 7) {
    if (n < 4) continue;
    try {
      load_from_bytes(good.substr(0, n), "f");
    } catch (const ValueError&) {
    }
  }
}

// With KINDLE_TORCH_ARCHIVE_DIR set (by tests/python/test_torch_archive_cpp.py): files PyTorch
// wrote are read here and their contents written back as safetensors for Python to compare, a
// TorchScript module archive is loaded into a kindle::nn model, and an archive is written for
// torch.load.
TEST(FrontendTorchArchive, PyTorchFiles) {
  const char* env = std::getenv("KINDLE_TORCH_ARCHIVE_DIR");
  if (!env) GTEST_SKIP() << "set by tests/python/test_torch_archive_cpp.py";
  const std::string dir = env;
  // torch.save of a state dict and of an optimizer's state dict: back as safetensors.
  save(load_value(dir + "/state.pt"), dir + "/state_read.safetensors");
  save(load_value(dir + "/optim.pt"), dir + "/optim_read.safetensors");
  // A TorchScript archive of a model: into the same architecture in kindle::nn.
  struct NetImpl : nn::Module {
    nn::Linear fc{nullptr};
    nn::Conv2d conv{nullptr};
    NetImpl() {
      fc = register_module("fc", nn::Linear(12, 3));
      conv = register_module("conv", nn::Conv2d(nn::Conv2dOptions(1, 3, 3)));
      register_buffer("scale", ones({3}));
    }
  };
  auto net = std::make_shared<NetImpl>();
  kindle::load(net, dir + "/script.pt");
  save(net->state_dict(), dir + "/script_read.safetensors");
  serialize::InputArchive archive;
  archive.load_from(dir + "/script.pt");
  Tensor w;
  archive.read("fc.weight", w);
  EXPECT_TRUE(equal(w, net->fc->weight));
  // A list of tensors as libtorch's torch::save(std::vector<Tensor>) lays it out: a TorchScript
  // object whose attributes are "0", "1", ...
  std::vector<Tensor> list;
  kindle::load(list, dir + "/tensors.pt");
  save(list, dir + "/tensors_read.safetensors");
  // And the other way: an archive torch.load reads.
  Value out = Value::dict({{Value("weight"), Value(arange(6, kFloat32).reshape({2, 3}))},
                           {Value("step"), Value(int64_t(3))},
                           {Value("names"), Value::list({Value("a"), Value("b")})},
                           {Value("half"), Value(ones({2}, kFloat16))}});
  save(out, dir + "/from_cpp.pt", CheckpointFormat::torch);
}

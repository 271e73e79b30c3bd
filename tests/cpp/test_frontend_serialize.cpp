// kindle::save / kindle::load: round trips of every dtype and shape, nested Values, the exact
// safetensors layout, atomic writes, and hostile or truncated files.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <kindle/frontend.h>

using namespace kindle;

namespace {

// A per-process folder, removed when the test program ends.
struct TmpDir {
  std::string path = ::testing::TempDir() + "kindle_frontend_ser_" + std::to_string(::getpid());
  TmpDir() { std::filesystem::create_directories(path); }
  ~TmpDir() { std::filesystem::remove_all(path); }
};
std::string tmp(const std::string& name) {
  static TmpDir dir;
  return dir.path + "/" + name;
}

std::string header_of(const std::string& bytes) {
  uint64_t n = 0;
  for (int k = 7; k >= 0; --k) n = (n << 8) | static_cast<unsigned char>(bytes[size_t(k)]);
  return bytes.substr(8, n);
}

// A file made of a header (padded to 8) and `data` bytes.
std::string make_file(const std::string& header, const std::string& data, int64_t declared = -1) {
  std::string h = header;
  uint64_t n = declared >= 0 ? uint64_t(declared) : h.size();
  std::string out(8, '\0');
  for (int k = 0; k < 8; ++k) out[size_t(k)] = char((n >> (8 * k)) & 0xFF);
  return out + h + data;
}

std::string load_error(const std::string& bytes) {
  try {
    load_from_bytes(bytes, "f");
  } catch (const ValueError& e) {
    return e.what();
  } catch (const Error& e) {
    return std::string("(not a ValueError) ") + e.what();
  }
  return "<no error>";
}

}  // namespace

TEST(FrontendSerialize, EveryDtypeRoundTrips) {
  StateDict sd;
  for (DType d : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt64, kInt32, kInt16, kInt8, kUInt8, kBool})
    sd.insert(std::string(dtype_name(d)), (arange(0, 6, 1) * 1.5).to(d).reshape({2, 3}));
  sd.insert("scalar", full({}, Scalar(2.5)));
  sd.insert("empty", zeros({0, 4}));
  sd.insert("strided", arange(0, 12, 1, kFloat32).reshape({3, 4}).t());  // written contiguous
  std::string path = tmp("dtypes.safetensors");
  save(sd, path);
  StateDict back = load(path);
  EXPECT_EQ(back.keys(), sd.keys());  // the header keeps insertion order
  for (auto& [k, t] : sd) {
    EXPECT_EQ(back[k].dtype(), t.dtype()) << k;
    EXPECT_TRUE(back[k].sizes() == t.sizes()) << k;
    EXPECT_TRUE(equal(back[k], t)) << k;
  }
  EXPECT_TRUE(back["strided"].is_contiguous());
}

TEST(FrontendSerialize, LayoutIsPythonsSafetensors) {
  StateDict sd;
  sd.insert("b", ones({2}, kUInt8));
  sd.insert("a", ones({1}, kFloat64));
  std::string bytes = save_to_bytes(Value::from_state_dict(sd));
  std::string h = header_of(bytes);
  // Compact JSON, metadata first, keys in insertion order, widest dtype first in the data,
  // the header padded with spaces to a multiple of 8.
  EXPECT_EQ(h,
            "{\"__metadata__\":{\"format\":\"pt\"},\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[8,10]},"
            "\"a\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]}}" +
                std::string((8 - (h.find_last_not_of(' ') + 1) % 8) % 8, ' '));
  EXPECT_EQ(h.size() % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + h.size() + 10);
}

TEST(FrontendSerialize, NestedValuesRoundTrip) {
  Tensor t = randn({2, 2}).requires_grad_();
  Value obj = Value::dict({
      {Value("state"), Value::dict({{Value(0), Value::dict({{Value("step"), Value(full({}, Scalar(3.0)))}})}})},
      {Value("list"), Value::list({Value(1), Value(2.5), Value("x"), Value(), Value(true)})},
      {Value("tuple"), Value::tuple({Value(0.9), Value(0.999)})},
      {Value("set"), Value::set({Value(1)})},
      {Value("special"), Value::list({Value(std::nan("")), Value(HUGE_VAL), Value(-HUGE_VAL)})},
      {Value("dtype"), Value(kBFloat16)},
      {Value("param"), Value(t)},
      {Value("unicode \xc3\xa9\xf0\x9f\x98\x80"), Value(1)},
  });
  std::string path = tmp("tree.safetensors");
  save(obj, path);
  Value back = load_value(path);
  EXPECT_EQ(back.at("state").at(Value(0)).at("step").to_tensor().item<double>(), 3.0);
  EXPECT_EQ(back.at("list").items()[1].to_double(), 2.5);
  EXPECT_TRUE(back.at("list").items()[3].is_none());
  EXPECT_EQ(back.at("tuple").kind(), Value::Kind::Tuple);
  EXPECT_EQ(back.at("tuple").items()[1].to_double(), 0.999);
  EXPECT_EQ(back.at("set").kind(), Value::Kind::Set);
  EXPECT_TRUE(std::isnan(back.at("special").items()[0].to_double()));
  EXPECT_EQ(back.at("special").items()[2].to_double(), -HUGE_VAL);
  EXPECT_EQ(back.at("dtype").to_dtype(), kBFloat16);
  EXPECT_TRUE(back.at("param").to_tensor().requires_grad());
  EXPECT_TRUE(equal(back.at("param").to_tensor(), t.detach()));
  EXPECT_EQ(back.at("unicode \xc3\xa9\xf0\x9f\x98\x80").to_int(), 1);
  EXPECT_THROW(load(path), TypeError);  // not a flat dict of tensors
}

TEST(FrontendSerialize, AtomicWriteKeepsOldFileOnFailure) {
  std::string path = tmp("atomic.safetensors");
  StateDict good;
  good.insert("w", ones({3}));
  save(good, path);
  StateDict bad;
  bad.insert("__metadata__", ones({1}));
  EXPECT_THROW(save(bad, path), ValueError);
  StateDict undefined;
  undefined.insert("w", Tensor());
  EXPECT_THROW(save(undefined, path), ValueError);
  EXPECT_TRUE(equal(load(path)["w"], ones({3})));
  EXPECT_THROW(save(good, tmp("no/such/dir/x.safetensors")), Error);
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
}

TEST(FrontendSerialize, HostileHeadersAreRejectedBeforeAllocating) {
  const std::string entry = "{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
  EXPECT_EQ(load_error(make_file(entry, std::string(8, '\0'))), "<no error>");
  EXPECT_NE(load_error("abc").find("too short for a safetensors header"), std::string::npos);
  EXPECT_NE(load_error(make_file(entry, std::string(8, '\0'), 1 << 20)).find("header length 1048576 is larger"),
            std::string::npos);
  EXPECT_NE(load_error(make_file("{\"t\":", "")).find("header is not valid JSON"), std::string::npos);
  EXPECT_NE(load_error(make_file("[1]", "")).find("header must be a JSON object, got list"), std::string::npos);
  EXPECT_NE(load_error(make_file("{\"t\":{\"dtype\":\"F128\",\"shape\":[],\"data_offsets\":[0,0]}}", ""))
                .find("unsupported dtype 'F128'"),
            std::string::npos);
  EXPECT_NE(load_error(make_file("{\"t\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,0]}}", ""))
                .find("invalid shape"),
            std::string::npos);
  EXPECT_NE(load_error(make_file("{\"t\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", ""))
                .find("shape must be a list of integers"),
            std::string::npos);
  EXPECT_NE(load_error(make_file("{\"t\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,4294967296],"
                                 "\"data_offsets\":[0,0]}}",
                                 ""))
                .find("invalid shape"),
            std::string::npos);
  EXPECT_NE(load_error(make_file("{\"t\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}",
                                 std::string(8, '\0')))
                .find("span 8 bytes but shape [3] of F32 needs 12"),
            std::string::npos);
  EXPECT_NE(load_error(make_file("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", "")).find(
                "are out of order"),
            std::string::npos);
  EXPECT_NE(load_error(make_file("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
                                 std::string(12, '\0')))
                .find("leaves a gap before it"),
            std::string::npos);
  EXPECT_NE(load_error(make_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                                 "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                                 std::string(8, '\0')))
                .find("overlaps the previous tensor"),
            std::string::npos);
  EXPECT_NE(load_error(make_file(entry, std::string(4, '\0'))).find("the file is truncated"), std::string::npos);
  EXPECT_NE(load_error(make_file(entry, std::string(9, '\0'))).find("1 bytes after the last tensor"),
            std::string::npos);
  EXPECT_NE(load_error(make_file("{\"__metadata__\":{\"format\":1}}", "")).find("__metadata__ must be an object"),
            std::string::npos);
  // A deeply nested header is refused without exhausting the stack.
  EXPECT_NE(load_error(make_file(std::string(100000, '[') + std::string(100000, ']'), "")).find("not valid JSON"),
            std::string::npos);
  // A tree naming a tensor the file lacks.
  EXPECT_NE(load_error(make_file("{\"__metadata__\":{\"kindle\":\"{\\\"version\\\":1,\\\"tree\\\":{\\\"tensor\\\":"
                                 "\\\"x\\\"}}\"}}",
                                 ""))
                .find("references tensor 'x'"),
            std::string::npos);
  EXPECT_THROW(load(tmp("does-not-exist.safetensors")), Error);
}

TEST(FrontendSerialize, TruncatedFilesFailCleanly) {
  StateDict sd;
  sd.insert("w", randn({16}));
  sd.insert("b", randn({4}, std::nullopt, kFloat64));
  std::string bytes = save_to_bytes(Value::from_state_dict(sd));
  for (size_t cut = 0; cut < bytes.size(); cut += 7) EXPECT_THROW(load_from_bytes(bytes.substr(0, cut)), ValueError);
  EXPECT_NO_THROW(load_from_bytes(bytes));
}

// libtorch's archives: a model, a nested archive and plain values out and back in; file and
// stream forms; an all-tensor archive is a plain state dict for kindle::load (and Python).
TEST(FrontendArchive, ModuleAndValuesRoundTrip) {
  manual_seed(0);
  nn::Sequential model(nn::Linear(3, 4), nn::ReLU(), nn::Linear(4, 2));
  serialize::OutputArchive out, inner;
  model->save(out);
  inner.write("scale", ones({2}) * 3);
  out.write("extra", inner);
  out.write("epoch", IValue(7));
  out.write("lr", IValue(0.25));
  out.write("note", IValue(std::string("best")));
  const std::string path = tmp("archive.pt");
  out.save_to(path);

  manual_seed(1);
  nn::Sequential fresh(nn::Linear(3, 4), nn::ReLU(), nn::Linear(4, 2));
  Tensor w_before = fresh->named_parameters()["0.weight"];
  serialize::InputArchive in;
  in.load_from(path);
  fresh->load(in);
  for (const auto& [name, p] : model->named_parameters())
    EXPECT_TRUE(equal(p, fresh->named_parameters()[name])) << name;
  EXPECT_TRUE(w_before.is_same(fresh->named_parameters()["0.weight"]));  // loaded in place
  IValue epoch, lr, note;
  in.read("epoch", epoch);
  in.read("lr", lr);
  in.read("note", note);
  EXPECT_EQ(epoch.toInt(), 7);
  EXPECT_EQ(lr.toDouble(), 0.25);
  EXPECT_EQ(note.toStringRef(), "best");
  serialize::InputArchive nested;
  in.read("extra", nested);
  Tensor scale;
  nested.read("scale", scale);
  EXPECT_TRUE(equal(scale, ones({2}) * 3));
  EXPECT_EQ(nested.keys(), std::vector<std::string>{"scale"});

  Tensor missing;
  EXPECT_FALSE(in.try_read("nope", missing));
  EXPECT_THROW(in.read("nope", missing), ValueError);
  EXPECT_THROW(in.read("epoch", missing), TypeError);
  nn::Linear wrong(3, 5);
  EXPECT_THROW(wrong->load(in), ValueError);  // no "weight" key at the top level
}

TEST(FrontendArchive, StreamsOperatorsAndPlainStateDicts) {
  manual_seed(2);
  nn::Linear model(5, 3);
  serialize::OutputArchive out;
  out << model;
  std::stringstream bytes;
  out.save_to(bytes);
  nn::Linear copy(5, 3);
  serialize::InputArchive in;
  in.load_from(bytes);
  in >> copy;
  EXPECT_TRUE(equal(copy->weight, model->weight));

  std::stringstream stream;
  kindle::save(*model, stream);
  nn::Linear again(5, 3);
  kindle::load(*again, stream);
  EXPECT_TRUE(equal(again->bias, model->bias));

  const std::string path = tmp("archive_state.pt");
  out.save_to(path);
  StateDict sd = kindle::load(path);
  EXPECT_EQ(sd.size(), 2u);
  EXPECT_TRUE(equal(sd.at("weight"), model->weight));

  std::ofstream(tmp("libtorch.pt")) << "PK\x03\x04 not a safetensors file at all";
  serialize::InputArchive zip;
  EXPECT_ANY_THROW(zip.load_from(tmp("libtorch.pt")));
}

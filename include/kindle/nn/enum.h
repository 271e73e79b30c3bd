// libtorch's tag constants for names that Kindle otherwise takes as strings: reductions
// (kindle::kSum), init modes and nonlinearities (kindle::kFanOut, kindle::kReLU). Each converts to
// the string Python spells ("sum", "fan_out", "relu").
#pragma once
#include <string>
#include <utility>

namespace kindle {
namespace enumtype {
#define KINDLE_ENUM_TAG(Tag, text)                              \
  struct Tag {                                                  \
    static constexpr const char* name() { return text; }        \
  };
KINDLE_ENUM_TAG(kNone, "none")
KINDLE_ENUM_TAG(kMean, "mean")
KINDLE_ENUM_TAG(kSum, "sum")
KINDLE_ENUM_TAG(kMax, "max")
KINDLE_ENUM_TAG(kFanIn, "fan_in")
KINDLE_ENUM_TAG(kFanOut, "fan_out")
KINDLE_ENUM_TAG(kLinear, "linear")
KINDLE_ENUM_TAG(kConv1D, "conv1d")
KINDLE_ENUM_TAG(kConv2D, "conv2d")
KINDLE_ENUM_TAG(kConv3D, "conv3d")
KINDLE_ENUM_TAG(kSigmoid, "sigmoid")
KINDLE_ENUM_TAG(kTanh, "tanh")
KINDLE_ENUM_TAG(kReLU, "relu")
KINDLE_ENUM_TAG(kLeakyReLU, "leaky_relu")
KINDLE_ENUM_TAG(kGELU, "gelu")
KINDLE_ENUM_TAG(kSELU, "selu")
KINDLE_ENUM_TAG(kNearest, "nearest")
KINDLE_ENUM_TAG(kBilinear, "bilinear")
KINDLE_ENUM_TAG(kBicubic, "bicubic")
KINDLE_ENUM_TAG(kZeros, "zeros")
KINDLE_ENUM_TAG(kReflect, "reflect")
KINDLE_ENUM_TAG(kReplicate, "replicate")
KINDLE_ENUM_TAG(kCircular, "circular")
KINDLE_ENUM_TAG(kConstant, "constant")
KINDLE_ENUM_TAG(kSame, "same")
KINDLE_ENUM_TAG(kValid, "valid")
#undef KINDLE_ENUM_TAG
}  // namespace enumtype

inline constexpr enumtype::kNone kNone{};
inline constexpr enumtype::kMean kMean{};
inline constexpr enumtype::kSum kSum{};
inline constexpr enumtype::kMax kMax{};
inline constexpr enumtype::kFanIn kFanIn{};
inline constexpr enumtype::kFanOut kFanOut{};
inline constexpr enumtype::kLinear kLinear{};
inline constexpr enumtype::kConv1D kConv1D{};
inline constexpr enumtype::kConv2D kConv2D{};
inline constexpr enumtype::kConv3D kConv3D{};
inline constexpr enumtype::kSigmoid kSigmoid{};
inline constexpr enumtype::kTanh kTanh{};
inline constexpr enumtype::kReLU kReLU{};
inline constexpr enumtype::kLeakyReLU kLeakyReLU{};
inline constexpr enumtype::kGELU kGELU{};
inline constexpr enumtype::kSELU kSELU{};
inline constexpr enumtype::kNearest kNearest{};
inline constexpr enumtype::kBilinear kBilinear{};
inline constexpr enumtype::kBicubic kBicubic{};
inline constexpr enumtype::kZeros kZeros{};
inline constexpr enumtype::kReflect kReflect{};
inline constexpr enumtype::kReplicate kReplicate{};
inline constexpr enumtype::kCircular kCircular{};
inline constexpr enumtype::kConstant kConstant{};
inline constexpr enumtype::kSame kSame{};
inline constexpr enumtype::kValid kValid{};

// A name given as Python spells it ("fan_out") or as libtorch's tag (kindle::kFanOut).
class EnumName {
 public:
  EnumName(const char* name) : name_(name) {}
  EnumName(std::string name) : name_(std::move(name)) {}
  template <typename Tag, typename = decltype(Tag::name())>
  EnumName(Tag) : name_(Tag::name()) {}
  const std::string& name() const { return name_; }
  operator const std::string&() const { return name_; }
  friend bool operator==(const EnumName& a, const EnumName& b) { return a.name_ == b.name_; }

 private:
  std::string name_;
};

}  // namespace kindle

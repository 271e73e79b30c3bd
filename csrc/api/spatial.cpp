// Padding, pixel-shuffle and upsampling layers (kindle/nn/spatial.h).
#include "kindle/nn/spatial.h"

#include <sstream>

#include "util.h"

namespace kindle::nn {

template <size_t D, typename Mode>
Tensor PadImpl<D, Mode>::forward(const Tensor& input) {
  std::optional<double> value;
  if constexpr (std::is_same_v<Mode, pad_mode::Constant>) value = options.value();
  return pad(input, options.padding(), Mode::mode, value);
}

template <size_t D, typename Mode>
std::string PadImpl<D, Mode>::extra_repr() const {
  std::string s = options.padding().str();
  if constexpr (std::is_same_v<Mode, pad_mode::Constant>) s = "padding=" + s + ", value=" + detail::py_float(options.value());
  return s;
}

#define KINDLE_PAD_INSTANTIATE(Mode) \
  template class PadImpl<1, pad_mode::Mode>; template class PadImpl<2, pad_mode::Mode>; template class PadImpl<3, pad_mode::Mode>;
KINDLE_PAD_INSTANTIATE(Reflect)
KINDLE_PAD_INSTANTIATE(Replicate)
KINDLE_PAD_INSTANTIATE(Circular)
KINDLE_PAD_INSTANTIATE(Zero)
KINDLE_PAD_INSTANTIATE(Constant)
#undef KINDLE_PAD_INSTANTIATE

std::string UpsampleImpl::extra_repr() const {
  std::ostringstream s;
  if (options.size()) {
    s << "size=(";
    for (size_t i = 0; i < options.size()->size(); ++i) s << (i ? ", " : "") << (*options.size())[i];
    s << ")";
  } else if (options.scale_factor()) {
    s << "scale_factor=(";
    for (size_t i = 0; i < options.scale_factor()->size(); ++i)
      s << (i ? ", " : "") << detail::py_float((*options.scale_factor())[i]);
    s << ")";
  }
  s << ", mode='" << options.mode().name() << "'";
  return s.str();
}

}  // namespace kindle::nn

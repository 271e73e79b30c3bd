// Tensor printing, shared by the C++ operator<< and Python's repr. It follows PyTorch's rules
// (torch/_tensor_str.py): one formatter for the whole tensor (integer, fixed or scientific mode),
// common width, 80-column lines, and 3 edge items per dimension past 1000 elements.
#include "kindle/autograd.h"
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "kindle/ops.h"

namespace kindle {
namespace {

PrintOptions g_options;  // set_printoptions (torch.set_printoptions); read while printing

std::string float_spec(char conv) { return "%." + std::to_string(g_options.precision) + conv; }

struct Element {
  const Tensor& t;
  double get(const char* p) const {
    return dispatch_all(t.dtype(), "print", [&](auto tag) -> double {
      using T = typename decltype(tag)::type;
      return double(*reinterpret_cast<const T*>(p));
    });
  }
  int64_t get_int(const char* p) const {
    return dispatch_all(t.dtype(), "print", [&](auto tag) -> int64_t {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_integral_v<T>) return int64_t(*reinterpret_cast<const T*>(p));
      else return 0;
    });
  }
};

// Visits the elements that will be printed, in print order.
template <typename F>
void visit(const Tensor& t, const char* p, int64_t d, bool summarize, F& f) {
  if (d == t.dim()) { f(p); return; }
  int64_t n = t.sizes()[d], st = t.strides()[d] * int64_t(t.element_size());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t edge = g_options.edgeitems;
    if (summarize && n > 2 * edge && i == edge) i = n - edge;
    visit(t, p + i * st, d + 1, summarize, f);
  }
}

std::string fmt(const char* spec, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, spec, v);
  return buf;
}

struct Formatter {
  bool floating, is_bool, int_mode = true, sci_mode = false;
  size_t width = 1;
  const std::string e = float_spec('e'), f = float_spec('f');  // the precision's formats, once

  Formatter(const Tensor& t, bool summarize) : floating(t.is_floating_point()), is_bool(t.dtype() == kBool) {
    Element el{t};
    std::vector<double> vals;
    auto collect = [&](const char* p) {
      if (floating) vals.push_back(el.get(p));
      else width = std::max(width, str_int(el, p).size());
    };
    visit(t, static_cast<const char*>(t.data_ptr()), 0, summarize, collect);
    if (!floating) return;
    double mn = INFINITY, mx = 0;
    bool any = false;
    for (double v : vals) {
      if (std::isfinite(v) && v != 0) {
        any = true;
        mn = std::min(mn, std::fabs(v));
        mx = std::max(mx, std::fabs(v));
        if (v != std::ceil(v)) int_mode = false;
      }
    }
    if (!any) return;
    bool big_range = mx / mn > 1000.0 || mx > 1.0e8;
    sci_mode = int_mode ? big_range : (big_range || mn < 1.0e-4);
    if (g_options.sci_mode) sci_mode = *g_options.sci_mode;
    for (double v : vals) {
      if (!std::isfinite(v) || v == 0) continue;
      if (sci_mode) width = std::max(width, fmt(e.c_str(), v).size());
      else if (int_mode) width = std::max(width, fmt("%.0f", v).size() + 1);
      else width = std::max(width, fmt(f.c_str(), v).size());
    }
  }

  static std::string str_int(const Element& el, const char* p) {
    if (el.t.dtype() == kBool) return *reinterpret_cast<const bool*>(p) ? "True" : "False";
    return std::to_string(el.get_int(p));
  }

  std::string format(const Element& el, const char* p) const {
    std::string s;
    if (floating) {
      double v = el.get(p);
      if (sci_mode) s = fmt(e.c_str(), v);
      else if (int_mode) {
        s = std::isnan(v) ? "nan" : std::isinf(v) ? (v > 0 ? "inf" : "-inf") : fmt("%.0f", v);
        if (std::isfinite(v)) s += ".";
      } else {
        s = std::isnan(v) ? "nan" : std::isinf(v) ? (v > 0 ? "inf" : "-inf") : fmt(f.c_str(), v);
      }
    } else {
      s = str_int(el, p);
    }
    if (s.size() < width) s.insert(0, width - s.size(), ' ');
    return s;
  }
};

// A complex tensor prints as torch prints it: one formatter for the real parts and one for the
// imaginary parts (each over its own values), joined as 1.5000+2.0000j.
struct ComplexParts {
  Tensor re, im;
  const Formatter* imag_f;
};

Tensor part_view(const Tensor& t, int64_t which) {
  DimVector strides;
  for (int64_t s : t.strides()) strides.push_back(2 * s);
  return Tensor(intrusive_ptr<TensorImpl>::make(t.impl()->storage(), to_real_value_type(t.dtype()), t.sizes(),
                                                strides, 2 * t.storage_offset() + which));
}

std::string tensor_str(const Tensor& t, const char* p, int64_t d, size_t indent, bool summarize,
                       const Formatter& f, const ComplexParts* cx = nullptr) {
  Element el{t};
  if (d == t.dim() && cx) {
    std::string r = f.format(Element{cx->re}, p);
    std::string i = cx->imag_f->format(Element{cx->im}, p + t.element_size() / 2) + "j";
    i.erase(0, i.find_first_not_of(' '));
    return (i[0] == '+' || i[0] == '-') ? r + i : r + "+" + i;
  }
  if (d == t.dim()) return f.format(el, p);
  int64_t n = t.sizes()[d], st = t.strides()[d] * int64_t(t.element_size());
  std::vector<std::string> parts;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t edge = g_options.edgeitems;
    if (summarize && n > 2 * edge && i == edge) {
      parts.push_back(d + 1 == t.dim() ? " ..." : "...");
      i = n - edge;
    }
    parts.push_back(tensor_str(t, p + i * st, d + 1, indent + 1, summarize, f, cx));
  }
  std::string out = "[";
  if (d + 1 == t.dim()) {  // a row: wrap at the line width
    size_t width = f.width + (cx ? cx->imag_f->width + 1 : 0);
    const size_t line = size_t(std::max<int64_t>(g_options.linewidth, 0));
    size_t per_line = std::max<size_t>(1, (line > indent ? line - indent : 0) / (width + 2));
    for (size_t i = 0; i < parts.size(); ++i) {
      if (i) out += (i % per_line == 0) ? ",\n" + std::string(indent + 1, ' ') : ", ";
      out += parts[i];
    }
  } else {
    std::string sep = "," + std::string(size_t(t.dim() - d - 1), '\n') + std::string(indent + 1, ' ');
    for (size_t i = 0; i < parts.size(); ++i) out += (i ? sep : "") + parts[i];
  }
  return out + "]";
}

}  // namespace

void set_printoptions(const PrintOptions& options) { g_options = options; }
PrintOptions get_printoptions() { return g_options; }

std::string Tensor::to_string() const {
  if (!defined()) return "tensor(undefined)";
  const std::string prefix = "tensor(";
  const size_t indent = prefix.size();
  std::vector<std::string> suffixes;
  DType dt = dtype();
  bool default_dtype_shown = dt == default_dtype() || dt == kInt64 || dt == kBool ||
                             dt == to_complex_type(default_dtype());
  std::string body;
  // A device's elements are printed from a host copy, with the device named first (as torch).
  // A meta tensor has no elements to print: its size and dtype stand for them.
  Tensor host = device().is_cpu() || device().is_meta() ? *this : detach()._to_device(kCPU);
  if (!device().is_cpu()) {
    std::ostringstream ds;
    ds << "device='" << device() << "'";
    suffixes.push_back(ds.str());
  }
  if (device().is_meta() || numel() == 0) {  // "[]" for an empty tensor ("..." on meta): the size says it
    if (device().is_meta() || dim() != 1) {
      std::ostringstream ss;
      ss << "size=(";
      for (int64_t i = 0; i < dim(); ++i) ss << (i ? ", " : "") << sizes()[i];
      ss << (dim() == 1 ? ",)" : ")");
      suffixes.push_back(ss.str());
    }
    if (dt != default_dtype()) suffixes.push_back(std::string("dtype=kindle.") + dtype_name(dt));
    body = device().is_meta() ? "..." : "[]";
  } else {
    if (!default_dtype_shown) suffixes.push_back(std::string("dtype=kindle.") + dtype_name(dt));
    bool summarize = double(numel()) > g_options.threshold;
    if (is_complex()) {
      Tensor re = part_view(host, 0), im = part_view(host, 1);
      Formatter fr(re, summarize), fi(im, summarize);
      ComplexParts cx{re, im, &fi};
      body = tensor_str(host, static_cast<const char*>(host.data_ptr()), 0, indent, summarize, fr, &cx);
    } else {
      Formatter f(host, summarize);
      body = tensor_str(host, static_cast<const char*>(host.data_ptr()), 0, indent, summarize, f);
    }
  }
  if (auto fn = grad_fn()) suffixes.push_back("grad_fn=<" + fn->name() + ">");
  else if (requires_grad()) suffixes.push_back("requires_grad=True");
  if (autograd::forward_ad::current_level() >= 0) {
    Tensor tangent = autograd::forward_ad::unpack_dual(*this).second;
    if (tangent.defined()) suffixes.push_back("tangent=" + tangent.to_string());
  }
  std::string out = prefix + body;
  size_t last_line = out.size() - (out.rfind('\n') == std::string::npos ? 0 : out.rfind('\n')) + 1;
  for (auto& s : suffixes) {
    if (last_line + s.size() + 2 > size_t(std::max<int64_t>(g_options.linewidth, 0))) {
      out += ",\n" + std::string(indent, ' ') + s;
      last_line = indent + s.size();
    } else {
      out += ", " + s;
      last_line += s.size() + 2;
    }
  }
  return out + ")";
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

}  // namespace kindle

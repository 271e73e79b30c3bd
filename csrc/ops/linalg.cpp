// Matrix products, all through the gemm stub (BLAS for float32/float64).
#include <map>
#include <string>

#include "kindle/autocast.h"
#include "native_ops.h"
#include "ops/kernels.h"

namespace kindle {
namespace {

// A matrix view the BLAS can read directly: row-major with ld, or its transpose.
struct MatView {
  Tensor t;  // keeps a copy alive when one was needed
  bool trans;
  int64_t ld;
};
MatView as_blas(const Tensor& m) {  // m is 2-d, or 3-d with a batch dim first
  int64_t r = m.size(-2), c = m.size(-1), s0 = m.stride(-2), s1 = m.stride(-1);
  if ((s1 == 1 || c == 1) && s0 >= std::max<int64_t>(c, 1)) return {m, false, std::max<int64_t>(s0, 1)};
  if ((s0 == 1 || r == 1) && s1 >= std::max<int64_t>(r, 1)) return {m, true, std::max<int64_t>(s1, 1)};
  Tensor cm = contiguous(m);
  return {cm, false, std::max<int64_t>(c, 1)};
}

void check_mm_dtypes(const Tensor& a, const Tensor& b, const char* op) {
  KINDLE_CHECK(a.dtype() == b.dtype(), op, ": expected m1 and m2 to have the same dtype, but got: ", a.dtype(), " != ", b.dtype());
  KINDLE_CHECK_NOT_IMPLEMENTED(a.dtype() != kBool, op, ": \"", op, "\" not implemented for '", scalar_type_name(kBool), "'");
}

// A matrix as a batch of one (an internal view: no op call, nothing for autograd to track).
Tensor batch_of_one(const Tensor& m) {
  DimVector sz{1, m.size(0), m.size(1)}, st{m.size(0) * m.stride(0), m.stride(0), m.stride(1)};
  return make_view(m, sz, st, m.storage_offset());
}

// out[b] = alpha * a[b] @ bm[b] + beta * out[b]; a (B, m, k), bm (B, k, n), out (B, m, n) contiguous.
void batched_gemm(const Tensor& a, const Tensor& bm, const Tensor& out, double alpha, double beta) {
  int64_t B = a.size(0), m = a.size(1), k = a.size(2), n = bm.size(2);
  if (out.numel() == 0) return;
  if (k == 0) {
    if (beta == 0) out.zero_();
    else out.mul_(scalar_tensor_of(is_floating_point(out.dtype()) ? Scalar(beta) : Scalar(int64_t(beta)), out.dtype()));
    return;
  }
  // (the device's GEMM reads every operand from that device's memory)
  KINDLE_CHECK(a.device() == out.device() && bm.device() == out.device(),
               "matmul: expected all tensors to be on the same device, but found at least two devices, ", a.device(),
               " and ", a.device() == out.device() ? bm.device() : out.device(), "!");
  MatView va = as_blas(a), vb = as_blas(bm);
  int64_t sa = B > 1 ? va.t.stride(0) : 0, sb = B > 1 ? vb.t.stride(0) : 0;
  if (B > 1 && sb == 0 && !va.trans && sa == m * va.ld) {
    // One right operand for the whole batch (a broadcast weight, as vmap's per-example
    // gradients make) and the left rows one after another: a single product of B*m rows.
    m *= B;
    B = 1;
    sa = 0;
  }
  GemmArgs g{va.trans, vb.trans, m, n, k, va.t.raw_data_ptr(), va.ld, vb.t.raw_data_ptr(), vb.ld, out.raw_data_ptr(), n, alpha, beta};
  gemm_stub[out.device()](out.dtype(), &g, B, sa, sb, m * n);
}

}  // namespace

Tensor native_mm(const Tensor& self, const Tensor& mat2) {
  KINDLE_CHECK(self.dim() == 2, "mm: self must be a matrix, got a ", self.dim(), "-d tensor");
  KINDLE_CHECK(mat2.dim() == 2, "mm: mat2 must be a matrix, got a ", mat2.dim(), "-d tensor");
  KINDLE_CHECK(self.size(1) == mat2.size(0), "mm: mat1 and mat2 shapes cannot be multiplied (", self.size(0), "x",
               self.size(1), " and ", mat2.size(0), "x", mat2.size(1), ")");
  check_mm_dtypes(self, mat2, "mm");
  Tensor out = empty_tensor({self.size(0), mat2.size(1)}, self.dtype(), self.device());
  batched_gemm(batch_of_one(self), batch_of_one(mat2), batch_of_one(out), 1.0, 0.0);
  return out;
}

Tensor native_bmm(const Tensor& self, const Tensor& mat2) {
  KINDLE_CHECK(self.dim() == 3 && mat2.dim() == 3, "bmm: expected 3-d tensors, got ", self.dim(), "-d and ", mat2.dim(), "-d");
  KINDLE_CHECK(self.size(0) == mat2.size(0) && self.size(2) == mat2.size(1), "bmm: batch1 and batch2 shapes cannot be multiplied (",
               self.sizes(), " and ", mat2.sizes(), ")");
  check_mm_dtypes(self, mat2, "bmm");
  Tensor out = empty_tensor({self.size(0), self.size(1), mat2.size(2)}, self.dtype(), self.device());
  batched_gemm(self, mat2, out, 1.0, 0.0);
  return out;
}

Tensor native_addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha) {
  KINDLE_CHECK(mat1.dim() == 2 && mat2.dim() == 2, "addmm: expected 2-d mat1 and mat2, got ", mat1.dim(), "-d and ", mat2.dim(), "-d");
  KINDLE_CHECK(mat1.size(1) == mat2.size(0), "addmm: mat1 and mat2 shapes cannot be multiplied (", mat1.size(0), "x",
               mat1.size(1), " and ", mat2.size(0), "x", mat2.size(1), ")");
  check_mm_dtypes(mat1, mat2, "addmm");
  Tensor out = empty_tensor({mat1.size(0), mat2.size(1)}, mat1.dtype(), mat1.device());
  double b = beta.to_double();
  if (b != 0) out.copy_(self.expand(out.sizes()));
  batched_gemm(batch_of_one(mat1), batch_of_one(mat2), batch_of_one(out), alpha.to_double(), b);
  return out;
}
const Tensor& native_addmm_(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta, const Scalar& alpha) {
  return self.copy_(addmm(self, mat1, mat2, beta, alpha));
}

Tensor native_baddbmm(const Tensor& self, const Tensor& b1, const Tensor& b2, const Scalar& beta, const Scalar& alpha) {
  Tensor prod = bmm(b1, b2);
  Tensor out = empty_tensor(prod.sizes(), prod.dtype(), prod.device());
  double b = beta.to_double();
  if (b != 0) out.copy_(self.expand(out.sizes()));
  batched_gemm(b1, b2, out, alpha.to_double(), b);
  return out;
}

Tensor addmv(const Tensor& self, const Tensor& mat, const Tensor& vec, const Scalar& beta, const Scalar& alpha) {
  autocast::Exclude no_autocast;  // (not on PyTorch's autocast lists: its matrix product runs as given)
  return addmm(self.unsqueeze(-1).expand({mat.size(0), 1}), mat, vec.unsqueeze(1), beta, alpha).squeeze(IntArrayRef{1});
}

Tensor dot(const Tensor& self, const Tensor& other) {
  KINDLE_CHECK(self.dim() == 1 && other.dim() == 1, "dot: 1D tensors expected, but got ", self.dim(), "D and ", other.dim(), "D tensors");
  KINDLE_CHECK(self.numel() == other.numel(), "dot: inconsistent tensor size, expected tensor [", self.numel(),
               "] and src [", other.numel(), "] to have the same number of elements, but got ", self.numel(), " and ",
               other.numel(), " elements respectively");
  check_mm_dtypes(self, other, "dot");
  autocast::Exclude no_autocast;  // (not on PyTorch's autocast lists: its matrix product runs as given)
  return mm(self.unsqueeze(0), other.unsqueeze(1)).reshape({});
}
Tensor vdot(const Tensor& self, const Tensor& other) { return dot(self.conj(), other); }

Tensor mv(const Tensor& self, const Tensor& vec) {
  KINDLE_CHECK(self.dim() == 2 && vec.dim() == 1, "mv: expected a matrix and a vector, got ", self.dim(), "-d and ", vec.dim(), "-d");
  KINDLE_CHECK(self.size(1) == vec.size(0), "mv: size mismatch, got input (", self.size(0), "), mat (", self.size(0), "x",
               self.size(1), "), vec (", vec.size(0), ")");
  autocast::Exclude no_autocast;  // (not on PyTorch's autocast lists: its matrix product runs as given)
  return mm(self, vec.unsqueeze(1)).squeeze(IntArrayRef{1});
}

Tensor outer(const Tensor& self, const Tensor& vec2) {
  KINDLE_CHECK(self.dim() == 1 && vec2.dim() == 1, "outer: expected 1-d tensors, got ", self.dim(), "-d and ", vec2.dim(), "-d");
  return mul(self.unsqueeze(1), vec2.unsqueeze(0));
}
Tensor ger(const Tensor& self, const Tensor& vec2) { return outer(self, vec2); }

Tensor matmul(const Tensor& a, const Tensor& b) {
  int64_t da = a.dim(), db = b.dim();
  KINDLE_CHECK(da > 0 && db > 0, "matmul: both arguments to matmul need to be at least 1D, but they are ", da, "D and ", db, "D");
  if (da == 1 && db == 1) return dot(a, b);
  if (da == 2 && db == 1) return mv(a, b);
  if (da == 1 && db == 2) return mm(a.unsqueeze(0), b).squeeze(IntArrayRef{0});
  if (da == 2 && db == 2) return mm(a, b);
  if (da >= 3 && db <= 2) {  // fold the batch into the rows: one big GEMM
    Tensor bb = db == 1 ? b.unsqueeze(1) : b;
    KINDLE_CHECK(a.size(-1) == bb.size(0), "matmul: shapes cannot be multiplied (", a.sizes(), " and ", b.sizes(), ")");
    DimVector out_shape(a.sizes());
    out_shape.pop_back();
    if (db == 2) out_shape.push_back(b.size(1));
    Tensor r = mm(a.reshape({numel_of(a.sizes().slice(0, size_t(a.dim() - 1))), a.size(-1)}), bb);
    return r.view(out_shape);
  }
  // General batched case: broadcast the batch dims.
  Tensor A = da == 1 ? a.unsqueeze(0) : a;
  Tensor B = db == 1 ? b.unsqueeze(1) : b;
  KINDLE_CHECK(A.size(-1) == B.size(-2), "matmul: shapes cannot be multiplied (", a.sizes(), " and ", b.sizes(), ")");
  DimVector ba(A.sizes().slice(0, A.dim() - 2)), bbv(B.sizes().slice(0, B.dim() - 2));
  DimVector batch = broadcast_shapes(ba, bbv, "matmul");
  int64_t nb = numel_of(batch), m = A.size(-2), k = A.size(-1), n = B.size(-1);
  DimVector ea(batch), eb(batch);
  ea.push_back(m); ea.push_back(k);
  eb.push_back(k); eb.push_back(n);
  Tensor A3 = A.expand(ea).reshape({nb, m, k}), B3 = B.expand(eb).reshape({nb, k, n});
  Tensor out = bmm(A3, B3);
  DimVector os(batch);
  if (da > 1) os.push_back(m);
  if (db > 1) os.push_back(n);
  return out.view(os);
}

Tensor inner(const Tensor& self, const Tensor& other) {
  if (self.dim() == 0 || other.dim() == 0) return mul(self, other);
  KINDLE_CHECK(self.size(-1) == other.size(-1), "inner() the last dimension must match on both input tensors but got shapes ",
               self.sizes(), " and ", other.sizes());
  if (self.dim() == 1 && other.dim() == 1) return dot(self, other);  // (as PyTorch: not autocast)
  return tensordot(self, other, {-1}, {-1});
}

Tensor tensordot(const Tensor& a, const Tensor& b, IntArrayRef dims_a, IntArrayRef dims_b) {
  KINDLE_CHECK(dims_a.size() == dims_b.size(), "tensordot: both dimension lists should have same length");
  std::vector<bool> ca(size_t(a.dim()), false), cb(size_t(b.dim()), false);
  DimVector pa, pb, out_shape;
  int64_t K = 1;
  for (size_t i = 0; i < dims_a.size(); ++i) {
    int64_t x = wrap_dim(dims_a[i], a.dim(), "tensordot"), y = wrap_dim(dims_b[i], b.dim(), "tensordot");
    KINDLE_CHECK(a.sizes()[x] == b.sizes()[y], "tensordot: contracted dimensions need to match, but first has size ",
                 a.sizes()[x], " in dim ", x, " and second has size ", b.sizes()[y], " in dim ", y);
    ca[x] = cb[y] = true;
    K *= a.sizes()[x];
  }
  int64_t M = 1, N = 1;
  for (int64_t i = 0; i < a.dim(); ++i) if (!ca[i]) { pa.push_back(i); out_shape.push_back(a.sizes()[i]); M *= a.sizes()[i]; }
  for (int64_t x : dims_a) pa.push_back(wrap_dim(x, a.dim(), "tensordot"));
  for (int64_t y : dims_b) pb.push_back(wrap_dim(y, b.dim(), "tensordot"));
  for (int64_t i = 0; i < b.dim(); ++i) if (!cb[i]) { pb.push_back(i); out_shape.push_back(b.sizes()[i]); N *= b.sizes()[i]; }
  Tensor r = mm(a.permute(pa).reshape({M, K}), b.permute(pb).reshape({K, N}));
  return r.view(out_shape);
}

// "ij,jk" -> {"ij", "jk"}
static std::vector<std::string> split_terms(const std::string& lhs) {
  std::vector<std::string> terms;
  for (size_t s = 0, e; s <= lhs.size(); s = e + 1) {
    e = lhs.find(',', s);
    if (e == std::string::npos) e = lhs.size();
    terms.push_back(lhs.substr(s, e - s));
  }
  return terms;
}

// Replaces "..." by letters the equation does not use: each operand's ellipsis covers its
// leading extra dims (right-aligned, so fewer dims take the last letters).
static std::string expand_ellipsis(const std::string& eq, TensorList tensors) {
  std::string pool;
  for (char c = 'A'; c <= 'Z'; ++c) if (eq.find(c) == std::string::npos) pool += c;
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms = split_terms(lhs);
  KINDLE_CHECK(terms.size() == tensors.size(), "einsum(): ", terms.size(), " operands in the equation, got ", tensors.size());
  int64_t most = 0;
  std::vector<int64_t> counts;
  for (size_t i = 0; i < terms.size(); ++i) {
    int64_t named = int64_t(terms[i].size()) - (terms[i].find("...") != std::string::npos ? 3 : 0);
    int64_t k = terms[i].find("...") != std::string::npos ? tensors[i].dim() - named : 0;
    KINDLE_CHECK(k >= 0, "einsum(): the number of subscripts in the equation (", named,
                 ") is more than the number of dimensions (", tensors[i].dim(), ") for operand ", i);
    counts.push_back(k);
    most = std::max(most, k);
  }
  KINDLE_CHECK(most <= int64_t(pool.size()), "einsum(): too many dimensions covered by '...'");
  std::string ell = pool.substr(0, size_t(most)), out;
  for (size_t i = 0; i < terms.size(); ++i) {
    size_t pos = terms[i].find("...");
    if (pos != std::string::npos) terms[i].replace(pos, 3, ell.substr(size_t(most - counts[i])));
    out += (i ? "," : "") + terms[i];
  }
  if (arrow != std::string::npos) {
    std::string rhs = eq.substr(arrow + 2);
    size_t pos = rhs.find("...");
    if (pos != std::string::npos) rhs.replace(pos, 3, ell);
    return out + "->" + rhs;
  }
  std::map<char, int> count;
  for (char c : lhs) if (c != '.' && c != ',') count[c]++;
  std::string rhs = ell;
  for (auto& [c, n] : count) if (n == 1) rhs += c;
  return out + "->" + rhs;
}

Tensor einsum(std::string_view equation, TensorList tensors) {
  std::string eq;
  for (char c : equation) if (c != ' ') eq += c;
  if (eq.find("...") != std::string::npos) eq = expand_ellipsis(eq, tensors);
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms = split_terms(lhs);
  KINDLE_CHECK(terms.size() == tensors.size(), "einsum(): more operands were provided than specified in the equation"
               " (equation has ", terms.size(), ", got ", tensors.size(), ")");
  std::map<char, int> count;
  for (auto& t : terms) for (char c : t) {
    KINDLE_CHECK((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'), "einsum(): invalid subscript given at index ", c);
    count[c]++;
  }
  std::string out;
  if (arrow != std::string::npos) out = eq.substr(arrow + 2);
  else for (auto& [c, n] : count) if (n == 1) out += c;
  for (size_t i = 0; i < terms.size(); ++i)
    KINDLE_CHECK(int64_t(terms[i].size()) == tensors[i].dim(), "einsum(): the number of subscripts in the equation (",
                 terms[i].size(), ") does not match the number of dimensions (", tensors[i].dim(), ") for operand ", i);
  // A letter names one size: repeated within an operand it must match exactly, across operands
  // it must match or be 1 (broadcast).
  std::map<char, int64_t> size_of_label;
  for (size_t i = 0; i < terms.size(); ++i) {
    std::map<char, int64_t> own;
    for (size_t a = 0; a < terms[i].size(); ++a) {
      char c = terms[i][a];
      int64_t n = tensors[i].sizes()[a];
      auto [it, fresh] = own.emplace(c, n);
      KINDLE_CHECK(fresh || it->second == n, "einsum(): subscript ", c, " is repeated for operand ", i,
                   " but the sizes don't match, ", n, " != ", it->second);
      auto [g, first] = size_of_label.emplace(c, n);
      KINDLE_CHECK(first || g->second == n || g->second == 1 || n == 1, "einsum(): operands do not broadcast: "
                   "subscript ", c, " has size ", g->second, " in one operand and ", n, " in operand ", i);
      if (!first && g->second == 1) g->second = n;
    }
  }
  // Reduce each operand: diagonals of repeated letters, sums over letters used nowhere else.
  std::vector<Tensor> ops;
  std::vector<std::string> labels;
  for (size_t i = 0; i < terms.size(); ++i) {
    Tensor t = tensors[i];
    std::string l = terms[i];
    for (size_t a = 0; a < l.size(); ++a)
      for (size_t b = a + 1; b < l.size();) {
        if (l[a] != l[b]) { ++b; continue; }
        t = t.diagonal(0, int64_t(a), int64_t(b)).movedim({-1}, {int64_t(a)});
        l.erase(b, 1);
      }
    for (size_t a = 0; a < l.size();) {
      char c = l[a];
      bool elsewhere = out.find(c) != std::string::npos;
      for (size_t j = 0; j < terms.size(); ++j) if (j != i && terms[j].find(c) != std::string::npos) elsewhere = true;
      if (!elsewhere) { t = t.sum(IntArrayRef{int64_t(a)}); l.erase(a, 1); } else ++a;
    }
    ops.push_back(t);
    labels.push_back(l);
  }
  // Contract left to right.
  Tensor acc = ops[0];
  std::string al = labels[0];
  for (size_t i = 1; i < ops.size(); ++i) {
    Tensor b = ops[i];
    const std::string& bl = labels[i];
    auto needed_later = [&](char c) {
      if (out.find(c) != std::string::npos) return true;
      for (size_t j = i + 1; j < labels.size(); ++j) if (labels[j].find(c) != std::string::npos) return true;
      return false;
    };
    std::string batch, left, right, contract;
    for (char c : al) {
      bool in_b = bl.find(c) != std::string::npos;
      if (in_b) (needed_later(c) ? batch : contract) += c;
      else left += c;
    }
    for (char c : bl) if (al.find(c) == std::string::npos) right += c;
    auto perm_of = [](const std::string& from, const std::string& to) {
      DimVector p;
      for (char c : to) p.push_back(int64_t(from.find(c)));
      return p;
    };
    auto size_of = [&](const Tensor& t, const std::string& l, char c) { return t.sizes()[l.find(c)]; };
    // A label of size 1 in one operand broadcasts against the other: a contracted one sums the
    // other operand over it first, a batch one expands.
    for (char c : contract) {
      int64_t sa = size_of(acc, al, c), sb = size_of(b, bl, c);
      if (sa == sb) continue;
      KINDLE_CHECK(sa == 1 || sb == 1, "einsum(): operands do not broadcast with remapped shapes for subscript ", c,
                   ": ", sa, " vs ", sb);
      Tensor& big = sa == 1 ? b : acc;
      Tensor& other = sa == 1 ? acc : b;
      const std::string& bigl = sa == 1 ? bl : al;
      big = big.sum(IntArrayRef{int64_t(bigl.find(c))}, true);  // integers promote, as in PyTorch
      DType common = promote_types(big.dtype(), other.dtype());
      big = big.to(common);
      other = other.to(common);
    }
    for (char c : batch) {
      int64_t sa = size_of(acc, al, c), sb = size_of(b, bl, c);
      if (sa == sb) continue;
      Tensor& small = sa == 1 ? acc : b;
      const std::string& sl = sa == 1 ? al : bl;
      DimVector shape(small.sizes());
      shape[sl.find(c)] = std::max(sa, sb);
      small = small.expand(shape);
    }
    int64_t B = 1, M = 1, N = 1, K = 1;
    DimVector res_shape;
    for (char c : batch) { int64_t s = std::max(size_of(acc, al, c), size_of(b, bl, c)); B *= s; res_shape.push_back(s); }
    for (char c : left) { M *= size_of(acc, al, c); res_shape.push_back(size_of(acc, al, c)); }
    for (char c : right) { N *= size_of(b, bl, c); res_shape.push_back(size_of(b, bl, c)); }
    for (char c : contract) K *= size_of(acc, al, c);
    Tensor A3 = acc.permute(perm_of(al, batch + left + contract)).reshape({B, M, K});
    Tensor B3 = b.permute(perm_of(bl, batch + contract + right)).reshape({B, K, N});
    acc = bmm(A3, B3).view(res_shape);
    al = batch + left + right;
  }
  return acc.permute([&] { DimVector p; for (char c : out) { auto pos = al.find(c); KINDLE_CHECK(pos != std::string::npos, "einsum(): output subscript ", c, " does not appear in the equation for any input operand"); p.push_back(int64_t(pos)); } return p; }());
}

Tensor kron(const Tensor& self, const Tensor& other) {
  int64_t nd = std::max(self.dim(), other.dim());
  DimVector sa(size_t(nd - self.dim()), 1), sb(size_t(nd - other.dim()), 1);
  for (int64_t s : self.sizes()) sa.push_back(s);
  for (int64_t s : other.sizes()) sb.push_back(s);
  DimVector ia, ib, res;
  for (int64_t i = 0; i < nd; ++i) {
    ia.push_back(sa[i]); ia.push_back(1);
    ib.push_back(1); ib.push_back(sb[i]);
    res.push_back(sa[i] * sb[i]);
  }
  return mul(self.reshape(ia), other.reshape(ib)).reshape(res);
}

Tensor trace(const Tensor& self) {
  if (!self.is_complex()) check_kernel_dtype(self.dtype(), "trace", true, false);
  KINDLE_CHECK(self.dim() == 2, "trace: expected a matrix, but got tensor with dim ", self.dim());
  return self.diagonal().sum();
}

}  // namespace kindle

// LU factorisation with partial pivoting of one small column-major matrix, LAPACK getrf's
// contract (1-based ipiv, info = first zero pivot, factoring continues past it). For the
// batched small matrices of det/solve/inv: MKL's getrf spends most of a 64x64 factorisation
// in its blocking and dispatch (19 µs, where the arithmetic needs about 4 µs in L1).
#pragma once

namespace kindle::cpu {

// Matrices up to this size in both dimensions take small_getrf; larger ones go to LAPACK.
inline constexpr int kSmallLuMax = 128;

void small_getrf(int m, int n, float* a, int lda, int* ipiv, int* info);
void small_getrf(int m, int n, double* a, int lda, int* ipiv, int* info);

}  // namespace kindle::cpu

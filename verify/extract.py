"""Extracting the device code of a `.cu` file into a translation unit that NVRTC can compile.

A user's file mixes host code (`main`, launch wrappers, `printf`, `std::vector`) with device code. NVRTC
compiles device code only, so the host parts are blanked out: host function definitions and declarations,
host-only headers (`cuda.h`, cuBLAS, cuFFT, Thrust, torch, ...), and `#include`s of headers that are neither the
project's own nor found in the CUDA toolkit's include folders nor provided by NVRTC (`<cstdio>`, `<vector>`,
`<bits/stdc++.h>`). Everything else stays: macros, constants, structs, templates, `__device__` helpers,
`__constant__` arrays and the kernels themselves. When the device code does need a blanked header, NVRTC fails
and the build falls back to nvcc on the whole file (`warpwise.verify.worker.nvbuild`).

The project's own headers are followed: a quoted include is looked up in the including file's folder, then in
the include folders of the project configuration (`warpwise.verify.project`); an angle include in those include
folders. A found header is inlined in place, itself extracted the same way, between `#line` directives, so
NVRTC's log names the header and its lines, and the user's file keeps its own line numbers (blanking replaces
each removed byte by a space and keeps newlines). A header with `#pragma once` is inlined once. The same walk,
without blanking, gives the whole file with its local headers inlined, which is what nvcc builds when NVRTC
cannot (and what a remote worker can build without the user's folders).

A short prelude, placed before the code and followed by `#line 1`, stands in for the dropped standard headers
that device code commonly relies on: `INFINITY`, `NAN` and `M_PI` for `<math.h>`, CCCL's `<cuda/std/climits>`
for `<climits>`, fixed-width integer types for `<cstdint>`, glibc's `uint` for any C library header, and all of
them as soon as any header was dropped (headers include each other: `<iostream>` brings `<cmath>`); `<cmath>`'s
`std::` math names and mixed-precision `pow`, and the ATen types device code receives (`Half`, `PhiloxCudaState`,
`c10::complex`) when a torch header was dropped.

Real projects defeat a clean parse: qualifier macros (`TCNN_HOST_DEVICE`), member lists pasted by a macro, host-only
libraries (fmt, nlohmann JSON) vendored next to device code. Macros that stand for `__device__` count as device
tokens; the tree is read from a copy where such macros are masked (same offsets), and what was masked or could not
be parsed is reported in `DeviceSource.parse_errors`. Host-only members of kept classes are blanked, their
standard-library data members kept as opaque storage of the same size, so the class's layout does not change.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warpwise.analyzers.parse import SourceFile

_CONTAINERS = frozenset(
    {
        "translation_unit",
        "namespace_definition",
        "declaration_list",
        "linkage_specification",
        "preproc_ifdef",
        "preproc_if",
        "preproc_else",
        "preproc_elif",
        "preproc_elifdef",
    }
)
_DEVICE_TOKENS = ("__global__", "__device__")
# A constexpr function is usable in device code (NVRTC's -default-device), so it is kept like a device one.
_KEPT_TOKENS = (*_DEVICE_TOKENS, "constexpr")

_MATH = """#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif
#ifndef M_E
#define M_E 2.7182818284590452354
#endif
#ifndef M_LOG2E
#define M_LOG2E 1.4426950408889634074
#endif
#ifndef M_LOG10E
#define M_LOG10E 0.43429448190325182765
#endif
#ifndef M_LN2
#define M_LN2 0.69314718055994530942
#endif
#ifndef M_LN10
#define M_LN10 2.30258509299404568402
#endif
#ifndef M_PI_2
#define M_PI_2 1.57079632679489661923
#endif
#ifndef M_PI_4
#define M_PI_4 0.78539816339744830962
#endif
#ifndef M_1_PI
#define M_1_PI 0.31830988618379067154
#endif
#ifndef M_2_PI
#define M_2_PI 0.63661977236758134308
#endif
#ifndef M_2_SQRTPI
#define M_2_SQRTPI 1.12837916709551257390
#endif
#ifndef M_SQRT2
#define M_SQRT2 1.41421356237309504880
#endif
#ifndef M_SQRT1_2
#define M_SQRT1_2 0.70710678118654752440
#endif
template <typename T> struct __warpwise_float {};
template <> struct __warpwise_float<float> { typedef double type; };
template <typename T> __device__ inline typename __warpwise_float<T>::type pow(double a, T b) {
  return pow(a, (double)b); }
template <typename T> __device__ inline typename __warpwise_float<T>::type pow(T a, double b) {
  return pow((double)a, b); }
"""
_LIMITS = """#ifndef INT_MAX
#define INT_MAX 2147483647
#endif
#ifndef INT_MIN
#define INT_MIN (-2147483647 - 1)
#endif
#ifndef UINT_MAX
#define UINT_MAX 4294967295U
#endif
"""
_FLOATS = """#ifndef FLT_MAX
#define FLT_MAX 3.402823466e+38F
#endif
#ifndef FLT_MIN
#define FLT_MIN 1.175494351e-38F
#endif
#ifndef FLT_EPSILON
#define FLT_EPSILON 1.192092896e-07F
#endif
#ifndef DBL_MAX
#define DBL_MAX 1.7976931348623158e+308
#endif
"""
_TIME = """#ifndef CLOCKS_PER_SEC
#define CLOCKS_PER_SEC 1000000l
#endif
"""
_INTS = """typedef signed char int8_t; typedef unsigned char uint8_t;
typedef short int16_t; typedef unsigned short uint16_t; typedef int int32_t; typedef unsigned int uint32_t;
typedef long long int64_t; typedef unsigned long long uint64_t;
"""

# What each dropped standard header is replaced by: a CCCL header when the toolkit has it, else definitions.
_REPLACEMENTS: dict[str, tuple[str | None, str]] = {
    "math.h": (None, _MATH),
    "cmath": (None, _MATH),
    "climits": ("cuda/std/climits", _LIMITS),
    "limits.h": ("cuda/std/climits", _LIMITS),
    "cfloat": ("cuda/std/cfloat", _FLOATS),
    "float.h": ("cuda/std/cfloat", _FLOATS),
    "ctime": (None, _TIME),
    "time.h": (None, _TIME),
    "cstdint": (None, _INTS),
    "stdint.h": (None, _INTS),
}


_UINT = """typedef unsigned int uint; typedef unsigned short ushort; typedef unsigned long ulong;
"""
_EVERYTHING = ("cmath", "climits", "cfloat", "cstdint", "ctime")
_STD = """#include <cuda/std/type_traits>
#include <cuda/std/limits>
#include <cuda/std/utility>
#include <cuda/std/initializer_list>
namespace std { using namespace cuda::std; }
"""
_STD_MINMAX = """namespace std {
template <typename T> __host__ __device__ constexpr const T& min(const T& a, const T& b) { return b < a ? b : a; }
template <typename T> __host__ __device__ constexpr const T& max(const T& a, const T& b) { return a < b ? b : a; }
template <typename T> __host__ __device__ constexpr T min(initializer_list<T> l) {
  T m = *l.begin(); for (const T& v : l) { if (v < m) m = v; } return m; }
template <typename T> __host__ __device__ constexpr T max(initializer_list<T> l) {
  T m = *l.begin(); for (const T& v : l) { if (m < v) m = v; } return m; }
}
"""
_MATH_FUNCTIONS = (
    *("sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "pow", "sin", "cos", "tan", "asin"),
    *("acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "fabs", "floor", "ceil", "round"),
    *("trunc", "fmod", "fmin", "fmax", "erf", "erfc", "tgamma", "lgamma", "hypot", "fma", "copysign", "ldexp"),
    *("frexp", "rint", "nearbyint", "lround", "llround", "remainder", "nextafter", "isnan", "isinf", "isfinite"),
    "signbit",
)
_NAMES_STD_MATH = re.compile(r"\bstd\s*::\s*(?:" + "|".join(_MATH_FUNCTIONS) + r")\s*\(")
_STD_MATH = "namespace std {\n" + "".join(f"using ::{f}; " for f in _MATH_FUNCTIONS) + "\n}\n"
"""`<cmath>`'s `std::` names of the math functions NVRTC declares at global scope (`std::log` in device code)."""
_C_LIBRARY = frozenset(
    {"cmath", "math.h", "climits", "limits.h", "cfloat", "float.h", "cstdint", "stdint.h", "cstdio", "stdio.h"}
    | {"cstdlib", "stdlib.h", "cassert", "assert.h", "cstring", "string.h", "stddef.h", "cstddef"}
)
_TORCH_PREFIXES = ("torch/", "ATen/", "c10/")
_NAMES_STD = re.compile(r"\bstd\s*::")
_TORCH = """#include <cuda_fp16.h>
#include <cuda_bf16.h>
namespace c10 {
struct alignas(2) Half {
  unsigned short x;
  Half() = default;
  __host__ __device__ Half(float v) : x(__half_as_ushort(__float2half(v))) {}
  __host__ __device__ Half(__half v) : x(__half_as_ushort(v)) {}
  __host__ __device__ operator float() const { return __half2float(__ushort_as_half(x)); }
  __host__ __device__ operator __half() const { return __ushort_as_half(x); }
};
struct alignas(2) BFloat16 {
  unsigned short x;
  BFloat16() = default;
  __host__ __device__ BFloat16(float v) : x(__bfloat16_as_ushort(__float2bfloat16(v))) {}
  __host__ __device__ BFloat16(__nv_bfloat16 v) : x(__bfloat16_as_ushort(v)) {}
  __host__ __device__ operator float() const { return __bfloat162float(__ushort_as_bfloat16(x)); }
  __host__ __device__ operator __nv_bfloat16() const { return __ushort_as_bfloat16(x); }
};
#define WARPWISE_TORCH_OPS(T) \\
  __host__ __device__ inline T operator+(const T& a, const T& b) { return float(a) + float(b); } \\
  __host__ __device__ inline T operator-(const T& a, const T& b) { return float(a) - float(b); } \\
  __host__ __device__ inline T operator*(const T& a, const T& b) { return float(a) * float(b); } \\
  __host__ __device__ inline T operator/(const T& a, const T& b) { return float(a) / float(b); } \\
  __host__ __device__ inline T operator-(const T& a) { return -float(a); } \\
  __host__ __device__ inline T& operator+=(T& a, const T& b) { a = a + b; return a; } \\
  __host__ __device__ inline T& operator-=(T& a, const T& b) { a = a - b; return a; } \\
  __host__ __device__ inline T& operator*=(T& a, const T& b) { a = a * b; return a; } \\
  __host__ __device__ inline T& operator/=(T& a, const T& b) { a = a / b; return a; } \\
  __host__ __device__ inline float operator+(T a, float b) { return float(a) + b; } \\
  __host__ __device__ inline float operator-(T a, float b) { return float(a) - b; } \\
  __host__ __device__ inline float operator*(T a, float b) { return float(a) * b; } \\
  __host__ __device__ inline float operator/(T a, float b) { return float(a) / b; } \\
  __host__ __device__ inline float operator+(float a, T b) { return a + float(b); } \\
  __host__ __device__ inline float operator-(float a, T b) { return a - float(b); } \\
  __host__ __device__ inline float operator*(float a, T b) { return a * float(b); } \\
  __host__ __device__ inline float operator/(float a, T b) { return a / float(b); } \\
  __host__ __device__ inline float& operator+=(float& a, const T& b) { return a += float(b); } \\
  __host__ __device__ inline float& operator*=(float& a, const T& b) { return a *= float(b); } \\
  __host__ __device__ inline double operator+(T a, double b) { return double(float(a)) + b; } \\
  __host__ __device__ inline double operator*(T a, double b) { return double(float(a)) * b; } \\
  __host__ __device__ inline double operator+(double a, T b) { return a + double(float(b)); } \\
  __host__ __device__ inline double operator*(double a, T b) { return a * double(float(b)); } \\
  __host__ __device__ inline T operator+(T a, int b) { return a + T(float(b)); } \\
  __host__ __device__ inline T operator*(T a, int b) { return a * T(float(b)); } \\
  __host__ __device__ inline T operator+(int a, T b) { return T(float(a)) + b; } \\
  __host__ __device__ inline T operator*(int a, T b) { return T(float(a)) * b; } \\
  __host__ __device__ inline T operator-(T a, int b) { return a - T(float(b)); } \\
  __host__ __device__ inline T operator/(T a, int b) { return a / T(float(b)); } \\
  __host__ __device__ inline T operator-(int a, T b) { return T(float(a)) - b; } \\
  __host__ __device__ inline T operator/(int a, T b) { return T(float(a)) / b; } \\
  __host__ __device__ inline bool operator<(T a, T b) { return float(a) < float(b); } \\
  __host__ __device__ inline bool operator>(T a, T b) { return float(a) > float(b); } \\
  __host__ __device__ inline bool operator<=(T a, T b) { return float(a) <= float(b); } \\
  __host__ __device__ inline bool operator>=(T a, T b) { return float(a) >= float(b); } \\
  __host__ __device__ inline bool operator==(T a, T b) { return float(a) == float(b); } \\
  __host__ __device__ inline bool operator!=(T a, T b) { return float(a) != float(b); }
WARPWISE_TORCH_OPS(Half)
WARPWISE_TORCH_OPS(BFloat16)
#undef WARPWISE_TORCH_OPS
template <typename T, bool is_cuda = true> struct AccumulateType { using type = T; };
template <> struct AccumulateType<Half, true> { using type = float; };
template <> struct AccumulateType<BFloat16, true> { using type = float; };
template <> struct AccumulateType<float, true> { using type = float; };
template <> struct AccumulateType<double, true> { using type = double; };
template <typename T, bool is_cuda> using acc_type = typename AccumulateType<T, is_cuda>::type;
template <typename T> using opmath_type = typename AccumulateType<T, true>::type;
}
namespace at {
using c10::BFloat16;
using c10::Half;
using c10::acc_type;
using c10::opmath_type;
}
#include <cuda/std/limits>
namespace at {
template <typename T> struct numeric_limits {
  using L = ::cuda::std::numeric_limits<T>;
  static __host__ __device__ __forceinline__ T lowest() { return L::lowest(); }
  static __host__ __device__ __forceinline__ T max() { return L::max(); }
  static __host__ __device__ __forceinline__ T lower_bound() { return L::has_infinity ? -L::infinity() : L::lowest(); }
  static __host__ __device__ __forceinline__ T upper_bound() { return L::has_infinity ? L::infinity() : L::max(); }
};
template <> struct numeric_limits<c10::Half> {
  static __host__ __device__ __forceinline__ c10::Half lowest() { return c10::Half(-65504.0f); }
  static __host__ __device__ __forceinline__ c10::Half max() { return c10::Half(65504.0f); }
  static __host__ __device__ __forceinline__ c10::Half lower_bound() { return c10::Half(-__int_as_float(0x7f800000)); }
  static __host__ __device__ __forceinline__ c10::Half upper_bound() { return c10::Half(__int_as_float(0x7f800000)); }
};
template <> struct numeric_limits<c10::BFloat16> {
  static __host__ __device__ __forceinline__ c10::BFloat16 lowest() { return c10::BFloat16(-3.38953139e38f); }
  static __host__ __device__ __forceinline__ c10::BFloat16 max() { return c10::BFloat16(3.38953139e38f); }
  static __host__ __device__ __forceinline__ c10::BFloat16 lower_bound() {
    return c10::BFloat16(-__int_as_float(0x7f800000)); }
  static __host__ __device__ __forceinline__ c10::BFloat16 upper_bound() {
    return c10::BFloat16(__int_as_float(0x7f800000)); }
};
}
#define C10_WARP_SIZE 32
template <typename T>
__device__ __forceinline__ T WARP_SHFL(T v, int lane, int width = 32, unsigned mask = 0xffffffffu) {
  return __shfl_sync(mask, v, lane, width); }
template <typename T>
__device__ __forceinline__ T WARP_SHFL_XOR(T v, int m, int width = 32, unsigned mask = 0xffffffffu) {
  return __shfl_xor_sync(mask, v, m, width); }
template <typename T>
__device__ __forceinline__ T WARP_SHFL_UP(T v, unsigned d, int width = 32, unsigned mask = 0xffffffffu) {
  return __shfl_up_sync(mask, v, d, width); }
template <typename T>
__device__ __forceinline__ T WARP_SHFL_DOWN(T v, unsigned d, int width = 32, unsigned mask = 0xffffffffu) {
  return __shfl_down_sync(mask, v, d, width); }
__device__ __forceinline__ unsigned WARP_BALLOT(int p, unsigned mask = 0xffffffffu) { return __ballot_sync(mask, p); }
#define C10_HOST_DEVICE __host__ __device__
#define C10_DEVICE __device__
#define C10_HOST
#define C10_ALWAYS_INLINE inline
#define C10_LIKELY(x) (x)
#define C10_UNLIKELY(x) (x)
#define C10_LAUNCH_BOUNDS_0 __launch_bounds__(256, 4)
#define C10_LAUNCH_BOUNDS_1(max_threads) __launch_bounds__(max_threads)
#define C10_LAUNCH_BOUNDS_2(max_threads, min_blocks) __launch_bounds__(max_threads, min_blocks)
#define CUDA_KERNEL_ASSERT(cond) assert(cond)
__device__ __forceinline__ float gpuAtomicAdd(float* p, float v) { return atomicAdd(p, v); }
__device__ __forceinline__ double gpuAtomicAdd(double* p, double v) { return atomicAdd(p, v); }
__device__ __forceinline__ int gpuAtomicAdd(int* p, int v) { return atomicAdd(p, v); }
__device__ __forceinline__ c10::Half gpuAtomicAdd(c10::Half* p, c10::Half v) {
  return c10::Half(atomicAdd(reinterpret_cast<__half*>(p), static_cast<__half>(v))); }
__device__ __forceinline__ c10::BFloat16 gpuAtomicAdd(c10::BFloat16* p, c10::BFloat16 v) {
  return c10::BFloat16(atomicAdd(reinterpret_cast<__nv_bfloat16*>(p), static_cast<__nv_bfloat16>(v))); }
template <typename T> __device__ __forceinline__ void fastAtomicAdd(T* p, long long i, long long n, T v, bool) {
  gpuAtomicAdd(p + i, v); }
"""


_TORCH_PHILOX = """#include <cuda/std/tuple>
namespace at {
struct PhiloxCudaState {
  union Payload { unsigned long long val; long long* ptr; };
  Payload seed_{};
  Payload offset_{};
  unsigned int offset_intragraph_ = 0;
  bool captured_ = false;
};
namespace cuda { namespace philox {
__host__ __device__ inline ::cuda::std::tuple<unsigned long long, unsigned long long> unpack(PhiloxCudaState s) {
  if (s.captured_) {
    return ::cuda::std::make_tuple((unsigned long long)*s.seed_.ptr,
                                 (unsigned long long)(*s.offset_.ptr + s.offset_intragraph_));
  }
  return ::cuda::std::make_tuple(s.seed_.val, s.offset_.val);
}
} }
}
"""
"""ATen's dropout seed state (`at::PhiloxCudaState`, `at::cuda::philox::unpack`), which device code receives."""


_TORCH_COMPLEX = """namespace c10 {
template <typename T> struct alignas(sizeof(T) * 2) complex {
  T real_ = T(0);
  T imag_ = T(0);
  complex() = default;
  __host__ __device__ constexpr complex(const T& re, const T& im = T()) : real_(re), imag_(im) {}
  __host__ __device__ constexpr T real() const { return real_; }
  __host__ __device__ constexpr T imag() const { return imag_; }
  __host__ __device__ complex& operator+=(const complex& o) { real_ += o.real_; imag_ += o.imag_; return *this; }
  __host__ __device__ complex& operator-=(const complex& o) { real_ -= o.real_; imag_ -= o.imag_; return *this; }
  __host__ __device__ complex& operator*=(const complex& o) {
    T re = real_ * o.real_ - imag_ * o.imag_;
    imag_ = real_ * o.imag_ + imag_ * o.real_;
    real_ = re;
    return *this;
  }
};
template <typename T> __host__ __device__ complex<T> operator+(complex<T> a, const complex<T>& b) { return a += b; }
template <typename T> __host__ __device__ complex<T> operator-(complex<T> a, const complex<T>& b) { return a -= b; }
template <typename T> __host__ __device__ complex<T> operator*(complex<T> a, const complex<T>& b) { return a *= b; }
template <typename T> __host__ __device__ complex<T> operator*(complex<T> a, const T& b) { return a *= complex<T>(b); }
template <typename T> __host__ __device__ complex<T> operator*(const T& a, complex<T> b) { return b *= complex<T>(a); }
template <typename T> __host__ __device__ bool operator==(const complex<T>& a, const complex<T>& b) {
  return a.real_ == b.real_ && a.imag_ == b.imag_; }
}
namespace std {
template <typename T> __host__ __device__ constexpr c10::complex<T> conj(const c10::complex<T>& z) {
  return c10::complex<T>(z.real(), -z.imag()); }
template <typename T> __host__ __device__ constexpr T real(const c10::complex<T>& z) { return z.real(); }
template <typename T> __host__ __device__ constexpr T imag(const c10::complex<T>& z) { return z.imag(); }
template <typename T> __host__ __device__ constexpr T norm(const c10::complex<T>& z) {
  return z.real() * z.real() + z.imag() * z.imag(); }
}
"""
"""c10's `complex<T>` (`<c10/util/complex.h>`): its value layout and arithmetic, and the `std::conj`, `std::real`,
`std::imag` and `std::norm` overloads that header declares for it, for device code that uses it."""


def _is_cxx_std(name: str) -> bool:
    """Return whether a dropped header is a C++ standard library header (`<vector>`, `<algorithm>`, torch's)."""
    return name.startswith(_TORCH_PREFIXES) or name == "bits/stdc++.h" or ("." not in name and name not in _C_LIBRARY)


def _header_or(text: str, include_dirs: list[str]) -> str:
    """Return `text` when the CCCL headers it includes are in the toolkit, else nothing."""
    return text if _header_found("cuda/std/type_traits", include_dirs) else ""


def prelude_for(dropped: list[str], include_dirs: list[str], body: str | None = None) -> str:
    """Return the definitions that stand in for the dropped standard headers.

    CCCL's `std::` stand-ins cost NVRTC seconds to parse, so they come only when the device code (`body`, when
    given) names `std::`.
    """
    parts: list[str] = []
    names: list[str] = []
    # Any dropped header may have brought the C library's definitions in transitively (`<iostream>` includes
    # `<cmath>`, `cuda.h` includes `<stdlib.h>`), so each one stands for all of them.
    for name in dict.fromkeys(dropped):
        names.extend((name, *_EVERYTHING))
    for name in names:
        if name not in _REPLACEMENTS:
            continue
        header, fallback = _REPLACEMENTS[name]
        text = f"#include <{header}>\n" if header and _header_found(header, include_dirs) else fallback
        if text not in parts:
            parts.append(text)
    if dropped:
        parts.append(_UINT)
    if any(_is_cxx_std(n) for n in dropped) and (body is None or _NAMES_STD.search(body)):
        parts.append(_header_or(_STD, include_dirs) + _STD_MINMAX)
    if dropped and (body is None or _NAMES_STD_MATH.search(body)):
        parts.append(_STD_MATH)
    # A torch extension's instances name `at::Half` in their template arguments even when the device code does not.
    if any(n.startswith(_TORCH_PREFIXES) for n in dropped):
        parts.append(_TORCH)
        if body is None or "PhiloxCudaState" in body:
            parts.append(_header_or(_TORCH_PHILOX, include_dirs))
        if body is None or re.search(r"\bcomplex\s*<", body):
            parts.append(_TORCH_COMPLEX)
    # Only NVRTC lacks the C library; nvcc given the same text has the real headers.
    return f"#ifdef __CUDACC_RTC__\n{''.join(parts)}#endif\n" if parts else ""


@dataclass(frozen=True, slots=True)
class DeviceSource:
    """A device-only translation unit, the whole file with its headers inlined, and what was removed."""

    text: str
    dropped_functions: tuple[str, ...]
    dropped_includes: tuple[str, ...]
    host_text: str = ""
    headers: tuple[str, ...] = ()
    missing_headers: tuple[str, ...] = ()
    parse_errors: tuple[str, ...] = ()
    """`file:line` of the first syntax error tree-sitter found in the file and each inlined header."""


def _has_token(node: Any, tokens: tuple[str, ...]) -> bool:
    """Return whether a direct child, or a qualifier below one, is one of `tokens`."""
    for c in node.children:
        if c.type in tokens:
            return True
        if c.type in ("type_qualifier", "storage_class_specifier", "attribute_specifier") and any(
            g.type in tokens for g in c.children
        ):
            return True
    return False


def _is_function_declaration(node: Any) -> bool:
    """Return whether a declaration declares a function (a prototype)."""
    for d in node.children_by_field_name("declarator"):
        inner = d
        while inner is not None and inner.type in ("pointer_declarator", "reference_declarator"):
            inner = inner.child_by_field_name("declarator")
        if inner is not None and inner.type == "function_declarator":
            return True
    return False


def _header_found(name: str, include_dirs: list[str]) -> bool:
    """Return whether a header exists in one of the include folders."""
    return any((Path(d) / name).is_file() for d in include_dirs)


def is_host_only(name: str) -> bool:
    """Return whether a header declares host APIs only (cuBLAS, the driver API, Thrust, torch, ...)."""
    return name in _HOST_ONLY or name.startswith(_HOST_ONLY_PREFIXES)


_HOST_ONLY = frozenset({"cuda.h", "cudaTypedefs.h", "cudaProfiler.h", "cuda_profiler_api.h", "nvrtc.h", "nvml.h"})
_HOST_ONLY_PREFIXES = (
    "cublas",
    "cufft",
    "curand.h",
    "cusparse",
    "cusolver",
    "cudnn",
    "nccl",
    "nvtx",
    "nvToolsExt",
    "thrust/",
    "torch/",
    "ATen/",
    "c10/",
    "pybind11/",
    # Host-only C++ libraries projects vendor (formatting, JSON, logging, image files, tests).
    "fmt/",
    "nlohmann/",
    "json/json.hpp",
    "spdlog/",
    "gtest/",
    "benchmark/",
    "stb_image",
    "tinyexr",
)
_TOOLKIT_DEVICE_HEADERS = frozenset({"curand_kernel.h", "curand_philox4x32_x.h", "curand_mtgp32_kernel.h"})
"""Device headers of the CUDA math libraries: when no folder has one, the kernel cannot build without it."""


_CUB_UMBRELLA = "cub/cub.cuh"
_CUB_HOST_PARTS = ("cub/device/", "cub/util_allocator.cuh")
"""CUB's host-side parts: device-wide algorithms (launched from the host) and the host caching allocator."""
_UMBRELLA_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*<(cub/[^>]+)>", re.M)


@functools.lru_cache(maxsize=8)
def _cub_device_parts(cuda_dirs: tuple[str, ...]) -> tuple[str, ...]:
    """Return the headers the toolkit's `<cub/cub.cuh>` includes, less its host-side parts."""
    for d in cuda_dirs:
        try:
            text = (Path(d) / _CUB_UMBRELLA).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        return tuple(n for n in _UMBRELLA_INCLUDE.findall(text) if not n.startswith(_CUB_HOST_PARTS))
    return ()


def missing_hint(name: str, cuda_dirs: list[str]) -> str:
    """Return what to do about a header none of the folders has, in one line naming the header."""
    where = ", ".join(cuda_dirs) or "no CUDA toolkit include folder was found"
    if name.startswith("curand"):
        return (
            f"`{name}` (cuRAND's device API) is not in the CUDA toolkit's include folders ({where}) and "
            "cuda-pathfinder found no nvidia-curand wheel; install the toolkit's cuRAND headers or "
            "`pip install nvidia-curand`, or "
            "add their folder with -I or `include-dirs` in [tool.warpwise]"
        )
    return ""


_MAX_DEPTH = 32
_OBJECT_MACRO = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+(\w+)(?![\w(])[ \t]*((?:[^\n]*\\\n)*[^\n]*)", re.M)
_KNOWN_DEVICE_MACROS = frozenset({"C10_HOST_DEVICE", "C10_DEVICE", "QUALIFIERS", "__forceinline_device__"})


_FILE_SCOPE_STATEMENTS = frozenset({"while_statement", "if_statement", "for_statement", "do_statement"})
"""Statements tree-sitter finds at file scope after misreading a macro (a call of a macro that defines functions
parses as an `expression_statement`: that one stays)."""
_HOST_NAMESPACES = re.compile(rb"\b(?:fmt|nlohmann|spdlog|py|pybind11|torch)\s*::")
_DIRECTIVE_OR_NOT = re.compile(rb"^([ \t]*#(?:[^\n]*\\\n)*[^\n]*)$|^[^\n]+$", re.M)


def _spaces(line: bytes) -> bytes:
    """Return a line blanked (every byte a space)."""
    return b" " * len(line)


_LONE_NAME = re.compile(rb"^([ \t]*)([A-Za-z_]\w*)([ \t]*)$")
_WORD = re.compile(rb"[A-Za-z_]\w*")


def _as_inline(word: bytes) -> bytes:
    """Return a qualifier macro's name as `inline` padded to its length (spaces when it is shorter)."""
    return b"inline".ljust(len(word)) if len(word) >= len(b"inline") else b" " * len(word)


def _mask_member_macros(data: bytes, macros: set[bytes], qualifiers: set[str]) -> bytes | None:
    """Return the text as tree-sitter can parse it (None when unchanged), every offset kept.

    A line that is only an object-like macro's name becomes `;`, and a macro standing for `__device__` becomes
    `inline` (`HOST_DEVICE pair(T a)` parses as a constructor only so); directives stay as they are.
    """
    quals = {q.encode() for q in qualifiers}
    lines = data.split(b"\n")
    changed = False
    in_directive = False
    for i, line in enumerate(lines):
        directive = in_directive or line.lstrip().startswith(b"#")
        in_directive = directive and line.rstrip(b"\r").endswith(b"\\")
        if directive:
            continue
        lone = _LONE_NAME.match(line)
        if lone is not None and lone.group(2) in macros:
            lines[i] = lone.group(1) + b";" + b" " * (len(lone.group(2)) - 1) + lone.group(3)
            changed = True
        elif quals and any(w in quals for w in _WORD.findall(line)):
            lines[i] = _WORD.sub(lambda m: _as_inline(m.group(0)) if m.group(0) in quals else m.group(0), line)
            changed = True
    return b"\n".join(lines) if changed else None


def _first_error_line(node: Any) -> int:
    """Return the 1-based line of the first syntax error under a node."""
    stack = [node]
    while stack:
        n = stack.pop(0)
        if n.type == "ERROR" or n.is_missing:
            return int(n.start_point[0]) + 1
        stack[:0] = [c for c in n.children if c.has_error or c.is_missing or c.type == "ERROR"]
    return int(node.start_point[0]) + 1


_PRAGMA_ONCE = re.compile(rb"^[ \t]*#[ \t]*pragma[ \t]+once\b", re.MULTILINE)


class _Walk:
    """One extraction: the folders searched, what was dropped and found, and headers already inlined once."""

    def __init__(self, user_dirs: list[str], cuda_dirs: list[str], blank: bool) -> None:
        self.user_dirs = user_dirs
        self.cuda_dirs = cuda_dirs
        self.blank = blank
        self.once: set[Path] = set()
        self.dropped_fns: list[str] = []
        self.dropped_incs: list[str] = []
        self.missing: list[str] = []
        self.headers: list[str] = []
        self.device_macros: set[str] = set(_KNOWN_DEVICE_MACROS)
        self.parse_errors: list[str] = []
        self.object_macros: set[bytes] = set()

    def _collect_device_macros(self, data: bytes) -> None:
        """Remember the object-like macros of a file that stand for `__device__` (`#define HD __host__ __device__`)."""
        for m in _OBJECT_MACRO.finditer(data):
            self.object_macros.add(m.group(1))
            words = set(re.findall(rb"\w+", m.group(2)))
            if words & {b"__device__", b"__global__"} or any(w.decode() in self.device_macros for w in words):
                self.device_macros.add(m.group(1).decode())

    def _host_header(self, text: bytes, name: str) -> bytes:
        """Return a header tree-sitter cannot parse and that holds no device code as its preprocessor lines only.

        Blanking reads the syntax tree; where an unexpanded macro breaks the parse (`fmt`, a logging header), host
        declarations would be kept and NVRTC would fail on them. Without any device code in the header, nothing
        but its macros and includes can matter to a kernel, so only those stay (and the walk says so).
        """
        self._collect_device_macros(text)
        if not SourceFile.parse(text).tree.root_node.has_error:
            return text
        words = {w.decode() for w in re.findall(rb"[A-Za-z_]\w*", text)}
        if words & {"__device__", "__global__", "__constant__", "__shared__"} or words & self.device_macros:
            return text
        self.parse_errors.append(f"{name}: no device code and not parsable; only its preprocessor lines were kept")
        return _DIRECTIVE_OR_NOT.sub(lambda m: m.group(1) or _spaces(m.group(0)), text)

    def _host_only_node(self, data: bytes, node: Any, statement: bool) -> bool:
        """Return whether a file-scope statement holds no device code, or an alias names a host-only library."""
        body = data[node.start_byte : node.end_byte]
        words = {w.decode() for w in re.findall(rb"[A-Za-z_]\w*", body)}
        if words & {"__device__", "__global__", "__constant__", "__shared__"} or words & self.device_macros:
            return False
        return statement or bool(_HOST_NAMESPACES.search(body) or _HOST_TYPES.search(body))

    def _host_class(self, data: bytes, node: Any) -> bool:
        """Return whether a class holds host-only members and no device code (nor a macro standing for it)."""
        if not _host_class(data, node):
            return False
        words = {w.decode() for w in re.findall(rb"[A-Za-z_]\w*", data[node.start_byte : node.end_byte])}
        return not words & self.device_macros

    def _host_members(self, data: bytes, node: Any) -> list[tuple[int, int, str | None]]:
        """Return the blanking of a kept class's member function definitions that use host-only types.

        Such a member (`void copy_from_host(const std::vector<T>&)`) cannot run on the device, and NVRTC has no
        `std::vector` to parse it with; the class's data members, and so its layout, stay as they are.
        """
        cls = node
        if node.type == "template_declaration":
            inner = [c for c in node.named_children if c.type in ("class_specifier", "struct_specifier")]
            if not inner:
                return []
            cls = inner[-1]
        body = cls.child_by_field_name("body")
        if body is None:
            return []
        edits: list[tuple[int, int, str | None]] = []
        for member in body.named_children:
            if member.type == "field_declaration":
                text = data[member.start_byte : member.end_byte]
                if not text.rstrip().endswith((b";", b"}")):
                    # The declaration goes on past a conditional (`) #if X { ... } #else = 0; #endif`): kept whole.
                    continue
                if _is_function_declaration(member):
                    # A method prototype of host-only types; the class stays polymorphic if it was.
                    others = data[body.start_byte : member.start_byte] + data[member.end_byte : body.end_byte]
                    virtual = re.search(rb"\bvirtual\b", text)
                    keep = not _HOST_TYPES.search(text) or self._device_head(data, member)
                    derived = cls.child_by_field_name("base_class_clause") is not None or any(
                        c.type == "base_class_clause" for c in cls.children
                    )
                    if not keep and (not virtual or derived or re.search(rb"\bvirtual\b", others)):
                        edits.append((member.start_byte, member.end_byte, None))
                    continue
                stub = _opaque_member(data, member)
                if stub is not None:
                    edits.append((member.start_byte, member.end_byte, stub))
                continue
            fn = member
            if member.type == "template_declaration":
                fns = [c for c in member.named_children if c.type == "function_definition"]
                fn = fns[-1] if fns else member
            if fn.type != "function_definition" or _has_token(fn, _KEPT_TOKENS) or self._device_head(data, fn):
                continue
            text = data[member.start_byte : member.end_byte]
            if _HOST_TYPES.search(text) and not re.search(rb"\bvirtual\b", text):
                edits.append((member.start_byte, member.end_byte, None))
        return edits

    def _host_template(self, data: bytes, node: Any) -> bool:
        """Return whether a template declares a host function prototype or aliases a host-only type."""
        inner = [c for c in node.named_children if c.type in ("declaration", "alias_declaration")]
        if not inner:
            return False
        if inner[-1].type == "alias_declaration":
            return self._host_only_node(data, inner[-1], statement=False)
        decl = inner[-1]
        host = _is_function_declaration(decl) and not _has_token(decl, _KEPT_TOKENS)
        return host and not self._device_head(data, decl)

    def _device_head(self, data: bytes, fn: Any) -> bool:
        """Return whether a function's head (before its body) names a macro that stands for `__device__`.

        Qualifier macros are identifiers to tree-sitter (`TCNN_HOST_DEVICE vec3 f()`, cuRAND's `QUALIFIERS`), and
        an unexpanded macro can make it parse members of a class as a function at file scope.
        """
        body = fn.child_by_field_name("body")
        head = data[fn.start_byte : body.start_byte if body is not None else fn.end_byte]
        return any(w.decode() in self.device_macros for w in re.findall(rb"[A-Za-z_]\w*", head))

    def resolve(self, name: str, quoted: bool, folder: Path | None) -> Path | None:
        """Return the project header an include names, or None when it is not the project's."""
        candidates = [folder / name] if quoted and folder is not None else []
        candidates += [Path(d) / name for d in self.user_dirs]
        for cand in candidates:
            if cand.is_file():
                return cand.resolve()
        return None

    def process(self, data: bytes, label: str, folder: Path | None, depth: int, tree: Any = None) -> str:
        """Return one file's text with host code blanked (when blanking) and project headers inlined.

        `tree` is the file's syntax tree when the caller has it (the analysed source); headers are parsed here.
        """
        self._collect_device_macros(data)
        masked = _mask_member_macros(data, self.object_macros, self.device_macros - _KNOWN_DEVICE_MACROS)
        if masked is not None:
            # A line holding only a macro (`TVEC_BODY`) derails tree-sitter for the rest of the file: the tree is
            # read from a copy where it is an empty declaration (same offsets), the edits apply to the real text.
            tree = SourceFile.parse(masked).tree
            self.parse_errors.append(f"{label}: parsed with its qualifier and member-list macros masked")
        tree = tree if tree is not None else SourceFile.parse(data).tree
        if tree.root_node.has_error:
            self.parse_errors.append(f"{label}:{_first_error_line(tree.root_node)}")
        edits: list[tuple[int, int, str | None]] = []
        stack = [tree.root_node]
        while stack:
            node = stack.pop()
            for child in node.children:
                t = child.type
                if t in _CONTAINERS:
                    stack.append(child)
                elif not self.blank:
                    if t == "preproc_include":
                        edit = self.include(data, child, label, folder, depth)
                        if edit is not None:
                            edits.append(edit)
                elif t == "function_definition":
                    if not _has_token(child, _KEPT_TOKENS) and not self._device_head(data, child):
                        edits.append((child.start_byte, child.end_byte, None))
                        self.dropped_fns.append(_function_name(data, child))
                elif t == "template_declaration":
                    inner = [c for c in child.named_children if c.type in ("function_definition", "declaration")]
                    host = inner and inner[-1].type == "function_definition" and not _has_token(inner[-1], _KEPT_TOKENS)
                    if host and not self._device_head(data, inner[-1]):
                        edits.append((child.start_byte, child.end_byte, None))
                        self.dropped_fns.append(_function_name(data, inner[-1]))
                    elif self._host_template(data, child):
                        edits.append((child.start_byte, child.end_byte, None))
                elif t == "declaration":
                    function = _is_function_declaration(child) and not _has_token(child, _DEVICE_TOKENS)
                    function = function and not self._device_head(data, child)
                    if function or _host_variable(data, child):
                        edits.append((child.start_byte, child.end_byte, None))
                elif t == "template_instantiation":
                    # `template void fwd<float>(Params&);` instantiates a host template that is blanked.
                    if not re.search(rb"\b__(?:global|device)__\b", data[child.start_byte : child.end_byte]):
                        edits.append((child.start_byte, child.end_byte, None))
                elif t in _FILE_SCOPE_STATEMENTS or t in ("alias_declaration", "using_declaration"):
                    # A statement at file scope is a parse artefact of an unexpanded macro; an alias or `using` of
                    # a host-only library's names (`fmt::literals`, `nlohmann::json`) means nothing to NVRTC.
                    if self._host_only_node(data, child, statement=t in _FILE_SCOPE_STATEMENTS):
                        edits.append((child.start_byte, child.end_byte, _alias_stub(data, child)))
                elif t in ("class_specifier", "struct_specifier") and self._host_class(data, child):
                    end = child.next_sibling.end_byte if _is_semicolon(child.next_sibling) else child.end_byte
                    edits.append((child.start_byte, end, _base_stub(data, child, end)))
                if self.blank and t in ("class_specifier", "struct_specifier", "template_declaration"):
                    edits.extend(self._host_members(data, child))
                elif t == "preproc_include":
                    edit = self.include(data, child, label, folder, depth)
                    if edit is not None:
                        edits.append(edit)
        return _apply(data, edits)

    def include(
        self, data: bytes, node: Any, label: str, folder: Path | None, depth: int
    ) -> tuple[int, int, str | None] | None:
        """Return the edit for one `#include`: inline a project header, blank a dropped one, or keep it."""
        path = node.child_by_field_name("path")
        if path is None:
            return None
        raw = data[path.start_byte : path.end_byte].decode("utf-8", "replace")
        quoted = path.type == "string_literal"
        name = raw.strip('<>"')
        host_only = is_host_only(name)
        # Host-only headers are never inlined (torch's include folders may be among the include dirs).
        found = self.resolve(name, quoted, folder) if depth < _MAX_DEPTH and not host_only else None
        if found is not None and name in _TOOLKIT_DEVICE_HEADERS:
            # A CUDA library's device headers found in an include folder are the library's, not the project's:
            # they stay an `#include` the compiler follows (inlining would blank their `QUALIFIERS` functions).
            return None
        if found is not None and not any(found.is_relative_to(Path(d).resolve()) for d in self.cuda_dirs):
            if found in self.once:
                return (node.start_byte, node.end_byte, None)
            return (node.start_byte, node.end_byte, self.inline(data, node, found, name, label, depth))
        if not self.blank:
            return None
        if name == _CUB_UMBRELLA and (parts := _cub_device_parts(tuple(self.cuda_dirs))):
            # CUB's umbrella header brings its device-wide algorithms, whose host launch code (Thrust's triple
            # chevron) NVRTC rejects; device code uses the block, warp and thread levels, which NVRTC builds.
            self.dropped_incs.append(f"{name} (its cub/device/ headers)")
            next_line = data[: node.start_byte].count(b"\n") + 2
            tail = "\n" if data[node.end_byte - 1 : node.end_byte] == b"\n" else ""
            lines = "".join(f"#include <{p}>\n" for p in parts)
            return (node.start_byte, node.end_byte, f'\n{lines}#line {next_line} "{_escape(label)}"{tail}')
        if host_only or not _header_found(name, self.cuda_dirs):
            self.dropped_incs.append(name)
            named = quoted or name in _TOOLKIT_DEVICE_HEADERS
            if found is None and not host_only and named and name not in _REPLACEMENTS:
                self.missing.append(name)
            return (node.start_byte, node.end_byte, None)
        return None

    def inline(self, data: bytes, node: Any, found: Path, name: str, label: str, depth: int) -> str:
        """Return a header's extracted text between `#line` directives, or nothing when it was inlined once."""
        try:
            text = found.read_bytes()
        except OSError:
            self.missing.append(name)
            return ""
        if _PRAGMA_ONCE.search(text):
            self.once.add(found)
            text = _PRAGMA_ONCE.sub(lambda m: b" " * len(m.group(0)), text)
        if str(found) not in self.headers:
            self.headers.append(str(found))
        if self.blank:
            text = self._host_header(text, name)
        body = self.process(text, name, found.parent, depth + 1)
        next_line = data[: node.start_byte].count(b"\n") + 2
        tail = "\n" if data[node.end_byte - 1 : node.end_byte] == b"\n" else ""
        return f'\n#line 1 "{_escape(name)}"\n{body}\n#line {next_line} "{_escape(label)}"{tail}'


_HOST_TYPES = re.compile(
    rb"\b(?:std\s*::\s*(?:vector|string|map|unordered_map|set|unordered_set|tuple|shared_ptr|unique_ptr|mutex|thread"
    rb"|function|ostream|istream|ofstream|ifstream|stringstream|ostringstream|hash|deque|list|queue|priority_queue"
    rb"|chrono|cout|cerr)|torch\s*::|at\s*::\s*(?:Tensor\w*|ScalarType|IntArrayRef)|py\s*::|cudaGraph_t)\b"
)
_DEVICE_STORAGE = ("__device__", "__constant__", "__shared__", "__managed__")


def _host_variable(data: bytes, node: Any) -> bool:
    """Return whether a file-scope variable is of a host-only type (`std::map<K, V> cache;`), not device storage."""
    return bool(_HOST_TYPES.search(data[node.start_byte : node.end_byte])) and not _has_token(node, _DEVICE_STORAGE)


def _host_class(data: bytes, node: Any) -> bool:
    """Return whether a class holds host-only members (std containers, tensors) and no device code."""
    body = data[node.start_byte : node.end_byte]
    return bool(_HOST_TYPES.search(body)) and not any(t.encode() in body for t in (*_DEVICE_TOKENS, "__host__"))


_STD_SIZES = {
    b"unique_ptr": 8,
    b"shared_ptr": 16,
    b"vector": 24,
    b"string": 32,
    b"function": 32,
    b"map": 48,
    b"set": 48,
    b"unordered_map": 56,
    b"unordered_set": 56,
}
"""Sizes of libstdc++'s types on a 64-bit host (alignment 8): what a blanked member keeps of the class's layout."""
_STD_MEMBER = re.compile(rb"^\s*(?:mutable\s+)?std\s*::\s*(\w+)\b")


def _opaque_member(data: bytes, member: Any) -> str | None:
    """Return opaque storage of the same size for a data member of a host-only standard type, else None.

    `std::shared_ptr<Alloc> m_alloc;` has no meaning on the device, but the class's layout (what a kernel receives
    when the class is passed by value) must not change: it becomes `alignas(8) unsigned char m_alloc[16];`.
    """
    text = data[member.start_byte : member.end_byte]
    m = _STD_MEMBER.match(text)
    decls = member.children_by_field_name("declarator")
    if m is None or m.group(1) not in _STD_SIZES or len(decls) != 1 or decls[0].type != "field_identifier":
        return None
    name = data[decls[0].start_byte : decls[0].end_byte].decode()
    size = _STD_SIZES[m.group(1)]
    return f"alignas(8) unsigned char {name}[{size}];" + "\n" * text.count(b"\n")


def _alias_stub(data: bytes, node: Any) -> str | None:
    """Return an empty class standing in for a blanked alias of a host-only type (`using json = nlohmann::json;`).

    Declarations that name the alias (`virtual json hyperparams() const = 0;`) stay well-formed for NVRTC.
    """
    name = node.child_by_field_name("name") if node.type == "alias_declaration" else None
    if name is None:
        return None
    return f"struct {data[name.start_byte : name.end_byte].decode()} {{}};"


def _base_stub(data: bytes, node: Any, end: int) -> str | None:
    """Return an empty definition standing in for a blanked host class that a kept class derives from, else None.

    `class GPUMatrix : public GPUMatrixBase` still needs its base to be a class; the stub keeps the line count.
    """
    name = node.child_by_field_name("name")
    if name is None:
        return None
    ident = data[name.start_byte : name.end_byte]
    if not re.search(rb"(?:public|protected|private)\s+" + re.escape(ident) + rb"\b", data):
        return None
    keyword = data[node.start_byte : node.start_byte + 6].split()[0].decode()
    return f"{keyword} {ident.decode()} {{}};" + "\n" * data[node.start_byte : end].count(b"\n")


def _is_semicolon(node: Any) -> bool:
    """Return whether a node is the `;` that ends a class definition."""
    return node is not None and node.type == ";"


def _escape(name: str) -> str:
    """Return a file name as a C string literal body."""
    return name.replace("\\", "\\\\").replace('"', '\\"')


_CONTINUATION_OR_BYTE = re.compile(rb"(\\(?=\r?\n))|[^\r\n]")


def _apply(data: bytes, edits: list[tuple[int, int, str | None]]) -> str:
    """Return `data` with spans blanked (None: every byte but newlines becomes a space) or replaced.

    A line continuation (`\\` before a newline) is kept: a span tree-sitter misread inside a multi-line macro
    must not cut the macro short.
    """
    out = bytearray()
    pos = 0
    for start, end, repl in sorted(edits, key=lambda e: (e[0], e[1])):
        if start < pos:
            continue
        out += data[pos:start]
        if repl is None:
            out += _CONTINUATION_OR_BYTE.sub(lambda m: m.group(0) if m.group(1) else b" ", data[start:end])
        else:
            out += repl.encode("utf-8", "surrogatepass")
        pos = end
    out += data[pos:]
    return out.decode("utf-8", "replace")


def device_source(
    text: str | bytes | SourceFile,
    filename: str = "kernel.cu",
    include_dirs: list[str] | None = None,
    *,
    path: str | Path | None = None,
    user_include_dirs: tuple[str, ...] | list[str] = (),
    host: bool = True,
) -> DeviceSource:
    """Return the file with host code blanked out and project headers inlined, ready for NVRTC.

    `path` is where the file lives (its folder is searched for quoted includes); compiler messages name
    `filename`. `include_dirs` are the CUDA toolkit's folders, `user_include_dirs` the project's. Given a
    `SourceFile` (a model's `source`), its tree is read for the file itself; only included headers are parsed.
    `host=False` skips the host-side text (`host_text` is then empty) for callers that build device code only.
    """
    from warpwise.verify.worker.nvbuild import cuda_include_dirs

    dirs = include_dirs if include_dirs is not None else cuda_include_dirs()
    tree = text.tree if isinstance(text, SourceFile) else None
    if isinstance(text, SourceFile):
        data = text.text
    else:
        data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    folder = Path(path).resolve().parent if path else None
    device = _Walk(list(user_include_dirs), dirs, blank=True)
    body = device.process(data, filename, folder, 0, tree)
    host_body = (
        _Walk(list(user_include_dirs), dirs, blank=False).process(data, filename, folder, 0, tree) if host else ""
    )
    prelude = prelude_for(device.dropped_incs, dirs, body) + f'#line 1 "{_escape(filename)}"\n'
    return DeviceSource(
        prelude + body,
        tuple(device.dropped_fns),
        tuple(device.dropped_incs),
        host_text=host_body,
        headers=tuple(device.headers),
        missing_headers=tuple(dict.fromkeys(device.missing)),
        parse_errors=tuple(dict.fromkeys(device.parse_errors)),
    )


def _function_name(data: bytes | bytearray, fn: Any) -> str:
    """Return the declared name of a function definition."""
    d = fn.child_by_field_name("declarator")
    while d is not None and d.type != "function_declarator":
        d = d.child_by_field_name("declarator")
    if d is None:
        return "?"
    name = d.child_by_field_name("declarator")
    return bytes(data[name.start_byte : name.end_byte]).decode("utf-8", "replace") if name is not None else "?"


def qualified_name(text: str | bytes | SourceFile, offset: int, name: str) -> str:
    """Return `name` qualified by the namespaces that enclose the byte offset (`outer::inner::apply`)."""
    source = text if isinstance(text, SourceFile) else SourceFile.parse(text)
    data, tree = source.text, source.tree
    node = tree.root_node.descendant_for_byte_range(offset, offset)
    scopes: list[str] = []
    while node is not None:
        if node.type == "namespace_definition":
            n = node.child_by_field_name("name")
            if n is not None:
                scopes.append(data[n.start_byte : n.end_byte].decode("utf-8", "replace"))
        node = node.parent
    return "::".join([*reversed(scopes), name])

"""Template kernels instantiated through host templates: the instances a file makes, found from its host code."""

from __future__ import annotations

from warpwise.analyzers.build import analyze_text
from warpwise.verify.extract import device_source
from warpwise.verify.gate import kernel_instantiations
from warpwise.verify.instances import instantiations

SWITCH = """
#define BOOL_SWITCH(COND, CONST_NAME, ...) [&] { if (COND) { constexpr static bool CONST_NAME = true; \\
  return __VA_ARGS__(); } else { constexpr static bool CONST_NAME = false; return __VA_ARGS__(); } }()
template <int N, bool V, typename T> struct Traits { static constexpr int n = N; using t = T; };
template <typename K> __global__ void fwd(typename K::t* x) { x[threadIdx.x] = K::n; }
template <int N, typename T> void fwd_launch(T* x, int n) {
  BOOL_SWITCH(n % 4 == 0, kIsVec, [&] {
    using Kt = Traits<N, kIsVec, T>;
    auto kernel = &fwd<Kt>;
    kernel<<<1, N>>>(x);
  });
}
template <typename T> void fwd_cuda(T* x, int n) { fwd_launch<128, T>(x, n); }
template void fwd_cuda<float>(float* x, int n);
template void fwd_cuda<double>(double* x, int n);
"""

DEDUCED = """
#define DISPATCH(TYPE, NAME, ...) switch (TYPE) { case 0: { using scalar_t_in = float; __VA_ARGS__; break; } }
template <typename T, typename U> __global__ void norm(U* out, const T* in, int n) { out[0] = in[0]; }
template <typename T, typename U> void host_norm(U* out, const T* in, int n) { norm<<<1, 32>>>(out, in, n); }
void binding(int type, void* out, void* in, int n) {
  DISPATCH(type, "norm", using acc_t = double; host_norm((acc_t*)out, (const scalar_t_in*)in, n););
}
void binding2(at::Tensor out, at::Tensor in) {
  DISPATCH(0, "norm", host_norm(out.data_ptr<double>(), in.data_ptr<scalar_t_in>(), 1););
}
"""


def test_through_a_switch_macro_an_alias_a_caller_and_explicit_instantiations() -> None:
    model = analyze_text(SWITCH)
    assert instantiations(model, "fwd") == [("Traits<128, true, float>",), ("Traits<128, true, double>",)]


def test_arguments_deduced_from_the_types_passed_and_a_dispatch_macros_alias() -> None:
    model = analyze_text(DEDUCED)
    # `host_norm(out.data_ptr<double>(), in.data_ptr<scalar_t_in>(), 1)` deduces T and U from the pointers passed.
    assert instantiations(model, "norm") == [("float", "double")]


def test_a_name_no_host_code_binds_gives_nothing() -> None:
    text = (
        "template <typename T> __global__ void k(T* x) {}\ntemplate <typename T> void h(T* x) { k<T><<<1, 1>>>(x); }\n"
    )
    assert instantiations(analyze_text(text), "k") == []
    assert kernel_instantiations(text, "a.cu", "k") == [("?",)]


def test_explicit_instantiations_of_blanked_host_templates_are_blanked_too() -> None:
    dev = device_source(SWITCH, "s.cu")
    assert "template void fwd_cuda<float>" not in dev.text
    assert "__global__ void fwd" in dev.text


EPILOGUE = """
#define SWITCH_REAL(KIND, N, ...) switch (KIND) { case 0: { using real_##N = float; __VA_ARGS__; break; } }
template <typename In, typename Acc, typename Out> struct ScaleEpilogue {
  __device__ Out operator()(Acc v) const { return static_cast<Out>(v * Acc(2)); }
};
template <int VEC, typename T, typename Acc, template <typename, typename, typename> class Epi>
__global__ void apply_epilogue(T* out, const T* in, int n) {
  int i = (blockIdx.x * blockDim.x + threadIdx.x) * VEC;
  Epi<T, Acc, T> epi;
  for (int k = 0; k < VEC && i + k < n; ++k) out[i + k] = epi(static_cast<Acc>(in[i + k]));
}
template <template <typename, typename, typename> class Epi>
void host_apply(void* out, const void* in, int kind, int n) {
  SWITCH_REAL(kind, 0, using acc_t = double;
              const int VEC = sizeof(float4) / sizeof(real_0);
              apply_epilogue<VEC, real_0, acc_t, Epi><<<(n + 255) / 256, 256>>>((real_0*)out, (const real_0*)in, n););
}
void binding(void* out, const void* in, int n) { host_apply<ScaleEpilogue>(out, in, 0, n); }
"""


def test_a_template_template_parameter_and_a_const_int_in_a_macro_argument_are_bound() -> None:
    model = analyze_text(EPILOGUE, "epilogue.cu")
    found = kernel_instantiations(EPILOGUE, "epilogue.cu", "apply_epilogue", model)
    # `VEC` is the `const int` the macro's argument declares; `Epi` the class template the binding passes.
    assert found == [("sizeof(float4) / sizeof(float)", "float", "double", "ScaleEpilogue")]

"""Launch arguments held in class or struct members: `spec_missing` names the member and where it is set (issue 17).

Our own minimal fixtures, written for these tests, of shapes real launchers use: a method launching with members its
constructor set (an initializer list, a plain assignment, `this->`), a member the class declares and no
constructor sets, a member reached through another object (`q->p`, `r.n`), and a global read by a method (which
is no member and must not be called one).
"""

from __future__ import annotations

from warpwise.verify.spec import SpecMissing, resolve_spec

KERNEL = """__global__ void scale_kernel(float* w, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) w[i] *= 2.0f;
}
"""

CLASS = (
    KERNEL
    + """
class Holder {
 public:
  float* data;
  float* spare;
  int count;
  int width;
  Holder(float* d, int c, int wd);
  void run();
  void run_spare();
};

Holder::Holder(float* d, int c, int wd) : count(c) {
  data = d;
  this->width = wd;
}

void Holder::run() {
  scale_kernel<<<(width + 255) / 256, 256>>>(data, count);
}
"""
)


def _missing(text: str, kernel: str = "scale_kernel") -> SpecMissing:
    spec = resolve_spec("/nonexistent/members_fixture.cu", text, kernel)
    assert isinstance(spec, SpecMissing), spec
    return spec


def test_members_set_in_the_constructor_are_named_with_their_origin() -> None:
    spec = _missing(CLASS)
    assert (
        "size of `w` (passed `data`: member `data` of `Holder`, set in `Holder()` from `d`; "
        "only the code that builds the `Holder` knows its value)"
    ) in spec.missing
    assert any(
        m.startswith("value of `n` (passed `count`: member `count` of `Holder`, set in `Holder()` from `c`")
        for m in spec.missing
    )
    assert spec.annotation and "w:" in spec.annotation


def test_member_set_through_this_and_one_no_constructor_sets() -> None:
    text = CLASS.replace("(data, count)", "(spare, width)")
    spec = _missing(text)
    assert any("member `spare` of `Holder`, that no constructor in this file sets" in m for m in spec.missing), spec
    assert any("member `width` of `Holder`, set in `Holder()` from `wd`" in m for m in spec.missing), spec


def test_member_of_another_object() -> None:
    text = (
        KERNEL
        + """
struct Pair { float* p; int n; };
void use(Pair* q, Pair r) { scale_kernel<<<1, 256>>>(q->p, r.n); }
"""
    )
    spec = _missing(text)
    assert (
        "size of `w` (passed `q->p`: member `p` of `q` (a `Pair*` parameter of `use()`), which the host code here does not size)"
        in spec.missing
    ), spec
    assert any(m.startswith("value of `n` (passed `r.n`: member `n` of `r`") for m in spec.missing), spec


def test_a_global_read_by_a_method_is_not_called_a_member() -> None:
    text = (
        KERNEL
        + """
float* g_buf;
int g_n;
class Runner { public: int k; void go(); };
void Runner::go() { scale_kernel<<<1, 256>>>(g_buf, g_n); }
"""
    )
    spec = _missing(text)
    assert "size of `w` (passed `g_buf`: no cudaMalloc before the launch)" in spec.missing, spec
    assert "value of `n` (passed `g_n`)" in spec.missing, spec


def test_a_member_set_several_times_lists_every_assignment() -> None:
    text = CLASS.replace("  data = d;\n", "  data = d;\n  count = 0;\n  count += c;\n")
    spec = _missing(text)
    assert any("member `count` of `Holder`, set in `Holder()` (`= c`, `= 0`, `+= c`)" in m for m in spec.missing), (
        spec.missing
    )


def test_a_local_initialized_from_a_member_names_the_member() -> None:
    text = (
        KERNEL
        + """
struct Weights { float* bias; int n; };
void add_bias(Weights* b) {
  float* dest = b->bias;
  scale_kernel<<<1, 256>>>(dest, 256);
}
"""
    )
    spec = _missing(text)
    assert (
        "size of `w` (passed `dest`: `dest` is initialized from member `bias` of `b` "
        "(a `Weights*` parameter of `add_bias()`), which the host code here does not size)"
    ) in spec.missing, spec.missing


def test_a_local_launcher_argument_reassigned_is_not_traced() -> None:
    text = (
        KERNEL
        + """
struct Weights { float* bias; int n; };
void add_bias(Weights* b, float* other) {
  float* dest = b->bias;
  if (other) { float* dest = other; }
  scale_kernel<<<1, 256>>>(dest, 256);
}
"""
    )
    spec = _missing(text)
    assert "size of `w` (passed `dest`: no cudaMalloc before the launch)" in spec.missing, spec.missing


def test_a_local_assigned_again_is_not_traced() -> None:
    text = (
        KERNEL
        + """
struct Weights { float* bias; int n; };
void add_bias(Weights* b, float* other) {
  float* dest = b->bias;
  if (other) dest = other;
  scale_kernel<<<1, 256>>>(dest, 256);
}
"""
    )
    spec = _missing(text)
    assert "size of `w` (passed `dest`: no cudaMalloc before the launch)" in spec.missing, spec.missing

/* The unary ops' rows: SG_FOR_EACH_UNARY_OP, SG_FOR_EACH_STEP_OP, then leaky_relu and clip (with
 * the parameters of opinfo.h). Each op's double reference and derivative are written here and
 * nowhere else. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "opinfo.h"

#define SELU_SCALE 1.0507009873554804934193349852946
#define SELU_ALPHA 1.6732632423543772848170429916717
#define LN2 0.69314718055994530942
#define PI 3.14159265358979323846
#define EPS ((double)FLT_EPSILON)
#define N_ NAN
#define I_ INFINITY

/* ---- Double references, derivatives, and derivatives from the saved y ---------------------- */

static double ref_neg(double x) { return -x; }
static double dref_neg(double x) { return (void)x, -1.0; }
static double dref_abs(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }
static double dref_exp(double x) { return exp(x); }
static double dref_exp_y(double y) { return y; }
static double dref_expm1_y(double y) { return y + 1; }
static double dref_log(double x) { return 1.0 / x; }
static double dref_log1p(double x) { return 1.0 / (1.0 + x); }
static double dref_sqrt(double x) { return 0.5 / sqrt(x); }
static double dref_sqrt_y(double y) { return 0.5 / y; }
static double ref_rsqrt(double x) { return 1.0 / sqrt(x); }
static double dref_rsqrt(double x) { return -0.5 / (x * sqrt(x)); }
static double dref_rsqrt_y(double y) { return -0.5 * y * y * y; }
static double ref_square(double x) { return x * x; }
static double dref_square(double x) { return 2.0 * x; }
static double ref_reciprocal(double x) { return 1.0 / x; }
static double dref_reciprocal(double x) { return -1.0 / (x * x); }
static double dref_reciprocal_y(double y) { return -y * y; }
static double ref_relu(double x) { return x > 0 ? x : 0.0; }
static double dref_relu(double x) { return x > 0 ? 1.0 : 0.0; }
static double ref_relu6(double x) { return x > 6 ? 6.0 : x > 0 ? x : 0.0; }
static double dref_relu6(double x) { return x > 0 && x < 6 ? 1.0 : 0.0; }
static double ref_elu(double x) { return x > 0 ? x : expm1(x); }
static double dref_elu(double x) { return x > 0 ? 1.0 : exp(x); }
static double dref_elu_y(double y) { return y > 0 ? 1.0 : y + 1; }
static double ref_selu(double x) { return SELU_SCALE * (x > 0 ? x : SELU_ALPHA * expm1(x)); }
static double dref_selu(double x) { return SELU_SCALE * (x > 0 ? 1.0 : SELU_ALPHA * exp(x)); }
static double ref_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double dref_sigmoid(double x) { return ref_sigmoid(x) * ref_sigmoid(-x); }
static double dref_sigmoid_y(double y) { return y * (1 - y); }
static double dref_tanh(double x) {
  double c = cosh(x);
  return 1.0 / (c * c);
}
static double dref_tanh_y(double y) { return 1 - y * y; }
static double ref_softplus(double x) { return (x > 0 ? x : 0.0) + log1p(exp(-fabs(x))); }
static double ref_gelu(double x) { return 0.5 * x * erfc(-x / sqrt(2.0)); }
static double dref_gelu(double x) {
  return 0.5 * erfc(-x / sqrt(2.0)) + x * exp(-0.5 * x * x) / sqrt(2.0 * PI);
}
/* The magnitude of gelu''s terms, Phi + |x| phi, which cancel near x = -0.75. */
static double gelu_terms(double x) {
  return 0.5 * erfc(-x / sqrt(2.0)) + fabs(x) * exp(-0.5 * x * x) / sqrt(2.0 * PI);
}
static double dref_sin(double x) { return cos(x); }
static double dref_cos(double x) { return -sin(x); }
static double ref_sign(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; }
static double ref_leaky_relu(double x) { return x > 0 ? x : (double)OPINFO_LEAKY_ALPHA * x; }
static double dref_leaky_relu(double x) { return x > 0 ? 1.0 : (double)OPINFO_LEAKY_ALPHA; }
static double ref_clip(double x) {
  return x < OPINFO_CLIP_LO ? OPINFO_CLIP_LO : x > OPINFO_CLIP_HI ? OPINFO_CLIP_HI : x;
}
static double dref_clip(double x) { return x >= OPINFO_CLIP_LO && x <= OPINFO_CLIP_HI ? 1.0 : 0.0; }

/* ---- The rows -------------------------------------------------------------------------------- */

/* Conformance bounds against scalar: libm (scalar) against the SIMD math (SLEEF u10 or
   simd_math.inc, 1 or 2 ulp each, docs/accuracy.md). */
#define EXACT                                                                                      \
  { 0 }
#define ULP(n)                                                                                     \
  { .ulp = (n) }
/* The bench's inputs, inside every op's domain unless a row says otherwise. */
#define BENCH_ANY                                                                                  \
  { -4, 4 }
#define SELU_MIN ((float)(-SELU_SCALE * SELU_ALPHA))

const opinfo_unary opinfo_unary_table[] = {
    {.name = "neg",
     .ref = ref_neg,
     .dref = dref_neg,
     .domain = {-10, 10},
     .grad_domain = {-3, 3},
     .vs_double = {0},
     .edge = {N_, -I_, I_, -0.0f, 0.0f},
     .zero_signed = true,
     .conf = {.domain = {-10, 10}, .fwd = EXACT, .bwd = EXACT},
     .sweep = {-1e19f, 1e19f},
     .bench_range = BENCH_ANY,
     .flops = OPINFO_FLOPS(1, 1)},
    {.name = "abs",
     .ref = fabs,
     .dref = dref_abs,
     .domain = {-10, 10},
     .grad_domain = {-3, 3},
     .vs_double = {0},
     .edge = {N_, I_, I_, 0, 0},
     .zero_signed = true,
     .conf = {.domain = {-10, 10}, .fwd = EXACT, .bwd = EXACT},
     .sweep = {-1e19f, 1e19f},
     .bench_range = BENCH_ANY,
     .flops = OPINFO_FLOPS(1, 2)},
    /* Backward kernels that read y (expm1, elu, sigmoid, tanh) lose the derivative's tiny value
       where y rounds to its limit (-1, 0 or 1), hence an absolute bound there. */
    {.name = "exp",
     .ref = exp,
     .dref = dref_exp,
     .dref_y = dref_exp_y,
     .domain = {-87, 88},
     .grad_domain = {-3, 3},
     .vs_double = {.rtol = 2 * EPS, .brtol = 3 * EPS},
     .edge = {N_, I_, 0, 1, 1},
     .conf = {.domain = {-100, 100}, .fwd = ULP(2), .bwd = EXACT},
     .sweep = {-104, 89},
     .bench_range = BENCH_ANY,
     .flops = OPINFO_FLOPS_SIMD(OPINFO_TRANSC, 1, OPINFO_SIMD_EXP, 2) /* backward: dy y */,
     .promise = {.fwd = 1, .fwd_range = {-104, 89}}},
    {.name = "expm1",
     .ref = expm1,
     .dref = dref_exp,
     .dref_y = dref_expm1_y,
     .domain = {-87, 88},
     .grad_domain = {-3, 3},
     .vs_double = {.rtol = 2 * EPS, .brtol = 4 * EPS, .batol = EPS},
     .edge = {N_, I_, -1, 0, -0.0f},
     .zero_signed = true,
     .conf = {.domain = {-100, 100}, .fwd = ULP(2), .bwd = EXACT},
     .sweep = {-104, 89},
     .bench_range = BENCH_ANY,
     /* SIMD: vexpm1; backward dy (y + 1). */
     .flops = OPINFO_FLOPS_SIMD(OPINFO_TRANSC, 2, OPINFO_SIMD_EXPM1, 2),
     .promise = {.fwd = 1.5, .fwd_range = {-104, 89}}},
    {.name = "log",
     .ref = log,
     .dref = dref_log,
     .domain = {1e-3f, 1e4f},
     .grad_domain = {0.2f, 5},
     .vs_double = {.rtol = 2 * EPS, .brtol = 2 * EPS},
     .edge = {N_, I_, N_, -I_, -I_},
     .conf = {.domain = {1e-3f, 1e3f}, .fwd = ULP(2), .bwd = EXACT},
     .sweep = {FLT_TRUE_MIN, FLT_MAX},
     .bench_range = {0.1f, 8},
     .flops = OPINFO_FLOPS(OPINFO_TRANSC, 1)},
    /* SLEEF's log1pf is specified up to 1e38: the accuracy report measures that range too. */
    {.name = "log1p",
     .ref = log1p,
     .dref = dref_log1p,
     .domain = {-0.999f, 1e4f},
     .grad_domain = {-0.8f, 5},
     .vs_double = {.rtol = 2 * EPS, .brtol = 2 * EPS},
     .edge = {N_, I_, N_, 0, -0.0f},
     .zero_signed = true,
     .conf = {.domain = {-0.999f, 100}, .fwd = ULP(2), .bwd = EXACT},
     .sweep = {-1, FLT_MAX},
     .sweep2_label = "log1p to 1e38",
     .sweep2 = {-1, 1e38f},
     .bench_range = {0, 8},
     .flops = OPINFO_FLOPS(OPINFO_TRANSC, 2)},
    /* IEEE sqrt is correctly rounded; 1 / sqrt(x) is two correctly rounded steps. */
    {.name = "sqrt",
     .ref = sqrt,
     .dref = dref_sqrt,
     .dref_y = dref_sqrt_y,
     .domain = {0, 1e4f},
     .grad_domain = {0.2f, 5},
     .vs_double = {.rtol = EPS, .brtol = 3 * EPS},
     .edge = {N_, I_, N_, 0, -0.0f},
     .zero_signed = true,
     .conf = {.domain = {0, 1e4f}, .fwd = EXACT, .bwd = EXACT},
     .sweep = {0, FLT_MAX},
     .bench_range = {0.1f, 8},
     .flops = OPINFO_FLOPS(1, 2)},
    {.name = "rsqrt",
     .ref = ref_rsqrt,
     .dref = dref_rsqrt,
     .dref_y = dref_rsqrt_y,
     .domain = {1e-3f, 1e4f},
     .grad_domain = {0.2f, 5},
     .vs_double = {.rtol = 2 * EPS, .brtol = 6 * EPS},
     .edge = {N_, 0, N_, I_, -I_},
     .conf = {.domain = {1e-3f, 1e4f}, .fwd = EXACT, .bwd = EXACT},
     .sweep = {FLT_TRUE_MIN, FLT_MAX},
     .bench_range = {0.1f, 8},
     .flops = OPINFO_FLOPS(2, 3)},
    {.name = "square",
     .ref = ref_square,
     .dref = dref_square,
     .domain = {-1e3f, 1e3f},
     .grad_domain = {-3, 3},
     .vs_double = {.rtol = EPS, .brtol = EPS},
     .edge = {N_, I_, I_, 0, 0},
     .zero_signed = true,
     .conf = {.domain = {-1e3f, 1e3f}, .fwd = EXACT, .bwd = EXACT},
     .sweep = {-1.8e19f, 1.8e19f},
     .bench_range = BENCH_ANY,
     .flops = OPINFO_FLOPS(1, 2)},
    {.name = "reciprocal",
     .ref = ref_reciprocal,
     .dref = dref_reciprocal,
     .dref_y = dref_reciprocal_y,
     .domain = {-10, 10},
     .grad_domain = {-4, 4},
     .vs_double = {.rtol = EPS, .brtol = 4 * EPS},
     .edge = {N_, 0, -0.0f, I_, -I_},
     .zero_signed = true,
     .conf = {.domain = {-10, 10}, .fwd = EXACT, .bwd = EXACT},
     .sweep = {-FLT_MAX, FLT_MAX},
     .bench_range = {0.25f, 4},
     .flops = OPINFO_FLOPS(1, 2)},
    {.name = "relu",
     .ref = ref_relu,
     .dref = dref_relu,
     .domain = {-10, 10},
     .grad_domain = {-3, 3},
     .vs_double = {0},
     .edge = {N_, I_, 0, 0, 0},
     .conf = {.domain = {-10, 10}, .fwd = EXACT, .bwd = EXACT},
     .sweep = {-1e6f, 1e6f},
     .bench_range = BENCH_ANY,
     .flops = OPINFO_FLOPS(1, 1)},
    {.name = "relu6",
     .ref = ref_relu6,
     .dref = dref_relu6,
     .domain = {-3, 9},
     .grad_domain = {-2, 8},
     .vs_double = {0},
     .edge = {N_, 6, 0, 0, 0},
     .conf = {.domain = {-3, 9}, .fwd = EXACT, .bwd = EXACT},
     .sweep = {-10, 10},
     .bench_range = BENCH_ANY,
     .flops = OPINFO_FLOPS(2, 2)},
    {.name = "elu",
     .ref = ref_elu,
     .dref = dref_elu,
     .dref_y = dref_elu_y,
     .domain = {-20, 5},
     .grad_domain = {-3, 3},
     .vs_double = {.rtol = 2 * EPS, .brtol = 4 * EPS, .batol = EPS},
     .edge = {N_, I_, -1, 0, -0.0f},
     .conf = {.domain = {-20, 5}, .fwd = ULP(2), .bwd = EXACT},
     .sweep = {-104, 1e6f},
     .bench_range = BENCH_ANY,
     /* SIMD: vexpm1; backward dy (y + 1). */
     .flops = OPINFO_FLOPS_SIMD(OPINFO_TRANSC + 2, 2, OPINFO_SIMD_EXPM1, 2)},
    /* The backward: e^x, then two products that may round apart. */
    {.name = "selu",
     .ref = ref_selu,
     .dref = dref_selu,
     .domain = {-20, 5},
     .grad_domain = {-3, 3},
     .vs_double = {.rtol = 4 * EPS, .brtol = 4 * EPS},
     .edge = {N_, I_, SELU_MIN, 0, -0.0f},
     /* The backward's e^x is denormal below x = -87, rounded there, then scaled by dy (tests/fuzz
        found 4 ULP with dy = FLT_MAX): a tiny term, as softplus has. */
     .conf = {.domain = {-20, 5}, .fwd = ULP(3), .bwd = {.ulp = 3, .tiny = 4}},
     .sweep = {-104, 1e6f},
     .bench_range = BENCH_ANY,
     /* SIMD: vexpm1 and a multiply; backward vexp and 3 multiplies. */
     .flops = OPINFO_FLOPS_SIMD(OPINFO_TRANSC + 3, 3, OPINFO_SIMD_EXPM1 + 2, OPINFO_SIMD_EXP + 6)},
    /* e^-|x|, 1 + e, a division; the backward (dy y)(1 - y) against dy (y - y^2), y - y^2 rounded
       once (vfnma): 3 ulp apart at most, the SIMD kernels' the nearer to the exact product. */
    {.name = "sigmoid",
     .ref = ref_sigmoid,
     .dref = dref_sigmoid,
     .dref_y = dref_sigmoid_y,
     .domain = {-40, 40},
     .grad_domain = {-5, 5},
     .vs_double = {.rtol = 4 * EPS, .brtol = 8 * EPS, .batol = EPS},
     .edge = {N_, 1, 0, 0.5f, 0.5f},
     .conf = {.domain = {-100, 100}, .fwd = ULP(4), .bwd = ULP(3)},
     .sweep = {-104, 104},
     .bench_range = BENCH_ANY,
     /* SIMD: vexp_2p64_ (vexp's 7 FMAs and multiplies; AVX-512 scales by vscalefps, AVX2 and
        NEON by one more multiply); backward dy (y - y^2), an FMA and a multiply. */
     .flops = OPINFO_FLOPS_SIMD(OPINFO_TRANSC + 2, 3, OPINFO_SIMD_EXP, 4),
     .promise = {.fwd = 2.9, .fwd_range = {-104, 104}}},
    {.name = "tanh",
     .ref = tanh,
     .dref = dref_tanh,
     .dref_y = dref_tanh_y,
     .domain = {-10, 10},
     .grad_domain = {-3, 3},
     /* batol: (1 - y)(1 + y) moves by 2 |dy| times y's absolute error, which near |y| = 1 is up
        to 2.5 ulp of 1 (2^-24 each) in the SIMD tanh (docs/accuracy.md). */
     .vs_double = {.rtol = 4 * EPS, .brtol = 8 * EPS, .batol = 3 * EPS},
     .edge = {N_, 1, -1, 0, -0.0f},
     .zero_signed = true,
     /* bwd: the scalar kernel's (1 - y)(1 + y) against the SIMD kernels' 1 - y^2 rounded once
        (vfnma), 2 ulp apart at most after the product by dy. */
     .conf = {.domain = {-20, 20}, .fwd = ULP(3), .bwd = ULP(2)},
     .sweep = {-20, 20},
     .bench_range = BENCH_ANY,
     /* SIMD: vtanh's 10 FMAs and multiplies (y, h, 6 in the polynomial, 1 - 2^k, num);
        backward dy (1 - y^2), an FMA and a multiply. */
     .flops = OPINFO_FLOPS_SIMD(OPINFO_TRANSC, 3, 20, 4),
     .promise = {.fwd = 2.5, .fwd_range = {-20, 20}}},
    {.name = "softplus",
     .ref = ref_softplus,
     .dref = ref_sigmoid,
     .domain = {-40, 40},
     .grad_domain = {-5, 5},
     .vs_double = {.rtol = 4 * EPS, .brtol = 4 * EPS},
     .edge = {N_, I_, 0, (float)LN2, (float)LN2},
     /* The backward's sigmoid(x) is denormal below x = -87, rounded there, then scaled by dy:
        a few FLT_TRUE_MIN |dy| apart (tests/fuzz found 8 ULP with dy = FLT_MAX). */
     .conf = {.domain = {-100, 100}, .fwd = ULP(4), .bwd = {.ulp = 4, .tiny = 4}},
     .sweep = {-104, 1e6f},
     .bench_range = BENCH_ANY,
     /* SIMD: the forward calls SLEEF's log1pf (no count: judged by its own rate); the backward
        is sigmoid's vexp_2p64_ and dy times it. */
     .flops = OPINFO_FLOPS_SIMD(2 * OPINFO_TRANSC + 1, OPINFO_TRANSC + 3, 0, OPINFO_SIMD_EXP + 2)},
    /* The value tests: an absolute bound too, as x Phi(x) is tiny for x << 0, where the textbook
       1 + erf(x / sqrt 2) cancels (the scalar kernel uses erfc, accurate there, but the contract
       does not demand it); the derivative crosses 0 near x = -0.75. Conformance: scalar within
       0.5 ulp (erfc in double), SIMD within 2.7 (docs/accuracy.md); below x = -13 the result is
       denormal and x / 2 scales the rounding of Phi (tiny); the backward's abs is relative to
       |dy| (Phi + |x| phi). */
    {.name = "gelu",
     .ref = ref_gelu,
     .dref = dref_gelu,
     .domain = {-10, 10},
     .grad_domain = {-4, 4},
     .vs_double = {.rtol = 4 * EPS, .atol = 4 * EPS, .brtol = 8 * EPS, .batol = EPS},
     .edge = {N_, I_, 0, 0, -0.0f},
     .conf = {.domain = {-30, 10},
              .fwd = {.ulp = 4, .tiny = 16},
              .bwd = {.ulp = 4, .abs = 4, .tiny = 16, .mag = gelu_terms}},
     .sweep = {-20, 20},
     .bench_range = BENCH_ANY,
     /* SIMD, FMAs and multiplies on AVX-512 (the fewest): its near form's 8 (k's FMA, t's, the
        polynomial's 6; the far lanes' form 19, as every lane before the twenty-eighth landing:
        a G's 6, a log2e / 2, y, a / 2, j LN2_HI, r's 2, e^r's 6, a G (1 + s); AVX2: 21, its a G
        of degree 7 and the scale a multiply; NEON 19); backward the near form's 8 and dy times
        it, 9 (elsewhere vgelu_grad_parts_, q, t, dy times it, 21). */
     .flops = OPINFO_FLOPS_SIMD(OPINFO_TRANSC + 4, 2 * OPINFO_TRANSC + 6, 16, 18),
     /* gelu' cancels near its zero at -0.75: promised on [-20, -1]. */
     .promise = {.fwd = 2.7, .fwd_range = {-20, 20}, .bwd = 3.3, .bwd_range = {-20, -1}}},
    {.name = "sin",
     .ref = sin,
     .dref = dref_sin,
     .domain = {-100, 100},
     .grad_domain = {-4, 4},
     .vs_double = {.rtol = 2 * EPS, .brtol = 2 * EPS},
     .edge = {N_, N_, N_, 0, -0.0f},
     .zero_signed = true,
     .conf = {.domain = {-100, 100}, .fwd = ULP(2), .bwd = ULP(2)},
     .sweep = {-1e4f, 1e4f},
     .bench_range = BENCH_ANY,
     .flops = OPINFO_FLOPS(OPINFO_TRANSC, OPINFO_TRANSC + 1)},
    {.name = "cos",
     .ref = cos,
     .dref = dref_cos,
     .domain = {-100, 100},
     .grad_domain = {-4, 4},
     .vs_double = {.rtol = 2 * EPS, .brtol = 2 * EPS},
     .edge = {N_, N_, N_, 1, 1},
     .conf = {.domain = {-100, 100}, .fwd = ULP(2), .bwd = ULP(2)},
     .sweep = {-1e4f, 1e4f},
     .bench_range = BENCH_ANY,
     .flops = OPINFO_FLOPS(OPINFO_TRANSC, OPINFO_TRANSC + 2)},
    /* ---- Step ops: no derivative, no backward ---- */
    {.name = "floor",
     .ref = floor,
     .domain = {-100, 100},
     .vs_double = {0},
     .edge = {N_, I_, -I_, 0, -0.0f},
     .zero_signed = true,
     .conf = {.domain = {-100, 100}, .fwd = EXACT},
     .sweep = {-1e8f, 1e8f},
     .bench_range = BENCH_ANY,
     .flops = OPINFO_FLOPS(1, 0)},
    {.name = "ceil",
     .ref = ceil,
     .domain = {-100, 100},
     .vs_double = {0},
     .edge = {N_, I_, -I_, 0, -0.0f},
     .zero_signed = true,
     .conf = {.domain = {-100, 100}, .fwd = EXACT},
     .sweep = {-1e8f, 1e8f},
     .bench_range = BENCH_ANY,
     .flops = OPINFO_FLOPS(1, 0)},
    {.name = "round",
     .ref = nearbyint,
     .domain = {-100, 100},
     .vs_double = {0},
     .edge = {N_, I_, -I_, 0, -0.0f},
     .zero_signed = true,
     .conf = {.domain = {-100, 100}, .fwd = EXACT},
     .sweep = {-1e8f, 1e8f},
     .bench_range = BENCH_ANY,
     .flops = OPINFO_FLOPS(1, 0)},
    {.name = "sign",
     .ref = ref_sign,
     .domain = {-100, 100},
     .vs_double = {0},
     .edge = {N_, 1, -1, 0, 0},
     .conf = {.domain = {-10, 10}, .fwd = EXACT},
     .sweep = {-1e6f, 1e6f},
     .bench_range = BENCH_ANY,
     .flops = OPINFO_FLOPS(2, 0)},
    /* ---- The parametric ops, at OPINFO_LEAKY_ALPHA and [OPINFO_CLIP_LO, OPINFO_CLIP_HI] ---- */
    {.name = "leaky_relu",
     .ref = ref_leaky_relu,
     .dref = dref_leaky_relu,
     .domain = {-10, 10},
     .grad_domain = {-3, 3},
     .vs_double = {.rtol = EPS, .brtol = EPS},
     .edge = {N_, I_, -I_, 0, -0.0f},
     .conf = {.domain = {-10, 10}, .fwd = EXACT, .bwd = EXACT},
     .sweep = {-1e6f, 1e6f},
     .bench_range = BENCH_ANY,
     .flops = OPINFO_FLOPS(2, 2)},
    {.name = "clip",
     .ref = ref_clip,
     .dref = dref_clip,
     .domain = {-3, 4},
     .grad_domain = {-3, 4},
     .vs_double = {0},
     .edge = {N_, OPINFO_CLIP_HI, OPINFO_CLIP_LO, 0, -0.0f},
     .conf = {.domain = {-3, 4}, .fwd = EXACT, .bwd = EXACT},
     .sweep = {-1e6f, 1e6f},
     .bench_range = BENCH_ANY,
     .flops = OPINFO_FLOPS(2, 2)},
};
const size_t opinfo_unary_count = sizeof opinfo_unary_table / sizeof opinfo_unary_table[0];

const opinfo_unary *opinfo_unary_find(const char *name) {
  for (size_t i = 0; i < opinfo_unary_count; i++)
    if (strcmp(opinfo_unary_table[i].name, name) == 0) return &opinfo_unary_table[i];
  return NULL;
}

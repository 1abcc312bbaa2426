"""Matrix products compared with the CPU.

float32 products must match the CPU to 1e-5 (inputs in [-1, 1]): on TPU/GPU
this needs full-precision dots (XLA PrecisionConfig HIGHEST, no TF32/bf16
passes).  bfloat16 products are compared with rtol 2e-2 and an atol that grows
with the contraction length K (the CPU accumulates in float32 and rounds once).
"""
import pytest
import torch

from op_check import NonContig, Transposed, compare, dtype_id, make

F32, BF16, I64, BOOL = torch.float32, torch.bfloat16, torch.int64, torch.bool


def m(shape, dtype=F32, seed=0):
    if dtype.is_floating_point:
        return make(shape, dtype, low=-1, high=1, seed=seed)
    return make(shape, dtype, low=-5, high=5, seed=seed)


def tol(k):
    """Tolerance for a product with contraction length k."""
    return {BF16: (2e-2, 2e-2 * max(1.0, k / 16))}


@pytest.mark.parametrize("dtype", [F32, BF16, I64], ids=dtype_id)
@pytest.mark.parametrize("mkn", [(8, 16, 12), (1, 16, 1), (5, 1, 7), (0, 4, 3), (3, 0, 2),
                                 (16, 64, 8)], ids=lambda s: "x".join(map(str, s)))
def test_mm(mkn, dtype):
    mm, k, n = mkn
    compare(torch.mm, m((mm, k), dtype), m((k, n), dtype, seed=1), dtype_tol=tol(k))


@pytest.mark.parametrize("dtype", [F32, BF16, I64], ids=dtype_id)
@pytest.mark.parametrize("case", ["at_b", "a_bt", "at_bt", "gapped", "sliced"])
def test_mm_noncontiguous_operands(case, dtype):
    a, b = m((16, 8), dtype), m((16, 12), dtype, seed=1)     # a.t() @ b: 8x16 @ 16x12
    if case == "at_b":
        compare(lambda x, y: x.t() @ y, a, b, dtype_tol=tol(16))
    elif case == "a_bt":
        compare(lambda x, y: x.t() @ y.t().t(), a, b, dtype_tol=tol(16))
    elif case == "at_bt":
        compare(lambda x, y: x.t() @ y.t(), a, m((12, 16), dtype, seed=1), dtype_tol=tol(16))
    elif case == "gapped":
        compare(torch.mm, NonContig(m((8, 16), dtype)), NonContig(b), dtype_tol=tol(16))
    else:
        # (8x16)[1:7, ::2] -> 6x8 ; (16x12)[::2, 2:] -> 8x10
        compare(lambda x, y: x[1:7, ::2] @ y[::2, 2:], m((8, 16), dtype), b, dtype_tol=tol(8))


def test_mm_bool_and_mixed_dtype_errors():
    # CPU refuses bool mm and mixed-dtype mm; the device must refuse too.
    compare(torch.mm, make((3, 4), BOOL), make((4, 2), BOOL, seed=1))
    compare(torch.mm, m((3, 4), F32), m((4, 2), BF16, seed=1))
    compare(torch.mm, m((3, 4), F32), m((5, 2), F32, seed=1))   # shape mismatch


@pytest.mark.parametrize("dtype", [F32, BF16, I64], ids=dtype_id)
@pytest.mark.parametrize("case", ["plain", "transposed", "gapped"])
def test_bmm(case, dtype):
    a, b = m((4, 8, 16), dtype), m((4, 16, 6), dtype, seed=1)
    if case == "plain":
        compare(torch.bmm, a, b, dtype_tol=tol(16))
    elif case == "transposed":
        compare(torch.bmm, Transposed(a), Transposed(b), dtype_tol=tol(16))
    else:
        compare(lambda x, y: torch.bmm(x, y.transpose(1, 2).transpose(1, 2)),
                NonContig(a), NonContig(b), dtype_tol=tol(16))


@pytest.mark.parametrize("dtype", [F32, BF16], ids=dtype_id)
@pytest.mark.parametrize("case", ["default", "beta_alpha", "bias_row", "bias_scalar",
                                  "beta0_ignores_nan", "alpha0", "transposed_mat1"])
def test_addmm(case, dtype):
    inp, a, b = m((6, 5), dtype, seed=2), m((6, 16), dtype), m((16, 5), dtype, seed=1)
    t = tol(16)
    if case == "default":
        compare(torch.addmm, inp, a, b, dtype_tol=t)
    elif case == "beta_alpha":
        compare(lambda i, x, y: torch.addmm(i, x, y, beta=0.5, alpha=2.0), inp, a, b, dtype_tol=t)
    elif case == "bias_row":
        compare(torch.addmm, m((5,), dtype, seed=3), a, b, dtype_tol=t)
    elif case == "bias_scalar":
        compare(torch.addmm, torch.tensor(1.5, dtype=dtype), a, b, dtype_tol=t)
    elif case == "beta0_ignores_nan":
        # beta=0: input is ignored, NaN in it must not propagate.
        compare(lambda i, x, y: torch.addmm(i, x, y, beta=0), torch.full((6, 5), float("nan"),
                                                                          dtype=dtype), a, b,
                dtype_tol=t)
    elif case == "alpha0":
        compare(lambda i, x, y: torch.addmm(i, x, y, alpha=0), inp, a, b, dtype_tol=t)
    else:
        compare(lambda i, x, y: torch.addmm(i, x.t(), y), inp, m((16, 6), dtype), b, dtype_tol=t)


def test_addmm_int64():
    compare(lambda i, x, y: torch.addmm(i, x, y, beta=2, alpha=3), m((3, 2), I64, seed=2),
            m((3, 4), I64), m((4, 2), I64, seed=1))


MATMUL_SHAPES = [
    ((16,), (16,)),                 # dot
    ((16,), (16, 5)),               # vector-matrix
    ((6, 16), (16,)),               # matrix-vector
    ((3, 6, 16), (16, 5)),          # batched x matrix (broadcast)
    ((6, 16), (3, 16, 5)),          # matrix x batched
    ((2, 3, 6, 16), (2, 3, 16, 5)),  # 4-D
    ((2, 1, 6, 16), (3, 16, 5)),    # broadcast batch dims
    ((3, 6, 16), (16,)),            # batched x vector
    ((16,), (2, 16, 5)),            # vector x batched
]


@pytest.mark.parametrize("dtype", [F32, BF16], ids=dtype_id)
@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES,
                         ids=["x".join(map(str, a)) + "@" + "x".join(map(str, b))
                              for a, b in MATMUL_SHAPES])
def test_matmul(sa, sb, dtype):
    compare(torch.matmul, m(sa, dtype), m(sb, dtype, seed=1), dtype_tol=tol(16))


def test_matmul_int64_and_operator():
    compare(lambda a, b: a @ b, m((2, 3, 4), I64), m((4, 5), I64, seed=1))
    compare(lambda a, b: a @ b, m((4,), I64), m((4,), I64, seed=1))


@pytest.mark.parametrize("dtype", [F32, BF16], ids=dtype_id)
@pytest.mark.parametrize("case", ["bias", "no_bias", "3d_input", "1d_input", "module"])
def test_linear(case, dtype):
    x, w, b = m((4, 16), dtype), m((8, 16), dtype, seed=1), m((8,), dtype, seed=2)
    F = torch.nn.functional
    t = tol(16)
    if case == "bias":
        compare(F.linear, x, w, b, dtype_tol=t)
    elif case == "no_bias":
        compare(F.linear, x, w, dtype_tol=t)
    elif case == "3d_input":
        compare(F.linear, m((2, 3, 16), dtype), w, b, dtype_tol=t)
    elif case == "1d_input":
        compare(F.linear, m((16,), dtype), w, b, dtype_tol=t)
    else:
        def run(inp, weight, bias):
            # built on the CPU and moved: initialising on the device would
            # need the device RNG
            lin = torch.nn.Linear(16, 8, dtype=dtype).to(inp.device)
            with torch.no_grad():
                lin.weight.copy_(weight)
                lin.bias.copy_(bias)
            return lin(inp).detach()
        compare(run, x, w, b, dtype_tol=t)


@pytest.mark.parametrize("dtype", [F32, BF16], ids=dtype_id)
@pytest.mark.parametrize("case", ["baddbmm", "baddbmm_beta_alpha", "addmv", "addmv_beta_alpha",
                                  "dot", "outer", "mv", "addr"])
def test_products(case, dtype):
    t = tol(16)
    if case == "baddbmm":
        compare(torch.baddbmm, m((4, 6, 5), dtype, 2), m((4, 6, 16), dtype),
                m((4, 16, 5), dtype, 1), dtype_tol=t)
    elif case == "baddbmm_beta_alpha":
        compare(lambda i, a, b: torch.baddbmm(i, a, b, beta=0.5, alpha=-1.0),
                m((1, 6, 5), dtype, 2), m((4, 6, 16), dtype), m((4, 16, 5), dtype, 1),
                dtype_tol=t)
    elif case == "addmv":
        compare(torch.addmv, m((6,), dtype, 2), m((6, 16), dtype), m((16,), dtype, 1),
                dtype_tol=t)
    elif case == "addmv_beta_alpha":
        compare(lambda i, a, v: torch.addmv(i, a, v, beta=2, alpha=0.5), m((6,), dtype, 2),
                m((16, 6), dtype).t(), m((16,), dtype, 1), dtype_tol=t)
    elif case == "dot":
        compare(torch.dot, m((16,), dtype), m((16,), dtype, 1), dtype_tol=t)
    elif case == "outer":
        compare(torch.outer, m((5,), dtype), m((7,), dtype, 1))
    elif case == "mv":
        compare(torch.mv, m((6, 16), dtype), m((16,), dtype, 1), dtype_tol=t)
    else:
        compare(torch.addr, m((5, 7), dtype, 2), m((5,), dtype), m((7,), dtype, 1))


def test_dot_int64_and_outer_int64():
    compare(torch.dot, m((16,), I64), m((16,), I64, 1))
    compare(torch.outer, m((5,), I64), m((3,), I64, 1))


EINSUM = [
    ("ij,jk->ik", [(6, 16), (16, 5)]),
    ("bij,bjk->bik", [(3, 6, 16), (3, 16, 5)]),
    ("ii->i", [(5, 5)]),
    ("i,j->ij", [(5,), (7,)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 16), (2, 3, 5, 16)]),
    ("ij->ji", [(4, 6)]),
    ("ij->", [(4, 6)]),
    ("bi,bi->b", [(3, 16), (3, 16)]),
]


@pytest.mark.parametrize("dtype", [F32, BF16], ids=dtype_id)
@pytest.mark.parametrize("eq,shapes", EINSUM, ids=[e for e, _ in EINSUM])
def test_einsum(eq, shapes, dtype):
    ops = [m(s, dtype, seed=i) for i, s in enumerate(shapes)]
    compare(lambda *xs: torch.einsum(eq, *xs), *ops, dtype_tol=tol(24))


def test_attention_like_chain():
    # q @ k^T * scale -> softmax -> @ v, as in scaled dot-product attention.
    def attn(q, k, v):
        s = q @ k.transpose(-2, -1) * (16 ** -0.5)
        return torch.softmax(s, -1) @ v
    compare(attn, m((2, 3, 5, 16)), m((2, 3, 7, 16), seed=1), m((2, 3, 7, 16), seed=2))


# ------------------------------------------ products written as other native ops


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64], ids=dtype_id)
def test_trace_vdot_addbmm(dtype):
    m = make((5, 5), dtype)
    compare(torch.trace, m)
    compare(torch.trace, NonContig(make((4, 6), dtype, seed=1)))
    a, b = make((7,), dtype, seed=2), make((7,), dtype, seed=3)
    compare(torch.vdot, a, NonContig(b))
    compare(lambda x, y: torch.vdot(x, y, out=torch.empty((), dtype=dtype, device=x.device)), a, b)
    s, b1, b2 = make((3, 4), dtype, seed=4), make((5, 3, 2), dtype, seed=5), make((5, 2, 4), dtype, seed=6)
    # bf16 accumulates batch by batch, rounding as the CPU does; the op_check
    # tolerance (two bf16 ulps) covers the products' summation order.
    tol = None
    compare(torch.addbmm, s, b1, b2, dtype_tol=tol)
    compare(lambda x, p, q: torch.addbmm(x, p, q, beta=2, alpha=3), NonContig(s), Transposed(b1), b2, dtype_tol=tol)
    compare(lambda x, p, q: x.addbmm_(p, q, alpha=2), s, b1, b2, dtype_tol=tol)
    compare(lambda x, p, q: torch.addbmm(x, p, q, out=torch.empty(3, 4, dtype=dtype, device=x.device)), s, b1, b2,
            dtype_tol=tol)


def test_addbmm_beta_zero_ignores_nan_and_errors():
    s = torch.full((2, 3), float("nan"))
    compare(lambda x, p, q: torch.addbmm(x, p, q, beta=0), s, make((4, 2, 5)), make((4, 5, 3), seed=1))
    for bad in ((make((2, 2)), make((3, 2, 4)), make((2, 4, 2))), (make((2, 2)), make((2, 4)), make((2, 4, 2))),
                (make((2, 2)), make((3, 2, 4)), make((3, 5, 2)))):
        compare(torch.addbmm, *bad)
    compare(torch.trace, make((2, 2, 2)))
    compare(torch.trace, make((3, 3)) > 0)
    compare(torch.vdot, make((3,)), make((3,)).long())
    compare(torch.vdot, make((3, 1)), make((3,)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64], ids=dtype_id)
def test_linalg_cross(dtype):
    a, b = make((4, 3), dtype), make((4, 3), dtype, seed=1)
    compare(torch.linalg.cross, a, NonContig(b))
    compare(lambda x, y: torch.linalg.cross(x, y, dim=0), make((3, 5), dtype, seed=2), make((3, 1), dtype, seed=3))
    compare(lambda x, y: torch.cross(x, y, dim=1), make((2, 3, 2), dtype), make((2, 3, 2), dtype, seed=4))
    compare(lambda x, y: torch.linalg.cross(x, y, out=torch.empty(4, 3, dtype=dtype, device=x.device)), a, b)
    compare(torch.linalg.cross, make((2, 4), dtype), make((2, 4), dtype))


def test_channel_shuffle():
    x = make((2, 6, 3, 2))
    compare(lambda t: torch.channel_shuffle(t, 3), x)
    compare(lambda t: torch.nn.functional.channel_shuffle(t, 2), NonContig(x))
    compare(lambda t: torch.nn.ChannelShuffle(2)(t), make((1, 4, 5)))
    compare(lambda t: torch.channel_shuffle(t, 4), x)
    compare(lambda t: torch.channel_shuffle(t, 2), make((2, 6)))

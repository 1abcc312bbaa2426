"""Random number generation on the device.

* Reproducibility: a seed fixes every draw; the generator's state replays
  exactly; torch.Generator("tpu") objects and the per-device default
  generators are independent; a new seed compiles nothing.
* Distributions: fixed seeds and thresholds a correct generator passes
  essentially always (means within 5 standard errors, Kolmogorov-Smirnov and
  chi-square goodness of fit with p > 1e-4; scipy is not available, so the
  p-values are computed here).
* Errors mirror PyTorch's CPU kernels.

Every test runs on the device under test (``TORCHTPU_TEST_DEVICE=cpu`` runs
the statistics on PyTorch's own CPU generator, a check of the tests).
"""
import math

import pytest
import torch

import op_check
from op_check import DEVICE, ON_CPU

N = 200_000
P_MIN = 1e-4
FLOATS = (torch.float32, torch.bfloat16, torch.float64)


def gen(seed):
    return torch.Generator(DEVICE).manual_seed(seed)


def host(t):
    return t.cpu()


# ---------------------------------------------------------------- statistics

def ks_pvalue(samples, cdf):
    """Asymptotic p-value of the one-sample Kolmogorov-Smirnov test."""
    x, _ = torch.sort(samples.double().flatten())
    n = x.numel()
    f = cdf(x)
    i = torch.arange(1, n + 1, dtype=torch.float64)
    d = max((i / n - f).max().item(), (f - (i - 1) / n).max().item())
    t = math.sqrt(n) * d
    p = 2 * sum((-1) ** (k - 1) * math.exp(-2 * k * k * t * t) for k in range(1, 101))
    return min(max(p, 0.0), 1.0)


def chi2_pvalue(observed, expected):
    """Chi-square goodness of fit; p from the Wilson-Hilferty approximation."""
    observed = torch.as_tensor(observed, dtype=torch.float64).flatten()
    expected = torch.as_tensor(expected, dtype=torch.float64).flatten()
    keep = expected > 0
    assert observed[~keep].sum() == 0, "a value of probability 0 was drawn"
    observed, expected = observed[keep], expected[keep]
    if observed.numel() == 1:
        return 1.0
    stat = ((observed - expected) ** 2 / expected).sum().item()
    k = observed.numel() - 1
    z = ((stat / k) ** (1 / 3) - (1 - 2 / (9 * k))) / math.sqrt(2 / (9 * k))
    return 0.5 * math.erfc(z / math.sqrt(2))


def assert_mean(samples, mean, var):
    s = samples.double().flatten()
    se = math.sqrt(var / s.numel())
    assert abs(s.mean().item() - mean) < 5 * se, (s.mean().item(), mean, se)


def assert_moments(samples, mean, var):
    s = samples.double().flatten()
    assert_mean(s, mean, var)
    # The sample variance's standard error, for a distribution with finite
    # fourth moment, is about var * sqrt(2 / n) times a kurtosis factor; 5x
    # the exponential's (kurtosis 9) bounds all used here.
    se = var * math.sqrt(8 / s.numel())
    assert abs(s.var().item() - var) < 5 * se, (s.var().item(), var)


def normal_cdf(x):
    return 0.5 * (1 + torch.erf(x / math.sqrt(2)))


# ------------------------------------------------------------ reproducibility

SAMPLERS = {
    "uniform": lambda g: torch.empty(1000, device=DEVICE).uniform_(-2, 3, generator=g),
    "normal": lambda g: torch.empty(1000, device=DEVICE).normal_(1, 2, generator=g),
    "randn": lambda g: torch.randn(10, 100, device=DEVICE, generator=g),
    "rand_bf16": lambda g: torch.rand(1000, device=DEVICE, dtype=torch.bfloat16, generator=g),
    "randint": lambda g: torch.randint(0, 1000, (1000,), device=DEVICE, generator=g),
    "random_": lambda g: torch.empty(1000, dtype=torch.int32, device=DEVICE).random_(generator=g),
    "randperm": lambda g: torch.randperm(1000, device=DEVICE, generator=g),
    "bernoulli": lambda g: torch.empty(1000, device=DEVICE).bernoulli_(0.5, generator=g),
    "bernoulli_tensor": lambda g: torch.bernoulli(torch.full((1000,), 0.3, device=DEVICE), generator=g),
    "exponential": lambda g: torch.empty(1000, device=DEVICE).exponential_(generator=g),
    "multinomial": lambda g: torch.multinomial(torch.ones(4, 50, device=DEVICE), 20, True, generator=g),
    "multinomial_norepl": lambda g: torch.multinomial(torch.ones(4, 50, device=DEVICE), 20, generator=g),
    "normal_tensor": lambda g: torch.normal(torch.zeros(1000, device=DEVICE), 1.0, generator=g),
    "float64": lambda g: torch.rand(1000, dtype=torch.float64, device=DEVICE, generator=g),
}


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_same_seed_same_values_and_draws_differ(name):
    sample = SAMPLERS[name]
    g = gen(1234)
    a, b = host(sample(g)), host(sample(g))
    assert not torch.equal(a, b), "two successive draws are equal"
    g.manual_seed(1234)
    assert torch.equal(host(sample(g)), a)
    assert torch.equal(host(sample(g)), b)
    assert not torch.equal(host(sample(gen(4321))), a), "different seeds give equal draws"


@pytest.mark.parametrize("name", ["uniform", "randint", "randperm", "dropout"])
def test_torch_manual_seed_reseeds_default_generator(name):
    sample = {
        "uniform": lambda: torch.rand(500, device=DEVICE),
        "randint": lambda: torch.randint(-5, 5, (500,), device=DEVICE),
        "randperm": lambda: torch.randperm(500, device=DEVICE),
        "dropout": lambda: torch.nn.functional.dropout(torch.ones(500, device=DEVICE), 0.5, True),
    }[name]
    torch.manual_seed(7)
    a, b = host(sample()), host(sample())
    torch.manual_seed(7)
    assert torch.equal(host(sample()), a)
    assert torch.equal(host(sample()), b)
    torch.manual_seed(8)
    assert not torch.equal(host(sample()), a)


def test_generator_state_replays():
    g = gen(99)
    torch.rand(10, device=DEVICE, generator=g)
    state = g.get_state()
    a = host(torch.randn(300, device=DEVICE, generator=g))
    b = host(torch.randint(0, 100, (300,), device=DEVICE, generator=g))
    g.manual_seed(5)
    torch.rand(7, device=DEVICE, generator=g)
    g.set_state(state)
    assert torch.equal(host(torch.randn(300, device=DEVICE, generator=g)), a)
    assert torch.equal(host(torch.randint(0, 100, (300,), device=DEVICE, generator=g)), b)


def test_generator_objects_are_independent_of_the_default():
    torch.manual_seed(11)
    expected = host(torch.rand(100, device=DEVICE))
    torch.manual_seed(11)
    g = gen(11)
    from_g = host(torch.rand(100, device=DEVICE, generator=g))
    torch.rand(100, device=DEVICE, generator=g)  # advances g only
    assert torch.equal(host(torch.rand(100, device=DEVICE)), expected)
    assert torch.equal(from_g, expected)  # same seed, same stream
    g2 = gen(11)
    assert torch.equal(host(torch.rand(100, device=DEVICE, generator=g2)), expected)


def test_non_contiguous_destination():
    base = torch.zeros(6, 8, device=DEVICE)
    base[:, ::2].uniform_(1, 2, generator=gen(0))
    t = host(base)
    assert (t[:, 1::2] == 0).all()
    assert ((t[:, ::2] >= 1) & (t[:, ::2] < 2)).all()
    assert t[:, ::2].unique().numel() == 24
    tt = torch.zeros(5, 7, device=DEVICE).t()
    tt.normal_(generator=gen(1))
    assert host(tt).unique().numel() == 35


# -------------------------------------------------- tpu generators and seeding

@pytest.mark.needs_tpu
def test_torch_generator_tpu():
    g = torch.Generator("tpu")
    assert g.device == torch.device("tpu", 0)
    assert g.initial_seed() == 67280421310721
    g.manual_seed(-1)
    assert g.initial_seed() == 2 ** 64 - 1
    g.manual_seed(3)
    assert g.get_offset() == 0
    torch.rand(10, device="tpu", generator=g)
    assert g.get_offset() > 0
    state = g.get_state()
    assert state.dtype == torch.uint8 and state.device.type == "cpu" and state.numel() == 16
    g1 = torch.Generator("tpu:1")
    assert g1.device == torch.device("tpu", 1)


@pytest.mark.needs_tpu
def test_device_module_rng_functions():
    torch.tpu.manual_seed(42)
    assert torch.tpu.initial_seed() == 42
    state = torch.tpu.get_rng_state()
    a = host(torch.rand(50, device="tpu"))
    torch.tpu.set_rng_state(state)
    assert torch.equal(host(torch.rand(50, device="tpu")), a)
    states = torch.tpu.get_rng_state_all()
    assert len(states) == torch.tpu.device_count() == 2
    x0, x1 = host(torch.rand(50, device="tpu:0")), host(torch.rand(50, device="tpu:1"))
    torch.tpu.set_rng_state_all(states)
    assert torch.equal(host(torch.rand(50, device="tpu:0")), x0)
    assert torch.equal(host(torch.rand(50, device="tpu:1")), x1)
    torch.tpu.seed()
    assert torch.tpu.initial_seed() != 42
    torch.tpu.seed_all()
    s = torch.tpu.initial_seed()
    with torch.tpu.device(1):
        assert torch.tpu.initial_seed() == s
    assert len(torch.tpu.default_generators) == 2
    with torch.random.fork_rng(devices=range(2), device_type="tpu"):
        torch.rand(10, device="tpu")
    with pytest.raises(ValueError, match="Overflow"):
        torch.tpu.manual_seed_all(2 ** 64)
    with pytest.raises(RuntimeError, match="RNG state"):
        torch.tpu.set_rng_state(torch.zeros(3, dtype=torch.uint8))
    with pytest.raises(TypeError, match="ByteTensor"):
        torch.tpu.set_rng_state(torch.zeros(16))


@pytest.mark.needs_tpu
def test_per_device_generators():
    torch.manual_seed(0)  # every device: the same seed gives the same stream (as CUDA)
    same0, same1 = host(torch.rand(100, device="tpu:0")), host(torch.rand(100, device="tpu:1"))
    assert torch.equal(same0, same1)
    torch.tpu.manual_seed_all(1)
    with torch.tpu.device(1):
        torch.tpu.manual_seed(2)  # seeds tpu:1 only
    assert torch.tpu.default_generators[0].initial_seed() == 1
    assert torch.tpu.default_generators[1].initial_seed() == 2
    a0, a1 = host(torch.rand(100, device="tpu:0")), host(torch.rand(100, device="tpu:1"))
    assert not torch.equal(a0, a1)
    # Draws on tpu:0 do not advance tpu:1; reseeding tpu:1 does not touch tpu:0.
    torch.tpu.manual_seed_all(1)
    first0 = host(torch.rand(100, device="tpu:0"))
    with torch.tpu.device(1):
        torch.tpu.manual_seed(2)
        torch.rand(1000, device="tpu:1")
    torch.tpu.manual_seed_all(1)
    torch.rand(100, device="tpu:1")
    assert torch.equal(host(torch.rand(100, device="tpu:0")), first0)
    g1 = torch.tpu.default_generators[1]
    assert g1.device == torch.device("tpu", 1)
    offset0 = torch.tpu.default_generators[0].get_offset()
    torch.rand(100, device="tpu:1")
    assert torch.tpu.default_generators[0].get_offset() == offset0


@pytest.mark.needs_tpu
def test_new_seed_compiles_nothing():
    import torchtpu
    g = gen(0)

    def work(seed):
        g.manual_seed(seed)
        torch.rand(64, device="tpu", generator=g)
        torch.randn(64, device="tpu", generator=g)
        torch.randint(3, 9, (64,), device="tpu", generator=g)
        torch.empty(64, device="tpu").uniform_(seed, seed + 1, generator=g)
        torch.empty(64, device="tpu").bernoulli_(seed / 100, generator=g)
        torch.randperm(64, device="tpu", generator=g)
        torch.nn.functional.dropout(torch.ones(64, device="tpu"), seed / 100, True)

    work(1)
    _, misses = torchtpu._C.compile_cache_counters()
    for seed in (2, 3, 4):
        work(seed)
    assert torchtpu._C.compile_cache_counters()[1] == misses


@pytest.mark.needs_tpu
def test_generator_of_another_device_type_is_rejected():
    with pytest.raises(RuntimeError, match="Expected a 'tpu' device type for generator but found 'cpu'"):
        torch.rand(3, device="tpu", generator=torch.Generator())


@pytest.mark.needs_tpu
def test_registrations_not_skipped():
    import torchtpu
    ours = {"uniform_", "normal_", "random_", "bernoulli_", "exponential_", "randperm",
            "multinomial", "native_dropout", "bernoulli", "normal", "log_normal_",
            "geometric_", "cauchy_"}
    skipped = [name for name in torchtpu._C.skipped_registrations() if name.split(".")[0] in ours]
    assert skipped == []


# ---------------------------------------------------------------- uniform

@pytest.mark.parametrize("dtype", FLOATS, ids=op_check.dtype_id)
def test_uniform_range_and_moments(dtype):
    x = host(torch.empty(N, dtype=dtype, device=DEVICE).uniform_(-1, 3, generator=gen(1)))
    assert x.dtype == dtype
    assert x.min().item() >= -1 and x.max().item() < 3
    # bf16: draws within half a step (2^-7) of 3 round to 3 and become -1.
    wrapped = 2.0 ** -7 / 4 if dtype == torch.bfloat16 else 0.0
    assert_moments(x, 1.0 - 4 * wrapped, 16 / 12)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=op_check.dtype_id)
def test_uniform_narrow_floats_stay_below_to(dtype):
    # Values are drawn in float32 and rounded; one that rounds up to `to`
    # becomes `from` (PyTorch's CPU behaviour), so every grid value of
    # [2, 3) is equally likely and 3 never appears.
    x = host(torch.empty(N, dtype=dtype, device=DEVICE).uniform_(2, 3, generator=gen(2))).double()
    step = 2.0 ** -6 if dtype == torch.bfloat16 else 2.0 ** -9
    k = (x - 2) / step
    assert torch.equal(k, k.round()) and x.min().item() >= 2 and x.max().item() < 3
    counts = torch.bincount(k.long(), minlength=int(1 / step))
    assert chi2_pvalue(counts, torch.full((int(1 / step),), N * step)) > P_MIN
    r = host(torch.rand(N, dtype=dtype, device=DEVICE, generator=gen(3))).double()
    assert r.min().item() >= 0 and r.max().item() < 1
    assert_moments(r, 0.5, 1 / 12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=op_check.dtype_id)
def test_uniform_ks(dtype):
    x = host(torch.rand(N, dtype=dtype, device=DEVICE, generator=gen(3)))
    assert ks_pvalue(x, lambda v: v) > P_MIN
    assert x.unique().numel() > N * 0.99


# ---------------------------------------------------------------- normal

@pytest.mark.parametrize("dtype", FLOATS, ids=op_check.dtype_id)
def test_normal_moments_and_ks(dtype):
    x = host(torch.empty(N, dtype=dtype, device=DEVICE).normal_(2.0, 3.0, generator=gen(4)))
    assert x.dtype == dtype and torch.isfinite(x).all()
    assert_moments(x, 2.0, 9.0)
    if dtype != torch.bfloat16:  # bf16 rounding makes the distribution discrete
        assert ks_pvalue(x, lambda v: normal_cdf((v - 2.0) / 3.0)) > P_MIN


def test_randn_ks_and_tails():
    x = host(torch.randn(N, device=DEVICE, generator=gen(5)))
    assert ks_pvalue(x, normal_cdf) > P_MIN
    # Both tails are populated as a normal's: P(|z| > 3) = 0.0027.
    tail = (x.abs() > 3).double()
    assert_mean(tail, 0.0027, 0.0027 * (1 - 0.0027))


def test_normal_tensor_overloads():
    g = gen(6)
    mean = torch.linspace(-5, 5, 10, device=DEVICE).repeat(20_000)
    std = torch.linspace(0.5, 2, 10, device=DEVICE).repeat(20_000)
    for x in (torch.normal(mean, std, generator=g), torch.normal(mean, 1.5, generator=g),
              torch.normal(0.5, std, generator=g)):
        assert x.shape == mean.shape
    x = host(torch.normal(mean, std, generator=g)).view(-1, 10)
    m, s = host(mean)[:10].double(), host(std)[:10].double()
    z = (x.double() - m) / s
    assert ks_pvalue(z, normal_cdf) > P_MIN
    out = torch.empty(0, device=DEVICE)
    torch.normal(mean, std, generator=g, out=out)
    assert out.shape == mean.shape
    y = host(torch.normal(2.0, 0.5, size=(N,), device=DEVICE, generator=g))
    assert_moments(y, 2.0, 0.25)


def test_log_normal_geometric_cauchy():
    g = gen(7)
    x = host(torch.empty(N, device=DEVICE).log_normal_(0.5, 0.75, generator=g))
    assert (x > 0).all()
    assert ks_pvalue(x.log(), lambda v: normal_cdf((v - 0.5) / 0.75)) > P_MIN
    k = host(torch.empty(N, device=DEVICE).geometric_(0.25, generator=g))
    assert (k >= 1).all() and torch.equal(k, k.round())
    assert_moments(k, 4.0, 0.75 / 0.25 ** 2)
    ki = host(torch.empty(1000, dtype=torch.int64, device=DEVICE).geometric_(0.5, generator=g))
    assert ki.min().item() >= 1
    c = host(torch.empty(N, device=DEVICE).cauchy_(1.0, 2.0, generator=g))
    assert ks_pvalue(c, lambda v: 0.5 + torch.atan((v - 1.0) / 2.0) / math.pi) > P_MIN


# ---------------------------------------------------------------- exponential

@pytest.mark.parametrize("dtype", FLOATS, ids=op_check.dtype_id)
def test_exponential(dtype):
    lam = 2.5
    x = host(torch.empty(N, dtype=dtype, device=DEVICE).exponential_(lam, generator=gen(8)))
    assert (x > 0).all() and torch.isfinite(x).all()
    assert_moments(x, 1 / lam, 1 / lam ** 2)
    if dtype != torch.bfloat16:
        assert ks_pvalue(x, lambda v: 1 - torch.exp(-lam * v)) > P_MIN


# ---------------------------------------------------------------- bernoulli

@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64, torch.int64, torch.bool],
                         ids=op_check.dtype_id)
def test_bernoulli_scalar_rate(dtype):
    p = 0.3
    x = host(torch.empty(N, dtype=dtype, device=DEVICE).bernoulli_(p, generator=gen(9)))
    assert x.dtype == dtype
    v = x.double()
    assert ((v == 0) | (v == 1)).all()
    assert_mean(v, p, p * (1 - p))
    assert host(torch.empty(100, device=DEVICE).bernoulli_(0.0)).sum() == 0
    assert host(torch.empty(100, device=DEVICE).bernoulli_(1.0)).sum() == 100


@pytest.mark.parametrize("p_dtype", [torch.float32, torch.float64, torch.bfloat16], ids=op_check.dtype_id)
def test_bernoulli_tensor_rates(p_dtype):
    probs = torch.tensor([0.0, 0.05, 0.5, 0.9, 1.0], dtype=p_dtype)
    p = probs.to(DEVICE).repeat(40_000, 1)
    x = host(torch.bernoulli(p, generator=gen(10)))
    assert x.dtype == p_dtype
    for j, pj in enumerate(probs.double().tolist()):
        assert_mean(x[:, j], pj, max(pj * (1 - pj), 1e-12))
    # bernoulli_(p) broadcasts p over self.
    y = host(torch.empty(40_000, 5, device=DEVICE).bernoulli_(probs.to(DEVICE), generator=gen(11)))
    for j, pj in enumerate(probs.double().tolist()):
        assert_mean(y[:, j], pj, max(pj * (1 - pj), 1e-12))
    out = torch.empty(0, device=DEVICE)
    torch.bernoulli(p[:10], generator=gen(12), out=out)
    assert out.shape == (10, 5)


# ---------------------------------------------------------------- random_ / randint

@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8,
                                   torch.float32, torch.bfloat16, torch.float64], ids=op_check.dtype_id)
def test_randint_range_and_uniform_counts(dtype):
    low, high = (-3, 7) if dtype != torch.uint8 else (2, 12)
    x = host(torch.randint(low, high, (N,), dtype=dtype, device=DEVICE, generator=gen(13)))
    assert x.dtype == dtype
    v = x.double()
    assert torch.equal(v, v.round())
    assert v.min().item() == low and v.max().item() == high - 1
    counts = torch.bincount((v - low).long(), minlength=high - low)
    assert chi2_pvalue(counts, torch.full((high - low,), N / (high - low))) > P_MIN


def test_randint_large_ranges():
    g = gen(14)
    x = host(torch.randint(-2 ** 40, 2 ** 40, (N,), device=DEVICE, generator=g))
    assert x.min().item() >= -2 ** 40 and x.max().item() < 2 ** 40
    assert_moments(x.double() / 2 ** 40, 0.0, 1 / 3)
    full = host(torch.empty(N, dtype=torch.int64, device=DEVICE).random_(-2 ** 63, None, generator=g))
    assert (full < 0).double().mean().item() == pytest.approx(0.5, abs=5 * math.sqrt(0.25 / N))
    # the top bit and the low bit are both fair
    assert_mean((full & 1).double(), 0.5, 0.25)


@pytest.mark.parametrize("dtype,high", [(torch.bool, 2), (torch.uint8, 256), (torch.int8, 128),
                                        (torch.int16, 2 ** 15), (torch.int32, 2 ** 31),
                                        (torch.int64, 2 ** 63), (torch.float32, 2 ** 24 + 1),
                                        (torch.bfloat16, 2 ** 8 + 1), (torch.float64, 2 ** 53 + 1)],
                         ids=str)
def test_random_default_range(dtype, high):
    x = host(torch.empty(N, dtype=dtype, device=DEVICE).random_(generator=gen(15)))
    v = x.double() if dtype != torch.int64 else x
    assert v.min().item() >= 0 and v.max().item() <= high - 1
    assert_mean(v.double() / (high - 1), 0.5, 1 / 12 + 1 / high)


def test_random_to_and_like_factories():
    g = gen(16)
    x = host(torch.empty(N, dtype=torch.int64, device=DEVICE).random_(5, generator=g))
    assert torch.equal(x.unique(), torch.arange(5))
    base = torch.zeros(3, 4, dtype=torch.bfloat16, device=DEVICE)
    for t in (torch.rand_like(base), torch.randn_like(base), torch.randint_like(base, 10),
              torch.randint_like(base, 3, 10)):
        assert t.shape == base.shape and t.dtype == base.dtype and t.device == base.device
    r = host(torch.randint_like(base, 3, 10)).double()
    assert r.min() >= 3 and r.max() < 10
    b = host(torch.bernoulli(torch.zeros(N, device=DEVICE), p=0.25, generator=g))
    assert_mean(b, 0.25, 0.25 * 0.75)


# ---------------------------------------------------------------- randperm

@pytest.mark.parametrize("n", [0, 1, 2, 17, 1000, 100_000])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32], ids=op_check.dtype_id)
def test_randperm_is_permutation(n, dtype):
    if dtype == torch.float32 and n > 2 ** 24:
        pytest.skip("float32 holds indices up to 2^24")
    p = host(torch.randperm(n, dtype=dtype, device=DEVICE, generator=gen(n)))
    assert p.dtype == dtype and p.shape == (n,)
    assert torch.equal(torch.sort(p.long()).values, torch.arange(n))


def test_randperm_positions_uniform():
    g = gen(17)
    n, reps = 6, 2400
    perms = torch.stack([host(torch.randperm(n, device=DEVICE, generator=g)) for _ in range(reps)])
    counts = torch.zeros(n, n)
    for pos in range(n):
        counts[pos] = torch.bincount(perms[:, pos], minlength=n).double()
    assert chi2_pvalue(counts, torch.full((n, n), reps / n)) > P_MIN
    # One long permutation: element i lands anywhere; displacement is uniform-like.
    big = host(torch.randperm(N, device=DEVICE, generator=g)).double()
    idx = torch.arange(N, dtype=torch.float64)
    corr = ((big - big.mean()) * (idx - idx.mean())).mean() / (big.std() * idx.std())
    assert abs(corr.item()) < 5 / math.sqrt(N)
    out = torch.empty(3, dtype=torch.int64, device=DEVICE)
    torch.randperm(10, out=out, generator=g)
    assert torch.equal(torch.sort(host(out)).values, torch.arange(10))


# ---------------------------------------------------------------- multinomial

@pytest.mark.parametrize("dtype", FLOATS, ids=op_check.dtype_id)
def test_multinomial_with_replacement_frequencies(dtype):
    probs = torch.tensor([0.1, 0.0, 0.2, 0.3, 0.4])
    w = (probs * 7).to(dtype).to(DEVICE)  # unnormalised weights
    x = host(torch.multinomial(w, N, replacement=True, generator=gen(18)))
    assert x.shape == (N,) and x.dtype == torch.int64
    counts = torch.bincount(x, minlength=5)
    assert counts[1] == 0
    assert chi2_pvalue(counts, probs.double() * N) > P_MIN


def test_multinomial_rows():
    probs = torch.tensor([[0.5, 0.5, 0.0], [0.0, 0.1, 0.9], [1.0, 0.0, 0.0]])
    x = host(torch.multinomial(probs.to(DEVICE), 50_000, True, generator=gen(19)))
    assert x.shape == (3, 50_000)
    for r in range(3):
        counts = torch.bincount(x[r], minlength=3)
        assert chi2_pvalue(counts, probs[r].double() * 50_000) > P_MIN
    one = host(torch.multinomial(probs.to(DEVICE), 1, True, generator=gen(20)))
    assert one.shape == (3, 1) and one[2, 0] == 0


def test_multinomial_many_categories():
    w = torch.rand(999, generator=torch.Generator().manual_seed(0)).double()
    w[::7] = 0  # zero-probability categories spread through the search
    x = host(torch.multinomial(w.to(DEVICE), N, True, generator=gen(28)))
    counts = torch.bincount(x, minlength=999)
    assert chi2_pvalue(counts, w / w.sum() * N) > P_MIN
    single = host(torch.multinomial(torch.ones(2, 1, device=DEVICE), 5, True, generator=gen(29)))
    assert torch.equal(single, torch.zeros(2, 5, dtype=torch.int64))


def test_multinomial_without_replacement():
    probs = torch.tensor([0.1, 0.2, 0.3, 0.4])
    rows = 50_000
    x = host(torch.multinomial(probs.to(DEVICE).expand(rows, 4), 2, generator=gen(21)))
    assert x.shape == (rows, 2)
    assert (x[:, 0] != x[:, 1]).all()
    p = probs.double()
    assert chi2_pvalue(torch.bincount(x[:, 0], minlength=4), p * rows) > P_MIN
    # P(second = j) = sum over i != j of p_i p_j / (1 - p_i)
    second = torch.stack([sum(p[i] * p[j] / (1 - p[i]) for i in range(4) if i != j) for j in range(4)])
    assert chi2_pvalue(torch.bincount(x[:, 1], minlength=4), second * rows) > P_MIN
    full = host(torch.multinomial(torch.rand(10, 30, device=DEVICE, generator=gen(22)), 30, generator=gen(23)))
    assert torch.equal(torch.sort(full, dim=1).values, torch.arange(30).expand(10, 30))
    # Categories of probability 0 come only after all others.
    z = host(torch.multinomial(torch.tensor([0.0, 1.0, 0.0, 2.0], device=DEVICE).expand(100, 4), 2,
                               generator=gen(24)))
    assert set(z.flatten().tolist()) <= {1, 3}
    out = torch.empty(0, dtype=torch.int64, device=DEVICE)
    torch.multinomial(probs.to(DEVICE), 3, generator=gen(25), out=out)
    assert out.shape == (3,) and len(set(host(out).tolist())) == 3


# ---------------------------------------------------------------- dropout

@pytest.mark.parametrize("dtype", FLOATS, ids=op_check.dtype_id)
@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_forward_backward(dtype, p):
    torch.manual_seed(26)
    x = (torch.rand(N, device=DEVICE, dtype=torch.float32) + 0.5).to(dtype).requires_grad_()
    y = torch.nn.functional.dropout(x, p, training=True)
    g = torch.randn(N, device=DEVICE, dtype=dtype)
    y.backward(g)
    xc, yc, gc, gradc = host(x.detach()), host(y.detach()), host(g), host(x.grad)
    kept = yc != 0
    assert_mean((~kept).double(), p, p * (1 - p))
    scale = 1 / (1 - p)
    if ON_CPU:  # the CPU's dropout scales a noise tensor in the input dtype instead
        noise = kept.to(dtype) / (1 - p)
        assert torch.equal(yc, xc * noise) and torch.equal(gradc, gc * noise)
        return
    # native_dropout's arithmetic on the CPU with the device's mask: x * mask * scale.
    assert torch.equal(yc, xc * kept * scale)
    # Backward applies the same mask and scale.
    assert torch.equal(gradc, gc * kept * scale)


def test_dropout_module_and_edge_cases():
    m = torch.nn.Dropout(0.5)
    x = torch.ones(1000, device=DEVICE)
    y = host(m(x))
    assert set(y.unique().tolist()) <= {0.0, 2.0}
    m.eval()
    assert torch.equal(host(m(x)), host(x))
    assert torch.equal(host(torch.nn.functional.dropout(x, 0.0, True)), host(x))
    assert host(torch.nn.functional.dropout(x, 1.0, True)).sum() == 0
    out, mask = torch.native_dropout(x, 0.3, True)
    assert mask.dtype == torch.bool and out.shape == x.shape
    out, mask = torch.native_dropout(x, 0.3, False)
    assert host(mask).all() and torch.equal(host(out), host(x))
    grad = torch.ops.aten.native_dropout_backward(x, torch.ones(1000, dtype=torch.bool, device=DEVICE), 2.0)
    assert torch.equal(host(grad), torch.full((1000,), 2.0))
    # Each call draws a fresh mask.
    a, b = host(torch.nn.functional.dropout(x, 0.5, True)), host(torch.nn.functional.dropout(x, 0.5, True))
    assert not torch.equal(a, b)


def test_dropout_in_a_training_step():
    torch.manual_seed(27)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Dropout(0.25), torch.nn.Linear(32, 4)).to(DEVICE)
    x = torch.randn(8, 16, device=DEVICE)
    loss = model(x).square().mean()
    loss.backward()
    assert all(torch.isfinite(host(p.grad)).all() for p in model.parameters())


# ---------------------------------------------------------------- errors mirror CPU

def _error(fn, device):
    try:
        fn(device)
    except Exception as e:  # noqa: BLE001 - the type is compared too
        return type(e), str(e).split("\n")[0]
    return None


ERROR_CASES = {
    "uniform_from_gt_to": lambda d: torch.empty(3, device=d).uniform_(2, 1),
    "uniform_int": lambda d: torch.empty(3, dtype=torch.int64, device=d).uniform_(),
    "normal_std": lambda d: torch.empty(3, device=d).normal_(0, -1),
    "normal_int": lambda d: torch.empty(3, dtype=torch.int64, device=d).normal_(),
    "normal_tensor_std": lambda d: torch.normal(torch.zeros(3, device=d), torch.full((3,), -1.0, device=d)),
    "exponential_lambda": lambda d: torch.empty(3, device=d).exponential_(0),
    "exponential_int": lambda d: torch.empty(3, dtype=torch.int64, device=d).exponential_(),
    "geometric_p": lambda d: torch.empty(3, device=d).geometric_(1.5),
    "cauchy_int": lambda d: torch.empty(3, dtype=torch.int64, device=d).cauchy_(),
    "bernoulli_p": lambda d: torch.empty(3, device=d).bernoulli_(1.5),
    "bernoulli_tensor_p": lambda d: torch.empty(3, device=d).bernoulli_(torch.tensor([0.5, 1.5, 0.2], device=d)),
    "bernoulli_tensor_nan": lambda d: torch.bernoulli(torch.tensor([0.5, float("nan")], device=d)),
    "bernoulli_int_p": lambda d: torch.empty(3, device=d).bernoulli_(torch.tensor([1, 0, 1], device=d)),
    "random_from_ge_to": lambda d: torch.empty(3, device=d).random_(5, 5),
    "random_out_of_dtype": lambda d: torch.empty(3, dtype=torch.int8, device=d).random_(0, 1000),
    "randint_bad": lambda d: torch.randint(5, 2, (3,), device=d),
    "randperm_negative": lambda d: torch.randperm(-1, device=d),
    "randperm_half": lambda d: torch.randperm(3000, dtype=torch.half, device=d),
    "randperm_int8": lambda d: torch.randperm(300, dtype=torch.int8, device=d),
    "randperm_bool": lambda d: torch.randperm(5, dtype=torch.bool, device=d),
    "multinomial_int": lambda d: torch.multinomial(torch.tensor([1, 2], device=d), 1),
    "multinomial_zero_samples": lambda d: torch.multinomial(torch.ones(3, device=d), 0),
    "multinomial_too_many": lambda d: torch.multinomial(torch.ones(3, device=d), 4),
    "multinomial_3d": lambda d: torch.multinomial(torch.ones(2, 2, 3, device=d), 1),
    "multinomial_negative": lambda d: torch.multinomial(torch.tensor([0.5, -0.1], device=d), 3, True),
    "multinomial_inf": lambda d: torch.multinomial(torch.tensor([0.5, float("inf")], device=d), 3, True),
    "multinomial_nan": lambda d: torch.multinomial(torch.tensor([0.5, float("nan")], device=d), 3, True),
    "multinomial_zero_sum": lambda d: torch.multinomial(torch.zeros(2, 3, device=d), 3, True),
    "multinomial_fast_negative": lambda d: torch.multinomial(torch.tensor([0.5, -0.1], device=d), 1),
    "multinomial_fast_inf": lambda d: torch.multinomial(torch.tensor([0.5, float("inf")], device=d), 2),
    "multinomial_fast_zero_sum": lambda d: torch.multinomial(torch.zeros(3, device=d), 1),
    "dropout_int": lambda d: torch.native_dropout(torch.ones(3, dtype=torch.int64, device=d), 0.5, True),
    "dropout_p": lambda d: torch.native_dropout(torch.ones(3, device=d), 1.5, True),
}


@pytest.mark.parametrize("name", sorted(ERROR_CASES))
def test_errors_match_cpu(name):
    expected = _error(ERROR_CASES[name], "cpu")
    assert expected is not None, "the CPU accepts this input"
    assert _error(ERROR_CASES[name], DEVICE) == expected


def test_empty_tensors():
    for t in (torch.empty(0, device=DEVICE).uniform_(), torch.empty(0, 3, device=DEVICE).normal_(),
              torch.empty(0, dtype=torch.int64, device=DEVICE).random_(0, 5),
              torch.empty(0, device=DEVICE).bernoulli_(0.5), torch.randperm(0, device=DEVICE),
              torch.multinomial(torch.ones(0, 3, device=DEVICE), 2)):
        assert t.numel() == 0
    out, mask = torch.native_dropout(torch.empty(0, device=DEVICE), 0.5, True)
    assert out.numel() == 0 and mask.numel() == 0
